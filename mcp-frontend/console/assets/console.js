/* The console's script: one page, a view per location hash (#/executions, #/run, ...). Every
 * piece of data comes from the tenant's own tools, called through /console/api/tools/NAME with
 * the sign-in's cookie and CSRF token. What a record holds is written into the page as text
 * (textContent), never as markup; HTML outputs go into frames sandboxed without scripts. */
"use strict";

const STATUSES = ["ok", "error", "syntax_error", "timeout", "cpu_limit", "memory_limit",
  "output_limit", "security_violation", "cancelled", "rejected", "lost", "internal_error"];
const PAGE_SIZE = 20;

let me = null;       /* {tenant, csrf, expires_ms, may_rotate_key} once signed in */
let profiles = null; /* names the farm serves (get_sandbox_info), fetched once */

/* ---- building the page: text is always text */

function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") n.className = v;
    else if (k === "text") n.textContent = v;
    else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    n.append(kid instanceof Node ? kid : String(kid));
  }
  return n;
}

function pageRoot() { return document.getElementById("page"); }

function show(...nodes) {
  const root = pageRoot();
  root.replaceChildren(...nodes);
}

function fmtMs(ms) {
  if (ms === null || ms === undefined || ms === "") return "–";
  const n = Number(ms);
  return n >= 1000 ? (n / 1000).toFixed(2) + " s" : (n >= 10 ? Math.round(n) : n.toFixed(1)) + " ms";
}

function fmtTime(ms) {
  if (!ms) return "–";
  const d = new Date(Number(ms));
  return isNaN(d) ? String(ms) : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function statusBadge(st) {
  return el("span", {class: "status status-" + String(st).replace(/[^a-z_]/g, ""), text: st});
}

function facts(pairs) {
  const dl = el("dl", {class: "facts"});
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === "") continue;
    dl.append(el("dt", {text: k}), el("dd", {}, v instanceof Node ? v : String(v)));
  }
  return dl;
}

function errorBox(msg) { return el("p", {class: "error", role: "alert", text: msg}); }

function busy(text) { return el("p", {}, el("span", {class: "spinner", "aria-hidden": "true"}), text); }

/* ---- talking to the front-end */

class SignedOut extends Error {}

async function request(path, opts) {
  const r = await fetch(path, Object.assign({credentials: "same-origin", cache: "no-store"}, opts));
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (r.status === 401 && path !== "/console/signin") { signedOut(body && body.error); throw new SignedOut(); }
  return {status: r.status, body};
}

function post(path, payload) {
  return request(path, {method: "POST", headers: {"Content-Type": "application/json",
    "X-CSRF-Token": me ? me.csrf : ""}, body: JSON.stringify(payload || {})});
}

/* A tool's answer: {result (structuredContent), content, isError, text} or throws with why. */
async function tool(name, args) {
  const {status, body} = await post("/console/api/tools/" + name, args);
  if (body && body.result) {
    const res = body.result;
    const text = (res.content || []).filter(b => b.type === "text").map(b => b.text).join("\n");
    return {result: res.structuredContent || null, content: res.content || [], isError: !!res.isError, text};
  }
  const why = body && body.error ? (body.error.message || body.error) : "HTTP " + status;
  throw new Error(typeof why === "string" ? why : JSON.stringify(why));
}

/* The same as tool(), reading the call's progress as it comes (an SSE stream of JSON-RPC
 * messages: notifications/progress, then the response); onProgress(message) for each. */
async function toolStream(name, args, onProgress) {
  const r = await fetch("/console/api/tools/" + name, {method: "POST", credentials: "same-origin", cache: "no-store",
    headers: {"Content-Type": "application/json", "Accept": "text/event-stream, application/json", "X-CSRF-Token": me ? me.csrf : ""},
    body: JSON.stringify(args)});
  if (r.status === 401) { signedOut(); throw new SignedOut(); }
  let final = null;
  if ((r.headers.get("Content-Type") || "").startsWith("text/event-stream") && r.body) {
    const reader = r.body.getReader(), dec = new TextDecoder();
    let pending = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      pending += dec.decode(value, {stream: true});
      let cut;
      while ((cut = pending.indexOf("\n\n")) >= 0) {
        const block = pending.slice(0, cut);
        pending = pending.slice(cut + 2);
        const data = block.split("\n").filter(l => l.startsWith("data:")).map(l => l.slice(5).trimStart()).join("\n");
        if (!data) continue;
        const msg = JSON.parse(data);
        if (msg.method === "notifications/progress") onProgress(String((msg.params || {}).message || ""));
        else if (msg.id !== undefined) final = msg;
      }
    }
  } else {
    try { final = await r.json(); } catch (e) { final = null; }
  }
  if (final && final.result) {
    const res = final.result;
    const text = (res.content || []).filter(b => b.type === "text").map(b => b.text).join("\n");
    return {result: res.structuredContent || null, content: res.content || [], isError: !!res.isError, text};
  }
  const why = final && final.error ? (final.error.message || final.error) : "HTTP " + r.status;
  throw new Error(typeof why === "string" ? why : JSON.stringify(why));
}

/* Must not fail for a refusal: tool() answers, the caller shows isError's text. */
async function toolOk(name, args) {
  const r = await tool(name, args);
  if (!r.result) throw new Error(r.text || name + " failed");
  return r.result;
}

