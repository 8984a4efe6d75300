// XState itself as the oracle of `execstore/xstate`: seeded random sequences of events and
// clock advances go through the same machine twice, once in a plain in-memory XState actor
// (timers on a manual clock) and once durably over a Store (memory and sqliteMemory; each
// durable step may go through a fresh resume from the store, as after a restart). A child
// machine is a child execution durably: the relay runs after every step (creating children,
// carrying sends, stops and done/error events), and each child is read back from its own
// execution. After every step the persisted snapshots (value, context, status, children,
// history), the emitted events, the pending delayed events and the trace must agree.
// Run: node --test tests/js/xstate-oracle.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";

import { Store } from "execstore";
import { createDurableActor, persistedSnapshot, relay, sweepTimers } from "execstore/xstate";
import { createActor } from "xstate";

import { MACHINES, ManualClock, random } from "./xstate-machines.mjs";

const SEQUENCES = Number(process.env.XSTATE_ORACLE_SEQUENCES ?? 1000); // in all, spread over MACHINES and both stores
const VERSION = "1";
const STATUS = { active: "RUNNING", done: "DONE", error: "FAILED", stopped: "CANCELLED" };
const ADVANCES = [0, 50, 100, 200, 250, 300, 350, 400, 500, 600, 700, 800, 1000, 1200, 1500, 2000];
const REGISTRY = Object.fromEntries(MACHINES.map(({ machine }) => [machine.id, { machine, version: VERSION }]));

const json = (value) => JSON.parse(JSON.stringify(value));

/** Runs one sequence; returns how many steps it took. */
/** A failed child's error as the store keeps it (`{message}`; an Error is `{}` as JSON). */
function errorsAsMessages(snapshot) {
  if (!snapshot?.children) return snapshot;
  const children = {};
  for (const [key, child] of Object.entries(snapshot.children)) {
    let own = errorsAsMessages(child.snapshot);
    if (own?.status === "error" && own.error instanceof Error) own = { ...own, error: { message: own.error.message } };
    children[key] = { ...child, snapshot: own };
  }
  return { ...snapshot, children };
}

let children = 0; // child executions the sequences made

