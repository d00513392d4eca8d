"""A node asked for a profile whose libraries are missing serves the others and says why: its
READY lists only the profiles it serves, a job for the other is refused as one for a service it
does not serve, its log and /metrics (snakepit_executor_profile_served, the reason in a label)
name what failed. Only when no profile at all can be served does it exit 3. The missing library
is made by the node's test hook --test-missing-module PROFILE:MODULE (the profile's zygote
imports MODULE first in its warm-up, and fails there as with a library that is not installed):
no system package is touched."""
import os
import re
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
from harness import BIN, Executor  # noqa: E402

MISSING = "snakepit_test_missing"
WHY = "warm import of %s: No module named '%s'" % (MISSING, MISSING)


def test_a_profile_that_cannot_start_is_not_served_and_the_others_are():
    ex = Executor(slots=1, profiles="python.basic,python.filesystem",
                  extra=["--log-level", "info",
                         "--test-missing-module", "python.filesystem:" + MISSING])
    try:
        assert ex.ready["services"] == ["python.basic"], ex.ready
        assert ex.run("print(6 * 7)")["stdout"] == "42\n"
        r = ex.run("print(1)", service="python.filesystem")
        assert r["status"] == "rejected", r
        assert "does not serve the service" in r["error"]["message"], r
        out = ex.output()
        assert 'event=profile_unserved profile=python.filesystem reason="%s"' % WHY in out, out
        assert "event=serving profiles=python.basic unserved=python.filesystem" in out, out
        port = int(re.search(r"event=metrics_listening port=(\d+)", out).group(1))
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
        served = {l.split("{")[1].split("}")[0]: l.rsplit(" ", 1)[1] for l in text.splitlines()
                  if l.startswith("snakepit_executor_profile_served{")}
        assert served == {'profile="python.basic",reason=""': "1",
                          'profile="python.filesystem",reason="%s"' % WHY: "0"}, served
        assert ex.alive()
    finally:
        ex.close()


def test_when_no_profile_can_be_served_the_node_exits_3_and_says_why():
    p = subprocess.run([os.path.join(BIN, "snakepit-executor"), "--broker", "tcp://127.0.0.1:1",
                        "--metrics", "off", "--slots", "1", "--profiles", "python.basic",
                        "--test-missing-module", "python.basic:" + MISSING],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stderr[-2000:]
    assert "no profile could be served" in p.stderr and WHY in p.stderr, p.stderr[-2000:]


def test_the_test_hook_names_a_profile_and_a_module_or_nothing():
    """A hook entry for a profile not asked for, or without a module, changes nothing."""
    ex = Executor(slots=1, profiles="python.basic",
                  extra=["--test-missing-module", "python.filesystem:%s,python.basic:" % MISSING])
    try:
        assert ex.ready["services"] == ["python.basic"]
        assert ex.run("print(1)")["stdout"] == "1\n"
    finally:
        ex.close()
