# executor-node/runner.py — the Python half of a job's child.
#
# Loaded once into the zygote (compiled into snakepit-zygote), called in each child after
# every OS layer (rlimits, namespaces, Landlock, no_new_privs, seccomp) is in place. What it
# adds is defence in depth and convenience, never the boundary: fresh globals, an import
# allowlist, output capture, the trailing-expression result, variable inspection, and the
# exception with its user line. Its C half, the module _snakepit (runner.c), writes into the
# job's shared memory; the audit hook is audit.c.
import ast
import builtins
import io
import json
import random
import re
import sys
import tomllib
import types

import _snakepit

_FILENAME = "<snakepit>"
_REPR_CAP = 64 * 1024
_VAR_REPR_CAP = 4 * 1024
_VAR_JSON_CAP = 256 * 1024
# Figures: at most this many PNGs, each and all together at most these sizes (the child's
# meta area is 8 MiB and also carries the result and variables).
_MAX_IMAGES = 8
_MAX_IMAGE_BYTES = 2 << 20
_MAX_IMAGES_BYTES = 4 << 20
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
# The zygote's profile, and the profiles that have a workspace (for messages that point there):
# set by prepare from the profile table (common/profiles.c), never written here.
_profile = [""]
_workspace_profiles = [()]


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
        where = " or ".join(_workspace_profiles[0])

        def open(*args, **kwargs):
            raise PermissionError(
                "open() is not available in profile %s: it has no filesystem "
                "(use the %s profile and the files argument)" % (profile, where)
            )

        b["open"] = open
    for name in ("breakpoint", "help", "copyright", "credits", "license", "exit", "quit"):
        b.pop(name, None)
    return b


# The restricted builtins, built once per zygote (prepare) and shared copy-on-write by every
# child: a job gets them without copying a dict on its critical path.
_builtins = [None]
_plain_builtins = [None]
# {normalised distribution name: version} of the profile's importable packages, found in the
# zygote while sys.path still reaches them: what PEP 723 dependencies are checked against.
_versions = {}
_figures = [False]


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _find_versions(modules):
    import importlib.metadata as md
    for m in modules:
        top = m.split(".")[0]
        try:
            _versions[_norm(top)] = md.version(top)
        except Exception:
            pass  # the standard library: no distribution of its own


def versions():
    """JSON text {package: version} for the zygote's HELLO (get_sandbox_info shows it)."""
    return json.dumps(dict(sorted(_versions.items())))


def _warm_data_science():
    """Runs the common paths of numpy, pandas, scipy, matplotlib and sympy once in the zygote,
    so what they import or build lazily (formatters, parsers, the font cache, the Agg
    renderer) is in memory before the children are forked: a child can neither read those
    files nor afford the time."""
    import os
    import shutil
    import warnings
    warnings.simplefilter("ignore")  # deprecation chatter of the warm-up itself, not a job's
    import numpy as np
    import pandas as pd
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import sympy
    from scipy import stats, optimize, linalg, integrate, interpolate  # noqa: F401
    a = np.arange(12.0).reshape(3, 4)
    repr(a), str(a), a.tolist(), np.linalg.solve(np.eye(3) * 2, np.ones(3)), np.linalg.inv(np.eye(2))
    np.random.default_rng(1).normal(size=4), np.fft.fft(np.ones(4)), np.percentile(a, 50)
    df = pd.DataFrame({"k": ["a", "b", "a"], "v": [1.0, 2.0, 3.0],
                       "t": pd.date_range("2024-01-01", periods=3)})
    g = df.groupby("k")["v"].agg(["sum", "mean"])
    repr(df), str(g), df.describe(), df.to_string(), df.to_dict(), df.to_json(), df.to_html()
    df.to_markdown if hasattr(df, "to_markdown") else None
    text = df.to_csv(index=False)
    pd.read_csv(io.StringIO(text)), pd.read_json(io.StringIO(df.to_json()))
    df.pivot_table(index="k", values="v"), df.merge(df, on="k"), df.sort_values("v"), df["t"].dt.day
    pd.Series([1, 2, None]).fillna(0).rolling(2).mean(), pd.to_datetime(["2024-01-02"])
    stats.norm.cdf(1.0), stats.ttest_ind([1, 2, 3], [2, 3, 4]), stats.linregress([1, 2, 3], [2, 4, 7])
    optimize.minimize(lambda x: (x[0] - 1) ** 2, [0.0]), optimize.brentq(lambda x: x - 1, 0, 2)
    integrate.quad(lambda x: x * x, 0, 1), linalg.lu(np.eye(3))
    x = sympy.symbols("x")
    e = sympy.integrate(sympy.sin(x) ** 2, x)
    str(e), sympy.latex(e), sympy.pretty(e), sympy.solve(x ** 2 - 4, x), sympy.simplify(e.diff(x))
    sympy.sympify("x**2 + 1"), sympy.Matrix([[1, 2], [3, 4]]).det(), sympy.N(sympy.pi, 20)
    sympy.lambdify(x, sympy.sin(x), "numpy")(1.0), sympy.lambdify(x, x ** 2, "math")(2.0)
    sympy.series(sympy.exp(x), x, 0, 4), sympy.limit(sympy.sin(x) / x, x, 0), sympy.factor(x ** 2 - 1)
    sympy.nsolve(x ** 2 - 2, x, 1), sympy.dsolve(sympy.Function("f")(x).diff(x) - 1)
    np.polyfit([0, 1, 2], [1, 3, 5], 1), stats.gaussian_kde([1.0, 2.0, 3.0])(2.0)
    pd.cut(df["v"], 2), pd.crosstab(df["k"], df["v"] > 1), df.set_index("t").resample("D").sum()
    df.plot.bar(x="k", y="v"), df["v"].plot.hist(), pd.plotting.scatter_matrix(df[["v"]])
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 0, 2], label="line")
    ax.scatter([0, 1], [1, 0])
    ax.bar(["a", "b"], [1, 2])
    ax.hist([1, 2, 2, 3])
    ax.set_title("Warm-up: àéü Δ $x^2$")
    ax.set_xlabel("x")
    ax.legend()
    fig.tight_layout()
    for fmt in ("png", "svg", "pdf", "jpg"):  # the writers load their backends lazily
        fig.savefig(io.BytesIO(), format=fmt)
    df.plot(x="t", y="v")
    fig2 = plt.figure()
    fig2.add_subplot(projection="3d")
    for f in plt.get_fignums():
        plt.figure(f).savefig(io.BytesIO(), format="png")
    plt.close("all")
    warnings.resetwarnings()
    cache = os.environ.pop("MPLCONFIGDIR", None)
    if cache and os.path.basename(cache).startswith("snakepit-mpl-"):
        shutil.rmtree(cache, ignore_errors=True)


