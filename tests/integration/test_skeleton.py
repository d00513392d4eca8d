"""The walking skeleton, as a new user meets it: `snakepit up`, then execute_code over HTTP and
stdio, the CLI, the record in Redis, and a clean stop."""
import contextlib
import json
import os
import re
import shutil
import subprocess
import time
import uuid

from farm import BIN, Farm, McpHttp, McpStdio, free_port
from fe_harness import argument_error

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def run(mcp, code, **kw):
    result = mcp.call("execute_code", dict(code=code, **kw))
    return result, result["structuredContent"]


def test_print_returns_stdout_and_ok(mcp):
    result, s = run(mcp, "print(1+1)")
    assert s["status"] == "ok"
    assert s["stdout"] == "2\n"
    assert s["stderr"] == ""
    assert result.get("isError") is False
    assert UUID.match(s["execution_id"])
    assert s["timings"]["wall_ms"] > 0
    assert any(c["type"] == "text" for c in result["content"])


def test_trailing_expression_is_the_result(mcp):
    _, s = run(mcp, "x = 6\nx * 7")
    assert s["status"] == "ok"
    assert s["result"] == "42"


def test_float_variables_arrive_exactly(mcp):
    code = "a = 0.1 + 0.2\nt = 1763924000.123456\nbig = 123456789.98765432\nsmall = 1e-300"
    _, s = run(mcp, code, inspect_variables=["a", "t", "big", "small"])
    assert s["status"] == "ok", s
    assert s["variables"] == {"a": 0.1 + 0.2, "t": 1763924000.123456, "big": 123456789.98765432,
                              "small": 1e-300}, s["variables"]
    # and the stored record keeps them too
    got = mcp.call("get_execution", {"execution_id": s["execution_id"]})["structuredContent"]
    assert got["result"]["variables"] == s["variables"], got


def test_runtime_error_reports_type_message_and_line(mcp):
    result, s = run(mcp, "a = 1\nb = 0\nprint('before')\na / b\n")
    assert s["status"] == "error"
    assert result["isError"] is True
    assert s["error"]["type"] == "ZeroDivisionError"
    assert "division by zero" in s["error"]["message"]
    assert s["error"]["line"] == 4
    assert "a / b" in s["error"]["traceback"]
    assert s["stdout"] == "before\n"


def test_syntax_error_has_a_line(mcp):
    result, s = run(mcp, "x = 1\ndef f(:\n    pass\n")
    assert s["status"] == "syntax_error"
    assert result["isError"] is True
    assert s["error"]["line"] == 2


def test_infinite_loop_is_killed_at_the_timeout(mcp):
    t = time.time()
    result, s = run(mcp, "print('started')\nwhile True:\n    pass\n", timeout=1)
    assert s["status"] == "timeout"
    assert s["exit"]["reason"] == "timeout"
    assert s["stdout"] == "started\n"  # what was printed before the kill is kept
    assert result["isError"] is True
    assert time.time() - t < 30  # it ended; how fast is `make bench`'s business


def test_oversized_output_is_capped(mcp):
    _, s = run(mcp, "print('x' * (3 * 1024 * 1024))")
    assert s["status"] == "output_limit"
    assert s["truncated"]["stdout"] is True
    assert len(s["stdout"]) == 1024 * 1024  # the default output limit per stream


def test_output_limit_argument_caps_each_stream(mcp):
    _, s = run(mcp, "print('x' * 1000)", output_limit=100)
    assert s["status"] == "output_limit"
    assert s["truncated"]["stdout"] is True
    assert s["stdout"] == "x" * 100
    _, s = run(mcp, "print('x' * 50)", output_limit=100)
    assert s["status"] == "ok" and s["stdout"] == "x" * 50 + "\n"


def test_output_limit_must_be_a_positive_integer(mcp):
    for bad in (0, -5, "100", 1.5):
        r = mcp.request("tools/call", {"name": "execute_code",
                                       "arguments": {"code": "print(1)", "output_limit": bad}})
        assert "`output_limit`" in argument_error(r, "output_limit"), (bad, r)


