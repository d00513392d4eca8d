"""Tenants as the front-end sees them: API keys (stored hashed in Redis), per-tenant rate limits
(GCRA in Redis, a local limiter while Redis is down), profiles a tenant may use, and what
happens when Redis goes away mid-flight: authentication fails closed, results still come back,
record writes are buffered and flushed when Redis returns."""
import time

import pytest

import http.client
import json

from fe_harness import Client, Frontend, argument_error, free_port, wait_for


@pytest.fixture(scope="module")
def fe():
    f = Frontend(extra=["--auth-cache-ms", "60000", "--redis-timeout-ms", "500"])
    yield f
    f.stop()


def init(fe, key):
    c = Client(fe.url, key)
    c.initialize()
    return c


def test_missing_key_is_401_with_www_authenticate(fe):
    before = fe.metric("snakepit_mcp_auth_failures_total", reason="missing")
    r = Client(fe.url).send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "x", "version": "1"}})
    assert r.status == 401 and r.header("WWW-Authenticate").startswith("Bearer")
    assert r.json["error"]["code"] == -32600
    assert fe.metric("snakepit_mcp_auth_failures_total", reason="missing") == before + 1
    assert "event=auth_failed audit=1 reason=missing" in fe.log()


def test_unknown_key_is_401(fe):
    r = Client(fe.url, "not-a-key").send("ping")
    assert r.status == 401 and "Bearer" in r.header("WWW-Authenticate")


