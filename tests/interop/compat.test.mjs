// tests/interop/compat.test.mjs — the official MCP TypeScript SDK client against the drop-in
// endpoints (/mcp/compat/NAME, and snakepit-mcp --stdio --compat NAME): for each server replaced,
// tools/list has its tool and parameter names and defaults, and its own documented examples
// come back in its documented shape — the SDK checks structuredContent
// against each outputSchema, and the text is what that server's clients parse.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const BASE = process.env.SP_URL;
const KEY = process.env.SP_KEY;
const STDIO = JSON.parse(process.env.SP_STDIO_CMD);

async function compat(name, fn) {
  const client = new Client({ name: "snakepit-compat-interop", version: "1.0.0" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${BASE}/compat/${name}`), {
    requestInit: { headers: { Authorization: `Bearer ${KEY}` } },
  }));
  try {
    const { tools } = await client.listTools(); // the SDK validates results against these schemas
    return await fn(client, Object.fromEntries(tools.map((t) => [t.name, t])));
  } finally {
    await client.close();
  }
}

const call = (c, name, args) => c.callTool({ name, arguments: args });
const json = (r) => JSON.parse(r.content[0].text);
const props = (t) => Object.keys(t.inputSchema.properties ?? {}).sort();

test("python-sandbox: the server's tools, parameters and defaults", () =>
  compat("python-sandbox", async (c, tools) => {
    assert.deepEqual(Object.keys(tools), ["execute_code", "validate_code", "get_sandbox_info"]);
    const ex = tools.execute_code.inputSchema;
    assert.deepEqual(props(tools.execute_code),
      ["allowed_imports", "capture_output", "code", "memory_limit", "timeout", "use_container"]);
    assert.deepEqual(ex.required, ["code"]);
    assert.equal(ex.properties.timeout.default, 30);
    assert.equal(ex.properties.timeout.maximum, 300);
    assert.equal(ex.properties.capture_output.default, true);
    assert.equal(ex.properties.use_container.default, false);
    assert.deepEqual(props(tools.validate_code), ["code"]);
    assert.deepEqual(props(tools.get_sandbox_info), []);
    assert.deepEqual(Object.keys(c.getServerCapabilities()).sort(), ["logging", "tools"]);
  }));

test("python-sandbox: the basic, data analysis, container and fibonacci examples", () =>
  compat("python-sandbox", async (c) => {
    const basic = await call(c, "execute_code",
      { code: "result = 2 + 2\nprint(f'The answer is: {result}')", timeout: 10, capture_output: true });
    assert.equal(basic.isError, false);
    const b = basic.structuredContent;
    assert.deepEqual(json(basic), b);
    assert.equal(b.success, true);
    assert.match(b.execution_id, /^[0-9a-f-]{36}$/);
    assert.equal(b.result, 4);
    assert.equal(b.stdout, "The answer is: 4\n");
    assert.equal(b.stderr, "");
    assert.equal(typeof b.execution_time, "number");
    assert.deepEqual(b.variables, ["result"]);
    const avg = (await call(c, "execute_code", { code: "import math\ndata = [1, 2, 3, 4, 5]\nresult = sum(data) / len(data)\nprint(f'Average: {result}')",
      allowed_imports: ["math"], timeout: 15 })).structuredContent;
    assert.equal(avg.success, true);
    assert.equal(avg.result, 3);
    assert.equal(avg.stdout, "Average: 3.0\n");
    const np = (await call(c, "execute_code", { code: "import numpy as np\ndata = np.array([1, 2, 3, 4, 5])\nresult = np.mean(data)",
      use_container: true, memory_limit: "256m", timeout: 30 })).structuredContent;
    assert.equal(np.success, true, JSON.stringify(np));
    assert.equal(np.result, 3);
    const fib = (await call(c, "execute_code", { code: "\ndef fibonacci(n):\n    if n <= 1:\n        return n\n    return fibonacci(n-1) + fibonacci(n-2)\n\nresult = [fibonacci(i) for i in range(10)]\nprint(\"Fibonacci sequence:\", result)\n" })).structuredContent;
    assert.deepEqual(fib.result, [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]);
    assert.equal(fib.stdout, "Fibonacci sequence: [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]\n");
    assert.deepEqual(fib.variables.sort(), ["fibonacci", "result"]);
  }));

test("python-sandbox: use cases, batch execution and error shapes", () =>
  compat("python-sandbox", async (c) => {
    const stats = (await call(c, "execute_code", { code: "\nimport statistics\ndata = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nmean = statistics.mean(data)\nmedian = statistics.median(data)\nstdev = statistics.stdev(data)\nresult = {\n    'mean': mean,\n    'median': median,\n    'std_dev': stdev\n}\nprint(f\"Statistics: {result}\")\n" })).structuredContent;
    assert.equal(stats.result.mean, 5.5);
    assert.equal(stats.result.median, 5.5);
    const sort = (await call(c, "execute_code", { code: "\ndef bubble_sort(arr):\n    n = len(arr)\n    for i in range(n):\n        for j in range(0, n-i-1):\n            if arr[j] > arr[j+1]:\n                arr[j], arr[j+1] = arr[j+1], arr[j]\n    return arr\n\ntest_data = [64, 34, 25, 12, 22, 11, 90]\nresult = bubble_sort(test_data.copy())\nprint(f\"Sorted: {result}\")\n" })).structuredContent;
    assert.deepEqual(sort.result, [11, 12, 22, 25, 34, 64, 90]);
    const pi = (await call(c, "execute_code", { code: "\nimport math\n\ndef calculate_pi_leibniz(terms):\n    pi_approx = 0\n    for i in range(terms):\n        pi_approx += ((-1) ** i) / (2 * i + 1)\n    return pi_approx * 4\n\nresult = calculate_pi_leibniz(1000)\nprint(f\"Pi approximation: {result}\")\nprint(f\"Difference from math.pi: {abs(result - math.pi)}\")\n" })).structuredContent;
    assert.ok(Math.abs(pi.result - Math.PI) < 0.01);
    const batch = [];
    for (const code of ["print('Hello, World!')", "result = sum(range(10))", "import math; print(math.pi)"])
      batch.push((await call(c, "execute_code", { code, timeout: 5 })).structuredContent);
    assert.deepEqual(batch.map((r) => r.success), [true, true, true]);
    assert.equal(batch[1].result, 45);
    assert.equal(batch[2].stdout, "3.141592653589793\n");
    const blocked = (await call(c, "execute_code", { code: "import os; os.system('ls')" })).structuredContent;
    assert.equal(blocked.success, false);
    assert.equal(blocked.security_event, "blocked_import");
    const boom = (await call(c, "execute_code", { code: "print('before')\n1/0" })).structuredContent;
    assert.equal(boom.success, false);
    assert.equal(boom.error, "division by zero");
    assert.match(boom.traceback, /ZeroDivisionError/);
    assert.equal(boom.stdout, "before\n");
    const slow = (await call(c, "execute_code", { code: "print('started', flush=True)\nwhile True: pass", timeout: 1 })).structuredContent;
    assert.equal(slow.error, "Execution timeout");
    assert.equal(slow.timeout, 1);
    assert.equal(slow.stdout, "started\n"); // that server lost this; snakepit keeps it
  }));

test("python-sandbox: validate_code and get_sandbox_info in the documented shapes", () =>
  compat("python-sandbox", async (c) => {
    const v = (await call(c, "validate_code", { code: "import os; os.system('ls')" })).structuredContent;
    assert.equal(v.validation.valid, false);
    assert.match(v.validation.errors[0], /^Line 1: Import 'os' is not allowed/);
    assert.equal(v.validation.message, "Code contains restricted operations");
    assert.equal(v.analysis.line_count, 1);
    assert.equal(v.analysis.character_count, 26);
    assert.equal(v.analysis.estimated_complexity, "low");
    assert.ok(Array.isArray(v.recommendations));
    const ok = (await call(c, "validate_code", { code: "print('Safe code execution')" })).structuredContent;
    assert.equal(ok.validation.valid, true);
    const info = (await call(c, "get_sandbox_info", {})).structuredContent;
    assert.equal(info.success, true);
    assert.deepEqual(Object.keys(info.security_profiles).sort(), ["basic", "data_science", "filesystem", "network"]);
    assert.equal(info.security_profiles.basic.enabled, true);
    for (const m of ["math", "random", "datetime", "json", "base64"]) assert.ok(info.security_profiles.basic.modules.includes(m), m);
    assert.ok(info.security_profiles.data_science.modules.includes("numpy"));
    assert.equal(info.security_profiles.network.enabled, false);
    assert.equal(info.resource_limits.timeout, 30);
    assert.equal(info.resource_limits.max_output_size, 1048576);
    assert.equal(typeof info.container_mode.available, "boolean");
  }));

test("py-sandbox: run_python with execute()'s examples and the CLI's", () =>
  compat("py-sandbox", async (c, tools) => {
    assert.deepEqual(Object.keys(tools), ["run_python"]);
    const s = tools.run_python.inputSchema.properties;
    assert.deepEqual(props(tools.run_python), ["code", "inspect_variables", "memory", "output_limit", "timeout"]);
    assert.deepEqual([s.timeout.default, s.timeout.maximum, s.memory.default, s.memory.maximum,
      s.output_limit.default, s.output_limit.maximum], [30, 60, 256, 1024, 65536, 262144]);
    const sqrt = (await call(c, "run_python", { code: "import math; print(math.sqrt(16))" })).structuredContent;
    assert.equal(sqrt.stdout, "4.0\n");
    assert.equal(sqrt.return_code, 0);
    const x = (await call(c, "run_python", { code: "x = 42", inspect_variables: ["x"] })).structuredContent;
    assert.deepEqual(x.variables, { x: 42 });
    const os = (await call(c, "run_python", { code: "import os" })).structuredContent;
    assert.match(os.error, /^Import of module 'os' is not allowed/);
    assert.equal(os.return_code, -1);
    assert.equal((await call(c, "run_python", { code: "print('hello world')" })).structuredContent.stdout, "hello world\n");
    const lim = (await call(c, "run_python", { code: "import math; print(math.pi)", timeout: 10, memory: 128 })).structuredContent;
    assert.equal(lim.stdout, "3.141592653589793\n");
    const xy = (await call(c, "run_python", { code: "x = 42; y = [1, 2, 3]", inspect_variables: ["x", "y"] })).structuredContent;
    assert.deepEqual(xy.variables, { x: 42, y: [1, 2, 3] });
    const cut = (await call(c, "run_python", { code: "print('x' * 1000)", output_limit: 100 })).structuredContent;
    assert.equal(cut.stdout.length, 100);
    assert.equal(cut.truncated, true);
    assert.equal(cut.return_code, 0);
  }));

test("secure-sandbox: its eight tools, the workspace, the validators and the snapshots", () =>
  compat("secure-sandbox", async (c, tools) => {
    assert.deepEqual(Object.keys(tools), ["run_sandbox_code", "validate_json_data", "validate_csv_data",
      "create_state_snapshot", "restore_state_snapshot", "list_state_snapshots", "delete_state_snapshot", "get_sandbox_metrics"]);
    assert.deepEqual(props(tools.run_sandbox_code), ["code", "timeout_sec"]);
    assert.deepEqual(props(tools.validate_json_data), ["data", "schema_name_or_dict"]);
    assert.deepEqual(props(tools.validate_csv_data), ["csv_content", "required_headers", "type_constraints"]);
    assert.deepEqual(props(tools.create_state_snapshot), ["description"]);
    assert.deepEqual(props(tools.restore_state_snapshot), ["snapshot_id"]);
    assert.deepEqual(Object.keys(c.getServerCapabilities()).sort(), ["logging", "prompts", "resources", "tools"]);
    assert.deepEqual((await c.listResources()).resources.map((r) => r.uri), ["sandbox://status", "sandbox://logs", "sandbox://schemas"]);
    assert.deepEqual((await c.listPrompts()).prompts.map((p) => p.name), ["generate_secure_script", "diagnose_validation_error"]);
    const run = (await call(c, "run_sandbox_code", { code: "with open('notes.txt', 'w') as f:\n    f.write('hi')\nprint(open('notes.txt').read())", timeout_sec: 10 })).structuredContent;
    assert.equal(run.success, true, JSON.stringify(run));
    assert.equal(run.stdout, "hi\n");
    assert.deepEqual(run.files_written, ["notes.txt"]);
    const out = (await call(c, "run_sandbox_code", { code: "open('../../etc/passwd').read()", timeout_sec: 10 })).structuredContent;
    assert.equal(out.success, false);
    for (const [data, name, valid] of [
      [{ name: "app", version: "1.0.0" }, "config", true], [{ name: "app", version: "one" }, "config", false],
      [{ id: 1, name: "Ann", email: "ann@example.com" }, "user", true], [{ id: 1, name: "Ann" }, "user", false],
      [{ name: "t", columns: ["a"], rows: [[1]] }, "dataset", true], [{ name: "t", columns: [], rows: [] }, "dataset", false]]) {
      const r = (await call(c, "validate_json_data", { data, schema_name_or_dict: name })).structuredContent;
      assert.equal(r.valid, valid, `${name}: ${JSON.stringify(r)}`);
    }
    const custom = (await call(c, "validate_json_data", { data: { age: -1 },
      schema_name_or_dict: { type: "object", properties: { age: { type: "integer", minimum: 0 } } } })).structuredContent;
    assert.deepEqual(custom.errors, [{ path: "/age", keyword: "minimum", message: "-1 is less than the minimum of 0" }]);
    const csv = (await call(c, "validate_csv_data", { csv_content: "name,age\nann,31\nbob,x\n",
      required_headers: ["name", "age", "email"], type_constraints: { age: "int" } })).structuredContent;
    assert.equal(csv.valid, false);
    assert.deepEqual(csv.missing_headers, ["email"]);
    assert.ok(csv.errors.includes('row 3, column "age": "x" is not int'));
    // the workspace persists between calls (a sandbox session), and its snapshots round-trip
    assert.equal((await call(c, "run_sandbox_code", { code: "open('notes.txt', 'w').write('v1')" })).structuredContent.success, true);
    const snap = (await call(c, "create_state_snapshot", { description: "before refactor" })).structuredContent;
    assert.equal(snap.success, true, JSON.stringify(snap));
    assert.equal(snap.files["notes.txt"].size, 2);
    await call(c, "run_sandbox_code", { code: "open('notes.txt', 'w').write('v2')" });
    assert.equal((await call(c, "restore_state_snapshot", { snapshot_id: snap.snapshot_id })).structuredContent.success, true);
    assert.equal((await call(c, "run_sandbox_code", { code: "print(open('notes.txt').read())" })).structuredContent.stdout, "v1\n");
    const listed = (await call(c, "list_state_snapshots", {})).structuredContent;
    assert.ok(listed.snapshots.some((x) => x.snapshot_id === snap.snapshot_id && x.description === "before refactor"));
    assert.equal((await call(c, "delete_state_snapshot", { snapshot_id: snap.snapshot_id })).structuredContent.success, true);
    const again = await call(c, "delete_state_snapshot", { snapshot_id: snap.snapshot_id });
    assert.equal(again.isError, true);
    assert.equal(json(again).success, false);
    const status = JSON.parse((await c.readResource({ uri: "sandbox://status" })).contents[0].text);
    assert.equal(typeof status.workspace, "object");
    assert.equal(typeof status.snapshot_count, "number");
    const logs = JSON.parse((await c.readResource({ uri: "sandbox://logs" })).contents[0].text);
    assert.ok(logs.logs.some((l) => l.message.startsWith("run_sandbox_code: ok")));
    const m = (await call(c, "get_sandbox_metrics", {})).structuredContent;
    assert.ok(m.tool_statistics.executions_today >= 2);
    assert.equal(typeof m.resource_usage.cpu_ms_today, "number");
  }));

test("exec-sandbox: execute_python's examples, check_environment, validate_script", () =>
  compat("exec-sandbox", async (c, tools) => {
    assert.deepEqual(Object.keys(tools), ["execute_python", "check_environment", "validate_script"]);
    assert.deepEqual(props(tools.execute_python), ["dependencies", "script", "timeout_seconds"]);
    assert.equal(tools.execute_python.inputSchema.properties.timeout_seconds.default, 30);
    assert.deepEqual(tools.execute_python.inputSchema.properties.dependencies.default, []);
    assert.deepEqual(props(tools.validate_script), ["dependencies", "script"]);
    const hello = await call(c, "execute_python", { script: "print('hello world')" });
    assert.match(hello.content[0].text, /^--- stdout ---\nhello world\n\n--- exit_code: 0 ---\n--- duration_ms: \d+ ---$/);
    assert.equal(hello.structuredContent.exit_code, 0);
    const req = await call(c, "execute_python", { script: "import requests; print(requests.get('https://httpbin.org/get').status_code)",
      dependencies: ["requests"] });
    // requests is installed; this tenant has no egress policy, so the lookup is refused, and said so
    assert.match(req.content[0].text, /--- stderr ---\nSecurityViolation: the sandbox blocked 'socket.getaddrinfo httpbin.org'/);
    assert.equal(req.structuredContent.exit_code, 1);
    const pd = await call(c, "execute_python", { script: "\n# /// script\n# dependencies = [\"pandas\", \"matplotlib\"]\n# ///\n\nimport pandas as pd\nprint(pd.DataFrame({'a': [1,2,3]}).describe())\n" });
    assert.equal(pd.structuredContent.exit_code, 0, pd.content[0].text);
    assert.match(pd.structuredContent.stdout, /count\s+3\.0/);
    const boom = await call(c, "execute_python", { script: "print('x')\nraise ValueError('bad')" });
    assert.match(boom.content[0].text, /--- stderr ---\nTraceback .*ValueError: bad/s);
    const slow = await call(c, "execute_python", { script: "print('up', flush=True)\nwhile True: pass", timeout_seconds: 1 });
    assert.match(slow.content[0].text, /--- stdout ---\nup\n.*--- timed_out: true ---$/s);
    const env = await call(c, "check_environment", {});
    for (const line of ["Python version: 3.", "Platform: Linux", "Default timeout: 30s", "Max output: 102400 bytes"])
      assert.ok(env.content[0].text.includes(line), line);
    const ok = await call(c, "validate_script", { script: "\n# /// script\n# dependencies = [\"pandas\", \"numpy\"]\n# ///\nimport pandas\n" });
    assert.equal(ok.content[0].text, "VALID\ndependencies (2):\n  - pandas\n  - numpy");
    const extra = await call(c, "validate_script", { script: "print(1)", dependencies: ["boto3>=1.0"] }); // no profile has it
    assert.match(extra.content[0].text, /^VALID\ndependencies \(1\):\n  - boto3>=1.0\nwarnings:\n  - DependencyError/);
    const bad = await call(c, "validate_script", { script: "# /// script\n# dependencies = [\"a\"\n# ///\n" });
    assert.match(bad.content[0].text, /^INVALID: /);
  }));

test("code-sandbox: check_syntax and test_code as that server documented them", () =>
  compat("code-sandbox", async (c, tools) => {
    assert.deepEqual(Object.keys(tools), ["check_syntax", "test_code"]);
    const t = tools.test_code.inputSchema.properties;
    assert.deepEqual(props(tools.test_code), ["code", "cpu_limit_sec", "memory_limit_mb", "timeout"]);
    assert.deepEqual([t.timeout.default, t.cpu_limit_sec.default, t.memory_limit_mb.default], [15, 10, 100]);
    const valid = await call(c, "check_syntax", { code: "x = 1\nprint(x)" });
    assert.equal(valid.content[0].text, '{"valid": true}');
    const e = json(await call(c, "check_syntax", { code: "if True\n    pass" }));
    assert.deepEqual([e.valid, e.line, e.context], [false, 1, "if True"]);
    assert.equal(typeof e.error, "string");
    assert.equal(typeof e.offset, "number");
    const r = await call(c, "test_code", { code: "print('Hello, world!')\nx = 1 / 0", timeout: 10, memory_limit_mb: 50 });
    assert.deepEqual(json(r), { stdout: "Hello, world!\n", stderr: "ZeroDivisionError: division by zero\n",
      exit_code: 1, phase: "execution", platform_warning: "" });
    assert.deepEqual(json(await call(c, "test_code", { code: "print(1" })).phase, "syntax_check");
    const sec = json(await call(c, "test_code", { code: "import subprocess" }));
    assert.deepEqual([sec.valid, sec.phase], [false, "security_check"]);
    const slow = json(await call(c, "test_code", { code: "print('a', flush=True)\nwhile True: pass", timeout: 1 }));
    assert.deepEqual([slow.exit_code, slow.stdout, slow.stderr], [124, "a\n", "Execution timed out after 1 seconds"]);
  }));

test("stdio --compat: the same endpoint for local clients", async () => {
  const client = new Client({ name: "snakepit-compat-stdio", version: "1.0.0" }, { capabilities: {} });
  await client.connect(new StdioClientTransport({ command: STDIO[0], args: [...STDIO.slice(1), "--compat", "code-sandbox"], stderr: "ignore" }));
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name), ["check_syntax", "test_code"]);
  const r = await client.callTool({ name: "test_code", arguments: { code: "print(6 * 7)" } });
  assert.equal(JSON.parse(r.content[0].text).stdout, "42\n");
  await client.close();
});

test("an unknown compat endpoint is 404 and a wrong key 401", async () => {
  const r = await fetch(`${BASE}/compat/nope`, { method: "POST", headers: { "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", Authorization: `Bearer ${KEY}` }, body: "{}" });
  assert.equal(r.status, 404);
  assert.match((await r.json()).error.message, /python-sandbox, py-sandbox, secure-sandbox, exec-sandbox, code-sandbox/);
  const w = await fetch(`${BASE}/compat/py-sandbox`, { method: "POST", headers: { "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", Authorization: "Bearer wrong" }, body: "{}" });
  assert.equal(w.status, 401);
});
