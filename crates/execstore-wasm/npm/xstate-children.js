// `execstore/xstate`'s child executions and addresses outside an execution (internal module).
//
// A child *machine* an execution invokes (or spawns by its name in `setup({actors})`) does not
// run inside the parent's actor: the parent runs a stand-in (`proxyLogic`) whose snapshot names
// the child's own execution. The stand-in records the child's creation (a spawn), the events
// the parent sends it and its stop; the real child runs as a durable actor of its own, and its
// done/error (and `sendParent`) come back through the outbox as events to the stand-in. An
// address outside the execution (`durableRef(id)`, a child's parent) is an `ExternalRef`: what
// XState relays to it is recorded and goes to the outbox.
import { Actor } from "xstate";

/** The event a stand-in receives when its child execution finished (done). */
export const CHILD_DONE = "execstore.child.done";
/** The event a stand-in receives when its child execution failed (error). */
export const CHILD_ERROR = "execstore.child.error";
/** The control event that stops (cancels) a child execution, sent by its parent. */
export const STOP = "xstate.stop";

/** Epoch seconds as stored back to ms (to the µs, as the store's seconds hold them). */
export const msOf = (seconds) => Math.round(seconds * 1e6) / 1e3;

const PROXY = Symbol("execstore.childExecution");
const EXTERNAL = Symbol("execstore.externalRef");

/** Whether `logic` is an XState state machine (not a promise, callback, observable...). */
export function isMachine(logic) {
  return (
    logic !== null &&
    typeof logic === "object" &&
    typeof logic.getStateNodeById === "function" &&
    typeof logic.provide === "function" &&
    typeof logic.id === "string"
  );
}

/** The child machine a stand-in logic stands for, or undefined. */
export const proxiedMachine = (logic) => (logic !== null && typeof logic === "object" ? logic[PROXY] : undefined);

/** The execution id an actor ref outside the execution addresses, or undefined. */
export const externalTarget = (ref) => (ref !== null && typeof ref === "object" ? ref[EXTERNAL] : undefined);

/**
 * The stand-in of `child` inside its parent: `hooks.spawn(scope, child, input)` names the new
 * child execution, `hooks.stop(scope, snapshot)` records its stop.
 */
function proxyLogic(child, hooks) {
  return {
    [PROXY]: child,
    getInitialSnapshot: (scope, input) => ({
      status: "active",
      output: undefined,
      error: undefined,
      execution: hooks.spawn(scope, child, input),
    }),
    transition: (snapshot, event, scope) => {
      if (snapshot.status !== "active") return snapshot;
      if (event.type === CHILD_DONE) return { ...snapshot, status: "done", output: event.output };
      if (event.type === CHILD_ERROR) return { ...snapshot, status: "error", error: event.error };
      if (event.type === STOP) {
        hooks.stop(scope, snapshot);
        return { ...snapshot, status: "stopped" };
      }
      return snapshot; // an event sent to the child: recorded by the parent, sent through the outbox
    },
    getPersistedSnapshot: (snapshot) => {
      const persisted = { status: snapshot.status, execution: snapshot.execution };
      if (snapshot.output !== undefined) persisted.output = snapshot.output;
      if (snapshot.error !== undefined) persisted.error = snapshot.error;
      return persisted;
    },
    restoreSnapshot: (persisted) => ({ output: undefined, error: undefined, ...persisted }),
  };
}

/**
 * `machine` with every child machine it invokes (inline `invoke.src`, or by name in its
 * `actors`) replaced by a stand-in; the same machine when it has none. Non-machine actors
 * are kept as they are.
 */
export function withChildExecutions(machine, hooks) {
  const actors = { ...(machine.implementations?.actors ?? {}) };
  let changed = false;
  for (const [name, logic] of Object.entries(actors)) {
    if (isMachine(logic)) {
      actors[name] = proxyLogic(logic, hooks);
      changed = true;
    }
  }
  const config = mapInvokes(machine.config, (src) => {
    if (!isMachine(src)) return src;
    changed = true;
    return proxyLogic(src, hooks);
  });
  if (!changed) return machine;
  const Machine = machine.constructor;
  return new Machine(config, { ...machine.implementations, actors });
}

