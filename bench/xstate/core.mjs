// The XState benchmark's workload, the same in Node and in a browser worker (run.mjs drives
// both): one machine, N events, sent one at a time, through
//
//   docs      XState's persistence pattern: a plain actor, and on every snapshot
//             `getPersistedSnapshot()` saved to the store (`store.save`, one write per
//             event), as XState's docs show with localStorage;
//   durable   execstore/xstate's `createDurableActor`: every event one commit (snapshot,
//             timers, dedupe id, trace step, CAS), sent with an event id.
//
// Both on the same kind of store, a fresh execution each; each event's latency is measured
// around the `send` (which for `docs` includes the subscriber's save).
import { assign, createActor, createMachine } from "xstate";
import { createDurableActor } from "execstore/xstate";

/**
 * The benchmark's machine: an order's life in a loop (placed -> paying -> paid -> shipped
 * -> placed), a context that grows a little (a counter and the last few event notes), and a
 * payment timeout (`after`) armed on entering `paying` and cancelled on leaving it.
 */
export const benchMachine = createMachine({
  id: "bench-order",
  initial: "placed",
  context: { n: 0, total: 0, notes: [] },
  states: {
    placed: { on: { NEXT: { target: "paying", actions: "note" } } },
    paying: {
      after: { 60000: "placed" },
      on: { NEXT: { target: "paid", actions: "note" } },
    },
    paid: { on: { NEXT: { target: "shipped", actions: "note" } } },
    shipped: { on: { NEXT: { target: "placed", actions: "note" } } },
  },
}, {
  actions: {
    note: assign(({ context, event }) => ({
      n: context.n + 1,
      total: context.total + event.amount,
      notes: [...context.notes.slice(-4), `${event.sku}:${event.amount}`],
    })),
  },
});

const event = (i) => ({ type: "NEXT", sku: `sku-${i % 97}`, amount: (i * 7) % 100 });

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

function summary(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const ms = times.reduce((a, b) => a + b, 0);
  return {
    events_per_s: Math.round((times.length * 1000) / ms),
    us_per_event: Math.round((ms * 1000) / times.length),
    p50_us: Math.round(quantile(sorted, 0.5) * 1000),
    p99_us: Math.round(quantile(sorted, 0.99) * 1000),
  };
}

/** XState's docs' pattern: a plain actor whose every snapshot is saved to `store`. */
export function docsActor(store, id) {
  const execution = { id, definition_id: benchMachine.id, status: "RUNNING", version: 0, context: {} };
  const actor = createActor(benchMachine);
  actor.subscribe(() => {
    execution.context = actor.getPersistedSnapshot();
    store.save(execution);
  });
  actor.start();
  return { send: (e) => actor.send(e), stop: () => actor.stop() };
}

/** The durable actor: every event one commit, with its id as the dedupe key. */
export function durableActor(store, id) {
  const actor = createDurableActor(store, benchMachine, { id, version: "1" });
  let i = 0;
  return { send: (e) => actor.send(e, { id: `${id}/e${i++}` }), stop: () => actor.stop() };
}

/**
 * One side-by-side run on `store`: a docs actor and a durable actor (each on an execution of
 * its own) get the same `n` events, taking turns event by event (which goes first alternates),
 * so that both see the same machine, disk and load; after `warmup` events each. Returns each
 * mode's events per second (from the sum of its latencies), time per event, p50 and p99, and
 * the ratios durable/docs.
 */
export function runSideBySide(store, { n = 2000, warmup = 200, tag = "" } = {}, now = () => performance.now()) {
  const actors = { docs: docsActor(store, `${tag}docs`), durable: durableActor(store, `${tag}durable`) };
  const times = { docs: [], durable: [] };
  for (let i = 0; i < warmup + n; i += 1) {
    const order = i % 2 === 0 ? ["docs", "durable"] : ["durable", "docs"];
    for (const mode of order) {
      const t = now();
      actors[mode].send(event(i));
      if (i >= warmup) times[mode].push(now() - t);
    }
  }
  actors.docs.stop();
  actors.durable.stop();
  const out = { events: n, docs: summary(times.docs), durable: summary(times.durable) };
  const ratio = (k) => Math.round((out.durable[k] / out.docs[k]) * 100) / 100;
  out.ratio = ratio("us_per_event");
  out.ratio_p50 = ratio("p50_us");
  out.added_p50_us = out.durable.p50_us - out.docs.p50_us;
  out.added_p99_us = out.durable.p99_us - out.docs.p99_us;
  return out;
}