def test_malformed_authorization_is_401(fe):
    r = Client(fe.url).send("ping", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert r.status == 401


def test_a_session_belongs_to_its_tenant(fe):
    a = init(fe, fe.add_tenant("t-a"))
    b = Client(fe.url, fe.add_tenant("t-b"))
    b.session = a.session
    assert b.send("ping").status == 404  # another tenant's session is as good as unknown


def test_rate_limit_answers_429_with_retry_after(fe):
    c = init(fe, fe.add_tenant("slow", rate="0.5", burst="2"))
    codes = [c.send("tools/call", {"name": "execute_code", "arguments": {"code": "x"}}) for _ in range(3)]
    assert [r.status for r in codes[:2]] == [200, 200]
    r = codes[2]
    assert r.status == 429 and int(r.header("Retry-After")) >= 1
    assert r.json["error"]["code"] == -32029 and r.json["error"]["data"]["retry_after_ms"] > 0
    assert fe.metric("snakepit_mcp_rate_limit_rejections_total", source="redis") >= 1
    assert c.send("ping").status == 200  # cheap methods are not limited


def test_rate_limit_is_per_tenant(fe):
    slow = init(fe, fe.add_tenant("slow2", rate="0.1", burst="1"))
    other = init(fe, fe.add_tenant("other2", rate="100", burst="100"))
    slow.call("get_sandbox_info")
    assert slow.send("tools/call", {"name": "get_sandbox_info", "arguments": {}}).status == 429
    assert other.send("tools/call", {"name": "get_sandbox_info", "arguments": {}}).status == 200


def test_the_limit_is_shared_by_front_ends(fe):
    key = fe.add_tenant("shared", rate="0.01", burst="4")
    port = free_port()
    args = [("127.0.0.1:%d" % port if a == "127.0.0.1:%d" % fe.port else a) for a in fe.mcp_args]
    fe._spawn("mcp2", args)
    try:
        def up():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            return json.loads(conn.getresponse().read())["ok"]
        wait_for(up, 10, "the second front-end")
        one, two = init(fe, key), Client("http://127.0.0.1:%d/mcp" % port, key)
        two.initialize()
        codes = [c.send("tools/call", {"name": "get_sandbox_info", "arguments": {}}).status
                 for c in (one, two) * 4]
        assert codes.count(200) == 4 and codes.count(429) == 4, codes
    finally:
        assert fe._stop("mcp2") == 0


def test_profiles_a_tenant_may_not_use_are_refused(fe):
    c = init(fe, fe.add_tenant("limited", profiles="python.data_science"))
    r = c.request("tools/call", {"name": "execute_code", "arguments": {"code": "1", "profile": "python.basic"}})
    assert "not enabled" in argument_error(r, "profile")
    # without a profile the call runs in one the tenant may use
    r = c.request("tools/call", {"name": "execute_code", "arguments": {"code": "1"}})
    assert r["result"]["structuredContent"]["profile"] == "python.data_science", r


def test_redis_down_fails_closed_for_new_keys_but_serves_known_ones(fe):
    known = init(fe, fe.add_tenant("known", rate="100", burst="100"))
    fresh = fe.add_tenant("fresh")
    fe.stop_redis()
    try:
        wait_for(lambda: not fe.health()["redis_connected"], 10, "the front-end to notice Redis is gone")
        r = Client(fe.url, fresh).send("ping")
        assert r.status == 503 and r.json["error"]["code"] == -32030
        assert fe.metric("snakepit_mcp_auth_failures_total", reason="redis_unavailable") >= 1
        before = fe.metric("snakepit_mcp_rate_limit_fallbacks_total")
        res = known.call("execute_code", {"code": "print('still')"})["result"]
        assert res["structuredContent"]["status"] == "ok"
        eid = res["structuredContent"]["execution_id"]
        assert fe.metric("snakepit_mcp_rate_limit_fallbacks_total") > before
    finally:
        fe.start_redis()
    wait_for(lambda: fe.health()["redis_connected"], 15, "the front-end to reconnect")
    # the buffered record writes are flushed once Redis is back
    wait_for(lambda: fe.redis().hget("sp:exec:" + eid, "status") == "ok", 10, "the buffered record")
    assert fe.mcp_alive()


def test_a_stalled_redis_does_not_hang_requests(fe):
    c = init(fe, fe.add_tenant("stall", rate="100", burst="100"))
    fe.procs["redis"].send_signal(19)  # SIGSTOP: connected, silent
    try:
        r = c.call("execute_code", {"code": "1"})  # the limiter's Redis call times out; the local one decides
        assert r["result"]["structuredContent"]["status"] == "ok"
    finally:
        fe.procs["redis"].send_signal(18)  # SIGCONT
    assert fe.metric("snakepit_mcp_redis_errors_total", op="timeout") >= 1
    wait_for(lambda: fe.health()["redis_connected"], 15, "the front-end to reconnect")


def test_an_initialize_redis_never_answers_is_answered_all_the_same(fe):
    key = fe.add_tenant("opener", rate="100", burst="100")
    init(fe, key)  # the key is cached now
    fe.procs["redis"].send_signal(19)  # SIGSTOP: the session's script times out, the connection drops
    try:
        r = Client(fe.url, key).send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                    "clientInfo": {"name": "pytest", "version": "1"}})
        assert r.json["error"]["code"] == -32030, (r.status, r.body)  # not left without an answer
    finally:
        fe.procs["redis"].send_signal(18)  # SIGCONT
    wait_for(lambda: fe.health()["redis_connected"], 15, "the front-end to reconnect")
    init(fe, key)


def test_a_tenant_at_its_session_cap_evicts_its_least_recently_used_session():
    f = Frontend(extra=["--max-sessions-per-tenant", "3"])
    try:
        greedy, other = f.add_tenant("greedy"), f.add_tenant("polite")
        first, second, third = (init(f, greedy) for _ in range(3))
        polite = init(f, other)
        fourth = init(f, greedy)  # never refused: the least recently used (first) goes
        assert first.send("ping").status == 404  # ... and its client initializes again
        for c in (second, third, fourth, polite):
            assert c.send("ping").status == 200
        assert f.redis().zcard("sp:t:{greedy}:sessions") == 3
        assert f.metric("snakepit_mcp_sessions_evicted_total") >= 1
        assert "event=session_evicted" in f.log()
    finally:
        f.stop()


def test_a_thousand_sessions_opened_and_never_closed_lock_nobody_out():
    f = Frontend(extra=["--max-sessions-per-tenant", "50"])
    try:
        key = f.add_tenant("loop", rate="100000", burst="100000")
        for _ in range(1000):  # what a loop of `snakepit run` did before it closed its sessions
            c = Client(f.url, key)
            c.initialize()
            c.close()
        assert init(f, key).send("ping").status == 200
        assert f.redis().zcard("sp:t:{loop}:sessions") <= 50
    finally:
        f.stop()
