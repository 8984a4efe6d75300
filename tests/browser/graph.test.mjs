// The statechart pictures in Chromium: an execution's graph on its detail and a definition's
// graph over all its executions, on `execstore demo` data and on a file harel 0.9 wrote.
// Screenshots: test-artifacts/graph-*.png.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

/** Fails the test if the page raised an error or opened a dialog. */
function assertCalm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error");
}

/** Every execution of the store (summaries), through the list API. */
async function everyExecution(url, query = "") {
  const all = [];
  for (let cursor = ""; ;) {
    const { body } = await apiGet(url, `api/executions?limit=10000${query}${cursor}`);
    all.push(...body.items);
    if (!body.next_cursor) return all;
    cursor = `&cursor=${body.next_cursor}`;
  }
}

/** The drawn states of the picture in `root`: path -> {cls, now, entered, text}. */
const drawnStates = (p, root) => p.$$eval(`${root} svg.statechart g.state`, (gs) => Object.fromEntries(gs.map((g) => [
  g.dataset.path,
  { cls: g.getAttribute("class"), now: Number(g.dataset.now), entered: Number(g.dataset.entered), text: g.querySelector(".state-name").textContent },
])));

/** The drawn transitions: "from -> to" -> {count, text}. */
const drawnEdges = (p, root) => p.$$eval(`${root} svg.statechart g.edge-label`, (gs) => Object.fromEntries(gs.map((g) => [
  `${g.dataset.from} -> ${g.dataset.to}`,
  { count: Number(g.dataset.count), text: [...g.querySelectorAll("text")].map((t) => t.textContent).join(" | ") },
])));

/** Counts per path, from summaries (the picture's colours must say the same). */
function occupancy(items) {
  const at = {};
  for (const e of items) if (e.active_path) at[e.active_path] = (at[e.active_path] || 0) + 1;
  return at;
}

/**
 * Opens execution `id`'s detail, waits for its picture and checks it against the execution's
 * own trace (read through the API, independently of the graph endpoint).
 */
async function checkExecutionPicture(p, url, id, shot) {
  await p.goto(`${url}?id=${encodeURIComponent(id)}`);
  await p.waitForSelector("#exec-graph svg.statechart g.state");
  const { body: one } = await apiGet(url, `api/executions/${encodeURIComponent(id)}`);
  const { body: trace } = await apiGet(url, `api/executions/${encodeURIComponent(id)}/trace`);
  const states = await drawnStates(p, "#exec-graph");
  // Every state a step reached or left is drawn, and nothing else as a state node.
  const visited = new Set();
  for (const s of trace.items) for (const k of ["from_path", "to_path"]) if (s[k]) visited.add(s[k]);
  if (one.execution.active_path) visited.add(one.execution.active_path);
  assert.deepEqual(new Set(Object.keys(states)), visited, "one node per visited state");
  // How often each was entered, as the trace says.
  for (const path of visited) {
    const entered = trace.items.filter((s) => s.to_path === path).length;
    assert.equal(states[path].entered, entered, `${path} entered`);
  }
  // The active state, and only it, is highlighted.
  const active = Object.entries(states).filter(([, s]) => / active( |$)/.test(s.cls)).map(([k]) => k);
  assert.deepEqual(active, [one.execution.active_path]);
  // Each transition's count is its steps' count in the trace.
  const edges = await drawnEdges(p, "#exec-graph");
  const want = {};
  for (const s of trace.items) {
    const key = `${s.from_path ?? ""} -> ${s.to_path ?? ""}`;
    want[key] = (want[key] || 0) + 1;
  }
  assert.deepEqual(Object.fromEntries(Object.entries(edges).map(([k, v]) => [k, v.count])), want);
  const section = await p.$("#exec-graph");
  await section.screenshot({ path: join(artifacts, shot) });
  return { states, edges, trace, one };
}

/** Opens the definition picture and waits until it is drawn. */
async function openDefinition(p, url, definition) {
  await p.goto(`${url}?view=definition&definition=${encodeURIComponent(definition)}`);
  await p.waitForSelector("#def-graph[data-ready] svg.statechart");
}

