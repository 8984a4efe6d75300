// `execstore/xstate`: XState v5 machines run durably over an execstore `Store`.
//
// An execution holds one root actor (with its non-machine children, persisted inside its
// snapshot as XState persists them); a child *machine* it invokes is a child execution of its
// own (xstate-children.js). Every event is one store commit: the new persisted snapshot, the
// emitted and sent events (outbox), the children it starts (spawns), the delayed events XState
// scheduled or cancelled (durable timers), the event id (dedupe) and a trace step, CAS on the
// version. docs/xstate.md is the user's documentation; what is durable and what is not is said there.
import { createActor } from "xstate";

import {
  CHILD_DONE,
  ChildExecutionActor,
  CHILD_ERROR,
  STOP,
  durableRef,
  externalTarget,
  msOf,
  proxiedMachine,
  withChildExecutions,
} from "./xstate-children.js";
import { definitionJson, keepDefinition } from "./xstate-definition.js";

export { durableRef };
export { definitionJson };

/** The key of the execution's context that holds what XState needs beside its own context. */
export const XSTATE_KEY = "$xstate";

const STATUS = { active: "RUNNING", done: "DONE", error: "FAILED", stopped: "CANCELLED" };
const RETRIES = 16;

/** What this module throws of its own (a store's errors are passed through unchanged). */
export class XStateStoreError extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.name = "XStateStoreError";
    this.code = code;
    Object.assign(this, details);
  }
}

// events a child execution's stand-in receives from this module or XState, not sent to the child
const INTERNAL = new Set(["xstate.init", CHILD_DONE, CHILD_ERROR]);
const DONE_PREFIX = "xstate.done.actor.";
const ERROR_PREFIX = "xstate.error.actor.";

/** An event as it leaves the execution: JSON, an error as `{message}`. */
function outboundEvent(event) {
  if (typeof event?.type === "string" && event.type.startsWith(ERROR_PREFIX)) {
    const error = event.error;
    return { ...event, error: { message: String(error?.message ?? error) } };
  }
  return event;
}

const isConflict = (error) => error !== null && typeof error === "object" && error.code === "CONFLICT";
const json = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
const isPlainObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

/** `"a.b"` for `{a: "b"}`; for parallel states the deepest state holding every active one. */
export function activePath(value) {
  const parts = [];
  let v = value;
  for (;;) {
    if (typeof v === "string") {
      parts.push(v);
      break;
    }
    if (!isPlainObject(v)) break;
    const keys = Object.keys(v);
    if (keys.length !== 1) break;
    parts.push(keys[0]);
    v = v[keys[0]];
  }
  return parts.join(".");
}

// The durable actor whose XState actor is being created (its children start in the
// constructor), and the durable actor of each XState system: the stand-ins' hooks find the
// durable actor they belong to through them, so one runnable machine serves every actor.
let constructing = null;
const ON_SPAWN = Symbol("onSpawn");
const ON_STOP = Symbol("onStop");
const owners = new WeakMap();
const HOOKS = {
  spawn: (scope, child, input) => {
    const owner = owners.get(scope.system) ?? constructing;
    if (owner === null) throw new XStateStoreError("INVALID_INPUT", "a child execution starts outside a durable actor");
    return owner[ON_SPAWN](scope, child, input);
  },
  stop: (scope, snapshot) => owners.get(scope.system)?.[ON_STOP](scope, snapshot),
};
const runnables = new WeakMap();

/** `machine` with its child machines as child executions (made once per machine). */
function runnable(machine) {
  let run = runnables.get(machine);
  if (run === undefined) {
    run = withChildExecutions(machine, HOOKS);
    runnables.set(machine, run);
  }
  return run;
}

/** Every actor of the tree under `root` by its path: "" for the root, child ids joined by "/". */
function actorPaths(root) {
  const byRef = new Map([[root, ""]]);
  const byPath = new Map([["", root]]);
  const walk = (ref, path) => {
    const children = ref.getSnapshot()?.children;
    if (!isPlainObject(children)) return;
    for (const [id, child] of Object.entries(children)) {
      if (!child || byRef.has(child)) continue;
      const p = path === "" ? id : `${path}/${id}`;
      byRef.set(child, p);
      byPath.set(p, child);
      walk(child, p);
    }
  };
  walk(root, "");
  return { byRef, byPath };
}

