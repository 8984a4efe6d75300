// The monitor entirely in the browser (crates/execstore-cli/web/local.html) in headless Chromium: a demo store
// file written by the native `execstore demo` is imported through the page's file picker
// into OPFS, in a dedicated worker, and browsed with the same UI (its API answered in the
// worker by the wasm MonitorApi). The list and its counts match the file (as the native CLI
// reads it), a detail opens with the stored timeline, a reload reopens the store from OPFS,
// a bad file is refused and leaves the imported store as it was, the status chart's labels
// are all distinguishable, and the worker samples the metrics into the API's ring on a timer
// (the Metrics view charts it). Prints the time from the import to the list's first render.
// Run: node --test tests/js/  (needs `npm run build:wasm`, `cargo build -p execstore-cli`, Chromium)
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

import { binMissing, cliJson, demo, tempDir } from "./native.mjs";
import { ARGS, CHROMIUM, noChromium } from "./chromium.mjs";
import { serveRepository } from "./serve.mjs";

const ARTIFACTS = process.env.EXECSTORE_ARTIFACTS ?? fileURLToPath(new URL("../../test-artifacts", import.meta.url));
const skip = noChromium || binMissing();

const rowIds = (p) => p.$$eval(".executions-grid tbody tr", (rows) => rows.map((r) => r.dataset.id));

