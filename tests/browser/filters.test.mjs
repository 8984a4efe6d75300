// The execution list's time window and state/id search in Chromium, over a demo store: the
// controls filter the list as the API does, the URL holds them (a reload shows the same),
// an inverted window is explained, and "Clear filters" resets them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const rowIds = (p) => p.$$eval(".executions-grid tbody tr", (rows) => rows.map((r) => r.dataset.id));

/** Waits until the list shows exactly `ids` (the first page of them). */
async function waitForRows(p, ids) {
  try {
    await waitForExactly(p, ids);
  } catch (e) {
    const got = await rowIds(p);
    throw new Error(`the list shows ${JSON.stringify(got)} at ${p.url()}, not ${JSON.stringify(ids)}: ${e.message}`);
  }
}

async function waitForExactly(p, ids) {
  await p.waitForFunction(
    (want) => {
      const got = [...document.querySelectorAll(".executions-grid tbody tr")].map((r) => r.dataset.id);
      if (!want.length) return document.querySelector(".state.empty") !== null;
      return got.length === want.length && got.every((id, i) => id === want[i]);
    },
    ids,
    { timeout: 10000 },
  );
}

/** `seconds` as the `datetime-local` value of the page's own time zone. */
const localInput = (p, seconds) =>
  p.evaluate((s) => {
    const d = new Date(s * 1000);
    return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
  }, seconds);

const inState = (e, s) => e.id.startsWith(s) || e.active_path === s || (e.active_path || "").startsWith(`${s}.`);

test("time window and search filters in the list", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 300, seed: 3 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const { body } = await apiGet(url, "api/executions?limit=10000");
  const all = body.items;
  assert.equal(all.length, 300);

  // A window over `updated_at` that keeps a few dozen, on whole seconds (the control's step).
  const updated = all.map((e) => e.updated_at).filter((u) => u !== null).sort((x, y) => x - y);
  assert.ok(updated.length > 200, "the demo stamps updated_at");
  const from = Math.floor(updated[100]);
  const until = Math.floor(updated[140]);
  assert.ok(from < until, "the demo's update times spread");
  const inWindow = all.filter((e) => e.updated_at !== null && e.updated_at >= from && e.updated_at < until);
  assert.ok(inWindow.length > 10 && inWindow.length <= 50, `a window of ${inWindow.length}`);

  await t.test("the controls filter by updated time, and the URL keeps them", async () => {
    const p = await page(b);
    await p.goto(url);
    await waitForRows(p, all.slice(0, 50).map((e) => e.id));
    assert.ok(await p.isDisabled("#time-from"), "no bounds before a time is chosen");
    await p.selectOption("#time-field", "updated");
    await p.fill("#time-from", await localInput(p, from));
    await p.fill("#time-until", await localInput(p, until));
    await waitForRows(p, inWindow.map((e) => e.id));
    // The status counts follow the window, so the range gives its total (the counts answer
    // may land after the rows: each field's change asks again, and the last answer stays).
    const range = `1–${inWindow.length} of ${inWindow.length} · page 1`;
    await p.waitForFunction((want) => document.querySelector("#range")?.textContent === want, range, { timeout: 10000 })
      .catch(() => {});
    assert.equal(await p.textContent("#range"), range);
    const shown = new URL(p.url()).searchParams;
    assert.equal(shown.get("time"), "updated");
    assert.equal(Date.parse(shown.get("from")) / 1000, from);
    assert.equal(Date.parse(shown.get("until")) / 1000, until);
    assert.equal(await p.isHidden("#clear"), false, "Clear filters offered");

    // The same from the API, and the same after a reload (a deep link).
    const api = await apiGet(url, `api/executions?limit=50&updated_after=${from}&updated_before=${until}`);
    assert.deepEqual(api.body.items.map((e) => e.id), inWindow.map((e) => e.id));
    await p.reload();
    await waitForRows(p, inWindow.map((e) => e.id));
    assert.equal(await p.inputValue("#time-field"), "updated");
    // Compared as instants: the browser drops ":00" seconds from a datetime-local value.
    const instant = (local) => p.evaluate((v) => new Date(v).getTime(), local);
    assert.equal(await instant(await p.inputValue("#time-from")), await instant(await localInput(p, from)));
    await p.screenshot({ path: join(artifacts, "monitor-filters-window.png") });
    assert.deepEqual(p.problems.errors, []);
    assert.deepEqual(p.problems.dialogs, []);
  });

  await t.test("the search finds a state and what is below it, and ids by prefix", async () => {
    const p = await page(b);
    // The top state of the demo's most common active path: everything below it is found.
    const tops = new Map();
    for (const e of all) {
      const top = (e.active_path || "").split(".")[0];
      if (top) tops.set(top, (tops.get(top) || 0) + 1);
    }
    const state = [...tops.entries()].sort((x, y) => y[1] - x[1])[0][0];
    const deeper = all.find((e) => (e.active_path || "").split(".").length > 2).active_path.split(".").slice(0, 2).join(".");
    await p.goto(url);
    await waitForRows(p, all.slice(0, 50).map((e) => e.id));
    for (const s of [deeper, state, all[7].id.slice(0, 6)]) {
      const want = all.filter((e) => inState(e, s));
      assert.ok(want.length > 0, `${s} finds something`);
      await p.fill("#find", s);
      await waitForRows(p, want.slice(0, 50).map((e) => e.id));
      assert.equal(new URL(p.url()).searchParams.get("find"), s);
    }
    // A partial segment finds no state.
    const partial = deeper.slice(0, -1);
    if (!all.some((e) => inState(e, partial))) {
      await p.fill("#find", partial);
      await waitForRows(p, []);
      assert.match(await p.textContent(".state.empty"), /No executions match/);
    }
    // Search and window together, then Clear filters brings everything back.
    await p.fill("#find", deeper);
    await p.selectOption("#time-field", "updated");
    await p.fill("#time-from", await localInput(p, from));
    await p.fill("#time-until", await localInput(p, until));
    const both = inWindow.filter((e) => inState(e, deeper));
    await waitForRows(p, both.map((e) => e.id));
    await p.screenshot({ path: join(artifacts, "monitor-filters-search.png") });
    await p.click("#clear");
    await waitForRows(p, all.slice(0, 50).map((e) => e.id));
    assert.equal(await p.inputValue("#find"), "");
    assert.equal(await p.inputValue("#time-field"), "");
    for (const key of ["find", "time", "from", "until"]) assert.equal(new URL(p.url()).searchParams.get(key), null);
    assert.deepEqual(p.problems.errors, []);
    assert.deepEqual(p.problems.dialogs, []);
  });

  await t.test("an inverted window is explained, not an empty list", async () => {
    const p = await page(b);
    const link = `?time=finished&from=${new Date(until * 1000).toISOString()}&until=${new Date(from * 1000).toISOString()}`;
    await p.goto(new URL(link, url).href);
    await p.waitForSelector(".state.error");
    assert.match(await p.textContent(".state.error"), /inverted/);
    assert.deepEqual(p.problems.dialogs, []);
    // The only console error is the browser's note of the 400 answer.
    assert.ok(p.problems.errors.every((e) => /400/.test(e)), p.problems.errors.join("\n"));
  });
});
