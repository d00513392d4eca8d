# executor-node/python/session.py — the Python half of a session's process.
#
# A session is a sandboxed child the zygote keeps between calls (zygote_sessions.h): every OS layer
# stays in place, and the same interpreter runs cell after cell. This module holds what
# persists — the session's globals — and what a session does besides running cells: save its
# variables into a snapshot, rebind them from one, and describe them. Cells themselves go
# through the runner (runner.run with these globals), so a cell reads like any execution. Its C
# half is _snakepit (runner.c): finish() carries the snapshot's pickles and the summaries out
# through the job area, snapshot_parts() reads a snapshot the zygote handed in, and
# pickle_allowed() is the audit hook's own unpickling rule.
import io
import json
import pickle
import signal
import sys
import types

import _snakepit
import _snakepit_byvalue as byvalue
import _snakepit_runner as runner

# What a snapshot may hold of pickled variables (its files are the zygote's business); the
# result and the job area around it are bounded too.
_MAX_VARIABLES_BYTES = 4 << 20
_REPR_CAP = 200

_g = [None]  # the session's globals, from start() on


def _interruptible():
    """A cell past its timeout gets SIGINT from the zygote, and KeyboardInterrupt here (then
    SIGKILL after a grace). The zygote's interpreter installs no handler of its own, and a
    cell may have replaced this one: set again before each cell."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def start(job):
    """The session's first job: fresh globals that every later cell shares."""
    _interruptible()
    _g[0] = runner.new_globals(job.get("policy", True))
    byvalue.use_globals(_g[0])
    if job.get("restore"):
        restore(job)
        return
    _snakepit.finish("ok")


def cell(job):
    _interruptible()
    byvalue.remember(job["code"])  # what it defines is saved from its source (byvalue.py)
    runner.run(job, _g[0])


def _user_names(g):
    return [n for n in g
            if not isinstance(n, str) or not (n.startswith("__") and n.endswith("__"))]


def _printable_name(name):
    """A global's name as text that can leave the sandbox: names are set through globals() as
    anything (a lone surrogate, a number), and one such name must spoil nothing else."""
    if not isinstance(name, str):
        return None, "its name is not a string: %s" % runner._safe_str(repr, name, 100)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return None, "its name is not valid Unicode text"
    return name, None


def _shown(name):
    if isinstance(name, str):
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return runner._safe_str(repr, name, 100)


def _imported_name(value):
    """"module:qualname" for a function, class or other callable a module defines under that
    name (what `from module import name` binds), or None: such a value is imported again on
    restore rather than pickled (pickle would name the module, which the restricted unpickler
    may not allow where the import guard does)."""
    if not callable(value) or isinstance(value, types.ModuleType):
        return None
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module == "__main__" \
            or "<" in qualname:
        return None
    owner = sys.modules.get(module)
    try:
        found = owner
        for part in qualname.split("."):
            found = getattr(found, part)
    except BaseException:
        return None
    return "%s:%s" % (module, qualname) if found is value else None


def snapshot(job):
    """Every picklable variable, each pickled on its own (one that fails spoils no other), the
    session's own functions and classes by value (byvalue.py); modules as the names they were
    imported under; what was left out, and why."""
    g = _g[0]
    variables, imports, skipped, total = {}, {}, [], 0
    for name in _user_names(g):
        value = g[name]
        why = _printable_name(name)[1]
        if why:
            skipped.append((_shown(name), why))
            continue
        if isinstance(value, types.ModuleType):
            imports[name] = value.__name__
            continue
        imported = _imported_name(value)
        if imported:  # `from math import sqrt`: imported again, as the cell did
            imports[name] = imported
            continue
        why = byvalue.why_not(value, None)
        if why:
            skipped.append((name, why))
            continue
        try:
            data = byvalue.dumps(value)
        except BaseException as e:
            skipped.append((name, "cannot be pickled: %s: %s"
                            % (type(e).__name__, runner._safe_str(str, e, _REPR_CAP))))
            continue
        if total + len(data) > _MAX_VARIABLES_BYTES:
            skipped.append((name, "left out: a snapshot holds at most %d MiB of pickled variables"
                            % (_MAX_VARIABLES_BYTES >> 20)))
            continue
        variables[name] = data
        total += len(data)
    _snakepit.finish("ok", snapshot=(variables, imports, skipped))


class _Unpickler(pickle.Unpickler):
    """The audit hook's unpickling rule (only the profile's modules and plain builtin types),
    applied before the hook sees the name, so a snapshot naming something else fails that one
    variable instead of counting as an attack."""

    def find_class(self, module, name):
        if not _snakepit.pickle_allowed(module, name):
            raise pickle.UnpicklingError("%s.%s is not available in profile %s"
                                         % (module, name, runner._profile[0]))
        return super().find_class(module, name)


def _import_as(spec):
    """A module by name, or "module:qualname": the module imported as a cell would (the import
    guard decides), then the attributes named, none of them a dunder."""
    module, _, qualname = spec.partition(":")
    runner._import(module)
    value = sys.modules[module]
    for part in qualname.split(".") if qualname else ():
        if part.startswith("__"):
            raise ImportError("%s names a private attribute" % spec)
        value = getattr(value, part)
    return value


def restore(job):
    """Rebinds the snapshot's variables and imports (the zygote has put its files back);
    names the snapshot does not hold are left as they are."""
    g = _g[0]
    runner._allowed[0] = job["allowed"]  # what the imports below may name, as in a cell
    variables, imports = _snakepit.snapshot_parts()
    restored, failed = [], []
    for name, module in imports.items():
        try:
            g[name] = _import_as(module)
            restored.append(name)
        except BaseException as e:
            failed.append({"name": name, "reason": "import %s: %s: %s" % (
                module, type(e).__name__, runner._safe_str(str, e, _REPR_CAP))})
    for name, data in variables.items():
        try:
            g[name] = _Unpickler(io.BytesIO(data)).load()
            restored.append(name)
        except BaseException as e:
            failed.append({"name": name, "reason": "%s: %s" % (
                type(e).__name__, runner._safe_str(str, e, _REPR_CAP))})
    byvalue.loaded()
    _snakepit.finish("ok", summary=json.dumps({"restored": sorted(restored), "failed": failed}))


def info(job):
    """What the session holds: each variable's name, type and a short repr."""
    g = _g[0]
    out = []
    for name in _user_names(g):
        value = g[name]
        t = type(value)
        out.append({"name": _shown(name), "type": "%s.%s" % (t.__module__, t.__qualname__)
                    if t.__module__ != "builtins" else t.__qualname__,
                    "repr": runner._safe_str(repr, value, _REPR_CAP)})
    _snakepit.finish("ok", summary=json.dumps({"variables": out}))
