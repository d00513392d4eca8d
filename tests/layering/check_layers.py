#!/usr/bin/python3
"""The layering check: reads every #include of the components, knows the folder order of
layers.order, and fails (exit 1) on an include that points up the order or sideways, one that
crosses components other than into the shared ones (common/, proto/), a circle of includes
between modules, a circle of calls between modules (--calls, from the object files), <zmq.h>
outside the folders allowed it, and a source folder the order does not name or that holds
more than 25 .c files (MAX_C). Each violation is one line, `path:line: the line — why`.

layers.order, one line per component, highest folder first:

    mcp-frontend: transport > mcp ; compat > tools > state   # '>' goes down a level,
    executor-node: node[zmq] > link ; zygote > child          # ';' is a neighbour on one level
    cli: .                                                    # '.' is the component's own folder
    shared: proto > common    # components every other may include, in their own order
                              # (this is the default when the line is absent)

Usage: check_layers.py [--root DIR] [--order FILE] [--calls OBJDIR]
stdlib only, so that it runs before anything is installed."""
import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict

MAX_C = 25  # .c files a folder may hold of its own: more and file prefixes stand in for folders
NOT_COMPONENTS = {"tests", "bench", "deploy"}  # C sources outside the product (tests, bench tools, packaging helpers), not checked
KNOWN_MARKS = {"zmq"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
ITEM_RE = re.compile(r"([\w.][\w./-]*)(?:\[(\w+(?:\s*,\s*\w+)*)\])?")


class Order:
    """What layers.order says: the level of each folder, its marks, and where it was said."""

    def __init__(self, path, shown):
        self.path = shown  # as reports name it
        self.level = {}  # component -> {folder: level, 0 the highest}
        self.marks = defaultdict(set)  # (component, folder) -> {"zmq"}
        self.line = {}  # component or (component, folder) -> line number in the file
        self.shared = {"proto": 0, "common": 1}
        self.errors = []
        with open(path, encoding="utf-8") as f:
            for n, raw in enumerate(f, 1):
                self._parse(n, raw.split("#", 1)[0].strip())

    def _parse(self, n, text):
        if not text:
            return
        name, colon, rest = text.partition(":")
        name = name.strip()
        if not colon or not name or name in self.level:
            self.errors.append(f"{self.path}:{n}: {text} — expected one 'component: folders' line per component")
            return
        levels, ok = {}, True
        for lvl, group in enumerate(rest.split(">")):
            for item in group.split(";"):
                m = ITEM_RE.fullmatch(item.strip())
                folder = m and os.path.normpath(m.group(1))
                if not m or folder in levels:
                    self.errors.append(f"{self.path}:{n}: {text} — cannot read {item.strip()!r} (or named twice)")
                    ok = False
                    continue
                levels[folder] = lvl
                for mark in (m.group(2) or "").replace(" ", "").split(","):
                    if mark and mark not in KNOWN_MARKS:
                        self.errors.append(f"{self.path}:{n}: {text} — unknown mark [{mark}]")
                    elif mark:
                        self.marks[(name, folder)].add(mark)
                self.line[(name, folder)] = n
        if not ok:
            return
        if name == "shared":
            self.shared = levels
        else:
            self.level[name] = levels
            self.line[name] = n

    def zmq_folders(self, comp):
        return {f for f in self.level.get(comp, {}) if "zmq" in self.marks[(comp, f)]}


def module(path):
    """x.h and x.c are one module: a file's own header is not a dependency of it."""
    return os.path.splitext(path)[0]


def split(path, order):
    """(component, folder) of a repository path, or None outside the components."""
    parts = path.split("/")
    if len(parts) < 2 or parts[0] not in order.level:
        return None
    return parts[0], "/".join(parts[1:-1]) or "."


def show(comp, folder):
    return comp + "/" if folder == "." else f"{comp}/{folder}/"


def source_files(root, comp):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, comp)):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "node_modules")
        for name in sorted(filenames):
            if name.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")


