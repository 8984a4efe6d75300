// A view's read overtaken by a newer one, in Chromium over `execstore monitor`. Every view
// shows "Loading…" over its table when a read takes more than 150 ms, and drops a read that
// a newer one overtook. The overtaken read used to return without taking its "Loading…"
// back: when the newer read ended first, the slow one's veil appeared after it and stayed,
// over rows that no click could reach (a browser test saw it for 30 s on a loaded machine).
// Here the first read is made slow on purpose (Playwright holds its request back) and a
// second one, fast, overtakes it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { browser, demo, page, serve, tempDir } from "./helpers.mjs";

/** Two reads of the view at once (the URLs `first` then `second`, each shown as Back shows
 * a page: `pushState` and `popstate`), the first held back `ms` by Playwright; then both
 * requests of `pattern` answer, and no "Loading…" may be left in `within`. */
async function overtake(p, pattern, within, first, second, ms = 700) {
  let held = 1;
  let answered = 0;
  const both = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${answered} of 2 reads of ${pattern} answered in 10 s`)), 10_000);
    p.on("response", (r) => {
      if (pattern.test(new URL(r.url()).pathname) && ++answered === 2) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const matches = (u) => pattern.test(u.pathname);
  await p.route(matches, async (route) => {
    if (held-- > 0) await new Promise((r) => setTimeout(r, ms));
    await route.continue();
  });
  await p.evaluate(([a, b]) => {
    for (const to of [a, b]) {
      history.pushState(null, "", to);
      dispatchEvent(new PopStateEvent("popstate"));
    }
  }, [first, second]);
  await both;
  await p.waitForFunction((sel) => !document.querySelector(`${sel} .state.loading`), within, { timeout: 5000 });
  await p.unroute(matches);
}

test("a read overtaken by a newer one leaves no Loading… over the view", { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 40, seed: 9 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);

  await t.test("the executions list", async () => {
    const p = await page(b);
    await p.goto(url);
    await p.waitForSelector(".executions-grid tbody tr");
    await overtake(p, /\/api\/executions$/, "#list", "?status=RUNNING", "?view=executions");
    // The rows answer a click: the first one opens its execution.
    await p.click(".executions-grid tbody tr:nth-child(1) a.exec-link", { timeout: 3000 });
    await p.waitForSelector(".detail-head");
    assert.deepEqual(p.problems.errors, [], "no page error");
  });

  await t.test("dead letters across workspaces", async () => {
    const p = await page(b);
    await p.goto(`${url}?view=dead-letters`);
    await p.waitForSelector("#dl-list tbody tr");
    await overtake(p, /\/api\/workspaces$/, "#dl-list", "?view=dead-letters", "?view=dead-letters");
    await p.click("#dl-list tbody tr:nth-child(1) a.seq-link", { timeout: 3000 });
    await p.waitForSelector("#ws-tail tr.sel");
    assert.deepEqual(p.problems.errors, [], "no page error");
  });
});
