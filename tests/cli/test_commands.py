"""The other `snakepit` commands as a user types them: version, help, up, mcp, status, usage,
keygen — their flags and exit codes."""
import json
import os

import pytest

from clilib import EX_USAGE, SNAKEPIT, snakepit

sys_path = os.path.join(os.path.dirname(__file__), "..", "integration")


def test_version_and_help():
    v = snakepit("version")
    assert v.returncode == 0 and v.stdout.startswith("snakepit ")
    assert snakepit("--version").stdout == v.stdout
    h = snakepit("--help")
    assert h.returncode == 0
    for cmd in ("up", "mcp --stdio", "run", "tenant", "keygen", "status", "usage", "version"):
        assert "\n  %s " % cmd in h.stdout, cmd
    bare = snakepit()
    assert bare.returncode == EX_USAGE and "usage" in bare.stderr


def test_unknown_command_exits_64():
    r = snakepit("frobnicate")
    assert r.returncode == EX_USAGE and "unknown command" in r.stderr


@pytest.mark.parametrize("cmd", ["up", "mcp", "run", "tenant", "status", "usage", "keygen"])
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
    import sys
    sys.path.insert(0, sys_path)
    from farm import McpStdio
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
