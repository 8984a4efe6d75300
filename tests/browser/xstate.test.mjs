// XState executions in the monitor, like harel's: a store file written by the npm package's
// durable XState actors (execstore/xstate over Store.openFile), opened by `execstore monitor`.
// The statechart is drawn from the machine's stored definition (every state and transition it
// declares, nested and parallel, initial and final marked, the execution's states
// highlighted); the list, the timeline, the outbox and the timers show its executions.
// Screenshots: test-artifacts/xstate-*.png.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";

import { apiGet, artifacts, browser, page, repo, serve, tempDir } from "./helpers.mjs";
import { order } from "./xstate-order.mjs";

/** The npm package writes the store: its WebAssembly must be built (scripts/lib/wasm.sh). */
const WASM = join(repo, "crates/execstore-wasm/npm/wasm/execstore_bg.wasm");
const skip = existsSync(WASM) ? false : `the npm package is not built (no ${WASM}: scripts/lib/wasm.sh wasm_build)`;

/** The executions written, each by its events (all under version "1"). */
const RUNS = {
  "o-wallet": ["ADD", "CHECKOUT", "SWITCH"],
  "o-parallel": ["ADD", "ADD", "ADD", "CHECKOUT", "CHARGE", "PACKED"],
  "o-review": ["ADD", "ADD", "ADD", "CHECKOUT", "CHARGE", "PACKED", "SHIPPED"],
  "o-done": ["CHECKOUT", "CHARGE", "SHIPPED", "PACKED"],
};

async function writeStore(path) {
  const { Store } = await import("execstore");
  const { createDurableActor, relay } = await import("execstore/xstate");
  const store = await Store.openFile(path);
  const machines = { order: { machine: order, version: "1" } };
  try {
    for (const [id, events] of Object.entries(RUNS)) {
      const actor = createDurableActor(store, order, { id, version: "1" });
      for (const [i, type] of events.entries()) {
        actor.send({ type }, { id: `${id}-${i}` });
        // an invoked child machine is a child execution: the relay carries the events
        // between them (and the child's done back), as an application runs it
        await relay(store, { machines });
      }
    }
  } finally {
    store.close();
  }
}

function assertCalm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error");
}

/** The drawn states of the chart in `root`: id -> {cls, now, name}. */
const drawnStates = (p, root) => p.$$eval(`${root} svg.statechart.chart g.state`, (gs) => Object.fromEntries(gs.map((g) => [
  g.dataset.id,
  { cls: g.getAttribute("class"), now: Number(g.dataset.now), name: g.querySelector(".state-name").textContent },
])));

/** The drawn edge labels: one per (from, to, event). */
const drawnEdges = (p, root) => p.$$eval(`${root} svg.statechart.chart g.edge-label`, (gs) => gs.map((g) => ({
  from: g.dataset.from, to: g.dataset.to, kind: g.dataset.kind, event: g.dataset.event, count: g.dataset.count,
})));

