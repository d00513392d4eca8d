# executor-node/validate.py — validate_code: static advice on code, without running it.
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
