// tests/interop/compat_eras.test.mjs — the drop-in endpoints in both protocol eras, as /mcp has them: the
// official v2 client (@modelcontextprotocol/client) pinned to MCP 2026-07-28 (server/discover, no handshake,
// _meta on every request) and in legacy mode drives each /mcp/compat/NAME over HTTP with an API key, and
// snakepit-mcp --stdio --compat NAME; each replaced server's documented example answers in that server's shape (the client
// validates structuredContent against the outputSchema). The Inspector CLI's tools/list --strict finds
// nothing unportable on any drop-in endpoint in either era, and a legacy session from /mcp is refused on a
// drop-in endpoint (it belongs to the endpoint that opened it). Run by run_interop.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const BASE = process.env.SP_URL;
const KEY = process.env.SP_KEY;
const STDIO = JSON.parse(process.env.SP_STDIO_CMD);
const HERE = path.dirname(fileURLToPath(import.meta.url));
const INSPECTOR = path.join(HERE, "node_modules", "@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js");
const ERAS = {
  modern: { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  legacy: { versionNegotiation: { mode: "legacy" } },
};
const json = (r) => JSON.parse(r.content[0].text);

// Each replaced server's tools and one of its own documented examples, with what that server documents it answers.
const SERVERS = {
  "python-sandbox": {
    tools: ["execute_code", "validate_code", "get_sandbox_info"],
    call: ["execute_code", { code: "result = 2 + 2\nprint(f'The answer is: {result}')", timeout: 10, capture_output: true }],
    check: (r) => {
      assert.deepEqual(json(r), r.structuredContent);
      assert.deepEqual([r.structuredContent.success, r.structuredContent.result, r.structuredContent.stdout],
        [true, 4, "The answer is: 4\n"]);
    },
  },
  "py-sandbox": {
    tools: ["run_python"],
    call: ["run_python", { code: "x = 42; y = [1, 2, 3]", inspect_variables: ["x", "y"] }],
    check: (r) => {
      assert.deepEqual(json(r), r.structuredContent);
      assert.deepEqual(r.structuredContent.variables, { x: 42, y: [1, 2, 3] });
      assert.equal(r.structuredContent.return_code, 0);
    },
  },
  "secure-sandbox": {
    tools: ["run_sandbox_code", "validate_json_data", "validate_csv_data", "create_state_snapshot",
      "restore_state_snapshot", "list_state_snapshots", "delete_state_snapshot", "get_sandbox_metrics"],
    call: ["validate_json_data", { data: { id: 1, name: "Ann" }, schema_name_or_dict: "user" }],
    check: (r) => {
      assert.deepEqual(json(r), r.structuredContent);
      assert.equal(r.structuredContent.valid, false);
    },
  },
  "exec-sandbox": {
    tools: ["execute_python", "check_environment", "validate_script"],
    call: ["execute_python", { script: "print('hello world')" }],
    check: (r) => {
      assert.match(r.content[0].text, /^--- stdout ---\nhello world\n\n--- exit_code: 0 ---\n--- duration_ms: \d+ ---$/);
      assert.equal(r.structuredContent.exit_code, 0);
    },
  },
  "code-sandbox": {
    tools: ["check_syntax", "test_code"],
    call: ["test_code", { code: "print('Hello, world!')\nx = 1 / 0", timeout: 10, memory_limit_mb: 50 }],
    check: (r) => assert.deepEqual(json(r), { stdout: "Hello, world!\n", stderr: "ZeroDivisionError: division by zero\n",
      exit_code: 1, phase: "execution", platform_warning: "" }),
  },
};

// What each server replaced declared: tools and logging, and secure-sandbox its resources and prompts.
const capabilities = (name) => (name === "secure-sandbox" ? ["logging", "prompts", "resources", "tools"] : ["logging", "tools"]);

async function withClient(era, name, transport, fn) {
  const client = new Client({ name: "snakepit-compat-eras", version: "1.0.0" }, ERAS[era]);
  await client.connect(transport === "http"
    ? new StreamableHTTPClientTransport(new URL(`${BASE}/compat/${name}`), { requestInit: { headers: { Authorization: `Bearer ${KEY}` } } })
    : new StdioClientTransport({ command: STDIO[0], args: [...STDIO.slice(1), "--compat", name], stderr: "ignore" }));
  try {
    assert.equal(client.getProtocolEra(), era);
    return await fn(client);
  } finally {
    await client.close();
  }
}

for (const [name, server] of Object.entries(SERVERS)) {
  for (const era of ["modern", "legacy"]) {
    test(`${name} ${era} http: the server's tools, and its example in its shape`, () =>
      withClient(era, name, "http", async (c) => {
        assert.deepEqual(Object.keys(c.getServerCapabilities()).sort(), capabilities(name));
        assert.ok(server.tools.some((t) => c.getInstructions().includes(t)), c.getInstructions());
        const { tools } = await c.listTools();
        assert.deepEqual(tools.map((t) => t.name), server.tools);
        assert.ok(tools.every((t) => t.execution === undefined || era === "legacy"));
        const r = await c.callTool({ name: server.call[0], arguments: server.call[1] }, { timeout: 120_000 });
        assert.equal(r.isError, false);
        server.check(r);
      }));
  }
}

const SECURE_RESOURCES = ["sandbox://status", "sandbox://logs", "sandbox://schemas"];
const SECURE_PROMPTS = ["generate_secure_script", "diagnose_validation_error"];

for (const era of ["modern", "legacy"]) {
  test(`secure-sandbox ${era} http: its own resources and prompts, and none of /mcp's`, () =>
    withClient(era, "secure-sandbox", "http", async (c) => {
      const { resources } = await c.listResources();
      assert.deepEqual(resources.map((r) => r.uri), SECURE_RESOURCES);
      for (const uri of SECURE_RESOURCES) {
        const { contents } = await c.readResource({ uri });
        assert.equal(contents[0].uri, uri);
        assert.equal(contents[0].mimeType, "application/json");
        assert.equal(typeof JSON.parse(contents[0].text), "object");
      }
      const schemas = JSON.parse((await c.readResource({ uri: "sandbox://schemas" })).contents[0].text);
      assert.deepEqual(Object.keys(schemas.schemas).sort(), ["config", "dataset", "user"]);
      await assert.rejects(c.readResource({ uri: "sandbox://info" }));
      const { prompts } = await c.listPrompts();
      assert.deepEqual(prompts.map((p) => p.name), SECURE_PROMPTS);
      const p = await c.getPrompt({ name: "generate_secure_script", arguments: { task_description: "count the words in notes.txt" } });
      assert.equal(p.messages[0].role, "user");
      assert.match(p.messages[0].content.text, /count the words in notes\.txt/);
      const d = await c.getPrompt({ name: "diagnose_validation_error", arguments: { data: "{\"id\": 0}", schema_name: "user" } });
      assert.match(d.messages[0].content.text, /"email"/);
    }));

  test(`py-sandbox ${era} http: a tools-only server has no resources or prompts`, () =>
    withClient(era, "py-sandbox", "http", async (c) => {
      assert.equal(c.getServerCapabilities().resources, undefined);
      assert.equal(c.getServerCapabilities().prompts, undefined);
      // the client does not ask a server for what it did not declare (an empty list), or asks and is
      // refused (-32601): either way none of /mcp's items come through
      const none = async (p, key) => {
        const r = await p.then((x) => x, (e) => e);
        if (r instanceof Error) assert.ok(r.code === -32601 || /not support|capabilit|method not found/i.test(String(r.message)), String(r));
        else assert.deepEqual(r[key], [], JSON.stringify(r));
      };
      await none(c.listResources(), "resources");
      await none(c.listPrompts(), "prompts");
      await none(c.readResource({ uri: "sandbox://info" }), "contents");
    }));
}

test("code-sandbox modern stdio: --compat serves 2026-07-28 too", () =>
  withClient("modern", "code-sandbox", "stdio", async (c) => {
    assert.deepEqual(Object.keys(c.getServerCapabilities()).sort(), ["logging", "tools"]);
    const { tools } = await c.listTools();
    assert.deepEqual(tools.map((t) => t.name), SERVERS["code-sandbox"].tools);
    SERVERS["code-sandbox"].check(await c.callTool({ name: "test_code", arguments: SERVERS["code-sandbox"].call[1] }));
  }));

test("a 2026-07-28 result on a drop-in endpoint carries resultType and names the server it stands in for", async () => {
  const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "run_python", arguments: { code: "print(1)" },
    _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } } };
  const r = await fetch(`${BASE}/compat/py-sandbox`, { method: "POST", body: JSON.stringify(body), headers: {
    "Content-Type": "application/json", Accept: "application/json, text/event-stream", Authorization: `Bearer ${KEY}`,
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "run_python" } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("mcp-session-id"), null);
  const { result } = await r.json();
  assert.equal(result.resultType, "complete");
  assert.equal(result._meta["io.modelcontextprotocol/serverInfo"].title, "snakepit, as py-sandbox");
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
});

