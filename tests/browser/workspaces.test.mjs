// The monitor's workspace views in Chromium: `execstore demo`'s workspace story (reflexr's
// tables) served by `execstore monitor`, a second process appending to the log, stored
// HTML/script payloads, and a reflexr user's file with no execution tables.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const fixture = (...args) => {
  const out = spawnSync("python3", [fileURLToPath(new URL("store_fixture.py", import.meta.url)), ...args], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`store_fixture.py ${args.join(" ")}: ${out.stderr}`);
};

const PAYLOAD = "<img src=x onerror=alert(1)>";
const EVIL = { tenant: "evil", ws: "xss <b>ws</b>" };

function assertCalm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error");
}

const link = (params) => `?${new URLSearchParams({ view: "workspaces", ...params })}`;

test("the workspace views over the demo's workspace story", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 60, seed: 5 });
  fixture("ws-hostile", db);
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const info = (await apiGet(url, "api/info")).body;
  assert.deepEqual(info.holds, { executions: true, workspaces: true });

  await t.test("workspaces: tenants, heads and cursor lag; keyboard opens one", async () => {
    const p = await page(b);
    await p.goto(`${url}?view=workspaces`);
    await p.waitForSelector(".ws-list tbody tr");
    const names = await p.$$eval("#ws-list tbody tr", (rows) => rows.map((r) => [...r.cells].slice(0, 2).map((c) => c.textContent).join("/")));
    assert.deepEqual(names, ["acme/prod", "acme/staging", `evil/${EVIL.ws}`, "globex/payments", "globex/platform"]);
    assert.ok((await p.$$(".ws-list .chip.lag")).length > 0, "cursors behind the head are shown");
    await p.waitForSelector("#ws-due tbody tr");
    const due = (await apiGet(url, "api/due-runs?now=now&limit=50")).body.items;
    assert.ok(due.length > 0, "the demo has due runs");
    assert.equal(await p.$$eval("#ws-due tbody tr", (r) => r.length), due.length);
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-list.png") });
    await p.keyboard.press("j");
    await p.keyboard.press("Enter");
    await p.waitForSelector(".ws-log tbody tr");
    assert.match(p.url(), /tenant=acme&ws=prod/);
    assertCalm(p);
  });

  await t.test("the log: a live tail pushed from another process's commits, with a pause switch", async () => {
    const p = await page(b);
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod" })}`);
    await p.waitForSelector(".ws-log tbody tr");
    await p.waitForFunction(() => /following/.test(document.querySelector("#ws-tail-state")?.textContent || ""));
    const rows = async () => p.$$eval(".ws-log tbody tr", (r) => r.length);
    const before = await rows();
    fixture("ws-append", db, "acme", "prod", "oncall:heartbeat");
    await p.waitForFunction((n) => document.querySelectorAll(".ws-log tbody tr").length === n + 1, before, { timeout: 10000 });
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-log.png") });
    // Paused: a commit does not show; resumed, it does.
    await p.keyboard.press(" ");
    assert.equal(await p.textContent("#ws-pause"), "Resume");
    fixture("ws-append", db, "acme", "prod", "oncall:deploy");
    await p.waitForTimeout(1500);
    assert.equal(await rows(), before + 1, "a paused tail does not move");
    await p.click("#ws-pause");
    await p.waitForFunction((n) => document.querySelectorAll(".ws-log tbody tr").length === n + 2, before, { timeout: 10000 });
    // Filter by type, the last N, a jump to a seq: all in the URL.
    await p.fill("#ws-type", "oncall:deploy");
    await p.press("#ws-type", "Enter");
    await p.waitForFunction(() => [...document.querySelectorAll(".ws-log tbody tr td.type")].every((td) => td.textContent === "oncall:deploy"));
    assert.match(p.url(), /type=oncall%3Adeploy/);
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", seq: "10", last: "50" })}`);
    await p.waitForSelector('.ws-log tr.sel[data-seq="10"]');
    assertCalm(p);
  });

  await t.test("without EventSource the tail polls the log instead", async () => {
    const p = await page(b);
    await p.addInitScript(() => { delete window.EventSource; });
    await p.goto(`${url}${link({ tenant: "acme", ws: "staging" })}`);
    await p.waitForSelector(".ws-log tbody tr");
    await p.waitForFunction(() => /following \(polled\)/.test(document.querySelector("#ws-tail-state")?.textContent || ""));
    const before = await p.$$eval(".ws-log tbody tr", (r) => r.length);
    fixture("ws-append", db, "acme", "staging", "oncall:heartbeat");
    await p.waitForFunction((n) => document.querySelectorAll(".ws-log tbody tr").length === n + 1, before, { timeout: 10000 });
    assertCalm(p);
  });

  await t.test("an envelope's causal chain: what caused it and what it caused", async () => {
    const log = (await apiGet(url, "api/workspaces/acme/prod/log?type=oncall:page_sent&last=1")).body;
    assert.equal(log.items.length, 1, "the demo pages at least once");
    const sent = log.items[0];
    const p = await page(b);
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", env: sent.id })}`);
    await p.waitForSelector("#ws-chain .chain-node.this");
    assert.ok(await p.$("#ws-chain .chain-node.cause"), "the error that fired the page");
    assert.ok(await p.$("#ws-chain .chain-node.caused"), "the incident the page opened");
    const text = await p.textContent("#ws-chain");
    assert.match(text, /oncall:service_error/);
    assert.match(text, /oncall:incident_opened/);
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-envelope.png") });
    await p.keyboard.press("Escape");
    await p.waitForFunction(() => document.querySelector("#ws-env")?.hidden === true);
    assert.doesNotMatch(p.url(), /env=/);
    assertCalm(p);
  });

  await t.test("runs: due now, held by an earlier run, leases; then the other tabs by key", async () => {
    const p = await page(b);
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", tab: "runs" })}`);
    await p.waitForSelector("#ws-runs tbody tr");
    const cells = await p.$$eval("#ws-runs tbody td", (tds) => tds.map((td) => td.textContent).join("\n"));
    assert.match(cells, /held by run-/);
    assert.match(cells, /due now/);
    assert.match(cells, /lapsed/);
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-runs.png") });
    await p.selectOption("#ws-status", "dead");
    await p.waitForFunction(() => [...document.querySelectorAll("#ws-runs tbody tr")].length > 0 &&
      [...document.querySelectorAll("#ws-runs .pill")].every((x) => x.textContent === "dead"));
    assert.match(p.url(), /status=dead/);
    for (const [key, sel, shot] of [["3", "#ws-dead tbody tr", "dead-letters"], ["4", "#ws-leases tbody tr", "leases"], ["5", "#ws-cursors tbody tr", "cursors"], ["6", "#ws-rules tbody tr", "rules"]]) {
      await p.keyboard.press(key);
      await p.waitForSelector(sel);
      if (shot === "leases") {
        const leases = await p.textContent("#ws-leases");
        assert.match(leases, /held/);
        assert.match(leases, /lapsed/);
      }
      await p.screenshot({ path: join(artifacts, `monitor-workspaces-${shot}.png`) });
    }
    await p.click('.rule-link:text("oncall:page")');
    await p.waitForSelector("#ws-history-list tbody tr");
    assert.equal(await p.$$eval("#ws-history-list tbody tr", (r) => r.length), 3, "three versions");
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-rule-history.png") });
    await p.fill("#ws-history-name", "oncall:legacy-sms");
    await p.press("#ws-history-name", "Enter");
    await p.waitForFunction(() => /rule_archived/.test(document.querySelector("#ws-history-list")?.textContent || ""));
    assertCalm(p);
  });

  await t.test("leases: a page at a time by key, Next ▶ and « First", async () => {
    fixture("ws-leases", db, "globex", "platform", "120");
    const all = [];
    for (let after = ""; ;) {
      const body = (await apiGet(url, `api/workspaces/globex/platform/leases?limit=500${after ? `&after=${encodeURIComponent(after)}` : ""}`)).body;
      all.push(...body.items.map((l) => l.key));
      if (!body.next_after) break;
      after = body.next_after;
    }
    assert.ok(all.length >= 120, `${all.length} leases`);
    const p = await page(b);
    await p.goto(`${url}${link({ tenant: "globex", ws: "platform", tab: "leases" })}`);
    await p.waitForSelector("#ws-leases tbody tr");
    const keys = () => p.$$eval("#ws-leases tbody tr td:first-child", (tds) => tds.map((td) => td.textContent));
    const shown = [];
    for (;;) {
      const page = await keys();
      assert.ok(page.length > 0 && page.length <= 50, `a page of ${page.length}`);
      shown.push(...page);
      if (await p.$eval("#ws-next", (x) => x.disabled)) break;
      // The button, or `n` as on the runs page.
      if (shown.length > 50) await p.click("#ws-next");
      else await p.keyboard.press("n");
      await p.waitForFunction((last) => {
        const first = document.querySelector("#ws-leases tbody tr td:first-child");
        return first && first.textContent > last;
      }, page[page.length - 1]);
      assert.match(p.url(), /cursor=/);
    }
    assert.deepEqual(shown, all, "the pages joined are every lease row, by key, each once");
    assert.match(await p.textContent("#ws-leases"), /lapsed/);
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-leases-page.png") });
    await p.click('#ws-leases-pager button:text("« First")');
    await p.waitForFunction((first) => document.querySelector("#ws-leases tbody tr td:first-child")?.textContent === first, all[0]);
    assert.doesNotMatch(p.url(), /cursor=/);
    assertCalm(p);
  });

  await t.test("stored HTML and script payloads are shown as text", async () => {
    const p = await page(b);
    await p.goto(`${url}${link({ tenant: EVIL.tenant, ws: EVIL.ws, env: "evt-xss-1" })}`);
    await p.waitForSelector("#ws-env-json");
    const json = await p.textContent("#ws-env-json");
    assert.match(json, /<script>alert\(4\)<\/script>/);
    assert.ok(json.includes(PAYLOAD));
    assert.equal(await p.$$eval("#main img, #main script, #main b", (els) => els.length), 0, "no element made of stored data");
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-hostile-envelope.png") });
    await p.goto(`${url}${link({ tenant: EVIL.tenant, ws: EVIL.ws, tab: "rules", history: "oncall:page" })}`);
    await p.waitForSelector("#ws-history-list tbody tr");
    const rules = await p.textContent("#ws-rules");
    assert.ok(rules.includes(PAYLOAD), "provenance as text");
    assert.ok((await p.textContent("#ws-history-list")).includes("<script>alert(5)</script>"));
    assert.equal(await p.$$eval("#main img, #main script, #main b", (els) => els.length), 0);
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-hostile-rules.png") });
    assert.match(await p.title(), /xss <b>ws<\/b>/);
    assertCalm(p);
  });
});

test("a reflexr user's file with no execution tables opens on the workspaces", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 20, seed: 2 });
  const only = join(dir, "reflexr-only.db");
  fixture("ws-only", db, only);
  const url = await serve(t, ["monitor", "--db", only]);
  const info = (await apiGet(url, "api/info")).body;
  assert.deepEqual(info.holds, { executions: false, workspaces: true });
  const b = await browser(t);
  const p = await page(b);
  await p.goto(url);
  await p.waitForSelector(".ws-list tbody tr");
  assert.match(p.url(), /view=workspaces/);
  assert.equal(await p.isHidden('[data-view="executions"]'), true);
  assert.equal(await p.isVisible('[data-view="workspaces"]'), true);
  await p.screenshot({ path: join(artifacts, "monitor-workspaces-reflexr-only.png") });
  assertCalm(p);
});
