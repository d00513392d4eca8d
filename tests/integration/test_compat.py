"""tests/integration/test_compat.py — the drop-in endpoints (/mcp/compat/NAME, --stdio
--compat NAME) on a real farm: how they refuse bad arguments (tool results with isError naming
the argument, as on /mcp) and unknown tools (JSON-RPC -32602), the error shapes of what the sandbox refuses or stops, the
farm's auth, tenants, profiles, rate limits and records applying to them as to /mcp, and none
of the seed servers' weaknesses: no host file, no environment, output kept past a timeout."""
import hashlib
import json
import os
import subprocess
import time

import pytest

from farm import BIN, McpError, McpHttp
from fe_harness import argument_error

SERVERS = {
    "python-sandbox": {"execute_code": ["allowed_imports", "capture_output", "code", "memory_limit", "timeout", "use_container"],
                       "validate_code": ["code"], "get_sandbox_info": []},
    "py-sandbox": {"run_python": ["code", "inspect_variables", "memory", "output_limit", "timeout"]},
    "secure-sandbox": {"run_sandbox_code": ["code", "timeout_sec"], "validate_json_data": ["data", "schema_name_or_dict"],
                       "validate_csv_data": ["csv_content", "required_headers", "type_constraints"],
                       "create_state_snapshot": ["description"], "restore_state_snapshot": ["snapshot_id"],
                       "list_state_snapshots": [], "delete_state_snapshot": ["snapshot_id"], "get_sandbox_metrics": []},
    "exec-sandbox": {"execute_python": ["dependencies", "script", "timeout_seconds"], "check_environment": [],
                     "validate_script": ["dependencies", "script"]},
    "code-sandbox": {"check_syntax": ["code"], "test_code": ["code", "cpu_limit_sec", "memory_limit_mb", "timeout"]},
}


def endpoint(farm, name):
    return farm.url + "/compat/" + name


def client(farm, name, key=None):
    c = McpHttp(endpoint(farm, name), key or farm.api_key)
    c.initialize()
    return c


def add_tenant(farm, name, **quotas):
    key = "key-%s-%s" % (name, os.urandom(6).hex())
    r = farm.redis()
    r.set("sp:key:" + hashlib.sha256(key.encode()).hexdigest(), name)
    r.hset("sp:t:" + name, mapping={"created_ms": int(time.time() * 1000), **quotas})
    return key


def structured(result):
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"] or \
        result["content"][0]["text"].startswith("---"), result
    return result["structuredContent"]


