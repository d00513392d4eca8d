// bench/sdk_driver.mjs — the farm and a fresh interpreter per call, side by side, seen by a driver
// that shares no code with snakepit: the official MCP TypeScript SDK client (its v1 Client and
// StreamableHTTPClientTransport, as pinned in tests/interop/package.json) calling execute_code,
// and node:child_process spawning `python3 -I bench/subprocess_worker.py` with the same JSON
// envelope the old sandbox servers used (bench/spawn_load.c's variant (c)).
//
//   node bench/sdk_driver.mjs --url URL --key KEY --farm-pid PID [--concurrency 8] [--seconds 3]
//        [--rounds 3] [--code 'print(1)'] [--modules DIR]
//
// Windows alternate, farm then fresh interpreter, --rounds times, each --seconds long after a
// warm-up: closed loops of --concurrency calls in flight (one SDK Client, so one MCP session, per
// loop). A call counts when it answered ok: isError false and status "ok" for the farm, exit 0
// and {"status": "ok"} for the interpreter. CPU per call: the farm's process tree (every process
// under --farm-pid, from /proc) and, for the interpreters, the driver's reaped children
// (cutime + cstime of /proc/self/stat); the driver's own CPU is printed apart and counted on
// neither side. One JSON line per window, then a summary line: the medians, and the ratio farm
// over interpreter of ok/s and of CPU per call, pair by pair (the machine's speed drifts).
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

function args() {
  const a = { concurrency: 8, seconds: 3, rounds: 3, warmup: 0.5, code: "print(1)",
    python: "/usr/bin/python3", modules: join(HERE, "..", "tests", "interop") };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; i += 2) {
    const k = v[i].replace(/^--/, "").replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(k in a) && !["url", "key", "farmPid"].includes(k)) throw new Error(`unknown option ${v[i]}`);
    a[k] = typeof a[k] === "number" ? Number(v[i + 1]) : v[i + 1];
  }
  if (!a.url || !a.key || !a.farmPid) throw new Error("--url, --key and --farm-pid are required");
  return a;
}

const A = args();
// the SDK as tests/interop installs it (`make test-interop`'s npm ci): required in its CommonJS
// build, since an ES import resolves packages only from the importing file's own folders
const req = createRequire(join(A.modules, "package.json"));
const { Client } = req("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = req("@modelcontextprotocol/sdk/client/streamableHttp.js");

const TICK = 100; // USER_HZ: /proc's clock ticks, on every Linux this runs on
function procStat(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
  return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / TICK, ccpu: (Number(f[13]) + Number(f[14])) / TICK };
}

// CPU seconds of pid and every process under it: their own time and what they reaped
function treeCpu(root) {
  const kids = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const { ppid } = procStat(d);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch { /* gone meanwhile */ }
  }
  let total = 0;
  const todo = [Number(root)];
  while (todo.length) {
    const p = todo.pop();
    try {
      const s = procStat(p);
      total += s.cpu + s.ccpu;
    } catch { continue; }
    todo.push(...(kids.get(p) || []));
  }
  return total;
}

function driverCpu() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function pct(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null;
}

// One closed-loop window of `call` at the concurrency; counts answers from warm-up's end.
async function window(call, cpu) {
  const start = performance.now(), from = start + A.warmup * 1000, until = from + A.seconds * 1000;
  let ok = 0, errors = 0, firstError = null, cpu0 = null, drv0 = null;
  const lat = [];
  const counting = () => setTimeout(() => { cpu0 = cpu(); drv0 = driverCpu(); }, A.warmup * 1000);
  counting();
  async function loop(i) {
    const ctx = await call.open(i);
    try {
      while (performance.now() < until) {
        const t0 = performance.now();
        const r = await call.once(ctx).catch((e) => ({ ok: false, why: String(e) }));
        const t1 = performance.now();
        if (t0 < from) continue;
        if (r.ok) { ok++; lat.push(t1 - t0); } else { errors++; firstError ??= r.why; }
      }
    } finally {
      await call.close(ctx);
    }
  }
  await Promise.all(Array.from({ length: A.concurrency }, (_, i) => loop(i)));
  const cpu1 = cpu(), drv1 = driverCpu();
  lat.sort((a, b) => a - b);
  const n = ok + errors;
  return { ok, errors, first_error: firstError, ok_per_s: +(ok / A.seconds).toFixed(1),
    p50_ms: +pct(lat, 0.5)?.toFixed(3), p90_ms: +pct(lat, 0.9)?.toFixed(3),
    cpu_ms_per_call: n ? +(((cpu1 - cpu0) / n) * 1e3).toFixed(3) : null,
    driver_cpu_ms_per_call: n ? +(((drv1 - drv0) / n) * 1e3).toFixed(3) : null };
}

