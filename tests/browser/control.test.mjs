// The monitor's control actions in Chromium (crates/execstore-cli/web/actions.js): suspend, resume, terminate and
// purge on an execution's page and in bulk on a filtered list, confirmed first, behind the
// token, with the result shown and a conflict explained; none of it offered read-only.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const TOKEN = "control-test-token";

function assertCalm(p, { allow = null } = {}) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  const errors = p.problems.errors.filter((e) => !(allow && allow.test(e)));
  assert.deepEqual(errors, [], "no page error");
}

/** Every execution the API lists for `query`, all pages. */
async function listAll(url, query = "") {
  const all = [];
  for (let cursor = ""; ;) {
    const { body } = await apiGet(url, `api/executions?limit=10000${query}${cursor}`);
    all.push(...body.items);
    if (!body.next_cursor) return all;
    cursor = `&cursor=${body.next_cursor}`;
  }
}

async function one(url, id) {
  return (await apiGet(url, `api/executions/${encodeURIComponent(id)}`)).body.execution;
}

/** Clicks an action, then its confirmation (a write's after its reason is written). */
async function actAndConfirm(p, selector, reason = "browser test") {
  await p.click(selector);
  if (await p.$(".confirm .reason-input")) {
    assert.equal(await p.isDisabled('[data-confirm="yes"]'), true, "no confirming without a reason");
    await p.fill(".confirm .reason-input", reason);
  }
  await p.click('[data-confirm="yes"]');
}