test("XState executions in the monitor: the chart from the stored definition, the list, timeline, outbox and timers", { skip }, async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "xstate.db");
  await writeStore(db);
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);

  const { body: def } = await apiGet(url, "api/definitions/order/chart");
  assert.equal(def.source, "document", "the definition document, not a trace step");
  assert.equal(def.definition_fqn, "order@1");
  const chart = def.chart;
  const ids = chart.nodes.filter((n) => n.parent).map((n) => n.id);

  await t.test("the definition's picture: every declared state and transition", async () => {
    const p = await page(b);
    await p.goto(`${url}?view=definition&definition=order`);
    await p.waitForSelector("#def-graph[data-ready] svg.statechart.chart g.state");
    const states = await drawnStates(p, "#def-graph");
    assert.deepEqual(Object.keys(states).sort(), [...ids].sort(), "one box per state of the definition");
    const clusters = await p.$$eval("#def-graph svg.statechart.chart g.cluster", (gs) => gs.map((g) => g.dataset.id).sort());
    assert.deepEqual(clusters, ["order.fulfil", "order.fulfil.pack", "order.fulfil.ship", "order.paying"]);
    assert.match(states["order.fulfil"].cls, /\bparallel\b/);
    for (const initial of ["order.cart", "order.paying.card", "order.fulfil.pack.picking", "order.fulfil.ship.label"]) {
      assert.match(states[initial].cls, /\binitial\b/, initial);
    }
    assert.doesNotMatch(states["order.paying.wallet"].cls, /\binitial\b/);
    for (const final of ["order.done", "order.failed", "order.cancelled", "order.fulfil.pack.packed"]) {
      assert.match(states[final].cls, /\bfinal\b/, final);
    }
    // Where the executions are now.
    assert.equal(states["order.paying.wallet"].now, 1);
    assert.equal(states["order.review"].now, 1);
    assert.equal(states["order.done"].now, 1);
    // Every transition of the definition has its label: one per target, loops included.
    const edges = await drawnEdges(p, "#def-graph");
    const want = [];
    for (const e of chart.edges) for (const to of e.to.length ? e.to : [""]) want.push(`${e.from} -> ${to} ${e.kind} ${e.event}`);
    assert.deepEqual(edges.map((e) => `${e.from} -> ${e.to} ${e.kind} ${e.event}`).sort(), want.sort());
    const kinds = new Set(edges.map((e) => e.kind));
    for (const k of ["event", "after", "always", "done", "error"]) assert.ok(kinds.has(k), `a ${k} transition is drawn`);
    const checkout = edges.find((e) => e.event === "CHECKOUT");
    assert.equal(checkout.count, String(Object.values(RUNS).filter((r) => r.includes("CHECKOUT")).length), "counted over every trace");
    // A stored name is text, never markup.
    assert.equal(states["order.<b>odd</b>"].name, "<b>odd</b>");
    assert.equal(await p.$$eval("#def-graph svg b", (xs) => xs.length), 0);
    await (await p.$("#def-graph")).screenshot({ path: join(artifacts, "xstate-definition.png") });
    assertCalm(p);
  });

  await t.test("an execution's picture marks every state it is in; its timeline is the trace", async () => {
    const p = await page(b);
    await p.goto(`${url}?id=o-parallel`);
    await p.waitForSelector("#exec-graph svg.statechart.chart g.state");
    const { body: one } = await apiGet(url, "api/executions/o-parallel/chart");
    const states = await drawnStates(p, "#exec-graph");
    const active = Object.entries(states).filter(([, s]) => /\bactive\b/.test(s.cls)).map(([k]) => k).sort();
    assert.deepEqual(active, ["order.fulfil", "order.fulfil.pack", "order.fulfil.pack.packed", "order.fulfil.ship", "order.fulfil.ship.label"]);
    assert.deepEqual(one.active.sort(), ["fulfil", "fulfil.pack", "fulfil.pack.packed", "fulfil.ship", "fulfil.ship.label"]);
    const { body: trace } = await apiGet(url, "api/executions/o-parallel/trace");
    const kinds = await p.$$eval("#timeline .step .kind", (xs) => xs.map((x) => x.textContent));
    assert.deepEqual(kinds, trace.items.map((s) => s.event_kind));
    // the payment machine is a child execution: its done comes back through the outbox as a
    // step of its own, right after the CHARGE that finished it
    const steps = RUNS["o-parallel"].flatMap((e) => (e === "CHARGE" ? [e, "xstate.done.actor.pay"] : [e]));
    assert.deepEqual(kinds, ["xstate.init", ...steps]);
    await (await p.$("#exec-graph")).screenshot({ path: join(artifacts, "xstate-execution.png") });
    assertCalm(p);
  });

  await t.test("the list, the outbox and the timers", async () => {
    const p = await page(b);
    await p.goto(`${url}?definition=order`);
    await p.waitForSelector(".executions-grid tbody tr");
    const rows = await p.$$eval(".executions-grid tbody tr", (xs) => xs.map((x) => x.dataset.id).sort());
    assert.deepEqual(rows, Object.keys(RUNS).sort());

    const { body: outbox } = await apiGet(url, "api/outbox?limit=50");
    assert.deepEqual(outbox.items.map((e) => e.event.kind).sort(), ["order.fulfilled", "order.fulfilled"]);
    await p.goto(`${url}?view=outbox`);
    await p.waitForSelector("#store-list table");
    assert.deepEqual(await p.$$eval("#store-list tbody tr", (xs) => xs.map((x) => Number(x.dataset.seq))), outbox.items.map((e) => e.seq));
    assert.match(await p.textContent("#store-list"), /order\.fulfilled/);
    await p.screenshot({ path: join(artifacts, "xstate-outbox.png") });

    const { body: timers } = await apiGet(url, "api/timers?limit=50");
    assert.deepEqual(timers.items.map((x) => x.execution_id), ["o-wallet"], "the pending `after` of the one still paying");
    await p.goto(`${url}?view=timers`);
    await p.waitForFunction(() => document.querySelector(".store-view")?.dataset.view === "timers" && document.querySelector("#store-list table"));
    assert.equal(await p.$$eval("#store-list tbody tr", (xs) => xs.length), 1);
    assert.match(await p.textContent("#store-list"), /o-wallet/);
    await p.screenshot({ path: join(artifacts, "xstate-timers.png") });
    assertCalm(p);
  });
});
