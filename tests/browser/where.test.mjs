// The execution list's `where` box in Chromium, over a demo store: suggestions of paths and
// values as you type (a datalist), the query applied on Enter and kept in the URL (a reload
// shows the same), the list and the counts following it, the "scan" note until the path is
// declared, and a bad query's error shown inline.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const TOKEN = "where-test-token";

async function waitForRows(p, ids) {
  await p.waitForFunction(
    (want) => {
      const got = [...document.querySelectorAll(".executions-grid tbody tr")].map((r) => r.dataset.id);
      return got.length === want.length && got.every((id, i) => id === want[i]);
    },
    ids,
    { timeout: 10000 },
  ).catch(async (e) => {
    const got = await p.$$eval(".executions-grid tbody tr", (rows) => rows.map((r) => r.dataset.id));
    throw new Error(`the list shows ${JSON.stringify(got)}, not ${JSON.stringify(ids)}: ${e.message}`);
  });
}

const options = (p) => p.$$eval("#where-suggestions option", (os) => os.map((o) => o.value));

test("the where box: suggestions, the URL, counts, scan and errors", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 300, seed: 3 });
  const url = await serve(t, ["monitor", "--db", db, "--token", TOKEN]);
  const b = await browser(t);
  const query = 'context.warehouse = "BER-2" and status = done';
  const q = encodeURIComponent(query);
  const { body: expected } = await apiGet(url, `api/executions?limit=50&where=${q}`);
  assert.ok(expected.items.length > 3, `the demo has BER-2 executions: ${expected.items.length}`);
  assert.deepEqual(expected.scan, ["context.warehouse"]);
  const { body: counts } = await apiGet(url, `api/counts?where=${q}`);
  const { body: all } = await apiGet(url, "api/counts");
  assert.ok(counts.total < all.total && counts.total === counts.counts.DONE, JSON.stringify(counts));

  const p = await page(b);
  await p.goto(url);
  await p.waitForSelector(".executions-grid tbody tr");

  await t.test("paths, then values, are suggested as you type", async () => {
    await p.focus("#where");
    await p.keyboard.type("context.ware");
    await p.waitForFunction(() => [...document.querySelectorAll("#where-suggestions option")].some((o) => o.value === "context.warehouse "));
    await p.fill("#where", "");
    await p.keyboard.type("context.warehouse = ");
    await p.waitForFunction(() => [...document.querySelectorAll("#where-suggestions option")].some((o) => o.value === 'context.warehouse = "BER-2"'));
    const values = await options(p);
    assert.ok(values.every((v) => v.startsWith("context.warehouse = ")), JSON.stringify(values));
  });

  await t.test("Enter applies the query: the list, the URL, the counts and the scan note", async () => {
    await p.fill("#where", query);
    await p.press("#where", "Enter");
    await waitForRows(p, expected.items.map((e) => e.id));
    assert.equal(new URL(p.url()).searchParams.get("where"), query);
    await p.waitForFunction((n) => document.querySelector("#chart .total strong")?.textContent === n.toLocaleString(), counts.total);
    assert.match(await p.textContent("#where-scan"), /scan: context\.warehouse is not a search attribute/);
    assert.equal(await p.isVisible("#where-scan"), true);
    await p.screenshot({ path: join(artifacts, "monitor-where-scan.png") });
    // A deep link shows the same.
    await p.reload();
    await waitForRows(p, expected.items.map((e) => e.id));
    assert.equal(await p.inputValue("#where"), query);
  });

  await t.test("a declared path is no scan", async () => {
    const r = await fetch(new URL("api/attributes", url), {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({ path: "context.warehouse", reason: "browser test" }),
    });
    assert.equal(r.status, 200, await r.text());
    await p.reload();
    await waitForRows(p, expected.items.map((e) => e.id));
    assert.equal(await p.isHidden("#where-scan"), true);
  });

  await t.test("a bad query's error is shown inline", async () => {
    await p.fill("#where", "context.warehouse =");
    await p.press("#where", "Enter");
    await p.waitForSelector("#where-error:not([hidden])");
    assert.match(await p.textContent("#where-error"), /Query error: at character 20: expected a value/);
    assert.equal(await p.getAttribute("#where", "aria-invalid"), "true");
    await p.screenshot({ path: join(artifacts, "monitor-where-error.png") });
    await p.fill("#where", query);
    await p.press("#where", "Enter");
    await waitForRows(p, expected.items.map((e) => e.id));
    assert.equal(await p.isHidden("#where-error"), true);
  });

  await t.test("Clear filters clears the query", async () => {
    await p.click("#clear");
    await p.waitForFunction(() => !new URL(location.href).searchParams.has("where"));
    assert.equal(await p.inputValue("#where"), "");
  });
});
