"""A refused operation end to end, through the front-end, the real broker and executor, and
Redis: a refusal the code caught is not a failure (isError false, the code's own status) and
is listed in structuredContent.security_events, in the text a model reads, in the execution's
record and in the front-end's metrics; one that ended the code is a security_violation. And a
process's exit code, as the code chose it."""
import json

import pytest

from fe_harness import Client, Frontend, wait_for


@pytest.fixture(scope="module")
def fe():
    f = Frontend(executor=True, extra=["--broker-instance", "test"])
    yield f
    f.stop()


@pytest.fixture(scope="module")
def client(fe):
    c = Client(fe.url, fe.add_tenant("refusals", rate="1000", burst="1000"))
    c.initialize()
    return c


def run(client, code, **kw):
    r = client.call("execute_code", dict(code=code, **kw))["result"]
    return r, r["structuredContent"], r["content"][0]["text"]


def record(fe, eid):
    wait_for(lambda: fe.redis().hget("sp:exec:" + eid, "status"), 10, "the record")
    return fe.redis().hgetall("sp:exec:" + eid)


OFFLINE = ("import socket\ntry:\n    socket.create_connection(('example.com', 443), 2)\n"
           "    print('online')\nexcept OSError:\n    print('offline: using the cached table')")


def test_a_caught_refusal_is_not_a_failure_and_is_listed_everywhere(fe, client):
    caught = fe.metric("snakepit_mcp_security_events_total", layer="python", outcome="caught")
    r, sc, text = run(client, OFFLINE)
    assert r["isError"] is False and sc["status"] == "ok"
    assert sc["stdout"] == "offline: using the cached table\n"
    assert sc["security_events"] == [{"operation": "socket.getaddrinfo", "target": None,
                                      "layer": "python", "count": 1}]
    assert "refused by the sandbox (the code went on): socket.getaddrinfo [python]" in text
    rec = record(fe, sc["execution_id"])
    assert rec["status"] == "ok"
    assert json.loads(rec["security_events"]) == sc["security_events"]
    got = client.call("get_execution", {"execution_id": sc["execution_id"]})["result"]
    assert got["structuredContent"]["result"]["security_events"] == sc["security_events"]
    assert fe.metric("snakepit_mcp_security_events_total", layer="python",
                     outcome="caught") == caught + 1


def test_an_uncaught_refusal_is_a_security_violation(fe, client):
    ended = fe.metric("snakepit_mcp_security_events_total", layer="python", outcome="violation")
    r, sc, text = run(client, "import subprocess\nsubprocess.run(['ls', '/'])")
    assert r["isError"] is True and sc["status"] == "security_violation"
    assert sc["security_events"] == [{"operation": "subprocess.Popen", "target": "ls",
                                      "layer": "python", "count": 1}]
    assert "refused by the sandbox: subprocess.Popen ls [python]" in text
    assert fe.metric("snakepit_mcp_security_events_total", layer="python",
                     outcome="violation") == ended + 1


def test_an_exit_code_is_passed_through(fe, client):
    r, sc, text = run(client, "import sys\nprint('checked 3 rows')\nsys.exit(42)")
    assert r["isError"] is True and sc["status"] == "error"
    assert sc["exit"]["code"] == 42 and sc["error"]["type"] == "SystemExit"
    assert sc["error"]["traceback"] is None and "exit code: 42" in text
    assert record(fe, sc["execution_id"])["exit_code"] == "42"
    r, sc, _ = run(client, "print('done')\nexit()")
    assert r["isError"] is False and sc["status"] == "ok" and sc["exit"]["code"] == 0
    assert sc["security_events"] == []


def test_a_refused_import_names_the_profile_that_has_it(client):
    r, sc, text = run(client, "import pandas as pd\nprint(pd.__version__)", profile="python.basic")
    assert sc["error"]["type"] == "ModuleNotFoundError"
    assert 'pass profile="python.data_science"' in sc["error"]["message"]
    assert 'pass profile="python.data_science"' in text


def test_validate_code_agrees_with_execute_code(client):
    code = "x = ().__class__.__name__\nprint(x)"
    sc = client.call("validate_code", {"code": code})["result"]["structuredContent"]
    assert sc["valid"] is True, sc["errors"]
    assert run(client, code)[1]["status"] == "ok"
    code = "import os\nos.system('id')"
    sc = client.call("validate_code", {"code": code})["result"]["structuredContent"]
    assert sc["valid"] is False and "refused by the sandbox" in sc["errors"][0]
    assert run(client, code)[1]["status"] == "security_violation"
