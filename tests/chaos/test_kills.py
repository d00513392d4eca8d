"""SIGKILL of each component of a two-broker farm, one at a time, under a bounded MCP load
sent to two front-ends — the farm's and a peer sharing its brokers and Redis — in
both eras: MCP 2025-11-25 in legacy sessions (kept in Redis) and 2026-07-28 without
any. Each test asserts what the failure may cost a client and nothing more: every request
answered (no hang), only the stated kinds of non-`ok`, the farm serving again within 5 s of the
kill (polled), nothing lasting lost (tenants, keys, quotas, usage, session snapshots), every
execution a client holds an answer for has its final record, for the broker that no job ran
twice, and for Redis and the front-end that a legacy session opened before the kill is still
valid after it, on either front-end."""
import threading
import time

from chaoslib import (CODE, ERAS, Load, answered, assert_nothing_lost, assert_records_final,
                      component_pid, end_session, in_session, lasting_state, open_session, serves,
                      session_key, sigkill, up, wait_for, SERVE_AGAIN_S)

N = 240         # requests per test
AT = 80         # answers before the kill
CONC = 16


def executor_jobs(farm):
    """Jobs the executor node finished (all statuses), from its /metrics."""
    import urllib.request
    text = urllib.request.urlopen(farm.ready["metrics"][1], timeout=10).read().decode()
    return sum(float(l.split()[-1]) for l in text.splitlines()
               if l.startswith("snakepit_executor_jobs_total{"))


class Kill:
    """SIGKILLs `what` when the load has AT answers, then polls (in its own thread) until the
    farm serves again, counting the polls that ran a job."""

    def __init__(self, farm, what):
        self.farm, self.what = farm, what
        self.at = None
        self.took = None
        self.polls_ok = 0
        self.thread = None

    def __call__(self):
        self.at = sigkill(component_pid(self.farm, self.what))
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self):
        deadline = self.at + SERVE_AGAIN_S + 30
        while time.time() < deadline:
            if serves(self.farm.url, self.farm.chaos_key):
                self.polls_ok += 1
                self.took = time.time() - self.at
                return
            time.sleep(0.1)

    def check(self):
        assert self.at, "the kill never happened"
        self.thread.join(SERVE_AGAIN_S + 35)
        assert self.took is not None, "the farm never served again after the %s died" % self.what
        assert self.took <= SERVE_AGAIN_S, "served again only %.1fs after the kill" % self.took


def run_kill(farm, peer, what, urls=None):
    r = farm.redis()
    wait_for(lambda: serves(farm.url, farm.chaos_key) and peer.up(), 60, "the farm to serve")
    before = lasting_state(r)
    load = Load(urls or [farm.url, peer.url], farm.chaos_key, N, CONC, CODE, eras=ERAS)
    kill = Kill(farm, what)
    load.at(AT, kill)
    load.run()
    kill.check()
    for url in load.urls:  # every front-end and era had its clients
        for era in ERAS:
            assert load.kinds(url=url, era=era), (url, era)
    return load, kill, before


def assert_session_valid_everywhere(farm, peer, session):
    """A legacy session opened before a kill still works on both front-ends (no 404)."""
    for url in (peer.url, farm.url):
        assert in_session(url, farm.chaos_key, session) == (200, "ok"), url


def test_a_killed_executor_costs_nothing(farm, peer):
    load, kill, before = run_kill(farm, peer, "executor")
    assert load.kinds() == {("ok", None): N}, load.kinds()  # its jobs were requeued
    assert_records_final(farm.redis(), answered(load))
    assert_nothing_lost(before, lasting_state(farm.redis()))


def test_a_killed_broker_costs_only_jobs_that_had_finished_on_it(farm, peer):
    ran_before = executor_jobs(farm)
    load, kill, before = run_kill(farm, peer, "broker")
    kinds = load.kinds()
    allowed = {("ok", None), ("lost", "BrokerLost")}
    assert set(kinds) <= allowed, kinds
    assert kinds.get(("lost", "BrokerLost"), 0) <= CONC  # at most what was in flight
    for o in load.outcomes:
        assert o[0] == "ok" or o[2], o
    # nothing ran twice: every job the executor finished is one a client asked for once
    ran = executor_jobs(farm) - ran_before
    asked = N + kill.polls_ok + 1  # + run_kill's first serves()
    assert ran <= asked, (ran, asked)
    assert_records_final(farm.redis(), answered(load))
    assert_nothing_lost(before, lasting_state(farm.redis()))


def test_a_killed_private_redis_loses_nothing(farm, peer):
    session = open_session(farm.url, farm.chaos_key)  # acknowledged: in the AOF before the kill
    load, kill, before = run_kill(farm, peer, "redis")
    # keys from the cache, records journalled, legacy sessions from the front-ends' copies
    assert load.kinds() == {("ok", None): N}, load.kinds()
    r = farm.redis()
    wait_for(lambda: r.ping(), 30, "Redis to be back")
    assert_records_final(r, answered(load))
    assert_nothing_lost(before, lasting_state(r))
    # the restarted Redis has the session from its AOF, and both front-ends, their buses
    # subscribed again and their copies revalidated, serve it
    assert r.ttl(session_key("chaos", session)) > 0
    wait_for(lambda: up(farm.url) and peer.up(), 30, "both front-ends' buses to be back")
    assert_session_valid_everywhere(farm, peer, session)


def test_a_killed_front_end_costs_only_its_own_connections(farm, peer):
    session = open_session(farm.url, farm.chaos_key)  # opened on the front-end about to die
    load, kill, before = run_kill(farm, peer, "mcp")
    on_killed, on_peer = load.kinds(url=farm.url), load.kinds(url=peer.url)
    assert set(k for k in on_killed if k[0] != "transport") == {("ok", None)}, on_killed
    # broken connections only for requests sent to the front-end before it died (in flight, or
    # in its listen queue); later ones waited for the restarted one
    after = load.sent_after(kill.at, url=farm.url)
    assert after and all(o[0] == "ok" for o in after), [o for o in after if o[0] != "ok"]
    assert load.reconnects_at[farm.url] > 0  # its clients reconnected to the restarted one
    # the peer's clients, of both eras, saw nothing of it: every answer ok, no session lost
    assert on_peer == {("ok", None): sum(on_peer.values())} and on_peer, on_peer
    assert load.reconnects_at[peer.url] == 0
    assert_records_final(farm.redis(), answered(load))
    assert_nothing_lost(before, lasting_state(farm.redis()))
    # a session lives in Redis, not in the front-end that opened it
    assert_session_valid_everywhere(farm, peer, session)
    assert end_session(peer.url, farm.chaos_key, session) == 200
    assert in_session(farm.url, farm.chaos_key, session)[0] == 404