async function runSequence(seed, { machine, events }, store) {
  const rng = random(seed);
  const pick = (list) => list[Math.floor(rng() * list.length)];
  const where = `seed ${seed} (${machine.id})`;

  // each sequence has its own stretch of time (the store is shared with earlier sequences)
  const base = seed * 1e7;
  const clock = new ManualClock();
  clock.now = base;
  const plain = createActor(machine, { clock });
  const plainEmitted = [];
  plain.on("*", (e) => plainEmitted.push(json(e)));
  plain.start();

  let now = base;
  const options = { id: `run-${seed}`, version: VERSION, now: () => now };
  let cached = createDurableActor(store, machine, options);
  const durable = () => (rng() < 0.5 ? (cached = createDurableActor(store, machine, options)) : cached);
  const delivered = [];
  // children, sends, stops and done/error between executions; emits only when `emits`
  const settle = async (emits = false) =>
    relay(store, {
      machines: REGISTRY,
      limit: 1 + Math.floor(rng() * 4), // small pages: the relay must go on from page to page
      deliver: (entry) => {
        if (!emits) return false;
        delivered.push(entry.event.data);
        return true;
      },
    });
  /** The executions of the sequence: the root and its child executions. */
  const tree = () => [options.id, ...store.idsWithPrefix(`${options.id}/`)];
  /** A persisted snapshot with each child execution's stand-in replaced by the child's own snapshot. */
  // (a stand-in inside a finished execution stays as that execution finished: what its child
  // sends after that is not applied, as XState's stopped parent ignores it)
  const expand = (snapshot) => {
    if (!snapshot.children) return snapshot;
    const children = {};
    for (const [key, child] of Object.entries(snapshot.children)) {
      const id = child.snapshot?.execution;
      if (id === undefined) {
        children[key] = child;
        continue;
      }
      const execution = store.load(id);
      assert.ok(execution, `${where}: child execution ${id} exists`);
      assert.equal(execution.parent_id, id.slice(0, id.lastIndexOf("/")), `${where}: ${id}'s parent`);
      const own = persistedSnapshot(execution);
      if (snapshot.status === "active") assert.equal(child.snapshot.status, own.status, `${where}: ${id}'s status in its parent`);
      assert.equal(execution.status, STATUS[own.status], `${where}: ${id}'s execution status`);
      children[key] = { ...child, snapshot: expand(own) };
    }
    return { ...snapshot, children };
  };
  const kinds = ["xstate.init"]; // what the trace must show (a timer's event type is XState's)
  const log = [];

  const compare = (step) => {
    const execution = store.load(options.id);
    const plainSnapshot = json(errorsAsMessages(plain.getPersistedSnapshot()));
    const context = `${where}, after ${step}: ${log.join(" ")}`;
    assert.deepEqual(expand(persistedSnapshot(execution)), plainSnapshot, context);
    assert.equal(execution.status, STATUS[plainSnapshot.status], context);
    // the pending delayed events of the root and its children: the same deadlines, in the store's timers too
    const deadlines = tree()
      .flatMap((id) => store.load(id).context.$xstate.scheduled.map((s) => s.fire_at))
      .sort((a, b) => a - b);
    assert.deepEqual(deadlines, clock.pending(), `timers: ${context}`);
    const stored = store.dueTimers(1e12, null, 1000).map((t) => Math.round(t.fire_at * 1000)).sort((a, b) => a - b);
    assert.deepEqual(stored, deadlines, `store timers: ${context}`);
    // the emitted events, in order, in the outbox (delivered by the relay so far, then pending)
    const pending = store
      .pendingOutbox(null, 1000)
      .filter((e) => e.event.source_id === options.id && e.target_id === null)
      .map((e) => e.event.data);
    // nothing else is pending: every child created, every send and done/error delivered
    assert.deepEqual(store.pendingSpawns(null, 10), [], `spawns: ${context}`);
    assert.equal(store.pendingOutbox(null, 1000).filter((e) => e.target_id !== null).length, 0, `sends: ${context}`);
    assert.deepEqual([...delivered, ...pending], plainEmitted, `emits: ${context}`);
  };

  compare("start");
  const length = 6 + Math.floor(rng() * 20);
  let k = 0;
  for (; k < length && plain.getSnapshot().status === "active"; k += 1) {
    const r = rng();
    if (r < 0.6) {
      const type = pick(events);
      log.push(type);
      plain.send({ type });
      const result = durable().send({ type }, { id: `ev-${k}` });
      assert.equal(result.applied, true, `${where}: ${type} not applied`);
      await settle();
      kinds.push(type);
      if (rng() < 0.15) {
        // the same event again: applied once
        const again = durable().send({ type }, { id: `ev-${k}` });
        assert.equal(again.applied, false, where);
      }
    } else if (r < 0.9) {
      now += pick(ADVANCES);
      log.push(`+${now - base}`);
      clock.advance(now);
      // one due event at a time, soonest first across the executions, the relay after each
      // (as XState's clock fires them, each one's consequences before the next)
      for (;;) {
        const next = store.dueTimers(now / 1000, null, 1)[0];
        if (!next) break;
        const own = next.execution_id === options.id;
        const fired = own && rng() < 0.5 ? durable().fireDue(now, 1) : sweepTimers(store, REGISTRY, { now, max: 1 });
        assert.equal(fired, 1, `${where}: a due timer fires`);
        if (own) kinds.push("(timer)");
        await settle();
      }
    } else {
      log.push("relay");
      // the relay drains the outbox; what it delivered stays part of the comparison
      await settle(true);
    }
    compare(log.at(-1));
  }
  children += tree().length - 1;
  // one trace step per commit of every execution of the tree; the root's own events (not
  // what the relay brought from its children) in order, the first holding the definition
  for (const id of tree()) {
    const steps = store.readTrace(id);
    assert.equal(steps.length, store.load(id).version, `trace of ${id}: ${where}`);
    assert.equal(steps[0].event_kind, "xstate.init", `trace of ${id}: ${where}`);
  }
  const trace = store.readTrace(options.id).filter((t) => !("source_id" in t));
  assert.deepEqual(
    trace.map((t, i) => (kinds[i] === "(timer)" ? "(timer)" : t.event_kind)),
    kinds,
    where,
  );
  assert.equal(trace[0].definition.id, machine.id);
  // leave the shared store empty for the next sequence
  await settle(true);
  for (const id of tree()) assert.ok(store.purge(id, store.load(id).version));
  assert.deepEqual(store.dueTimers(1e12, null, 10), [], where);
  return k;
}

test(`${SEQUENCES} random sequences agree with XState, step by step`, async () => {
  const started = performance.now();
  const backends = [
    ["memory", () => Store.memory()],
    ["sqliteMemory", () => Store.sqliteMemory()],
  ];
  // one store per machine and backend, shared by its sequences (a fresh SQLite store costs ~50 ms)
  const stores = new Map();
  let steps = 0;
  const per = new Map();
  for (let seed = 1; seed <= SEQUENCES; seed += 1) {
    const entry = MACHINES[seed % MACHINES.length];
    const [name, makeStore] = backends[Math.floor(seed / MACHINES.length) % backends.length];
    const key = `${entry.machine.id}/${name}`;
    if (!stores.has(key)) stores.set(key, makeStore());
    steps += await runSequence(seed, entry, stores.get(key));
    per.set(key, (per.get(key) ?? 0) + 1);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`xstate oracle: ${SEQUENCES} sequences, ${steps} steps, ${children} child executions in ${seconds} s: ${[...per].map(([k, n]) => `${k} ${n}`).join(", ")}`);
  assert.equal(per.size, MACHINES.length * backends.length);
});
