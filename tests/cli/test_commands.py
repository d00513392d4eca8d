"""The other `snakepit` commands as a user types them: version, help, up, mcp, status, usage,
keygen — their flags and exit codes."""
import json
import os
import signal
import subprocess
import tempfile
import time

import pytest

from clilib import EX_USAGE, snakepit
from farm import McpStdio


def test_version_and_help():
    v = snakepit("version")
    assert v.returncode == 0 and v.stdout.startswith("snakepit ")
    assert snakepit("--version").stdout == v.stdout
    h = snakepit("--help")
    assert h.returncode == 0
    for cmd in ("up", "down", "mcp --stdio", "run", "tenant", "keygen", "status", "drain", "usage",
                "backup", "restore", "version"):
        assert "\n  %s " % cmd in h.stdout, cmd
    bare = snakepit()
    assert bare.returncode == EX_USAGE and "usage" in bare.stderr


def test_unknown_command_exits_64():
    r = snakepit("frobnicate")
    assert r.returncode == EX_USAGE and "unknown command" in r.stderr


@pytest.mark.parametrize("cmd", ["up", "down", "mcp", "run", "tenant", "status", "usage", "keygen",
                                 "backup", "restore", "drain"])
def test_every_command_has_help_and_refuses_unknown_flags(cmd):
    h = snakepit(cmd, "--help")
    assert h.returncode == 0 and h.stdout.startswith("usage: snakepit %s" % cmd), h.stdout[:80]
    assert snakepit(cmd, "--no-such-flag").returncode == EX_USAGE


def test_up_refuses_a_second_farm_in_the_same_state_dir(farm):
    r = snakepit("up", "--state-dir", farm.dir, "--http", "127.0.0.1:0", timeout=60)
    assert r.returncode == 1 and "already running" in r.stderr


def test_mcp_needs_stdio():
    r = snakepit("mcp")
    assert r.returncode == EX_USAGE and "--stdio" in r.stderr


def test_mcp_stdio_serves_the_farm(farm):
    client = McpStdio(farm.dir)
    try:
        client.initialize()
        s = client.call("execute_code", {"code": "print(5)"})["structuredContent"]
        assert s["status"] == "ok" and s["stdout"] == "5\n"
    finally:
        assert client.close() == 0


def test_status_and_usage(env, farm):
    assert snakepit("run", "print(1)", env=env).returncode == 0
    st = snakepit("status", "--json", env=env)
    assert st.returncode in (0, 1), st.stderr  # 1: degraded (a snapshot may be a second old)
    status = json.loads(st.stdout)
    assert status["healthy"] == (st.returncode == 0)
    assert {"broker", "executor", "mcp"} <= {c["component"] for c in status["components"]}, status
    text = snakepit("status", "--state-dir", farm.dir)
    assert text.returncode in (0, 1) and text.stdout.strip()
    u = snakepit("usage", "local", "--days", "1", "--json", env=env)
    assert u.returncode == 0, u.stderr
    assert json.loads(u.stdout)["tenants"]["local"]["total"]["executions"] >= 1
    assert snakepit("usage", "--days", "0", env=env).returncode == EX_USAGE


def test_keygen_writes_a_pair_and_keeps_it(tmp_path):
    r = snakepit("keygen", "--dir", str(tmp_path), "node-1")
    assert r.returncode == 0 and r.stdout.strip()
    assert (tmp_path / "node-1.key").exists()
    assert oct((tmp_path / "node-1.key_secret").stat().st_mode & 0o777) == "0o600"
    again = snakepit("keygen", "--dir", str(tmp_path), "node-1")
    assert again.returncode == 1 and "--force" in again.stderr  # never overwritten silently
    assert snakepit("keygen", "--dir", str(tmp_path), "--force", "node-1").returncode == 0
    assert snakepit("keygen").returncode == EX_USAGE


