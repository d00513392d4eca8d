"""The CLI examples of the README and of docs/, run as written against a farm.

Taken from README.md and docs/*.md: every line of a ```sh block whose command is `snakepit` (or
`build/bin/snakepit`), or that makes an input for one (`echo`, `printf`); and every
`$ snakepit …` / `$ build/bin/snakepit …` line of a console block, with the lines under it
as the output it must print. Lines of other commands (make, apt, claude, …) are not run.
A line must exit 0 unless its comment says `exits N`. Each block's lines run in order in one
scratch directory, with the farm as the state directory and build/bin first on PATH."""
import glob
import os
import re
import subprocess

import pytest

from clilib import BIN

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
RUNS = ("snakepit", "build/bin/snakepit", "echo", "printf")


def _blocks(doc):
    """(language, first line number, lines) of each fenced block of one document."""
    with open(os.path.join(ROOT, doc)) as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        blocks.append((m.group(1), i + 2, lines[i + 1:j]))
        i = j + 1
    return blocks


def examples():
    """One (block line, [(command, expected exit, expected output or None)]) per block."""
    out = []
    for doc, (lang, first, lines) in ((d, b) for d in DOCS for b in _blocks(d)):
        steps = []
        if lang == "sh":
            for line in lines:
                if line.strip() and line.split()[0] in RUNS:
                    m = re.search(r"#.*\bexits (\d+)", line)
                    steps.append((line, int(m.group(1)) if m else 0, None))
        else:
            for k, line in enumerate(lines):
                m = re.match(r"^\$ ((?:build/bin/)?snakepit .*)$", line)
                if not m:
                    continue
                shown = []
                for after in lines[k + 1:]:
                    if after.startswith("$ ") or after.startswith("..."):
                        break
                    shown.append(after)
                steps.append((m.group(1), 0, "\n".join(shown).strip()))
        if steps:
            out.append(pytest.param(steps, id="%s:%d" % (doc, first)))
    return out


def test_the_readme_has_cli_examples():
    found = [s for p in examples() for s in p.values[0]]
    commands = {c.split()[2] if c.startswith("build/bin/") else c.split()[1]
                for c, _, _ in found if "snakepit" in c.split()[0]}
    assert {"run", "tenant", "usage"} <= commands, commands
    assert any(out for _, _, out in found), "a console example with its output"


@pytest.mark.parametrize("steps", examples())
def test_readme_example_runs_as_written(farm, tmp_path, steps):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEPIT_")}
    env.update(SNAKEPIT_STATE_DIR=farm.dir, PATH=BIN + ":" + os.environ["PATH"])
    for command, want_exit, want_out in steps:
        if command.startswith("build/bin/"):
            command = os.path.join(BIN, command[len("build/bin/"):])
        r = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == want_exit, (command, r.returncode, r.stdout, r.stderr)
        if want_out is not None:
            assert r.stdout.strip() == want_out, (command, r.stdout)
