# executor-node/runner.py — the Python half of a job's child.
#
# Loaded once into the zygote (compiled into snakepit-executor), called in each child after
# every OS layer (rlimits, namespaces, Landlock, no_new_privs, seccomp) is in place. What it
# adds is defence in depth and convenience, never the boundary: fresh globals, an import
# allowlist, output capture, the trailing-expression result, variable inspection, and the
# exception with its user line. The C module _snakepit writes into the job's shared memory
# and holds the audit hook.
import ast
import builtins
import io
import json
import random
import sys
import types

import _snakepit

_FILENAME = "<snakepit>"
_REPR_CAP = 64 * 1024
_VAR_REPR_CAP = 4 * 1024
_VAR_JSON_CAP = 256 * 1024
_real_import = builtins.__import__
_ModuleType = types.ModuleType


class _Stream:
    """sys.stdout / sys.stderr: unbuffered, straight into shared memory, so what was printed
    before a kill (timeout, memory) is still there for the zygote to read."""

    __slots__ = ("_n",)
    encoding = "utf-8"
    errors = "backslashreplace"
    newlines = None

    def __init__(self, n):
        self._n = n

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        _snakepit.write(self._n, s)
        return len(s)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def readable(self):
        return False

    def fileno(self):
        raise io.UnsupportedOperation("sandbox streams have no file descriptor")

    @property
    def closed(self):
        return False


class _Discard(_Stream):
    __slots__ = ()

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        return len(s)


def _module_allowed(name, allowed):
    for m in allowed:
        if name == m or name.startswith(m + "."):
            return True
    return False


# What the user's code may import, set per job. A list cell so the guard (built once, in the
# zygote) sees each job's allowlist.
_allowed = [()]
_profile = ["python.basic"]


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level:
        raise ImportError("relative imports are not available in the sandbox")
    if not isinstance(name, str):
        raise TypeError("module name must be str")
    allowed = _allowed[0]
    if not _module_allowed(name, allowed):
        raise ImportError(
            "import of '%s' is not allowed in profile %s (allowed: %s)"
            % (name, _profile[0], ", ".join(sorted(allowed)))
        )
    module = _real_import(name, globals, locals, fromlist, 0)
    for item in fromlist or ():
        if isinstance(item, str) and item != "*":
            sub = getattr(module, item, None)
            if isinstance(sub, _ModuleType) and not _module_allowed(name + "." + item, allowed):
                raise ImportError(
                    "import of '%s.%s' is not allowed in profile %s" % (name, item, _profile[0])
                )
    return module


def _make_builtins(profile, workspace):
    b = dict(builtins.__dict__)
    b["__import__"] = _import
    if not workspace:

        def open(*args, **kwargs):
            raise PermissionError(
                "open() is not available in profile %s: it has no filesystem "
                "(use the python.filesystem profile and the files argument)" % profile
            )

        b["open"] = open
    for name in ("breakpoint", "help", "copyright", "credits", "license", "exit", "quit"):
        b.pop(name, None)
    return b


# The restricted builtins, built once per zygote (prepare) and shared copy-on-write by every
# child: a job gets them without copying a dict on its critical path.
_builtins = [None]
_plain_builtins = [None]


def prepare(profile, workspace):
    """Called once in the zygote after its warm imports."""
    _profile[0] = profile
    # From here on imports come from memory only: a module that was not preloaded fails as
    # ModuleNotFoundError at once, without the path finder listing directories (which the
    # audit hook would rightly report).
    sys.path[:] = []
    sys.path_importer_cache.clear()
    sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__name__", "") != "PathFinder"]
    _builtins[0] = _make_builtins(profile, workspace)
    # For nodes run with --disable-layer python (tests that prove each OS layer alone): the
    # interpreter's own builtins, no import guard.
    _plain_builtins[0] = dict(builtins.__dict__)


def _cap(text, cap):
    if len(text) > cap:
        return text[:cap] + "... [%d more characters]" % (len(text) - cap)
    return text


def _safe_str(fn, value, cap):
    try:
        return _cap(fn(value), cap)
    except BaseException as e:  # a hostile __repr__/__str__ must not lose the result
        return "<%s failed: %s>" % (fn.__name__, type(e).__name__)


