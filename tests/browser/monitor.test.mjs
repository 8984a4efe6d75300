// The monitor's UI in Chromium, against `execstore demo` data served by `execstore monitor`.
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

const rowIds = (p) => p.$$eval(".executions-grid tbody tr", (rows) => rows.map((r) => r.dataset.id));

/** Fails the test if the page raised an error or opened a dialog. */
function assertCalm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error");
}

test("the monitor UI over a demo store", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 300, seed: 1 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const all = [];
  for (let cursor = ""; ;) {
    const { body } = await apiGet(url, `api/executions?limit=10000${cursor}`);
    all.push(...body.items);
    if (!body.next_cursor) break;
    cursor = `&cursor=${body.next_cursor}`;
  }
  assert.equal(all.length, 300);

  await t.test("the list: first page, counts chart, paging", async () => {
    const p = await page(b);
    await p.goto(url);
    await p.waitForSelector(".executions-grid tbody tr");
    assert.deepEqual(await rowIds(p), all.slice(0, 50).map((e) => e.id));
    await p.waitForSelector(".chart .total strong:not(:empty)");
    assert.equal(await p.textContent(".chart .total strong"), "300");
    assert.match(await p.textContent("#range"), /1–50 of 300 · page 1/);
    await p.screenshot({ path: join(artifacts, "monitor-list.png") });

    await p.click("#next");
    await p.waitForFunction((id) => document.querySelector(".executions-grid tbody tr")?.dataset.id === id, all[50].id);
    assert.deepEqual(await rowIds(p), all.slice(50, 100).map((e) => e.id));
    assert.match(p.url(), /cursor=/);
    // Keyboard: n is the next page, p the previous one.
    await p.keyboard.press("n");
    await p.waitForFunction((id) => document.querySelector(".executions-grid tbody tr")?.dataset.id === id, all[100].id);
    await p.keyboard.press("p");
    await p.waitForFunction((id) => document.querySelector(".executions-grid tbody tr")?.dataset.id === id, all[50].id);
    await p.click("#prev");
    await p.waitForFunction((id) => document.querySelector(".executions-grid tbody tr")?.dataset.id === id, all[0].id);
    assert.doesNotMatch(p.url(), /cursor=/);
    assertCalm(p);
  });

  await t.test("filtering by status (chart), definition, roots only and id search", async () => {
    const p = await page(b);
    await p.goto(url);
    await p.waitForSelector(".executions-grid tbody tr");
    await p.click('.chart .col[data-status="FAILED"]');
    await p.click('.chart .col[data-status="SUSPENDED"]');
    const want = all.filter((e) => e.status === "FAILED" || e.status === "SUSPENDED");
    await p.waitForFunction((n) => document.querySelectorAll(".executions-grid tbody tr").length === n, want.length);
    assert.deepEqual(await rowIds(p), want.map((e) => e.id));
    assert.match(decodeURIComponent(p.url()), /status=SUSPENDED,FAILED/);
    const statuses = await p.$$eval(".executions-grid tbody tr .pill", (xs) => xs.map((x) => x.textContent));
    assert.ok(statuses.every((s) => s === "FAILED" || s === "SUSPENDED"));

    await p.fill("#definition", "payments");
    const payments = want.filter((e) => e.definition_id === "payments");
    await p.waitForFunction((n) => document.querySelectorAll(".executions-grid tbody tr").length === n && location.search.includes("definition=payments"), payments.length);
    assert.deepEqual(await rowIds(p), payments.map((e) => e.id));

    await p.click("#clear");
    await p.check("#roots");
    const roots = all.filter((e) => e.parent_id === null);
    // Waits for the whole page of roots: the first row is a root before and after the switch.
    await p.waitForFunction((ids) => location.search.includes("roots=1") && [...document.querySelectorAll(".executions-grid tbody tr")].map((r) => r.dataset.id).join() === ids.join(), roots.slice(0, 50).map((e) => e.id));
    assert.deepEqual(await rowIds(p), roots.slice(0, 50).map((e) => e.id));
    assert.match(await p.textContent("#range"), new RegExp(`of ${roots.length}`));

    await p.uncheck("#roots");
    const parent = all.find((e) => all.some((c) => c.parent_id === e.id));
    await p.keyboard.press("/");
    await p.keyboard.type(parent.id.slice(0, 12));
    // `q` (an id prefix) lists by id.
    const family = all.filter((e) => e.id.startsWith(parent.id.slice(0, 12))).sort((x, y) => (x.id < y.id ? -1 : 1));
    await p.waitForFunction((n) => document.querySelectorAll(".executions-grid tbody tr").length === n && location.search.includes("q="), family.length);
    assert.deepEqual(await rowIds(p), family.map((e) => e.id));

    await p.fill("#q", "no-such-id");
    await p.waitForSelector(".state.empty");
    assert.match(await p.textContent(".state.empty"), /No executions match/);
    assertCalm(p);
  });

  await t.test("a detail: summary, timeline in stored order, context, family, pending", async () => {
    const p = await page(b);
    // A parent with children, its own trace and pending spawns or timers.
    const parent = all.find((e) => all.filter((c) => c.parent_id === e.id).length >= 2);
    const index = all.findIndex((e) => e.id === parent.id);
    await p.goto(`${url}?cursor=&limit=200`);
    await p.waitForSelector(".executions-grid tbody tr");
    // Keyboard: move the selection down to the parent's row and open it.
    await p.keyboard.press("j");
    for (let i = 0; i < index; i++) await p.keyboard.press("j");
    await p.keyboard.press("Enter");
    await p.waitForSelector("#timeline");
    assert.equal(await p.textContent("#detail-id"), parent.id);
    assert.match(p.url(), new RegExp(`id=${parent.id}`));

    const { body: trace } = await apiGet(url, `api/executions/${parent.id}/trace`);
    assert.ok(trace.items.length >= 3);
    const steps = await p.$$eval("#timeline .step", (xs) => xs.map((x) => ({
      index: Number(x.dataset.index),
      kind: x.querySelector(".kind").textContent,
      to: x.querySelector(".move .to").textContent,
    })));
    assert.deepEqual(steps, trace.items.map((s) => ({ index: s.index, kind: s.event_kind, to: s.to_path })));
    // The first step adds the whole context, a later one shows what changed.
    assert.ok(await p.$$eval("#timeline .step:first-child .diff .op-add", (xs) => xs.length) > 0);

    const children = all.filter((c) => c.parent_id === parent.id).map((c) => c.id);
    const family = await p.$$eval(".family .exec-link", (xs) => xs.map((x) => x.textContent));
    for (const c of children) assert.ok(family.includes(c), `${c} in the family tree`);
    assert.ok(await p.$("#context .jt"), "a JSON tree of the context");
    await p.screenshot({ path: join(artifacts, "monitor-detail.png") });

    // Navigate the tree: a child, then back up to its parent through the ancestors.
    await p.click(`.family .exec-link[title="${children[0]}"]`);
    await p.waitForFunction((id) => document.querySelector("#detail-id")?.textContent === id, children[0]);
    await p.click(`.family .exec-link[title="${parent.id}"]`);
    await p.waitForFunction((id) => document.querySelector("#detail-id")?.textContent === id, parent.id);
    await p.keyboard.press("Escape");
    await p.waitForFunction(() => !document.querySelector(".executions.with-detail"));
    assert.doesNotMatch(p.url(), /id=/);
    assertCalm(p);
  });

  await t.test("a detail closed before its load answers stays closed and empty", async () => {
    const p = await page(b);
    const id = all[0].id;
    // The execution's own read answers late: the operator closes the detail first.
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await p.route(`**/api/executions/${encodeURIComponent(id)}`, async (route) => {
      await held;
      await route.continue();
    });
    await p.goto(`${url}?id=${encodeURIComponent(id)}`);
    await p.waitForFunction((x) => document.querySelector("#detail-id")?.textContent === x, id);
    await p.keyboard.press("Escape");
    await p.waitForFunction(() => !document.querySelector(".executions.with-detail"));
    const answered = p.waitForResponse((r) => r.url().endsWith(`/api/executions/${encodeURIComponent(id)}`));
    release();
    await answered;
    await p.waitForTimeout(200);
    assert.equal(await p.$("#detail-id"), null, "the late answer filled the closed pane");
    assert.equal(await p.$("#timeline"), null);
    assertCalm(p);
  });

  await t.test("a deep link restores filters and the open detail, also after a reload", async () => {
    const p = await page(b);
    const target = all.find((e) => e.status === "RUNNING" && e.definition_id === "orders");
    await p.goto(`${url}?status=RUNNING&definition=orders&id=${encodeURIComponent(target.id)}`);
    await p.waitForSelector("#timeline");
    const check = async () => {
      assert.equal(await p.textContent("#detail-id"), target.id);
      assert.equal(await p.inputValue("#definition"), "orders");
      assert.equal(await p.getAttribute('.chart .col[data-status="RUNNING"]', "aria-pressed"), "true");
      const ids = await rowIds(p);
      assert.deepEqual(ids, all.filter((e) => e.status === "RUNNING" && e.definition_id === "orders").slice(0, 50).map((e) => e.id));
      assert.equal(await p.getAttribute(`.executions-grid tr[data-id="${target.id}"]`, "class").then((c) => c.includes("open")), true);
    };
    await p.waitForSelector(".executions-grid tbody tr");
    await check();
    await p.reload();
    await p.waitForSelector("#timeline");
    await p.waitForSelector(".executions-grid tbody tr");
    await check();
    // Back goes to where the history came from.
    await p.click(".detail .close");
    await p.waitForFunction(() => !location.search.includes("id="));
    await p.goBack();
    await p.waitForFunction((id) => document.querySelector("#detail-id")?.textContent === id, target.id);
    assertCalm(p);
  });

  await t.test("the outbox, timers and spawns views, oldest first, overdue highlighted", async () => {
    const p = await page(b);
    const { body: outbox } = await apiGet(url, "api/outbox?limit=50");
    await p.goto(`${url}?view=outbox`);
    await p.waitForSelector("#store-list table");
    const seqs = await p.$$eval("#store-list tbody tr", (xs) => xs.map((x) => Number(x.dataset.seq)));
    assert.deepEqual(seqs, outbox.items.map((e) => e.seq));
    assert.deepEqual([...seqs].sort((a, b) => a - b), seqs, "oldest first");
    assert.ok((await p.$$("#store-list tr.overdue")).length > 0, "the demo's stuck events are highlighted");
    await p.screenshot({ path: join(artifacts, "monitor-outbox.png") });

    await p.click('a[data-view="timers"]');
    await p.waitForFunction(() => document.querySelector(".store-view")?.dataset.view === "timers" && document.querySelector("#store-list table"));
    const { body: timers } = await apiGet(url, "api/timers?limit=50");
    const shown = await p.$$eval("#store-list tbody tr", (xs) => xs.length);
    assert.equal(shown, timers.items.length);
    const overdue = timers.items.filter((x) => x.fire_at < timers.now).length;
    assert.ok(overdue > 0);
    assert.equal((await p.$$("#store-list tr.overdue")).length, overdue);
    assert.match(await p.textContent("#store-list tr.overdue .due"), /overdue by/);

    await p.click('a[data-view="spawns"]');
    await p.waitForFunction(() => document.querySelector(".store-view")?.dataset.view === "spawns" && document.querySelector("#store-list table"));
    const { body: spawns } = await apiGet(url, "api/spawns?limit=50");
    assert.equal(await p.$$eval("#store-list tbody tr", (xs) => xs.length), spawns.items.length);
    // A target links to its execution.
    await p.click("#store-list tbody tr .exec-link");
    await p.waitForSelector("#timeline");
    assertCalm(p);
  });

  await t.test("errors say what happened", async () => {
    const p = await page(b);
    await p.goto(`${url}?id=no-such-execution`);
    // An id the store does not hold: said in the pane (found out without a 404).
    await p.waitForSelector(".detail #gone");
    assert.match(await p.textContent(".detail #gone"), /No such execution.*purged, or never existed/s);
    await p.goto(`${url}?cursor=bogus`);
    await p.waitForSelector("#list .state.error");
    assert.match(await p.textContent("#list .state.error"), /not a cursor of this store/);
    assert.deepEqual(p.problems.dialogs, []);
  });
});

