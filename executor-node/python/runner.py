# executor-node/python/runner.py — the Python half of a job's child.
#
# Loaded once into the zygote (compiled into snakepit-zygote), called in each child after
# every OS layer (rlimits, namespaces, Landlock, no_new_privs, seccomp) is in place. What it
# adds is defence in depth and convenience, never the boundary: fresh globals, an import
# allowlist, output capture, the trailing-expression result, variable inspection, and the
# exception with its user line. Its C half, the module _snakepit (runner.c), writes into the
# job's shared memory; the audit hook is audit.c.
import ast
import builtins
import hashlib
import importlib.machinery
import io
import json
import linecache
import os
import random
import re
import sys
import tempfile
import tomllib
import types

import _snakepit
import _snakepit_dists as _dists
import _snakepit_egress as _egress
import _snakepit_rich as _rich

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
# The zygote's profile, its modules, and the profiles that have a workspace (for messages that
# point there): set by prepare from the profile table (common/profiles.c), never written here.
_profile = [""]
_profile_modules = [()]
_workspace_profiles = [()]


def import_refusal(name, allowed):
    """The exception for an import of name that allowed refuses. A module of the profile that
    the call narrowed away (the drop-in endpoints do) is an ImportError listing what is allowed,
    as those servers said it; any other is not here, a ModuleNotFoundError as elsewhere, naming
    the profiles of the table that have it (_snakepit.profiles_with), so the caller can pick
    one. validate.py words its findings with it too."""
    profile = _profile[0]
    if _module_allowed(name, _profile_modules[0]):
        return ImportError("import of '%s' is not allowed in profile %s for this call (allowed: %s)"
                           % (name, profile, ", ".join(sorted(allowed))), name=name)
    others = [p for p in _snakepit.profiles_with(name) if p != profile]
    if others:
        return ModuleNotFoundError(
            "import of '%s' is not allowed in profile %s: it is in %s — pass profile=\"%s\""
            % (name, profile, ", ".join(others), others[0]), name=name)
    return ModuleNotFoundError(
        "import of '%s' is not allowed in profile %s, and no profile of this sandbox has it "
        "(get_sandbox_info lists each profile's modules; the dependencies argument installs "
        "packages where the operator provides a package source)" % (name, profile), name=name)


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level:
        raise ImportError("relative imports are not available in the sandbox")
    if not isinstance(name, str):
        raise TypeError("module name must be str")
    allowed = _allowed[0]
    if not _module_allowed(name, allowed):
        raise import_refusal(name, allowed)
    module = _real_import(name, globals, locals, fromlist, 0)
    for item in fromlist or ():
        if isinstance(item, str) and item != "*":
            sub = getattr(module, item, None)
            if isinstance(sub, _ModuleType) and not _module_allowed(name + "." + item, allowed):
                raise import_refusal(name + "." + item, allowed)
    return module


def _no_filesystem(what, profile):
    """The refusal for file work in a profile without a workspace, naming those that have one."""
    return PermissionError(
        "%s is not available in profile %s: it has no filesystem "
        "(use the %s profile and the files argument)"
        % (what, profile, " or ".join(_workspace_profiles[0]))
    )


class _Quitter:
    """exit() and quit(), which `python` gets from the site module (the zygote runs without
    it): SystemExit with the code, which the runner passes through as the job's exit code."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "Use %s() or Ctrl-D (i.e. EOF) to exit" % self._name

    def __call__(self, code=None):
        raise SystemExit(code)


def _make_builtins(profile, workspace):
    b = dict(builtins.__dict__)
    b["__import__"] = _import
    if not workspace:

        def open(*args, **kwargs):
            raise _no_filesystem("open()", profile)

        b["open"] = open
    for name in ("breakpoint", "help", "copyright", "credits", "license"):
        b.pop(name, None)
    b["exit"], b["quit"] = _Quitter("exit"), _Quitter("quit")
    b["display"] = _rich.display  # as in a notebook: rich outputs (rich.py)
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
    """The distributions that provide the profile's modules, by their own names: sklearn is
    scikit-learn's, PIL Pillow's, yaml PyYAML's (importlib.metadata.version(module) finds only
    the distributions named like their module). Their metadata is kept for the jobs'
    importlib.metadata (dists.py)."""
    import importlib.metadata as md
    try:
        by_module = md.packages_distributions()
    except Exception:
        by_module = {}
    provides = {}
    for top, names in by_module.items():
        for dist in names or ():
            provides.setdefault(dist, []).append(top)
    for m in modules:
        top = m.split(".")[0]
        for dist in (by_module.get(top, ()) or ()) if top in by_module else (top,):
            try:
                found = md.distribution(dist)
                _versions[_norm(dist)] = found.version
            except Exception:
                continue  # the standard library: no distribution of its own
            _dists.keep(found, _dists.location_of(found), provides.get(dist, (top,)))


def _env_versions(host_site, job_site):
    """A dependency environment's distributions, read from their METADATA files (and kept for
    the jobs' importlib.metadata, at the place the job sees them)."""
    for name, version in _dists.keep_environment(host_site, job_site).items():
        _versions[_norm(name)] = version