def _show(*args, **kwargs):
    """plt.show() in the sandbox: the open figures become images now (and are closed), as in
    a notebook."""
    _capture_figures()


def prepare(profile, workspace, figures, modules, workspace_profiles):
    """Called once in the zygote after its warm imports."""
    _profile[0] = profile
    _workspace_profiles[0] = tuple(workspace_profiles)
    _figures[0] = bool(figures)
    _find_versions(modules)
    if figures:
        _warm_data_science()
        import matplotlib.pyplot as plt
        plt.show = _show
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


def new_globals(policed):
    """The globals a job's code runs in (a session keeps its own across cells)."""
    return {"__name__": "__main__", "__doc__": None,
            "__builtins__": _builtins[0] if policed else _plain_builtins[0]}


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


_PEP723 = re.compile(
    r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*\(?([^;)]*)\)?\s*(;.*)?$")
_SPEC = re.compile(r"^\s*(===|~=|==|!=|<=|>=|<|>)\s*([A-Za-z0-9.*+!_-]+)\s*$")


def _release(v):
    m = re.match(r"\d+(\.\d+)*", v.strip())
    return tuple(int(p) for p in m.group(0).split(".")) if m else ()


def _cmp(a, b):
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


def _spec_ok(have, op, want):
    """PEP 440 comparison on release numbers (pre-releases and local labels are ignored)."""
    if op in ("==", "!=") and want.endswith(".*"):
        prefix = _release(want[:-2])
        ok = _release(have)[:len(prefix)] == prefix
        return ok if op == "==" else not ok
    if op == "===":
        return have == want
    c = _cmp(_release(have), _release(want))
    if op == "~=":
        w = _release(want)
        return c >= 0 and _release(have)[:max(len(w) - 1, 1)] == w[:max(len(w) - 1, 1)]
    return {"==": c == 0, "!=": c != 0, "<=": c <= 0, ">=": c >= 0, "<": c < 0, ">": c > 0}[op]


def _script_metadata(source):
    """PEP 723: the `# /// script` block, as (dependencies, requires-python), or None. Raises
    ValueError with a message for the user when the block is malformed."""
    blocks = [m for m in _PEP723.finditer(source) if m.group("type") == "script"]
    if not blocks:
        return None
    if len(blocks) > 1:
        raise ValueError("more than one `# /// script` block")
    content = "".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in blocks[0].group("content").splitlines(keepends=True))
    try:
        meta = tomllib.loads(content)
    except tomllib.TOMLDecodeError as e:
        raise ValueError("the `# /// script` block is not valid TOML: %s" % e)
    deps = meta.get("dependencies", [])
    req_py = meta.get("requires-python")
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise ValueError("`dependencies` must be an array of strings")
    if req_py is not None and not isinstance(req_py, str):
        raise ValueError("`requires-python` must be a string")
    return deps, req_py


def _specs_ok(have, specs):
    for spec in filter(None, (s.strip() for s in specs.split(","))):
        m = _SPEC.match(spec)
        if not m:
            raise ValueError("cannot read version specifier %r" % spec)
        if not _spec_ok(have, m.group(1), m.group(2)):
            return False
    return True


