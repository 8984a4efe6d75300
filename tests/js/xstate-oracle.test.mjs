// XState itself as the oracle of `execstore/xstate`: seeded random sequences of events and
// clock advances go through the same machine twice, once in a plain in-memory XState actor
// (timers on a manual clock) and once durably over a Store (memory and sqliteMemory; each
// durable step may go through a fresh resume from the store, as after a restart). After
// every step the persisted snapshots (value, context, status, children, history), the
// emitted events, the pending delayed events and the trace must agree.
// Run: node --test tests/js/xstate-oracle.test.mjs
import assert from "node:assert/strict";
import { test } from "node:test";

import { Store } from "execstore";
import { createDurableActor, persistedSnapshot, relayEmits, sweepTimers } from "execstore/xstate";
import { createActor } from "xstate";

import { MACHINES, ManualClock, random } from "./xstate-machines.mjs";

const SEQUENCES = Number(process.env.XSTATE_ORACLE_SEQUENCES ?? 1000); // in all, spread over MACHINES and both stores
const VERSION = "1";
const STATUS = { active: "RUNNING", done: "DONE", error: "FAILED", stopped: "CANCELLED" };
const ADVANCES = [0, 50, 100, 200, 250, 300, 350, 400, 500, 600, 700, 800, 1000, 1200, 1500, 2000];
const REGISTRY = Object.fromEntries(MACHINES.map(({ machine }) => [machine.id, { machine, version: VERSION }]));

const json = (value) => JSON.parse(JSON.stringify(value));

/** Runs one sequence; returns how many steps it took. */
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
  let applied = 1; // the initial step
  const kinds = ["xstate.init"]; // what the trace must show (a timer's event type is XState's)
  const log = [];

  const compare = (step) => {
    const execution = store.load(options.id);
    const plainSnapshot = json(plain.getPersistedSnapshot());
    const context = `${where}, after ${step}: ${log.join(" ")}`;
    assert.deepEqual(persistedSnapshot(execution), plainSnapshot, context);
    assert.equal(execution.status, STATUS[plainSnapshot.status], context);
    // the pending delayed events: the same deadlines, in the store's timers too
    const deadlines = execution.context.$xstate.scheduled.map((s) => s.fire_at).sort((a, b) => a - b);
    assert.deepEqual(deadlines, clock.pending(), `timers: ${context}`);
    const stored = store.dueTimers(1e12, null, 1000).map((t) => Math.round(t.fire_at * 1000)).sort((a, b) => a - b);
    assert.deepEqual(stored, deadlines, `store timers: ${context}`);
    // the emitted events, in order, in the outbox (delivered by the relay so far, then pending)
    const pending = store.pendingOutbox(null, 1000).filter((e) => e.event.source_id === options.id).map((e) => e.event.data);
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
      kinds.push(type);
      applied += 1;
      if (rng() < 0.15) {
        // the same event again: applied once
        const again = durable().send({ type }, { id: `ev-${k}` });
        assert.equal(again.applied, false, where);
      }
    } else if (r < 0.9) {
      now += pick(ADVANCES);
      log.push(`+${now - base}`);
      clock.advance(now);
      const fired = rng() < 0.5 ? sweepTimers(store, REGISTRY, { now }) : durable().fireDue(now);
      for (let i = 0; i < fired; i += 1) kinds.push("(timer)");
      applied += fired;
    } else {
      log.push("relay");
      // the relay drains the outbox; what it delivered stays part of the comparison
      await relayEmits(store, (entry) => {
        delivered.push(entry.event.data);
      });
    }
    compare(log.at(-1));
  }
  // one trace step per applied event, in order, the first holding the machine's definition
  const trace = store.readTrace(options.id);
  assert.equal(trace.length, applied, `trace: ${where}`);
  assert.deepEqual(
    trace.map((t, i) => (kinds[i] === "(timer)" ? "(timer)" : t.event_kind)),
    kinds,
    where,
  );
  assert.equal(trace[0].definition.id, machine.id);
  // leave the shared store empty for the next sequence
  await relayEmits(store, () => {});
  const last = store.load(options.id);
  assert.ok(store.purge(options.id, last.version));
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
  console.log(`xstate oracle: ${SEQUENCES} sequences, ${steps} steps in ${seconds} s: ${[...per].map(([k, n]) => `${k} ${n}`).join(", ")}`);
  assert.equal(per.size, MACHINES.length * backends.length);
});