def test_record_lands_in_redis(farm, mcp):
    """A client that holds an answer finds the final record at once, through any front-end: the
    answer leaves only after Redis has the record. Nothing here waits or retries."""
    _, s = run(mcp, "print('recorded')")
    eid = s["execution_id"]
    r = farm.redis()
    record = r.hgetall("sp:exec:" + eid)
    assert record["status"] == "ok"
    assert record["tenant"] == "local"
    assert r.zscore("sp:t:local:execs", eid) is not None
    assert r.ttl("sp:exec:" + eid) > 0
    got = mcp.call("get_execution", {"execution_id": eid})["structuredContent"]
    assert got["status"] == "ok" and got["result"]["stdout"] == "recorded\n"
    with second_frontend(farm) as other:
        _, s = run(mcp, "print('seen elsewhere')")
        eid = s["execution_id"]
        got = other.call("get_execution", {"execution_id": eid})["structuredContent"]
        assert got["status"] == "ok" and got["result"]["stdout"] == "seen elsewhere\n"
        read = other.request("resources/read", {"uri": "sandbox://executions/" + eid})["result"]
        assert json.loads(read["contents"][0]["text"])["status"] == "ok"


@contextlib.contextmanager
def second_frontend(farm):
    """Another snakepit-mcp on the farm's broker and Redis, as a load balancer would add one."""
    port = free_port()
    log = open(os.path.join(farm.dir, "mcp-second.log"), "w")
    proc = subprocess.Popen([os.path.join(BIN, "snakepit-mcp"), "--http", "127.0.0.1:%d" % port,
                             "--broker", farm.ready["broker"], "--redis", farm.ready["redis"]],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        client = McpHttp("http://127.0.0.1:%d/mcp" % port, farm.api_key)
        deadline = time.time() + 30
        while True:  # the process starts listening; this is start-up, not the record
            try:
                client.initialize()
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.05)
        yield client
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_missing_api_key_is_401(farm):
    client = McpHttp(farm.url, None)
    status, headers, _ = client.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, raw=True)
    assert status == 401
    assert headers.get("WWW-Authenticate", "").startswith("Bearer")


def test_wrong_api_key_is_401(farm):
    client = McpHttp(farm.url, "sp_" + "0" * 64)
    status, _, _ = client.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, raw=True)
    assert status == 401


def test_stdio_serves_the_same_farm(farm):
    client = McpStdio(farm.dir)
    try:
        client.initialize()
        tools = client.request("tools/list")["result"]["tools"]
        assert "execute_code" in {t["name"] for t in tools}
        s = client.call("execute_code", {"code": "print(1+1)"})["structuredContent"]
        assert s["status"] == "ok" and s["stdout"] == "2\n"
    finally:
        assert client.close() == 0  # EOF on stdin ends it cleanly