test("statechart pictures over a demo store", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 300, seed: 1 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const orders = await everyExecution(url, "&definition=orders");
  assert.ok(orders.length > 20, `${orders.length} orders`);

  await t.test("an execution's picture: visited states, counted transitions, guards, the active state", async () => {
    // The order with the longest trace that is still running.
    let best = null;
    for (const e of orders.filter((o) => o.status === "RUNNING")) {
      const { body } = await apiGet(url, `api/executions/${e.id}/trace`);
      if (!best || body.items.length > best.n) best = { id: e.id, n: body.items.length };
    }
    assert.ok(best && best.n >= 3, "a running order with a few steps");
    const p = await page(b);
    const { edges, trace } = await checkExecutionPicture(p, url, best.id, "graph-execution-demo.png");
    // Events and guards are on the edges' labels.
    for (const s of trace.items) {
      const label = edges[`${s.from_path ?? ""} -> ${s.to_path ?? ""}`].text;
      assert.ok(label.includes(s.event_kind), `${label} names ${s.event_kind}`);
      for (const g of s.guards || []) assert.ok(label.includes(g), `${label} names guard ${g}`);
    }
    // A guarded step exists somewhere among the orders: its guard is drawn as [guard].
    const guarded = orders.find((o) => o.active_path && o.active_path.startsWith("order.checkout.") && o.status === "RUNNING");
    if (guarded) {
      await p.goto(`${url}?id=${guarded.id}`);
      await p.waitForSelector("#exec-graph svg.statechart");
      const e2 = await drawnEdges(p, "#exec-graph");
      assert.match(e2["order.cart -> order.checkout.address"].text, /\[cart_not_empty\]/);
    }
    // The picture sits in its composite states: order.checkout is a cluster.
    assert.ok(await p.$('#exec-graph g.cluster[data-path="order"]'), "the top state is drawn as a cluster");
    assertCalm(p);
  });

  await t.test("a definition's picture: how many sit where, and the click through to the list", async () => {
    const p = await page(b, { width: 1400, height: 1800 });
    // From an execution's detail, its link to the definition's picture.
    await p.goto(`${url}?id=${orders[0].id}`);
    await p.waitForSelector("#exec-graph .def-link");
    await p.click("#exec-graph .def-link");
    await p.waitForSelector("#def-graph[data-ready] svg.statechart");
    assert.match(p.url(), /view=definition&definition=orders/);
    const { body: counts } = await apiGet(url, "api/counts?definition=orders");
    assert.equal(await p.textContent("#def-total"), `${counts.total} executions`);
    const states = await drawnStates(p, "#def-graph");
    const at = occupancy(orders);
    for (const [path, n] of Object.entries(at)) assert.equal(states[path]?.now, n, `${path}: executions there now`);
    for (const [path, s] of Object.entries(states)) if (!at[path]) assert.equal(s.now, 0, path);
    // Coloured by the count: the fullest state is the strongest colour, an empty one has none.
    const [fullest] = Object.entries(at).sort((a, b) => b[1] - a[1])[0];
    assert.match(states[fullest].cls, /heat-5/);
    for (const [path, s] of Object.entries(states)) if (!s.now) assert.doesNotMatch(s.cls, /heat-/, path);
    // Transitions over every order: the Start edge counts every trace's first step.
    const edges = await drawnEdges(p, "#def-graph");
    const starts = Object.entries(edges).filter(([k]) => k.startsWith(" -> ")).reduce((n, [, v]) => n + v.count, 0);
    let firstSteps = 0;
    for (const o of orders) {
      const { body } = await apiGet(url, `api/executions/${o.id}/trace`);
      if (body.items.length && body.items[0].index === 0 && !body.items[0].from_path) firstSteps += 1;
    }
    assert.equal(starts, firstSteps);
    await p.screenshot({ path: join(artifacts, "graph-definition-demo.png"), fullPage: true });
    // Click the fullest state: the list of the orders in it.
    await p.click(`#def-graph a.state-link:has(g.state[data-path="${fullest}"])`);
    await p.waitForFunction(() => new URLSearchParams(location.search).get("view") === null);
    const q = new URLSearchParams(new URL(p.url()).search);
    assert.equal(q.get("definition"), "orders");
    assert.equal(q.get("find"), fullest);
    // The list shows the orders in that state (or inside it), and only them.
    const there = orders.filter((o) => o.active_path === fullest || (o.active_path || "").startsWith(`${fullest}.`)).map((o) => o.id);
    await p.waitForFunction((n) => document.querySelectorAll(".executions-grid tbody tr").length === n, Math.min(50, there.length));
    // (most recently updated first: the first page is some 50 of them, each in that state)
    const shown = await p.$$eval(".executions-grid tbody tr", (rows) => rows.map((r) => r.dataset.id));
    assert.equal(shown.length, Math.min(50, there.length));
    for (const id of shown) assert.ok(there.includes(id), `${id} is not in ${fullest}`);
    assertCalm(p);
  });

  await t.test("bad definition: a clear message, no picture", async () => {
    const p = await page(b);
    await p.goto(`${url}?view=definition&definition=nope`);
    await p.waitForSelector("#def-graph .error-box");
    assert.match(await p.textContent("#def-graph .error-box"), /nope/);
    p.problems.errors = p.problems.errors.filter((e) => !/404/.test(e));
    assertCalm(p);
  });
});

