"""`snakepit backup` while a farm serves, `snakepit restore` into a fresh farm: every tenant,
API key, quota, usage counter, session record and snapshot is back and works there.

The file is read here by its own description (cli/backup_file.h), independently of the C
reader: what it holds is compared with the fresh farm's Redis key by key."""
import hashlib
import json
import os
import struct
import threading

import pytest

from clilib import Farm, snakepit
from farm import McpHttp

PROFILES = ("--profiles", "python.basic,python.filesystem")
TRANSIENT = ("sp:metrics:", "sp:profiles", "sp:rl:")


def read_backup(path):
    """(header, {key: (type, expire_at_ms)}), after checking the count and the SHA-256."""
    with open(path, "rb") as f:
        data = f.read()
    assert data.startswith(b"SNAKEPIT-BACKUP\n")
    end = data.index(b"\n", 16)
    header = json.loads(data[16:end])
    at, keys = end + 1, {}
    while data[at:at + 1] == b"K":
        kind = chr(data[at + 1])
        (klen,) = struct.unpack(">I", data[at + 2:at + 6])
        key = data[at + 6:at + 6 + klen].decode()
        at += 6 + klen
        expire, plen = struct.unpack(">qI", data[at:at + 12])
        at += 12 + plen
        keys[key] = (kind, expire)
    assert data[at:at + 1] == b"E"
    (count,) = struct.unpack(">Q", data[at + 1:at + 9])
    assert count == len(keys) and data[at + 9:] == hashlib.sha256(data[:at + 9]).digest()
    return header, keys


def tool(client, name, args):
    return client.call(name, args)["structuredContent"]


@pytest.fixture(scope="module")
def source():
    """A farm with two tenants beside `local` (quotas, a rotated key), usage, records, sessions
    and a snapshot with a file and a variable in it."""
    with Farm(slots=2, extra=PROFILES) as farm:
        env = {"SNAKEPIT_STATE_DIR": farm.dir}
        keys = {}
        for name, quota in (("alice", ["--rate", "7", "--max-concurrency", "3"]),
                            ("bob", ["--max-snapshots", "5", "--profiles", "python.filesystem"])):
            r = snakepit("tenant", "add", name, *quota, env=env)
            assert r.returncode == 0, r.stderr
            keys[name] = r.stdout.strip()
        r = snakepit("tenant", "rotate-key", "bob", env=env)
        assert r.returncode == 0, r.stderr
        keys["bob"] = r.stdout.strip()
        alice = McpHttp(farm.url, keys["alice"])
        alice.initialize()
        for i in range(3):
            assert tool(alice, "execute_code", {"code": "print(%d)" % i})["status"] == "ok"
        sid = tool(alice, "create_session", {"profile": "python.filesystem",
                                             "files": {"notes.txt": "kept\n"}})["session_id"]
        assert tool(alice, "execute_code", {"session_id": sid, "code": "answer = 42"})["status"] == "ok"
        snap = tool(alice, "create_state_snapshot", {"session_id": sid, "description": "before"})
        yield {"farm": farm, "keys": keys, "session": sid, "snapshot": snap["snapshot_id"]}