def test_mcp_stdio_runs_as_the_tenant_given(farm):
    client = McpStdio(farm.dir, extra=("--tenant", "cli-stdio", "--log-level", "warn"))
    try:
        client.initialize()
        s = client.call("execute_code", {"code": "print(6)"})["structuredContent"]
        assert s["status"] == "ok"
    finally:
        assert client.close() == 0
    record = farm.redis().hgetall("sp:exec:" + s["execution_id"])
    for _ in range(50):  # the record is written after the answer
        if record:
            break
        time.sleep(0.1)
        record = farm.redis().hgetall("sp:exec:" + s["execution_id"])
    assert record.get("tenant") == "cli-stdio", record


def test_mcp_stdio_starts_a_farm_when_none_runs():
    state = tempfile.mkdtemp(prefix="sp-st-", dir="/tmp")
    # the farm it starts is `snakepit up` with its defaults, but on free ports (SNAKEPIT_* is
    # read by up): 8765 may be another farm's on a shared machine
    env = dict(os.environ, SNAKEPIT_HTTP="127.0.0.1:0", SNAKEPIT_METRICS_PORT="0")
    client = McpStdio(state, extra=("--start-timeout", "120"), env=env)
    ready = os.path.join(state, "ready.json")
    try:
        client.initialize()
        s = client.call("execute_code", {"code": "print('started')"})["structuredContent"]
        assert s["status"] == "ok" and s["stdout"] == "started\n"
        assert os.path.exists(ready)
    finally:
        client.close()
        if os.path.exists(ready):  # the farm outlives the stdio session: stop it by its pid
            with open(ready) as f:
                pid = json.load(f)["pid"]
            os.kill(pid, signal.SIGTERM)
            for _ in range(300):
                if not os.path.exists("/proc/%d" % pid):
                    break
                time.sleep(0.1)
            assert not os.path.exists("/proc/%d" % pid)


def test_status_and_usage_flags(farm, env):
    st = snakepit("status", "--redis", farm.ready["redis"], "--json")
    assert st.returncode in (0, 1) and json.loads(st.stdout)["redis"] == farm.ready["redis"]
    u = snakepit("usage", "--state-dir", farm.dir, "--days", "2")
    assert u.returncode == 0 and "local" in u.stdout
    assert snakepit("usage", "--redis", "unix:///nonexistent.sock").returncode == 69


def test_mcp_refuses_an_unknown_drop_in_endpoint_before_starting_anything():
    state = tempfile.mkdtemp(prefix="sp-cp-", dir="/tmp")
    r = snakepit("mcp", "--stdio", "--compat", "bogus", "--state-dir", state)
    assert r.returncode == EX_USAGE and "--compat bogus" in r.stderr and "py-sandbox" in r.stderr
    assert not os.path.exists(os.path.join(state, "ready.json"))  # no farm was started for it


def test_a_stale_ready_json_says_the_farm_is_not_running():
    """A farm killed (or a machine rebooted) leaves its ready.json: every command that reads it says
    the farm is not running, instead of what connecting to its dead endpoints says."""
    state = tempfile.mkdtemp(prefix="sp-stale-", dir="/tmp")
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open(os.path.join(state, "ready.json"), "w") as f:
        json.dump({"url": "http://127.0.0.1:9/mcp", "api_key": "k", "redis": "unix://%s/redis.sock" % state,
                   "broker": "tcp://127.0.0.1:9", "pid": dead.pid}, f)
    for args in (["run", "print(1)"], ["session", "list"], ["session", "run", "01234567-89ab-7def-8123-456789abcdef",
                                                              "print(1)"], ["status"], ["usage"]):
        r = snakepit(*args, "--state-dir", state)
        assert r.returncode == 69, (args, r.returncode, r.stderr)
        assert "is not running" in r.stderr and "snakepit up" in r.stderr, (args, r.stderr)


def test_usage_says_what_it_counts_and_refuses_a_tenant_that_is_not_one(farm):
    h = snakepit("usage", "--help")
    for counted in ("executions", "cells", "sessions", "snapshots", "CPU", "get_usage", "--broker"):
        assert counted in h.stdout, counted
    r = snakepit("usage", "nobody", "--state-dir", farm.dir)
    assert r.returncode == 1 and "no tenant nobody" in r.stderr, (r.returncode, r.stderr)
    u = snakepit("usage", "local", "--state-dir", farm.dir, "--days", "1")
    assert u.returncode == 0 and "SESSIONS" in u.stdout.splitlines()[0]