def versions():
    """JSON text {package: version} for the zygote's HELLO (get_sandbox_info shows it)."""
    return json.dumps(dict(sorted(_versions.items())))


def _show(*args, **kwargs):
    """plt.show() in the sandbox: the open figures become images now (and are closed), as in
    a notebook."""
    _capture_figures()


def _preload_codecs():
    """Every codec of the standard library, so that codecs.lookup never needs the file system
    (zipfile decodes member names as cp437, np.load and read_excel with it)."""
    import encodings
    import pkgutil
    for m in pkgutil.iter_modules(encodings.__path__):
        if m.name not in ("mbcs", "oem"):  # Windows only
            try:
                __import__("encodings." + m.name)
            except ImportError:
                pass


# Submodules that are never preloaded: multiprocessing.sharedctypes would load ctypes, which
# stays out of every zygote that does not need it.
_NEVER_PRELOAD = ("multiprocessing.sharedctypes",)


def _preload_packages(modules):
    """Every submodule of the profile's standard-library packages (email.generator, which
    as_string imports on first use; xml.dom's builders; http.cookiejar…): a child cannot reach
    the file system for what a package imports lazily. ~5 MB in python.basic, shared
    copy-on-write by every child."""
    import importlib
    import pkgutil
    import sysconfig
    stdlib = sysconfig.get_paths()["stdlib"] + "/"
    for name in modules:
        path = getattr(sys.modules.get(name), "__path__", None)
        if not path or not all(p.startswith(stdlib) for p in path):
            continue
        for info in pkgutil.walk_packages(path, name + ".", onerror=lambda _name: None):
            parts = set(info.name.split("."))
            if info.name in _NEVER_PRELOAD or parts & {"test", "tests", "__main__"}:
                continue
            try:
                importlib.import_module(info.name)
            except Exception:
                pass  # Windows-only modules (asyncio.windows_events, …)


def _settle_stdlib():
    """What the standard library would otherwise look up from a job's child, done once here:
    tarfile's owner names (pwd/grp go through glibc's NSS, which opens a socket to nscd: a
    seccomp kill for tarfile.add), platform's answers (it reads the interpreter binary), and
    tempfile's cached directory (the zygote's own, /tmp: each job gets its workspace)."""
    import platform
    import tarfile
    import tempfile
    tarfile.pwd = tarfile.grp = None
    platform.platform(), platform.uname(), platform.python_implementation()
    platform.python_version(), platform.machine(), platform.libc_ver()
    tempfile.tempdir = None
    _no_semaphores()
    _no_threads()


def _no_threads():
    """A job runs on one thread (seccomp refuses the clone of a new one): threading,
    ThreadPoolExecutor and asyncio.to_thread failed with CPython's bare "can't start new
    thread". Still a RuntimeError, as code that tries threads expects, now saying why."""
    import threading
    start = threading._start_new_thread

    def _start_new_thread(function, args, kwargs={}):
        try:
            return start(function, args, kwargs)
        except RuntimeError:
            raise RuntimeError("can't start new thread: [sandbox] a job runs on one thread; "
                               "run the work in this thread (a loop, or asyncio)") from None

    threading._start_new_thread = _start_new_thread


