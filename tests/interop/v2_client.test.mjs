// tests/interop/v2_client.test.mjs — the official v2 TypeScript client (@modelcontextprotocol/client,
// pinned in package.json) against snakepit-mcp, in both eras: modern (pinned to MCP 2026-07-28: no
// handshake, _meta on every request) and legacy (initialize and a session, byte-identical to v1), over
// Streamable HTTP with an API key and over stdio. Each combination runs the same list: tools (the client
// validates structuredContent against each outputSchema), a plot, progress, cancellation, tasks,
// resources and subscriptions. Tasks use the official @modelcontextprotocol/ext-tasks client: over modern
// HTTP through its raw V2 dispatch (the core client refuses resultType "task"; ext-tasks asks the host for
// a raw request path, which is a few lines of fetch below), in legacy sessions through its 2025-11-25
// adapter. Run by run_interop.py, which starts the farm and passes where it is in the environment.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const URL_ = new URL(process.env.SP_URL);
const KEY = process.env.SP_KEY;
const STDIO = JSON.parse(process.env.SP_STDIO_CMD);
const TASKS = "io.modelcontextprotocol/tasks";
const ERAS = {
  modern: { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  legacy: { versionNegotiation: { mode: "legacy" } },
};
const sc = (r) => r.structuredContent;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connect(era, transport, extra = {}) {
  const client = new Client({ name: "snakepit-interop-v2", version: "1.0.0" }, { ...ERAS[era], ...extra });
  const t = transport === "http"
    ? new StreamableHTTPClientTransport(URL_, { requestInit: { headers: { Authorization: `Bearer ${KEY}` } } })
    : new StdioClientTransport({ command: STDIO[0], args: STDIO.slice(1), stderr: "ignore" });
  await client.connect(t);
  assert.equal(client.getProtocolEra(), era);
  return client;
}

async function withClient(era, transport, fn, extra) {
  const client = await connect(era, transport, extra);
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

// The host's raw request path for ext-tasks against a 2026-07-28 server over HTTP: one POST per request,
// with the standard headers the transport prescribes (MCP-Protocol-Version, Mcp-Method, Mcp-Name).
let rawIds = 0;
async function rawDispatch(request, options) {
  const body = { jsonrpc: "2.0", ...request, id: request.id ?? `raw-${++rawIds}` };
  const p = body.params ?? {};
  const headers = { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json",
    Accept: "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": body.method };
  const name = body.method === "tools/call" ? p.name : body.method.startsWith("tasks/") ? p.taskId : undefined;
  if (name) headers["Mcp-Name"] = name;
  const res = await fetch(URL_, { method: "POST", headers, body: JSON.stringify(body), signal: options?.signal });
  let msg;
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const events = (await res.text()).split("\n\n")
      .map((b) => b.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n"))
      .filter(Boolean).map((d) => JSON.parse(d));
    msg = events.find((m) => m.id !== undefined);
  } else {
    msg = await res.json();
  }
  return msg.error ? { kind: "error", error: msg.error } : { kind: "result", result: msg.result };
}

for (const era of ["modern", "legacy"]) {
  for (const transport of ["http", "stdio"]) {
    const name = `${era} ${transport}`;

    test(`${name}: tools are listed and every one answers within its outputSchema`, () =>
      withClient(era, transport, async (c) => {
        const { tools } = await c.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(),
          ["close_session", "create_session", "create_state_snapshot", "delete_state_snapshot",
            "execute_code", "fork_session", "get_execution", "get_sandbox_info", "get_usage",
            "list_executions", "list_sessions", "list_state_snapshots", "map_session", "restore_state_snapshot",
            "validate_code"]);
        const run = await c.callTool({ name: "execute_code", arguments: { code: "x = 21\nprint(x * 2)\nx + 1", inspect_variables: ["x"] } });
        assert.equal(run.isError, false);
        assert.equal(sc(run).stdout, "42\n");
        assert.equal(sc(run).result, "22");
        assert.deepEqual(sc(run).variables, { x: 21 });
        const err = await c.callTool({ name: "execute_code", arguments: { code: "def f():\n    1/0\nf()" } });
        assert.equal(err.isError, true);
        assert.match(err.content[0].text, /Traceback[\s\S]*ZeroDivisionError/);
        const val = await c.callTool({ name: "validate_code", arguments: { code: "import ctypes" } });
        assert.equal(sc(val).valid, false);
        const info = await c.callTool({ name: "get_sandbox_info", arguments: {} });
        assert.ok(sc(info).profiles.some((p) => p.name === "python.data_science"));
        const got = await c.callTool({ name: "get_execution", arguments: { execution_id: sc(run).execution_id } });
        assert.equal(sc(got).status, "ok");
        const list = await c.callTool({ name: "list_executions", arguments: { limit: 5 } });
        assert.ok(sc(list).executions.some((e) => e.execution_id === sc(run).execution_id));
        // the session tools' answers, validated against their outputSchemas by the client too
        const made = await c.callTool({ name: "create_session", arguments: { profile: "python.basic" } });
        const sid = sc(made).session_id;
        const cell = await c.callTool({ name: "execute_code", arguments: { session_id: sid, code: "y = 2\nprint(y)" } });
        assert.equal(sc(cell).stdout, "2\n");
        assert.equal(sc(cell).cell, 1);
        const listed = await c.callTool({ name: "list_sessions", arguments: {} });
        assert.ok(sc(listed).sessions.some((x) => x.session_id === sid));
        const closed = await c.callTool({ name: "close_session", arguments: { session_id: sid } });
        assert.equal(sc(closed).closed, true);
        const usage = await c.callTool({ name: "get_usage", arguments: { days: 1 } });
        assert.ok(sc(usage).days[0].executions >= 1 && sc(usage).days[0].sessions >= 1, JSON.stringify(sc(usage)));
      }));

    test(`${name}: a missing or mistyped argument is a tool result with isError naming it`, () =>
      withClient(era, transport, async (c) => {
        await c.listTools(); // the client checks structuredContent against outputSchema once it has them
        const missing = await c.callTool({ name: "execute_code", arguments: { source: "print(1)" } });
        assert.equal(missing.isError, true);
        assert.equal(missing.structuredContent, undefined);
        assert.match(missing.content[0].text, /`code` is required/);
        assert.match(missing.content[0].text, /`source` is not an argument[\s\S]*did you mean `code`/);
        const typed = await c.callTool({ name: "execute_code", arguments: { code: "1", timeout: "soon" } });
        assert.equal(typed.isError, true);
        assert.match(typed.content[0].text, /`timeout` must be a number[\s\S]*"soon" \(a string\)/);
        // an unknown tool stays a protocol error (tools §"Error Handling")
        await assert.rejects(c.callTool({ name: "no_such_tool", arguments: {} }), /unknown tool/i);
      }));

    test(`${name}: without a profile, pandas code runs in python.data_science and says why`, () =>
      withClient(era, transport, async (c) => {
        const r = await c.callTool({ name: "execute_code", arguments: { code: "import pandas as pd\nprint(pd.DataFrame({'a': [1, 2]}).a.sum())" } },
          { timeout: 120_000 });
        assert.equal(sc(r).status, "ok", JSON.stringify(sc(r).error));
        assert.equal(sc(r).stdout, "3\n");
        assert.equal(sc(r).profile, "python.data_science");
        assert.match(sc(r).profile_reason, /imports pandas/);
        assert.match(r.content[0].text, /profile: python\.data_science \(inferred from imports pandas\)/);
      }));

    test(`${name}: a matplotlib figure comes back as a PNG image block`, () =>
      withClient(era, transport, async (c) => {
        const r = await c.callTool({ name: "execute_code", arguments: { profile: "python.data_science",
          code: "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')" } }, { timeout: 120_000 });
        assert.equal(sc(r).status, "ok", JSON.stringify(sc(r).error));
        const image = r.content.find((b) => b.type === "image");
        assert.equal(image.mimeType, "image/png");
        assert.equal(Buffer.from(image.data, "base64").subarray(1, 4).toString(), "PNG");
        assert.equal(sc(r).images.length, 1);
      }));

    test(`${name}: progress arrives for a call with a progress token, output included`, () =>
      withClient(era, transport, async (c) => {
        const seen = [];
        const r = await c.callTool({ name: "execute_code", arguments: {
          code: "import time\nprint('first', flush=True)\ntime.sleep(0.3)\nprint('second')" } },
        { onprogress: (p) => seen.push(p) });
        assert.equal(sc(r).status, "ok");
        const messages = seen.map((p) => p.message);
        assert.equal(messages[0], "queued");
        assert.ok(messages.includes("stdout: first\n"), JSON.stringify(messages));
        // the last one is "done", over stdio too: the answer waits until the client has read it
        assert.equal(messages.at(-1), "done");
        for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress);
      }));

    test(`${name}: aborting a call cancels its job`, () =>
      withClient(era, transport, async (c) => {
        const ac = new AbortController();
        const marker = `cancel-${era}-${transport}-${Date.now()}`;
        const p = c.callTool({ name: "execute_code", arguments: { code: `# ${marker}\nwhile True: pass`, timeout: 60 } },
          { signal: ac.signal, onprogress: () => {} });
        await sleep(700);
        ac.abort("user pressed stop");
        await assert.rejects(p);
        let status;
        for (let i = 0; i < 100 && status !== "cancelled"; i++) {
          const list = await c.callTool({ name: "list_executions", arguments: { limit: 10 } });
          const mine = [];
          for (const e of sc(list).executions) {
            const rec = await c.callTool({ name: "get_execution", arguments: { execution_id: e.execution_id } });
            if ((sc(rec).code ?? "").includes(marker)) mine.push(sc(rec).status);
          }
          status = mine[0];
          if (status !== "cancelled") await sleep(100);
        }
        assert.equal(status, "cancelled");
      }));

    test(`${name}: resources and prompts`, () =>
      withClient(era, transport, async (c) => {
        const { resources } = await c.listResources();
        assert.ok(resources.some((r) => r.uri === "sandbox://info"));
        const info = await c.readResource({ uri: "sandbox://info" });
        assert.ok(JSON.parse(info.contents[0].text).profiles.length >= 1);
        const run = await c.callTool({ name: "execute_code", arguments: { code: "print('rec')" } });
        const rec = await c.readResource({ uri: `sandbox://executions/${sc(run).execution_id}` });
        assert.equal(JSON.parse(rec.contents[0].text).status, "ok");
        await assert.rejects(c.readResource({ uri: "sandbox://executions/00000000-0000-7000-8000-000000000000" }));
        const p = await c.getPrompt({ name: "write_sandbox_code", arguments: { task: "add numbers" } });
        assert.match(p.messages[0].content.text, /add numbers/);
        const comp = await c.complete({ ref: { type: "ref/prompt", name: "write_sandbox_code" },
          argument: { name: "profile", value: "py" } });
        assert.ok(comp.completion.values.includes("python.basic"));
      }));

    test(`${name}: a subscription to an execution hears it end`, () =>
      withClient(era, transport, async (c) => {
        const updated = [];
        c.setNotificationHandler("notifications/resources/updated", (n) => { updated.push(n.params.uri); });
        // a task-free way to learn a running execution's id: start it, find it in the list
        const marker = `sub-${era}-${transport}-${Date.now()}`;
        const call = c.callTool({ name: "execute_code", arguments: { code: `# ${marker}\nimport time\ntime.sleep(1.5)` } });
        let id;
        for (let i = 0; i < 100 && !id; i++) {
          const list = await c.callTool({ name: "list_executions", arguments: { limit: 5, status: "queued" } });
          for (const e of sc(list).executions) {
            const rec = await c.callTool({ name: "get_execution", arguments: { execution_id: e.execution_id } });
            if ((sc(rec).code ?? "").includes(marker)) id = e.execution_id;
          }
          if (!id) await sleep(50);
        }
        assert.ok(id, "the running execution was not found");
        const uri = `sandbox://executions/${id}`;
        let sub;
        if (era === "modern") {
          sub = await c.listen({ resourceSubscriptions: [uri] });
          assert.deepEqual(sub.honoredFilter.resourceSubscriptions, [uri]);
        } else {
          await c.subscribeResource({ uri });
        }
        await call;
        for (let i = 0; i < 100 && !updated.includes(uri); i++) await sleep(50);
        assert.ok(updated.includes(uri), `no resources/updated for ${uri}: ${JSON.stringify(updated)}`);
        if (sub) await sub.close();
      }));
  }
}

