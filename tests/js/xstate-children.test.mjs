// execstore/xstate's child executions, sends out of the execution and the paged relay, one
// behaviour per test, on both stores: an invoked child machine is a child execution of its
// own (created through a spawn, its own commits, timers and trace); what the parent sends it,
// its done/error back and its stop travel through the outbox, each applied exactly once
// (redelivery after a crash is a duplicate); `durableRef` addresses another execution; the
// relay reads in bounded pages and can stop and go on; the Store's own `send` reaches an XState execution.
// Run: node --test tests/js/xstate-children.test.mjs
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Store } from "execstore";
import { createDurableActor, durableRef, persistedSnapshot, relay, relayEmits, sweepTimers } from "execstore/xstate";
import { assign, createMachine, emit, fromPromise, sendParent, sendTo, setup } from "xstate";

const BACKENDS = [
  ["memory", () => Store.memory()],
  ["sqliteMemory", () => Store.sqliteMemory()],
];
const T0 = 1_700_000_000_000;

const charge = createMachine({
  id: "charge",
  initial: "waiting",
  context: ({ input }) => ({ amount: input.amount, pokes: 0 }),
  states: {
    waiting: {
      after: { 5000: "expired" },
      on: {
        POKE: { actions: [assign({ pokes: ({ context }) => context.pokes + 1 }), sendParent({ type: "POKED" })] },
        PAY: "paid",
        BREAK: {
          actions: () => {
            throw new Error("card declined");
          },
        },
      },
    },
    paid: { type: "final" },
    expired: { type: "final" },
  },
  output: ({ context }) => ({ amount: context.amount, pokes: context.pokes }),
});

const shop = setup({ actors: { charge } }).createMachine({
  id: "shop",
  initial: "cart",
  context: { poked: 0, paid: null, error: null },
  states: {
    cart: { on: { BUY: "paying" } },
    paying: {
      invoke: {
        id: "pay",
        src: "charge",
        input: { amount: 42 },
        onDone: { target: "done", actions: assign({ paid: ({ event }) => event.output }) },
        onError: { target: "cart", actions: assign({ error: ({ event }) => event.error.message }) },
      },
      on: {
        POKE: { actions: sendTo("pay", { type: "POKE" }) },
        PAY: { actions: sendTo("pay", { type: "PAY" }) },
        BREAK: { actions: sendTo("pay", { type: "BREAK" }) },
        POKED: { actions: assign({ poked: ({ context }) => context.poked + 1 }) },
        LEAVE: "cart",
      },
    },
    done: { type: "final" },
  },
});

const MACHINES = { shop: { machine: shop, version: "1" } };
const CHILD = "s/pay:1";

/** A shop at `paying` with its charge child created by the relay. */
async function paying(store) {
  const actor = createDurableActor(store, shop, { id: "s", version: "1", now: () => T0 });
  actor.send({ type: "BUY" }, { id: "buy" });
  await relay(store, { machines: MACHINES });
  return actor;
}

