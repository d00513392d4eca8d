"""tests/integration/test_compat.py — the drop-in endpoints (/mcp/compat/NAME, --stdio
--compat NAME) on a real farm: how they refuse bad arguments (tool results with isError naming
the argument, as on /mcp) and unknown tools (JSON-RPC -32602), the error shapes of what the sandbox refuses or stops, the
farm's auth, tenants, profiles, rate limits and records applying to them as to /mcp, and none
of the replaced servers' weaknesses: no host file, no environment, output kept past a timeout."""
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


def test_limits_beyond_the_servers_maxima_are_clamped_not_refused(farm):
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


def test_the_replaced_servers_weaknesses_stay_away(farm):
    """Host files and environment are out of reach, nothing runs in the front-end, and output
    printed before a timeout is kept (two of those servers lost it)."""
    probes = [("py-sandbox", "run_python", {"code": "print(open('/etc/passwd').read())"}),
              ("secure-sandbox", "run_sandbox_code", {"code": "print(open('/etc/passwd').read())"}),
              ("secure-sandbox", "run_sandbox_code", {"code": "print(open('../../../etc/passwd').read())"}),
              ("exec-sandbox", "execute_python", {"script": "import os; print(os.environ)"}),
              ("code-sandbox", "test_code", {"code": "print(().__class__.__base__.__subclasses__())"}),
              ("python-sandbox", "execute_code", {"code": "import subprocess"})]
    # the sandbox's environment is its own scrubbed one (os imports): none of the
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
    """That server's workspace lives between calls (here a sandbox session per tenant), and its four
    snapshot tools save, list, restore and delete it as that server documented them."""
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
    r = run("import pathlib\nprint(open('notes.txt').read(), sorted(p.name for p in pathlib.Path('.').iterdir()))")
    assert r["stdout"] == "v1 ['notes.txt']\n", r  # rewritten, and the file it lacked deleted
    # a workspace whose session ended (an audit stop ends it) is replaced by an empty one, and a
    # snapshot restores into that
    r = run("print(open('/etc/passwd').read())")
    assert r["success"] is False and "root:" not in r["stdout"]
    r = run("import pathlib\nprint(sorted(p.name for p in pathlib.Path('.').iterdir()))")
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


def read_resource(c, uri):
    r = c.request("resources/read", {"uri": uri})
    assert "result" in r, r
    contents = r["result"]["contents"]
    assert [x["uri"] for x in contents] == [uri] and contents[0]["mimeType"] == "application/json"
    return json.loads(contents[0]["text"])


def test_secure_sandbox_status_logs_and_schemas_show_the_tenants_own_workspace_and_runs(farm):
    key = add_tenant(farm, "compat-res")
    c = client(farm, "secure-sandbox", key)
    status = read_resource(c, "sandbox://status")
    assert status["status"] == "running" and status["snapshot_count"] == 0
    assert (status["configuration"]["default_timeout_sec"], status["configuration"]["max_timeout_sec"]) == (30, 300)
    assert "none yet" in status["workspace"]
    assert sorted(status["schemas"]) == ["config", "dataset", "user"]
    logs = read_resource(c, "sandbox://logs")
    assert (logs["count"], logs["logs"]) == (0, [])
    for code in ("print('one')", "1/0"):
        c.call("run_sandbox_code", {"code": code})
    assert structured(c.call("create_state_snapshot", {"description": "d"}))["success"] is True
    status = read_resource(c, "sandbox://status")
    assert status["snapshot_count"] == 1
    assert status["workspace"]["cells"] == 2
    assert status["workspace"]["profile"] in status["configuration"]["workspace_profiles"]
    logs = read_resource(c, "sandbox://logs")
    assert logs["count"] == 2
    assert [(x["level"], x["status"]) for x in logs["logs"]] == [("INFO", "ok"), ("ERROR", "error")]  # oldest first
    assert logs["logs"][1]["message"].startswith("run_sandbox_code: error (ZeroDivisionError)")
    assert all(set(x) >= {"timestamp", "level", "message", "duration_ms"} for x in logs["logs"])
    # another tenant's log and status show none of it
    other = client(farm, "secure-sandbox", add_tenant(farm, "compat-res2"))
    assert read_resource(other, "sandbox://logs")["count"] == 0
    assert read_resource(other, "sandbox://status")["snapshot_count"] == 0
    schemas = read_resource(c, "sandbox://schemas")
    assert sorted(schemas["schemas"]) == ["config", "dataset", "user"]
    assert schemas["schemas"]["user"]["required"] == ["id", "name", "email"]
    # the schema the resource shows is the one validate_json_data applies
    v = structured(c.call("validate_json_data", {"data": {"id": 1, "name": "Ann"}, "schema_name_or_dict": "user"}))
    assert v["valid"] is False and [e["message"] for e in v["errors"]] == ['"email" is a required property']


def test_python_sandbox_keeps_the_first_megabyte_of_a_long_print_and_succeeds(farm):
    """That server truncated each stream at its 1 MiB output size, added its mark and answered
    success: true; the run itself went on (result is still the code's)."""
    c = client(farm, "python-sandbox")
    r = structured(c.call("execute_code", {"code": "print('x' * 2_000_000)\nresult = 7"}))
    assert r["success"] is True and r["result"] == 7, {k: v for k, v in r.items() if k != "stdout"}
    assert r["stdout"] == "x" * 1048576 + "\n[Output truncated]" and r["stderr"] == ""
    # counted in characters, as a Python str is
    r = structured(c.call("execute_code", {"code": "print('é' * 1_100_000)"}))
    assert r["success"] is True and r["stdout"] == "é" * 1048576 + "\n[Output truncated]"
    # past the profile's output cap the run is stopped, and says so (a deliberate difference)
    r = structured(c.call("execute_code", {"code": "for i in range(10): print('y' * 1_000_000)"}))
    assert r["success"] is False and r["error_type"] == "OutputLimit"
    assert r["stdout"].endswith("\n[Output truncated]") and len(r["stdout"]) == 1048576 + 19