def resolve(root, src, inc):
    """Where a quoted include lands, as the compiler looks (the file's folder, then -I.);
    None for a generated or system header: nothing in the tree to layer."""
    for base in (os.path.dirname(src), ""):
        p = os.path.normpath(os.path.join(base, inc)).replace(os.sep, "/")
        if not p.startswith("../") and os.path.isfile(os.path.join(root, p)):
            return p
    return None


def check_folders(root, order, files, out):
    for comp, folders in sorted(order.level.items()):
        if not os.path.isdir(os.path.join(root, comp)):
            out.append(f"{order.path}:{order.line[comp]}: {comp} — no such component folder")
            continue
        for folder in sorted(folders):
            if not os.path.isdir(os.path.join(root, comp, folder)):
                out.append(f"{order.path}:{order.line[(comp, folder)]}: {show(comp, folder)} — named but missing")
    for name in sorted(order.shared):
        if name not in order.level:
            out.append(f"{order.path}: shared: {name} — shared but has no line of its own")
    own_c = defaultdict(int)
    for f in files:
        comp, folder = split(f, order)
        own_c[(comp, folder)] += f.endswith(".c")
    for (comp, folder), n in sorted(own_c.items()):
        if folder not in order.level[comp]:
            out.append(f"{show(comp, folder)}: source folder — not named in {order.path}")
        if n > MAX_C:
            out.append(f"{show(comp, folder)}: {n} .c files — more than {MAX_C} in one folder")
    # a new top-level folder with C in it is a component the order forgot
    for top in sorted(os.listdir(root)):
        if (top in order.level or top in NOT_COMPONENTS or top.startswith((".", "build"))
                or not os.path.isdir(os.path.join(root, top))):
            continue
        if any(f.endswith((".c", ".h")) for _, _, fs in os.walk(os.path.join(root, top)) for f in fs):
            out.append(f"{top}/: C sources — a component not named in {order.path}")


def check_include(order, src, tgt, say, out):
    """Rules a and b for one resolved include; say(reason) makes the report line."""
    (sc, sf), where = split(src, order), split(tgt, order)
    if where is None:
        out.append(say("includes a file outside the components"))
        return
    tc, tf = where
    if sc != tc:
        if tc not in order.shared:
            out.append(say(f"{sc}/ includes {tc}/: across components only into {', '.join(sorted(order.shared))}"))
        elif sc in order.shared and order.shared[tc] <= order.shared[sc]:
            out.append(say(f"{sc}/ includes {tc}/: up or sideways in the order of the shared components"))
        return
    levels = order.level[sc]
    if sf == tf or sf not in levels or tf not in levels:  # an unnamed folder is reported once, above
        return
    if levels[tf] < levels[sf]:
        out.append(say(f"points up: {show(sc, sf)} is below {show(tc, tf)}"))
    elif levels[tf] == levels[sf]:
        out.append(say(f"sideways: {show(sc, sf)} and {show(tc, tf)} are on one level"))


def strongly_connected(graph):
    """Tarjan's algorithm; the components of more than one node are the circles."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = set()
            while True:
                w = stack.pop()
                on.discard(w)
                scc.add(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(scc)

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=min)


def one_cycle(graph, scc):
    """The shortest circle through the knot's first node (breadth first): the one to show."""
    start = min(scc)
    prev, queue = {start: None}, [start]
    for v in queue:
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return path[::-1] + [start]
            if w in scc and w not in prev:
                prev[w] = v
                queue.append(w)
    raise AssertionError("a strongly connected component always has a circle")


def report_circles(kind, graph, witness, out):
    """One line per edge of one circle per knot (strongly connected set); witness(a, b) gives
    that edge's offending line and what it uses. Break the circle shown and run again."""
    for scc in strongly_connected(graph):
        cycle = one_cycle(graph, scc)
        path = " → ".join(cycle)
        knot = "" if len(scc) == len(cycle) - 1 else f" (in a knot of {len(scc)}: {', '.join(sorted(scc))})"
        for a, b in zip(cycle, cycle[1:]):
            where, uses = witness(a, b)
            out.append(f"{where} — {uses}{kind} circle {path}{knot}")