test("a legacy session from /mcp is not found on a drop-in endpoint", async () => {
  const client = new Client({ name: "snakepit-compat-eras", version: "1.0.0" }, ERAS.legacy);
  const transport = new StreamableHTTPClientTransport(new URL(BASE), { requestInit: { headers: { Authorization: `Bearer ${KEY}` } } });
  await client.connect(transport);
  try {
    const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
      Authorization: `Bearer ${KEY}`, "Mcp-Session-Id": transport.sessionId, "MCP-Protocol-Version": "2025-11-25" };
    const body = JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" });
    const there = await fetch(`${BASE}/compat/code-sandbox`, { method: "POST", headers, body });
    assert.equal(there.status, 404);
    const err = await there.json();
    assert.equal(err.id, 7);
    assert.match(err.error.message, /opened on \/mcp;/);
    assert.equal((await fetch(BASE, { method: "POST", headers, body })).status, 200); // still valid where it was opened
  } finally {
    await client.close();
  }
});

for (const era of ["modern", "legacy"]) {
  test(`inspector ${era}: tools/list --strict finds every drop-in endpoint's schemas portable`, () => {
    for (const name of Object.keys(SERVERS)) {
      const r = spawnSync(process.execPath, [INSPECTOR, "--cli", `${BASE}/compat/${name}`, "--transport", "http",
        "--header", `Authorization: Bearer ${KEY}`, "--protocol-era", era, "--format", "json", "--method", "tools/list",
        "--strict"], { encoding: "utf8", timeout: 120_000 });
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.deepEqual(out.result.tools.map((t) => t.name), SERVERS[name].tools);
      assert.equal(out.schemaFindings, undefined, `${name}: ${JSON.stringify(out.schemaFindings)}`);
      assert.doesNotMatch(r.stderr, /warning|error/i, name);
    }
  });
}