def test_cli_run_prints_output_and_exits_with_the_status(farm):
    snakepit = os.path.join(BIN, "snakepit")
    ok = subprocess.run([snakepit, "run", "--state-dir", farm.dir, "print(1+1)"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "2\n"
    err = subprocess.run([snakepit, "run", "--state-dir", farm.dir, "1/0"],
                         capture_output=True, text=True, timeout=60)
    assert err.returncode == 1
    assert "ZeroDivisionError" in err.stderr
    loop = subprocess.run([snakepit, "run", "--state-dir", farm.dir, "-t", "1", "while True: pass"],
                          capture_output=True, text=True, timeout=60)
    assert loop.returncode == 3  # timeout
    assert "timeout" in loop.stderr


def test_up_waits_for_sandboxes_slower_than_the_brokers_grace(monkeypatch, tmp_path):
    """An executor whose sandboxes take longer to warm up than the broker's 10 s grace (a
    loaded machine, ASan): `snakepit up` keeps asking and comes up, instead of exiting on the
    broker's "no executor serves" refusal. The executor is delayed 12 s by a wrapper."""
    import farm as farm_module
    shutil.copy(os.path.join(BIN, "snakepit"), tmp_path / "snakepit")  # its own dir is the bin dir
    for name in ("snakepit-broker", "snakepit-mcp", "snakepit-zygote"):
        os.symlink(os.path.join(BIN, name), tmp_path / name)
    wrapper = tmp_path / "snakepit-executor"
    wrapper.write_text("#!/bin/sh\nsleep 12\nexec %s \"$@\"\n" % os.path.join(BIN, "snakepit-executor"))
    wrapper.chmod(0o755)
    monkeypatch.setattr(farm_module, "BIN", str(tmp_path))
    slow = Farm(slots=1, extra=("--profiles", "python.basic"))
    try:
        assert "waiting for the executor's sandboxes to warm up" in slow.output(), slow.output()
        mcp = McpHttp(slow.url, slow.api_key)
        mcp.initialize()
        _, s = run(mcp, "print('late but ready')")
        assert s["status"] == "ok" and s["stdout"] == "late but ready\n"
    finally:
        slow.stop()


def test_a_stdio_front_end_that_stops_right_after_answering_keeps_its_records(farm):
    """A stdio client that hangs up as soon as it has its answer: the front-end stops, and the
    record it had not yet seen acknowledged must still land (it drains its Redis writes before
    exiting). --record-wait-ms 0 lets the answer leave before the record, as a slow Redis
    would; before the drain about 1 record in 15 was lost."""
    r = farm.redis()
    lost = []
    for _ in range(15):
        p = subprocess.Popen([os.path.join(BIN, "snakepit-mcp"), "--stdio", "--broker",
                              farm.ready["broker"], "--redis", farm.ready["redis"],
                              "--record-wait-ms", "0", "--log-level", "warn"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        stdio = McpStdioPipe(p)
        stdio.initialize()
        eid = stdio.call("execute_code", {"code": "print(1)"})["structuredContent"]["execution_id"]
        p.stdin.close()
        assert p.wait(30) == 0
        if r.hget("sp:exec:" + eid, "status") != "ok":
            lost.append(eid)
    assert lost == [], lost


class McpStdioPipe:
    """The few lines of MCP over a process's stdin/stdout this test needs."""

    def __init__(self, proc):
        self.proc, self.next_id = proc, 0

    def request(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:  # notifications (logging, progress) may come first
            msg = json.loads(self.proc.stdout.readline())
            if msg.get("id") == self.next_id:
                return msg

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "test", "version": "1"}})
        self.proc.stdin.write('{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    def call(self, name, arguments):
        return self.request("tools/call", {"name": name, "arguments": arguments})["result"]


def test_stop_leaves_no_process_behind():
    farm = Farm(slots=1)
    try:
        pids = farm.child_pids()
        assert len(pids) >= 4  # redis, broker, executor (+ zygote), front-end
    finally:
        farm.stop()
    time.sleep(0.2)
    alive = [p for p in pids if os.path.exists("/proc/%d" % p)]
    assert alive == []
    assert not os.path.exists(os.path.join(farm.dir, "ready.json"))


def test_cli_runs_are_recorded_like_any_client(farm):
    snakepit = os.path.join(BIN, "snakepit")
    r = farm.redis()
    before = r.zcard("sp:t:local:execs")
    out = subprocess.run([snakepit, "run", "--state-dir", farm.dir, "--json", "x = 21\nx * 2"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    assert s["status"] == "ok" and s["result"] == "42"
    for _ in range(50):
        if r.hget("sp:exec:" + s["execution_id"], "status") == "ok":
            break
        time.sleep(0.1)
    assert r.hget("sp:exec:" + s["execution_id"], "status") == "ok"
    assert r.zcard("sp:t:local:execs") == before + 1


def test_cli_validate_and_direct_broker_mode(farm):
    snakepit = os.path.join(BIN, "snakepit")
    v = subprocess.run([snakepit, "run", "--state-dir", farm.dir, "--validate", "import ctypes\nprint(1)"],
                       capture_output=True, text=True, timeout=60)
    assert v.returncode == 1 and json.loads(v.stdout)["valid"] is False
    direct = subprocess.run([snakepit, "run", "--broker", farm.ready["broker"], "print('direct')"],
                            capture_output=True, text=True, timeout=60)
    assert direct.returncode == 0 and direct.stdout == "direct\n", direct.stderr
