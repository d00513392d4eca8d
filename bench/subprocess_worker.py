"""bench/subprocess_worker.py — variant (c) of `make bench`: the design of the Python sandbox
servers snakepit replaces (docs/protocol.md lists them: py-sandbox, python-code-sandbox...). The
server starts one fresh interpreter per call running this script; it reads a JSON envelope
{code, timeout, memory_mb} on stdin, applies setrlimit, runs the code with restricted
builtins and an import allowlist, and writes one JSON object on stdout.

Kept small and fair: nothing slow on purpose, standard library only, and the same work a
careful server of that kind does. bench/spawn_load.c starts it as `/usr/bin/python3 -I`.
"""
import io
import json
import resource
import sys

SAFE_BUILTINS = (
    "abs all any ascii bin bool bytearray bytes callable chr complex dict divmod enumerate "
    "filter float format frozenset hash hex id int isinstance issubclass iter len list map max "
    "min next object oct ord pow print range repr reversed round set slice sorted str sum "
    "tuple type zip ArithmeticError AssertionError AttributeError Exception IndexError "
    "KeyError LookupError NameError RuntimeError StopIteration TypeError ValueError "
    "ZeroDivisionError True False None"
).split()
ALLOWED_IMPORTS = frozenset(
    "math json re random statistics collections itertools functools datetime decimal "
    "fractions string heapq bisect time".split()
)


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name.split(".")[0] not in ALLOWED_IMPORTS:
        raise ImportError(f"import of {name!r} is not allowed")
    return __import__(name, globals, locals, fromlist, level)


def main():
    envelope = json.loads(sys.stdin.read())
    memory = int(envelope.get("memory_mb", 256)) << 20
    seconds = int(envelope.get("timeout", 30))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))

    import builtins

    safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS if hasattr(builtins, name)}
    safe["__import__"] = _import
    out, err = io.StringIO(), io.StringIO()
    real_out, real_err = sys.stdout, sys.stderr
    answer = {"status": "ok", "error": None}
    sys.stdout, sys.stderr = out, err
    try:
        exec(compile(envelope["code"], "<sandbox>", "exec"), {"__builtins__": safe, "__name__": "__sandbox__"})
    except SyntaxError as e:
        answer = {"status": "syntax_error", "error": {"type": "SyntaxError", "message": str(e)}}
    except BaseException as e:  # the code's own failure, whatever it is, is reported
        answer = {"status": "error", "error": {"type": type(e).__name__, "message": str(e)}}
    finally:
        sys.stdout, sys.stderr = real_out, real_err
    answer["stdout"] = out.getvalue()[: 1 << 20]
    answer["stderr"] = err.getvalue()[: 1 << 20]
    real_out.write(json.dumps(answer, separators=(",", ":")))
    real_out.flush()


if __name__ == "__main__":
    main()