/** `config` with each inline `invoke.src` through `map` (a copy where anything changed). */
function mapInvokes(config, map) {
  if (config === null || typeof config !== "object") return config;
  let out = config;
  const set = (key, value) => {
    if (value === config[key]) return;
    if (out === config) out = { ...config };
    out[key] = value;
  };
  if (config.invoke !== undefined) {
    const one = (inv) => (inv && typeof inv === "object" && typeof inv.src === "object" ? { ...inv, src: map(inv.src) } : inv);
    const invokes = Array.isArray(config.invoke) ? config.invoke.map(one) : one(config.invoke);
    const same = Array.isArray(invokes)
      ? invokes.every((inv, i) => inv.src === config.invoke[i].src)
      : invokes === config.invoke || invokes.src === config.invoke.src;
    if (!same) set("invoke", invokes);
  }
  if (config.states && typeof config.states === "object") {
    let states = config.states;
    for (const [key, state] of Object.entries(config.states)) {
      const mapped = mapInvokes(state, map);
      if (mapped !== state) {
        if (states === config.states) states = { ...config.states };
        states[key] = mapped;
      }
    }
    set("states", states);
  }
  return out;
}

const childrenOf = new WeakMap();

/** Every child machine `machine` can start as a child execution, by machine id (recursively). */
export function childMachines(machine) {
  let found = childrenOf.get(machine);
  if (found === undefined) {
    found = collectChildren(machine, new Map());
    childrenOf.set(machine, found);
  }
  return found;
}

function collectChildren(machine, found) {
  const visit = (logic) => {
    if (!isMachine(logic) || found.has(logic.id)) return;
    found.set(logic.id, logic);
    collectChildren(logic, found);
  };
  for (const logic of Object.values(machine.implementations?.actors ?? {})) visit(logic);
  mapInvokes(machine.config, (src) => {
    visit(src);
    return src;
  });
  return found;
}

/**
 * An actor ref for XState's `sendTo` that addresses the durable execution `executionId`
 * (another execution of the store, or one a relay hands to its `deliver` handler): what a
 * step sends to it goes to the outbox in the step's commit, addressed to `executionId`.
 */
export function durableRef(executionId) {
  if (typeof executionId !== "string" || executionId === "") {
    throw new TypeError("durableRef: the execution id must be a non-empty string");
  }
  const noop = () => {};
  return {
    [EXTERNAL]: executionId,
    id: executionId,
    sessionId: `execstore:${executionId}`,
    src: "execstore.durableRef",
    system: undefined,
    _parent: undefined,
    _processingStatus: 1,
    send: noop,
    _send: noop, // the parent's inspection records the event; nothing runs in memory
    start: noop,
    stop: noop,
    getSnapshot: () => ({ status: "active", output: undefined, error: undefined }),
    getPersistedSnapshot: () => ({ status: "active" }),
    subscribe: () => ({ unsubscribe: noop }),
    on: () => ({ unsubscribe: noop }),
    toJSON: () => ({ xstate$$type: 1, id: executionId }),
  };
}

/**
 * The root actor of a child execution: an XState actor with its own system whose parent is
 * the parent's execution (`options.execstoreParent`, a durable ref) from its first state on,
 * so a `sendParent` in the initial state's entry finds it; `execstoreDetached` drops it (the
 * actor is then stopped as a root). XState's constructor assigns `_parent` (undefined, as
 * it has no parent actor): the accessor keeps the execution's.
 */
export class ChildExecutionActor extends Actor {
  get _parent() {
    return this.execstoreDetached ? undefined : this.options?.execstoreParent;
  }

  set _parent(_value) {
    // XState's constructor clears it: the parent is the execution's, from the options
  }
}