async function servedProfiles() {
  if (profiles) return profiles;
  try {
    const info = await toolOk("get_sandbox_info", {});
    profiles = (info.profiles || []).map(p => p.name || p.profile).filter(Boolean);
  } catch (e) {
    if (e instanceof SignedOut) throw e;
    profiles = [];
  }
  return profiles;
}

/* ---- signing in and out */

function signedOut(message) {
  me = null;
  document.getElementById("nav").hidden = true;
  document.getElementById("who").hidden = true;
  document.getElementById("signout").hidden = true;
  document.getElementById("signin").hidden = false;
  document.getElementById("signin-error").textContent = message && message !== "not signed in" ? message : "";
  show();
  document.getElementById("key").focus();
}

async function signIn(ev) {
  ev.preventDefault();
  const input = document.getElementById("key"), err = document.getElementById("signin-error");
  err.textContent = "";
  const {status, body} = await request("/console/signin", {method: "POST",
    headers: {"Content-Type": "application/x-www-form-urlencoded"},
    body: new URLSearchParams({key: input.value}).toString()});
  input.value = "";
  if (status !== 200) {
    err.textContent = (body && body.error) || "sign-in failed (HTTP " + status + ")";
    return;
  }
  await start();
}

async function signOut() {
  try { await post("/console/signout", {}); } catch (e) { /* signed out either way */ }
  signedOut("");
}

async function start() {
  const {status, body} = await request("/console/api/me", {method: "GET"}).catch(() => ({status: 0}));
  if (status !== 200) return;
  me = body;
  document.getElementById("signin").hidden = true;
  document.getElementById("nav").hidden = false;
  const who = document.getElementById("who");
  who.hidden = false;
  who.textContent = "tenant " + me.tenant;
  document.getElementById("signout").hidden = false;
  if (!location.hash || location.hash === "#") location.hash = "#/executions";
  else route();
}

/* ---- the views */

