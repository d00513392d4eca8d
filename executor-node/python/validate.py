# executor-node/python/validate.py — validate_code: static advice on code, without running it.
#
# Runs in a sandboxed child like any job (parsing untrusted code can exhaust memory): syntax
# errors with line and column, imports the profile does not allow, calls the sandbox refuses,
# line and character counts, a complexity estimate, recommendations. It advises; the OS layers
# enforce. What it calls refused is asked of the rules execute_code applies, never written here:
# imports of the profile's module list (runner.import_refusal, the profile table), and calls of
# the audit hook's policy (_snakepit.judge, executor-node/python/policy.c) — this file only knows
# which audit event a call raises. So validate_code and execute_code cannot disagree: code that
# runs is not called blocked (`().__class__` is ordinary), and what it flags is refused when
# the code runs. Loaded into the zygote after runner.py (compiled into snakepit-zygote).
import ast
import json

import _snakepit
from _snakepit_runner import _FILENAME, _module_allowed, _workspace_profiles, import_refusal

_ADVICE_NAMES = {
    "eval": "eval() runs code a static check cannot follow",
    "exec": "exec() runs code a static check cannot follow",
    "compile": "compile() builds code a static check cannot follow",
    "__import__": "__import__ with a computed name cannot be checked statically",
    "getattr": "getattr with a computed name cannot be checked statically",
    "breakpoint": "there is no debugger in the sandbox: breakpoint() is not defined",
    "help": "help() is not defined in the sandbox (it reads files and a pager)",
    "input": "input() reads the stdin argument; there is no terminal",
}

# The audit event CPython raises for a call, by the call's full name, and which of the call's
# arguments the event carries as the thing the policy judges (None: the verdict does not depend
# on it). The sandbox's verdict is policy.c's, asked through _snakepit.judge.
_PROCESS = {"os.system": "os.system", "os.popen": "subprocess.Popen", "os.fork": "os.fork",
            "os.forkpty": "os.forkpty", "os.posix_spawn": "os.posix_spawn",
            "os.posix_spawnp": "os.posix_spawn", "webbrowser.open": "webbrowser.open",
            "webbrowser.open_new": "webbrowser.open", "webbrowser.open_new_tab": "webbrowser.open",
            "asyncio.create_subprocess_exec": "subprocess.Popen",
            "asyncio.create_subprocess_shell": "subprocess.Popen"}
_PROCESS.update({"os." + n: "os.exec" for n in ("execv", "execve", "execl", "execle", "execlp",
                                                 "execlpe", "execvp", "execvpe")})
_PROCESS.update({"os." + n: "os.fork" for n in ("spawnv", "spawnve", "spawnl", "spawnle",
                                                 "spawnlp", "spawnlpe", "spawnvp", "spawnvpe")})
_PROCESS.update({"subprocess." + n: "subprocess.Popen" for n in (
    "run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput")})
_CALLS = {name: (event, None) for name, event in _PROCESS.items()}
_CALLS.update({
    "socket.socket": ("socket.__new__", None), "socket.create_server": ("socket.__new__", None),
    "socket.create_connection": ("socket.getaddrinfo", None),
    "socket.getaddrinfo": ("socket.getaddrinfo", None),
    "socket.gethostbyname": ("socket.gethostbyname", None),
    "socket.gethostbyname_ex": ("socket.gethostbyname", None),
    "socket.gethostbyaddr": ("socket.gethostbyaddr", None),
    "socket.getnameinfo": ("socket.getnameinfo", None),
    "urllib.request.urlopen": ("urllib.Request", None),
    "urllib.request.urlretrieve": ("urllib.Request", None),
    "gc.get_objects": ("gc.get_objects", None), "gc.get_referrers": ("gc.get_referrers", None),
    "gc.get_referents": ("gc.get_referents", None),
    "sys._current_frames": ("sys._current_frames", None),
    "sys._current_exceptions": ("sys._current_exceptions", None),
    "types.CodeType": ("code.__new__", None),
    "resource.setrlimit": ("resource.setrlimit", None), "resource.prlimit": ("resource.prlimit", None),
    "signal.pthread_kill": ("signal.pthread_kill", None),
    "os.symlink": ("os.symlink", None), "os.link": ("os.link", None),
    "os.mknod": ("os.mknod", None), "os.mkfifo": ("os.mkfifo", None),
    "os.chown": ("os.chown", None), "os.lchown": ("os.lchown", None),
    "shutil.chown": ("shutil.chown", None),
    "os.kill": ("os.kill", "pid"), "os.killpg": ("os.killpg", "pid"),
    "open": ("open", "path"), "io.open": ("open", "path"), "os.open": ("open", "path"),
    "sqlite3.connect": ("sqlite3.connect", "path"),
})
for _n in ("remove", "unlink", "rmdir", "mkdir", "listdir", "scandir", "chdir", "truncate",
           "chmod", "utime", "rename", "replace"):
    _CALLS["os." + _n] = ("os.rename" if _n == "replace" else "os." + _n, "path")
