"""Tenant isolation for every session tool: another tenant's session or snapshot id
gets exactly the answer an unknown id gets, leaves the owner's state alone, and never shows in
the other tenant's lists."""
import json

import pytest

from sessions_util import add_tenant, close_opened, new, out, sc

UNKNOWN_SESSION = "01a20000-0000-7000-8000-0000000000aa"
UNKNOWN_SNAPSHOT = "01a20000-0000-7000-8000-0000000000bb"


@pytest.fixture(scope="module")
def owner(farm):
    c = add_tenant(farm, "owner")
    sid = new(c, "python.filesystem")
    out(c, sid, "secret = 'owner-only'\nopen('secret.txt', 'w').write('owner-only')")
    snap = sc(c, "create_state_snapshot", {"session_id": sid})["snapshot_id"]
    yield c, sid, snap
    close_opened()


@pytest.fixture(scope="module")
def intruder(farm):
    return add_tenant(farm, "intruder")


def _answer(mcp, tool, args):
    """The whole answer, JSON-RPC error or tool result, with the ids asked about masked."""
    r = mcp.request("tools/call", {"name": tool, "arguments": args})
    text = json.dumps(r.get("error") or r["result"], sort_keys=True)
    for v in args.values():
        text = text.replace(str(v), "<ID>")
    return json.loads(text)


CALLS = [
    ("execute_code", lambda s, p: {"session_id": s, "code": "print(secret)"}),
    ("validate_code", lambda s, p: {"session_id": s, "code": "x = 1"}),
    ("fork_session", lambda s, p: {"session_id": s}),
    ("close_session", lambda s, p: {"session_id": s}),
    ("create_state_snapshot", lambda s, p: {"session_id": s}),
    ("restore_state_snapshot", lambda s, p: {"snapshot_id": p}),
    ("delete_state_snapshot", lambda s, p: {"snapshot_id": p}),
]


@pytest.mark.parametrize("tool,args", CALLS, ids=[c[0] for c in CALLS])
def test_another_tenants_id_is_answered_like_an_unknown_one(owner, intruder, tool, args):
    _, sid, snap = owner
    theirs = _answer(intruder, tool, args(sid, snap))
    unknown = _answer(intruder, tool, args(UNKNOWN_SESSION, UNKNOWN_SNAPSHOT))
    # execution ids and times differ from call to call; everything else must not
    for a in (theirs, unknown):
        sc_ = a.get("structuredContent") if isinstance(a, dict) else None
        if sc_:
            for k in ("execution_id", "timings"):
                sc_.pop(k, None)
        if isinstance(a, dict):
            a.pop("content", None) if sc_ else None
    assert theirs == unknown


def test_restore_into_another_tenants_session_is_refused(owner, intruder):
    c, sid, snap = owner
    mine = new(intruder, "python.filesystem")
    out(intruder, mine, "mine = 1")
    theirs = _answer(intruder, "restore_state_snapshot", {"snapshot_id": snap, "session_id": mine})
    unknown = _answer(intruder, "restore_state_snapshot",
                      {"snapshot_id": UNKNOWN_SNAPSHOT, "session_id": mine})
    assert theirs == unknown
    # and the intruder's own snapshot cannot go into the owner's session
    own_snap = sc(intruder, "create_state_snapshot", {"session_id": mine})["snapshot_id"]
    theirs = _answer(intruder, "restore_state_snapshot", {"snapshot_id": own_snap, "session_id": sid})
    unknown = _answer(intruder, "restore_state_snapshot",
                      {"snapshot_id": own_snap, "session_id": UNKNOWN_SESSION})
    assert theirs == unknown


def test_the_resource_of_another_tenants_session_reads_like_an_unknown_one(owner, intruder):
    _, sid, _ = owner
    a = intruder.request("resources/read", {"uri": "sandbox://sessions/" + sid})
    b = intruder.request("resources/read", {"uri": "sandbox://sessions/" + UNKNOWN_SESSION})
    assert "error" in a and json.dumps(a["error"]).replace(sid, "<ID>") == \
        json.dumps(b["error"]).replace(UNKNOWN_SESSION, "<ID>")


def test_lists_show_only_the_tenants_own(owner, intruder):
    _, sid, snap = owner
    assert sid not in json.dumps(sc(intruder, "list_sessions", {}))
    assert snap not in json.dumps(sc(intruder, "list_state_snapshots", {}))
    assert sc(intruder, "list_state_snapshots", {"session_id": sid})["snapshots"] == []


def test_the_owners_session_is_untouched(owner, intruder):
    c, sid, snap = owner
    assert out(c, sid, "print(secret, open('secret.txt').read())") == "owner-only owner-only\n"
    assert snap in json.dumps(sc(c, "list_state_snapshots", {}))

