// execstore/xstate's promises one by one: one commit per event (CAS: a stale writer re-reads,
// two actors never both apply a step), the event id as dedupe key, emits through the outbox
// and the relay (redelivered after a failed delivery), delayed events as durable timers
// (cancelled when the state is left, fired after a restart at their deadlines), actors'
// own results (a promise) committed as steps, versions and migrations, typed errors that
// change nothing, the status and active path, and the worked example of README.md.
// Run: node --test tests/js/xstate.test.mjs
import assert from "node:assert/strict";
import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Store } from "execstore";
import { createDurableActor, persistedSnapshot, relayEmits, sweepTimers, XStateStoreError } from "execstore/xstate";
import { assign, cancel, createActor, createMachine, emit, fromPromise, raise, setup } from "xstate";

import { ManualClock } from "./xstate-machines.mjs";

const BACKENDS = [
  ["memory", () => Store.memory()],
  ["sqliteMemory", () => Store.sqliteMemory()],
];

/** Everything a store holds that a bad call could change. */
function contents(store) {
  return JSON.stringify({
    loaded: store.idsWithPrefix("").map((id) => store.load(id)),
    outbox: store.pendingOutbox(null, 10000),
    timers: store.dueTimers(1e12, null, 10000),
    traces: store.idsWithPrefix("").map((id) => store.readTrace(id)),
  });
}

/** Runs `fn` and returns what it threw (failing if it did not throw). */
function thrown(fn) {
  try {
    fn();
  } catch (error) {
    return error;
  }
  assert.fail("expected an error");
}

let hook = () => {};
const counter = setup({
  actions: { touch: () => hook() },
}).createMachine({
  id: "counter",
  context: { n: 0 },
  initial: "on",
  states: {
    on: {
      on: {
        INC: { actions: [assign({ n: ({ context }) => context.n + 1 }), "touch", emit(({ context }) => ({ type: "counted", n: context.n }))] },
        OFF: "off",
      },
    },
    off: { after: { 1000: { target: "on", actions: emit({ type: "woke" }) } }, on: { ON: "on" } },
  },
});

