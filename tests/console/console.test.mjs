// tests/console/console.test.mjs — the console in Debian's chromium (/usr/bin/chromium), driven by
// playwright-core; run by run_console.py, which starts the farm and passes SP_BASE, SP_KEY_A,
// SP_KEY_B (two tenants), SP_HOSTILE_ID and SP_HTML_ID (the first tenant's hostile records),
// SP_SHOTS (where screenshots go) and SP_OUT (the ids it made, for the HTTP checks after it).
import { chromium } from "playwright-core";
import { writeFileSync } from "node:fs";
import assert from "node:assert/strict";

const env = process.env;
const BASE = env.SP_BASE, SHOTS = env.SP_SHOTS;
const made = { executions: [], sessions: [], key_a: env.SP_KEY_A, key_b: env.SP_KEY_B };
const STEP_MS = 60000;

let lastPage = null; // for a screenshot when a step fails

function ok(what) { console.log("ok -", what); }

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  // root in a container has no user namespaces for chromium's own sandbox
  args: process.getuid && process.getuid() === 0 ? ["--no-sandbox"] : [],
  timeout: STEP_MS,
});

async function newPage(width = 1200) {
  const ctx = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(STEP_MS);
  const problems = [];
  lastPage = page;
  page.on("dialog", d => { if (d.type() === "confirm") d.accept(); else { problems.push("dialog " + d.message()); d.dismiss(); } });
  page.on("pageerror", e => problems.push("page error: " + e.message));
  // nothing is fetched from anywhere else, and the page's own code breaks none of its policy
  page.on("request", r => { if (!/^(data|blob|about):/.test(r.url()) && !r.url().startsWith(BASE + "/")) problems.push("fetched " + r.url()); });
  const csp = [];
  page.on("console", m => { if (/Content Security Policy/i.test(m.text())) csp.push(m.text()); });
  return { ctx, page, problems, csp };
}

async function shot(page, name) {
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
}

async function signIn(page, key) {
  await page.goto(BASE + "/console");
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#nav").waitFor({ state: "visible" });
}

async function nav(page, name) {
  await page.locator("#nav").getByRole("link", { name, exact: true }).click();
}

async function pwned(page) {
  return page.evaluate(() => [window.__pwned, document.title]);
}