def _error_fields(exc, source_lines):
    frames = _snakepit.traceback(exc.__traceback__)
    lines = ["Traceback (most recent call last):\n"]
    user_line = 0
    for filename, lineno, funcname in frames:
        if filename != _FILENAME:
            continue  # the runner's own frames are noise to the user
        user_line = lineno
        lines.append('  File "%s", line %d, in %s\n' % (filename, lineno, funcname))
        if 0 < lineno <= len(source_lines):
            lines.append("    " + source_lines[lineno - 1].strip() + "\n")
    etype = type(exc).__name__
    message = _safe_str(str, exc, _REPR_CAP)
    if isinstance(exc, SyntaxError):
        user_line = exc.lineno or user_line
    lines.append(etype + (": " + message if message else "") + "\n")
    if len(lines) == 2:  # no user frame: drop the bare header
        lines = lines[1:]
    return etype, message, _cap("".join(lines), _REPR_CAP), user_line


def _variables(names, g):
    out = {}
    for name in names:
        if name not in g:
            continue
        value = g[name]
        try:
            text = json.dumps(value, allow_nan=False)
            if len(text) > _VAR_JSON_CAP:
                raise ValueError("too large")
            out[name] = value
        except BaseException:
            out[name] = _safe_str(repr, value, _VAR_REPR_CAP)
    try:
        return json.dumps(out, allow_nan=False)
    except BaseException:
        return json.dumps({k: _safe_str(repr, v, _VAR_REPR_CAP) for k, v in out.items()})


