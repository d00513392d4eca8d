"""The README's source tour, checked against the tree, and the documents kept to the repository.

(a) every path the tour names exists: a backticked path (`mcp-frontend/transport/`), a link,
    and a bare file name (`http.c`) inside a tour item, looked for in that item's folder;
(b) every source folder — a directory of a component that holds .c or .h files of its own — is
    named in the tour;
(c) README.md is at most 300 lines;
(d) no document (README.md, docs/*.md, the component READMEs, proto/PROTOCOL.md) points at
    what a reader of the repository does not have: DESIGN.md, shared/, the seeds, an issue
    number ("issue 12", "Issue 16", "#16");
(e) every relative link of those documents leads to a file or folder that exists, and a
    #fragment to a heading (or an HTML anchor) of the document it names;
and, beyond the tour, every repository path README.md and docs/*.md name in backticks exists.

stdlib only, like the layering check."""
import glob
import os
import re

import pytest

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
README = os.path.join(REPO, "README.md")
TOUR_HEADING = "## Source tour"
COMPONENTS = ("common", "proto", "broker", "executor-node", "mcp-frontend", "cli")
MAX_README_LINES = 300
SOURCE_FILE = re.compile(r"^[\w.-]+\.(?:c|h|py|md|sh|mjs)$")  # a bare file name in a tour item
SKIP_DIRS = {"node_modules"}  # besides dot folders and build*


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def rel(path):
    return os.path.relpath(path, REPO).replace(os.sep, "/")


def documents():
    """Every Markdown file of the repository outside .git, build trees and node_modules."""
    found = []
    for dirpath, dirnames, filenames in os.walk(REPO):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith((".", "build")) and d not in SKIP_DIRS)
        found += [os.path.join(dirpath, n) for n in sorted(filenames) if n.endswith(".md")]
    return found


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            yield n, line


def without_code(line):
    return re.sub(r"`[^`]*`", "", line)


# ---- the tour ---------------------------------------------------------------------------------

def tour():
    """The lines of README.md's source tour: from its heading to the next `## ` heading."""
    lines = read(README).split("\n")
    starts = [i for i, l in enumerate(lines) if l.strip() == TOUR_HEADING]
    assert len(starts) == 1, "README.md must have exactly one %r section" % TOUR_HEADING
    start = starts[0] + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [(n + 1, lines[n]) for n in range(start, end)]


def tour_items():
    """The tour as (line number, text) pieces: each list item with its continuation lines, and
    each paragraph outside a list."""
    pieces, cur, in_item = [], None, False
    for n, line in tour():
        starts_item = re.match(r"^[-*] ", line) is not None
        ends_item = in_item and not line.startswith((" ", "\t"))  # a paragraph after a list
        if not line.strip() or starts_item or cur is None or ends_item:
            if cur:
                pieces.append(cur)
            cur = [n, line] if line.strip() else None
            in_item = starts_item
        else:
            cur[1] += "\n" + line
    if cur:
        pieces.append(cur)
    return [tuple(p) for p in pieces]


def is_path(token):
    """A backticked token that names a place in the repository: it has a '/' and is neither a
    URL (`sandbox://info`) nor an absolute path (`/mcp`, `/proc`)."""
    return ("/" in token and "://" not in token and not token.startswith("/")
            and re.fullmatch(r"[\w.][\w./-]*", token) is not None)


def named_paths():
    """(line, what the tour wrote, repository path it means) for every path the tour names."""
    out = []
    for n, text in tour_items():
        folder = None
        for tok in re.findall(r"`([^`]+)`", text):
            if is_path(tok):
                path = os.path.normpath(tok).replace(os.sep, "/")
                out.append((n, tok, path))
                if folder is None and tok.endswith("/"):
                    folder = path  # the folder an item is about comes first
            elif SOURCE_FILE.match(tok):
                base = folder if folder is not None else "."
                out.append((n, tok, os.path.normpath(os.path.join(base, tok)).replace(os.sep, "/")))
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#"):
                out.append((n, target, os.path.normpath(target.split("#")[0]).replace(os.sep, "/")))
    return out


def source_folders():
    """Every folder of a component holding .c or .h files of its own, as 'cli/run'."""
    found = set()
    for comp in COMPONENTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, comp)):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS]
            if any(f.endswith((".c", ".h")) for f in filenames):
                found.add(rel(dirpath))
    return found


def test_the_tour_names_paths():
    assert len(named_paths()) >= len(COMPONENTS), "the source tour names next to nothing"