/** A durable timer's path: the delayed event's id, after its actor's path, and its seq (unique). */
const timerPath = (source, id, seq) => `${source === "" ? id : `${source}:${id}`}#${seq}`;

/** The persisted snapshot an execution of this module holds (XState's `getPersistedSnapshot()` shape). */
export function persistedSnapshot(execution) {
  recordOf(execution);
  return snapshotOf(execution);
}

function snapshotOf(execution) {
  const { [XSTATE_KEY]: record, ...context } = execution.context ?? {};
  const snapshot = { ...record.snapshot };
  if (!("context" in snapshot)) snapshot.context = context;
  return snapshot;
}

/** The XState record of an execution this module wrote, or a typed error. */
function recordOf(execution) {
  const record = execution.context?.[XSTATE_KEY];
  if (!isPlainObject(record) || !isPlainObject(record.snapshot) || !Array.isArray(record.scheduled)) {
    throw new XStateStoreError("NOT_XSTATE", `execution ${execution.id} holds no XState snapshot`, { id: execution.id });
  }
  return record;
}

/**
 * A durable XState actor: `createDurableActor(store, machine, {id, version})` creates the
 * execution `id` (the machine's initial step, committed) or resumes it.
 */
export class DurableActor {
  #store;
  #machine;
  #runMachine; // the machine with its child machines replaced by stand-ins of child executions
  #options;
  #fqn;
  #execution = null;
  #live = null;
  #current = null; // the actor whose actions and emits count (the live one, or the one starting)
  #liveVersion = -1;
  // The delayed events the live actor's clock holds armed: handle -> {record, fn, source, target}.
  // XState arms one clock timeout per scheduled event (and, as XState does, a timeout whose id
  // was scheduled again without a cancel stays armed: it fires too).
  #armed = new Map();
  #committed = new Set(); // the records of the last commit
  #scheduling = null; // the scheduler's arguments while it arms a timeout
  #injecting = null; // the stored record being armed again on resume
  #keepArmed = false; // while a resumed scheduler forgets a timeout XState had forgotten
  #stepNow = 0;
  #seq = 0;
  #emits = [];
  #outbound = []; // {target, event}: what this step sends out of the execution, in order
  #spawns = []; // the child executions this step starts
  #actions = [];
  #stepping = false;
  #asyncQueued = false;
  #asyncCommits = 0;

  constructor(store, machine, options) {
    if (!options || typeof options.id !== "string" || options.id === "") {
      throw new XStateStoreError("INVALID_INPUT", "options.id must be a non-empty string", { field: "id" });
    }
    if (typeof options.version !== "string" || options.version === "") {
      throw new XStateStoreError("INVALID_INPUT", "options.version must be a non-empty string", { field: "version" });
    }
    this.#store = store;
    this.#machine = machine;
    this.#options = options;
    this.#fqn = `${machine.id}@${options.version}`;
    this.#runMachine = runnable(machine);
    const stored = store.load(options.id);
    if (stored) this.#adopt(stored);
    else if (options.create === false) throw new XStateStoreError("NOT_FOUND", `no execution ${options.id}`, { id: options.id });
    else this.#create();
  }

  /** The execution's id. */
  get id() {
    return this.#options.id;
  }

  /** The execution as last read or committed. */
  get execution() {
    return this.#execution;
  }

  /** The execution's status (`RUNNING`, `DONE`, `FAILED`, `CANCELLED`). */
  get status() {
    return this.#execution.status;
  }