const farm = {
  async open() {
    const client = new Client({ name: "snakepit-bench-sdk", version: "1.0.0" }, { capabilities: {} });
    const transport = new StreamableHTTPClientTransport(new URL(A.url), {
      requestInit: { headers: { Authorization: `Bearer ${A.key}` } },
    });
    await client.connect(transport);
    return client;
  },
  async once(client) {
    const r = await client.callTool({ name: "execute_code", arguments: { code: A.code } });
    const ok = r.isError === false && r.structuredContent?.status === "ok";
    return { ok, why: ok ? null : JSON.stringify(r).slice(0, 300) };
  },
  close: (client) => client.close(),
};

const WORKER = join(HERE, "subprocess_worker.py");
const ENVELOPE = JSON.stringify({ code: A.code, timeout: 30, memory_mb: 256 });
const fresh = {
  open: async () => null,
  once: () => new Promise((resolve) => {
    const p = spawn(A.python, ["-I", WORKER], { stdio: ["pipe", "pipe", "ignore"] });
    let out = "";
    p.stdout.on("data", (d) => { out += d; });
    p.on("error", (e) => resolve({ ok: false, why: String(e) }));
    p.on("close", (code) => {
      let status = null;
      try { status = JSON.parse(out).status; } catch { /* not JSON */ }
      resolve({ ok: code === 0 && status === "ok", why: `exit ${code}: ${out.slice(0, 200)}` });
    });
    p.stdin.end(ENVELOPE);
  }),
  close: async () => {},
};

function median(v) {
  const s = v.filter((x) => x != null && Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : null;
}

const farmCpu = () => treeCpu(A.farmPid);
const freshCpu = () => procStat("self").ccpu;
const pairs = [];
for (let r = 0; r < A.rounds; r++) {
  const f = await window(farm, farmCpu);
  console.log(JSON.stringify({ round: r, variant: "farm (MCP SDK client)", concurrency: A.concurrency, code: A.code, ...f }));
  const p = await window(fresh, freshCpu);
  console.log(JSON.stringify({ round: r, variant: "fresh interpreter per call", concurrency: A.concurrency, code: A.code, ...p }));
  pairs.push({ farm: f, fresh: p,
    ok_ratio: p.ok_per_s ? f.ok_per_s / p.ok_per_s : null,
    cpu_ratio: f.cpu_ms_per_call ? p.cpu_ms_per_call / f.cpu_ms_per_call : null });
}
const m = (side, k) => median(pairs.map((x) => x[side][k]));
console.log(JSON.stringify({
  summary: true, concurrency: A.concurrency, code: A.code, rounds: A.rounds, seconds: A.seconds,
  farm: { ok_per_s: m("farm", "ok_per_s"), p50_ms: m("farm", "p50_ms"), cpu_ms_per_call: m("farm", "cpu_ms_per_call"),
    driver_cpu_ms_per_call: m("farm", "driver_cpu_ms_per_call"), errors: pairs.reduce((s, x) => s + x.farm.errors, 0) },
  fresh: { ok_per_s: m("fresh", "ok_per_s"), p50_ms: m("fresh", "p50_ms"), cpu_ms_per_call: m("fresh", "cpu_ms_per_call"),
    driver_cpu_ms_per_call: m("fresh", "driver_cpu_ms_per_call"), errors: pairs.reduce((s, x) => s + x.fresh.errors, 0) },
  farm_over_fresh_ok_per_s: +median(pairs.map((x) => x.ok_ratio))?.toFixed(2),
  fresh_over_farm_cpu_per_call: +median(pairs.map((x) => x.cpu_ratio))?.toFixed(2),
}));
