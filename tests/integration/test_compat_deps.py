"""tests/integration/test_compat_deps.py — the exec-sandbox drop-in endpoint (/mcp/compat/exec-sandbox)
on a farm with an operator's package source (`snakepit up --packages DIR` of tiny wheels the test
builds): a script's PEP 723 block and the `dependencies` argument take the path execute_code's take
(the node resolves what the profile lacks from the package source), the script runs in a directory
it may write, as it did on the server replaced, and validate_script reads the block the way the
executor does before running it, calling a malformed one INVALID."""
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from farm import Farm, McpHttp  # noqa: E402
import wheels  # noqa: E402


@pytest.fixture(scope="module")
def farm():
    src = wheels.tiny_source(tempfile.mkdtemp(prefix="sp-wheels-"))
    f = Farm(slots=2, extra=["--packages", src])
    yield f
    f.stop()
    shutil.rmtree(src)


def client(farm, name=None):
    c = McpHttp(farm.url + ("/compat/" + name if name else ""), farm.api_key)
    c.initialize()
    return c


def run(farm, script, **args):
    r = client(farm, "exec-sandbox").call("execute_python", dict(args, script=script))
    assert r["isError"] is False, r
    return r["structuredContent"], r["content"][0]["text"]


def validate(farm, script, **args):
    r = client(farm, "exec-sandbox").call("validate_script", dict(args, script=script))
    assert r["isError"] is False and r["structuredContent"]["report"] == r["content"][0]["text"], r
    return r["structuredContent"]["valid"], r["content"][0]["text"]


BLOCK = "# /// script\n# dependencies = [%s]\n# ///\n"


def test_the_working_directory_is_writable_and_private_to_the_run(farm):
    sc, text = run(farm, "import os, pathlib\nopen('out.txt', 'w').write('kept')\n"
                         "pathlib.Path('d').mkdir()\nprint(open('out.txt').read(), sorted(os.listdir('.')))")
    assert (sc["exit_code"], sc["stdout"]) == (0, "kept ['d', 'out.txt']\n"), text
    sc, text = run(farm, "import os\nprint(sorted(os.listdir('.')))")  # a fresh directory each run
    assert sc["stdout"] == "[]\n", text


def test_a_pep723_script_resolves_from_the_package_source_as_execute_code_does(farm):
    script = BLOCK % '"tinydep"' + "import tinydep\nprint(tinydep.go())"
    sc, text = run(farm, script)
    assert (sc["exit_code"], sc["stdout"]) == (0, "tinydep+1.0.0\n"), text
    mcp = client(farm).call("execute_code", {"code": script})["structuredContent"]
    assert mcp["stdout"] == sc["stdout"]  # /mcp resolves the same block the same way
    # and the dependencies argument, with a PEP 723 block that needs numpy (python.data_science)
    sc, text = run(farm, BLOCK % '"numpy>=1.20"' + "import tinynp, numpy\nprint(tinynp.total(5))\n"
                   "open('a.txt', 'w').write('x')", dependencies=["tinynp"])
    assert (sc["exit_code"], sc["stdout"]) == (0, "10.0\n"), text


def test_an_extra_dependency_replaces_the_scripts_own_of_that_name_on_its_line(farm):
    script = BLOCK % '"tinypkg>=2"' + "import tinypkg, inspect\nprint(tinypkg.VERSION)\n" \
        "print(inspect.currentframe().f_lineno)"
    sc, text = run(farm, script)
    assert sc["stdout"] == "2.0.0\n6\n", text
    sc, text = run(farm, script, dependencies=["tinypkg<2"])
    assert sc["stdout"] == "1.0.0\n6\n", text  # the extra won, and every line kept its number


def test_an_unresolvable_dependency_is_named_in_the_servers_text(farm):
    sc, text = run(farm, "import nosuchpkg", dependencies=["nosuchpkg>=1"])
    assert sc["exit_code"] == 1 and "DependencyError" in sc["stderr"] and "nosuchpkg" in sc["stderr"]
    assert text.startswith("--- stderr ---\nDependencyError")


def test_validate_script_resolves_as_execute_python_would(farm):
    valid, text = validate(farm, BLOCK % '"tinydep"' + "import tinydep\n")
    assert valid and text == "VALID\ndependencies (1):\n  - tinydep", text
    valid, text = validate(farm, "print(1)", dependencies=["nosuchpkg>=1"])
    assert valid and text.startswith("VALID\ndependencies (1):\n  - nosuchpkg>=1\nwarnings:\n  - DependencyError")
    valid, text = validate(farm, BLOCK % '"tinypkg>=2"', dependencies=["tinypkg<2"])
    assert valid and text == "VALID\ndependencies (1):\n  - tinypkg<2", text
    valid, text = validate(farm, "# /// script\n# requires-python = \">=3.8\"\n# dependencies = ['numpy', \"pandas\"]\n# ///\n")
    assert valid and text == "VALID\nrequires-python: >=3.8\ndependencies (2):\n  - numpy\n  - pandas", text


@pytest.mark.parametrize("script,words", [
    # the TOML itself, as the executor reads it before running a script
    ('# /// script\n# dependencies = ["numpy"] trailing\n# ///\n', "not valid TOML"),
    ('# /// script\n# title = "x" y\n# dependencies = ["numpy"]\n# ///\n', "not valid TOML"),
    ('# /// script\n# [tool.uv]\n# x = = 1\n# ///\n', "not valid TOML"),
    ('# /// script\n# dependencies = ["numpy"]\n# requires-python = 3.11\n# ///\n', "requires-python"),
    ('# /// script\n# dependencies = "numpy"\n# ///\n', "must be an array"),
    ('# /// script\n# dependencies = [1]\n# ///\n', "strings"),
    ('# /// script\n# dependencies = ["a"\n# ///\n', "not a closed array"),
    # the block's shape (PEP 723)
    ('# /// script\n# dependencies = ["numpy"]\nimport numpy\n', "not closed"),
    ('# /// script\n# dependencies = ["numpy"]\n', "not closed"),
    ('# /// script\n#dependencies = ["numpy"]\n# ///\n', "line 2"),
    ('# /// script\n# dependencies = ["numpy"]\n# ///\n# /// script\n# dependencies = []\n# ///\n', "two `# /// script` blocks"),
    # the dependency format
    ('# /// script\n# dependencies = ["num py!!"]\n# ///\n', 'dependency "num py!!" is not a valid requirement'),
    ('# /// script\n# dependencies = ["pkg @ https://example.com/p.whl"]\n# ///\n', "not a valid requirement"),
])
def test_validate_script_calls_a_malformed_block_invalid(farm, script, words):
    valid, text = validate(farm, script + "print(1)\n")
    assert not valid and text.startswith("INVALID: ") and words in text, text
    # and execute_python does not run such a script as if it declared nothing
    r = client(farm, "exec-sandbox").request("tools/call", {"name": "execute_python",
                                                           "arguments": {"script": script + "print(1)\n"}})
    assert "error" in r or r["result"]["isError"] or r["result"]["structuredContent"]["exit_code"] != 0, r
