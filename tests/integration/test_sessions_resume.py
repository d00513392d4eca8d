"""Sessions that outlive their process, through a real farm (`snakepit up`, whose executor
writes checkpoints to the farm's Redis): a session idle past its timeout is checkpointed and its
process freed (hibernated); its next call resumes it under the same id, its variables, its own
functions and classes, and its files intact, and the answer says so; what a checkpoint cannot
hold is listed with why; closing a hibernated session ends it for good."""
import time

import pytest

from sessions_util import add_tenant, cell, close_opened, new, out, sc, wait_for

DEFINITIONS = '''
import math
from dataclasses import dataclass, field
x = 41
def inc(v, step=1):
    return v + step
class Box:
    scale = 2
    def __init__(self, v):
        self.v = v
    def double(self):
        return self.v * self.scale
@dataclass
class Point:
    x: int = 0
    tags: list = field(default_factory=list)
def counter():
    n = 0
    def step():
        nonlocal n
        n += 1
        return n
    return step
tick = counter()
tick()
b = Box(inc(x))
p = Point(3)
square = lambda t: t * t
pending = (i for i in range(3))
open('notes.txt', 'w').write('kept')
'''


@pytest.fixture(autouse=True)
def _close_sessions():
    yield
    close_opened()


def _hibernated(mcp, sid):
    rows = [s for s in sc(mcp, "list_sessions", {})["sessions"] if s["session_id"] == sid]
    return rows and rows[0]["state"] == "hibernated" and rows[0]


def test_an_idle_session_resumes_with_its_variables_functions_classes_and_files(mcp):
    sid = new(mcp, "python.filesystem", idle_timeout=1)
    r = cell(mcp, sid, DEFINITIONS)
    assert r["status"] == "ok" and r["cell"] == 1, r
    row = wait_for(lambda: _hibernated(mcp, sid), 30, "the session to be hibernated")
    assert row["hibernated_because"].startswith("hibernated: session expired after 1 s idle")
    r = cell(mcp, sid, "print(inc(x), b.double(), tick(), square(4), p, Point(), math.pi > 3, "
                       "open('notes.txt').read(), isinstance(b, Box))")
    assert r["status"] == "ok", r
    assert r["stdout"] == "42 84 2 16 Point(x=3, tags=[]) Point(x=0, tags=[]) True kept True\n"
    assert r["session_id"] == sid and r["cell"] == 2  # its cells are numbered on
    resumed = r["session"]["resumed"]
    assert resumed["from_cell"] == 1 and resumed["reason"].startswith("hibernated: session expired")
    # what a checkpoint cannot hold is said, with why
    assert [n["name"] for n in resumed["not_restored"]] == ["pending"]
    assert "generator" in resumed["not_restored"][0]["reason"]
    r = cell(mcp, sid, "print(x)")
    assert r["stdout"] == "41\n" and "resumed" not in r["session"]  # said once


def test_a_hibernated_session_is_listed_and_closes_without_waking(mcp):
    sid = new(mcp, "python.basic", idle_timeout=1)
    out(mcp, sid, "v = 1")
    wait_for(lambda: _hibernated(mcp, sid), 30, "the session to be hibernated")
    assert sc(mcp, "close_session", {"session_id": sid})["closed"] is True
    r = cell(mcp, sid, "print(v)")
    assert r["status"] == "rejected" and "closed by the client" in r["error"]["message"], r
    assert sid not in [s["session_id"] for s in sc(mcp, "list_sessions", {})["sessions"]]


def test_a_session_tool_resumes_a_hibernated_session_first(mcp):
    sid = new(mcp, "python.basic", idle_timeout=1)
    out(mcp, sid, "def twice(v):\n    return 2 * v\nv = 21")
    wait_for(lambda: _hibernated(mcp, sid), 30, "the session to be hibernated")
    f = sc(mcp, "fork_session", {"session_id": sid})
    assert "session_id" in f, f
    assert out(mcp, f["session_id"], "print(twice(v))") == "42\n"


def test_a_tenant_without_retention_has_its_idle_sessions_end(farm):
    c = add_tenant(farm, "forgetful", "--session-retention", "0")
    sid = new(c, "python.basic", idle_timeout=1)
    out(c, sid, "v = 1")
    time.sleep(3)
    r = cell(c, sid, "print(v)")
    assert r["status"] == "rejected" and r["session"]["alive"] is False, r
    assert r["error"]["message"] == "session expired after 1 s idle"