def test_every_path_the_tour_names_exists():
    missing = ["README.md:%d: `%s` (%s)" % (n, tok, path) for n, tok, path in named_paths()
               if path.startswith("..") or not os.path.exists(os.path.join(REPO, path))]
    assert not missing, "the source tour names what the tree does not have:\n" + "\n".join(missing)


def test_every_source_folder_is_in_the_tour():
    named = {path for _, _, path in named_paths()}
    left_out = sorted(source_folders() - named)
    assert not left_out, ("source folders the README's tour does not name (add each, with "
                          "what to open it for):\n" + "\n".join(f + "/" for f in left_out))


def test_readme_is_at_most_300_lines():
    n = len(read(README).rstrip("\n").split("\n"))
    assert n <= MAX_README_LINES, "README.md has %d lines; move the rest into docs/" % n


def test_every_repository_path_in_readme_and_docs_exists():
    """Beyond the tour: a backticked path in README.md or docs/*.md whose first folder is one of
    the repository's (`executor-node/python/policy.c`, `tests/security/`) names something that
    exists, so that the manual follows the tree when files move."""
    tops = {d for d in os.listdir(REPO) if os.path.isdir(os.path.join(REPO, d)) and not d.startswith(".")}
    docs = [README] + sorted(p for p in documents() if rel(p).startswith("docs/"))
    missing = []
    for path in docs:
        for n, line in enumerate(read(path).split("\n"), 1):
            for tok in re.findall(r"`([^`]+)`", line):
                if not is_path(tok.replace("*", "x")) or tok.split("/")[0] not in tops:
                    continue
                if not glob.glob(os.path.join(REPO, tok)):
                    missing.append("%s:%d: `%s`" % (rel(path), n, tok))
    assert not missing, "paths the documents name that the tree does not have:\n" + "\n".join(missing)


# ---- what the documents point at ------------------------------------------------------------

OUTSIDE = [
    (re.compile(r"\bDESIGN\b(?:\.md)?"), "DESIGN.md is not in the repository"),
    (re.compile(r"(?<![\w/.-])shared/"), "shared/ is not in the repository"),
    (re.compile(r"(?<!hash )\bseed(?:s|'s)?\b", re.I), "the seeds are not in the repository"),
    (re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+", re.I), "an issue number"),
]
# '#16' in prose: not '#include', not an HTML entity (&#123;), not a link's fragment
HASH_NUMBER = re.compile(r"(?<![\w&#/])#\d+\b")


def test_no_document_points_outside_the_repository():
    found = []
    for path in documents():
        for n, line in enumerate(read(path).split("\n"), 1):
            for pattern, why in OUTSIDE:
                for m in pattern.finditer(line):
                    found.append("%s:%d: %r — %s" % (rel(path), n, m.group(0), why))
        for n, line in prose_lines(read(path)):
            prose = re.sub(r"\]\([^)]*\)", "]", without_code(line))
            for m in HASH_NUMBER.finditer(prose):
                found.append("%s:%d: %r — an issue number" % (rel(path), n, m.group(0)))
    assert not found, "documents point outside the repository:\n" + "\n".join(found)


def slug(heading):
    """GitHub's anchor for a heading: markup and punctuation dropped, lower case, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, line in prose_lines(read(path)):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(1))
            out.add(s if s not in seen else "%s-%d" % (s, seen[s]))
            seen[s] = seen.get(s, 0) + 1
        out.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line))
    return out


def links(path):
    """(line, target) of every inline link or image outside code."""
    for n, line in prose_lines(read(path)):
        for target in re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", without_code(line)):
            yield n, target


def test_every_relative_link_leads_somewhere():
    broken = []
    for path in documents():
        for n, target in links(path):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: — not ours to check
                continue
            where, _, fragment = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), where)) if where else path
            say = "%s:%d: (%s)" % (rel(path), n, target)
            if not os.path.exists(dest) or not dest.startswith(REPO):
                broken.append(say + " — no such file")
            elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                broken.append(say + " — %s has no heading #%s" % (rel(dest), fragment))
    assert not broken, "links that lead nowhere:\n" + "\n".join(broken)


@pytest.mark.parametrize("heading, anchor", [
    ("Redis: what it holds, and keeping it", "redis-what-it-holds-and-keeping-it"),
    ("A session's path", "a-sessions-path"),
    ("8. Snapshot (msgpack map)", "8-snapshot-msgpack-map"),
    ("`snakepit run` — the command", "snakepit-run--the-command"),
])
def test_slug_is_githubs(heading, anchor):
    assert slug(heading) == anchor