for (const [name, makeStore] of BACKENDS) {
  describe(`execstore/xstate children on ${name}`, () => {
    test("an invoked child machine is a child execution, created through a spawn in the parent's step", async () => {
      const store = makeStore();
      const actor = createDurableActor(store, shop, { id: "s", version: "1", now: () => T0 });
      actor.send({ type: "BUY" }, { id: "buy" });
      // committed with the parent's step: a spawn intent, no child yet
      const [spawn] = store.pendingSpawns(null, 10);
      assert.equal(spawn.parent_id, "s");
      assert.equal(spawn.child_id, CHILD);
      assert.equal(spawn.root_path, "pay");
      assert.deepEqual(spawn.context.input, { amount: 42 });
      assert.equal(store.load(CHILD), null);
      assert.deepEqual(store.readTrace("s").at(-1).spawned, [CHILD]);
      // the parent holds a stand-in naming the child's execution
      assert.deepEqual(persistedSnapshot(store.load("s")).children.pay.snapshot, { status: "active", execution: CHILD });
      const result = await relay(store, { machines: MACHINES });
      assert.equal(result.spawned, 1);
      assert.deepEqual(store.pendingSpawns(null, 10), []);
      const child = store.load(CHILD);
      assert.equal(child.parent_id, "s");
      assert.equal(child.child_id, "pay");
      assert.equal(child.definition_id, "charge");
      assert.equal(child.definition_fqn, "charge@1");
      assert.equal(child.status, "RUNNING");
      assert.equal(child.context.amount, 42);
      // its own timer, counted from the parent's step, and its own trace
      assert.deepEqual(store.dueTimers(1e12, null, 10).map((t) => [t.execution_id, t.fire_at]), [[CHILD, (T0 + 5000) / 1000]]);
      assert.deepEqual(store.readTrace(CHILD).map((t) => t.event_kind), ["xstate.init"]);
      // listed apart: not a root
      const roots = store.listExecutions({ roots_only: true }).items.map((e) => e.id);
      assert.deepEqual(roots, ["s"]);
      // a second relay has nothing to do
      assert.deepEqual(await relay(store, { machines: MACHINES }), { spawned: 0, applied: 0, ignored: 0, delivered: 0, left: 0 });
    });

    test("sendTo a child and sendParent back travel through the outbox, each applied once", async () => {
      const store = makeStore();
      const actor = await paying(store);
      actor.send({ type: "POKE" }, { id: "poke-1" });
      const [out] = store.pendingOutbox(null, 10);
      assert.equal(out.target_id, CHILD);
      assert.equal(out.event.kind, "POKE");
      assert.equal(out.event.source_id, "s");
      assert.deepEqual(store.readTrace("s").at(-1).sent, [{ to: CHILD, kind: "POKE" }]);
      // a crash after the child applied it but before the ack: delivered again, applied once
      const child = createDurableActor(store, charge, { id: CHILD, version: "1", create: false });
      assert.equal(child.receive(out).applied, true);
      assert.equal(child.receive(out).applied, false);
      const result = await relay(store, { machines: MACHINES });
      assert.equal(result.ignored, 1, "the redelivered POKE is a duplicate");
      assert.equal(result.applied, 1, "the child's sendParent reached the parent");
      assert.equal(store.load(CHILD).context.pokes, 1);
      assert.equal(store.load("s").context.poked, 1);
      assert.equal(store.readTrace("s").at(-1).source_id, CHILD);
      assert.deepEqual(store.pendingOutbox(null, 10), []);
    });

    test("the child's done goes back to its parent through the outbox (onDone with its output)", async () => {
      const store = makeStore();
      const actor = await paying(store);
      actor.send({ type: "PAY" }, { id: "pay-1" });
      await relay(store, { machines: MACHINES, max: 1 }); // only the PAY: the child is done
      assert.equal(store.load(CHILD).status, "DONE");
      const [done] = store.pendingOutbox(null, 10);
      assert.equal(done.target_id, "s");
      assert.equal(done.event.kind, "xstate.done.actor.pay");
      assert.equal(store.load("s").active_path, "paying", "not applied before the relay delivers it");
      await relay(store, { machines: MACHINES });
      const parent = store.load("s");
      assert.equal(parent.status, "DONE");
      assert.deepEqual(parent.context.paid, { amount: 42, pokes: 0 });
    });

    test("the child's error goes back to its parent (onError)", async () => {
      const store = makeStore();
      const actor = await paying(store);
      actor.send({ type: "BREAK" }, { id: "break-1" });
      await relay(store, { machines: MACHINES });
      assert.equal(store.load(CHILD).status, "FAILED");
      const parent = store.load("s");
      assert.equal(parent.active_path, "cart");
      assert.equal(parent.context.error, "card declined");
    });

    test("leaving the invoking state stops the child: its execution is cancelled, its timers removed", async () => {
      const store = makeStore();
      const actor = await paying(store);
      actor.send({ type: "LEAVE" }, { id: "leave-1" });
      const [stop] = store.pendingOutbox(null, 10);
      assert.equal(stop.target_id, CHILD);
      assert.equal(stop.event.kind, "xstate.stop");
      await relay(store, { machines: MACHINES });
      assert.equal(store.load(CHILD).status, "CANCELLED");
      assert.deepEqual(store.dueTimers(1e12, null, 10), []);
      // the child's timeout never fires now
      assert.equal(sweepTimers(store, MACHINES, { now: T0 + 10_000 }), 0);
    });

    test("a child's own timer fires by the sweep (its machine found through the parent's) and its done reaches the parent", async () => {
      const store = makeStore();
      await paying(store);
      assert.equal(sweepTimers(store, MACHINES, { now: T0 + 6000 }), 1);
      assert.equal(store.load(CHILD).active_path, "expired");
      await relay(store, { machines: MACHINES });
      const parent = store.load("s");
      assert.equal(parent.status, "DONE");
      // the parent's step is at the time the child sent its done (the timer's deadline)
      assert.equal(parent.updated_at, (T0 + 5000) / 1000);
    });

    test("a child's sendParent in its initial state's entry reaches the parent", async () => {
      const store = makeStore();
      const kid = createMachine({ id: "kid", entry: sendParent({ type: "HELLO" }), initial: "a", states: { a: {} } });
      const mom = setup({ actors: { kid } }).createMachine({
        id: "mom",
        context: { hellos: 0 },
        invoke: { id: "k", src: "kid" },
        on: { HELLO: { actions: assign({ hellos: ({ context }) => context.hellos + 1 }) } },
      });
      createDurableActor(store, mom, { id: "m", version: "1" });
      const result = await relay(store, { machines: { mom: { machine: mom, version: "1" } } });
      assert.deepEqual(result, { spawned: 1, applied: 1, ignored: 0, delivered: 0, left: 0 });
      assert.equal(store.load("m/k:1").status, "RUNNING");
      assert.equal(store.load("m").context.hellos, 1);
      // resumed later (a new process), the child still knows its parent
      const again = createDurableActor(store, kid, { id: "m/k:1", version: "1", create: false });
      assert.equal(again.execution.parent_id, "m");
    });

    test("durableRef: sendTo another execution goes to the outbox and the relay applies it to that execution", async () => {
      const store = makeStore();
      const sink = createMachine({
        id: "sink",
        context: { got: [] },
        on: { NOTE: { actions: assign({ got: ({ context, event }) => [...context.got, event.text] }) } },
      });
      const source = createMachine({
        id: "source",
        on: {
          TELL: { actions: sendTo(() => durableRef("sink-1"), ({ event }) => ({ type: "NOTE", text: event.text })) },
          ASK: { actions: sendTo(() => durableRef("nobody"), { type: "HELLO" }) },
        },
      });
      createDurableActor(store, sink, { id: "sink-1", version: "1" });
      const src = createDurableActor(store, source, { id: "src-1", version: "1" });
      src.send({ type: "TELL", text: "a" }, { id: "t1" });
      src.send({ type: "ASK" }, { id: "a1" });
      src.send({ type: "TELL", text: "b" }, { id: "t2" });
      assert.deepEqual(
        store.pendingOutbox(null, 10).map((e) => [e.target_id, e.event.kind]),
        [
          ["sink-1", "NOTE"],
          ["nobody", "HELLO"],
          ["sink-1", "NOTE"],
        ],
      );
      const handed = [];
      const machines = { sink: { machine: sink, version: "1" }, source: { machine: source, version: "1" } };
      const result = await relay(store, { machines, deliver: (entry) => handed.push([entry.target_id, entry.event.kind]) });
      assert.deepEqual(result, { spawned: 0, applied: 2, ignored: 0, delivered: 1, left: 0 });
      assert.deepEqual(store.load("sink-1").context.got, ["a", "b"]);
      assert.deepEqual(handed, [["nobody", "HELLO"]], "an unknown target goes to the handler");
      assert.deepEqual(store.pendingOutbox(null, 10), []);
      // the Store's own send (an event from outside, by the execution's id) is delivered the same way, once
      const sent = store.send("sink-1", { id: "outside-1", kind: "NOTE", data: { text: "c" } });
      assert.equal(sent.event_id, "outside-1");
      await relay(store, { machines });
      assert.deepEqual(store.load("sink-1").context.got, ["a", "b", "c"]);
      store.send("sink-1", { id: "outside-1", kind: "NOTE", data: { text: "c" } });
      assert.equal((await relay(store, { machines })).ignored, 1, "the same event id again: a duplicate");
      assert.deepEqual(store.load("sink-1").context.got, ["a", "b", "c"]);
    });

    test("the relay reads in bounded pages, stops at max and goes on from where it stopped", async () => {
      const store = makeStore();
      const talker = createMachine({
        id: "talker",
        on: { SAY: { actions: emit(({ event }) => ({ type: "said", n: event.n })) } },
      });
      const a = createDurableActor(store, talker, { id: "t", version: "1" });
      for (let n = 0; n < 7; n += 1) a.send({ type: "SAY", n });
      const limits = [];
      const pendingOutbox = store.pendingOutbox.bind(store);
      const spy = new Proxy(store, {
        get(target, key) {
          if (key === "pendingOutbox") {
            return (after, limit) => {
              limits.push(limit);
              return pendingOutbox(after, limit);
            };
          }
          const value = target[key];
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const seen = [];
      const deliver = (entry) => {
        seen.push(entry.event.data.n);
      };
      const first = await relay(spy, { deliver, limit: 2, max: 3 });
      assert.equal(first.delivered, 3);
      assert.deepEqual(seen, [0, 1, 2]);
      assert.equal(store.pendingOutbox(null, 100).length, 4);
      const rest = await relay(spy, { deliver, limit: 2 });
      assert.equal(rest.delivered, 4);
      assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6]);
      assert.ok(limits.length >= 5 && limits.every((l) => l === 2), `every read is a page of 2: ${limits}`);
      // an entry the handler declines (false) stays pending and the relay goes past it
      a.send({ type: "SAY", n: 7 });
      a.send({ type: "SAY", n: 8 });
      const declined = await relay(store, { deliver: (entry) => entry.event.data.n !== 7, limit: 1 });
      assert.equal(declined.delivered, 1);
      assert.equal(declined.left, 1);
      assert.deepEqual(store.pendingOutbox(null, 10).map((e) => e.event.data.n), [7]);
    });

    test("relayEmits (deprecated) hands emits only: child creations and sends stay for relay", async () => {
      const store = makeStore();
      const actor = createDurableActor(store, shop, { id: "s", version: "1", now: () => T0 });
      actor.send({ type: "BUY" }, { id: "buy" });
      const handed = [];
      assert.equal(await relayEmits(store, (entry) => handed.push(entry)), 0);
      assert.deepEqual(handed, []);
      assert.equal(store.pendingSpawns(null, 10).length, 1);
      actor.send({ type: "POKE" }, { id: "poke" }); // to a child not created yet
      assert.equal(await relayEmits(store, (entry) => handed.push(entry)), 0);
      assert.equal(store.pendingOutbox(null, 10).length, 1, "the POKE waits for its child");
      const result = await relay(store, { machines: MACHINES });
      assert.equal(result.spawned, 1);
      assert.equal(store.load("s").context.poked, 1, "the POKE reached the child, created first");
    });

    test("a promise actor still runs in memory, restarted on resume, its result committed as an event", async () => {
      const store = makeStore();
      let calls = 0;
      const fetcher = setup({
        actors: {
          load: fromPromise(async () => {
            calls += 1;
            return 7;
          }),
        },
      }).createMachine({
        id: "fetcher",
        initial: "loading",
        context: { value: null },
        states: {
          loading: { invoke: { src: "load", onDone: { target: "ready", actions: assign({ value: ({ event }) => event.output }) } } },
          ready: {},
        },
      });
      const actor = createDurableActor(store, fetcher, { id: "f", version: "1" });
      assert.deepEqual(store.pendingSpawns(null, 10), [], "not a child execution");
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(calls, 1);
      assert.equal(store.load("f").context.value, 7);
      assert.equal(actor.asyncCommits, 1);
    });
  });
}