def _no_semaphores():
    """multiprocessing's locks, queues and pools stand on POSIX semaphores in /dev/shm, which
    a job cannot create (seccomp answers EPERM; where the profile's mounts have no /dev/shm,
    ENOENT): Pool(2) failed with a bare "[Errno 1] Operation not permitted". The refusal now says what cannot be had, like the audit hook's
    for a process start (which Process.start still gets)."""
    ms = sys.modules.get("multiprocessing.synchronize")
    if ms is None:
        return
    init = ms.SemLock.__init__

    def __init__(self, *args, **kwargs):
        try:
            init(self, *args, **kwargs)
        except OSError:
            raise PermissionError(
                "[sandbox] the sandbox cannot start processes: multiprocessing's pools, "
                "queues and locks need child processes and shared semaphores; run the work "
                "in this process (a loop, map(), or asyncio)") from None

    ms.SemLock.__init__ = __init__


class _EnvImports:
    """A dependency environment's imports: PathFinder's, over sys.path (the environment's
    directory alone). Its other half, listing directories for importlib.metadata, is left
    out: distributions come from memory (dists.py)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        return importlib.machinery.PathFinder.find_spec(name, path, target)

    @staticmethod
    def invalidate_caches():
        importlib.machinery.PathFinder.invalidate_caches()


def _audit_open_at():
    """os.open(path, flags, dir_fd=fd): the interpreter's "open" audit event carries no dir_fd,
    so the Python layer would judge a relative path against the working directory instead of
    the descriptor. This os.open raises "os.open" (path, flags, dir_fd) first, which the
    policy judges by the descriptor (python/policy.c)."""
    real = os.open

    def open_at(path, flags, mode=0o777, *, dir_fd=None):
        if dir_fd is not None:
            sys.audit("os.open", path, flags, dir_fd)
        return real(path, flags, mode, dir_fd=dir_fd)

    open_at.__doc__, open_at.__name__, open_at.__qualname__ = real.__doc__, "open", "open"
    os.open = open_at
    if real in os.supports_dir_fd:  # shutil.rmtree's descriptor walk keeps working
        os.supports_dir_fd.add(open_at)


def prepare(profile, workspace, figures, modules, workspace_profiles, env_site, env_modules,
            env_host):
    """Called once in the zygote after its warm imports. env_site/env_modules: a dependency
    environment's site-packages as the job sees it and the modules it adds, which the job
    imports itself, inside the sandbox (executor-node/envprofile.h); env_host: that directory
    on the host, whose distributions' metadata (files, never code) give their versions; "", []
    and "" elsewhere."""
    import warnings
    _profile[0] = profile
    _profile_modules[0] = tuple(modules)
    _workspace_profiles[0] = tuple(workspace_profiles)
    _figures[0] = bool(figures)
    own = [m for m in modules if m not in env_modules]
    _find_versions(own)
    if env_host:
        _env_versions(env_host, env_site)
    _preload_codecs()
    _preload_packages(own)
    filters = warnings.filters[:]
    if figures:
        import _snakepit_warm
        _snakepit_warm.warm()
        import matplotlib.pyplot as plt
        plt.show = _show
    warnings.filters[:] = filters
    _settle_stdlib()
    # From here on imports come from memory only: a module that was not preloaded fails as
    # ModuleNotFoundError at once, without the path finder listing directories (which the
    # audit hook would rightly report) — but for a dependency environment's own modules.
    sys.path[:] = []
    sys.path_importer_cache.clear()
    finders = [f for f in sys.meta_path if getattr(f, "__name__", "") != "PathFinder"]
    if env_site:  # the environment's modules, and only they, load from its read-only directory
        sys.path.append(env_site)
        finders.append(_EnvImports)
    sys.meta_path[:] = finders + [_dists.Finder]
    _audit_open_at()
    _builtins[0] = _make_builtins(profile, workspace)
    if not workspace:  # tempfile would probe /tmp and friends and say none is usable

        def _no_tempdir():
            raise _no_filesystem("tempfile", profile)

        tempfile._get_default_tempdir = _no_tempdir
    # For nodes run with --disable-layer python (tests that prove each OS layer alone): the
    # interpreter's own builtins, no import guard.
    _plain_builtins[0] = dict(builtins.__dict__, display=_rich.display, exit=_Quitter("exit"),
                              quit=_Quitter("quit"))


def new_globals(policed):
    """The globals a job's code runs in (a session keeps its own across cells): a real
    __main__ module's, as for `python main.py`, so pickle finds the classes and functions it
    defines (sys.modules["__main__"].Name) and dataclasses its annotations. __file__: scripts
    find their data next to themselves (os.path.dirname(__file__)), which is the workspace,
    the working directory."""
    main = _main_module(policed)
    sys.modules["__main__"] = main
    return main.__dict__


def _cap(text, cap):
    if len(text) > cap:
        return text[:cap] + "... [%d more characters]" % (len(text) - cap)
    return text


def _safe_str(fn, value, cap):
    try:
        return _cap(fn(value), cap)
    except BaseException as e:  # a hostile __repr__/__str__ must not lose the result
        return "<%s failed: %s>" % (fn.__name__, type(e).__name__)


_CAUSE = ("\nThe above exception was the direct cause of the following exception:\n\n")
_CONTEXT = ("\nDuring handling of the above exception, another exception occurred:\n\n")
_CHAIN_MAX = 16  # exceptions of one chain shown, as a cycle or a very long chain may be


def _format_one(exc, source_lines):
    """One exception as CPython prints it — its frames in the user's code (the runner's own
    are noise to the user), then type, message and notes — and its last user line."""
    lines = ["Traceback (most recent call last):\n"]
    user_line = framed = 0
    for filename, lineno, funcname in _snakepit.traceback(exc.__traceback__):
        if filename != _FILENAME:
            continue
        user_line = framed = lineno
        lines.append('  File "%s", line %d, in %s\n' % (filename, lineno, funcname))
        if 0 < lineno <= len(source_lines):
            lines.append("    " + source_lines[lineno - 1].strip() + "\n")
    message = _safe_str(str, exc, _REPR_CAP)
    if isinstance(exc, SyntaxError):
        user_line = exc.lineno or user_line
    lines.append(type(exc).__name__ + (": " + message if message else "") + "\n")
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, (list, tuple)):
        lines.extend(_safe_str(str, n, _REPR_CAP) + "\n" for n in notes[:_CHAIN_MAX])
    if not framed:
        lines = lines[1:]  # no user frame: drop the bare header
    return "".join(lines), message, user_line


def _chain(exc):
    """exc and what it was raised from (__cause__) or while handling (__context__, unless
    suppressed by `from None`), oldest first, each with the line CPython prints after it."""
    chain, seen, note = [], set(), None
    while exc is not None and id(exc) not in seen and len(chain) < _CHAIN_MAX:
        seen.add(id(exc))
        chain.append((exc, note))
        if exc.__cause__ is not None:
            exc, note = exc.__cause__, _CAUSE
        elif exc.__context__ is not None and not exc.__suppress_context__:
            exc, note = exc.__context__, _CONTEXT
        else:
            exc = None
    return reversed(chain)


def _error_fields(exc, source_lines):
    """(type, message, traceback, line) of the exception that ended the code: the traceback
    with its whole chain, as CPython prints it; the type, message and line are the last one's."""
    parts = []
    message, user_line = "", 0
    for one, note in _chain(exc):
        text, message, user_line = _format_one(one, source_lines)
        parts.append(text)
        if note:
            parts.append(note)
    return type(exc).__name__, message, _cap("".join(parts), _REPR_CAP), user_line


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


