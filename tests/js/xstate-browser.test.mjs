// Durable XState in headless Chromium over OPFS (execstore/xstate-worker + xstate-client):
// the demo (examples/xstate-browser) resumes after a reload mid-flow and its pending `after`
// fires at its original deadline, swept on load; two tabs sending to one execution never both
// apply a step. Run: node --test tests/js/xstate-browser.test.mjs (needs the wasm build and
// /usr/bin/chromium).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";

import { Store } from "execstore";
import { createDurableActor, relay, relayEmits, XSTATE_KEY } from "execstore/xstate";

import { orderMachine } from "../../examples/xstate-browser/machines.js";
import { chromiumSuite, noChromium } from "./chromium.mjs";
import { tscSnippet } from "./tsc.mjs";

const unique = (name) => `${name}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;

test("the demo's order machine: paid through its invoked payment machine, shipped, each outcome emitted", async () => {
  const store = Store.memory();
  let now = 1_000_000;
  const order = createDurableActor(store, orderMachine, { id: "o-1", version: "1", input: { timeoutMs: 5000 }, now: () => now });
  assert.equal(order.send({ type: "PLACE" }).execution.active_path, "cart", "an empty cart is not placed");
  order.send({ type: "ADD" });
  order.send({ type: "ADD" });
  order.send({ type: "PLACE" });
  assert.deepEqual(Object.keys(order.getPersistedSnapshot().children), ["payment"], "the payment machine is invoked");
  assert.equal(order.scheduled()[0].fire_at, now + 5000);
  now += 1000;
  // PAY goes to the payment machine, a child execution, through the outbox; its done comes
  // back the same way: the relay carries both.
  order.send({ type: "PAY" }, { id: "pay-1" });
  assert.equal(store.load("o-1").active_path, "awaitingPayment", "not paid before the relay ran");
  await relay(store, { machines: { order: { machine: orderMachine, version: "1" } }, now });
  const paid = store.load("o-1");
  assert.equal(paid.active_path, "paid");
  assert.equal(paid.context.paid, 10);
  assert.deepEqual(paid.context[XSTATE_KEY].scheduled, [], "leaving the state cancelled the timeout");
  assert.equal(order.send({ type: "SHIP" }).execution.status, "DONE");
  const relayed = [];
  await relayEmits(store, (entry) => relayed.push([entry.event.kind, entry.event.data.amount ?? null]));
  assert.deepEqual(relayed, [["order.paid", 10], ["order.shipped", null]]);
});

test("execstore/xstate-client and xstate-worker: a typical use compiles under --strict, misuses do not, no `any`", () => {
  const diagnostics = tscSnippet(`
    import { connectXState, type XStateClient } from "execstore/xstate-client";
    import { serveXState } from "execstore/xstate-worker";
    import { createMachine } from "xstate";
    const m = createMachine({ id: "m", initial: "a", states: { a: {} } });
    serveXState({ machines: { m: { machine: m, version: "1" } }, now: () => Date.now() });
    // @ts-expect-error a served machine needs its version
    serveXState({ machines: { m: { machine: m } } });
    export async function page(worker: Worker): Promise<number> {
      const c: XStateClient = await connectXState(worker, "orders", { waitMs: 100 });
      const started = await c.start("o-1", "m", { input: { timeoutMs: 5 } });
      const version: number = started.execution.version;
      const sent = await c.send("o-1", { type: "GO", n: 1 }, { id: "e-1" });
      const applied: boolean = sent.applied;
      // @ts-expect-error an event has a string type
      await c.send("o-1", { kind: "GO" });
      // @ts-expect-error an execution id is a string
      await c.start(1, "m");
      const fired: number = await c.sweep({ now: Date.now() });
      const relayed: number = await c.relay(async (entry) => { const id: string = entry.event.id; return id; });
      const read = await c.read("o-1");
      const value = read?.snapshot.value;
      await c.close();
      await c.reopen({ waitMs: 10 });
      c.terminate();
      return version + Number(applied) + fired + relayed + (value === undefined ? 0 : 1);
    }
  `);
  assert.equal(diagnostics, "");
  for (const name of ["xstate-client.d.ts", "xstate-worker.d.ts"]) {
    const text = readFileSync(new URL(`../../crates/execstore-wasm/npm/${name}`, import.meta.url), "utf8");
    const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
    assert.doesNotMatch(code, /\bany\b/, `${name} declares an any`);
  }
});

describe("durable XState in Chromium (OPFS)", { skip: noChromium }, () => {
  const { openPage } = chromiumSuite();

  test("a reload mid-flow resumes the order; its pending `after` fires at its deadline, swept on load; emits relayed once", async () => {
    const store = unique("demo");
    const TIMEOUT = 6000; // long enough for a reload on a loaded machine
    const demo = `/examples/xstate-browser/index.html?store=${store}&timeout=${TIMEOUT}`;
    let page = await openPage(demo);
    const placed = await page.evaluate(async () => {
      await window.demo.send("ADD");
      await window.demo.send("PLACE");
      const { summary } = window.demo;
      return { path: summary.execution.active_path, scheduled: summary.scheduled.map((s) => s.fire_at), version: summary.execution.version };
    });
    assert.equal(placed.path, "awaitingPayment");
    assert.equal(placed.scheduled.length, 1, "the payment timeout is armed");
    const deadline = placed.scheduled[0];

    // Reload mid-flow: the worker ends with the page; the new page resumes the order.
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    const resumed = await page.evaluate(() => {
      const { summary } = window.demo;
      return { path: summary.execution.active_path, scheduled: summary.scheduled.map((s) => s.fire_at), version: summary.execution.version, fired: window.demo.fired };
    });
    assert.ok(Date.now() < deadline, "the reload came before the deadline (the machine is too slow for this test otherwise)");
    assert.deepEqual(resumed, { path: "awaitingPayment", scheduled: [deadline], version: placed.version, fired: 0 });

    // The tab goes away before the deadline and comes back after it: nothing ran meanwhile;
    // the sweep on load fires the timeout, stamped with its deadline.
    await page.close();
    await sleep(Math.max(0, deadline - Date.now()) + 300);
    page = await openPage(demo);
    const fired = await page.evaluate(async () => {
      const { summary } = window.demo;
      const trace = await window.demo.orders.trace(window.demo.orderId());
      return { path: summary.execution.active_path, status: summary.execution.status, fired: window.demo.fired, trace, relayed: window.demo.relayed() };
    });
    assert.equal(fired.fired, 1, "the first sweep of the new page fired it");
    assert.equal(fired.path, "cancelled");
    assert.equal(fired.status, "DONE");
    const step = fired.trace.at(-1);
    assert.match(step.event_kind, /^xstate\.after\./);
    assert.equal(step.timestamp, deadline / 1000, "the step is at the deadline, not at the sweep");
    assert.ok(step.fired_at * 1000 >= deadline, "and the sweep ran after it");
    assert.deepEqual(fired.trace.map((s) => s.event_kind).slice(0, 3), ["xstate.init", "ADD", "PLACE"]);
    assert.deepEqual(fired.relayed.map((e) => e.kind), ["order.cancelled"]);

    // Once more: nothing fires or relays twice.
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    const again = await page.evaluate(async () => {
      await window.demo.tick();
      return { fired: window.demo.fired, relayed: window.demo.relayed().length, trace: (await window.demo.orders.trace(window.demo.orderId())).length };
    });
    assert.deepEqual(again, { fired: 0, relayed: 1, trace: fired.trace.length });
    await page.screenshot({ path: new URL("../../test-artifacts/xstate-browser-demo.png", import.meta.url).pathname });
    await page.close();
  });

  test("two tabs sending to one execution never both apply a step: each event applied once", async () => {
    const store = unique("tabs");
    const N = 8;
    const [a, b] = [await openPage("/tests/js/pages/xstate-tabs.html"), await openPage("/tests/js/pages/xstate-tabs.html")];
    // Each tab keeps one worker (and its actor) for the whole run and hands the store over to
    // the other tab after every event (close, then open again, waiting for the other's close):
    // its actor is then behind what the other tab committed.
    const run = (page, tab) => page.evaluate(async ({ store, tab, N }) => {
      const tally = await window.connect(store, { waitMs: 30000 });
      await tally.start("tally-1", "tally");
      const results = [];
      for (let i = 0; i <= N; i += 1) {
        const tag = i === N ? "shared" : `${tab}-${i}`; // the last one both tabs send
        const r = await tally.send("tally-1", { type: "ADD", tag }, { id: tag });
        results.push({ tag, applied: r.applied, reason: r.reason ?? null, version: r.execution.version });
        await tally.close();
        await new Promise((resolve) => setTimeout(resolve, 5));
        await tally.reopen({ waitMs: 30000 });
      }
      await tally.close();
      return results;
    }, { store, tab, N });
    const [ra, rb] = await Promise.all([run(a, "a"), run(b, "b")]);

    const check = await a.evaluate(async (store) => {
      const tally = await window.connect(store, { waitMs: 30000 });
      const summary = await tally.read("tally-1");
      const trace = await tally.trace("tally-1");
      await tally.close();
      return { context: summary.snapshot.context, version: summary.execution.version, trace: trace.map((s) => s.event_id) };
    }, store);
    const applied = [...ra, ...rb].filter((r) => r.applied);
    const duplicates = [...ra, ...rb].filter((r) => !r.applied);
    assert.equal(applied.length, 2 * N + 1, "every event applied once, `shared` by one tab only");
    assert.deepEqual(duplicates.map((r) => [r.tag, r.reason]), [["shared", "duplicate"]]);
    // Every applied step got its own version: no two steps on one version.
    assert.deepEqual(applied.map((r) => r.version).sort((x, y) => x - y), Array.from({ length: 2 * N + 1 }, (_, i) => i + 2));
    assert.equal(check.version, 2 * N + 2);
    assert.equal(check.context.count, 2 * N + 1, "no step lost: the count is the number of events");
    assert.deepEqual([...check.context.tags].sort(), applied.map((r) => r.tag).sort());
    assert.deepEqual(check.trace, [null, ...check.context.tags], "one trace step per applied event, in the order of the count");
    // The tabs really took turns (so each tab's actor was behind the other's commits).
    const order = check.context.tags.map((t) => t[0]);
    const switches = order.filter((t, i) => i > 0 && t !== order[i - 1]).length;
    assert.ok(switches >= 4, `the tabs interleaved (${order.join("")})`);
    await a.close();
    await b.close();
  });
});