def check_includes(root, order, files, out):
    graph, lines = defaultdict(set), {}
    for src in files:
        comp, folder = split(src, order)
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            for n, text in enumerate(f, 1):
                m = INCLUDE_RE.match(text)
                if not m:
                    continue
                quote, inc = m.groups()
                shown = f"#include {quote}{inc}{'>' if quote == '<' else quote}"

                def say(reason, where=f"{src}:{n}", shown=shown):
                    return f"{where}: {shown} — {reason}"

                if quote == "<":  # rule e: a process with a live ZeroMQ context must never fork
                    allowed = order.zmq_folders(comp)
                    if inc == "zmq.h" and allowed and folder not in allowed:
                        out.append(say(f"<zmq.h> only in {', '.join(show(comp, z) for z in sorted(allowed))}"))
                    continue
                tgt = resolve(root, src, inc)
                if tgt is None:
                    continue
                check_include(order, src, tgt, say, out)
                a, b = module(src), module(tgt)
                if a != b:
                    graph[a].add(b)
                    lines.setdefault((a, b), f"{src}:{n}: {shown}")
    report_circles("include", graph, lambda a, b: (lines[(a, b)], ""), out)


def check_calls(root, order, objdir, out):
    """Rule d: module A calls module B when an undefined symbol of A.o is defined by B.o."""
    defined, undefined = defaultdict(lambda: defaultdict(set)), {}
    for dirpath, _, names in os.walk(objdir):
        for name in sorted(names):
            if not name.endswith(".o"):
                continue
            obj = os.path.join(dirpath, name)
            mod = module(os.path.relpath(obj, objdir).replace(os.sep, "/"))
            comp = mod.split("/")[0]
            # an object whose source is gone is left from before a move: it would add ghosts
            if comp not in order.level or not os.path.isfile(os.path.join(root, mod + ".c")):
                continue
            nm = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True)
            undefined[mod] = set()
            for line in nm.stdout.splitlines():
                sym, kind = (line.split() + ["", ""])[:2]
                if kind == "U":
                    undefined[mod].add(sym)
                elif kind.isupper():  # a global definition (lower case is local to the file)
                    defined[comp][sym].add(mod)
    graph, via = defaultdict(set), {}
    for mod, syms in sorted(undefined.items()):
        for sym in sorted(syms):
            for tgt in defined[mod.split("/")[0]].get(sym, ()):
                if tgt != mod:
                    graph[mod].add(tgt)
                    via.setdefault((mod, tgt), sym)

    def witness(a, b):  # the first line of a's source that uses the symbol, not declares it
        sym = via[(a, b)]
        use = re.compile(rf"\b{re.escape(sym)}\b")
        prototype = re.compile(rf"^\s*(?!return\b)[\w\s*]+\b{re.escape(sym)}\s*\([^;{{]*\)\s*;")
        with open(os.path.join(root, a + ".c"), encoding="utf-8", errors="replace") as f:
            found = [(n, t.strip()) for n, t in enumerate(f, 1) if use.search(t)]
        uses = [(n, t) for n, t in found if not prototype.match(t)] or found
        where = f"{a}.c:{uses[0][0]}: {uses[0][1][:60].rstrip()}" if uses else f"{a}.c"
        return where, f"calls {sym} of {b}.c: "

    report_circles("call", graph, witness, out)


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    p.add_argument("--order", help="the order file (default ROOT/layers.order)")
    p.add_argument("--calls", metavar="OBJDIR", help="also find circles of calls in these object files")
    args = p.parse_args(argv)
    root = os.path.abspath(args.root)
    order_path = args.order or os.path.join(root, "layers.order")
    if not os.path.isfile(order_path):
        print(f"{order_path}: no such order file", file=sys.stderr)
        return 2
    order = Order(order_path, args.order or "layers.order")
    out = list(order.errors)
    if not out:
        files = [f for comp in sorted(order.level) for f in source_files(root, comp)]
        check_folders(root, order, files, out)
        check_includes(root, order, files, out)
        if args.calls:
            check_calls(root, order, args.calls, out)
    for line in out:
        print(line)
    if out:
        print(f"layering: {len(out)} violation(s)", file=sys.stderr)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
