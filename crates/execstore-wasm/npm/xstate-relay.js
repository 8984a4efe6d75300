// `execstore/xstate`'s relay: the one loop that moves what XState executions committed for
// others (child creations, events sent to other executions, emitted events), in bounded pages.
import { DurableActor, XSTATE_KEY, XStateStoreError, machineRegistry, msOf } from "./xstate.js";

const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Delivers what the store's executions committed for others, oldest first, reading at most
 * `limit` entries at a time (never the whole outbox), until none is left or `max` entries were
 * handled:
 *
 * - each pending spawn (a child machine an execution started) becomes its child execution
 *   (created at the parent step's time), then is acked;
 * - each outbox entry addressed to an XState execution of a machine in `machines` is applied
 *   to it as one step deduped by the entry's event id (`DurableActor.receive`), then acked;
 * - each other entry (an `emit`, an event for an id that is no XState execution of the store)
 *   goes to `deliver(entry)` (which may be async) and is acked after it returned; if `deliver`
 *   returns `false`, or there is none, the entry stays pending and the relay goes past it. If
 *   `deliver` throws, the error is rethrown and the entry stays pending.
 *
 * An entry addressed to an XState execution whose machine is not in `machines` stays pending
 * (for a relay that knows it). A crash between a delivery and its ack delivers it again:
 * the step is deduped by the event id, and `deliver` sees the same `entry.event.id`.
 */
export async function relay(store, options = {}) {
  const limit = options.limit ?? 100;
  const max = options.max ?? Infinity;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new XStateStoreError("INVALID_INPUT", "limit must be a positive integer", { field: "limit" });
  }
  const machines = machineRegistry(options.machines);
  const deliver = options.deliver;
  const now = options.now;
  const result = { spawned: 0, applied: 0, ignored: 0, delivered: 0, left: 0 };
  const handled = () => result.spawned + result.applied + result.ignored + result.delivered;
  let spawnAfter = null;
  const unborn = new Set(); // child executions whose creation this relay leaves pending
  let outboxAfter = null;
  const actorOf = (execution) => {
    const entry = machines.get(execution.definition_id);
    if (!entry || !isPlainObject(execution.context?.[XSTATE_KEY])) return null;
    const clock = now === undefined ? {} : { now: () => now };
    return new DurableActor(store, entry.machine, { id: execution.id, version: entry.version, migrate: entry.migrate, create: false, ...clock });
  };
  // The pending child creations, a page at a time; returns whether it read any.
  const spawnPage = () => {
    const page = store.pendingSpawns(spawnAfter, limit);
    for (const spawn of page) {
      if (handled() >= max) return false;
      const context = spawn.context ?? {};
      const entry = machines.get(context.machine);
      if (!entry) {
        spawnAfter = spawn.seq; // a machine this relay does not know: left for one that does
        unborn.add(spawn.child_id);
        result.left += 1;
        continue;
      }
      const at = typeof context.started_at === "number" ? msOf(context.started_at) : Date.now();
      // created, or (after a crash before the ack) resumed as it is
      const child = new DurableActor(store, entry.machine, {
        id: spawn.child_id,
        version: entry.version,
        migrate: entry.migrate,
        input: context.input ?? undefined,
        now: () => at,
        parent: { id: spawn.parent_id, child: spawn.root_path },
      });
      child.stop();
      store.ackSpawn(spawn.seq);
      result.spawned += 1;
    }
    return page.length > 0;
  };
  const outboxPage = async () => {
    const page = store.pendingOutbox(outboxAfter, limit);
    for (const entry of page) {
      if (handled() >= max) return false;
      const target = entry.target_id;
      let execution = target === null ? null : store.load(target);
      if (target !== null && !execution) {
        // a child whose creation is still pending: create the pending ones first
        while (spawnPage()) {
          // until no spawn is left
        }
        execution = store.load(target);
        if (!execution && unborn.has(target)) {
          outboxAfter = entry.seq; // for the relay that creates its target
          result.left += 1;
          continue;
        }
      }
      if (execution && isPlainObject(execution.context?.[XSTATE_KEY])) {
        const actor = actorOf(execution);
        if (actor === null) {
          outboxAfter = entry.seq; // another machine's: for a relay that knows it
          result.left += 1;
          continue;
        }
        const outcome = actor.receive(entry);
        actor.stop();
        if (outcome.applied) result.applied += 1;
        else result.ignored += 1; // a duplicate, a finished execution, a child no longer there
        store.ackOutbox(entry.seq);
        continue;
      }
      if (typeof deliver !== "function" || (await deliver(entry)) === false) {
        outboxAfter = entry.seq;
        result.left += 1;
        continue;
      }
      store.ackOutbox(entry.seq);
      result.delivered += 1;
    }
    return page.length > 0;
  };
  for (;;) {
    const spawned = spawnPage();
    const sent = await outboxPage();
    if ((!spawned && !sent) || handled() >= max) break;
  }
  return result;
}

/**
 * Deprecated in favour of `relay(store, {deliver, machines})`: delivers the pending entries
 * `relay` would hand to `deliver` (the emitted events, events for ids that are no XState
 * execution) and acks each after `deliver` returned; returns how many. Child creations and
 * events for XState executions stay pending for `relay`.
 */
export async function relayEmits(store, deliver, options = {}) {
  const { delivered } = await relay(store, { deliver, limit: options.limit ?? 100, machines: {} });
  return delivered;
}
