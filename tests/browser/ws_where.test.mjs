// The workspace views' where boxes in Chromium (docs/search.md, "The workspace log and
// runs"): the log and the runs filtered by a query kept in the URL, the page's rows equal to
// the API's answer, how far the search scanned, older matches by the scan's cursor, a bad
// query's error under the box, and suggestions of the events' paths.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const link = (params) => `?${new URLSearchParams({ view: "workspaces", ...params })}`;
const enc = encodeURIComponent;

function assertCalm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error");
}

test("where over the workspace log and runs", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 30, seed: 7 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const api = "api/workspaces/acme/prod";
  const service = (await apiGet(url, `${api}/log?last=1&where=${enc("event.service exists")}`)).body.items[0].event.service;
  assert.ok(service, "the demo's events name a service");

  await t.test("the log: the box filters by the events' fields, says how far it scanned", async () => {
    const p = await page(b);
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod" })}`);
    await p.waitForSelector(".ws-log tbody tr");
    await p.click("#ws-where");
    await p.keyboard.type("event.");
    await p.waitForFunction(() => [...document.querySelectorAll("#ws-where-suggestions option")].some((o) => o.value.startsWith("event.service")));
    const query = `event.service = "${service}" and type = oncall:heartbeat`;
    await p.fill("#ws-where", query);
    await p.press("#ws-where", "Enter");
    await p.waitForFunction(() => /where=/.test(location.search));
    await p.waitForFunction(() => !document.querySelector("#ws-where-scan").hidden);
    const expected = (await apiGet(url, `${api}/log?last=100&where=${enc(query)}`)).body;
    assert.ok(expected.items.length > 0, "the demo has such heartbeats");
    await p.waitForFunction((n) => document.querySelectorAll(".ws-log tbody tr").length === n, expected.items.length);
    const seqs = await p.$$eval(".ws-log tbody tr", (rows) => rows.map((r) => Number(r.dataset.seq)));
    assert.deepEqual(seqs, expected.items.map((e) => e.seq));
    const types = await p.$$eval(".ws-log tbody td.type", (tds) => [...new Set(tds.map((td) => td.textContent))]);
    assert.deepEqual(types, ["oncall:heartbeat"]);
    assert.match(await p.textContent("#ws-where-scan"), /scanned down to seq \d+ \(\d+ envelopes\)/);
    assert.match(await p.textContent("#ws-tail-state"), /a search: the tail does not follow/);
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-log-where.png") });
    // The link opens the same search.
    const again = await page(b);
    await again.goto(p.url());
    await again.waitForFunction((n) => document.querySelectorAll(".ws-log tbody tr").length === n, expected.items.length);
    assert.equal(await again.inputValue("#ws-where"), query);
    assertCalm(p);
    assertCalm(again);
  });

  await t.test("the log: older matches by the scan's cursor", async () => {
    const p = await page(b);
    // A page of 50 matches of every envelope: the head's 50; older ones go before them.
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", last: "50", where: "seq > 0" })}`);
    const head = (await apiGet(url, `${api}`)).body.head_seq;
    await p.waitForSelector(".ws-log tbody tr");
    const first = await p.$$eval(".ws-log tbody tr", (rows) => rows.map((r) => Number(r.dataset.seq)));
    assert.equal(first[first.length - 1], head);
    assert.equal(first.length, Math.min(50, head));
    if (head > 50) {
      await p.click("#ws-where-more");
      await p.waitForFunction((n) => document.querySelectorAll(".ws-log tbody tr").length === n, Math.min(100, head));
      const more = await p.$$eval(".ws-log tbody tr", (rows) => rows.map((r) => Number(r.dataset.seq)));
      assert.deepEqual(more.slice(-50), first, "the newer page stays, the older goes before it");
      assert.equal(more[0], head - more.length + 1);
    }
    assertCalm(p);
  });

  await t.test("at phone size in the dark theme: the box fits, no horizontal scroll", async () => {
    const p = await page(b, { size: "phone", theme: "dark" });
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", where: "event.service exists" })}`);
    await p.waitForSelector(".ws-log tbody tr");
    await p.waitForFunction(() => !document.querySelector("#ws-where-scan").hidden);
    const box = await p.$eval("#ws-where", (el) => el.getBoundingClientRect().toJSON());
    assert.ok(box.width > 100 && box.right <= 390, `the box fits the screen: ${JSON.stringify(box)}`);
    assert.equal(await p.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true, "no horizontal scroll");
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-log-where-phone-dark.png") });
    assertCalm(p);
  });

  await t.test("a bad query: its error under the box, naming the position", async () => {
    const p = await page(b);
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod" })}`);
    await p.waitForSelector(".ws-log tbody tr");
    await p.fill("#ws-where", "event.service =");
    await p.press("#ws-where", "Enter");
    await p.waitForSelector("#ws-where-error:not([hidden])");
    assert.match(await p.textContent("#ws-where-error"), /at character 16/);
    assert.equal(await p.getAttribute("#ws-where", "aria-invalid"), "true");
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-where-error.png") });
    await p.fill("#ws-where", "event.service exists");
    await p.press("#ws-where", "Enter");
    await p.waitForSelector("#ws-where-error[hidden]", { state: "attached" });
    // The browser logs the 400 itself; nothing else may go wrong.
    p.problems.errors = p.problems.errors.filter((e) => !/status of 400/.test(e));
    assertCalm(p);
  });

  await t.test("runs: by scope, status and the event that fired them, paged by the search's cursor", async () => {
    const p = await page(b);
    const query = `scope.service = "${service}"`;
    await p.goto(`${url}${link({ tenant: "acme", ws: "prod", tab: "runs" })}`);
    await p.waitForSelector("#ws-runs tbody tr");
    await p.fill("#ws-runs-where", query);
    await p.press("#ws-runs-where", "Enter");
    await p.waitForFunction(() => /where=/.test(location.search) && !document.querySelector("#ws-runs-where-scan").hidden);
    const expected = (await apiGet(url, `${api}/runs?where=${enc(query)}`)).body;
    assert.ok(expected.items.length > 0, "the demo has runs of that service");
    await p.waitForFunction((n) => document.querySelectorAll("#ws-runs tbody tr").length === n, expected.items.length);
    const ids = await p.$$eval("#ws-runs tbody tr td:first-child", (tds) => tds.map((td) => td.textContent));
    assert.deepEqual(ids, expected.items.map((i) => i.run.id));
    assert.match(await p.textContent("#ws-runs-where-scan"), /scanned \d+ runs: \d+ matches/);
    await p.screenshot({ path: join(artifacts, "monitor-workspaces-runs-where.png") });
    // The event that fired them.
    const fired = `event.service = "${service}"`;
    await p.fill("#ws-runs-where", fired);
    await p.press("#ws-runs-where", "Enter");
    const byEvent = (await apiGet(url, `${api}/runs?where=${enc(fired)}`)).body;
    await p.waitForFunction((n) => document.querySelectorAll("#ws-runs tbody tr").length === n || (n === 0 && document.querySelector("#ws-runs .empty")), byEvent.items.length);
    // Next ▶ follows the search's cursor, and the query stays in the URL.
    assert.equal(await p.isDisabled("#ws-next"), !byEvent.next_cursor);
    if (byEvent.next_cursor) {
      await p.click("#ws-next");
      await p.waitForFunction(() => /cursor=/.test(location.search) && /where=/.test(location.search));
    }
    assertCalm(p);
  });
});
