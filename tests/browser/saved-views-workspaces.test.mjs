// Saved views on a workspace's pages (log, runs, dead letters) in Chromium: the same menu as
// the executions list, kept in this browser or for the team (in the store, a write with its
// reason), listing only the views of its kind, and opening one goes to its URL. And the Audit
// page's "outcome unknown" for an entry left PENDING (recorded before its action, whose
// process stopped before recording the outcome).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const TOKEN = "ws-views-admin";
const link = (params) => `?${new URLSearchParams({ view: "workspaces", ...params })}`;

function assertCalm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error");
}

test("saved views on the workspace pages", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 40, seed: 5 });
  const url = await serve(t, ["monitor", "--db", db, "--token", TOKEN]);
  const b = await browser(t);

  await t.test("runs filtered by status: saved in this browser and for the team, opened from the log", async () => {
    const p = await page(b);
    const runs = link({ tenant: "acme", ws: "prod", tab: "runs", status: "dead" });
    await p.goto(`${url}${runs}#token=${TOKEN}`);
    await p.waitForSelector("#saved-views");
    await p.click("#saved-views > summary");
    await p.waitForSelector("#view-name");
    await p.fill("#view-name", "Dead runs of prod");
    await p.click("#save-local");
    await p.waitForSelector('#views-browser [data-name="Dead runs of prod"]');
    await p.fill("#view-name", "Team dead runs");
    await p.click("#save-team");
    await p.fill("#saved-views .reason-input", "for the incident review");
    await p.click('#saved-views [data-confirm="yes"]');
    await p.waitForSelector('#views-team [data-name="Team dead runs"]');
    const want = runs.slice(1);
    const { body: views } = await apiGet(url, "api/views");
    assert.deepEqual(views.items.map((v) => [v.name, v.query, v.owner]), [["Team dead runs", want, "token"]]);
    await p.screenshot({ path: join(artifacts, "workspaces-saved-views.png") });

    // From the log tab, each opens its URL: the URL is the view.
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod" })}`);
    await p.waitForSelector(".ws-log");
    await p.click("#saved-views > summary");
    await p.click('#views-browser [data-name="Dead runs of prod"]');
    await p.waitForFunction((q) => location.search === `?${q}`, want);
    await p.waitForSelector("#ws-status");
    assert.equal(await p.inputValue("#ws-status"), "dead", "the runs tab, filtered");
    await p.goto(`${url}${link({ tenant: "acme", ws: "staging", tab: "dead-letters" })}`);
    await p.waitForSelector("#saved-views");
    await p.click("#saved-views > summary");
    await p.click('#views-team [data-name="Team dead runs"]');
    await p.waitForFunction((q) => location.search === `?${q}`, want);
    assertCalm(p);
  });

  await t.test("each page lists its own kind: the executions list does not offer workspace views", async () => {
    // (Each page has a browser context of its own: this one's storage starts empty.)
    const p = await page(b);
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", tab: "dead-letters" })}#token=${TOKEN}`);
    await p.waitForSelector("#saved-views");
    await p.click("#saved-views > summary");
    await p.waitForSelector("#view-name");
    await p.fill("#view-name", "Prod dead letters");
    await p.click("#save-local");
    await p.waitForSelector('#views-browser [data-name="Prod dead letters"]');
    await p.goto(`${url}?status=FAILED`);
    await p.waitForSelector("#saved-views");
    await p.click("#saved-views > summary");
    await p.waitForSelector("#view-name");
    assert.equal(await p.$('#saved-views [data-name="Prod dead letters"]'), null);
    assert.equal(await p.$('#saved-views [data-name="Team dead runs"]'), null, "the team's workspace view is not listed here");
    await p.fill("#view-name", "Failed");
    await p.click("#save-local");
    await p.waitForSelector('#views-browser [data-name="Failed"]');
    // ... and a workspace page does not offer the executions list's.
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", tab: "runs" })}`);
    await p.waitForSelector("#saved-views");
    await p.click("#saved-views > summary");
    await p.waitForSelector('#views-browser [data-name="Prod dead letters"]');
    await p.waitForSelector('#views-team [data-name="Team dead runs"]');
    assert.equal(await p.$('#saved-views [data-name="Failed"]'), null);
    // The open envelope and the page are not part of a saved log view.
    const { body: log } = await apiGet(url, "api/workspaces/acme/prod/log?limit=1");
    const env = log.items[0].id;
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", type: "order.placed", env, cursor: "x" })}`);
    await p.waitForSelector("#saved-views");
    await p.click("#saved-views > summary");
    await p.fill("#view-name", "Placed orders");
    await p.click("#save-local");
    await p.waitForSelector('#views-browser [data-name="Placed orders"]');
    const kept = await p.evaluate(() => JSON.parse(localStorage.getItem("execstore.monitor.views")));
    assert.deepEqual(kept.find((v) => v.name === "Placed orders").query, "view=workspaces&tenant=acme&ws=prod&type=order.placed");
    // Tabs whose filters are not views have no menu.
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", tab: "leases" })}`);
    await p.waitForSelector(".ws-view");
    assert.equal(await p.$("#saved-views"), null);
    assertCalm(p);
  });

  await t.test("the Audit page shows a PENDING entry as an outcome unknown", async () => {
    // What a crash between an action and its outcome leaves: an entry still PENDING (the
    // tables exist: the monitor, started with a token, made them).
    const sql = "INSERT INTO execstore_audit (at, actor, role, action, target, reason, outcome, message, params) " +
      "VALUES (1700000000, 'ada', 'admin', 'executions.terminate', 'crashed-1', 'stuck', 'PENDING', NULL, '{}')";
    const out = spawnSync("python3", ["-c", `import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute(sys.argv[2])\nc.commit()`, db, sql], { encoding: "utf8" });
    assert.equal(out.status, 0, out.stderr);
    const p = await page(b);
    await p.goto(`${url}?view=audit&target=crashed-1`);
    await p.waitForSelector('.audit-grid tr[data-outcome="PENDING"] .outcome-unknown');
    const cell = await p.textContent('.audit-grid tr[data-outcome="PENDING"] .outcome');
    assert.match(cell, /^outcome unknown \(the process stopped before it was recorded\)$/);
    await p.screenshot({ path: join(artifacts, "operators-audit-pending.png") });
    assertCalm(p);
  });
});
