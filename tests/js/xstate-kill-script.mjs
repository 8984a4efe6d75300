// The workload of the durable-XState kill test (tests/js/xstate-kill.test.mjs): a fixed,
// seeded script of events, timer sweeps and relays over three executions (an order with an
// invoked payment machine, a child execution of its own, two traffic lights), each op safe to
// run again (events carry ids, a sweep at an earlier time finds nothing due, the relay applies
// sends and done events by the entry's id and delivers emits into a durable sink by it). A run
// killed anywhere and run again from the start ends where one run ends.
import { createDurableActor, relay, sweepTimers } from "execstore/xstate";
import { assign, createMachine } from "xstate";

import { light, order, random } from "./xstate-machines.mjs";

const VERSION = "1";
const T0 = Date.parse("2026-01-01T00:00:00Z");

/** Collects every emitted event it is sent, once per event id (the send's dedupe). */
export const sink = createMachine({
  id: "sink",
  context: { got: [] },
  on: { "*": { actions: assign({ got: ({ context, event }) => [...context.got, event.from] }) } },
});

export const MACHINES = {
  order: { machine: order, version: VERSION },
  light: { machine: light, version: VERSION },
  sink: { machine: sink, version: VERSION },
};

const EXECUTIONS = [
  ["order-1", order, ["ADD", "ADD", "CHECKOUT", "CHARGE", "CHARGE", "CANCEL"]],
  ["light-1", light, ["EMERGENCY", "SKIP", "PED", "RESET", "POWER"]],
  ["light-2", light, ["SKIP", "PED", "POWER"]],
  ["order-2", order, []],
];

/** order-2's round trip with its payment child: CHARGE to it, PAYMENT.RETRY back, CHARGE, its done back. */
const ROUND_TRIP = [
  ["send", "ADD"],
  ["send", "CHECKOUT"],
  ["relay"],
  ["send", "CHARGE"],
  ["relay"],
  ["send", "CHARGE"],
  ["relay"],
];

/** The script: `[kind, time, ...]` ops, the same for every seed-1 run. */
export function script(length = 80) {
  const rng = random(26);
  const ops = [];
  let t = T0;
  for (const [i, [kind, type]] of ROUND_TRIP.entries()) {
    t += 10;
    ops.push(kind === "send" ? ["send", t, "order-2", type, `rt-${i}`] : [kind, t]);
  }
  for (let i = 0; i < length; i += 1) {
    t += 50 + Math.floor(rng() * 300);
    const r = rng();
    if (r < 0.55) {
      const [id, , events] = EXECUTIONS[Math.floor(rng() * 3)];
      ops.push(["send", t, id, events[Math.floor(rng() * events.length)], `ev-${i}`]);
    } else if (r < 0.85) {
      ops.push(["sweep", t]);
    } else {
      ops.push(["relay", t]);
    }
  }
  ops.push(["sweep", t + 10_000], ["relay", t + 10_000]);
  return ops;
}

/** Runs the script over `store` from its start; `onOp(i)` after each op. */
export async function run(store, ops, onOp = () => {}) {
  const actors = new Map();
  let now = T0;
  const clock = () => now;
  const actor = (id, machine) => {
    if (!actors.has(id)) actors.set(id, createDurableActor(store, machine, { id, version: VERSION, now: clock }));
    return actors.get(id);
  };
  for (const [id, machine] of EXECUTIONS) actor(id, machine);
  const theSink = actor("sink", sink);
  for (let i = 0; i < ops.length; i += 1) {
    const [kind, t, id, type, eventId] = ops[i];
    now = t;
    if (kind === "send") {
      const target = actor(id, EXECUTIONS.find(([x]) => x === id)[1]);
      if (target.status === "RUNNING") target.send({ type }, { id: eventId });
    } else if (kind === "sweep") {
      sweepTimers(store, MACHINES, { now: t });
    } else {
      // small pages: a kill lands between pages too
      await relay(store, {
        machines: MACHINES,
        limit: 2,
        deliver: (entry) => {
          theSink.send({ type: entry.event.kind, from: `${entry.event.source_id}:${entry.event.kind}` }, { id: entry.event.id });
        },
      });
    }
    onOp(i);
  }
}

/** The source execution of an entry's event id (`<source id>/<step>/<n>`); "" for none. */
const sourceOf = (eventId) => (typeof eventId === "string" ? eventId.split("/").slice(0, -2).join("/") : "");

/** `items` stably grouped by `key`: each source's own order kept, the sources in name order. */
const bySource = (items, key) => items.map((item, i) => [key(item), i, item]).sort(([a, i], [b, j]) => (a < b ? -1 : a > b ? 1 : i - j)).map(([, , item]) => item);

/**
 * What a finished run left: every execution, trace, pending outbox entry and timer.
 *
 * The sink is compared per source. A rerun from the start runs its relays at earlier ops than
 * the killed run did, so a message pending at the kill (a payment child's answer) is applied,
 * and what its step emits is delivered, before emits another execution makes later (a light's
 * timer at a later sweep); the uninterrupted run delivered them the other way round. Each
 * source's emits still arrive once each, in their own order: that is what is compared, without
 * the sink steps' times and indexes (its `got` list grouped by source, likewise).
 */
export function outcome(store) {
  const ids = ["order-1", "order-2", ...store.idsWithPrefix("order-1/"), ...store.idsWithPrefix("order-2/"), "light-1", "light-2", "sink"];
  return {
    executions: ids.map((id) => {
      const { updated_at, created_at, finished_at, ...rest } = store.load(id) ?? {};
      void updated_at, created_at, finished_at;
      if (id === "sink" && Array.isArray(rest.context?.got)) {
        rest.context = { ...rest.context, got: bySource(rest.context.got, (from) => from.slice(0, from.lastIndexOf(":"))) };
      }
      return rest;
    }),
    traces: ids.map((id) => {
      const steps = store.readTrace(id);
      if (id !== "sink") return steps;
      return bySource(steps, (s) => sourceOf(s.event_id)).map((s) => ({ ...s, timestamp: null, index: null }));
    }),
    outbox: store.pendingOutbox(null, 10_000),
    spawns: store.pendingSpawns(null, 10_000),
    timers: store.dueTimers(1e15, null, 10_000),
  };
}
