"""Helpers for the session suites: tool calls that return structuredContent, cells,
and tenants made with `snakepit tenant add`."""
import json
import os
import subprocess
import time

from farm import BIN, McpHttp


MAKERS = ("create_session", "fork_session", "restore_state_snapshot", "map_session")
opened = {}  # client -> the sessions it made, closed after each test (quotas count them)


def close_opened():
    for mcp, ids in list(opened.items()):
        for sid in ids:
            mcp.call("close_session", {"session_id": sid})
    opened.clear()


def sc(mcp, tool, args):
    """The tool's structured answer; a tool error (isError without structure) as its text."""
    r = mcp.call(tool, args)
    if "structuredContent" in r:
        sc_ = r["structuredContent"]
        if tool in MAKERS:  # a fan-out's sessions too
            made = sc_.get("session_ids") or ([sc_["session_id"]] if tool != "map_session" and
                                              sc_.get("session_id") else [])
            opened.setdefault(mcp, []).extend(made)
        return sc_
    return {"error_text": r["content"][0]["text"], "isError": r.get("isError")}


def new(mcp, profile="python.filesystem", **kw):
    s = sc(mcp, "create_session", dict(profile=profile, **kw))
    assert "session_id" in s, s
    return s["session_id"]


def cell(mcp, sid, code, **kw):
    return sc(mcp, "execute_code", dict(session_id=sid, code=code, **kw))


def out(mcp, sid, code, **kw):
    """A cell that must succeed: its stdout."""
    r = cell(mcp, sid, code, **kw)
    assert r["status"] == "ok", r
    return r["stdout"]


def add_tenant(farm, name, *flags):
    """A tenant made the way an operator makes one; its client, initialized."""
    r = subprocess.run([os.path.join(BIN, "snakepit"), "tenant", "add", name, "--state-dir",
                        farm.dir, "--json", "--rate", "1000", "--burst", "1000", *flags],
                       capture_output=True, text=True, check=True)
    c = McpHttp(farm.url, json.loads(r.stdout)["api_key"])
    c.initialize()
    return c


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)
