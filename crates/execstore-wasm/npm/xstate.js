// `execstore/xstate`: XState v5 machines run durably over an execstore `Store`.
//
// An execution holds one root actor (and the children it invokes or spawns, persisted inside
// its snapshot as XState persists them). Every event is one store commit: the new persisted
// snapshot, the emitted events (outbox), the delayed events XState scheduled or cancelled
// (durable timers), the event id (dedupe) and a trace step, CAS on the version.
// docs/xstate.md is the user's documentation; what is durable and what is not is said there.
import { createActor } from "xstate";

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

const definitions = new WeakMap();

const keptDefinitions = new WeakMap();

/**
 * Keeps the machine's definition as the store's definition document of (machine id, fqn),
 * once per store object and version: an equal one again changes nothing, a different one
 * under the same version throws the store's `ALREADY_EXISTS` (change the version with the
 * definition). A store that keeps none, or a definition that is not JSON, is skipped.
 */
function keepDefinition(store, machine, fqn, now) {
  if (typeof store.putDefinition !== "function") return;
  let kept = keptDefinitions.get(store);
  if (kept === undefined) {
    if (store.capabilities().definitions !== true) return;
    kept = new Set();
    keptDefinitions.set(store, kept);
  }
  const key = `${machine.id}\u0000${fqn}`;
  if (kept.has(key)) return;
  const definition = definitionJson(machine);
  if (definition === null) return;
  store.putDefinition(machine.id, fqn, definition, now / 1000);
  kept.add(key);
}

/** Adds each state node's `always` transitions (XState's `definition` leaves them out). */
function withAlways(definition, node) {
  if (!isPlainObject(definition) || node == null) return;
  if (Array.isArray(node.always) && node.always.length) definition.always = json(node.always);
  for (const [key, child] of Object.entries(node.states ?? {})) withAlways(definition.states?.[key], child);
}

/**
 * The definition as JSON (functions dropped), each state's `always` transitions added, or
 * null when it does not serialize.
 */
export function definitionJson(machine) {
  if (!definitions.has(machine)) {
    let definition = null;
    try {
      definition = json(machine.definition) ?? null;
      withAlways(definition, machine.root);
    } catch {
      // a definition that does not serialize is not stored
    }
    definitions.set(machine, definition);
  }
  return definitions.get(machine);
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

  #inspect = (event) => {
    if (this.#current === null || event.rootId !== this.#current.sessionId) return;
    if (event.type === "@xstate.action") {
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
    const options = { clock, inspect: this.#inspect, id: this.#options.id };
    if (snapshot) options.snapshot = snapshot;
    else if ("input" in this.#options) options.input = this.#options.input;
    this.#current = null;
    const actor = createActor(this.#machine, options);
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
    const execution = {
      id: this.#options.id,
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
        const target = byPath.get(s.target);
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
        const target = byRef.get(armed.target);
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
    const emits = this.#emits.map((emitted, i) => ({
      target_id: null,
      event: { id: `${this.#options.id}/${version + 1}/${i}`, kind: String(emitted.type), data: json(emitted), source_id: this.#options.id },
    }));
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
    if (emits.length) trace.emitted = emits.map((e) => e.event.kind);
    if (fromValue === null) trace.definition = definitionJson(this.#machine);
    if (extra) Object.assign(trace, extra);
    this.#store.commit(next, { emits, processed_event_id: eventId, timers, trace });
    this.#emits = [];
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
      this.#actions = [];
      this.#stepping = true;
      let go;
      try {
        go = apply(this.#live);
      } finally {
        this.#stepping = false;
      }
      if (go === false) return { applied: false, reason: "not-due", execution: this.#execution };
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

  /** Stops the in-memory actor (the execution is untouched; a later call resumes it). */
  stop() {
    this.#drop();
  }
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

/**
 * Fires every due delayed event of the XState executions in `store` whose machine is in
 * `machines` (by machine id: `{machine, version, migrate?}`), one step each, at its deadline,
 * in deadline order across executions (what a step arms that is due fires in the same
 * sweep); returns how many fired. Timers of other definitions are left alone.
 */
export function sweepTimers(store, machines, options = {}) {
  const now = options.now ?? Date.now();
  const limit = options.limit ?? 100;
  const entries = machines instanceof Map ? machines : new Map(Object.entries(machines));
  const actors = new Map();
  const skipped = new Set();
  let fired = 0;
  let after = null;
  try {
    for (;;) {
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
      const paths = new Set(recordOf(actor.execution).scheduled.map((s) => s.path));
      if (paths.has(next.path) || !store.deleteTimer(id, next.path, next.fire_at)) skipped.add(id);
    }
  } finally {
    for (const actor of actors.values()) actor.stop();
  }
  return fired;
}

/**
 * Delivers the store's pending outbox entries (what the executions emitted), oldest first,
 * each to `deliver` and then acked; an entry whose delivery threw stays pending (and the
 * error is rethrown). A crash between delivery and ack delivers it again: `entry.event.id`
 * is stable, the dedupe key of the receiver (a durable actor's `send(event, {id})`).
 */
export async function relayEmits(store, deliver, options = {}) {
  const limit = options.limit ?? 100;
  let delivered = 0;
  for (;;) {
    const entries = store.pendingOutbox(null, limit);
    if (!entries.length) break;
    for (const entry of entries) {
      await deliver(entry);
      store.ackOutbox(entry.seq);
      delivered += 1;
    }
  }
  return delivered;
}