_MARKER_TOKEN = re.compile(r"\s*(?:(\'[^\']*\'|\"[^\"]*\")|(===|==|!=|<=|>=|~=|<|>|\(|\))|([A-Za-z_][A-Za-z0-9_]*))")
_VERSION_VARS = {"python_version", "python_full_version", "implementation_version"}


def _marker_env():
    u = os.uname()
    impl = sys.implementation.version
    return {"os_name": os.name, "sys_platform": sys.platform, "platform_system": u.sysname,
            "platform_release": u.release, "platform_version": u.version,
            "platform_machine": u.machine, "platform_python_implementation": "CPython",
            "implementation_name": sys.implementation.name,
            "implementation_version": "%d.%d.%d" % (impl.major, impl.minor, impl.micro),
            "python_version": "%d.%d" % sys.version_info[:2],
            "python_full_version": "%d.%d.%d" % sys.version_info[:3], "extra": ""}


def _marker_true(text):
    """A PEP 508 environment marker, evaluated here; None when it cannot be read (the
    front-end and the node refuse what PEP 508 does not allow, so that is rare)."""
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        m = _MARKER_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        tokens.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
    env, at = _marker_env(), [0]

    def take():
        at[0] += 1
        return tokens[at[0] - 1] if at[0] <= len(tokens) else None

    def peek():
        return tokens[at[0]] if at[0] < len(tokens) else None

    def value():
        t = take()
        if t is None:
            raise ValueError
        if t[0] in "'\"":
            return t[1:-1], False
        if t not in env:
            raise ValueError
        return env[t], t in _VERSION_VARS

    def compare():
        if peek() == "(":
            take()
            v = either()
            if take() != ")":
                raise ValueError
            return v
        left, lver = value()
        op = take()
        if op == "not":
            op = "not in" if take() == "in" else None
        right, rver = value()
        if op == "in":
            return left in right
        if op == "not in":
            return left not in right
        if op in ("==", "!=", "<", "<=", ">", ">=", "~=") and (lver or rver):
            return _spec_ok(left, op, right)
        if op in ("==", "==="):
            return left == right
        if op == "!=":
            return left != right
        raise ValueError

    def both():
        v = compare()
        while peek() == "and":
            take()
            v = compare() and v
        return v

    def either():
        v = both()
        while peek() == "or":
            take()
            v = both() or v
        return v

    try:
        result = either()
        return result if at[0] == len(tokens) else None
    except (ValueError, TypeError):
        return None


