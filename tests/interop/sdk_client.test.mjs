// tests/interop/sdk_client.test.mjs — the official MCP TypeScript SDK v1 client
// (@modelcontextprotocol/sdk 1.32, legacy revisions only; pinned in package.json) against
// snakepit-mcp, over Streamable HTTP and stdio: initialize, list and call every tool (the SDK
// validates structuredContent against each outputSchema), a plot, progress, cancellation, tasks,
// resources and a subscription, prompts, completion, and a refused key.
// Run by run_interop.py, which starts the front-end and passes where it is in the environment.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const URL_ = new URL(process.env.SP_URL);
const KEY = process.env.SP_KEY;
const STDIO = JSON.parse(process.env.SP_STDIO_CMD);

async function httpClient(key = KEY) {
  const client = new Client({ name: "snakepit-interop", version: "1.0.0" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(URL_, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

async function withClient(fn) {
  const client = await httpClient();
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

const sc = (r) => r.structuredContent;

test("initialize negotiates 2025-11-25 and declares capabilities", () =>
  withClient(async (c) => {
    assert.equal(c.getServerVersion().name, "snakepit");
    const caps = c.getServerCapabilities();
    for (const k of ["tools", "resources", "prompts", "logging", "completions", "tasks"]) assert.ok(caps[k], k);
  }));

const TOOLS = ["close_session", "create_session", "create_state_snapshot", "delete_state_snapshot",
  "execute_code", "fork_session", "get_execution", "get_sandbox_info", "get_usage", "list_executions",
  "list_sessions", "list_state_snapshots", "map_session", "restore_state_snapshot", "validate_code"];

test("tools/list has the tools with input and output schemas", () =>
  withClient(async (c) => {
    const { tools } = await c.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, "object");
      assert.equal(t.outputSchema.type, "object");
    }
  }));

test("every tool can be called and its result matches its outputSchema", () =>
  withClient(async (c) => {
    await c.listTools(); // the SDK validates structuredContent once it knows the schemas
    const run = await c.callTool({ name: "execute_code", arguments: { code: "x = 21\nprint(x * 2)\nx + 1", inspect_variables: ["x"] } });
    assert.equal(run.isError, false);
    assert.equal(sc(run).status, "ok");
    assert.equal(sc(run).stdout, "42\n");
    assert.equal(sc(run).result, "22");
    assert.deepEqual(sc(run).variables, { x: 21 });
    const err = await c.callTool({ name: "execute_code", arguments: { code: "1/0" } });
    assert.equal(err.isError, true);
    assert.equal(sc(err).error.type, "ZeroDivisionError");
    const val = await c.callTool({ name: "validate_code", arguments: { code: "import ctypes" } });
    assert.equal(sc(val).valid, false);
    const info = await c.callTool({ name: "get_sandbox_info", arguments: {} });
    assert.ok(sc(info).profiles.some((p) => p.name === "python.basic"));
    const id = sc(run).execution_id;
    await new Promise((r) => setTimeout(r, 200));
    const got = await c.callTool({ name: "get_execution", arguments: { execution_id: id } });
    assert.equal(sc(got).execution_id, id);
    assert.equal(sc(got).status, "ok");
    const list = await c.callTool({ name: "list_executions", arguments: { limit: 10 } });
    assert.ok(sc(list).executions.some((e) => e.execution_id === id));
  }));

test("progress notifications arrive for a call with a progress token", () =>
  withClient(async (c) => {
    const seen = [];
    const r = await c.callTool({ name: "execute_code", arguments: { code: "print('p')" } }, undefined,
      { onprogress: (p) => seen.push(p) });
    assert.equal(sc(r).status, "ok");
    assert.ok(seen.length >= 2, `progress: ${JSON.stringify(seen)}`);
    assert.equal(seen.at(-1).message, "done");
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress);
  }));

test("aborting a call cancels the job on the farm", () =>
  withClient(async (c) => {
    const ac = new AbortController();
    const p = c.callTool({ name: "execute_code", arguments: { code: "while True: pass", timeout: 60 } }, undefined,
      { signal: ac.signal });
    await new Promise((r) => setTimeout(r, 500));
    ac.abort("user pressed stop");
    await assert.rejects(p);
    const base = URL_.href.replace(/\/mcp$/, "");
    let statuses = [];
    for (let i = 0; i < 50; i++) {
      const list = await c.callTool({ name: "list_executions", arguments: { limit: 1 } });
      statuses = sc(list).executions.map((e) => e.status);
      if (statuses[0] === "cancelled") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(statuses[0], "cancelled");
    const health = await (await fetch(`${base}/healthz`)).json();
    assert.equal(health.jobs_in_flight, 0);
  }));

test("a task-augmented call creates a task and delivers its result", () =>
  withClient(async (c) => {
    await c.listTools();
    const kinds = [];
    let taskId, result;
    for await (const m of c.experimental.tasks.callToolStream(
      { name: "execute_code", arguments: { code: "print('task')" } }, undefined, { task: { ttl: 60000 } })) {
      kinds.push(m.type);
      if (m.type === "taskCreated") taskId = m.task.taskId;
      if (m.type === "result") result = m.result;
      if (m.type === "error") throw m.error;
    }
    assert.equal(kinds[0], "taskCreated");
    assert.equal(sc(result).stdout, "task\n");
    const t = await c.experimental.tasks.getTask(taskId);
    assert.equal(t.status, "completed");
    const list = await c.experimental.tasks.listTasks();
    assert.ok(list.tasks.some((x) => x.taskId === taskId));
  }));

test("a running task can be cancelled", () =>
  withClient(async (c) => {
    const created = await c.request({ method: "tools/call", params: { name: "execute_code",
      arguments: { code: "while True: pass", timeout: 60 }, task: {} } },
      (await import("@modelcontextprotocol/sdk/types.js")).CreateTaskResultSchema);
    const t = await c.experimental.tasks.cancelTask(created.task.taskId);
    assert.equal(t.status, "cancelled");
  }));

// Sessions: the main flows, every answer checked against its outputSchema by the SDK.
const call = async (c, name, args) => {
  const r = await c.callTool({ name, arguments: args });
  assert.equal(r.isError, false, `${name}: ${JSON.stringify(r.content)}`);
  return sc(r);
};

test("sessions: state persists from cell to cell, a fork is isolated, close ends it", () =>
  withClient(async (c) => {
    await c.listTools();
    const s = await call(c, "create_session", { profile: "python.filesystem", idle_timeout: 120 });
    assert.equal(s.profile, "python.filesystem");
    assert.equal(s.limits.idle_timeout_s, 120);
    const id = s.session_id;
    const one = await call(c, "execute_code", { session_id: id,
      code: "import json\nrows = [1, 2]\ndef total(): return sum(rows)\nopen('d.txt', 'w').write('kept')" });
    assert.equal(one.cell, 1);
    const two = await call(c, "execute_code", { session_id: id, code: "print(total(), open('d.txt').read())" });
    assert.equal(two.stdout, "3 kept\n");
    assert.equal(two.cell, 2);
    assert.equal(two.session_id, id);
    const f = await call(c, "fork_session", { session_id: id });
    assert.equal(f.parent_session_id, id);
    await call(c, "execute_code", { session_id: f.session_id, code: "rows.append(10)\nopen('d.txt', 'w').write('fork')" });
    const parent = await call(c, "execute_code", { session_id: id, code: "print(total(), open('d.txt').read())" });
    assert.equal(parent.stdout, "3 kept\n");
    const fork = await call(c, "execute_code", { session_id: f.session_id, code: "print(total(), open('d.txt').read())" });
    assert.equal(fork.stdout, "13 fork\n");
    const listed = await call(c, "list_sessions", {});
    assert.ok([id, f.session_id].every((x) => listed.sessions.some((r) => r.session_id === x)));
    const res = await c.readResource({ uri: `sandbox://sessions/${id}` });
    assert.equal(JSON.parse(res.contents[0].text).session.session_id, id);
    for (const x of [id, f.session_id]) assert.equal((await call(c, "close_session", { session_id: x })).closed, true);
    const after = await c.callTool({ name: "execute_code", arguments: { session_id: id, code: "print(1)" } });
    assert.equal(after.isError, true);
    assert.equal(sc(after).session.alive, false);
    assert.match(sc(after).session.end_reason, /closed/);
  }));

test("sessions: a snapshot restores into a new session and is listed and deleted", () =>
  withClient(async (c) => {
    await c.listTools();
    const id = (await call(c, "create_session", { profile: "python.filesystem" })).session_id;
    await call(c, "execute_code", { session_id: id, code: "answer = 42\nopen('b.bin', 'wb').write(bytes(range(256)))" });
    const snap = await call(c, "create_state_snapshot", { session_id: id, description: "sdk" });
    assert.deepEqual(snap.files.map((x) => [x.path, x.size]), [["b.bin", 256]]);
    assert.ok(snap.variables.includes("answer"));
    const listed = await call(c, "list_state_snapshots", {});
    assert.ok(listed.snapshots.some((x) => x.snapshot_id === snap.snapshot_id));
    const r = await call(c, "restore_state_snapshot", { snapshot_id: snap.snapshot_id });
    assert.equal(r.new_session, true);
    const cell = await call(c, "execute_code", { session_id: r.session_id,
      code: "print(answer, len(open('b.bin', 'rb').read()))" });
    assert.equal(cell.stdout, "42 256\n");
    assert.equal((await call(c, "delete_state_snapshot", { snapshot_id: snap.snapshot_id })).deleted, true);
    for (const x of [id, r.session_id]) await call(c, "close_session", { session_id: x });
  }));

test("resources, prompts and completion", () =>
  withClient(async (c) => {
    const { resources } = await c.listResources();
    assert.ok(resources.some((r) => r.uri === "sandbox://info"));
    const info = await c.readResource({ uri: "sandbox://info" });
    assert.ok(JSON.parse(info.contents[0].text).profiles.length >= 1);
    const { resourceTemplates } = await c.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(),
      ["sandbox://executions/{id}", "sandbox://executions/{id}/files/{path}", "sandbox://sessions/{id}"]);
    const p = await c.getPrompt({ name: "write_sandbox_code", arguments: { task: "add numbers" } });
    assert.match(p.messages[0].content.text, /add numbers/);
    const comp = await c.complete({ ref: { type: "ref/prompt", name: "write_sandbox_code" },
      argument: { name: "profile", value: "py" } });
    assert.ok(comp.completion.values.includes("python.basic"));
    await c.setLoggingLevel("info");
    await c.ping();
  }));

test("rich outputs come back as structuredContent.outputs and matching content blocks", () =>
  withClient(async (c) => {
    await c.listTools(); // the SDK validates structuredContent against the outputSchema
    const code = "import pandas as pd, matplotlib.pyplot as plt\n" +
      "df = pd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3.5, 19.0]})\n" +
      "display(df)\nfig = plt.figure(figsize=(2, 2), dpi=50)\nplt.plot([1, 2])\ndisplay(fig)\n" +
      "{'answer': 42}";
    const r = await c.callTool({ name: "execute_code", arguments: { code, profile: "python.data_science" } });
    assert.equal(sc(r).status, "ok", JSON.stringify(sc(r).error));
    const outs = sc(r).outputs;
    const html = outs.find((o) => o.mimeType === "text/html");
    const table = outs.find((o) => o.mimeType === "application/json" && o.kind === "display");
    const png = outs.find((o) => o.mimeType === "image/png");
    const value = outs.find((o) => o.kind === "result" && o.mimeType === "application/json");
    assert.match(html.data, /<table/);
    assert.deepEqual(table.data.columns, ["city", "temp"]);
    assert.deepEqual(table.data.data, [["Oslo", 3.5], ["Lima", 19.0]]);
    assert.equal(png.encoding, "base64");
    assert.ok(Buffer.from(png.data, "base64").subarray(1, 4).toString() === "PNG");
    assert.deepEqual(value.data, { answer: 42 });
    const blocks = r.content;
    const res = blocks.filter((b) => b.type === "resource");
    assert.ok(res.some((b) => b.resource.mimeType === "text/html" && /<table/.test(b.resource.text)));
    assert.ok(res.some((b) => b.resource.mimeType === "application/json"));
    assert.ok(blocks.some((b) => b.type === "image" && b.mimeType === "image/png"));
    const htmlUri = res.find((b) => b.resource.mimeType === "text/html").resource.uri;
    await new Promise((done) => setTimeout(done, 200));
    const again = await c.readResource({ uri: htmlUri });
    assert.match(again.contents[0].text, /Oslo/);
  }));

test("a large written file is a resource link readable by its tenant only", () =>
  withClient(async (c) => {
    await c.listTools();
    const code = "open('big report é.csv', 'w').write('n,square\\n' + ''.join(f'{i},{i*i}\\n' for i in range(400)))\n" +
      "open('small.txt', 'w').write('tiny')";
    const r = await c.callTool({ name: "execute_code", arguments: { code, profile: "python.data_science" } });
    assert.equal(sc(r).status, "ok", JSON.stringify(sc(r).error));
    const big = sc(r).files.find((f) => f.path === "big report é.csv");
    const small = sc(r).files.find((f) => f.path === "small.txt");
    assert.equal(small.content, "tiny");
    assert.equal(big.content, null);
    assert.ok(big.uri.startsWith("sandbox://executions/"), big.uri);
    const link = r.content.find((b) => b.type === "resource_link");
    assert.equal(link.uri, big.uri);
    assert.equal(link.name, "big report é.csv");
    assert.equal(link.mimeType, "text/csv");
    assert.equal(link.size, big.bytes);
    await new Promise((done) => setTimeout(done, 200));
    const read = await c.readResource({ uri: big.uri });
    assert.equal(read.contents[0].uri, big.uri);
    assert.ok(read.contents[0].text.startsWith("n,square\n0,0\n1,1\n"));
    assert.equal(read.contents[0].text.length, big.bytes);
    const stranger = await httpClient(process.env.SP_OTHER_KEY);
    try {
      await assert.rejects(stranger.readResource({ uri: big.uri }), (e) => e.code === -32002);
    } finally {
      await stranger.close();
    }
  }));

test("a matplotlib figure comes back as a PNG image block", () =>
  withClient(async (c) => {
    const r = await c.callTool({ name: "execute_code", arguments: { profile: "python.data_science",
      code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])" } }, undefined, { timeout: 120_000 });
    assert.equal(sc(r).status, "ok");
    const image = r.content.find((b) => b.type === "image");
    assert.equal(image.mimeType, "image/png");
  }));

test("a subscription to a running execution hears it end", () =>
  withClient(async (c) => {
    const { ResourceUpdatedNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
    const updated = [];
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
    const created = await c.request({ method: "tools/call", params: { name: "execute_code",
      arguments: { code: "import time\ntime.sleep(1)" }, task: {} } },
      (await import("@modelcontextprotocol/sdk/types.js")).CreateTaskResultSchema);
    const uri = `sandbox://executions/${created.task.taskId}`;
    await c.subscribeResource({ uri });
    for (let i = 0; i < 100 && !updated.includes(uri); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(updated.includes(uri), JSON.stringify(updated));
  }));

test("a wrong API key is refused with 401", async () => {
  await assert.rejects(httpClient("wrong-key"), (e) => /401|Unauthorized/i.test(String(e?.code ?? "") + String(e)));
});

test("stdio: initialize, list tools, run code, close", async () => {
  const client = new Client({ name: "snakepit-interop-stdio", version: "1.0.0" }, { capabilities: {} });
  const transport = new StdioClientTransport({ command: STDIO[0], args: STDIO.slice(1), stderr: "ignore" });
  await client.connect(transport);
  const { tools } = await client.listTools();
  assert.equal(tools.length, TOOLS.length);
  const r = await client.callTool({ name: "execute_code", arguments: { code: "print(sum(range(10)))" } });
  assert.equal(sc(r).stdout, "45\n");
  await client.close();
});

// The SDK hands a notification to its handler a microtask after the read that brought it, but a
// response at once, and forgets the request's progress handler with it: a "done" read together with
// the answer was lost. Many short calls, each of whose last progress must arrive.
test("stdio: the last progress notification, done, arrives before every answer", async () => {
  const client = new Client({ name: "snakepit-interop-stdio", version: "1.0.0" }, { capabilities: {} });
  const transport = new StdioClientTransport({ command: STDIO[0], args: STDIO.slice(1), stderr: "ignore" });
  await client.connect(transport);
  try {
    for (let i = 0; i < 20; i++) {
      const seen = [];
      const r = await client.callTool({ name: "execute_code", arguments: { code: `print(${i})` } }, undefined,
        { onprogress: (p) => seen.push(p.message) });
      assert.equal(sc(r).stdout, `${i}\n`);
      assert.equal(seen.at(-1), "done", `call ${i}: ${JSON.stringify(seen)}`);
    }
  } finally {
    await client.close();
  }
});