_CALLS["os.makedirs"] = ("os.mkdir", "path")
# Names that, reached past what a static check can follow (a subscript, a call, getattr with a
# constant), are the process and network functions escapes go for: sys.modules['os'].system.
_REACHED = {name.rsplit(".", 1)[1]: event for name, (event, _) in _CALLS.items()
            if event in set(_PROCESS.values()) | {"urllib.Request", "socket.getaddrinfo"}}
_LOADERS = {"__import__", "importlib.import_module"}


def _dotted(node):
    """a.b.c for an attribute chain of names, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _aliases(tree):
    """Each name an import binds → the module or object it names (import subprocess as sp:
    sp → subprocess; from os import system: system → os.system)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = node.module + "." + a.name
    return out


def _constant(node):
    return node.value if isinstance(node, ast.Constant) else None


def _callee(func, aliases):
    """(full name, reached): the function a call names, resolved through the imports
    (reached False), or the bare name of a function reached past what a static check follows
    (a subscript, a call, getattr with a constant: reached True); (None, False) otherwise."""
    dotted = _dotted(func)
    if dotted is not None:
        root, _, rest = dotted.partition(".")
        if root in aliases:
            return aliases[root] + ("." + rest if rest else ""), False
        return (dotted, False) if dotted in ("open", "__import__") else (None, False)
    if isinstance(func, ast.Attribute):
        base = func.value
        loaded = _constant(base.args[0]) if isinstance(base, ast.Call) and base.args else None
        if isinstance(loaded, str) and (_dotted(base.func) in _LOADERS or
                                        _callee(base.func, aliases)[0] in _LOADERS):
            return loaded + "." + func.attr, False  # __import__('os').system
        return func.attr, True
    if isinstance(func, ast.Subscript) and isinstance(_constant(func.slice), str):
        return func.slice.value, True  # g['system'](...)
    if isinstance(func, ast.Call) and _dotted(func.func) == "getattr" and len(func.args) > 1 \
            and isinstance(_constant(func.args[1]), str):
        return func.args[1].value, True  # getattr(m, 'system')(...)
    return None, False


def _event(name, reached):
    """(display name, event, argument kind) of a call the policy judges, or None."""
    if reached:
        event = _REACHED.get(name)
        return (name, event, None) if event else None
    for cut in range(name.count(".") + 1):  # uuid.os.system is os.system
        tail = name.split(".", cut)[-1]
        if tail in _CALLS:
            return (tail,) + _CALLS[tail]
    return None


def _refusal(call, aliases, job):
    """Why the sandbox refuses this call, in the policy's words, or None (allowed, or
    depending on what only run time knows)."""
    name, reached = _callee(call.func, aliases)
    found = _event(name, reached) if name else None
    if found is None:
        return None
    shown, event, arg = found
    if event == "open" and not job["workspace"]:
        return "%s() is not available in profile %s: it has no filesystem (use the %s profile " \
               "and the files argument)" % (shown, job["profile"], " or ".join(_workspace_profiles[0]))
    path = mode = num = None
    if arg is not None:
        value = _constant(call.args[0]) if call.args else None
        if arg == "path" and isinstance(value, str):
            path = value
            mode = _constant(call.args[1]) if len(call.args) > 1 else None
            mode = mode if isinstance(mode, str) else None
        elif arg == "pid" and isinstance(value, int) and not isinstance(value, bool):
            num = value
        else:
            return None  # the verdict depends on a value only the run has
    verdict, why = _snakepit.judge(event, path, mode, num)
    if verdict == "allow":
        return None
    target = " %r" % (path if path is not None else num) if (path or num is not None) else ""
    return "%s()%s is refused by the sandbox: %s (%s)" % (shown, target, why, event)


def _import_names(node):
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return [a.name for a in node.names]


def _finding(kind, node, message):
    line = getattr(node, "lineno", 0)
    return {"kind": kind, "line": line, "column": getattr(node, "col_offset", 0),
            "message": "Line %d: %s" % (line, message)}