def _unmet(deps, req_py):
    """What the profile cannot satisfy: a list of human-readable reasons (empty when all
    is well). A dependency whose environment marker is false here is not needed."""
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
        if m.group(4) and _marker_true(m.group(4)[1:]) is False:
            continue  # e.g. `; python_version < "3.8"`: not for this interpreter
        have = _versions.get(_norm(name))
        if have is None:
            missing.append("%s (not installed)" % dep.strip())
        elif not _specs_ok(have, specs):
            missing.append("%s (installed: %s)" % (dep.strip(), have))
    return missing


def _check_metadata(source, requested=()):
    """None when the code may run, else (error type, message). requested: the JobSpec's
    dependencies (the argument's and the block's, as the front-end sent them)."""
    if not requested and "# ///" not in source:  # no block (the usual case): no regex
        return None
    try:
        meta = _script_metadata(source)
        if meta is None and not requested:
            return None
        deps, req_py = meta if meta is not None else ([], None)
        deps = list(dict.fromkeys([d.strip() for d in deps] + [d.strip() for d in requested]))
        missing = _unmet(deps, req_py)
    except ValueError as e:
        return "ScriptMetadataError", str(e)
    if not missing:
        return None
    have = ", ".join("%s %s" % kv for kv in sorted(_versions.items())) or "the standard library only"
    return ("DependencyError",
            "profile %s cannot satisfy the script's dependencies: %s. The sandbox has no network "
            "and this executor has no package source to install from; installed here: %s. See "
            "get_sandbox_info for the profiles and their packages." % (_profile[0], "; ".join(missing), have))


def _png_size(png):
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        return 0, 0
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


# Figures rendered so far in this job: (mime, width, height, png), and whether any was left out.
_images = []
_images_truncated = [False]


def _capture_figures(keep=False):
    """Every open matplotlib figure → PNG, then closed; capped in count and size. keep (a
    session's cell): figures stay open for the next cell, and one comes back only when it is
    new or its picture changed — matplotlib's stale flag says when to draw it again (savefig
    itself leaves it set, so it is cleared here), the PNG's digest whether to send it."""
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
            if _rich._figure_format[0] == "svg":  # asked for SVG: a rich output each
                _rich.add("display", fig)
                continue
            if len(_images) >= _MAX_IMAGES:
                _images_truncated[0] = True
            else:
                buf = io.BytesIO()
                fig.savefig(buf, format="png")
                png = buf.getvalue()
                total = sum(len(i[3]) for i in _images)
                digest = hashlib.blake2b(png, digest_size=16).digest() if keep else None
                if keep:
                    fig.stale = False
                    if getattr(fig, "_snakepit_sent", None) == digest:
                        continue  # drawn again, unchanged: the earlier cell sent it
                if len(png) > _MAX_IMAGE_BYTES or total + len(png) > _MAX_IMAGES_BYTES:
                    _images_truncated[0] = True
                else:
                    w, h = _png_size(png)
                    _images.append(("image/png", w, h, png))
                    if keep:
                        fig._snakepit_sent = digest
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


