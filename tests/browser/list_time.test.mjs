// "See what changed" in Chromium, over a demo store: the list is most recently updated first,
// the counts chart follows every filter of the list, the window presets filter as the API
// does (and the URL keeps them), and the header's UTC / local / relative switch changes every
// time shown on each view, kept across a reload.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const rowIds = (p) => p.$$eval(".executions-grid tbody tr", (rows) => rows.map((r) => r.dataset.id));

/** Waits until the list shows exactly `ids`. */
async function waitForRows(p, ids) {
  try {
    await p.waitForFunction(
      (want) => {
        const got = [...document.querySelectorAll(".executions-grid tbody tr")].map((r) => r.dataset.id);
        if (!want.length) return document.querySelector(".state.empty") !== null;
        return got.length === want.length && got.every((id, i) => id === want[i]);
      },
      ids,
      { timeout: 10000 },
    );
  } catch (e) {
    throw new Error(`the list shows ${JSON.stringify(await rowIds(p))} at ${p.url()}, not ${JSON.stringify(ids)}: ${e.message}`);
  }
}

/** The chart's numbers: its total and the sum of its bars. */
const chartNumbers = (p) =>
  p.evaluate(() => ({
    total: Number(document.querySelector("#counts-total strong")?.textContent.replace(/\D/g, "")),
    bars: [...document.querySelectorAll("#chart .col .n")].reduce((sum, n) => sum + Number(n.textContent.replace(/\D/g, "")), 0),
  }));

/** Waits until the chart says `n` in its total and its bars. */
async function waitForCounts(p, n) {
  try {
    await p.waitForFunction(
      (want) => {
        const total = Number(document.querySelector("#counts-total strong")?.textContent.replace(/\D/g, ""));
        const bars = [...document.querySelectorAll("#chart .col .n")].reduce((sum, el) => sum + Number(el.textContent.replace(/\D/g, "")), 0);
        return total === want && bars === want;
      },
      n,
      { timeout: 10000 },
    );
  } catch (e) {
    throw new Error(`the chart says ${JSON.stringify(await chartNumbers(p))}, not ${n}: ${e.message}`);
  }
}

const PATTERNS = {
  utc: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/,
  local: /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/,
  relative: /^(\d.* ago|in \d.*)$/,
};
const PART_PATTERNS = { utc: /^\d\d:\d\d:\d\dZ$/, local: /^\d\d:\d\d:\d\d$/, relative: PATTERNS.relative };

/** Every `<time>` on the page: its text, whether it is a time of day only, its instant. */
const times = (p) =>
  p.$$eval("time", (els) => els.map((el) => ({ text: el.textContent, part: el.dataset.part || "", t: el.dataset.t ?? null })));

/** Asserts that every time on the page is shown in `mode` (and that there are some). */
async function assertTimesIn(p, mode, where) {
  const shown = await times(p);
  assert.ok(shown.length > 0, `${where}: no times shown`);
  for (const s of shown) {
    assert.notEqual(s.t, null, `${where}: a time that the switch does not know: ${JSON.stringify(s)}`);
    const pattern = s.part === "time" ? PART_PATTERNS[mode] : PATTERNS[mode];
    assert.match(s.text, pattern, `${where}: ${JSON.stringify(s)} is not ${mode}`);
  }
  return shown;
}

