"""Python in the sandbox behaves as it does elsewhere where nothing of the sandbox is at stake: a
process's exit code is the code's own (sys.exit, exit(), quit(), os._exit), chained exceptions
show their whole chain as CPython prints it, importlib.metadata knows the installed
distributions, IPython.display's objects become rich outputs, and an import a profile refuses
names the profiles that have it."""
import json

import pytest

from harness import Executor

DS = "python.data_science"


@pytest.fixture(scope="module")
def ex():
    e = Executor(slots=2, profiles="python.basic,python.data_science")
    yield e
    e.close()


# ---- exit codes --------------------------------------------------------------------------------


@pytest.mark.parametrize("code,status,exit_code", [
    ("import sys\nprint('partial')\nsys.exit(42)", "error", 42),
    ("import sys\nsys.exit(0)", "ok", 0),
    ("import sys\nsys.exit()", "ok", 0),
    ("raise SystemExit(3)", "error", 3),
    ("exit(5)", "error", 5),
    ("quit()", "ok", 0),
    ("import sys\nsys.exit(256 + 7)", "error", 7),  # as the kernel keeps it
    ("import os\nprint('flushed')\nos._exit(4)", "error", 4),
    ("import os\nos._exit(0)", "ok", 0),
])
def test_an_exit_code_is_passed_through(ex, code, status, exit_code):
    r = ex.run(code)
    assert r["status"] == status, (r["status"], r.get("error"))
    assert r["exit"]["code"] == exit_code
    if exit_code:
        assert r["error"]["type"] == "SystemExit"
        assert r["error"]["message"] == "exit code %d" % exit_code
        assert not r["error"]["traceback"]  # the code chose to end: no traceback, as `python`
    else:
        assert not r["error"]
    for printed in ("partial", "flushed"):
        if printed in code:
            assert r["stdout"] == printed + "\n"


def test_an_exit_with_a_message_prints_it_and_is_one(ex):
    r = ex.run("import sys\nsys.exit('bad input: x')")
    assert r["status"] == "error" and r["exit"]["code"] == 1
    assert r["stderr"] == "bad input: x\n"
    assert r["error"]["line"] == 2


def test_exit_and_quit_are_builtins(ex):
    r = ex.run("print(repr(exit))\nprint(repr(quit))")
    assert r["stdout"] == ("Use exit() or Ctrl-D (i.e. EOF) to exit\n"
                           "Use quit() or Ctrl-D (i.e. EOF) to exit\n")


def test_a_session_cell_that_exits_leaves_the_session_alive(ex):
    sid = ex.new_session()
    r = ex.run("x = 1\nimport sys\nsys.exit(2)", session=sid)
    assert r["status"] == "error" and r["exit"]["code"] == 2 and r["session"]["alive"]
    r = ex.run("print(x)", session=sid)
    assert r["status"] == "ok" and r["stdout"] == "1\n" and r["exit"]["code"] == 0


# ---- tracebacks --------------------------------------------------------------------------------


def test_an_explicit_cause_is_in_the_traceback(ex):
    r = ex.run("def parse(s):\n    return int(s)\n\ntry:\n    parse('x')\n"
               "except ValueError as e:\n    raise RuntimeError('config is broken') from e")
    tb = r["error"]["traceback"]
    assert r["error"]["type"] == "RuntimeError" and r["error"]["line"] == 7
    first, _, second = tb.partition(
        "\nThe above exception was the direct cause of the following exception:\n\n")
    assert second, tb
    assert first.startswith("Traceback (most recent call last):\n")
    assert '  File "<snakepit>", line 2, in parse\n    return int(s)\n' in first
    assert first.endswith("ValueError: invalid literal for int() with base 10: 'x'\n")
    assert second.startswith("Traceback (most recent call last):\n")
    assert second.endswith("RuntimeError: config is broken\n")


def test_an_implicit_context_is_in_the_traceback(ex):
    r = ex.run("try:\n    1 / 0\nexcept ZeroDivisionError:\n    {}['missing']")
    tb = r["error"]["traceback"]
    assert "ZeroDivisionError: division by zero\n\nDuring handling of the above exception, " \
           "another exception occurred:\n\n" in tb
    assert tb.endswith("KeyError: 'missing'\n")


def test_from_none_hides_the_context_and_notes_are_shown(ex):
    r = ex.run("try:\n    1 / 0\nexcept ZeroDivisionError:\n    e = ValueError('clean')\n"
               "    e.add_note('while reading row 3')\n    raise e from None")
    tb = r["error"]["traceback"]
    assert "ZeroDivisionError" not in tb
    assert tb.endswith("ValueError: clean\nwhile reading row 3\n")