def _settle_job(job, source):
    """The job's own view of the standard library: its workspace as the temporary directory
    (tempfile's, and $TMPDIR for libraries that read it), its network (the proxy variables
    and the tunnelling of plain TCP, when it has egress), its source in linecache (so that
    traceback and inspect show its lines as they would a file's)."""
    ws = job.get("workspace_dir") or None
    if tempfile.tempdir != ws:  # unchanged, it is not written (a page less to copy)
        tempfile.tempdir = ws
    if ws:
        os.environ["TMPDIR"] = ws
    if job.get("egress"):  # the node granted it the network (egress.py)
        _egress.enable(job["egress"])
    else:
        _egress.disable()
    linecache.cache[_FILENAME] = (len(source), None, source.splitlines(True), _FILENAME)


def _exit_code(exc):
    """The status a process ends with on SystemExit, as CPython's own exit makes it: None is 0,
    an int is itself as the kernel keeps it (0-255), anything else is printed on stderr and is
    1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    sys.stderr.write(_safe_str(str, code, _REPR_CAP) + "\n")
    return 1


def _exit_fields(exc, code):
    """A non-zero exit as the job's error: no traceback (the code chose to end, as `python`
    prints none), the line it ended on."""
    line = 0
    for filename, lineno, _ in _snakepit.traceback(exc.__traceback__):
        if filename == _FILENAME:
            line = lineno
    return {"error_type": "SystemExit", "error_message": "exit code %d" % code, "line": line}


def _refused_by_sandbox(exc):
    """Whether exc (or what it was raised from, a few links down) is a refusal of the audit
    hook: then that refusal is what ended the job."""
    for _ in range(8):
        if exc is None:
            return False
        if isinstance(exc, _snakepit.PermissionError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


_MISSING = object()


# What a job starts with — its __main__ module and its standard streams — made once in the
# zygote by fresh() and installed there, so a child finds them in place instead of allocating
# and swapping them in (each swap frees the zygote's objects: pages to copy). A fork gives
# every child a copy of its own, so no two jobs ever share one. A session's cells never use it:
# a session keeps its own globals (session.py, new_globals) from cell to cell.
_fresh = [None]


def _main_module(policed):
    # __file__: scripts find their data next to themselves (os.path.dirname(__file__)), which
    # is the workspace, the working directory
    # The job's globals are a real __main__ module's, as for `python main.py`: pickle finds the
    # classes and functions it defines (sys.modules["__main__"].Name), dataclasses its
    # annotations.
    main = _ModuleType("__main__")
    main.__dict__.update({"__doc__": None, "__file__": "main.py",
                          "__builtins__": _builtins[0] if policed else _plain_builtins[0]})
    return main


def fresh(policed):
    """Called in the zygote, last: a job's __main__ and streams, installed for its children."""
    main = _main_module(policed)
    sys.modules["__main__"] = main
    sys.stdout, sys.stderr = _Stream(1), _Stream(2)
    sys.stdin = io.StringIO("")
    _rich.reset("png")
    _fresh[0] = main


def _session_cell_start(job):
    """A session's cell: what the previous cell left in the process (images, streams) goes;
    its globals stay."""
    _fresh[0] = None  # a one-off job's prepared __main__ is never a session's
    del _images[:]
    _images_truncated[0] = False
    if job["capture"]:
        sys.stdout, sys.stderr = _Stream(1), _Stream(2)
    else:
        sys.stdout, sys.stderr = _Discard(1), _Discard(2)
    sys.stdin = io.StringIO(job["stdin"] or "")


