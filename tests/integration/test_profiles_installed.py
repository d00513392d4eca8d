"""A farm (snakepit up) whose executor is asked for a profile it cannot serve — python.filesystem's
zygote made to fail its warm-up as with a library that is not installed, by the node's test hook
(--test-missing-module, here as SNAKEPIT_TEST_MISSING_MODULE in the farm's environment) — starts
and serves the other one, and every place the front-ends and operators read says which is
served: the broker registers the node for python.basic alone (its /metrics and its snapshot in
Redis), the executors' shared hash sp:profiles has python.basic and no python.filesystem, and
the node's own snapshot and log name python.filesystem as unserved, with why."""
import json
import os
import time

import pytest

from farm import Farm, McpHttp

MISSING = "snakepit_test_missing"


def wait_for(pred, timeout, what):
    """Polls pred until it returns something true, and returns that."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


@pytest.fixture(scope="module")
def farm():
    old = os.environ.get("SNAKEPIT_TEST_MISSING_MODULE")
    os.environ["SNAKEPIT_TEST_MISSING_MODULE"] = "python.filesystem:" + MISSING
    try:
        f = Farm(slots=1, extra=["--profiles", "python.basic,python.filesystem"])
    finally:
        if old is None:
            del os.environ["SNAKEPIT_TEST_MISSING_MODULE"]
        else:
            os.environ["SNAKEPIT_TEST_MISSING_MODULE"] = old
    yield f
    f.stop()


def test_the_farm_serves_the_profile_that_starts(farm):
    c = McpHttp(farm.url, farm.api_key)
    c.initialize()
    s = c.call("execute_code", {"code": "print(6 * 7)", "profile": "python.basic"})
    assert s["structuredContent"]["status"] == "ok", s
    assert s["structuredContent"]["stdout"] == "42\n"


def test_the_broker_registers_the_node_for_what_it_serves(farm):
    r = farm.redis()

    def services():
        snap = {}
        for key in r.scan_iter("sp:metrics:broker:*"):
            snap = json.loads(r.hget(key, "services") or "{}")
        return snap if snap.get("python.basic", {}).get("executors") == 1 else None
    svc = wait_for(services, 30, "the broker's snapshot")
    assert svc["python.basic"]["draining"] == 0 and svc["python.basic"]["requeued"] == 0, svc
    assert svc.get("python.filesystem", {}).get("executors", 0) == 0, svc


def test_the_shared_profiles_hash_has_only_the_served_profile(farm):
    r = farm.redis()
    wait_for(lambda: r.hexists("sp:profiles", "python.basic"), 30, "sp:profiles")
    fields = r.hgetall("sp:profiles")
    assert set(fields) == {"python.basic"}, fields
    assert json.loads(fields["python.basic"])["updated_ms"] > 0


def test_the_node_says_what_it_does_not_serve_and_why(farm):
    r = farm.redis()

    def node():
        for key in r.scan_iter("sp:metrics:executor:*"):
            return r.hgetall(key)
    h = wait_for(node, 30, "the node's snapshot")
    assert h["services"] == "python.basic" and h["unserved"] == "python.filesystem", h
    assert h["draining"] == "0"
    log = farm.component_log("executor")
    assert ("event=profile_unserved profile=python.filesystem reason=\"warm import of %s: "
            "No module named '%s'\"" % (MISSING, MISSING)) in log, log[-3000:]


def test_snakepit_status_notes_the_profile_not_served(farm):
    import subprocess
    from farm import BIN

    def notes():
        r = subprocess.run([os.path.join(BIN, "snakepit"), "status", "--state-dir", farm.dir,
                            "--json"], capture_output=True, text=True, timeout=30)
        found = [n for n in json.loads(r.stdout)["notes"] if "python.filesystem" in n]
        return found
    found = wait_for(notes, 30, "status to note it")
    assert "does not serve python.filesystem" in found[0], found
