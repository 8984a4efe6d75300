// The history's mode (timeline / waterfall / JSON) and kind filter survive navigation, in
// Chromium over a demo store: opening another execution, changing the list's order, a reload,
// back and forward, and a copied link all keep them (they are part of the route, not only of
// the URL the history section last wrote).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const search = (p) => new URL(p.url()).searchParams;

/** Waits until the detail shows execution `id` with the history drawn as `mode`. */
async function waitForHistory(p, id, mode) {
  const selector = { timeline: "#history #timeline", waterfall: "#history #waterfall", json: "#history #bundle-json" }[mode];
  try {
    await p.waitForFunction(
      ([id, selector]) => document.querySelector("#detail-id")?.textContent === id && document.querySelector(selector) !== null,
      [id, selector],
      { timeout: 10000 },
    );
  } catch (e) {
    const shown = await p.evaluate(() => ({
      id: document.querySelector("#detail-id")?.textContent,
      pressed: document.querySelector('#history .seg button[aria-pressed="true"]')?.dataset.mode,
    }));
    throw new Error(`not ${id} as ${mode} at ${p.url()}: ${JSON.stringify(shown)}: ${e.message}`);
  }
  const pressed = await p.$eval('#history .seg button[aria-pressed="true"]', (b) => b.dataset.mode);
  assert.equal(pressed, mode, "the mode's button is the pressed one");
}

test("the history's mode survives navigation, reload, back/forward and a copied link", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 60, seed: 5 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  // Two executions of the list's first page with a history to draw.
  const { body } = await apiGet(url, "api/executions?limit=50");
  const withSteps = [];
  for (const e of body.items) {
    const trace = (await apiGet(url, `api/executions/${encodeURIComponent(e.id)}/trace`)).body.items;
    if (trace.length > 1) withSteps.push({ id: e.id, trace });
    if (withSteps.length === 2) break;
  }
  assert.equal(withSteps.length, 2, "the demo has executions with a history");
  const [a, c] = withSteps;

  const p = await page(b);
  await p.goto(`${url}?id=${encodeURIComponent(a.id)}`);
  await waitForHistory(p, a.id, "timeline");
  await p.click('#history .seg button[data-mode="waterfall"]');
  await waitForHistory(p, a.id, "waterfall");
  assert.equal(search(p).get("history"), "waterfall");

  // Another execution, opened from the list: the mode stays.
  await p.click(`.executions-grid tbody tr[data-id="${c.id}"] a.row-link`);
  await waitForHistory(p, c.id, "waterfall");
  assert.equal(search(p).get("id"), c.id);
  assert.equal(search(p).get("history"), "waterfall", "opening another execution keeps the mode");

  // A filter of the list moves: the mode stays.
  await p.selectOption("#order", "id");
  await p.waitForFunction(() => new URL(location.href).searchParams.get("order") === "id");
  assert.equal(search(p).get("history"), "waterfall", "a filter change keeps the mode");
  await waitForHistory(p, c.id, "waterfall");

  // A reload.
  await p.reload();
  await waitForHistory(p, c.id, "waterfall");

  // Back to the first execution, and forward again.
  await p.goBack();
  await p.waitForFunction(() => new URL(location.href).searchParams.get("order") === null);
  await waitForHistory(p, c.id, "waterfall");
  await p.goBack();
  await waitForHistory(p, a.id, "waterfall");
  assert.equal(search(p).get("history"), "waterfall");
  await p.goForward();
  await waitForHistory(p, c.id, "waterfall");

  // JSON and a kind filter, then another execution: both kept; a copied link shows the same.
  await p.click('#history .seg button[data-mode="timeline"]');
  await waitForHistory(p, c.id, "timeline");
  assert.equal(search(p).get("history"), null, "the default mode is not written");
  const kind = c.trace.map((s) => s.event_kind).find((k) => typeof k === "string" && k);
  if (kind) {
    await p.click(`.kind-chip[data-kind="${kind}"]`);
    assert.equal(search(p).get("kind"), kind);
  }
  await p.click('#history .seg button[data-mode="json"]');
  await waitForHistory(p, c.id, "json");
  await p.click(`.executions-grid tbody tr[data-id="${a.id}"] a.row-link`);
  await waitForHistory(p, a.id, "json");
  assert.equal(search(p).get("history"), "json");
  if (kind) assert.equal(search(p).get("kind"), kind, "the kind filter is kept too");
  const copied = p.url();
  const other = await page(b);
  await other.goto(copied);
  await waitForHistory(other, a.id, "json");
  await other.screenshot({ path: join(artifacts, "monitor-history-mode-kept.png") });
  // Another view: the mode is the executions view's, not written into another view's URL
  // (the workspaces view's own `history` names a rule).
  await p.click('nav.views a[data-view="workspaces"]');
  await p.waitForFunction(() => new URL(location.href).searchParams.get("view") === "workspaces");
  assert.equal(search(p).get("history"), null);
  assert.equal(search(p).get("kind"), null);
  assert.deepEqual(p.problems.errors, []);
  assert.deepEqual(other.problems.errors, []);
});