const routes = [
  [/^#\/executions\/([0-9a-zA-Z_-]+)$/, m => viewExecution(m[1])],
  [/^#\/executions(?:\?(.*))?$/, m => viewExecutions(new URLSearchParams(m[1] || ""))],
  [/^#\/run$/, () => viewRun()],
  [/^#\/sessions\/([0-9a-zA-Z_-]+)$/, m => viewSession(m[1])],
  [/^#\/sessions$/, () => viewSessions()],
  [/^#\/usage$/, () => viewUsage()],
  [/^#\/key$/, () => viewKey()],
];

async function route() {
  if (!me) return;
  const hash = location.hash || "#/executions";
  const page = hash.split(/[/?]/)[1] || "executions";
  for (const a of document.querySelectorAll("#nav a"))
    a.toggleAttribute("aria-current", a.dataset.page === page) && a.setAttribute("aria-current", "page");
  for (const [re, fn] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    try {
      await fn(m);
    } catch (e) {
      if (!(e instanceof SignedOut)) show(el("section", {class: "card"}, el("h1", {text: "Something went wrong"}), errorBox(e.message)));
    }
    return;
  }
  show(el("section", {class: "card"}, el("h1", {text: "No such page"})));
}

/* Executions: newest first, filtered by status and profile, a page at a time (cursors). */
async function viewExecutions(q) {
  const status = q.get("status") || "", profile = q.get("profile") || "", cursor = q.get("cursor") || "";
  const prev = q.getAll("prev");
  show(el("h1", {text: "Executions"}), busy("Loading…"));
  const names = await servedProfiles();
  const args = {limit: PAGE_SIZE};
  if (status) args.status = status;
  if (profile) args.profile = profile;
  if (cursor) args.cursor = cursor;
  const res = await tool("list_executions", args);
  const form = el("form", {class: "row card", "aria-label": "Filter executions", onsubmit: ev => {
    ev.preventDefault();
    const p = new URLSearchParams();
    if (form.elements.status.value) p.set("status", form.elements.status.value);
    if (form.elements.profile.value) p.set("profile", form.elements.profile.value);
    location.hash = "#/executions" + (p.toString() ? "?" + p : "");
  }},
    el("div", {}, el("label", {for: "f-status", text: "Status"}),
      el("select", {id: "f-status", name: "status"}, el("option", {value: "", text: "any"}),
        STATUSES.map(s => el("option", {value: s, text: s, selected: s === status})))),
    el("div", {}, el("label", {for: "f-profile", text: "Profile"}),
      el("select", {id: "f-profile", name: "profile"}, el("option", {value: "", text: "any"}),
        [...new Set([...names, profile].filter(Boolean))].map(p => el("option", {value: p, text: p, selected: p === profile})))),
    el("div", {}, el("button", {type: "submit", text: "Filter"})));
  if (!res.result) { show(el("h1", {text: "Executions"}), form, errorBox(res.text)); return; }
  const rows = res.result.executions || [];
  const table = el("table", {class: "cards"},
    el("caption", {class: "muted", text: rows.length ? "" : "No executions yet."}),
    el("thead", {}, el("tr", {}, ["Started", "Status", "Profile", "Tool", "Wall", "Execution"].map(h => el("th", {scope: "col", text: h})))),
    el("tbody", {}, rows.map(r => el("tr", {},
      el("td", {"data-label": "Started", text: fmtTime(r.created_ms)}), el("td", {"data-label": "Status"}, statusBadge(r.status)),
      el("td", {"data-label": "Profile", text: r.profile || "–"}), el("td", {"data-label": "Tool", text: r.tool || "–"}),
      el("td", {"data-label": "Wall", class: "num", text: fmtMs(r.wall_ms)}),
      el("td", {"data-label": "Execution", class: "mono"}, el("a", {href: "#/executions/" + encodeURIComponent(r.execution_id), text: r.execution_id}))))));
  const base = new URLSearchParams();
  if (status) base.set("status", status);
  if (profile) base.set("profile", profile);
  const nav = el("p", {class: "row"});
  if (cursor) {
    const back = new URLSearchParams(base);
    const stack = prev.slice(0, -1);
    if (prev.length && prev[prev.length - 1]) back.set("cursor", prev[prev.length - 1]);
    stack.forEach(c => back.append("prev", c));
    nav.append(el("a", {href: "#/executions" + (back.toString() ? "?" + back : ""), text: "← Newer"}));
  }
  if (res.result.next_cursor) {
    const fwd = new URLSearchParams(base);
    fwd.set("cursor", res.result.next_cursor);
    [...prev, cursor].forEach(c => fwd.append("prev", c));
    nav.append(el("a", {href: "#/executions?" + fwd, text: "Older →"}));
  }
  show(el("h1", {text: "Executions"}), form, el("div", {class: "scroll"}, table), nav);
}

/* A figure: the image blocks of a call's answer, or an execution's images/N resource. */
function imageNode(mime, b64, alt) {
  if (!/^image\/(png|jpeg|gif|webp|svg\+xml)$/.test(mime || "")) return null;
  return el("img", {class: "figure", alt: alt, src: "data:" + mime + ";base64," + b64});
}

function utf8ToB64(text) {
  const bytes = new TextEncoder().encode(text);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/* One rich output, by its type: HTML only inside a frame that may run nothing. */
function outputNode(o) {
  const mime = o.mimeType || "text/plain", data = o.data;
  if (mime === "text/html") {
    const f = el("iframe", {class: "html-output", sandbox: "", referrerpolicy: "no-referrer",
      title: "HTML output " + (o.index ?? ""), loading: "lazy"});
    f.srcdoc = String(data);
    return f;
  }
  if (mime.startsWith("image/")) {
    const b64 = mime === "image/svg+xml" && typeof data === "string" && data.trimStart().startsWith("<") ? utf8ToB64(data) : data;
    return imageNode(mime, b64, "figure " + (o.index ?? ""));
  }
  return el("pre", {text: typeof data === "string" ? data : JSON.stringify(data, null, 2)});
}

/* One output per display (index): the richest of the forms it came in, as a notebook shows. */
const MIME_RANK = ["text/html", "image/svg+xml", "image/png", "image/jpeg", "text/markdown", "application/json", "text/latex"];
function bestOutputs(outputs) {
  const rank = o => { const i = MIME_RANK.indexOf(o.mimeType); return i < 0 ? MIME_RANK.length : i; };
  const best = new Map();
  for (const o of outputs) {
    const k = o.index ?? best.size;
    if (!best.has(k) || rank(o) < rank(best.get(k))) best.set(k, o);
  }
  return [...best.values()];
}

/* An execution as the detail view and the Run page show it. images: [{mime, b64}]. */
function resultView(r, images) {
  const out = el("div", {});
  out.append(facts([
    ["Status", statusBadge(r.status)],
    ["Execution", r.execution_id ? el("a", {class: "mono", href: "#/executions/" + encodeURIComponent(r.execution_id), text: r.execution_id}) : null],
    ["Profile", r.profile], ["Why there", r.profile_reason], ["Tool", r.tool],
    ["Session", r.session_id ? el("a", {class: "mono", href: "#/sessions/" + encodeURIComponent(r.session_id), text: r.session_id + (r.cell ? " (cell " + r.cell + ")" : "")}) : null],
    ["Started", r.created_ms ? fmtTime(r.created_ms) : null],
    ["Queue", r.timings ? fmtMs(r.timings.queue_ms) : fmtMs(r.queue_ms)],
    ["Wall", r.timings ? fmtMs(r.timings.wall_ms) : fmtMs(r.wall_ms)],
    ["CPU", r.timings ? fmtMs(r.timings.cpu_ms) : fmtMs(r.cpu_ms)],
    ["Peak memory", r.resources && r.resources.max_rss_kb ? Math.round(r.resources.max_rss_kb / 1024) + " MB" : null],
    ["Exit", r.exit ? [r.exit.reason, r.exit.code !== undefined && r.exit.code !== null ? "code " + r.exit.code : ""].filter(Boolean).join(", ") : null],
    ["Result", r.result],
  ]));
  if (r.code !== undefined && r.code !== null) out.append(el("h3", {text: "Code"}), el("pre", {class: "code", text: r.code}));
  if (r.stdout) out.append(el("h3", {text: "Output (stdout)"}), el("pre", {class: "stdout", text: r.stdout}));
  if (r.stderr) out.append(el("h3", {text: "Errors (stderr)"}), el("pre", {class: "stderr", text: r.stderr}));
  if (r.error && (r.error.type || r.error.message)) {
    out.append(el("h3", {text: "Error"}), el("p", {class: "error", text: [r.error.type, r.error.message].filter(Boolean).join(": ") + (r.error.line ? " (line " + r.error.line + ")" : "")}));
    if (r.error.traceback) out.append(el("pre", {class: "stderr", text: r.error.traceback}));
  }
  const outputs = bestOutputs(r.outputs || []).filter(o => !(o.mimeType || "").startsWith("image/") || !images.length);
  if (outputs.length) out.append(el("h3", {text: "Rich outputs"}), ...outputs.map(o => el("div", {class: "output"}, outputNode(o))));
  if (images.length) out.append(el("h3", {text: "Figures"}), ...images.map((im, i) => imageNode(im.mime, im.b64, "figure " + (i + 1))));
  if ((r.security_events || []).length) out.append(el("h3", {text: "Refused by the sandbox"}), el("pre", {text: r.security_events.map(e => `${e.operation} ${e.target ?? ""} (${e.layer}) ×${e.count}`).join("\n")}));
  if ((r.files || []).length) {
    out.append(el("h3", {text: "Files"}), el("ul", {}, r.files.map(f => el("li", {},
      el("span", {class: "mono", text: f.path}), " ", el("span", {class: "muted", text: "(" + f.bytes + " bytes)"}),
      f.content !== undefined || f.uri ? [" ", el("button", {type: "button", class: "secondary small", text: "Download",
        "aria-label": "Download " + f.path, onclick: () => downloadFile(f)})] : null,
      f.note ? [" ", el("span", {class: "muted", text: f.note})] : null,
      f.content !== undefined && f.encoding !== "base64" && f.content.length < 4096 ? el("pre", {text: f.content}) : null))));
  }
  if (r.variables && Object.keys(r.variables).length) out.append(el("h3", {text: "Variables"}), el("pre", {text: JSON.stringify(r.variables, null, 2)}));
  return out;
}

/* A file the code wrote: inline (text or base64), or behind its sandbox:// link, read as the
 * tenant's resource; handed to the browser as a download, never shown as a page. */
async function downloadFile(f) {
  let bytes;
  if (f.content !== undefined && f.content !== null) {
    bytes = f.encoding === "base64" ? Uint8Array.from(atob(f.content), c => c.charCodeAt(0)) : new TextEncoder().encode(f.content);
  } else {
    const {body} = await post("/console/api/resource", {uri: f.uri});
    const c = body && body.result && body.result.contents && body.result.contents[0];
    if (!c) { alert("The file is no longer kept (linked files live an hour)."); return; }
    bytes = c.blob !== undefined ? Uint8Array.from(atob(c.blob), ch => ch.charCodeAt(0)) : new TextEncoder().encode(c.text || "");
  }
  const a = el("a", {href: URL.createObjectURL(new Blob([bytes], {type: "application/octet-stream"})), download: f.path.split("/").pop()});
  document.body.append(a);
  a.click();
  a.remove();
}

function imagesOfContent(content) {
  return (content || []).filter(b => b.type === "image" && b.data).map(b => ({mime: b.mimeType, b64: b.data}));
}

async function viewExecution(id) {
  show(el("h1", {text: "Execution"}), busy("Loading…"));
  const res = await tool("get_execution", {execution_id: id});
  if (!res.result) { show(el("h1", {text: "Execution"}), errorBox(res.text || "not found")); return; }
  /* the record, with the Result it keeps: what ran, where and when, then what came of it */
  const rec = res.result;
  const r = Object.assign({status: rec.status, stderr: rec.stderr, queue_ms: rec.queue_ms, wall_ms: rec.wall_ms,
    cpu_ms: rec.cpu_ms, resources: rec.max_rss_kb ? {max_rss_kb: rec.max_rss_kb} : null,
    error: rec.error_type ? {type: rec.error_type, message: rec.error_message} : null}, rec.result || {},
    {code: rec.code, tool: rec.tool, created_ms: rec.created_ms, profile: rec.profile,
      profile_reason: rec.profile_reason, session_id: rec.session_id, cell: rec.cell});
  const images = [];
  const n = (r.images || []).length;
  for (let i = 0; i < n && i < 16; i++) {
    const {body} = await post("/console/api/resource", {uri: "sandbox://executions/" + id + "/images/" + i});
    const c = body && body.result && body.result.contents && body.result.contents[0];
    if (c && c.blob) images.push({mime: c.mimeType, b64: c.blob});
  }
  show(el("p", {}, el("a", {href: "#/executions", text: "← Executions"})),
    el("h1", {text: "Execution " + id}), el("section", {class: "card"}, resultView(r, images)));
}

/* Run: execute_code with a profile, stdin and files; progress while it runs. */
function readFileB64(file) {
  return new Promise((ok, fail) => {
    const fr = new FileReader();
    fr.onload = () => ok(String(fr.result).replace(/^data:[^,]*,/, ""));
    fr.onerror = () => fail(fr.error);
    fr.readAsDataURL(file);
  });
}

function codeForm(id, label, onRun, extra) {
  const area = el("textarea", {id: id, name: "code", rows: "10", required: true, spellcheck: "false"});
  const button = el("button", {type: "submit", text: "Run"});
  const form = el("form", {class: "card", onsubmit: async ev => {
    ev.preventDefault();
    button.disabled = true;
    try { await onRun(area.value, form); } finally { button.disabled = false; }
  }}, el("label", {for: id, text: label}), area, extra || null, button);
  area.addEventListener("keydown", ev => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) form.requestSubmit(); });
  return form;
}

/* Runs code and shows where it is (queued, running, for how long) and its output as it is
 * printed, then the result. */
async function runWithProgress(target, args) {
  const t0 = Date.now();
  let phase = "Sent";
  const label = el("span", {text: "Sent… 0 s"}), live = el("pre", {class: "live", hidden: true});
  target.replaceChildren(el("p", {role: "status"}, el("span", {class: "spinner", "aria-hidden": "true"}), label), live);
  const tick = () => { label.textContent = phase + "… " + Math.round((Date.now() - t0) / 1000) + " s"; };
  const timer = setInterval(tick, 500);
  const onProgress = m => {
    const out = m.match(/^(stdout|stderr): ([\s\S]*)$/);
    if (out) { live.hidden = false; live.textContent += out[2]; phase = "Running"; }
    else if (m === "queued") phase = "Queued";
    else if (m === "running") phase = "Running";
    else if (m === "done") phase = "Finishing";
    tick();
  };
  try {
    const res = await toolStream("execute_code", args, onProgress);
    target.replaceChildren(res.result ? resultView(res.result, imagesOfContent(res.content)) : errorBox(res.text));
    return res;
  } catch (e) {
    if (!(e instanceof SignedOut)) target.replaceChildren(errorBox(e.message));
    return null;
  } finally {
    clearInterval(timer);
  }
}

async function viewRun() {
  const names = await servedProfiles();
  const result = el("section", {id: "run-result", "aria-live": "polite"});
  const extra = el("div", {},
    el("div", {class: "row"},
      el("div", {}, el("label", {for: "run-profile", text: "Profile"}),
        el("select", {id: "run-profile", name: "profile"}, el("option", {value: "", text: "chosen by the imports"}),
          names.map(p => el("option", {value: p, text: p})))),
      el("div", {}, el("label", {for: "run-files", text: "Files for the workspace"}),
        el("input", {id: "run-files", name: "files", type: "file", multiple: true}))),
    el("label", {for: "run-stdin", text: "Standard input"}),
    el("textarea", {id: "run-stdin", name: "stdin", rows: "2", class: "short", spellcheck: "false"}));
  const form = codeForm("run-code", "Code", async (code, f) => {
    const args = {code};
    if (f.elements.profile.value) args.profile = f.elements.profile.value;
    if (f.elements.stdin.value) args.stdin = f.elements.stdin.value;
    const files = f.elements.files.files;
    if (files && files.length) {
      args.files = {};
      for (const file of files) args.files[file.name] = {content: await readFileB64(file), encoding: "base64"};
    }
    await runWithProgress(result, args);
  }, extra);
  show(el("h1", {text: "Run code"}), form, result);
}

/* Sessions: the live ones; one opened to run cells, fork, close, and its snapshots. */
async function viewSessions() {
  show(el("h1", {text: "Sessions"}), busy("Loading…"));
  const names = await servedProfiles();
  const res = await tool("list_sessions", {});
  const list = res.result ? (res.result.sessions || []) : [];
  const createForm = el("form", {class: "row card", "aria-label": "New session", onsubmit: async ev => {
    ev.preventDefault();
    const args = {};
    if (createForm.elements.profile.value) args.profile = createForm.elements.profile.value;
    const r = await tool("create_session", args);
    if (r.result && r.result.session_id) location.hash = "#/sessions/" + r.result.session_id;
    else createForm.append(errorBox(r.text));
  }},
    el("div", {}, el("label", {for: "s-profile", text: "Profile"}),
      el("select", {id: "s-profile", name: "profile"}, names.map(p => el("option", {value: p, text: p})))),
    el("div", {}, el("button", {type: "submit", text: "New session"})));
  const table = el("table", {class: "cards"},
    el("caption", {class: "muted", text: list.length ? "" : "No live sessions."}),
    el("thead", {}, el("tr", {}, ["Session", "Profile", "Cells", "Memory", "Idle", "Forked from"].map(h => el("th", {scope: "col", text: h})))),
    el("tbody", {}, list.map(s => el("tr", {},
      el("td", {"data-label": "Session", class: "mono"}, el("a", {href: "#/sessions/" + encodeURIComponent(s.session_id), text: s.session_id})),
      el("td", {"data-label": "Profile", text: s.profile || "–"}), el("td", {"data-label": "Cells", class: "num", text: s.cells ?? "–"}),
      el("td", {"data-label": "Memory", class: "num", text: s.memory_in_use_mb !== undefined ? s.memory_in_use_mb + " MB" : "–"}),
      el("td", {"data-label": "Idle", class: "num", text: idleFor(s.last_used)}),
      el("td", {"data-label": "Forked from", class: "mono", text: s.parent_session_id || "–"})))));
  show(el("h1", {text: "Sessions"}), createForm, res.result ? el("div", {class: "scroll"}, table) : errorBox(res.text));
}

async function viewSession(id) {
  show(el("h1", {text: "Session"}), busy("Loading…"));
  const res = await tool("list_sessions", {});
  const s = res.result ? (res.result.sessions || []).find(x => x.session_id === id) : null;
  if (!s) { show(el("p", {}, el("a", {href: "#/sessions", text: "← Sessions"})), el("h1", {text: "Session"}), errorBox("No live session " + id + " of yours.")); return; }
  const cells = el("div", {id: "cells"});
  const about = el("div", {});
  const describe = x => facts([["Profile", x.profile], ["Cells", x.cells], ["Memory in use", x.memory_in_use_mb !== undefined ? x.memory_in_use_mb + " MB" : null],
    ["Memory limit", x.memory_limit_mb ? x.memory_limit_mb + " MB" : null], ["Created", x.created], ["Last used", x.last_used + " (idle " + idleFor(x.last_used) + ")"],
    ["Expires", x.expires_at], ["Forked from", x.parent_session_id ? el("a", {class: "mono", href: "#/sessions/" + encodeURIComponent(x.parent_session_id), text: x.parent_session_id}) : "–"]]);
  about.replaceChildren(describe(s));
  const form = codeForm("cell-code", "Next cell", async code => {
    const box = el("section", {class: "card cell"});
    cells.prepend(box);
    const r = await runWithProgress(box, {code, session_id: id});
    if (r && r.result && r.result.cell) box.prepend(el("h3", {text: "Cell " + r.result.cell}));
    const now = await tool("list_sessions", {}); /* its cells, memory and expiry moved on */
    const x = now.result ? (now.result.sessions || []).find(y => y.session_id === id) : null;
    about.replaceChildren(x ? describe(x) : errorBox("This session has ended" + (r && r.result && r.result.session && r.result.session.end_reason ? ": " + r.result.session.end_reason : ".")));
  });
  const actions = el("p", {class: "row"},
    el("button", {type: "button", class: "secondary", text: "Fork", onclick: async () => {
      const r = await tool("fork_session", {session_id: id});
      if (r.result && r.result.session_id) location.hash = "#/sessions/" + r.result.session_id;
      else actions.append(errorBox(r.text));
    }}),
    el("button", {type: "button", class: "danger", text: "Close session", onclick: async () => {
      if (!confirm("Close this session? Its variables and files are lost (snapshots stay).")) return;
      await tool("close_session", {session_id: id});
      location.hash = "#/sessions";
    }}));
  const snaps = el("section", {class: "card", "aria-labelledby": "snap-title"});
  show(el("p", {}, el("a", {href: "#/sessions", text: "← Sessions"})),
    el("h1", {text: "Session " + id}),
    el("section", {class: "card"}, about, actions),
    form, cells, snaps);
  await renderSnapshots(snaps, id);
}

async function renderSnapshots(box, sessionId) {
  const res = await tool("list_state_snapshots", {session_id: sessionId});
  const list = res.result ? (res.result.snapshots || []) : [];
  const desc = el("input", {id: "snap-desc", name: "description", type: "text", maxlength: "200"});
  const create = el("form", {class: "row", onsubmit: async ev => {
    ev.preventDefault();
    const r = await tool("create_state_snapshot", {session_id: sessionId, description: desc.value || "from the console"});
    if (!r.result) create.append(errorBox(r.text));
    await renderSnapshots(box, sessionId);
  }}, el("div", {}, el("label", {for: "snap-desc", text: "Description"}), desc),
    el("div", {}, el("button", {type: "submit", text: "Save a snapshot"})));
  const table = el("table", {},
    el("thead", {}, el("tr", {}, ["Snapshot", "Description", "Created", "Size", ""].map(h => el("th", {scope: "col", text: h})))),
    el("tbody", {}, list.map(sn => el("tr", {},
      el("td", {class: "mono", text: sn.snapshot_id}), el("td", {text: sn.description || ""}),
      el("td", {text: sn.created || ""}), el("td", {class: "num", text: (sn.bytes ?? "–") + " B"}),
      el("td", {},
        el("button", {type: "button", class: "secondary", text: "Restore", "aria-label": "Restore " + sn.snapshot_id + " into this session", onclick: async () => {
          const r = await tool("restore_state_snapshot", {snapshot_id: sn.snapshot_id, session_id: sessionId});
          box.append(r.result ? el("p", {role: "status", text: "Restored " + sn.snapshot_id + "."}) : errorBox(r.text));
        }}), " ",
        el("button", {type: "button", class: "secondary", text: "Restore as new", "aria-label": "Restore " + sn.snapshot_id + " into a new session", onclick: async () => {
          const r = await tool("restore_state_snapshot", {snapshot_id: sn.snapshot_id});
          if (r.result && r.result.session_id) location.hash = "#/sessions/" + r.result.session_id;
          else box.append(errorBox(r.text));
        }}), " ",
        el("button", {type: "button", class: "danger", text: "Delete", "aria-label": "Delete " + sn.snapshot_id, onclick: async () => {
          await tool("delete_state_snapshot", {snapshot_id: sn.snapshot_id});
          await renderSnapshots(box, sessionId);
        }}))))));
  box.replaceChildren(el("h2", {id: "snap-title", text: "Snapshots"}), create,
    list.length ? el("div", {class: "scroll"}, table) : el("p", {class: "muted", text: "No snapshots of this session."}));
}

/* Usage: per day, against the quotas; SVG bar charts, a table, and the same as CSV. */
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...kids) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
  for (const kid of kids.flat()) if (kid) n.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  return n;
}

/* series: [{day, value, parts?: [[cls, value]]}]; limit: a dashed line at that value, or null. */
function barChart(title, series, limit, unit) {
  const W = 640, H = 200, L = 44, B = 36, T = 22;
  const max = Math.max(1, limit || 0, ...series.map(s => s.value));
  const bw = (W - L - 8) / Math.max(1, series.length);
  const y = v => H - B - (v / max) * (H - B - T);
  const g = svg("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title});
  g.append(svg("title", {}, title), svg("text", {x: 4, y: 14}, title + (unit ? " (" + unit + ")" : "")));
  g.append(svg("line", {class: "axis", x1: L, y1: H - B, x2: W - 4, y2: H - B}));
  g.append(svg("text", {x: 4, y: y(max) + 4}, String(+max.toFixed(2))), svg("text", {x: 4, y: H - B}, "0"));
  series.forEach((s, i) => {
    let base = 0;
    for (const [cls, v] of s.parts || [["bar", s.value]]) {
      if (!v) continue;
      g.append(svg("rect", {class: cls, x: L + i * bw + 2, y: y(base + v), width: Math.max(1, bw - 4), height: y(base) - y(base + v)},
        svg("title", {}, `${s.day}: ${+v.toFixed(3)} ${cls.replace("bar-", "")}`)));
      base += v;
    }
    if (series.length <= 16 || i % 2 === 0) g.append(svg("text", {x: L + i * bw + 2, y: H - B + 14}, s.day.slice(5)));
  });
  if (limit) g.append(svg("line", {class: "limit", x1: L, y1: y(limit), x2: W - 4, y2: y(limit)}), svg("text", {x: W - 120, y: y(limit) - 4}, "quota " + limit));
  return g;
}

function idleFor(iso) {
  const t = Date.parse(iso || "");
  return isNaN(t) ? "–" : Math.max(0, Math.round((Date.now() - t) / 1000)) + " s";
}

/* What is held now against its quota: one bar per row, [label, used, limit, unit]. */
function quotaChart(rows) {
  const W = 640, row = 30, H = rows.length * row + 8, L = 190, R = 150;
  const g = svg("svg", {class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Held now against quotas"});
  g.append(svg("title", {}, "Held now against quotas"));
  rows.forEach(([label, used, limit, unit], i) => {
    const y = 4 + i * row, frac = limit > 0 ? Math.min(1, used / limit) : 0;
    g.append(svg("text", {x: 4, y: y + 17}, label),
      svg("rect", {class: "quota-track", x: L, y: y + 4, width: W - L - R, height: 18}),
      svg("rect", {class: frac >= 0.9 ? "bar-error" : "bar", x: L, y: y + 4, width: Math.max(frac > 0 ? 2 : 0, (W - L - R) * frac), height: 18}),
      svg("text", {x: W - R + 8, y: y + 17}, `${+used.toFixed(1)} of ${limit}${unit ? " " + unit : ""}`));
  });
  return g;
}

function num(v) { return typeof v === "number" ? v : Number(v) || 0; }

async function viewUsage() {
  show(el("h1", {text: "Usage"}), busy("Loading…"));
  const u = await toolOk("get_usage", {days: 14});
  let info = null;
  try { info = await toolOk("get_sandbox_info", {}); } catch (e) { if (e instanceof SignedOut) throw e; }
  const limits = (info && info.tenant) || {};
  const sessions = await tool("list_sessions", {});
  const liveMb = ((sessions.result && sessions.result.sessions) || []).reduce((a, x) => a + num(x.memory_in_use_mb), 0);
  const days = (u.days || []).slice().sort((a, b) => (a.day < b.day ? -1 : 1));
  const statusOf = d => d.executions_by_status || d.by_status || d.statuses || {};
  const execs = d => num(d.executions ?? Object.values(statusOf(d)).reduce((a, b) => a + num(b), 0));
  const okOf = d => num(statusOf(d).ok), errOf = d => num(statusOf(d).error);
  const cpu = d => num(d.cpu_seconds ?? d.cpu_s);
  const rows = days.map(d => ({day: d.day, executions: execs(d), ok: okOf(d), error: errOf(d),
    other: Math.max(0, execs(d) - okOf(d) - errOf(d)), cpu: cpu(d), cells: num(d.session_cells ?? d.cells),
    sessions: num(d.sessions_started ?? d.sessions), snapshots: num(d.snapshots_saved ?? d.snapshots),
    wall: num(d.wall_seconds ?? d.wall_s)}));
  const cols = [["day", "Day"], ["executions", "Executions"], ["ok", "ok"], ["error", "error"], ["other", "other statuses"],
    ["cpu", "CPU s"], ["wall", "Wall s"], ["cells", "Session cells"], ["sessions", "Sessions started"], ["snapshots", "Snapshots saved"]];
  const csv = [cols.map(c => c[0]).join(",")].concat(rows.map(r => cols.map(c => r[c[0]]).join(","))).join("\n") + "\n";
  const download = el("a", {href: URL.createObjectURL(new Blob([csv], {type: "text/csv"})), download: "snakepit-usage-" + me.tenant + ".csv", text: "Download CSV"});
  const now = u.now || u.holding || {};
  const quota = [];
  for (const [k, v] of Object.entries(now)) quota.push([k.replace(/_/g, " "), typeof v === "object" ? JSON.stringify(v) : v]);
  quota.push(["session memory in use now", liveMb + " MB"]);
  for (const [k, v] of Object.entries(limits)) if (k !== "name") quota.push(["limit: " + k.replace(/_/g, " "), typeof v === "object" ? JSON.stringify(v) : v]);
  const perDay = num(limits.max_executions_per_day || limits.executions_per_day) || null;
  show(el("h1", {text: "Usage"}),
    el("section", {class: "card"}, el("h2", {text: "Per day, last 14 days (UTC)"}),
      el("p", {class: "legend"}, el("span", {text: "green: ok"}), el("span", {text: "red: error"}), el("span", {text: "amber: other statuses"})),
      barChart("Executions by status", rows.map(r => ({day: r.day, value: r.executions, parts: [["bar-ok", r.ok], ["bar-error", r.error], ["bar-other", r.other]]})), perDay),
      barChart("CPU seconds", rows.map(r => ({day: r.day, value: r.cpu})), null, "s"),
      barChart("Session cells", rows.map(r => ({day: r.day, value: r.cells})), null),
      barChart("Snapshots saved", rows.map(r => ({day: r.day, value: r.snapshots})), null)),
    el("section", {class: "card"}, el("h2", {text: "Table"}), el("p", {}, download),
      el("div", {class: "scroll"}, el("table", {id: "usage-table"},
        el("thead", {}, el("tr", {}, cols.map(c => el("th", {scope: "col", class: c[0] === "day" ? "" : "num", text: c[1]})))),
        el("tbody", {}, rows.map(r => el("tr", {}, cols.map(c => el("td", {class: c[0] === "day" ? "" : "num", text: typeof r[c[0]] === "number" ? +r[c[0]].toFixed(3) : r[c[0]]})))))))),
    el("section", {class: "card"}, el("h2", {text: "Held now, and your limits"}),
      quotaChart([["live sessions", num(now.live_sessions), num(now.max_sessions), ""],
        ["snapshots", num(now.snapshots), num(now.max_snapshots), ""],
        ["snapshot storage", num(now.snapshot_bytes) / 1048576, num(now.max_snapshot_mb), "MB"]]),
      facts(quota)));
}

/* Key: rotate, shown once. */
function viewKey() {
  const out = el("div", {"aria-live": "polite"});
  const ack = el("input", {id: "rotate-ack", type: "checkbox"});
  const button = el("button", {type: "button", class: "danger", text: "Rotate the key", disabled: !me.may_rotate_key, onclick: async () => {
    if (!ack.checked) { out.replaceChildren(errorBox("Tick the box first: the old key stops working at once.")); return; }
    button.disabled = true;
    const {status, body} = await post("/console/api/key", {});
    if (status !== 200 || !body || !body.api_key) { out.replaceChildren(errorBox((body && body.error) || "HTTP " + status)); button.disabled = false; return; }
    const field = el("input", {id: "new-key", type: "text", readonly: true, value: body.api_key, class: "mono"});
    out.replaceChildren(el("div", {class: "warning", role: "alert"}, el("p", {text: body.warning})),
      el("label", {for: "new-key", text: "Your new API key (shown once)"}), field,
      el("button", {type: "button", class: "secondary", text: "Copy", onclick: () => { field.select(); navigator.clipboard && navigator.clipboard.writeText(field.value); }}));
    field.focus();
    field.select();
  }});
  show(el("h1", {text: "API key"}),
    el("section", {class: "card"},
      el("p", {text: "Rotating makes a new key for tenant " + me.tenant + " and stops the old one at once. Every agent and client that uses the old key must be given the new one. This sign-in stays; other sign-ins made with the old key end."}),
      me.may_rotate_key ? null : el("p", {class: "warning", text: "The tenant local is the farm's own: its key lives in the farm's state directory and cannot be rotated here."}),
      el("p", {}, ack, " ", el("label", {for: "rotate-ack", class: "inline", text: "I understand the old key stops working."})),
      button, out));
}

/* ---- start */

document.getElementById("signin-form").addEventListener("submit", ev => { signIn(ev).catch(e => { document.getElementById("signin-error").textContent = e.message; }); });
document.getElementById("signout").addEventListener("click", () => { signOut(); });
/* the skip link moves the focus, not the page: the hash is the router's */
document.querySelector(".skip").addEventListener("click", ev => { ev.preventDefault(); document.getElementById("main").focus(); });
window.addEventListener("hashchange", () => { route(); document.getElementById("main").focus({preventScroll: true}); });
request("/console/api/me", {method: "GET"}).then(({status}) => (status === 200 ? start() : null)).catch(() => {});