def _job_globals(job, policed):
    """A one-off job's globals: the __main__ fresh() prepared, else a new one."""
    main, _fresh[0] = _fresh[0], None
    if main is None or sys.modules.get("__main__") is not main:
        main = _main_module(policed)
        sys.modules["__main__"] = main
        sys.stdout, sys.stderr, sys.stdin = _Stream(1), _Stream(2), io.StringIO("")
    if not job["capture"]:
        sys.stdout, sys.stderr = _Discard(1), _Discard(2)
    if job["stdin"]:
        sys.stdin = io.StringIO(job["stdin"])
    return main.__dict__


def run(job, g=None):
    """job: dict(code, allowed, profile, inspect, stdin, capture, workspace, workspace_dir).
    g: a session's globals (session.py), which the code's names join and which outlive the
    call; without it the code runs in the fresh globals the zygote prepared, as every one-off
    execution does."""
    # No random.seed() here: CPython's own at-fork hook (random registers one) reseeds every
    # child from the kernel as it is forked, so no two jobs share the zygote's random state;
    # numpy's global state is reseeded by the warm-up's at-fork hook.
    policed = job.get("policy", True)
    session = g is not None
    if session:
        _session_cell_start(job)
    else:
        g = _job_globals(job, policed)
    source = job["code"]
    # a job with network egress may also import ssl, to trust its own CA (egress.py)
    _allowed[0] = job["allowed"] + (("ssl",) if job.get("egress") else ())
    _settle_job(job, source)
    fmt = job.get("figure_format") or "png"
    if session or _rich.outputs or _rich.truncated[0] or _rich._figure_format[0] != fmt:
        _rich.reset(fmt)
    earlier_result = g.get("result", _MISSING)
    try:
        tree = compile(source, _FILENAME, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as e:
        etype, message, tb, line = _error_fields(e, source.splitlines())
        col = e.offset or 0
        message = "%s (line %d, column %d)" % (e.msg, e.lineno or 0, col)
        _snakepit.finish("syntax_error", error_type=etype, error_message=message,
                         traceback=tb, line=line)
        return
    except (MemoryError, RecursionError, ValueError) as e:
        etype, message, tb, line = _error_fields(e, source.splitlines())
        status = "memory_limit" if isinstance(e, MemoryError) else "syntax_error"
        _snakepit.finish(status, error_type=etype, error_message=message, traceback=tb)
        return

    problem = _check_metadata(source, job.get("dependencies") or ())
    if problem is not None:
        _snakepit.finish("error", error_type=problem[0], error_message=problem[1])
        return

    kwargs = {}
    tail = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tail = ast.Expression(tree.body.pop().value)
    status, value, err, exit_code = "ok", None, None, 0
    _snakepit.started()
    try:
        exec(compile(tree, _FILENAME, "exec"), g)
        if tail is not None:
            value = eval(compile(tail, _FILENAME, "eval"), g)
    except SystemExit as e:  # sys.exit(), exit(): a process's end, not an exception to show
        exit_code = _exit_code(e)
        if exit_code:
            status, kwargs = "error", _exit_fields(e, exit_code)
    except MemoryError as e:
        status, err = "memory_limit", e
    except _snakepit.OutputLimit:
        status = "output_limit"  # a session's cell: the C layer cut the output and said so
    except BaseException as e:
        status, err = "error", e
    if value is not None and status == "ok":  # the trailing expression, rendered by type
        _rich.add("result", value)
    _snakepit.stopped()

    if _figures[0]:
        try:
            _capture_figures(keep=session)
        except BaseException:
            _images_truncated[0] = True
        if _images or _images_truncated[0]:
            kwargs.update(images=_images, images_truncated=_images_truncated[0])
    if err is not None:
        etype, message, tb, line = _error_fields(err, source.splitlines())
        kwargs.update(error_type=etype, error_message=message, traceback=tb, line=line,
                      denied=_refused_by_sandbox(err))
    if value is None and status == "ok":
        value = g.get("result")
        if session and value is earlier_result:
            value = None  # a session's `result` counts only in the cell that binds it
    if value is not None:
        kwargs["result"] = _safe_str(repr, value, _REPR_CAP)
    if job["inspect"]:
        kwargs["variables"] = _variables(job["inspect"], g)
    if _rich.outputs or _rich.truncated[0]:
        kwargs.update(outputs=_rich.outputs, outputs_truncated=_rich.truncated[0])
    _snakepit.finish(status, exit_code=exit_code, **kwargs)
