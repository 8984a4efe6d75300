// The Metrics view in Chromium over `execstore monitor --metrics-period 1`: its charts draw
// the server's samples, the figures match the store's, and when the store changes (outbox
// entries acknowledged) the next samples move the series; at 390 px in the dark theme it
// fits the width. Also `/metrics`, Prometheus' text, without a token. Screenshots go to
// test-artifacts/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const TOKEN = "metrics-test-token";

/** A card's sample count and latest value of each series (what it draws), as the view marks them. */
async function card(p, id) {
  return p.$eval(`[data-chart="${id}"]`, (c) => ({
    points: Number(c.dataset.points),
    latest: JSON.parse(c.dataset.latest),
    text: [...c.querySelectorAll(".metric-now .metric-key")].map((k) => k.textContent).join(" · "),
    canvas: (() => {
      const cv = c.querySelector("canvas");
      return cv ? cv.getBoundingClientRect().width : 0;
    })(),
  }));
}

async function waitFor(check, what, ms = 15000) {
  const until = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function ack(url, seq) {
  const r = await fetch(new URL(`api/outbox/${seq}/ack`, url), {
    method: "POST",
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify({ reason: "the metrics test empties the outbox a little" }),
  });
  assert.equal(r.status, 200, await r.text());
}

function calm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error");
}

test("the Metrics view charts the sampled figures and follows the store", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 60, seed: 3 });
  const url = await serve(t, ["monitor", "--db", db, "--metrics-period", "1", "--token", TOKEN]);
  const b = await browser(t);

  await t.test("desktop: charts of the server's samples, moving when the outbox empties", async () => {
    const p = await page(b);
    await p.goto(new URL("?view=metrics", url).href);
    assert.equal(await p.textContent("h1"), "Metrics");
    assert.equal(await p.title(), "Metrics · execstore");
    assert.equal(await p.getAttribute('a[data-view="metrics"]', "aria-current"), "page");
    const first = await waitFor(async () => {
      const c = await p.$('[data-chart="queues"]') ? await card(p, "queues") : null;
      return c && c.points >= 2 ? c : null;
    }, "two samples in the queues chart");
    assert.ok(first.canvas > 200, `the chart is drawn (${first.canvas} px)`);
    // What it draws is the store's outbox, as the outbox endpoint lists it.
    const outbox = (await apiGet(url, "api/outbox?limit=1000")).body.items;
    assert.ok(outbox.length >= 3, `the demo has outbox entries (${outbox.length})`);
    assert.equal(first.latest[0], outbox.length);
    assert.match(first.text, new RegExp(`^outbox: ${outbox.length} · spawns: \\d+$`));
    // Every chart of the executions and of each of the demo's workspaces is there.
    const ids = await p.$$eval("[data-chart]", (cs) => cs.map((c) => c.dataset.chart));
    for (const id of ["exec-status", "exec-definition", "started", "finished", "queues", "outbox-age", "timers", "timer-lag"]) {
      assert.ok(ids.includes(id), `${id} in ${ids}`);
    }
    assert.ok(ids.some((id) => /^ws-\d+-lag$/.test(id)), `a workspace's cursor lag in ${ids}`);
    const status = await card(p, "exec-status");
    const counts = (await apiGet(url, "api/counts")).body;
    assert.equal(status.latest.reduce((a, n) => a + n, 0), counts.total);
    // By definition: the demo's three, adding up to the same total.
    const byDefinition = await card(p, "exec-definition");
    assert.equal(byDefinition.latest.length, 3);
    assert.equal(byDefinition.latest.reduce((a, n) => a + n, 0), counts.total);

    // The store changes: three entries acknowledged. The next samples draw the new depth.
    for (const e of outbox.slice(0, 3)) await ack(url, e.seq);
    const after = await waitFor(async () => {
      const c = await card(p, "queues");
      return c.latest[0] === outbox.length - 3 ? c : null;
    }, "the outbox series to drop by 3");
    assert.ok(after.points > first.points, `more samples drawn (${first.points} -> ${after.points})`);
    await p.screenshot({ path: join(artifacts, "metrics-desktop.png"), fullPage: true });
    // The workspaces' charts, below the executions' (the view scrolls inside the page).
    await p.$eval(".metric-group[data-group^='Workspace']", (g) => g.scrollIntoView());
    await p.screenshot({ path: join(artifacts, "metrics-workspaces.png") });
    calm(p);
    await p.context().close();
  });

  await t.test("phone, dark: the charts fit 390 px and take the dark theme", async () => {
    const context = await b.newContext({ viewport: { width: 390, height: 844 }, colorScheme: "dark" });
    const p = await context.newPage();
    p.problems = { dialogs: [], errors: [] };
    p.on("pageerror", (e) => p.problems.errors.push(String(e)));
    p.on("console", (m) => { if (m.type() === "error") p.problems.errors.push(m.text()); });
    await p.goto(new URL("?view=metrics", url).href);
    await waitFor(async () => (await p.$('[data-chart="queues"] canvas')) !== null, "a chart");
    // The view's own content fits (the header's phone layout is the shell's, not this view's).
    const widths = await p.evaluate(() => {
      const view = document.querySelector(".metrics-view");
      return {
        view: view.scrollWidth,
        right: Math.max(...[...view.querySelectorAll("*")].map((e) => e.getBoundingClientRect().right)),
        cards: document.querySelectorAll(".metric-card").length,
      };
    });
    assert.ok(widths.cards >= 7, `${widths.cards} cards`);
    assert.ok(widths.view <= 390, `the view does not scroll sideways (${widths.view} px)`);
    assert.ok(widths.right <= 390, `nothing in the view ends past 390 px (${widths.right} px)`);
    // The cards take the dark panel colour (style.css's --panel in the dark theme).
    const colours = await p.evaluate(() => {
      const css = getComputedStyle(document.documentElement);
      const probe = document.createElement("div");
      probe.style.color = css.getPropertyValue("--panel").trim();
      document.body.append(probe);
      const panel = getComputedStyle(probe).color;
      probe.remove();
      return { card: getComputedStyle(document.querySelector(".metric-card")).backgroundColor, panel };
    });
    assert.equal(colours.card, colours.panel);
    assert.notEqual(colours.card, "rgb(255, 255, 255)");
    await p.screenshot({ path: join(artifacts, "metrics-phone-dark.png"), fullPage: true });
    calm(p);
    await context.close();
  });

  await t.test("/metrics: Prometheus' text, read without a token, the same figures", async () => {
    const r = await fetch(new URL("metrics", url));
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    assert.equal(r.headers.get("cache-control"), "no-store");
    const text = await r.text();
    const outbox = (await apiGet(url, "api/outbox?limit=1000")).body.items.length;
    assert.match(text, /^# HELP execstore_outbox_depth /m);
    assert.match(text, /^# TYPE execstore_outbox_depth gauge$/m);
    assert.match(text, new RegExp(`^execstore_outbox_depth ${outbox}$`, "m"));
    assert.match(text, /^# TYPE execstore_workspace_log_envelopes_total counter$/m);
  });
});