def rpc_error(c, tool, arguments):
    r = c.request("tools/call", {"name": tool, "arguments": arguments})
    assert "error" in r, r
    return r["error"]


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_each_endpoint_lists_exactly_its_servers_tools_and_parameters(farm, name):
    c = client(farm, name)
    tools = c.request("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == list(SERVERS[name])
    for t in tools:
        assert sorted(t["inputSchema"].get("properties", {})) == SERVERS[name][t["name"]], t["name"]


def test_a_compat_endpoint_introduces_itself_as_a_tools_only_server(farm):
    r = McpHttp(endpoint(farm, "py-sandbox"), farm.api_key).initialize()["result"]
    assert sorted(r["capabilities"]) == ["logging", "tools"]
    assert "py-sandbox" in r["serverInfo"]["title"]
    assert "run_python" in r["instructions"]


def test_an_unknown_endpoint_is_404_naming_the_real_ones(farm):
    for path in ("/compat/nope", "/compat/py-sandbox/extra", "/compat/"):
        c = McpHttp(farm.url + path, farm.api_key)
        with pytest.raises(McpError) as e:
            c.initialize()
        assert e.value.status == 404
    assert "python-sandbox, py-sandbox" in e.value.body


def test_auth_is_the_same_as_on_mcp(farm):
    for key in (None, "wrong"):
        c = McpHttp(endpoint(farm, "code-sandbox"), key)
        with pytest.raises(McpError) as e:
            c.initialize()
        assert e.value.status == 401


def test_tools_of_other_endpoints_are_unknown_here(farm):
    c = client(farm, "py-sandbox")
    for tool in ("execute_code", "test_code", "get_execution"):
        err = rpc_error(c, tool, {"code": "1"})
        assert err["code"] == -32602 and "unknown tool" in err["message"]


@pytest.mark.parametrize("name,tool,arguments,words", [
    ("py-sandbox", "run_python", {}, "`code` is required"),
    ("py-sandbox", "run_python", {"code": 5}, "`code` must be a string"),
    ("py-sandbox", "run_python", {"code": "1", "memory_mb": 5}, "`memory_mb` is not an argument of run_python"),
    ("py-sandbox", "run_python", {"code": "1", "inspect_variables": ["a b"]}, "inspect_variables[0]"),
    ("python-sandbox", "execute_code", {"code": "1", "timeout": "10"}, "`timeout` must be an integer"),
    ("python-sandbox", "execute_code", {"code": "1", "memory_limit": "lots"}, "memory_limit"),
    ("python-sandbox", "execute_code", {"code": "1", "allowed_imports": ["ctypes"]}, "module 'ctypes' is not available"),
    ("secure-sandbox", "validate_json_data", {"data": [1], "schema_name_or_dict": "user"}, "data must be an object"),
    ("secure-sandbox", "validate_json_data", {"data": {}}, "missing required argument 'schema_name_or_dict'"),
    ("secure-sandbox", "validate_json_data", {"data": {}, "schema_name_or_dict": 5}, "schema_name_or_dict must be"),
    ("secure-sandbox", "validate_json_data", {"data": {}, "schema_name_or_dict": "user", "x": 1}, "unknown argument 'x'"),
    ("secure-sandbox", "validate_csv_data", {"csv_content": "a", "required_headers": [1]}, "required_headers[0] must be a string"),
    ("secure-sandbox", "restore_state_snapshot", {}, "snapshot_id"),
    ("exec-sandbox", "execute_python", {"script": "1", "dependencies": ["bad\nname"]}, "dependencies[0]"),
    ("exec-sandbox", "execute_python", {"script": "1", "dependencies": "numpy"}, "`dependencies` must be an array"),
    ("code-sandbox", "test_code", {"code": "1", "timeout": "slow"}, "`timeout` must be a number"),
])
def test_bad_arguments_are_refused_naming_them(farm, name, tool, arguments, words):
    text = argument_error(client(farm, name).request("tools/call", {"name": tool, "arguments": arguments}))
    assert words in text, text


def test_limits_beyond_the_seeds_maxima_are_clamped_not_refused(farm):
    r = structured(client(farm, "py-sandbox").call("run_python", {"code": "print(1)", "timeout": 1000, "memory": 99999,
                                                                  "output_limit": 10 ** 9}))
    assert (r["stdout"], r["return_code"]) == ("1\n", 0)
    r = client(farm, "exec-sandbox").call("execute_python", {"script": "print(2)", "timeout_seconds": 0})
    assert r["structuredContent"]["exit_code"] == 0


def test_unusable_schemas_and_csv_rules_are_tool_errors(farm):
    c = client(farm, "secure-sandbox")
    for schema, words in [("nope", "predefined schemas are config, dataset, user"),
                          ({"$ref": "http://example.com/x"}, "only references into this schema"),
                          ({"properties": {"a": {"pattern": "("}}}, "does not compile")]:
        r = c.call("validate_json_data", {"data": {"a": "x"}, "schema_name_or_dict": schema})
        assert r["isError"] is True
        assert words in structured(r)["error"]
    r = c.call("validate_csv_data", {"csv_content": "a\n1\n", "type_constraints": {"a": "money"}})
    assert r["isError"] is True and "unknown type" in structured(r)["error"]


def test_a_backtracking_pattern_costs_one_job_not_the_front_end(farm):
    c = client(farm, "secure-sandbox")
    r = c.call("validate_json_data", {"data": {"s": "a" * 40 + "!"},
                                      "schema_name_or_dict": {"properties": {"s": {"pattern": "^(a+)+$"}}}})
    assert r["isError"] is True and "longer than 10 s" in structured(r)["error"]
    assert structured(client(farm, "py-sandbox").call("run_python", {"code": "print(3)"}))["stdout"] == "3\n"


def test_the_seeds_weaknesses_stay_away(farm):
    """Host files and environment are out of reach, nothing runs in the front-end, and output
    printed before a timeout is kept (seeds 000 and 004 lost it)."""
    probes = [("py-sandbox", "run_python", {"code": "print(open('/etc/passwd').read())"}),
              ("secure-sandbox", "run_sandbox_code", {"code": "print(open('/etc/passwd').read())"}),
              ("secure-sandbox", "run_sandbox_code", {"code": "print(open('../../../etc/passwd').read())"}),
              ("exec-sandbox", "execute_python", {"script": "import os; print(os.environ)"}),
              ("code-sandbox", "test_code", {"code": "print(().__class__.__base__.__subclasses__())"}),
              ("python-sandbox", "execute_code", {"code": "import subprocess"})]
    # the sandbox's environment is its own scrubbed one (os imports since issue 14): none of the
    # host's variables may show, whatever the code prints
    sandbox_env = {"PATH", "LANG", "LC_ALL", "TZ", "HOME", "USER", "LOGNAME", "TMPDIR", "MPLBACKEND",
                   "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                   "LD_BIND_NOW", "ASAN_OPTIONS"}
    host = [v for k, v in os.environ.items() if k not in sandbox_env and len(v) >= 6]
    for name, tool, args in probes:
        text = client(farm, name).call(tool, args)["content"][0]["text"]
        assert "root:" not in text, (name, tool, text[:300])
        assert not [v for v in host if v in text], (name, tool, text[:300])
    r = structured(client(farm, "py-sandbox").call("run_python", {"code": "print('kept', flush=True)\nwhile True: pass",
                                                                  "timeout": 1}))
    assert (r["stdout"], r["return_code"], r["timed_out"]) == ("kept\n", -1, True)


def test_a_tenant_without_data_science_gets_python_basic_and_a_clear_import_error(farm):
    key = add_tenant(farm, "compat-basic", profiles="python.basic")
    r = structured(client(farm, "python-sandbox", key).call("execute_code", {"code": "import numpy as np\nresult = 1"}))
    assert r["success"] is False and r["security_event"] == "blocked_import"
    info = structured(client(farm, "python-sandbox", key).call("get_sandbox_info", {}))
    assert info["security_profiles"]["basic"]["enabled"] is True
    assert info["security_profiles"]["data_science"]["enabled"] is False


def test_the_rate_limit_applies_to_compat_calls(farm):
    key = add_tenant(farm, "compat-slow", rate="0.01", burst="1")
    c = client(farm, "code-sandbox", key)
    c.call("check_syntax", {"code": "x = 1"})
    status, headers, body = c.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                    "params": {"name": "check_syntax", "arguments": {"code": "x = 1"}}},
                                   raw=True)
    err = json.loads(body)["error"]
    assert status == 429 and "Retry-After" in headers
    assert err["code"] == -32029 and err["data"]["retry_after_ms"] > 0