def _unmet(deps, req_py):
    """What the profile cannot satisfy: a list of human-readable reasons (empty when all
    is well). Environment markers are not evaluated: every dependency counts."""
    missing = []
    if req_py:
        have = "%d.%d.%d" % sys.version_info[:3]
        if not _specs_ok(have, req_py):
            missing.append("python%s (this sandbox runs %s)" % (req_py, have))
    for dep in deps:
        m = _REQ.match(dep)
        if not m:
            raise ValueError("cannot read dependency %r" % dep)
        name, specs = m.group(1), m.group(3) or ""
        have = _versions.get(_norm(name))
        if have is None:
            missing.append("%s (not installed)" % dep.strip())
        elif not _specs_ok(have, specs):
            missing.append("%s (installed: %s)" % (dep.strip(), have))
    return missing


def _check_metadata(source):
    """None when the code may run, else (error type, message)."""
    try:
        meta = _script_metadata(source)
        if meta is None:
            return None
        missing = _unmet(*meta)
    except ValueError as e:
        return "ScriptMetadataError", str(e)
    if not missing:
        return None
    have = ", ".join("%s %s" % kv for kv in sorted(_versions.items())) or "the standard library only"
    return ("DependencyError",
            "profile %s cannot satisfy the script's dependencies: %s. Nothing can be installed "
            "(the sandbox has no network); installed here: %s. See get_sandbox_info for the "
            "profiles and their packages." % (_profile[0], "; ".join(missing), have))


def _png_size(png):
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        return 0, 0
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


# Figures rendered so far in this job: (mime, width, height, png), and whether any was left out.
_images = []
_images_truncated = [False]


def _capture_figures(keep=False):
    """Every open matplotlib figure → PNG, then closed; capped in count and size. keep (a
    session's cell): figures stay open for the next cell, and only those changed since they
    were last drawn are rendered."""
    plt = sys.modules.get("matplotlib.pyplot")
    if not _figures[0] or plt is None:
        return
    try:
        nums = list(plt.get_fignums())
    except BaseException:
        return
    for n in nums:
        try:
            fig = plt.figure(n)
            if keep and not fig.stale:
                continue
            if len(_images) >= _MAX_IMAGES:
                _images_truncated[0] = True
            else:
                buf = io.BytesIO()
                fig.savefig(buf, format="png")
                png = buf.getvalue()
                total = sum(len(i[3]) for i in _images)
                if len(png) > _MAX_IMAGE_BYTES or total + len(png) > _MAX_IMAGES_BYTES:
                    _images_truncated[0] = True
                else:
                    w, h = _png_size(png)
                    _images.append(("image/png", w, h, png))
        except MemoryError:
            _images_truncated[0] = True
        except BaseException as e:
            sys.stderr.write("[snakepit: figure %s could not be rendered: %s: %s]\n"
                             % (n, type(e).__name__, _safe_str(str, e, 200)))
        finally:
            try:
                if not keep:
                    plt.close(n)
            except BaseException:
                pass


_MISSING = object()


def run(job, g=None):
    """job: dict(code, allowed, profile, inspect, stdin, capture, workspace). g: a session's
    globals (session.py), which the code's names join and which outlive the call; without
    it the code runs in fresh globals, as every one-off execution does."""
    # No random.seed() here: CPython's own at-fork hook (random registers one) reseeds every
    # child from the kernel as it is forked, so no two jobs share the zygote's random state.
    session = g is not None
    del _images[:]
    _images_truncated[0] = False
    if job["capture"]:
        sys.stdout, sys.stderr = _Stream(1), _Stream(2)
    else:
        sys.stdout, sys.stderr = _Discard(1), _Discard(2)
    sys.stdin = io.StringIO(job["stdin"] or "")
    source = job["code"]
    source_lines = source.splitlines()
    _allowed[0] = job["allowed"]
    if g is None:
        g = new_globals(job.get("policy", True))
    earlier_result = g.get("result", _MISSING)
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

    problem = _check_metadata(source)
    if problem is not None:
        _snakepit.finish("error", error_type=problem[0], error_message=problem[1])
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
    except _snakepit.OutputLimit:
        status = "output_limit"  # a session's cell: the C layer cut the output and said so
    except BaseException as e:
        status, err = "error", e
    _snakepit.stopped()

    kwargs = {}
    if _figures[0]:
        try:
            _capture_figures(keep=session)
        except BaseException:
            _images_truncated[0] = True
        if _images or _images_truncated[0]:
            kwargs.update(images=_images, images_truncated=_images_truncated[0])
    if err is not None:
        etype, message, tb, line = _error_fields(err, source_lines)
        kwargs.update(error_type=etype, error_message=message, traceback=tb, line=line)
    if value is None and status == "ok":
        value = g.get("result")
        if session and value is earlier_result:
            value = None  # a session's `result` counts only in the cell that binds it
    if value is not None:
        kwargs["result"] = _safe_str(repr, value, _REPR_CAP)
    if job["inspect"]:
        kwargs["variables"] = _variables(job["inspect"], g)
    _snakepit.finish(status, **kwargs)
