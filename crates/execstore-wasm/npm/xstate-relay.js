// `execstore/xstate`'s loops over a whole store: the sweep (due delayed events, each a step at
// its deadline) and the relay (what XState executions committed for others: child creations,
// events sent to other executions, emitted events), both in bounded pages.
import { childMachines, msOf } from "./xstate-children.js";
import { DurableActor, XSTATE_KEY, XStateStoreError } from "./xstate.js";

const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Fires every due delayed event of the XState executions in `store` whose machine is in
 * `machines` (by machine id: `{machine, version, migrate?}`), one step each, at its deadline,
 * in deadline order across executions (what a step arms that is due fires in the same
 * sweep); returns how many fired. Timers of other definitions are left alone.
 */
export function sweepTimers(store, machines, options = {}) {
  const now = options.now ?? Date.now();
  const limit = options.limit ?? 100;
  const max = options.max ?? Infinity;
  const entries = machineRegistry(machines);
  const actors = new Map();
  const skipped = new Set();
  let fired = 0;
  let after = null;
  try {
    while (fired < max) {
      const due = store.dueTimers(now / 1000, after, limit);
      if (!due.length) break;
      const next = due.find((t) => !skipped.has(t.execution_id));
      if (!next) {
        if (due.length < limit) break;
        after = due.at(-1); // a page of skipped executions' timers: the next page
        continue;
      }
      const id = next.execution_id;
      let actor = actors.get(id);
      if (!actor) {
        const execution = store.load(id);
        const entry = execution ? entries.get(execution.definition_id) : undefined;
        if (!execution || !entry || !isPlainObject(execution.context?.[XSTATE_KEY])) {
          skipped.add(id);
          continue;
        }
        actor = new DurableActor(store, entry.machine, { id, version: entry.version, migrate: entry.migrate, now: () => now, create: false });
        actors.set(id, actor);
      }
      // the execution's earliest due event (the global earliest, or one tied with it)
      if (actor.fireDue(now, 1) === 1) {
        fired += 1;
        continue;
      }
      // Due in the store but not firable: a timer its record no longer holds is removed
      // (none should be); an event whose actor is gone is left for its next step to drop.
      const paths = new Set(actor.scheduled().map((s) => s.path));
      if (paths.has(next.path) || !store.deleteTimer(id, next.path, next.fire_at)) skipped.add(id);
    }
  } finally {
    for (const actor of actors.values()) actor.stop();
  }
  return fired;
}

/**
 * `machines` (by machine id: `{machine, version, migrate?}`, an object or a Map) with the
 * child machines each one starts (recursively) under the same version, unless named itself.
 */
export function machineRegistry(machines) {
  const entries = new Map(machines instanceof Map ? machines : Object.entries(machines ?? {}));
  for (const entry of [...entries.values()]) {
    for (const [id, machine] of childMachines(entry.machine)) {
      if (!entries.has(id)) entries.set(id, { machine, version: entry.version, migrate: entry.migrate });
    }
  }
  return entries;
}

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