test("statechart pictures over a file harel 0.9 wrote", async (t) => {
  const python = process.env.EXECSTORE_HAREL_PYTHON;
  if (!python) {
    t.skip("EXECSTORE_HAREL_PYTHON is not set: no harel 0.9 to write the file (scripts/test sets it)");
    return;
  }
  const dir = tempDir(t);
  const db = join(dir, "harel.db");
  const out = spawnSync(python, [fileURLToPath(new URL("harel_graph_fixture.py", import.meta.url)), db, "12"], { encoding: "utf8" });
  assert.equal(out.status, 0, out.stderr);
  const written = JSON.parse(out.stdout);
  const url = await serve(t, ["monitor", "--db", db, "--prefix", "harel"]);
  const b = await browser(t);

  await t.test("an execution harel drove: nested states, a loop, the final state active", async () => {
    const p = await page(b);
    const { states, edges } = await checkExecutionPicture(p, url, "shop-000", "graph-execution-harel.png");
    assert.deepEqual(Object.keys(states).sort(), ["cart", "checkout.address", "checkout.payment", "shipped"]);
    assert.equal(states["checkout.payment"].text, "payment", "a nested state shows its own name");
    assert.ok(await p.$('#exec-graph g.cluster[data-path="checkout"]'), "checkout is drawn around its states");
    assert.equal(edges["checkout.address -> checkout.payment"].count, 2);
    assert.match(edges["checkout.address -> checkout.payment"].text, /Next ×2/);
    assert.match(edges["cart -> cart"].text, /AddItem/, "the self-transition is drawn");
    assert.match(states.shipped.cls, / active/);
    assertCalm(p);
  });

  await t.test("the definition harel ran: where each of its executions is", async () => {
    const p = await page(b, { width: 1200, height: 1000 });
    await openDefinition(p, url, "shop");
    const shop = written.filter((e) => e.id.startsWith("shop-"));
    assert.equal(await p.textContent("#def-total"), `${shop.length} executions`);
    const states = await drawnStates(p, "#def-graph");
    const at = occupancy(shop);
    for (const [path, n] of Object.entries(at)) assert.equal(states[path].now, n, path);
    const inside = at["checkout.address"] + at["checkout.payment"];
    assert.match(await p.textContent('#def-graph g.cluster[data-path="checkout"] .cluster-name'), new RegExp(`\\(${inside} inside\\)`));
    await p.screenshot({ path: join(artifacts, "graph-definition-harel.png"), fullPage: true });
    await p.click('#def-graph a.state-link:has(g.state[data-path="checkout.address"])');
    await p.waitForFunction(() => new URLSearchParams(location.search).get("find") === "checkout.address");
    const there = shop.filter((e) => e.active_path === "checkout.address").map((e) => e.id).sort();
    await p.waitForFunction((n) => document.querySelectorAll(".executions-grid tbody tr").length === n, there.length);
    // the list is most recently updated first: the same executions, in another order
    assert.deepEqual((await p.$$eval(".executions-grid tbody tr", (rows) => rows.map((r) => r.dataset.id))).sort(), there);
    assert.equal(new URLSearchParams(new URL(p.url()).search).get("definition"), "shop");
    assertCalm(p);
  });

  await t.test("stored <script> names are shown as text, never run", async () => {
    const p = await page(b);
    const scriptsBefore = 1; // the page's own module script
    await p.goto(`${url}?id=evil-1`);
    await p.waitForSelector("#exec-graph svg.statechart g.state");
    const states = await drawnStates(p, "#exec-graph");
    assert.deepEqual(Object.keys(states), ["<script>alert(1)</script>.inner"]);
    assert.equal(await p.textContent('#exec-graph g.cluster[data-path="<script>alert(1)</script>"] .cluster-name'), "<script>alert(1)</script>");
    assert.match(Object.values(await drawnEdges(p, "#exec-graph")).map((e) => e.text).join(" "), /\[<script>alert\(1\)<\/script>\]/);
    await p.click("#exec-graph .def-link");
    await p.waitForSelector("#def-graph[data-ready] svg.statechart");
    assert.equal(await p.textContent("#def-name"), "<script>alert(1)</script>");
    assert.equal(await p.$$eval("script", (xs) => xs.length), scriptsBefore, "no script element was added");
    await p.screenshot({ path: join(artifacts, "graph-hostile-harel.png") });
    assertCalm(p);
  });
});
