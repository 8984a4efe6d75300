// `execstore/xstate-worker`: durable XState actors in the dedicated worker that owns an OPFS
// store. The durable actor is synchronous (execstore/xstate) and OPFS is synchronous only in a
// dedicated worker, so the machines run here and the page drives them through
// `execstore/xstate-client` (every call a Promise). A machine holds functions and cannot
// cross postMessage: the page's own worker module imports its machines and calls
// `serveXState`:
//
//   // order-worker.js, started by the page with new Worker(url, {type: "module"})
//   import { serveXState } from "execstore/xstate-worker";
//   import { orderMachine } from "./machines.js";
//   serveXState({ machines: { [orderMachine.id]: { machine: orderMachine, version: "1" } } });
//
// Messages in: {id, op, ...} with op open | close | start | send | read | trace | sweep |
// pending | ack; out: {id, ok: true, result} | {id, ok: false, error} (rpc.js).
// docs/xstate.md, "In the browser (OPFS)", is the user's documentation.

import { misuse, serve } from "./rpc.js";
import { createDurableActor, persistedSnapshot, relay, sweepTimers, XSTATE_KEY, XStateStoreError } from "./xstate.js";

// Loaded dynamically so that `onmessage` is in place before the wasm download finishes.
const loading = import("./index.js");

/**
 * Serves the page's requests for the machines in `machines` (machine id ->
 * `{machine, version, migrate?}`) over the OPFS store the page opens. `now` (ms; default
 * `Date.now`) is the actors' clock.
 */
export function serveXState({ machines, now = () => Date.now() }) {
  const entries = machines instanceof Map ? machines : new Map(Object.entries(machines));
  let store = null;
  // The store the actors hold: the one open now. A tab may close the store (handing it to
  // another tab) and open it again; its actors stay, and each step reads the stored version
  // again, so what another tab committed meanwhile is never overwritten.
  const current = new Proxy({}, {
    get(_, key) {
      if (store === null) throw misuse("the store is closed");
      const value = store[key];
      return typeof value === "function" ? value.bind(store) : value;
    },
  });
  const actors = new Map();

  const entryOf = (machineId) => {
    const entry = entries.get(machineId);
    if (!entry) throw new XStateStoreError("INVALID_INPUT", `no machine ${machineId} is served by this worker`, { field: "machine" });
    return entry;
  };
  const summary = (actor) => ({
    execution: actor.execution,
    snapshot: actor.getPersistedSnapshot(),
    scheduled: actor.scheduled(),
  });
  const actorOf = (id, machineId = undefined, input = undefined, create = false) => {
    let actor = actors.get(id);
    if (actor && (machineId === undefined || actor.execution.definition_id === machineId)) return actor;
    let mid = machineId;
    if (mid === undefined) {
      const stored = current.load(id);
      if (!stored) throw new XStateStoreError("NOT_FOUND", `no execution ${id}`, { id });
      mid = stored.definition_id;
    }
    const entry = entryOf(mid);
    const options = { id, version: entry.version, migrate: entry.migrate, now, create };
    if (input !== undefined) options.input = input;
    actor = createDurableActor(current, entry.machine, options);
    actors.set(id, actor);
    return actor;
  };

  async function run(message) {
    switch (message.op) {
      case "open":
        if (store !== null) throw misuse("this worker already holds the store");
        store = await (await loading).Store.openOpfs(message.name, message.options ?? undefined);
        return { result: null };
      case "close":
        store?.close();
        store = null;
        return { result: null };
      case "start": {
        const actor = actorOf(message.execution, message.machine, message.input, message.create !== false);
        return { result: summary(actor) };
      }
      case "send": {
        const outcome = actorOf(message.execution).send(message.event, message.eventId === undefined ? {} : { id: message.eventId });
        return { result: { applied: outcome.applied, reason: outcome.reason, execution: outcome.execution } };
      }
      case "read": {
        const execution = current.load(message.execution);
        if (!execution) return { result: null };
        const snapshot = persistedSnapshot(execution); // NOT_XSTATE for another engine's execution
        const scheduled = [...execution.context[XSTATE_KEY].scheduled].sort((x, y) => x.fire_at - y.fire_at || x.seq - y.seq);
        return { result: { execution, snapshot, scheduled } };
      }
      case "trace":
        return { result: current.readTrace(message.execution) };
      case "sweep": {
        const fired = sweepTimers(current, entries, { now: message.now ?? now(), limit: message.limit });
        // The actors this worker holds read the store again at their next step.
        return { result: fired };
      }
      case "pending": {
        // What is the page's to deliver (emits, events for no XState execution here), after
        // the relay has applied what is the executions' own: child creations, sends to
        // children and to parents, done and error. Those are acked by the relay; the page's
        // entries stay pending until its `ack`.
        const limit = message.limit ?? 100;
        const external = [];
        await relay(current, {
          machines: entries,
          now: now(),
          limit,
          deliver: (entry) => {
            if (external.length < limit) external.push(entry);
            return false;
          },
        });
        return { result: external };
      }
      case "ack":
        current.ackOutboxMany(message.seqs);
        return { result: null };
      default:
        throw misuse(`unknown op ${message.op}`);
    }
  }

  // One message at a time, in order: a step is synchronous, an open awaits OPFS.
  serve(run, { ordered: true });
}