def test_executions_are_recorded_under_the_compat_tool_and_usage_counted(farm):
    key = add_tenant(farm, "compat-records")
    client(farm, "py-sandbox", key).call("run_python", {"code": "print('recorded')"})
    mine = McpHttp(farm.url, key)
    mine.initialize()
    listed = mine.call("list_executions", {"limit": 5})["structuredContent"]["executions"]
    assert listed and listed[0]["status"] == "ok"
    got = mine.call("get_execution", {"execution_id": listed[0]["execution_id"]})["structuredContent"]
    assert got["code"] == "print('recorded')"
    assert farm.redis().hget("sp:exec:" + listed[0]["execution_id"], "tool") == "run_python"
    m = structured(client(farm, "secure-sandbox", key).call("get_sandbox_metrics", {}))
    assert m["tool_statistics"]["executions_today"] == 1
    assert m["tool_statistics"]["by_status"] == {"ok": 1}


def test_the_secure_sandbox_workspace_persists_and_snapshots_round_trip(farm):
    """The seed's workspace lives between calls (here a sandbox session per tenant), and its four
    snapshot tools save, list, restore and delete it as the seed documents them."""
    key = add_tenant(farm, "compat-ws")
    c = client(farm, "secure-sandbox", key)
    run = lambda code: structured(c.call("run_sandbox_code", {"code": code, "timeout_sec": 20}))
    r = run("open('notes.txt', 'w').write('v1')\ncounter = 1")
    assert r["success"] is True and r["files_written"] == ["notes.txt"], r
    r = run("counter += 1\nprint(open('notes.txt').read(), counter)")
    assert r["stdout"] == "v1 2\n", r  # files and variables persist between calls
    snap = structured(c.call("create_state_snapshot", {"description": "before refactor"}))
    assert snap["success"] is True and snap["description"] == "before refactor"
    assert snap["file_count"] == 1 and set(snap["files"]["notes.txt"]) == {"size", "mtime", "sha256"}
    assert snap["files"]["notes.txt"]["sha256"] == hashlib.sha256(b"v1").hexdigest()
    second = structured(c.call("create_state_snapshot", {"description": "second"}))
    listed = structured(c.call("list_state_snapshots", {}))
    assert [x["snapshot_id"] for x in listed["snapshots"]] == [snap["snapshot_id"], second["snapshot_id"]]
    assert listed["count"] == 2 and listed["snapshots"][0]["timestamp"] == snap["timestamp"]
    run("open('notes.txt', 'w').write('v2')\nopen('extra.txt', 'w').write('x')")
    r = structured(c.call("restore_state_snapshot", {"snapshot_id": snap["snapshot_id"]}))
    assert r["success"] is True and r["files_restored"] == 1, r
    r = run("import os\nprint(open('notes.txt').read(), sorted(os.listdir('.')))")
    assert r["stdout"] == "v1 ['notes.txt']\n", r  # rewritten, and the file it lacked deleted
    # a workspace whose session ended (an audit stop ends it) is replaced by an empty one, and a
    # snapshot restores into that
    r = run("print(open('/etc/passwd').read())")
    assert r["success"] is False and "root:" not in r["stdout"]
    r = run("import os\nprint(sorted(os.listdir('.')))")
    assert r["success"] is True, r
    assert structured(c.call("restore_state_snapshot", {"snapshot_id": snap["snapshot_id"]}))["success"]
    assert run("print(open('notes.txt').read())")["stdout"] == "v1\n"
    d = c.call("delete_state_snapshot", {"snapshot_id": second["snapshot_id"]})
    assert d["isError"] is False and structured(d) == {"success": True, "snapshot_id": second["snapshot_id"]}
    d = c.call("delete_state_snapshot", {"snapshot_id": second["snapshot_id"]})
    assert d["isError"] is True and structured(d)["success"] is False
    assert [x["snapshot_id"] for x in structured(c.call("list_state_snapshots", {}))["snapshots"]] == [snap["snapshot_id"]]
    bad = c.call("restore_state_snapshot", {"snapshot_id": "not-an-id"})
    assert bad["isError"] is True and structured(bad)["success"] is False
    # the snapshots are the tenant's state snapshots on /mcp too, never evictable (no TTL)
    r = farm.redis()
    assert r.ttl("sp:t:{compat-ws}:snap:" + snap["snapshot_id"]) == -1
    assert r.ttl("sp:compat:{compat-ws}:workspace") == -1
    other = structured(client(farm, "secure-sandbox", add_tenant(farm, "compat-ws2")).call("list_state_snapshots", {}))
    assert other == {"count": 0, "snapshots": []}


def test_stdio_compat_serves_the_endpoint_and_refuses_unknown_names(farm):
    base = [os.path.join(BIN, "snakepit-mcp"), "--broker", farm.ready["broker"], "--redis", farm.ready["redis"],
            "--tenant", "local", "--log-level", "warn"]
    p = subprocess.run(base + ["--stdio", "--compat", "nope"], input=b"", capture_output=True, timeout=30)
    assert p.returncode == 2 and b"python-sandbox" in p.stderr
    p = subprocess.run(base + ["--compat", "py-sandbox"], input=b"", capture_output=True, timeout=30)
    assert p.returncode == 2 and b"--stdio" in p.stderr
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
             "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_python",
             "arguments": {"code": "x = 6 * 7", "inspect_variables": ["x"]}}}]
    p = subprocess.run(base + ["--stdio", "--compat", "py-sandbox"], capture_output=True, timeout=60,
                       input="".join(json.dumps(m) + "\n" for m in msgs).encode())
    replies = [json.loads(l) for l in p.stdout.decode().splitlines()]
    assert replies[-1]["result"]["structuredContent"]["variables"] == {"x": 42}
