"""The whole farm stopped and started again on the same state directory keeps everything
(tenants, keys, quotas, records, usage, and whatever session snapshots exist); and two farms on
one machine start with default options, each saying where it is."""
import json
import os
import shutil
import urllib.request

from chaoslib import (Farm, McpHttp, add_tenant, lasting_state, serves, wait_for)


def records(r, ids):
    return {i: r.hgetall("sp:exec:" + i) for i in ids}


def test_a_farm_started_again_on_its_state_dir_has_everything():
    state = "/tmp/sp-restart-%d" % os.getpid()  # unix socket paths must stay short
    os.makedirs(state, exist_ok=True)
    first = Farm(slots=2, extra=("--profiles", "python.basic"), state_dir=state)
    try:
        key = add_tenant(first.dir, "kept")
        c = McpHttp(first.url, key)
        c.initialize()
        ids = [c.call("execute_code", {"code": code})["structuredContent"]["execution_id"]
               for code in ("print('kept')", "1/0", "x = 6 * 7\nx")]
        r = first.redis()
        before, recs, local = lasting_state(r), records(r, ids), first.api_key
        assert all(rec.get("status") for rec in recs.values())
    finally:
        first.stop()
    again = Farm(slots=2, extra=("--profiles", "python.basic"), state_dir=state)
    try:
        r = again.redis()
        assert again.api_key == local
        assert lasting_state(r) == before
        assert records(r, ids) == recs
        c = McpHttp(again.url, key)  # the tenant's key still works, its history is there
        c.initialize()
        got = c.call("get_execution", {"execution_id": ids[0]})["structuredContent"]
        assert got["status"] == "ok" and got["result"]["stdout"] == "kept\n"
        assert serves(again.url, key)
    finally:
        again.stop()
        shutil.rmtree(state, ignore_errors=True)


def test_two_farms_on_one_machine_start_with_default_options():
    a = Farm(slots=1, extra=("--profiles", "python.basic"), default_ports=True)
    try:
        b = Farm(slots=1, extra=("--profiles", "python.basic"), default_ports=True)
        try:
            assert a.url != b.url
            assert set(a.ready["metrics"]).isdisjoint(b.ready["metrics"])
            for f in (a, b):
                for url in f.ready["metrics"]:
                    assert urllib.request.urlopen(url, timeout=10).status == 200
                assert serves(f.url, f.api_key)
                with open(os.path.join(f.dir, "ready.json")) as fh:
                    assert json.load(fh)["url"] == f.url
        finally:
            b.stop()
    finally:
        a.stop()