def run(job):
    """job: dict(code, allowed, profile, inspect, stdin, capture, workspace)."""
    # No random.seed() here: CPython's own at-fork hook (random registers one) reseeds every
    # child from the kernel as it is forked, so no two jobs share the zygote's random state.
    if job["capture"]:
        sys.stdout, sys.stderr = _Stream(1), _Stream(2)
    else:
        sys.stdout, sys.stderr = _Discard(1), _Discard(2)
    sys.stdin = io.StringIO(job["stdin"] or "")
    source = job["code"]
    source_lines = source.splitlines()
    _allowed[0] = job["allowed"]
    policed = job.get("policy", True)
    g = {"__name__": "__main__", "__doc__": None,
         "__builtins__": _builtins[0] if policed else _plain_builtins[0]}
    try:
        tree = compile(source, _FILENAME, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as e:
        etype, message, tb, line = _error_fields(e, source_lines)
        col = e.offset or 0
        message = "%s (line %d, column %d)" % (e.msg, e.lineno or 0, col)
        _snakepit.finish("syntax_error", error_type=etype, error_message=message,
                         traceback=tb, line=line)
        return
    except (MemoryError, RecursionError, ValueError) as e:
        etype, message, tb, line = _error_fields(e, source_lines)
        status = "memory_limit" if isinstance(e, MemoryError) else "syntax_error"
        _snakepit.finish(status, error_type=etype, error_message=message, traceback=tb)
        return

    tail = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tail = ast.Expression(tree.body.pop().value)
    status, value, err = "ok", None, None
    _snakepit.started()
    try:
        exec(compile(tree, _FILENAME, "exec"), g)
        if tail is not None:
            value = eval(compile(tail, _FILENAME, "eval"), g)
    except SystemExit as e:
        if e.code not in (None, 0):
            status, err = "error", e
    except MemoryError as e:
        status, err = "memory_limit", e
    except BaseException as e:
        status, err = "error", e
    _snakepit.stopped()

    kwargs = {}
    if err is not None:
        etype, message, tb, line = _error_fields(err, source_lines)
        kwargs.update(error_type=etype, error_message=message, traceback=tb, line=line)
    if value is None and status == "ok":
        value = g.get("result")
    if value is not None:
        kwargs["result"] = _safe_str(repr, value, _REPR_CAP)
    if job["inspect"]:
        kwargs["variables"] = _variables(job["inspect"], g)
    _snakepit.finish(status, **kwargs)


_ADVICE_NAMES = {
    "eval": "eval() runs arbitrary code; prefer explicit logic",
    "exec": "exec() runs arbitrary code; prefer explicit logic",
    "compile": "compile() builds code objects; rarely needed",
    "open": "open() needs the python.filesystem profile",
    "__import__": "use import statements; __import__ is policed the same way",
    "globals": "globals() exposes the module namespace",
    "vars": "vars() exposes object internals",
    "getattr": "dynamic attribute access defeats static checks",
    "breakpoint": "there is no debugger in the sandbox",
    "input": "input() reads the stdin argument; there is no terminal",
}
_DUNDER_ALARM = {
    "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__", "__bases__",
    "__base__", "__mro__", "__class__", "__dict__", "__getattribute__", "__reduce__",
    "__reduce_ex__", "__loader__", "__spec__", "__import__", "__init_subclass__", "f_globals",
    "f_back", "f_locals", "tb_frame", "gi_frame", "cr_frame", "gi_code", "co_code",
}


def validate(job):
    """Static advice on code, without running it: syntax, imports, risky names."""
    source = job["code"]
    allowed = job["allowed"]
    profile = job["profile"]
    errors, warnings, imports, recommendations = [], [], [], []
    seen_imports = set()
    lines = source.splitlines()
    analysis = {"line_count": len(lines), "character_count": len(source)}
    try:
        tree = compile(source, _FILENAME, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as e:
        errors.append({
            "kind": "syntax", "line": e.lineno or 0, "column": e.offset or 0,
            "message": "Line %d: %s" % (e.lineno or 0, e.msg),
        })
        tree = None
    except (MemoryError, RecursionError, ValueError) as e:
        errors.append({"kind": "syntax", "line": 0, "column": 0,
                       "message": "code cannot be parsed: %s" % type(e).__name__})
        tree = None

    branches = functions = loops = depth_max = 0
    if tree is not None:
        stack = [(tree, 0)]
        while stack:
            node, depth = stack.pop()
            depth_max = max(depth_max, depth)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if isinstance(node, ast.ImportFrom):
                    if node.level:
                        errors.append({"kind": "import", "line": node.lineno, "column": node.col_offset,
                                       "message": "Line %d: relative imports are not available" % node.lineno})
                        names = []
                    else:
                        names = [node.module or ""]
                else:
                    names = [a.name for a in node.names]
                for name in names:
                    if name not in seen_imports:
                        seen_imports.add(name)
                        imports.append((node.lineno, node.col_offset, name))
                    if not _module_allowed(name, allowed):
                        errors.append({"kind": "import", "line": node.lineno, "column": node.col_offset,
                                       "message": "Line %d: Import '%s' is not allowed in profile %s"
                                       % (node.lineno, name, profile)})
            elif isinstance(node, ast.Name) and node.id in _ADVICE_NAMES:
                warnings.append({"kind": "name", "line": node.lineno, "column": node.col_offset,
                                 "message": "Line %d: %s: %s" % (node.lineno, node.id, _ADVICE_NAMES[node.id])})
            elif isinstance(node, ast.Attribute) and node.attr in _DUNDER_ALARM:
                errors.append({"kind": "dunder", "line": node.lineno, "column": node.col_offset,
                               "message": "Line %d: access to '%s' is a sandbox-escape pattern and is blocked"
                               % (node.lineno, node.attr)})
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value in _DUNDER_ALARM:
                warnings.append({"kind": "dunder", "line": node.lineno, "column": node.col_offset,
                                 "message": "Line %d: string '%s' names an escape-prone attribute"
                                 % (node.lineno, node.value)})
            if isinstance(node, (ast.If, ast.IfExp, ast.Try, ast.BoolOp, ast.ExceptHandler, ast.Match)):
                branches += 1
            elif isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.comprehension)):
                loops += 1
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                functions += 1
            for child in ast.iter_child_nodes(node):
                stack.append((child, depth + 1))

    score = 1 + branches + 2 * loops + functions
    errors.sort(key=lambda d: (d["line"], d["column"]))
    warnings.sort(key=lambda d: (d["line"], d["column"]))
    analysis["imports"] = [name for _, _, name in sorted(imports)]
    analysis.update(
        branches=branches, loops=loops, functions=functions, max_nesting=depth_max,
        complexity_score=score,
        estimated_complexity="low" if score <= 10 else "medium" if score <= 30 else "high",
    )
    if any(e["kind"] == "import" for e in errors):
        recommendations.append("Use only the modules of profile %s (see get_sandbox_info)" % profile)
    if any(e["kind"] == "dunder" for e in errors):
        recommendations.append("Avoid dunder and frame attributes: the sandbox treats them as escape attempts")
    if loops and "while" in source:
        recommendations.append("Make sure every while loop terminates: jobs past their time limit are killed")
    if not errors and not warnings:
        recommendations.append("No issues found; the code can be executed as is")
    valid = not errors
    result = {
        "valid": valid,
        "errors": [e["message"] for e in errors],
        "warnings": [w["message"] for w in warnings],
        "details": errors + warnings,
        "message": "Code looks safe to run" if valid else "Code contains problems or restricted operations",
        "analysis": analysis,
        "recommendations": recommendations,
    }
    _snakepit.finish("ok", validation=json.dumps(result))