describe("the in-browser monitor (web/local.html)", { skip }, () => {
  let tmp;
  let db;
  let all;
  let server;
  let browser;
  let context;
  let page;
  const problems = [];

  before(async () => {
    tmp = tempDir();
    db = demo(tmp.dir, { executions: 300, seed: 5 });
    // in the monitor's order: most recently updated first
    all = cliJson(["list", "--db", db, "--all", "--order", "updated"]).items;
    assert.equal(all.length, 300);
    mkdirSync(ARTIFACTS, { recursive: true });
    server = await serveRepository();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    page = await context.newPage();
    page.on("pageerror", (error) => problems.push(String(error)));
    page.on("dialog", (dialog) => {
      problems.push(`dialog: ${dialog.message()}`);
      dialog.dismiss();
    });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    tmp?.cleanup();
  });

  test("imports a demo file into OPFS and lists it: rows and counts as in the file", async () => {
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html`);
    await page.waitForSelector("#importer:not([hidden])");
    assert.equal(await page.isVisible("#main"), false, "no UI before a store is open");
    await page.setInputFiles("#file", db);
    await page.waitForSelector(".executions-grid tbody tr", { timeout: 30000 });
    await page.waitForFunction(() => document.querySelector(".chart .total strong")?.textContent === "300");
    const ms = await page.evaluate(() => {
      const at = (name) => performance.getEntriesByName(name)[0].startTime;
      return Math.round(at("execstore:list-rendered") - at("execstore:import-start"));
    });
    const line = `in-browser monitor: import of the demo file (300 executions, OPFS) to the list's first render: ${ms} ms`;
    console.log(line);

    assert.deepEqual(await rowIds(page), all.slice(0, 50).map((e) => e.id));
    const expected = {};
    for (const e of all) expected[e.status] = (expected[e.status] ?? 0) + 1;
    const shown = await page.$$eval(".chart .col", (cols) =>
      Object.fromEntries(cols.map((c) => [c.dataset.status, Number(c.querySelector(".n").textContent.replace(/,/g, ""))])));
    for (const [status, n] of Object.entries(shown)) assert.equal(n, expected[status] ?? 0, status);
    assert.match(await page.textContent("#store"), /demo\.db/);
    assert.equal(await page.textContent("#mode .badge"), "read-only");
    await page.screenshot({ path: join(ARTIFACTS, "monitor-local-list.png") });

    // Paging and a status filter run through the worker too.
    await page.click("#next");
    await page.waitForFunction((id) => document.querySelector(".executions-grid tbody tr")?.dataset.id === id, all[50].id);
    await page.click('.chart .col[data-status="FAILED"]');
    const failed = all.filter((e) => e.status === "FAILED").slice(0, 50).map((e) => e.id);
    await page.waitForFunction((id) => document.querySelector(".executions-grid tbody tr")?.dataset.id === id, failed[0]);
    assert.deepEqual(await rowIds(page), failed);
    assert.deepEqual(problems, []);
  });

  test("opens a detail with the stored timeline", async () => {
    const parent = all.find((e) => all.filter((c) => c.parent_id === e.id).length >= 2);
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html?id=${parent.id}`);
    await page.waitForSelector("#timeline .step", { timeout: 30000 });
    assert.equal(await page.textContent("#detail-id"), parent.id);
    const trace = cliJson(["trace", "--db", db, parent.id]);
    const steps = await page.$$eval("#timeline .step", (xs) => xs.map((x) => ({
      index: Number(x.dataset.index),
      kind: x.querySelector(".kind").textContent,
    })));
    const stored = (trace.items ?? trace).map((s) => ({ index: s.index, kind: s.event_kind }));
    assert.ok(stored.length >= 2);
    assert.deepEqual(steps, stored);
    const family = await page.$$eval(".family .exec-link", (xs) => xs.map((x) => x.textContent));
    for (const child of all.filter((c) => c.parent_id === parent.id)) assert.ok(family.includes(child.id), child.id);
    await page.screenshot({ path: join(ARTIFACTS, "monitor-local-detail.png") });
    assert.deepEqual(problems, []);
  });

  test("a reload reopens the store from OPFS; a bad file is refused and changes nothing", async () => {
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html`);
    await page.waitForSelector(".executions-grid tbody tr", { timeout: 30000 });
    assert.equal(await page.isVisible("#importer"), false, "no import asked: the store is in OPFS");
    assert.deepEqual(await rowIds(page), all.slice(0, 50).map((e) => e.id));
    const reopened = await page.evaluate(() => Math.round(performance.getEntriesByName("execstore:list-rendered")[0].startTime));
    console.log(`in-browser monitor: reload (the store reopened from OPFS), navigation start to the list's first render: ${reopened} ms`);

    const bad = join(tmp.dir, "not-a-store.db");
    writeFileSync(bad, "this is not a SQLite file".repeat(100));
    await page.click("#import-another");
    await page.setInputFiles("#file", bad);
    await page.waitForSelector("#import-state.error");
    assert.match(await page.textContent("#import-state"), /not a SQLite database file/);
    await page.reload();
    await page.waitForSelector(".executions-grid tbody tr", { timeout: 30000 });
    await page.waitForFunction(() => document.querySelector(".chart .total strong")?.textContent === "300");
    assert.deepEqual(problems, []);
  });

  test("every status label of the chart is distinguishable, wide or narrow", async () => {
    for (const width of [1400, 700]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${server.url}/crates/execstore-cli/web/local.html`);
      await page.waitForFunction(() => document.querySelector(".chart .total strong")?.textContent === "300", null, { timeout: 30000 });
      const labels = await page.$$eval(".chart .col .label", (xs) => xs.map((x) => ({
        text: x.innerText.trim(),
        clipped: x.scrollWidth > x.parentElement.clientWidth,
      })));
      assert.equal(labels.length, 7);
      assert.equal(new Set(labels.map((l) => l.text)).size, 7, `${width}px: ${labels.map((l) => l.text)}`);
      for (const l of labels) {
        assert.ok(l.text && !l.text.includes("…"), `${width}px: ${l.text}`);
        assert.equal(l.clipped, false, `${width}px: ${l.text} fits its column`);
      }
    }
  });

  test("the worker samples the metrics on a timer: the Metrics view charts the ring, as the native monitor's", async () => {
    await page.setViewportSize({ width: 1400, height: 900 });
    // One sample a second (`?metrics_period=1`), from the moment the store is reopened.
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html?metrics_period=1`);
    await page.waitForSelector(".executions-grid tbody tr", { timeout: 30000 });
    // Samples are taken while another view is shown: the worker's timer, not the view's reads.
    await page.waitForTimeout(3500);
    await page.click('nav.views a[data-view="metrics"]');
    await page.waitForSelector('[data-chart="queues"] canvas', { timeout: 30000 });
    const summary = () => page.$eval("#metrics-summary", (el) => ({ live: el.dataset.live, text: el.textContent }));
    await page.waitForFunction(() => document.querySelector("#metrics-summary")?.dataset.live !== undefined);
    const first = await summary();
    assert.equal(first.live, "true", `the in-browser monitor keeps a ring: ${first.text}`);
    const count = (text) => Number(/: (\d+) samples? so far/.exec(text)?.[1]);
    assert.match(first.text, /^Sampled by the monitor every 1 s, the last 360 kept in memory: \d+ samples? so far\.$/);
    assert.ok(count(first.text) >= 3, `the samples of before the view opened: ${first.text}`);
    // The ring grows while the view is open (it reads only the new samples, `since`).
    await page.waitForFunction(
      (n) => Number(/: (\d+) samples? so far/.exec(document.querySelector("#metrics-summary").textContent)?.[1]) >= n + 2,
      count(first.text),
      { timeout: 15000 },
    );
    // The figures are the file's: its 300 executions by status, as the list's counts.
    const card = await page.$eval('[data-chart="exec-status"]', (el) => ({ points: Number(el.dataset.points), latest: JSON.parse(el.dataset.latest) }));
    assert.equal(card.latest.reduce((a, b) => a + b, 0), 300, JSON.stringify(card));
    assert.ok(card.points >= 5, `a point per sample: ${card.points}`);
    assert.equal(await page.isVisible("#prometheus-link"), false, "no /metrics in the browser");
    await page.screenshot({ path: join(ARTIFACTS, "monitor-local-metrics.png"), fullPage: true });
    assert.deepEqual(problems, []);
  });
});