test("control actions", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 300, seed: 3 });
  const url = await serve(t, ["monitor", "--db", db, "--token", TOKEN]);
  const b = await browser(t);

  // a RUNNING root with region children: the actions reach them too
  const roots = await listAll(url, "&status=RUNNING&roots_only=true");
  const details = await Promise.all(roots.map(async (e) => (await apiGet(url, `api/executions/${encodeURIComponent(e.id)}`)).body));
  const parent = details.find((d) => d.children.some((c) => c.summary && c.summary.status === "RUNNING"));
  assert.ok(parent, "the demo has a RUNNING parent with a RUNNING region");
  const id = parent.execution.id;

  await t.test("suspend and resume on the detail page, confirmed first, the result shown", async () => {
    const p = await page(b);
    await p.goto(`${url}?id=${encodeURIComponent(id)}#token=${TOKEN}`);
    await p.waitForSelector("#detail-actions");
    const offered = await p.$$eval("#detail-actions [data-action]", (xs) => xs.map((x) => x.dataset.action));
    assert.deepEqual(offered, ["suspend", "terminate"], "what applies to RUNNING");
    await p.click('#detail-actions [data-action="suspend"]');
    assert.match(await p.textContent("#detail-actions .confirm"), /Suspend .*\?/);
    await p.click('[data-confirm="no"]');
    assert.equal((await one(url, id)).status, "RUNNING", "cancelled: nothing done");

    await actAndConfirm(p, '#detail-actions [data-action="suspend"]');
    await p.waitForSelector("#action-result:not([hidden])");
    const result = await p.textContent("#action-result");
    assert.match(result, new RegExp(`${id} RUNNING → SUSPENDED`));
    await p.waitForFunction(() => document.querySelector(".detail-head .pill")?.textContent === "SUSPENDED", null, { timeout: 10000 });
    assert.equal((await one(url, id)).status, "SUSPENDED");
    for (const c of parent.children.filter((c) => c.summary && c.summary.status === "RUNNING")) {
      assert.equal((await one(url, c.id)).status, "SUSPENDED", `region ${c.id} follows`);
    }
    await p.screenshot({ path: join(artifacts, "control-detail.png") });

    await p.waitForSelector('#detail-actions [data-action="resume"]');
    await actAndConfirm(p, '#detail-actions [data-action="resume"]');
    await p.waitForFunction(() => document.querySelector(".detail-head .pill")?.textContent === "RUNNING", null, { timeout: 10000 });
    assert.equal((await one(url, id)).status, "RUNNING");
    assertCalm(p);
  });

  await t.test("a conflict is explained, nothing is done, and the view refreshed", async () => {
    const p = await page(b);
    await p.goto(`${url}?id=${encodeURIComponent(id)}#token=${TOKEN}`);
    await p.waitForSelector('#detail-actions [data-action="terminate"]');
    await p.keyboard.press("l"); // live off: the page keeps showing the version it loaded
    assert.equal(await p.isChecked("#live"), false);
    const shown = (await one(url, id)).version;
    // another operator suspends it meanwhile
    const r = await fetch(new URL(`api/executions/${encodeURIComponent(id)}/suspend`, url), {
      method: "POST", headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, body: JSON.stringify({ reason: "another operator" }),
    });
    assert.equal(r.status, 200);
    await actAndConfirm(p, '#detail-actions [data-action="terminate"]');
    await p.waitForSelector("#action-result.bad");
    assert.match(await p.textContent("#action-result"), /changed since this page showed it, so nothing was done/);
    const now = await one(url, id);
    assert.equal(now.status, "SUSPENDED", "the terminate was not applied");
    assert.equal(now.version, shown + 1);
    await p.waitForFunction(() => document.querySelector(".detail-head .pill")?.textContent === "SUSPENDED", null, { timeout: 10000 });
    await p.screenshot({ path: join(artifacts, "control-conflict.png") });
    // the browser logs the 409 answer itself; the page raised nothing
    assertCalm(p, { allow: /status of 409 \(Conflict\)/ });
  });

  await t.test("bulk: rows picked, then everything matching", async () => {
    const failed = await listAll(url, "&status=FAILED");
    assert.ok(failed.length >= 3, "the demo has FAILED executions");
    const p = await page(b);
    // every write the page sends: a bulk action is one request, whatever the count
    const posts = [];
    p.on("request", (r) => {
      if (r.method() !== "GET") posts.push(`${r.method()} ${new URL(r.url()).pathname}`);
    });
    await p.goto(`${url}?status=FAILED#token=${TOKEN}`);
    await p.waitForSelector(".executions-grid tbody tr .pick-row");
    const picks = failed.slice(0, 2).map((e) => e.id);
    for (const pid of picks) await p.check(`.pick-row[data-id="${pid}"]`);
    await p.waitForFunction(() => document.querySelector("#picked-count")?.textContent === "2 picked");
    await actAndConfirm(p, "#bulk-terminate");
    await p.waitForSelector("#bulk-result:not([hidden])");
    assert.match(await p.textContent("#bulk-result"), /Terminate: 2 done, 0 unchanged, 0 conflicts, 0 refused \(of 2\)/);
    for (const pid of picks) assert.equal((await one(url, pid)).status, "CANCELLED", pid);
    assert.deepEqual(posts, ["POST /api/control/terminate"], "2 picked rows, one request");
    await p.screenshot({ path: join(artifacts, "control-bulk.png") });

    // everything matching: every finished root (all pages), purged
    await p.goto(`${url}?status=DONE,CANCELLED&roots=1#token=${TOKEN}`);
    await p.waitForSelector("#pick-matching");
    const matching = await listAll(url, "&status=DONE,CANCELLED&roots_only=true");
    await actAndConfirm(p, "#pick-matching");
    await p.waitForFunction((n) => document.querySelector("#picked-count")?.textContent === `${n} picked`, matching.length, { timeout: 10000 });
    await actAndConfirm(p, "#bulk-purge");
    await p.waitForSelector("#bulk-result:not([hidden])", { timeout: 30000 });
    const text = await p.textContent("#bulk-result");
    const m = text.match(/Purge: (\d+) done, (\d+) unchanged, (\d+) conflicts, (\d+) refused \(of (\d+)\)/);
    assert.ok(m, text);
    const [done, , conflicts, refused, of] = m.slice(1).map(Number);
    assert.equal(of, matching.length);
    assert.ok(matching.length > 1, "several rows picked");
    assert.deepEqual(posts.slice(1), ["POST /api/control/purge"], `${matching.length} picked rows, one request`);
    assert.equal(conflicts, 0);
    assert.ok(done > 0, text);
    const left = await listAll(url, "&status=DONE,CANCELLED&roots_only=true");
    assert.equal(left.length, refused, "what is left is what was refused (a live region)");
    if (refused) assert.match(text, /purge refused: not finished/);
    await p.screenshot({ path: join(artifacts, "control-bulk-purge.png") });
    assertCalm(p, { allow: /status of 400 \(Bad Request\)/ });
  });
});

test("read-only: no actions are offered", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 60, seed: 4 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const p = await page(b);
  const { body } = await apiGet(url, "api/executions?status=RUNNING&limit=1");
  await p.goto(`${url}?id=${encodeURIComponent(body.items[0].id)}`);
  await p.waitForSelector("#timeline");
  assert.equal(await p.$$eval("#detail-actions, #bulk, .pick-row", (xs) => xs.length), 0);
  const r = await fetch(new URL(`api/executions/${encodeURIComponent(body.items[0].id)}/terminate`, url), { method: "POST" });
  assert.equal(r.status, 403);
  assertCalm(p);
});