test("live refresh and stored HTML shown as text", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 120, seed: 2 });
  fixture("hostile", db);
  const token = "browser-test-token";
  const url = await serve(t, ["monitor", "--db", db, "--token", token]);
  const b = await browser(t);

  await t.test("a stored <img onerror> is shown as text and runs nothing", async () => {
    const p = await page(b);
    await p.goto(`${url}?q=xss-`);
    await p.waitForSelector(".executions-grid tbody tr");
    const ids = await rowIds(p);
    assert.ok(ids.includes("xss-<img src=x onerror=alert(1)>"), ids.join(","));
    assert.match(await p.textContent("#list"), /<b><img src=x onerror=alert\(1\)><\/b>/);
    await p.click('.executions-grid tr[data-id="xss-context"]');
    await p.waitForSelector("#timeline");
    const context = await p.textContent("#context");
    assert.match(context, /"<img src=x onerror=alert\(1\)>"/);
    assert.match(context, /"<script>alert\(2\)<\/script>"/);
    const timeline = await p.textContent("#timeline");
    assert.match(timeline, /<img src=x onerror=alert\(1\)>/);
    assert.match(await p.textContent(".detail"), /<i>g<\/i>/);
    // Nothing was parsed as HTML: the only images are the page's own, no script was added.
    assert.equal(await p.$$eval("main img, main script, main b, main i", (xs) => xs.length), 0);
    await p.waitForTimeout(300);
    assertCalm(p);
  });

  await t.test("live refresh after a write through the API and one from another process", async () => {
    const p = await page(b);
    await p.goto(`${url}?view=outbox#token=${token}`);
    await p.waitForSelector("#store-list table");
    assert.doesNotMatch(p.url(), /token/, "the token leaves the address bar");
    const before = await p.$$eval("#store-list tbody tr", (xs) => xs.map((x) => Number(x.dataset.seq)));
    const seq = before[0];
    const r = await fetch(new URL(`api/outbox/${seq}/ack`, url), { method: "POST", headers: { Authorization: `Bearer ${token}` }, body: JSON.stringify({ reason: "relay down" }) });
    assert.equal(r.status, 200);
    await p.waitForFunction((s) => !document.querySelector(`#store-list tr[data-seq="${s}"]`), seq, { timeout: 10000 });

    // Acking from the page itself (the button, its reason, confirm) with the token from the link.
    const next = before[1];
    await p.click(`#store-list tr[data-seq="${next}"] button[data-write="ack"]`);
    await p.fill(`#store-list tr[data-seq="${next}"] .reason-input`, "delivered by hand");
    await p.click(`#store-list tr[data-seq="${next}"] [data-confirm="yes"]`);
    await p.waitForFunction((s) => !document.querySelector(`#store-list tr[data-seq="${s}"]`), next, { timeout: 10000 });

    // Another process changes an execution: the open list and detail follow.
    const { body: list } = await apiGet(url, "api/executions?status=RUNNING&limit=1");
    const id = list.items[0].id;
    await p.goto(`${url}?id=${encodeURIComponent(id)}`);
    await p.waitForSelector("#timeline");
    assert.equal(await p.textContent(".detail-head .pill"), "RUNNING");
    fixture("touch", db, id);
    await p.waitForFunction(() => document.querySelector(".detail-head .pill")?.textContent === "FAILED", null, { timeout: 10000 });
    assert.match(await p.textContent(".detail .error-box"), /set by a second process/);

    // Paused: nothing moves until live is switched on again.
    const { body: running } = await apiGet(url, "api/executions?status=RUNNING&limit=1");
    const other = running.items[0].id;
    await p.goto(`${url}?id=${encodeURIComponent(other)}`);
    await p.waitForSelector("#timeline");
    await p.keyboard.press("l");
    assert.equal(await p.isChecked("#live"), false);
    fixture("touch", db, other);
    await p.waitForTimeout(4500);
    assert.equal(await p.textContent(".detail-head .pill"), "RUNNING", "paused: not refreshed");
    await p.keyboard.press("l");
    await p.waitForFunction(() => document.querySelector(".detail-head .pill")?.textContent === "FAILED", null, { timeout: 10000 });
    assertCalm(p);
  });
});