# ---- imports -----------------------------------------------------------------------------------


def test_a_refused_import_names_the_profiles_that_have_it(ex):
    r = ex.run("import pandas as pd")
    assert r["status"] == "error" and r["error"]["type"] == "ModuleNotFoundError"
    msg = r["error"]["message"]
    assert "not allowed in profile python.basic" in msg
    assert 'it is in python.data_science — pass profile="python.data_science"' in msg
    assert len(msg) < 300  # not the profile's whole module list
    r = ex.run("from sklearn.linear_model import LinearRegression")
    assert "'sklearn.linear_model' is not allowed" in r["error"]["message"]
    assert "python.data_science" in r["error"]["message"]


def test_a_module_no_profile_has_says_so(ex):
    r = ex.run("try:\n    import boto3\nexcept ModuleNotFoundError as e:\n"
               "    print(e.name)\n    raise")
    assert r["stdout"] == "boto3\n"
    assert "no profile of this sandbox has it" in r["error"]["message"]


def test_a_module_the_call_narrowed_away_is_still_listed_as_before(ex):
    r = ex.run("import json", allowed_imports=["math"])
    assert r["error"]["type"] == "ImportError"
    assert "'json' is not allowed in profile python.basic for this call (allowed: math)" in \
        r["error"]["message"]


# ---- importlib.metadata ------------------------------------------------------------------------


def test_importlib_metadata_knows_the_profiles_distributions(ex):
    r = ex.run("import importlib.metadata as md, pandas, numpy, sklearn\n"
               "print(md.version('pandas') == pandas.__version__)\n"
               "print(md.version('numpy') == numpy.__version__)\n"
               "print(md.version('scikit-learn') == sklearn.__version__)\n"
               "print(md.metadata('pandas')['Name'])\n"
               "print('scikit-learn' in md.packages_distributions()['sklearn'])\n"
               "print(any(d.metadata['Name'] == 'matplotlib' for d in md.distributions()))",
               service=DS)
    assert r["status"] == "ok", r.get("error")
    assert r["stdout"] == "True\nTrue\nTrue\npandas\nTrue\nTrue\n"
    assert not r.get("security_events")  # found in memory: no directory was listed


def test_importlib_metadata_in_python_basic_finds_only_the_standard_library(ex):
    r = ex.run("import importlib.metadata as md\ntry:\n    md.version('pandas')\n"
               "except md.PackageNotFoundError:\n    print('not here')")
    assert r["stdout"] == "not here\n" and not r.get("security_events")


# ---- IPython.display ---------------------------------------------------------------------------


def outputs(r):
    """{index: {mime: data}} of a Result's rich outputs."""
    out = {}
    for o in r.get("outputs") or ():
        out.setdefault(o["index"], {})[o["mime"]] = o["data"]
    return out


@pytest.mark.parametrize("service", ["python.basic", DS])
def test_ipython_display_maps_to_rich_outputs(ex, service):
    png = ("import base64\npng = base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
           "AAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==')\n")
    r = ex.run(png + "from IPython.display import display, HTML, Markdown, JSON, Image, Math\n"
               "import IPython\n"
               "display(HTML('<b>bold</b>'), Markdown('# Title'))\n"
               "display(JSON({'a': [1, 2]}), Image(data=png))\n"
               "display({'text/html': '<i>raw</i>', 'text/plain': 'raw'}, raw=True)\n"
               "print(IPython.get_ipython())\n"
               "Math(r'x^2')", service=service)
    assert r["status"] == "ok", r.get("error")
    assert r["stdout"] == "None\n"
    out = outputs(r)
    assert out[0]["text/html"] == b"<b>bold</b>"
    assert out[1]["text/markdown"] == b"# Title"
    assert json.loads(out[2]["application/json"]) == {"a": [1, 2]}
    assert out[3]["image/png"].startswith(b"\x89PNG")
    assert out[4] == {"text/html": b"<i>raw</i>", "text/plain": b"raw"}
    assert out[5]["text/latex"] == b"$$x^2$$"


def test_ipython_core_display_imports_in_every_profile(ex):
    for profile in ("python.basic", DS):
        r = ex.run("from IPython.core.display import HTML\nprint(HTML('x').data)", service=profile)
        assert r["stdout"] == "x\n"