def test_backup_while_the_farm_serves_then_restore_into_a_fresh_farm(source, tmp_path):
    farm, keys = source["farm"], source["keys"]
    path = str(tmp_path / "farm.bak")
    # calls keep arriving while the backup runs: it takes each key whole, at its instant
    stop, busy = threading.Event(), []
    bob = McpHttp(farm.url, keys["bob"])
    bob.initialize()

    def load():
        while not stop.is_set():
            busy.append(tool(bob, "execute_code", {"code": "1", "profile": "python.filesystem"})["status"])

    t = threading.Thread(target=load)
    t.start()
    try:
        r = snakepit("backup", path, "--state-dir", farm.dir)
    finally:
        stop.set()
        t.join(60)
    assert r.returncode == 0, r.stderr
    assert busy and set(busy) == {"ok"}
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    header, backed = read_backup(path)
    assert header["format"] == 1 and header["records"] is True
    assert not [k for k in backed if k.startswith(TRANSIENT)]
    for want in ("sp:tenants", "sp:t:alice", "sp:t:bob", "sp:t:local"):
        assert want in backed, want
    for counted in ("3 tenants", "API keys", "usage days", "1 snapshots", "session records",
                    "execution records"):
        assert counted in r.stderr, (counted, r.stderr)

    with Farm(slots=2, extra=PROFILES) as fresh:
        env = {"SNAKEPIT_STATE_DIR": fresh.dir}
        r = snakepit("restore", path, env=env)
        assert r.returncode == 0, r.stderr
        db = fresh.redis()
        # every key of the file is there, with the same value (a set: at least its members)
        src = farm.redis()
        for key, (kind, expire) in backed.items():
            assert db.exists(key), key
            if kind == "S":
                assert set(src.smembers(key)) <= set(db.smembers(key)) or \
                    not src.exists(key), key
            elif kind == "h" and key not in ("sp:t:local",) and ":use:" not in key \
                    and not key.startswith("sp:metrics"):
                if src.exists(key) and key.startswith(("sp:t:alice", "sp:t:bob", "sp:key:")):
                    assert db.hgetall(key) == src.hgetall(key), key
            if expire:
                assert db.pttl(key) > 0, key
            else:
                assert db.pttl(key) == -1, key
        # the tenants, with their quotas, alongside the fresh farm's own
        listed = [json.loads(l) for l in
                  snakepit("tenant", "list", "--json", env=env).stdout.splitlines()]
        assert {"alice", "bob", "local"} <= {t["tenant"] for t in listed}, listed
        show = json.loads(snakepit("tenant", "show", "alice", "--json", env=env).stdout)
        assert show["rate"] == "7" and show["max_concurrency"] == "3", show
        # usage as it was backed up
        usage = json.loads(snakepit("usage", "alice", "--days", "1", "--json", env=env).stdout)
        assert usage["tenants"]["alice"]["total"]["executions"] >= 3
        # the keys authenticate at the fresh farm, and the snapshot comes back with its state
        for name in ("alice", "bob"):
            c = McpHttp(fresh.url, keys[name])
            c.initialize()
            assert tool(c, "execute_code", {"code": "print('%s')" % name,
                                            "profile": "python.filesystem"})["stdout"] == name + "\n"
        alice = McpHttp(fresh.url, keys["alice"])
        alice.initialize()
        snaps = tool(alice, "list_state_snapshots", {})["snapshots"]
        assert source["snapshot"] in [s["snapshot_id"] for s in snaps]
        sid = tool(alice, "restore_state_snapshot", {"snapshot_id": source["snapshot"]})["session_id"]
        out = tool(alice, "execute_code", {"session_id": sid,
                                           "code": "print(answer, open('notes.txt').read())"})
        assert out["stdout"] == "42 kept\n\n", out
        # the session record of the source is there too (ended or live, it is the tenant's)
        assert db.exists("sp:t:{alice}:psess:%s" % source["session"])


def test_restore_refuses_a_damaged_file_before_writing_anything(source, tmp_path):
    path = str(tmp_path / "farm.bak")
    assert snakepit("backup", path, "--state-dir", source["farm"].dir).returncode == 0
    data = open(path, "rb").read()
    with Farm(slots=1, extra=("--profiles", "python.basic")) as fresh:
        before = set(fresh.redis().keys("sp:t:*"))
        for damaged in (data[:len(data) // 2], data[:-1] + bytes([data[-1] ^ 1])):
            with open(path, "wb") as f:
                f.write(damaged)
            r = snakepit("restore", path, "--state-dir", fresh.dir)
            assert r.returncode == 1 and "nothing was restored" in r.stderr, r.stderr
        assert set(fresh.redis().keys("sp:t:*")) == before


def test_no_records_leaves_execution_records_out(source, tmp_path):
    path = str(tmp_path / "small.bak")
    r = snakepit("backup", path, "--no-records", "--state-dir", source["farm"].dir)
    assert r.returncode == 0, r.stderr
    header, backed = read_backup(path)
    assert header["records"] is False
    assert not [k for k in backed if k.startswith("sp:exec:") or k.endswith((":execs", ":tasks"))]
    assert "sp:t:alice" in backed


def test_backup_and_restore_need_one_file(source):
    assert snakepit("backup", "--state-dir", source["farm"].dir).returncode == 64
    assert snakepit("restore", "a", "b", "--state-dir", source["farm"].dir).returncode == 64