test("the list's order, counts, presets and time modes", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 300, seed: 3 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const { body } = await apiGet(url, "api/executions?limit=10000");
  const all = body.items;
  assert.equal(all.length, 300);
  assert.equal(body.order, "updated");

  await t.test("most recently updated first; counts follow the filters", async () => {
    const p = await page(b);
    await p.goto(url);
    const byUpdated = [...all].sort((x, y) => (y.updated_at ?? -Infinity) - (x.updated_at ?? -Infinity) || (x.id < y.id ? 1 : -1));
    await waitForRows(p, byUpdated.slice(0, 50).map((e) => e.id));
    await waitForCounts(p, 300);
    // A window that keeps a few dozen: the chart says how many, not the store's 300.
    const updated = all.map((e) => e.updated_at).filter((u) => u !== null).sort((x, y) => x - y);
    const from = Math.floor(updated[100]);
    const until = Math.floor(updated[140]);
    const inWindow = byUpdated.filter((e) => e.updated_at >= from && e.updated_at < until);
    await p.goto(new URL(`?time=updated&from=${new Date(from * 1000).toISOString()}&until=${new Date(until * 1000).toISOString()}`, url).href);
    await waitForRows(p, inWindow.slice(0, 50).map((e) => e.id));
    await waitForCounts(p, inWindow.length);
    assert.match(await p.textContent("#counts-total"), /matching the filters/);
    assert.match(await p.textContent("#range"), new RegExp(`^1–${inWindow.length} of ${inWindow.length} · page 1$`));
    // A definition and roots only on top: still exactly the rows listed.
    const fulfilment = inWindow.filter((e) => e.definition_id === "fulfilment" && e.parent_id === null);
    await p.goto(new URL(`${new URL(p.url()).search}&definition=fulfilment&roots=1`, url).href);
    await waitForRows(p, fulfilment.map((e) => e.id));
    await waitForCounts(p, fulfilment.length);
    // The order switch lists by id; the counts stay.
    await p.selectOption("#order", "id");
    await waitForRows(p, [...fulfilment].sort((x, y) => (x.id < y.id ? -1 : 1)).map((e) => e.id));
    assert.equal(new URL(p.url()).searchParams.get("order"), "id");
    await waitForCounts(p, fulfilment.length);
    // Newest created first: the rows in that order, the time column the created one, and
    // the order kept by a reload.
    const byCreated = [...fulfilment].sort((x, y) => (y.created_at ?? -Infinity) - (x.created_at ?? -Infinity) || (x.id < y.id ? 1 : -1));
    assert.ok(byCreated.every((e) => typeof e.created_at === "number"), "the API's summaries carry created_at");
    await p.selectOption("#order", "created");
    await waitForRows(p, byCreated.map((e) => e.id));
    assert.equal(new URL(p.url()).searchParams.get("order"), "created");
    assert.deepEqual(await p.$$eval(".executions-grid thead th", (ths) => ths.map((th) => th.textContent).filter((t) => /Created|Updated/.test(t))), ["Created"]);
    await waitForCounts(p, fulfilment.length);
    await p.reload();
    await waitForRows(p, byCreated.map((e) => e.id));
    assert.equal(await p.inputValue("#order"), "created");
    await p.selectOption("#order", "id");
    await p.screenshot({ path: join(artifacts, "monitor-list-counts-follow.png") });
    assert.deepEqual(p.problems.errors, []);
  });

  await t.test("window presets filter as the API does, in the URL", async () => {
    const p = await page(b);
    await p.goto(url);
    await waitForRows(p, all.slice(0, 50).map((e) => e.id));
    for (const [preset, seconds] of [["15m", 900], ["1h", 3600], ["1d", 86400], ["7d", 604800]]) {
      const request = p.waitForRequest((r) => r.url().includes("/api/executions?") && r.url().includes("updated_after"));
      await p.selectOption("#time-window", preset);
      const asked = new URL((await request).url()).searchParams;
      const since = Date.parse(asked.get("updated_after")) / 1000;
      const { body: info } = await apiGet(url, "api/changes");
      assert.ok(Math.abs(info.now - seconds - since) < 30, `${preset}: the window starts ${seconds}s before now (${since} vs ${info.now})`);
      const want = (await apiGet(url, `api/executions?limit=10000&updated_after=${asked.get("updated_after")}`)).body.items;
      assert.ok(want.every((e) => e.updated_at >= since));
      await waitForRows(p, want.slice(0, 50).map((e) => e.id));
      await waitForCounts(p, want.length);
      const shown = new URL(p.url()).searchParams;
      assert.equal(shown.get("window"), preset);
      assert.equal(shown.get("time"), "updated");
      assert.equal(shown.get("from"), null, "a preset slides: no fixed bound in the URL");
    }
    // Over another time, and back to any window.
    await p.selectOption("#time-field", "created");
    await p.waitForFunction(() => new URL(location.href).searchParams.get("time") === "created");
    assert.equal(new URL(p.url()).searchParams.get("window"), "7d");
    await p.reload();
    assert.equal(await p.inputValue("#time-window"), "7d");
    assert.equal(await p.inputValue("#time-field"), "created");
    assert.ok(await p.isDisabled("#time-from"), "a preset has no bounds to type");
    await p.screenshot({ path: join(artifacts, "monitor-list-presets.png") });
    await p.selectOption("#time-window", "custom");
    await p.waitForFunction(() => !document.querySelector("#time-from").disabled);
    await p.selectOption("#time-window", "");
    await waitForRows(p, all.slice(0, 50).map((e) => e.id));
    await waitForCounts(p, 300);
    for (const key of ["window", "time", "from", "until"]) assert.equal(new URL(p.url()).searchParams.get(key), null);
    assert.deepEqual(p.problems.errors, []);
  });

  await t.test("the UTC / local / relative switch changes every time on each view", async () => {
    const p = await page(b);
    await p.goto(url);
    await waitForRows(p, all.slice(0, 50).map((e) => e.id));
    assert.equal(await p.inputValue("#time-mode"), "relative", "relative unless chosen");
    await assertTimesIn(p, "relative", "list");
    // The first row's time, exactly, in UTC.
    await p.selectOption("#time-mode", "utc");
    const shown = await assertTimesIn(p, "utc", "list");
    const first = all[0];
    const d = new Date(first.updated_at * 1000);
    const pad = (n) => String(n).padStart(2, "0");
    const utc = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}Z`;
    assert.equal(shown[0].text, utc);
    await p.selectOption("#time-mode", "local");
    await assertTimesIn(p, "local", "list");
    // Kept across a reload, and obeyed by every view.
    await p.selectOption("#time-mode", "utc");
    await p.reload();
    await waitForRows(p, all.slice(0, 50).map((e) => e.id));
    assert.equal(await p.inputValue("#time-mode"), "utc");
    await assertTimesIn(p, "utc", "list after a reload");
    const withTrace = all.find((e) => e.parent_id === null && e.version > 3);
    const ws = (await apiGet(url, "api/workspaces")).body.items[0];
    const wsLink = `?view=workspaces&tenant=${ws.tenant_id}&ws=${ws.workspace_id}`;
    const envelope = (await apiGet(url, `api/workspaces/${ws.tenant_id}/${ws.workspace_id}/log?last=1`)).body.items[0];
    const views = [
      ["detail and timeline", `?id=${encodeURIComponent(withTrace.id)}`, "#detail .timeline time"],
      ["timers", "?view=timers", "table time"],
      ["outbox", "?view=outbox", "table time"],
      ["workspaces", "?view=workspaces", "#ws-list time"],
      ["workspace log", wsLink, ".ws-log time"],
      ["an envelope", `${wsLink}&env=${encodeURIComponent(envelope.id)}`, "dd time"],
      ["workspace runs", `${wsLink}&tab=runs`, "#ws-runs time"],
      ["workspace leases", `${wsLink}&tab=leases`, "table time"],
    ];
    for (const mode of ["utc", "local", "relative"]) {
      for (const [what, link, selector] of views) {
        const v = await page(b);
        await v.addInitScript((m) => localStorage.setItem("execstore.timeMode", m), mode);
        await v.goto(new URL(link, url).href);
        await v.waitForSelector(selector, { timeout: 10000 });
        await assertTimesIn(v, mode, `${what} (${mode})`);
        if (mode === "utc") await v.screenshot({ path: join(artifacts, `monitor-times-utc-${what.replace(/\W+/g, "-")}.png`) });
        // Switched on the page: every time there follows at once.
        const other = mode === "relative" ? "utc" : "relative";
        await v.selectOption("#time-mode", other);
        await assertTimesIn(v, other, `${what} (switched to ${other})`);
        assert.deepEqual(v.problems.errors, [], what);
        await v.context().close();
      }
    }
    assert.deepEqual(p.problems.errors, []);
  });
});
