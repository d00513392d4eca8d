# executor-node/python/validate.py — validate_code: static advice on code, without running it.
#
# Runs in a sandboxed child like any job (parsing untrusted code can exhaust memory): syntax
# errors with line and column, imports the profile does not allow, names and dunder access
# that escapes use, line and character counts, a complexity estimate, recommendations. It
# advises; the OS layers enforce. Loaded into the zygote after runner.py (compiled into
# snakepit-zygote), whose allowlist check and profile names it shares.
import ast
import json

import _snakepit
from _snakepit_runner import _FILENAME, _module_allowed, _workspace_profiles


_ADVICE_NAMES = {
    "eval": "eval() runs arbitrary code; prefer explicit logic",
    "exec": "exec() runs arbitrary code; prefer explicit logic",
    "compile": "compile() builds code objects; rarely needed",
    # "open": named in validate() after the first profile with a workspace
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


# Calls the sandbox refuses when the code runs (the seccomp, Landlock and audit rules): said
# here so the model knows before it tries. Attribute name → why.
_REFUSED_CALLS = {
    "system": "starts a process", "popen": "starts a process", "fork": "starts a process",
    "forkpty": "starts a process", "spawnv": "starts a process", "spawnl": "starts a process",
    "posix_spawn": "starts a process", "posix_spawnp": "starts a process",
    "execv": "starts a process", "execve": "starts a process", "execl": "starts a process",
    "execvp": "starts a process", "execlp": "starts a process",
    "create_connection": "opens a network connection", "urlopen": "opens a network connection",
    "gethostbyname": "needs the network", "getaddrinfo": "needs the network",
}
_SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output", "getoutput",
                     "getstatusoutput"}
# Modules reached as an attribute of another module: typing.sys, uuid.os, random._os… —
# well-known escapes around an import check (the audit hook still refuses what they lead to).
_MODULE_ATTRS = {"sys", "os", "_os", "posix", "subprocess", "builtins", "__builtins__",
                 "importlib", "_imp", "ctypes", "_ctypes", "socket", "_socket", "marshal"}
_ESCAPE_ATTRS = {"modules": "sys.modules reaches every loaded module, past the import check",
                 "_getframe": "frames reach other code's globals", "f_globals": "frames reach other code's globals",
                 "f_back": "frames reach other code's globals", "tb_frame": "frames reach other code's globals",
                 "gi_frame": "frames reach other code's globals", "load_module": "loads a module past the import check"}


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


def _escapes(node, imported):
    """(kind, message) findings for one node: calls the sandbox will refuse, and the
    well-known escape patterns."""
    out = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        name, base = node.func.attr, _dotted(node.func.value) or "…"
        if name in _REFUSED_CALLS and base not in ("platform", "re", "sympy", "sp", "np", "numpy"):
            out.append(("refused", "%s.%s() %s: the sandbox refuses it" % (base, name, _REFUSED_CALLS[name])))
        elif name in _SUBPROCESS_CALLS and base.split(".")[-1] == "subprocess":
            out.append(("refused", "%s.%s() starts a process: the sandbox refuses it" % (base, name)))
    elif isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        if node.attr in _MODULE_ATTRS and base and base.split(".")[0] in imported \
                and base != node.attr:
            out.append(("escape", "%s.%s reaches module '%s' through another module's attributes, "
                        "past the import check" % (base, node.attr, node.attr)))
        elif node.attr in _ESCAPE_ATTRS:
            out.append(("escape", "%s: %s" % (node.attr, _ESCAPE_ATTRS[node.attr])))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
            and node.args[1].value in set(_REFUSED_CALLS) | _MODULE_ATTRS:
        out.append(("escape", "getattr(…, %r) hides an attribute from a static check" % node.args[1].value))
    return out


def _advice():
    """The names to warn about; open() points to the first profile with a workspace."""
    if not _workspace_profiles[0]:
        return _ADVICE_NAMES
    return dict(_ADVICE_NAMES, open="open() needs the %s profile" % _workspace_profiles[0][0])


def validate(job):
    """Static advice on code, without running it: syntax, imports, risky names."""
    source = job["code"]
    allowed = job["allowed"]
    profile = job["profile"]
    advice = _advice()
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
    imported = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                for a in n.names} if tree is not None else set()
    imported |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                 for a in n.names} if tree is not None else set()
    if tree is not None:
        stack = [(tree, 0)]
        while stack:
            node, depth = stack.pop()
            depth_max = max(depth_max, depth)
            for kind, message in _escapes(node, imported):
                errors.append({"kind": kind, "line": getattr(node, "lineno", 0),
                               "column": getattr(node, "col_offset", 0),
                               "message": "Line %d: %s" % (getattr(node, "lineno", 0), message)})
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
            elif isinstance(node, ast.Name) and node.id in advice:
                warnings.append({"kind": "name", "line": node.lineno, "column": node.col_offset,
                                 "message": "Line %d: %s: %s" % (node.lineno, node.id, advice[node.id])})
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
    if any(e["kind"] == "escape" for e in errors):
        recommendations.append("Import what you use directly; reaching modules through other modules' "
                               "attributes is an escape pattern")
    if any(e["kind"] == "refused" for e in errors):
        recommendations.append("The sandbox has no processes and no network: compute in Python, and "
                               "pass data in with the files argument")
    if loops and "while" in source:
        recommendations.append("Make sure every while loop terminates: jobs past their time limit are killed")
    if not errors and not warnings:
        recommendations.append("No issues found by the static checks")
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
        "recommendations": recommendations,
    }
    _snakepit.finish("ok", validation=json.dumps(result))