test("time to first render of the list at 100,000 executions (reported, not asserted)", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 2000, seed: 9 });
  fixture("replicate", db, "49");
  const url = await serve(t, ["monitor", "--db", db]);
  const { body: counts } = await apiGet(url, "api/counts");
  assert.equal(counts.total, 100000);
  const b = await browser(t);
  const p = await page(b);
  const runs = [];
  for (let i = 0; i < 3; i++) {
    await p.goto(`${url}?r=${i}`);
    await p.waitForSelector(".executions-grid tbody tr");
    await p.waitForFunction(() => document.querySelector(".chart .total strong")?.textContent === "100,000");
    runs.push(await p.evaluate(() => {
      const at = (name) => Math.round(performance.getEntriesByName(name)[0].startTime);
      return { list: at("execstore:list-rendered"), chart: at("execstore:counts-rendered") };
    }));
  }
  await p.click("#next");
  await p.waitForFunction(() => location.search.includes("cursor="));
  await p.screenshot({ path: join(artifacts, "monitor-list-100k.png") });
  const line = `list first render at 100,000 executions: ${runs.map((r) => `${r.list} ms`).join(", ")} (navigation start to rows in the DOM; chart with counts by ${runs.map((r) => `${r.chart} ms`).join(", ")})`;
  console.log(line);
  t.diagnostic(line);
  assertCalm(p);
});
