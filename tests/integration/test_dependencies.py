"""execute_code's dependencies through MCP: the `dependencies` argument and a PEP 723
block, routed to the profile that has what some profile has, the rest resolved by the node from
its --packages directory of tiny wheels the test builds; first and second call timed (printed,
never asserted)."""
import os
import shutil
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from fe_harness import Client, Frontend, argument_error  # noqa: E402
import wheels  # noqa: E402


@pytest.fixture(scope="module")
def fe():
    src = wheels.tiny_source(tempfile.mkdtemp(prefix="sp-wheels-"))
    envs = tempfile.mkdtemp(prefix="sp-envs-")
    f = Frontend(executor=True, executor_args=["--packages", src, "--envs-dir", envs,
                                               "--profiles", "python.basic,python.data_science"])
    yield f
    f.stop()
    shutil.rmtree(src)
    shutil.rmtree(envs)


@pytest.fixture
def client(fe):
    c = Client(fe.url, fe.add_tenant("deps", rate="1000", burst="1000"))
    c.initialize()
    yield c
    c.close()


def run(client, **args):
    r = client.call("execute_code", args)["result"]
    return r, r["structuredContent"]


def test_the_dependencies_argument_resolves_and_is_warm_the_second_time(client):
    times = []
    for _ in range(2):
        started = time.monotonic()
        r, sc = run(client, code="import tinydep\nprint(tinydep.go())", dependencies=["tinydep"])
        times.append(time.monotonic() - started)
        assert sc["status"] == "ok", sc["error"]
        assert sc["stdout"] == "tinydep+1.0.0\n"
    print("\nexecute_code with dependencies=['tinydep']: first call %.3f s, second %.3f s" % tuple(times))


def test_a_pep723_script_routes_to_the_profile_with_numpy_and_resolves_the_rest(client):
    code = ("# /// script\n# dependencies = [\"tinynp\", \"numpy>=1.20\"]\n# ///\n"
            "import tinynp\nprint(tinynp.total(5))")
    times = []
    for _ in range(2):
        started = time.monotonic()
        r, sc = run(client, code=code)
        times.append(time.monotonic() - started)
        assert sc["status"] == "ok", sc["error"]
        assert sc["stdout"] == "10.0\n"
    print("\nPEP 723 tinynp + numpy (python.data_science): first call %.3f s, second %.3f s" % tuple(times))


def test_an_unresolvable_requirement_is_named(client):
    r, sc = run(client, code="print(1)", dependencies=["nosuchpkg>=1"])
    assert r["isError"] and sc["status"] == "error" and sc["error"]["type"] == "DependencyError"
    assert "nosuchpkg" in sc["error"]["message"] and "tinypkg 1.0.0, 2.0.0" in sc["error"]["message"]


@pytest.mark.parametrize("bad", [["--index-url=http://127.0.0.1:9/x"], ["pkg @ https://example.com/p.whl"],
                                 ["pkg\nother"], ["$(id)"], ["x" * 300], [""], [1],
                                 # what pip reads as an archive or a path to build from source
                                 ["x-1.0.tar.gz"], ["x-1.0-py3-none-any.whl"], ["./pkg"], ["/tmp/pkg"],
                                 ["pkg.zip"], ["-e ."]])
def test_a_malformed_requirement_is_refused_at_once(client, bad):
    # never a pip option, a URL, a file or anything but a PEP 508 name, extras, versions, markers
    r = client.send("tools/call", {"name": "execute_code", "arguments": {"code": "1", "dependencies": bad}})
    text = argument_error(r.json, "dependencies")  # a tool result the model reads, naming the argument
    assert "dependencies[0]" in text, text


def test_a_pep723_block_naming_an_archive_is_refused(client):
    code = '# /// script\n# dependencies = ["evil-1.0.tar.gz"]\n# ///\nprint(1)\n'
    r = client.send("tools/call", {"name": "execute_code", "arguments": {"code": code}})
    assert "archive" in argument_error(r.json, "code")
