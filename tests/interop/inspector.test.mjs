// tests/interop/inspector.test.mjs — the MCP Inspector's one-shot CLI (@modelcontextprotocol/inspector,
// pinned in package.json) against snakepit-mcp, as a new user would try it: in both protocol eras
// (--protocol-era modern: MCP 2026-07-28, discovered with server/discover; legacy: initialize), over
// Streamable HTTP with an API key and over stdio. tools/list --strict must find nothing unportable in any
// input or output schema (no errors, no warnings); a tool call, a plot, a tool error (exit 5), resources,
// prompts and completion work. (The one-shot CLI has no tasks, progress or subscriptions; the SDK tests
// cover those.) Run by run_interop.py.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NODE = process.execPath;
const CLI = path.join(HERE, "node_modules", "@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js");
const STDIO = JSON.parse(process.env.SP_STDIO_CMD);

function inspect(era, transport, args) {
  // the target comes first: options such as --prompt-args take every value that follows them
  const target = transport === "http"
    ? [process.env.SP_URL, "--transport", "http", "--header", `Authorization: Bearer ${process.env.SP_KEY}`]
    : [STDIO[0], "--transport", "stdio"];
  const tail = transport === "stdio" ? ["--", ...STDIO.slice(1)] : [];
  const r = spawnSync(NODE, [CLI, "--cli", ...target, "--protocol-era", era, "--format", "json", ...args, ...tail],
    { encoding: "utf8", timeout: 120_000 });
  let out = null;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    /* the failure is in stderr */
  }
  return { status: r.status, out, stderr: r.stderr };
}

for (const era of ["modern", "legacy"]) {
  for (const transport of ["http", "stdio"]) {
    const name = `inspector ${era} ${transport}`;

    test(`${name}: tools/list --strict finds every schema portable`, () => {
      const r = inspect(era, transport, ["--method", "tools/list", "--strict"]);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.out.result.tools.length, 15); // 6 of main's (get_usage too), 9 of sessions and snapshots
      assert.equal(r.out.schemaFindings, undefined, JSON.stringify(r.out.schemaFindings));
      assert.doesNotMatch(r.stderr, /warning|error/i);
    });

    test(`${name}: execute_code, with a plot`, () => {
      const ok = inspect(era, transport, ["--method", "tools/call", "--tool-name", "execute_code",
        "--tool-args-json", JSON.stringify({ code: "print(6 * 7)" })]);
      assert.equal(ok.status, 0, ok.stderr);
      assert.equal(ok.out.result.structuredContent.stdout, "42\n");
      const plot = inspect(era, transport, ["--method", "tools/call", "--tool-name", "execute_code",
        "--tool-args-json", JSON.stringify({ profile: "python.data_science",
          code: "import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 5])" })]);
      assert.equal(plot.status, 0, plot.stderr);
      assert.ok(plot.out.result.content.some((b) => b.type === "image" && b.mimeType === "image/png"));
    });

    test(`${name}: a failing run is a tool error, with its traceback in the text`, () => {
      const r = inspect(era, transport, ["--method", "tools/call", "--tool-name", "execute_code",
        "--tool-args-json", JSON.stringify({ code: "raise ValueError('nope')" })]);
      assert.equal(r.status, 5, r.stderr); // the CLI's exit status for isError
      assert.match(r.out.result.content[0].text, /Traceback[\s\S]*ValueError: nope/);
    });

    test(`${name}: resources, prompts`, () => {
      const res = inspect(era, transport, ["--method", "resources/read", "--uri", "sandbox://info"]);
      assert.equal(res.status, 0, res.stderr);
      assert.ok(JSON.parse(res.out.result.contents[0].text).profiles.length >= 1);
      const tpl = inspect(era, transport, ["--method", "resources/templates/list"]);
      assert.equal(tpl.out.result.resourceTemplates[0].uriTemplate, "sandbox://executions/{id}");
      const p = inspect(era, transport, ["--method", "prompts/get", "--prompt-name", "write_sandbox_code",
        "--prompt-args", "task=sum a list"]);
      assert.equal(p.status, 0, p.stderr);
      assert.match(p.out.result.messages[0].content.text, /sum a list/);
    });
  }
}
