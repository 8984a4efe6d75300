// The header and the routes built from the VIEWS table (crates/execstore-cli/web/views/index.js), and its newest
// row, "Dead letters" across workspaces, in Chromium over `execstore monitor`: the demo's
// dead letters in every workspace, a stored HTML payload shown as text, links into each
// workspace, refresh, and a reflexr user's file (no executions) that still lists the view.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const PAYLOAD = "<img src=x onerror=alert(1)>";

function python(script, ...args) {
  const out = spawnSync("python3", ["-c", script, ...args], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`python3: ${out.stderr}`);
}

/** A dead letter of `tenant/ws` written by another process, as reflexr writes one. */
function addDeadLetter(db, tenant, ws, seq, error) {
  python(`
import json, sqlite3, sys
db, tenant, ws, seq, error = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
conn = sqlite3.connect(db)
with conn:
    pos = conn.execute("SELECT coalesce(max(position), 0) + 1 FROM reflexr_dead_letters WHERE tenant_id = ? AND workspace_id = ?", (tenant, ws)).fetchone()[0]
    body = {"rule": "oncall:page", "seq": seq, "error": error}
    conn.execute("INSERT INTO reflexr_dead_letters VALUES (?, ?, ?, ?, ?)", (tenant, ws, pos, "oncall:page", json.dumps(body)))
`, db, tenant, ws, String(seq), error);
}

/** Every workspace's dead letters, by the API, as [workspace, rule, seq, error] rows. */
async function expected(url) {
  const rows = [];
  for (const w of (await apiGet(url, "api/workspaces")).body.items) {
    const path = `api/workspaces/${encodeURIComponent(w.tenant_id)}/${encodeURIComponent(w.workspace_id)}/dead-letters`;
    for (const d of (await apiGet(url, path)).body.items) rows.push([`${w.tenant_id} / ${w.workspace_id}`, d.rule, String(d.seq), d.error]);
  }
  return rows;
}

const shown = (p) => p.$$eval("#dl-list tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));

function assertCalm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error");
}