for (const [name, makeStore] of BACKENDS) {
  describe(`execstore/xstate on ${name}`, () => {
    test("the first call creates the execution, a second resumes it", () => {
      const store = makeStore();
      const a = createDurableActor(store, counter, { id: "c", version: "1", now: () => 5000 });
      const exe = store.load("c");
      assert.equal(exe.definition_id, "counter");
      assert.equal(exe.definition_fqn, "counter@1");
      assert.equal(exe.status, "RUNNING");
      assert.equal(exe.active_path, "on");
      assert.equal(exe.version, 1);
      assert.equal(exe.context.n, 0);
      a.send({ type: "INC" });
      const b = createDurableActor(store, counter, { id: "c", version: "1" });
      assert.deepEqual(b.getPersistedSnapshot().context, { n: 1 });
      assert.equal(store.load("c").version, 2);
      const [init] = store.readTrace("c");
      assert.equal(init.event_kind, "xstate.init");
      assert.equal(init.definition.id, "counter");
      assert.ok(init.definition.states.off, "the definition's states are stored");
    });

    test("one commit per event: a stale writer gets CONFLICT, re-reads, and the steps are not both applied on one version", () => {
      const store = makeStore();
      const a = createDurableActor(store, counter, { id: "c", version: "1" });
      const b = createDurableActor(store, counter, { id: "c", version: "1" });
      b.send({ type: "INC" }); // b's live actor is at version 2
      let touches = 0;
      hook = () => {
        touches += 1;
        // while b runs its step on the version it read, a commits one of its own
        if (touches === 1) a.send({ type: "INC" }, { id: "from-a" });
      };
      try {
        const result = b.send({ type: "INC" }, { id: "from-b" });
        assert.equal(result.applied, true);
      } finally {
        hook = () => {};
      }
      // b's first try lost the CAS (a committed in between), re-read and ran again
      assert.equal(touches, 3, "b's action ran, a's ran, b's ran again on the new version");
      const exe = store.load("c");
      assert.equal(exe.context.n, 3, "all three increments, none lost, none doubled");
      assert.equal(exe.version, 4);
      assert.deepEqual(
        store.readTrace("c").map((s) => s.event_id),
        [null, null, "from-a", "from-b"],
      );
      assert.equal(store.isProcessed("c", "from-a"), true);
      assert.equal(store.isProcessed("c", "from-b"), true);
    });

    test("the event id is the dedupe key: the same event twice applies once", () => {
      const store = makeStore();
      const a = createDurableActor(store, counter, { id: "c", version: "1" });
      assert.equal(a.send({ type: "INC" }, { id: "e-1" }).applied, true);
      const before = contents(store);
      const again = createDurableActor(store, counter, { id: "c", version: "1" }).send({ type: "INC" }, { id: "e-1" });
      assert.deepEqual([again.applied, again.reason], [false, "duplicate"]);
      assert.equal(contents(store), before);
      assert.equal(store.load("c").context.n, 1);
    });

    test("emits go to the outbox in the step's commit; the relay delivers each once, again after a failed delivery", async () => {
      const store = makeStore();
      const a = createDurableActor(store, counter, { id: "c", version: "1" });
      a.send({ type: "INC" });
      a.send({ type: "INC" });
      const pending = store.pendingOutbox(null, 100);
      assert.deepEqual(
        pending.map((e) => [e.event.kind, e.event.data, e.event.source_id]),
        [
          ["counted", { type: "counted", n: 1 }, "c"],
          ["counted", { type: "counted", n: 2 }, "c"],
        ],
      );
      // a delivery that fails (a crash before the ack) leaves the entry pending
      await assert.rejects(
        relayEmits(store, () => {
          throw new Error("down");
        }),
        /down/,
      );
      assert.equal(store.pendingOutbox(null, 100).length, 2);
      // delivered into a durable sink by the entry's id: a redelivery applies nothing
      const sink = createMachine({
        id: "sink",
        context: { got: [] },
        on: { "*": { actions: assign({ got: ({ context, event }) => [...context.got, event.n] }) } },
      });
      const s = createDurableActor(store, sink, { id: "sink", version: "1" });
      const first = pending[0];
      s.send({ type: first.event.kind, n: first.event.data.n }, { id: first.event.id }); // delivered, then "crashed" before the ack
      const delivered = await relayEmits(store, (entry) => {
        s.send({ type: entry.event.kind, n: entry.event.data.n }, { id: entry.event.id });
      });
      assert.equal(delivered, 2);
      assert.deepEqual(store.pendingOutbox(null, 100), []);
      assert.deepEqual(store.load("sink").context.got, [1, 2], "each emitted event applied exactly once");
    });

    test("delayed events are durable timers: cancelled when the state is left, fired after a restart at their deadline", () => {
      const store = makeStore();
      let now = 10_000;
      const a = createDurableActor(store, counter, { id: "c", version: "1", now: () => now });
      a.send({ type: "OFF" });
      assert.deepEqual(
        store.dueTimers(1e12, null, 10).map((t) => [t.path, t.fire_at]),
        [["xstate.after.1000.counter.off#1", 11]],
      );
      a.send({ type: "ON" });
      assert.deepEqual(store.dueTimers(1e12, null, 10), [], "leaving the state cancels its timer");
      now = 20_000;
      a.send({ type: "OFF" });
      a.stop(); // the process goes away; nothing in memory is left
      const machines = { counter: { machine: counter, version: "1" } };
      assert.equal(sweepTimers(store, machines, { now: 20_999 }), 0, "not due yet");
      assert.equal(sweepTimers(store, machines, { now: 35_000 }), 1, "due: fired once");
      assert.equal(sweepTimers(store, machines, { now: 36_000 }), 0, "and only once");
      const exe = store.load("c");
      assert.equal(exe.active_path, "on");
      const last = store.readTrace("c").at(-1);
      assert.equal(last.event_kind, "xstate.after.1000.counter.off");
      assert.equal(last.timestamp, 21, "the step is at the timer's deadline, not at the sweep's time");
      assert.deepEqual(last.emitted, ["woke"]);
      assert.deepEqual(store.dueTimers(1e12, null, 10), []);
    });

    test("a timeout XState can no longer cancel stays so after a resume (an id armed twice, the first fired)", () => {
      const m = createMachine({
        id: "twice",
        context: { ticks: 0 },
        on: {
          ARM: { actions: raise({ type: "T" }, { delay: 100, id: "t" }) },
          STOP: { actions: cancel("t") },
          T: { actions: assign({ ticks: ({ context }) => context.ticks + 1 }) },
        },
      });
      const clock = new ManualClock();
      const plain = createActor(m, { clock }).start();
      const store = makeStore();
      let now = 0;
      const fresh = () => createDurableActor(store, m, { id: "t", version: "1", now: () => now });
      fresh();
      const both = (step) => {
        if (typeof step === "number") {
          now = step;
          clock.advance(step);
          fresh().fireDue(step);
        } else {
          plain.send({ type: step });
          fresh().send({ type: step });
        }
      };
      // ARM at 0 and at 50: the first timeout is no longer the scheduler's; when it fires at
      // 100 it takes the second's entry with it, so STOP cancels nothing and the second fires
      for (const step of ["ARM", 50, "ARM", 100, "STOP", 200]) both(step);
      assert.equal(plain.getSnapshot().context.ticks, 2);
      assert.deepEqual(persistedSnapshot(store.load("t")).context, { ticks: 2 });
      assert.deepEqual(store.dueTimers(1e12, null, 10), []);
    });

    test("a promise actor is restarted on resume as XState does, its result committed as a step", async () => {
      const store = makeStore();
      let calls = 0;
      const release = [];
      const fetcher = setup({
        actors: {
          load: fromPromise(async () => {
            calls += 1;
            await new Promise((resolve) => release.push(resolve));
            return { rows: 3 };
          }),
        },
      }).createMachine({
        id: "fetcher",
        initial: "idle",
        context: { rows: 0 },
        states: {
          idle: { on: { GO: "loading" } },
          loading: { invoke: { src: "load", onDone: { target: "ready", actions: assign({ rows: ({ event }) => event.output.rows }) } } },
          ready: { type: "final" },
        },
      });
      const a = createDurableActor(store, fetcher, { id: "f", version: "1" });
      a.send({ type: "GO" });
      assert.equal(calls, 1);
      a.stop(); // the process dies before the promise settles
      release.shift()?.();
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(store.load("f").active_path, "loading", "a dead process's result is not committed");
      const b = createDurableActor(store, fetcher, { id: "f", version: "1" });
      b.send({ type: "NOTHING" }); // resuming (any call that needs the live actor) restarts the promise
      assert.equal(calls, 2);
      release.shift()?.();
      await new Promise((resolve) => setTimeout(resolve, 10));
      const exe = store.load("f");
      assert.equal(exe.status, "DONE");
      assert.equal(exe.context.rows, 3);
      assert.equal(b.asyncCommits, 1);
      assert.equal(store.readTrace("f").at(-1).event_kind, "xstate.done.actor.0.fetcher.loading");
    });

    test("another version is refused with a typed error unless migrate is passed", () => {
      const store = makeStore();
      createDurableActor(store, counter, { id: "c", version: "1" }).send({ type: "INC" });
      const before = contents(store);
      const error = thrown(() => createDurableActor(store, counter, { id: "c", version: "2" }));
      assert.ok(error instanceof XStateStoreError);
      assert.deepEqual([error.code, error.stored, error.expected], ["VERSION_MISMATCH", "counter@1", "counter@2"]);
      assert.equal(contents(store), before, "nothing changed");
      const other = createMachine({ id: "other" });
      assert.equal(thrown(() => createDurableActor(store, other, { id: "c", version: "1" })).code, "DEFINITION_MISMATCH");
      assert.equal(contents(store), before);
      const seen = [];
      const b = createDurableActor(store, counter, {
        id: "c",
        version: "2",
        migrate: (snapshot, info) => {
          seen.push(info);
          return { ...snapshot, context: { n: snapshot.context.n * 10 } };
        },
      });
      assert.deepEqual(seen, [{ from: "counter@1", to: "counter@2" }]);
      b.send({ type: "INC" });
      const exe = store.load("c");
      assert.equal(exe.definition_fqn, "counter@2");
      assert.equal(exe.context.n, 11);
      assert.equal(store.readTrace("c").at(-2).event_kind, "xstate.migrate");
    });

    test("bad input is a typed error and changes nothing", () => {
      const store = makeStore();
      const a = createDurableActor(store, counter, { id: "c", version: "1" });
      const before = contents(store);
      for (const [call, field] of [
        [() => a.send("INC"), "event"],
        [() => a.send({ kind: "INC" }), "event"],
        [() => a.send({ type: "INC", n: 1n }), "event"],
        [() => a.send({ type: "INC" }, { id: "" }), "id"],
        [() => createDurableActor(store, counter, { id: "", version: "1" }), "id"],
        [() => createDurableActor(store, counter, { id: "d" }), "version"],
      ]) {
        const error = thrown(call);
        assert.deepEqual([error.name, error.code, error.field], ["XStateStoreError", "INVALID_INPUT", field]);
      }
      assert.equal(thrown(() => createDurableActor(store, counter, { id: "nope", version: "1", create: false })).code, "NOT_FOUND");
      store.commit({ id: "plain", definition_id: "counter", version: 0 });
      const foreign = contents(store);
      assert.equal(thrown(() => createDurableActor(store, counter, { id: "plain", version: "1" })).code, "NOT_XSTATE");
      assert.equal(contents(store), foreign);
      // a context that is not JSON (a BigInt): the step is refused, nothing committed
      const big = createMachine({ id: "big", context: { n: 0 }, on: { GO: { actions: assign({ n: () => 10n }) } } });
      const i = createDurableActor(store, big, { id: "big", version: "1" });
      const withBig = contents(store);
      assert.equal(thrown(() => i.send({ type: "GO" }, { id: "go" })).code, "NOT_SERIALIZABLE");
      assert.equal(contents(store), withBig);
      assert.equal(store.isProcessed("big", "go"), false);
      void before;
    });

    test("the status and active path follow the snapshot (done, error, parallel)", () => {
      const store = makeStore();
      const m = createMachine({
        id: "m",
        initial: "work",
        states: {
          work: {
            type: "parallel",
            states: { a: { initial: "x", states: { x: {} } }, b: { initial: "y", states: { y: {} } } },
            on: {
              FINISH: "end",
              BOOM: {
                actions: () => {
                  throw new Error("boom");
                },
              },
            },
          },
          end: { type: "final" },
        },
      });
      const a = createDurableActor(store, m, { id: "p", version: "1" });
      assert.equal(store.load("p").active_path, "work");
      assert.deepEqual(a.getPersistedSnapshot().value, { work: { a: "x", b: "y" } });
      a.send({ type: "FINISH" });
      const done = store.load("p");
      assert.deepEqual([done.status, done.outcome, done.active_path], ["DONE", "done", "end"]);
      assert.equal(a.send({ type: "FINISH" }).reason, "finished");
      const b = createDurableActor(store, m, { id: "q", version: "1" });
      b.send({ type: "BOOM" });
      const failed = store.load("q");
      assert.deepEqual([failed.status, failed.error], ["FAILED", "boom"]);
      assert.equal(persistedSnapshot(failed).status, "error");
    });
  });
}

test("README.md's worked example runs", async () => {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const block = readme.match(/<!-- xstate-example -->\s*```js\n([\s\S]*?)```/);
  assert.ok(block, "README.md has the example (marked <!-- xstate-example -->)");
  const file = fileURLToPath(new URL(`./.xstate-example-${process.pid}.mjs`, import.meta.url));
  writeFileSync(file, `${block[1]}\nexport { store, order };\n`);
  let mod;
  try {
    mod = await import(file);
  } finally {
    unlinkSync(file);
  }
  const exe = mod.store.load("order-1");
  assert.equal(exe.status, "DONE");
  assert.equal(exe.active_path, "cancelled");
  assert.deepEqual(
    mod.store.readTrace("order-1").map((s) => s.event_kind),
    ["xstate.init", "PLACE", "xstate.after.60000.order.paying"],
  );
  // the invoked payment machine ran as a child execution, stopped when the timeout left `paying`
  const child = mod.store.load("order-1/payment:1");
  assert.equal(child.parent_id, "order-1");
  assert.equal(child.status, "CANCELLED");
  assert.deepEqual(mod.store.pendingOutbox(null, 10), []);
});