def _check(tree, job, errors, warnings, imports):
    """Walks tree: the findings, the imports in order, and the counts for the complexity."""
    allowed, aliases, seen = job["allowed"], _aliases(tree), set()
    counts = {"branches": 0, "loops": 0, "functions": 0, "depth": 0}
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        counts["depth"] = max(counts["depth"], depth)
        if isinstance(node, ast.ImportFrom) and node.level:
            errors.append(_finding("import", node, "relative imports are not available"))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _import_names(node):
                if name not in seen:
                    seen.add(name)
                    imports.append((node.lineno, node.col_offset, name))
                if not _module_allowed(name, allowed):
                    errors.append(_finding("import", node, str(import_refusal(name, allowed))))
        elif isinstance(node, ast.Call):
            why = _refusal(node, aliases, job)
            if why:
                errors.append(_finding("refused", node, why))
        elif isinstance(node, ast.Name) and node.id in _ADVICE_NAMES \
                and isinstance(node.ctx, ast.Load) and node.id not in aliases:
            warnings.append(_finding("name", node, "%s: %s" % (node.id, _ADVICE_NAMES[node.id])))
        if isinstance(node, (ast.If, ast.IfExp, ast.Try, ast.BoolOp, ast.ExceptHandler, ast.Match)):
            counts["branches"] += 1
        elif isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.comprehension)):
            counts["loops"] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            counts["functions"] += 1
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1))
    return counts


def _recommendations(errors, warnings, profile, source, loops):
    out = []
    kinds = {e["kind"] for e in errors}
    if "import" in kinds:
        out.append("Use only the modules of profile %s, or the profile the error names "
                   "(get_sandbox_info lists each profile's modules)" % profile)
    if "refused" in kinds:
        out.append("The sandbox has no processes and no network, and files only in the workspace: "
                   "compute in Python, and pass data in with the files argument")
    if loops and "while" in source:
        out.append("Make sure every while loop terminates: jobs past their time limit are killed")
    if not errors and not warnings:
        out.append("No issues found by the static checks")
    return out


def validate(job):
    """Static advice on code, without running it: syntax, imports, refused calls."""
    source = job["code"]
    profile = job["profile"]
    errors, warnings, imports = [], [], []
    lines = source.splitlines()
    analysis = {"line_count": len(lines), "character_count": len(source)}
    try:
        tree = compile(source, _FILENAME, "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as e:
        errors.append({"kind": "syntax", "line": e.lineno or 0, "column": e.offset or 0,
                       "message": "Line %d: %s" % (e.lineno or 0, e.msg)})
        tree = None
    except (MemoryError, RecursionError, ValueError) as e:
        errors.append({"kind": "syntax", "line": 0, "column": 0,
                       "message": "code cannot be parsed: %s" % type(e).__name__})
        tree = None
    counts = {"branches": 0, "loops": 0, "functions": 0, "depth": 0}
    if tree is not None:
        counts = _check(tree, job, errors, warnings, imports)
    score = 1 + counts["branches"] + 2 * counts["loops"] + counts["functions"]
    errors.sort(key=lambda d: (d["line"], d["column"]))
    warnings.sort(key=lambda d: (d["line"], d["column"]))
    analysis["imports"] = [name for _, _, name in sorted(imports)]
    analysis.update(
        branches=counts["branches"], loops=counts["loops"], functions=counts["functions"],
        max_nesting=counts["depth"], complexity_score=score,
        estimated_complexity="low" if score <= 10 else "medium" if score <= 30 else "high",
    )
    valid = not errors
    # What a static check cannot know, said every time: it never calls code safe.
    analysis["limitations"] = (
        "static checks read the code without running it: they cannot follow eval/exec, "
        "getattr with computed names, or what data decides at run time; the sandbox enforces "
        "its limits when the code runs, whatever this report says")
    result = {
        "valid": valid,
        "errors": [e["message"] for e in errors],
        "warnings": [w["message"] for w in warnings],
        "details": errors + warnings,
        "message": ("No problems found by static checks (which cannot prove code safe: the "
                    "sandbox enforces its limits at run time)") if valid
                   else "Code contains problems or operations the sandbox refuses",
        "analysis": analysis,
        "recommendations": _recommendations(errors, warnings, profile, source, counts["loops"]),
    }
    _snakepit.finish("ok", validation=json.dumps(result))