test("modern http: a long call becomes a task (tasks extension), polled to its result with the ext-tasks client", async () => {
  const caps = { extensions: { [TASKS]: {} } };
  const client = await connect("modern", "http", { capabilities: caps });
  const session = createTaskSessionFromClient(client, { endpointId: "snakepit-interop", rawDispatch,
    v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo: { name: "snakepit-interop-v2", version: "1.0.0" },
      clientCapabilities: caps } });
  try {
    const execution = await session.callTool("execute_code", { code: "import time\ntime.sleep(3)\nprint('late')" });
    const { outcome } = await execution.settle();
    assert.equal(outcome.status, "completed");
    assert.ok(outcome.task?.taskId, "the call should have become a task");
    assert.equal(sc(resultFromTaskOutcome(outcome)).stdout, "late\n");
  } finally {
    await session.close();
    await client.close();
  }
});

test("modern http: a task can be cancelled, and a listen stream hears its status", async () => {
  const caps = { extensions: { [TASKS]: {} } };
  const client = await connect("modern", "http", { capabilities: caps });
  try {
    const created = await rawDispatch({ method: "tools/call", params: { name: "execute_code",
      arguments: { code: "while True: pass", timeout: 60 }, _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps } } });
    assert.equal(created.result.resultType, "task");
    const id = created.result.taskId;
    const heard = [];
    // notifications/tasks belongs to the extension: the client takes any params (a Standard Schema)
    const anyParams = { "~standard": { version: 1, vendor: "snakepit-tests", validate: (value) => ({ value }) } };
    client.setNotificationHandler("notifications/tasks", { params: anyParams }, (params) => { heard.push(params.status); });
    const sub = await client.listen({ taskIds: [id] });
    const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps };
    const ack = await rawDispatch({ method: "tasks/cancel", params: { taskId: id, _meta: meta } });
    assert.deepEqual(Object.keys(ack.result).filter((k) => k !== "_meta"), ["resultType"]);
    let task;
    for (let i = 0; i < 100; i++) {
      task = (await rawDispatch({ method: "tasks/get", params: { taskId: id, _meta: meta } })).result;
      if (task.status === "cancelled" && heard.includes("cancelled")) break;
      await sleep(100);
    }
    assert.equal(task.status, "cancelled");
    assert.ok(heard.includes("cancelled"), JSON.stringify(heard));
    await sub.close();
  } finally {
    await client.close();
  }
});

for (const transport of ["http", "stdio"]) {
  test(`legacy ${transport}: a task-augmented call runs as a 2025-11-25 task (ext-tasks client)`, async () => {
    const client = await connect("legacy", transport);
    const session = createTaskSessionFromClient(client, { endpointId: `snakepit-legacy-${transport}` });
    try {
      const execution = await session.callTool("execute_code", { code: "print('tasked')" });
      const { outcome } = await execution.settle();
      assert.equal(outcome.status, "completed");
      assert.equal(sc(resultFromTaskOutcome(outcome)).stdout, "tasked\n");
    } finally {
      await session.close();
      await client.close();
    }
  });
}