test("the views from one table, and dead letters across workspaces", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 40, seed: 5 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);

  await t.test("the header lists the table's views, each one's link opens it", async () => {
    const p = await page(b);
    await p.goto(url);
    await p.waitForSelector(".executions-grid tbody tr");
    const nav = await p.$$eval("nav.views a", (as) => as.map((a) => [a.dataset.view, a.textContent, a.getAttribute("href")]));
    assert.deepEqual(nav, [
      ["executions", "Executions", "?view=executions"],
      ["outbox", "Outbox", "?view=outbox"],
      ["timers", "Timers", "?view=timers"],
      ["spawns", "Spawns", "?view=spawns"],
      ["workspaces", "Workspaces", "?view=workspaces"],
      ["dead-letters", "Dead letters", "?view=dead-letters"],
      ["metrics", "Metrics", "?view=metrics"],
      ["audit", "Audit", "?view=audit"],
    ]);
    await p.click('a[data-view="dead-letters"]');
    await p.waitForSelector("#dl-list tbody tr");
    assert.match(p.url(), /\?view=dead-letters$/);
    assert.equal(await p.title(), "Dead letters · execstore");
    assert.equal(await p.getAttribute('a[data-view="dead-letters"]', "aria-current"), "page");
    // Back to the list: the view left, the executions shown again.
    await p.goBack();
    await p.waitForSelector(".executions-grid tbody tr");
    assert.equal(await p.$$eval(".dead-letters-view", (e) => e.length), 0);
    // The module is served like the shell's files.
    const r = await fetch(new URL("views/dead-letters.js", url));
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type"), /^text\/javascript/);
    await r.arrayBuffer();
    assertCalm(p);
  });

  await t.test("every workspace's dead letters, stored HTML as text, links into the workspace", async () => {
    addDeadLetter(db, "acme", "prod", 3, PAYLOAD);
    const want = await expected(url);
    assert.ok(new Set(want.map((r) => r[0])).size >= 2, "the demo has dead letters in several workspaces");
    const p = await page(b);
    await p.goto(`${url}?view=dead-letters`);
    await p.waitForSelector("#dl-list tbody tr");
    assert.deepEqual(await shown(p), want);
    const spaces = (await apiGet(url, "api/workspaces")).body.items.length;
    assert.equal(await p.textContent("#dl-summary"), `${want.length} in ${new Set(want.map((r) => r[0])).size} of ${spaces} workspaces`);
    assert.ok((await p.textContent("#dl-list")).includes(PAYLOAD), "the error as text");
    assert.equal(await p.$$eval("#main img, #main script", (els) => els.length), 0, "no element made of stored data");
    await p.screenshot({ path: join(artifacts, "monitor-dead-letters.png") });

    // Another process adds one; `r` reads them again.
    addDeadLetter(db, "globex", "payments", 1, "ValueError: late");
    await p.keyboard.press("r");
    await p.waitForFunction((n) => document.querySelectorAll("#dl-list tbody tr").length === n, want.length + 1);
    assert.deepEqual(await shown(p), await expected(url));

    // The workspace link opens its dead letters tab; the seq link its place in the log.
    const row = (await shown(p)).findIndex((r) => r[3] === PAYLOAD);
    await p.click(`#dl-list tbody tr:nth-child(${row + 1}) a.ws-link`);
    await p.waitForSelector("#ws-dead tbody tr");
    assert.match(p.url(), /view=workspaces&tenant=acme&ws=prod&tab=dead-letters/);
    await p.goBack();
    await p.waitForSelector("#dl-list tbody tr");
    await p.click(`#dl-list tbody tr:nth-child(${row + 1}) a.seq-link`);
    await p.waitForSelector('#ws-tail tr[data-seq="3"].sel');
    assert.match(p.url(), /tenant=acme&ws=prod&seq=3/);
    assertCalm(p);
  });

  await t.test("a workspace with more than a page: its first page here, its tab pages on", async () => {
    python(`
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
with conn:
    pos = conn.execute("SELECT coalesce(max(position), 0) FROM reflexr_dead_letters WHERE tenant_id = 'globex' AND workspace_id = 'platform'").fetchone()[0]
    for i in range(70):
        body = {"rule": "bulk:rule", "seq": 1000 + i, "error": "bulk %d" % i}
        conn.execute("INSERT INTO reflexr_dead_letters VALUES ('globex', 'platform', ?, 'bulk:rule', ?)", (pos + 1 + i, json.dumps(body)))
`, db);
    const all = [];
    for (let after = 0; ;) {
      const body = (await apiGet(url, `api/workspaces/globex/platform/dead-letters?limit=500&after=${after}`)).body;
      all.push(...body.items.map((d) => `${d.rule} ${d.seq} ${d.error}`));
      if (!body.next_after) break;
      after = body.next_after;
    }
    assert.ok(all.length >= 70);
    const p = await page(b);
    await p.goto(`${url}?view=dead-letters`);
    await p.waitForSelector("#dl-list tbody tr");
    assert.match(await p.textContent("#dl-summary"), /\(the oldest 50 of each\)/);
    const here = (await shown(p)).filter((r) => r[0] === "globex / platform").map((r) => `${r[1]} ${r[2]} ${r[3]}`);
    assert.deepEqual(here, all.slice(0, 50), "the workspace's oldest 50");
    await p.click('#dl-more a.ws-more:text("globex / platform")');
    await p.waitForSelector("#ws-dead tbody tr");
    assert.match(p.url(), /tenant=globex&ws=platform&tab=dead-letters/);
    const rows = () => p.$$eval("#ws-dead tbody tr", (trs) => trs.map((tr) => [...tr.cells].slice(0, 3).map((c) => c.textContent).join(" ")));
    const paged = [];
    for (;;) {
      const page = await rows();
      paged.push(...page);
      if (await p.$eval("#ws-next", (x) => x.disabled)) break;
      const before = p.url();
      await p.keyboard.press("n");
      await p.waitForFunction((was) => location.href !== was, before);
      await p.waitForFunction((first) => {
        const tr = document.querySelector("#ws-dead tbody tr");
        return tr && [...tr.cells].slice(0, 3).map((c) => c.textContent).join(" ") !== first;
      }, page[0]);
      assert.match(p.url(), /cursor=\d+/);
    }
    assert.deepEqual(paged, all, "the tab's pages joined are every dead letter, oldest first");
    await p.click('#ws-dead-pager button:text("« First")');
    await p.waitForFunction(() => !/cursor=/.test(location.search));
    assertCalm(p);
  });

  await t.test("a reflexr user's file: no executions, the dead letters listed", async () => {
    const only = join(dir, "reflexr-only.db");
    const fixture = fileURLToPath(new URL("store_fixture.py", import.meta.url));
    const out = spawnSync("python3", [fixture, "ws-only", db, only], { encoding: "utf8" });
    assert.equal(out.status, 0, out.stderr);
    const onlyUrl = await serve(t, ["monitor", "--db", only]);
    const p = await page(b);
    await p.goto(`${onlyUrl}?view=dead-letters`);
    await p.waitForSelector("#dl-list tbody tr");
    assert.match(p.url(), /view=dead-letters/, "a view of the log stays");
    assert.equal(await p.isHidden('[data-view="executions"]'), true);
    assert.equal(await p.isHidden('[data-view="outbox"]'), true);
    assert.equal(await p.isVisible('[data-view="dead-letters"]'), true);
    assert.deepEqual(await shown(p), await expected(onlyUrl));
    assertCalm(p);
  });
});
