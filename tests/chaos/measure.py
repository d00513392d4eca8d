"""tests/chaos/measure.py — the table of docs/operating.md "Failure and recovery": for each
component, 3,000 execute_code calls at concurrency 16, the component SIGKILLed after 800
answers, and what the clients saw (not `ok`, by kind) and when the farm served again. A
measurement, not a test: it prints the table (and --json for the numbers).

    /usr/bin/python3 tests/chaos/measure.py [--n 3000] [--at 800] [--conc 16] [--json]
"""
import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaoslib import (CODE, Farm, Load, add_tenant, answered, assert_records_final,  # noqa: E402
                      component_pid, serves, sigkill, wait_for)
from sentinel import SentinelSet  # noqa: E402


def measure(farm, key, what, n, at, conc, kill=None):
    wait_for(lambda: serves(farm.url, key), 60, "the farm to serve")
    load = Load(farm.url, key, n, conc, CODE)
    out = {}

    def poll():
        while time.time() < out["killed"] + 60:
            if serves(farm.url, key):
                out["again_s"] = time.time() - out["killed"]
                return
            time.sleep(0.05)

    def fire():
        out["killed"] = kill() if kill else sigkill(component_pid(farm, what))
        threading.Thread(target=poll, daemon=True).start()

    load.at(at, fire)
    load.run(timeout=600)
    wait_for(lambda: "again_s" in out, 70, "the farm to serve again")
    r = farm.redis_client() if hasattr(farm, "redis_client") else farm.redis()
    assert_records_final(r, answered(load), timeout=60)
    not_ok = {"%s %s" % (k[0], k[1] or ""): v for k, v in load.kinds().items() if k[0] != "ok"}
    return {"killed": what, "not_ok": sum(not_ok.values()), "by_kind": not_ok,
            "serves_again_s": round(out["again_s"], 2), "records_complete": True}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--at", type=int, default=800)
    ap.add_argument("--conc", type=int, default=16)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    for what in ("executor", "broker", "redis", "mcp"):
        farm = Farm(slots=2, extra=("--brokers", "2", "--profiles", "python.basic"))
        try:
            rows.append(measure(farm, add_tenant(farm.dir, "chaos"), what, a.n, a.at, a.conc))
        finally:
            farm.stop()
    s = SentinelSet()
    try:
        farm = Farm(slots=2, extra=("--redis", s.url, "--profiles", "python.basic"))
        farm.redis_client = s.master
        try:
            rows.append(measure(farm, add_tenant(farm.dir, "chaos"), "sentinel master", a.n, a.at,
                                a.conc, kill=s.kill_master))
        finally:
            farm.stop()
    finally:
        s.stop()
    if a.json:
        print(json.dumps(rows, indent=1))
    print("| killed | not `ok` of %d | serves again |" % a.n)
    print("|---|---|---|")
    for r in rows:
        kinds = ", ".join("%d %s" % (v, k.strip()) for k, v in r["by_kind"].items())
        print("| %s | %d%s | yes, %.1f s |" % (r["killed"], r["not_ok"],
                                               " (%s)" % kinds if kinds else "", r["serves_again_s"]))


if __name__ == "__main__":
    main()
