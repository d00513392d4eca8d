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

test("tools/list has the five tools with input and output schemas", () =>
  withClient(async (c) => {
    const { tools } = await c.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(),
      ["execute_code", "get_execution", "get_sandbox_info", "list_executions", "validate_code"]);
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
    const val = await c.callTool({ name: "validate_code", arguments: { code: "import os" } });
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

test("resources, prompts and completion", () =>
  withClient(async (c) => {
    const { resources } = await c.listResources();
    assert.ok(resources.some((r) => r.uri === "sandbox://info"));
    const info = await c.readResource({ uri: "sandbox://info" });
    assert.ok(JSON.parse(info.contents[0].text).profiles.length >= 1);
    const { resourceTemplates } = await c.listResourceTemplates();
    assert.equal(resourceTemplates[0].uriTemplate, "sandbox://executions/{id}");
    const p = await c.getPrompt({ name: "write_sandbox_code", arguments: { task: "add numbers" } });
    assert.match(p.messages[0].content.text, /add numbers/);
    const comp = await c.complete({ ref: { type: "ref/prompt", name: "write_sandbox_code" },
      argument: { name: "profile", value: "py" } });
    assert.ok(comp.completion.values.includes("python.basic"));
    await c.setLoggingLevel("info");
    await c.ping();
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
  assert.equal(tools.length, 5);
  const r = await client.callTool({ name: "execute_code", arguments: { code: "print(sum(range(10)))" } });
  assert.equal(sc(r).stdout, "45\n");
  await client.close();
});