  /** The persisted snapshot as last committed. */
  getPersistedSnapshot() {
    return snapshotOf(this.#execution);
  }

  /** The pending delayed events (durable timers) as last committed, soonest first. */
  scheduled() {
    return [...recordOf(this.#execution).scheduled].sort(bySchedule);
  }

  /** How many steps this actor committed that came from its actors' own results (promise...). */
  get asyncCommits() {
    return this.#asyncCommits;
  }

  #now() {
    return this.#options.now ? this.#options.now() : Date.now();
  }

  /** Takes `stored` as the execution, checking definition and version. */
  #adopt(stored) {
    if (stored.definition_id !== this.#machine.id) {
      throw new XStateStoreError("DEFINITION_MISMATCH", `execution ${stored.id} runs ${stored.definition_id}, not ${this.#machine.id}`, {
        id: stored.id,
        stored: stored.definition_id,
        expected: this.#machine.id,
      });
    }
    recordOf(stored);
    if (stored.definition_fqn !== this.#fqn) {
      const migrate = this.#options.migrate;
      if (typeof migrate !== "function") {
        throw new XStateStoreError("VERSION_MISMATCH", `execution ${stored.id} is at ${stored.definition_fqn}, the machine is ${this.#fqn}`, {
          id: stored.id,
          stored: stored.definition_fqn,
          expected: this.#fqn,
        });
      }
      const migrated = json(migrate(snapshotOf(stored), { from: stored.definition_fqn, to: this.#fqn }));
      if (!isPlainObject(migrated) || typeof migrated.status !== "string") {
        throw new XStateStoreError("INVALID_INPUT", "migrate must return a persisted snapshot", { field: "migrate" });
      }
      const record = recordOf(stored);
      const from = stored.definition_fqn;
      stored = {
        ...stored,
        definition_fqn: this.#fqn,
        status: STATUS[migrated.status] ?? stored.status,
        active_path: activePath(migrated.value),
        context: this.#context(migrated, { ...record, fqn: this.#fqn }),
      };
      // The migration is a step of its own: committed (CAS) before anything runs on it, its
      // trace step holding the new definition.
      keepDefinition(this.#store, this.#machine, this.#fqn, this.#now());
      this.#store.commit(stored, {
        trace: { event_kind: "xstate.migrate", from_fqn: from, to_fqn: this.#fqn, definition: definitionJson(this.#machine) },
      });
    }
    this.#execution = stored;
  }

  /** The execution's context: XState's (when an object) and the record under XSTATE_KEY. */
  #context(persisted, record) {
    const { context, ...rest } = persisted;
    const own = isPlainObject(context) && !(XSTATE_KEY in context);
    return {
      ...(own ? context : {}),
      [XSTATE_KEY]: { ...record, snapshot: own ? rest : persisted },
    };
  }

  /** A child machine starts: its execution's id, derived from this one's and the child's. */
  [ON_SPAWN](scope, child, input) {
    const execution = `${this.#options.id}/${scope.self.id}:${++this.#seq}`;
    this.#spawns.push({ execution, childId: scope.self.id, machine: child.id, input: json(input) ?? null, at: this.#stepNow });
    return execution;
  }

  /** Whether the execution's parent and child id (a child execution's), else null. */
  #link() {
    const e = this.#execution;
    if (e) return e.parent_id ? { id: e.parent_id, child: e.child_id } : null;
    const parent = this.#options.parent;
    return parent ? { id: parent.id, child: parent.child } : null;
  }

  #inspect = (event) => {
    if (this.#current === null || event.rootId !== this.#current.sessionId) return;
    if (event.type === "@xstate.event") {
      // an event to an actor outside the execution (a durable ref, the parent, a child execution)
      const target = event.actorRef;
      const external = externalTarget(target);
      if (external !== undefined) {
        this.#outbound.push({ target: external, event: outboundEvent(event.event) });
      } else if (proxiedMachine(target?.logic) !== undefined && !INTERNAL.has(event.event?.type)) {
        const snapshot = target.getSnapshot();
        if (snapshot.status === "active") this.#outbound.push({ target: snapshot.execution, event: outboundEvent(event.event) });
      }
    } else if (event.type === "@xstate.action") {
      const root = event.actorRef.sessionId === event.rootId;
      this.#actions.push(root ? event.action.type : `${event.actorRef.id}/${event.action.type}`);
    } else if (
      event.type === "@xstate.snapshot" &&
      !this.#stepping &&
      this.#live !== null &&
      event.actorRef === this.#live &&
      !this.#asyncQueued
    ) {
      // A result of an actor's own (a promise resolved, a callback sent): commit it as a step.
      this.#asyncQueued = true;
      const live = this.#live;
      const kind = event.event?.type ?? "xstate.async";
      queueMicrotask(() => {
        this.#asyncQueued = false;
        if (this.#live !== live) return;
        try {
          this.#commitLive(this.#execution, kind, null, this.#now());
          this.#asyncCommits += 1;
        } catch (error) {
          // Lost to another writer (or the store failed): the step is not applied here; a
          // resume restarts the actor as XState does.
          this.#drop();
          if (!isConflict(error)) this.#options.onError?.(error);
        }
      });
    }
  };

  #spawnActor(snapshot) {
    const clock = {
      setTimeout: (fn, ms) => {
        const handle = {};
        const args = this.#scheduling;
        const record = this.#injecting ?? {
          id: args?.[4],
          event: json(args?.[2]),
          delay: ms,
          fire_at: this.#stepNow + ms,
          seq: ++this.#seq,
        };
        const object = args ? scheduledOf(args[0], args[4]) : undefined;
        this.#armed.set(handle, { record, fn, source: args?.[0], target: args?.[1], object });
        return handle;
      },
      clearTimeout: (handle) => {
        if (!this.#keepArmed) this.#armed.delete(handle);
      },
    };
    const link = this.#link();
    const options = { clock, inspect: this.#inspect, id: link ? link.child : this.#options.id };
    if (snapshot) options.snapshot = snapshot;
    else if ("input" in this.#options) options.input = this.#options.input;
    this.#current = null;
    let actor;
    const outer = constructing;
    constructing = this;
    try {
      // A child execution's parent is another execution: what XState sends it (sendParent,
      // the done and error events) is recorded by the inspection and goes to the outbox.
      if (link) options.execstoreParent = durableRef(link.id);
      actor = link ? new ChildExecutionActor(this.#runMachine, options) : createActor(this.#runMachine, options);
    } finally {
      constructing = outer;
    }
    owners.set(actor.system, this);
    this.#current = actor;
    const scheduler = actor.system.scheduler;
    const schedule = scheduler.schedule;
    scheduler.schedule = (...args) => {
      this.#scheduling = args;
      try {
        return schedule(...args);
      } finally {
        this.#scheduling = null;
      }
    };
    // an error is the execution's status (FAILED), not an unhandled error of the process
    actor.subscribe({ error: () => {} });
    actor.on("*", (emitted) => {
      if (this.#current === actor) this.#emits.push(emitted);
    });
    return actor;
  }

  #drop() {
    const live = this.#live;
    this.#live = null;
    this.#current = null;
    this.#liveVersion = -1;
    this.#armed = new Map();
    this.#committed = new Set();
    if (live) {
      try {
        live.execstoreDetached = true; // a child execution's root is stopped as a root
        live.stop();
      } catch {
        // a stopped or failed actor: nothing to stop
      }
    }
  }

  /** The first step: the machine's initial state, committed at version 0. */
  #create() {
    const now = this.#now();
    this.#emits = [];
    this.#outbound = [];
    this.#spawns = [];
    this.#actions = [];
    this.#armed = new Map();
    this.#committed = new Set();
    this.#seq = 0;
    this.#stepNow = now;
    this.#stepping = true;
    const actor = this.#spawnActor(null);
    try {
      actor.start();
    } finally {
      this.#stepping = false;
    }
    this.#live = actor;
    const link = this.#link();
    const execution = {
      id: this.#options.id,
      parent_id: link?.id ?? null,
      child_id: link?.child ?? null,
      definition_id: this.#machine.id,
      definition_fqn: this.#fqn,
      status: "RUNNING",
      context: { [XSTATE_KEY]: { snapshot: {}, scheduled: [], seq: 0, fqn: this.#fqn } },
      version: 0,
      created_at: now / 1000,
    };
    try {
      keepDefinition(this.#store, this.#machine, this.#fqn, now);
      this.#commitLive(execution, "xstate.init", null, now, null);
    } catch (error) {
      this.#drop();
      if (!isConflict(error)) throw error;
      // Another writer created it first: resume theirs.
      const stored = this.#store.load(this.#options.id);
      if (!stored) throw error;
      this.#adopt(stored);
    }
  }

  /** A live actor at the stored execution's version (restored, with its delayed events). */
  #ensureLive(execution) {
    if (this.#live !== null && this.#liveVersion === execution.version) return;
    this.#drop();
    const record = recordOf(execution);
    this.#stepping = true;
    let actor;
    try {
      actor = this.#spawnActor(snapshotOf(execution));
      actor.start();
      // The stored delayed events, armed again in the order XState armed them.
      const { byPath } = actorPaths(actor);
      for (const s of [...record.scheduled].sort((a, b) => a.seq - b.seq)) {
        const source = byPath.get(s.source);
        const target = s.target.startsWith("@") ? durableRef(s.target.slice(1)) : byPath.get(s.target);
        if (!source || !target) continue; // its actor is gone: the event would go nowhere
        this.#injecting = s;
        try {
          actor.system.scheduler.schedule(source, target, s.event, s.delay, s.id);
        } finally {
          this.#injecting = null;
        }
        this.#committed.add(s);
      }
      // A timeout whose id was scheduled again, or whose twin fired, is armed but no longer
      // the scheduler's (it cannot be cancelled): as it was, so the scheduler forgets it.
      const last = new Map();
      for (const s of record.scheduled) {
        const key = `${s.source}\u0000${s.id}`;
        if (!last.has(key) || last.get(key).seq < s.seq) last.set(key, s);
      }
      for (const s of last.values()) {
        if (s.registered !== false || !byPath.has(s.source)) continue;
        this.#keepArmed = true;
        try {
          actor.system.scheduler.cancel(byPath.get(s.source), s.id);
        } finally {
          this.#keepArmed = false;
        }
      }
    } finally {
      this.#stepping = false;
    }
    this.#seq = record.seq ?? 0;
    this.#emits = [];
    this.#outbound = [];
    this.#spawns = [];
    this.#actions = [];
    this.#live = actor;
    this.#liveVersion = execution.version;
  }

  /**
   * Commits the live actor's state as the step after `execution`: snapshot, emits, timers,
   * dedupe, trace. Sets the new execution on success; a CONFLICT is thrown unchanged.
   */
  #commitLive(execution, kind, eventId, now, fromValue = undefined, extra = null) {
    const actor = this.#live;
    const liveSnapshot = actor.getSnapshot();
    let persisted;
    try {
      persisted = json(actor.getPersistedSnapshot());
    } catch (error) {
      throw new XStateStoreError("NOT_SERIALIZABLE", `the snapshot does not persist as JSON: ${error?.message ?? error}`, { cause: error });
    }
    if (liveSnapshot.status === "error") persisted.error = { message: String(liveSnapshot.error?.message ?? liveSnapshot.error) };
    const before = execution.context?.[XSTATE_KEY] ?? {};
    const { byRef } = actorPaths(actor);
    const scheduled = [];
    for (const [handle, armed] of this.#armed) {
      const record = armed.record;
      if (!this.#committed.has(record)) {
        // armed in this step: where it comes from and goes to, by path in the actor tree
        const source = byRef.get(armed.source);
        const outside = externalTarget(armed.target);
        const target = outside !== undefined ? `@${outside}` : byRef.get(armed.target);
        if (source === undefined || target === undefined) {
          // its actor stopped in this step (XState would deliver it to nobody)
          this.#armed.delete(handle);
          continue;
        }
        record.source = source;
        record.target = target;
        record.path = timerPath(source, record.id, record.seq);
      }
      record.registered = armed.object !== undefined && scheduledOf(armed.source, record.id) === armed.object;
      scheduled.push(record);
    }
    const kept = new Set(scheduled);
    const timers = [];
    for (const old of this.#committed) {
      if (!kept.has(old)) timers.push({ action: "cancel", path: old.path });
    }
    for (const record of scheduled) {
      if (!this.#committed.has(record)) timers.push({ action: "schedule", path: record.path, fire_at: record.fire_at / 1000 });
    }
    const seq = this.#seq;
    const version = execution.version ?? 0;
    // A child started and stopped in this step is neither created nor stopped.
    const stopped = new Set(this.#outbound.filter((o) => o.event.type === STOP).map((o) => o.target));
    const born = new Set(this.#spawns.map((s) => s.execution));
    const spawns = this.#spawns
      .filter((s) => !stopped.has(s.execution))
      .map((s) => ({ child_id: s.execution, root_path: s.childId, context: { machine: s.machine, input: s.input, started_at: s.at / 1000 } }));
    const outbound = this.#outbound.filter((o) => !(born.has(o.target) && stopped.has(o.target)));
    const entry = (target, event, i) => ({
      target_id: target,
      event: { id: `${this.#options.id}/${version + 1}/${i}`, kind: String(event.type), data: json(event), source_id: this.#options.id, sent_at: now / 1000 },
    });
    const emits = this.#emits.map((emitted, i) => entry(null, emitted, i));
    for (const o of outbound) emits.push(entry(o.target, o.event, emits.length));
    const status = STATUS[liveSnapshot.status] ?? "FAILED";
    const finished = status !== "RUNNING";
    const next = {
      ...execution,
      definition_fqn: this.#fqn,
      status,
      outcome: finished ? liveSnapshot.status : null,
      error: liveSnapshot.status === "error" ? persisted.error.message : null,
      active_path: activePath(persisted.value),
      context: this.#context(persisted, { ...before, scheduled, seq, fqn: this.#fqn }),
      updated_at: now / 1000,
      finished_at: finished ? now / 1000 : null,
    };
    const trace = {
      event_kind: kind,
      event_id: eventId,
      from_path: fromValue === null || fromValue === undefined ? null : activePath(fromValue),
      to_path: next.active_path,
      from: fromValue ?? null,
      to: persisted.value ?? null,
      actions: [...this.#actions],
      timestamp: now / 1000,
    };
    if (this.#emits.length) trace.emitted = this.#emits.map((e) => String(e.type));
    if (outbound.length) trace.sent = outbound.map((o) => ({ to: o.target, kind: String(o.event.type) }));
    if (spawns.length) trace.spawned = spawns.map((s) => s.child_id);
    if (fromValue === null) trace.definition = definitionJson(this.#machine);
    if (extra) Object.assign(trace, extra);
    this.#store.commit(next, { emits, processed_event_id: eventId, timers, spawns, trace });
    this.#emits = [];
    this.#outbound = [];
    this.#spawns = [];
    this.#actions = [];
    this.#execution = next;
    this.#committed = kept;
    this.#liveVersion = next.version;
    if (finished) this.#drop();
    return next;
  }

  /**
   * One step: re-reads the execution (and whether `eventId` was processed), runs `apply` on
   * the live actor and commits; a lost CAS re-reads and runs it again.
   */
  #step(eventId, kind, now, apply, extra = null) {
    for (let attempt = 0; attempt < RETRIES; attempt += 1) {
      const loaded = eventId === null ? { execution: this.#store.load(this.id), processed: false } : this.#store.loadForEvent(this.id, eventId);
      if (!loaded.execution) throw new XStateStoreError("NOT_FOUND", `no execution ${this.id}`, { id: this.id });
      if (loaded.execution.version !== this.#execution.version) this.#adopt(loaded.execution);
      if (loaded.processed) return { applied: false, reason: "duplicate", execution: this.#execution };
      if (this.#execution.status !== "RUNNING") return { applied: false, reason: "finished", execution: this.#execution };
      this.#ensureLive(this.#execution);
      this.#stepNow = now;
      const from = json(this.#live.getSnapshot().value);
      this.#emits = [];
      this.#outbound = [];
      this.#spawns = [];
      this.#actions = [];
      this.#stepping = true;
      let go;
      try {
        go = apply(this.#live);
      } finally {
        this.#stepping = false;
      }
      if (go === false || typeof go === "string") {
        return { applied: false, reason: go === false ? "not-due" : go, execution: this.#execution };
      }
      try {
        this.#commitLive(this.#execution, kind, eventId, now, from, extra);
        return { applied: true, execution: this.#execution };
      } catch (error) {
        this.#drop();
        if (!isConflict(error)) throw error;
      }
    }
    throw new XStateStoreError("CONFLICT", `execution ${this.id}: lost the CAS ${RETRIES} times`, { id: this.id });
  }

  /**
   * Sends `event` as one committed step. `options.id` is the dedupe key: an id already
   * processed applies nothing (`{applied: false, reason: "duplicate"}`).
   */
  send(event, options = {}) {
    if (!isPlainObject(event) || typeof event.type !== "string") {
      throw new XStateStoreError("INVALID_INPUT", "an event is an object with a string `type`", { field: "event" });
    }
    let wire;
    try {
      wire = json(event);
    } catch (error) {
      throw new XStateStoreError("INVALID_INPUT", `the event is not JSON: ${error?.message ?? error}`, { field: "event" });
    }
    const eventId = options.id ?? null;
    if (eventId !== null && (typeof eventId !== "string" || eventId === "")) {
      throw new XStateStoreError("INVALID_INPUT", "options.id must be a non-empty string", { field: "id" });
    }
    return this.#step(eventId, wire.type, this.#now(), (live) => {
      live.send(wire);
    });
  }

  /**
   * Fires this execution's delayed events due at `now` (ms; default the clock), soonest
   * first, each as its own step at its own deadline, at most `max`; returns how many fired.
   */
  fireDue(now = this.#now(), max = Infinity) {
    let fired = 0;
    while (fired < max) {
      const stored = this.#store.load(this.id);
      if (!stored) throw new XStateStoreError("NOT_FOUND", `no execution ${this.id}`, { id: this.id });
      if (stored.version !== this.#execution.version) this.#adopt(stored);
      if (this.#execution.status !== "RUNNING") break;
      const due = recordOf(this.#execution).scheduled.filter((s) => s.fire_at <= now).sort(bySchedule);
      if (!due.length) break;
      const s = due[0];
      const result = this.#step(`timer:${s.path}`, s.event?.type ?? "xstate.timer", s.fire_at, () => {
        for (const [handle, armed] of this.#armed) {
          if (armed.record.path !== s.path) continue;
          // what XState's own timeout does when it fires
          this.#armed.delete(handle);
          armed.fn();
          return true;
        }
        return false;
      }, { fired_at: now / 1000 });
      if (!result.applied) break;
      fired += 1;
    }
    return fired;
  }

  /** A child's stand-in stopped (by XState, in a step of this execution's). */
  [ON_STOP](scope, snapshot) {
    if (this.#current !== null && scope.system === this.#current.system) {
      this.#outbound.push({ target: snapshot.execution, event: { type: STOP } });
    }
  }

  /**
   * Applies an outbox entry addressed to this execution as one step, deduped by its event
   * id: a child execution's done or error (to its stand-in, which XState then reports to the
   * parent as its own child's), a parent's stop (the execution is cancelled), any other event
   * as `send` would. The step's time is the sending step's (`sent_at`). Used by `relay`.
   */
  receive(entry) {
    const event = entry?.event;
    if (!isPlainObject(event) || typeof event.id !== "string" || typeof event.kind !== "string") {
      throw new XStateStoreError("INVALID_INPUT", "an outbox entry has an event with a string id and kind", { field: "entry" });
    }
    const data = isPlainObject(event.data) && typeof event.data.type === "string" ? event.data : { ...(event.data ?? {}), type: event.kind };
    const at = typeof event.sent_at === "number" && Number.isFinite(event.sent_at) ? msOf(event.sent_at) : this.#now();
    const source = typeof event.source_id === "string" ? event.source_id : null;
    return this.#step(event.id, data.type, at, (live) => {
      if (data.type === STOP) {
        if (source === null || source !== this.#execution.parent_id) return "not-parent";
        live.execstoreDetached = true; // stopped as XState stops a child: nothing goes back
        live._stop();
        return true;
      }
      const done = data.type.startsWith(DONE_PREFIX);
      if (done || data.type.startsWith(ERROR_PREFIX)) {
        const stand = source === null ? undefined : standIn(live, source);
        if (stand) {
          stand.send(done ? { type: CHILD_DONE, output: data.output } : { type: CHILD_ERROR, error: data.error });
          return true;
        }
        if (source !== null && source.startsWith(`${this.id}/`)) return "stale"; // a child no longer running here
      }
      live.send(data);
      return true;
    }, { source_id: source });
  }

  /** Stops the in-memory actor (the execution is untouched; a later call resumes it). */
  stop() {
    this.#drop();
  }
}

/** The stand-in of the child execution `execution` in `root`'s tree, if it is still there. */
function standIn(root, execution) {
  for (const ref of actorPaths(root).byRef.keys()) {
    if (proxiedMachine(ref.logic) !== undefined && ref.getSnapshot()?.execution === execution) return ref;
  }
  return undefined;
}

/** The scheduler's entry for `source`'s delayed event `id` (XState keys it by session id). */
function scheduledOf(source, id) {
  return source.system.getSnapshot()._scheduledEvents[`${source.sessionId}.${id}`];
}

function bySchedule(a, b) {
  return a.fire_at - b.fire_at || a.seq - b.seq;
}

/** Creates the execution `options.id` (committing the initial step) or resumes it. */
export function createDurableActor(store, machine, options) {
  return new DurableActor(store, machine, options);
}

export { machineRegistry, relay, relayEmits, sweepTimers } from "./xstate-relay.js";