try {
  // ---- the first tenant
  const { ctx, page, problems, csp } = await newPage();
  await page.goto(BASE + "/console");
  await page.getByLabel("API key").waitFor();
  await shot(page, "01-signin");
  await page.getByLabel("API key").fill("sp_" + "9".repeat(64));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText("unknown API key").waitFor();
  assert.equal(await page.locator("#nav").isVisible(), false);
  ok("a wrong key is refused in the form");
  assert.ok(!page.url().includes("sp_"), "the key never reaches the URL");
  // keyboard: the form is reachable and submits with Enter
  await page.getByLabel("API key").fill(env.SP_KEY_A);
  await page.getByLabel("API key").press("Enter");
  await page.locator("#nav").waitFor({ state: "visible" });
  assert.ok(!page.url().includes(env.SP_KEY_A));
  const cookies = await ctx.cookies();
  const c = cookies.find(x => x.name === "sp_console");
  assert.ok(c && c.httpOnly && c.sameSite === "Strict", "HttpOnly, SameSite=Strict cookie");
  assert.equal(await page.evaluate(() => document.cookie), "", "the script cannot read the cookie");
  ok("signed in with the key, by keyboard; the cookie is HttpOnly and SameSite=Strict");
  await page.getByRole("heading", { name: "Executions" }).waitFor();
  // the heading comes with "Loading…"; the filter form once the list has been read
  await page.locator("#f-status").waitFor();
  await page.locator(".skip").focus();
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement.id), "main", "the skip link moves the focus");
  assert.ok(page.url().endsWith("#/executions"), "and leaves the page where it was");
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement.id), "f-status", "Tab goes on to the page's first field");
  await shot(page, "02-executions");

  // Run: code that prints and plots
  await nav(page, "Run");
  await page.getByLabel("Code").fill(
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
    "print('hello from the console')\nplt.plot([1, 4, 2, 8])\nplt.title('console plot')\nplt.show()\n");
  await page.getByRole("button", { name: "Run" }).click();
  await page.locator("#run-result img.figure").waitFor();
  await page.locator("#run-result pre.stdout", { hasText: "hello from the console" }).waitFor();
  const size = await page.locator("#run-result img.figure").evaluate(i => [i.naturalWidth, i.naturalHeight]);
  assert.ok(size[0] > 100 && size[1] > 100, "the figure is an image: " + size);
  const runId = (await page.locator("#run-result a.mono").first().textContent()).trim();
  made.executions.push(runId);
  await shot(page, "03-run");
  ok("ran code that prints and plots; saw its output and its figure");

  // progress while it runs: the output as it is printed, before the result
  await page.getByLabel("Code").fill("import time\nprint('first line', flush=True)\ntime.sleep(2)\nprint('second line')");
  await page.getByLabel("Profile").selectOption("python.basic");
  await page.getByRole("button", { name: "Run" }).click();
  await page.locator("#run-result pre.live", { hasText: "first line" }).waitFor();
  assert.equal(await page.locator("#run-result pre.stdout").count(), 0, "the output showed while it ran");
  assert.match(await page.locator("#run-result [role=status]").textContent(), /Running… \d+ s/);
  await shot(page, "03b-run-progress");
  await page.locator("#run-result pre.stdout", { hasText: "second line" }).waitFor();
  made.executions.push((await page.locator("#run-result a.mono").first().textContent()).trim());
  ok("saw a run's progress: its output as it was printed, then its result");

  // Run with a profile, a file for the workspace and standard input
  await page.getByLabel("Code").fill("print(open('data.txt').read().strip(), input())\nopen('out.txt', 'w').write('written by the code')");
  await page.getByLabel("Profile").selectOption("python.filesystem");
  await page.getByLabel("Files for the workspace").setInputFiles({ name: "data.txt", mimeType: "text/plain", buffer: Buffer.from("from a file\n") });
  await page.getByLabel("Standard input").fill("and from stdin");
  await page.getByRole("button", { name: "Run" }).click();
  await page.locator("#run-result pre.stdout", { hasText: "from a file and from stdin" }).waitFor();
  made.executions.push((await page.locator("#run-result a.mono").first().textContent()).trim());
  const [written] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download out.txt" }).click()]);
  const fs = await import("node:fs/promises");
  assert.equal(await fs.readFile(await written.path(), "utf8"), "written by the code");
  ok("ran code in a chosen profile with a file and standard input; downloaded the file it wrote");

  // Executions: the run is there, newest first, and its detail
  await nav(page, "Executions");
  const row = page.getByRole("link", { name: runId, exact: true });
  await row.waitFor();
  const rowIds = await page.locator("tbody tr td:last-child a").allTextContents();
  assert.ok(rowIds.indexOf(runId) === 2 && rowIds[0] === made.executions[2] && rowIds[1] === made.executions[1],
    "newest first: " + rowIds.slice(0, 3));
  assert.equal(rowIds.length, 20, "a page holds 20");
  await page.getByRole("link", { name: "Older →" }).click();
  await page.getByRole("link", { name: "← Newer" }).waitFor();
  const older = await page.locator("tbody tr td:last-child a").allTextContents();
  assert.ok(older.length >= 5 && !older.some(id => rowIds.includes(id)), "the next page holds the older ones");
  await page.getByRole("link", { name: "← Newer" }).click();
  await page.getByRole("link", { name: runId, exact: true }).waitFor();
  ok("paged through Executions: older, then newer again");
  await page.getByLabel("Status").selectOption("error");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.getByText("No executions yet.").waitFor();
  await page.getByLabel("Status").selectOption("ok");
  await page.getByLabel("Profile").selectOption("python.data_science");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.getByRole("link", { name: runId, exact: true }).click();
  await page.locator("pre.code", { hasText: "console plot" }).waitFor();
  await page.locator("pre.stdout", { hasText: "hello from the console" }).waitFor();
  await page.locator("img.figure").waitFor();
  await shot(page, "04-execution-detail");
  ok("found the run in Executions (filtered by status and profile) and its detail with code, output and figure");

  // Sessions: a new one, two cells
  await nav(page, "Sessions");
  await page.getByLabel("Profile").selectOption("python.basic");
  await page.getByRole("button", { name: "New session" }).click();
  await page.getByRole("heading", { name: /^Session / }).waitFor();
  const sid = (await page.getByRole("heading", { name: /^Session / }).textContent()).replace("Session ", "").trim();
  made.sessions.push(sid);
  await page.getByLabel("Next cell").fill("x = 21");
  await page.getByRole("button", { name: "Run" }).click();
  await page.getByRole("heading", { name: "Cell 1" }).waitFor();
  await page.getByLabel("Next cell").fill("print(x * 2)");
  await page.getByRole("button", { name: "Run" }).click();
  await page.getByRole("heading", { name: "Cell 2" }).waitFor();
  await page.locator(".cell pre.stdout", { hasText: "42" }).waitFor();
  await page.locator("dl.facts dd", { hasText: /^2$/ }).first().waitFor(); // the session's cells, refreshed
  await page.getByRole("button", { name: "Save a snapshot" }).click();
  await page.locator("#snap-title ~ div table tbody tr").first().waitFor();
  const snapId = (await page.locator("#snap-title ~ div table tbody tr td").first().textContent()).trim();
  await page.getByRole("button", { name: `Restore ${snapId} into this session` }).click();
  await page.getByText(`Restored ${snapId}.`).waitFor();
  await shot(page, "05-session");
  // a fork has the variables; closing it leaves the first
  await page.getByRole("button", { name: "Fork" }).click();
  await page.waitForFunction(s => location.hash.startsWith("#/sessions/") && !location.hash.endsWith(s), sid);
  const fork = decodeURIComponent(await page.evaluate(() => location.hash.slice("#/sessions/".length)));
  await page.getByRole("heading", { name: "Session " + fork }).waitFor();
  await page.getByRole("link", { name: sid, exact: true }).waitFor(); // "Forked from" the first
  await page.getByLabel("Next cell").fill("print(x + 1)");
  await page.getByRole("button", { name: "Run" }).click();
  await page.locator(".cell pre.stdout", { hasText: "22" }).waitFor();
  await page.getByRole("button", { name: "Close session" }).click();
  await page.getByRole("heading", { name: "Sessions", exact: true }).waitFor();
  await page.getByRole("link", { name: sid, exact: true }).waitFor();
  assert.equal(await page.getByRole("link", { name: fork, exact: true }).count(), 0, "the fork is closed");
  await nav(page, "Sessions");
  await page.getByRole("link", { name: sid, exact: true }).click();
  await page.getByRole("heading", { name: "Session " + sid }).waitFor();
  await page.getByRole("button", { name: `Delete ${snapId}` }).click();
  await page.getByText("No snapshots of this session.").waitFor();
  await page.getByRole("link", { name: "← Sessions" }).click();
  await page.getByRole("link", { name: sid, exact: true }).waitFor();
  await shot(page, "06-sessions");
  ok("created a session, ran two cells (the second saw the first's variable), saved a snapshot and restored it, forked the session (the fork had the variable), closed the fork, deleted the snapshot");

  // Usage
  await nav(page, "Usage");
  await page.locator("#usage-table tbody tr").first().waitFor();
  const today = new Date().toISOString().slice(0, 10);
  const todayRow = page.locator("#usage-table tbody tr", { hasText: today });
  const cellsText = await todayRow.locator("td").nth(1).textContent();
  assert.ok(Number(cellsText) >= 3, "today's executions counted: " + cellsText);
  assert.ok(await page.locator("svg.chart").count() >= 5, "charts drawn, quotas too");
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download CSV" }).click()]);
  const csv = await fs.readFile(await download.path(), "utf8");
  assert.ok(csv.startsWith("day,executions") && csv.includes(today), "CSV has the days");
  await shot(page, "07-usage");
  ok("saw the usage: table, charts, CSV");

  assert.deepEqual(csp, [], "no page broke its Content Security Policy");
  assert.deepEqual(problems, [], "no dialogs, page errors or requests elsewhere");
  ok("every page so far: no request left the origin, nothing broke the CSP");

  // hostile records: a <script> on stdout, an HTML output with script
  await page.goto(BASE + "/console/#/executions/" + env.SP_HOSTILE_ID);
  await page.locator("pre.stdout", { hasText: "<script>" }).waitFor();
  assert.deepEqual(await pwned(page), [undefined, "snakepit console"], "stdout's script did not run");
  assert.equal(await page.locator("#page img[src='x']").count(), 0, "its markup stayed text");
  await shot(page, "08-hostile-stdout");
  await page.goto(BASE + "/console/#/executions/" + env.SP_HTML_ID);
  const frame = page.locator("iframe.html-output");
  await frame.waitFor();
  assert.equal(await frame.getAttribute("sandbox"), "", "the HTML output's frame is sandboxed without scripts");
  await page.frameLocator("iframe.html-output").locator("#cell", { hasText: "safe cell" }).waitFor();
  await page.waitForTimeout(300);
  assert.deepEqual(await pwned(page), [undefined, "snakepit console"], "the HTML output's script did not run");
  const ran = await page.frameLocator("iframe.html-output").locator("body").getAttribute("data-ran");
  assert.equal(ran, null, "no script ran inside the frame either");
  await shot(page, "09-hostile-html");
  ok("a <script> on stdout and an HTML output with script are shown inert");

  await nav(page, "Key");
  await page.getByRole("button", { name: "Rotate the key" }).waitFor();
  await shot(page, "10-key");
  assert.deepEqual(problems, [], "no dialogs or page errors");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("API key").waitFor();
  await page.goto(BASE + "/console/#/executions");
  await page.getByLabel("API key").waitFor();
  ok("signed out: the pages ask for the key again");
  await ctx.close();

  // ---- the second tenant sees nothing of the first's, by any page or id
  const b = await newPage();
  await signIn(b.page, env.SP_KEY_B);
  await b.page.getByText("No executions yet.").waitFor();
  for (const id of [runId, env.SP_HOSTILE_ID, env.SP_HTML_ID]) {
    await b.page.goto(BASE + "/console/#/executions/" + id);
    await b.page.locator("#page .error").waitFor();
    assert.equal(await b.page.locator("pre.code").count(), 0, "no code of another tenant's");
  }
  await b.page.goto(BASE + "/console/#/sessions/" + sid);
  await b.page.getByText("No live session").waitFor();
  await b.page.goto(BASE + "/console/#/sessions");
  await b.page.getByText("No live sessions.").waitFor();
  await b.page.goto(BASE + "/console/#/usage");
  await b.page.locator("#usage-table tbody tr").first().waitFor();
  const bToday = await b.page.locator("#usage-table tbody tr", { hasText: today }).locator("td").nth(1).textContent();
  assert.equal(Number(bToday), 0, "the second tenant's usage is its own");
  ok("the second tenant sees none of the first's executions, sessions or usage");

  // key rotation, shown once; the old key stops, the new one works
  await nav(b.page, "Key");
  await b.page.getByRole("button", { name: "Rotate the key" }).click();
  await b.page.getByText("Tick the box first").waitFor();
  await b.page.getByLabel("I understand").check();
  await b.page.getByRole("button", { name: "Rotate the key" }).click();
  const newKey = await b.page.getByLabel("Your new API key (shown once)").inputValue();
  assert.match(newKey, /^sp_[0-9a-f]{64}$/);
  await b.page.getByText("This key is shown once").waitFor();
  await shot(b.page, "11-key-rotated");
  await nav(b.page, "Executions");
  await b.page.getByText("No executions yet.").waitFor(); // this sign-in followed the key
  await b.ctx.close();
  const c2 = await newPage();
  await c2.page.goto(BASE + "/console");
  await c2.page.getByLabel("API key").fill(env.SP_KEY_B);
  await c2.page.getByRole("button", { name: "Sign in" }).click();
  await c2.page.getByText("unknown API key").waitFor();
  await signIn(c2.page, newKey);
  made.key_b = newKey;
  ok("rotated the second tenant's key: shown once, the old one refused, the new one signs in");
  await c2.ctx.close();

  // ---- a narrow screen
  const n = await newPage(380);
  await signIn(n.page, env.SP_KEY_A);
  for (const [hash, name] of [["#/executions", "12-narrow-executions"], ["#/executions/" + runId, "13-narrow-detail"], ["#/usage", "14-narrow-usage"]]) {
    await n.page.goto(BASE + "/console/" + hash);
    await n.page.locator("#page h1").waitFor();
    await n.page.waitForTimeout(200);
    const w = await n.page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(w <= 400, `${name}: the page fits a narrow screen (${w}px wide)`);
    await shot(n.page, name);
  }
  ok("usable on a 380 px screen: no page scrolls sideways");
  await n.ctx.close();
  writeFileSync(env.SP_OUT, JSON.stringify(made));
} catch (e) {
  console.error("FAILED:", e);
  process.exitCode = 1;
  if (lastPage) {
    await lastPage.screenshot({ path: `${SHOTS}/failure.png`, fullPage: true }).catch(() => {});
    console.error("the page said:", await lastPage.locator("#page").innerText().catch(() => "?"));
  }
} finally {
  await browser.close();
}