def test_what_the_servers_refused_before_running_is_refused_in_their_words(farm):
    """Those servers refused imports and file access before running the code; here the sandbox
    refuses them when attempted, and each endpoint answers as its server did."""
    r = structured(client(farm, "py-sandbox").call("run_python", {"code": "import os"}))
    assert (r["return_code"], r["error"]) == (-1, "Import of module 'os' is not allowed in the sandbox")
    r = structured(client(farm, "py-sandbox").call("run_python", {"code": "import json\nprint('a')\njson.loads(1/0)"}))
    assert (r["return_code"], r["stdout"]) == (1, "a\n")
    r = structured(client(farm, "py-sandbox").call("run_python", {"code": "from . import helpers"}))
    assert r["return_code"] == -1 and "relative imports" in r["error"]  # refused, as there
    r = structured(client(farm, "py-sandbox").call("run_python", {"code": "raise ValueError('x')"}))
    assert (r["return_code"], r["error"]) == (1, "ValueError: x")
    r = structured(client(farm, "python-sandbox").call("execute_code", {"code": "import subprocess"}))
    assert (r["success"], r["error"], r["security_event"]) == (False, "Import of 'subprocess' is not allowed in sandbox", "blocked_import")
    r = structured(client(farm, "python-sandbox").call("execute_code", {"code": "open('/etc/passwd')"}))
    assert (r["success"], r["security_event"]) == (False, "blocked_operation")
    c = client(farm, "code-sandbox")
    r = json.loads(c.call("test_code", {"code": "import os\nprint(1)"})["content"][0]["text"])
    assert r == {"valid": False, "phase": "security_check", "violations": ["Import of dangerous module: os"],
                 "platform_warning": ""}
    # a refusal the scan did not foresee is still the sandbox's, and answers in the same phase
    r = json.loads(c.call("test_code", {"code": "import collections\nimport sqlite3"})["content"][0]["text"])
    assert r["phase"] == "security_check" and r["violations"] == ["Import of dangerous module: sqlite3"], r


# what each server refused by reading the code, before running anything
STATIC = [
    ("code-sandbox", "test_code", "x = eval('1+1')\nimport os, sys\nfrom subprocess import run\nopen('f')",
     lambda r: r == {"valid": False, "phase": "security_check", "platform_warning": "", "violations": [
         "Import of dangerous module: os", "Import of dangerous module: sys", "Import of dangerous module: subprocess",
         "Call to dangerous function: eval", "Call to dangerous function: open"]}),
    # the syntax check still comes first
    ("code-sandbox", "test_code", "eval('1'\n", lambda r: r["phase"] == "syntax_check" and r["valid"] is False),
    ("code-sandbox", "test_code", "print(().__class__)", lambda r: r["phase"] == "execution"),  # not that server's rule
    ("py-sandbox", "run_python", "print('x')\nprint(eval('1+1'))",
     lambda r: (r["return_code"], r["stdout"], r["error"]) == (-1, "", "Use of builtin 'eval' is not allowed in the sandbox")),
    ("py-sandbox", "run_python", "print(().__class__.__base__)",
     lambda r: (r["return_code"], r["error"]) == (-1, "Access to attribute '__class__' is not allowed in the sandbox")),
    ("py-sandbox", "run_python", "g = {}.get\nprint(g('a', 1))", lambda r: r["return_code"] == 0),  # x.getattr( is no builtin
    ("secure-sandbox", "run_sandbox_code", "import subprocess\nexec('print(1)')",
     lambda r: r["success"] is False and r["exit_code"] == 1 and r["stdout"] == "" and
     r["error"] == "SafetyViolation: import of 'subprocess' is not allowed" and "call to 'exec'" in r["stderr"]),
    ("secure-sandbox", "run_sandbox_code", "print(''.__class__.__subclasses__)",
     lambda r: r["success"] is False and "attribute '__class__'" in r["error"]),
    ("secure-sandbox", "run_sandbox_code", "s = 'eval(1) import os'\n# exec(2)\nprint(s)", lambda r: r["success"] is True),
]


@pytest.mark.parametrize("name,tool,code,check", STATIC)
def test_what_a_server_refused_by_reading_the_code_is_refused_before_it_runs(farm, name, tool, code, check):
    r = client(farm, name).call(tool, {"code": code})
    assert r["isError"] is False
    doc = json.loads(r["content"][0]["text"])
    assert check(doc), doc


def test_python_sandbox_lists_its_four_tiers_with_their_modules(farm):
    info = structured(client(farm, "python-sandbox").call("get_sandbox_info", {}))
    tiers = info["security_profiles"]
    assert tiers["network"] == {"enabled": False, "modules": ["httpx", "requests", "urllib"]}
    assert tiers["filesystem"]["enabled"] is True
    assert {"pathlib", "tempfile", "shutil", "zipfile"} <= set(tiers["filesystem"]["modules"])
    assert "numpy" in tiers["data_science"]["modules"] and "math" in tiers["basic"]["modules"]


def test_secure_sandbox_metrics_report_the_workspaces_memory(farm):
    c = client(farm, "secure-sandbox", add_tenant(farm, "compat-mem"))
    assert structured(c.call("get_sandbox_metrics", {}))["resource_usage"]["memory"] is None  # none made for it
    c.call("run_sandbox_code", {"code": "x = 1"})
    memory = structured(c.call("get_sandbox_metrics", {}))["resource_usage"]["memory"]
    assert memory["workspace_limit_mb"] > 0 and memory["workspace_in_use_mb"] >= 0
