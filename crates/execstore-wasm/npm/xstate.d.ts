// `import { createDurableActor } from "execstore/xstate"`: XState v5 machines run durably over
// an execstore `Store` (docs/xstate.md). Needs the peer dependency `xstate` (5.x).
import type { AnyActorRef, AnyStateMachine, EventFromLogic, InputFrom, StateValue } from "xstate";
import type { Execution, JsonObject, JsonValue, OutboxEntry, Status, Store } from "./index.js";

/** The key of an execution's context that holds what XState needs beside its own context. */
export declare const XSTATE_KEY: "$xstate";

/** XState's persisted snapshot (`actor.getPersistedSnapshot()`), as JSON. */
export interface PersistedSnapshot {
  status: "active" | "done" | "error" | "stopped";
  value?: StateValue;
  context?: JsonValue;
  historyValue?: JsonObject;
  children?: { [id: string]: JsonObject };
  output?: JsonValue;
  error?: JsonValue;
  [key: string]: unknown;
}

/** A delayed event (`after`, a delayed `raise`/`sendTo`) the execution holds as a durable timer. */
export interface ScheduledEvent {
  /** The timer's path in the store: the event's id, after its actor's path, and `#seq`. */
  path: string;
  /** The path of the actor that scheduled it ("" for the root, child ids joined by "/"). */
  source: string;
  /** The path of the actor it goes to. */
  target: string;
  /** XState's id of the delayed event. */
  id: string;
  event: JsonObject;
  /** The delay in ms. */
  delay: number;
  /** The deadline, in ms since the epoch (the store's timer has it in seconds). */
  fire_at: number;
  /** The order it was armed in (ties between deadlines fire in this order). */
  seq: number;
  /** Whether XState's scheduler still knows it (false: armed but no longer cancellable, as in XState). */
  registered: boolean;
}

/** What `migrate` is told. */
export interface MigrationInfo {
  /** The stored `definition_fqn` (`machineId@version`). */
  from: string | null;
  /** The machine's `definition_fqn`. */
  to: string;
}

/** Options of `createDurableActor`. */
export interface DurableActorOptions<TMachine extends AnyStateMachine> {
  /** The execution's id. */
  id: string;
  /** The machine's version: the execution's `definition_fqn` is `machine.id + "@" + version`. */
  version: string;
  /** The machine's input, for a new execution. */
  input?: InputFrom<TMachine>;
  /** Makes a snapshot stored under another version fit this one; without it, such a resume is `VERSION_MISMATCH`. */
  migrate?: (snapshot: PersistedSnapshot, info: MigrationInfo) => PersistedSnapshot;
  /** The clock, in ms since the epoch (default `Date.now`): a step's time, a delay's start. */
  now?: () => number;
  /** `false`: only resume (`NOT_FOUND` when there is no such execution). Default true. */
  create?: boolean;
  /** Told about a failed commit of an actor's own result (a promise's), other than a lost CAS. */
  onError?: (error: unknown) => void;
  /**
   * A new child execution's parent (`relay` sets it when it creates a child machine's
   * execution): the execution's `parent_id` and `child_id`, where its `sendParent`, done and
   * error events go.
   */
  parent?: { id: string; child: string };
}

/** Options of `send`. */
export interface SendOptions {
  /** The event's id, its dedupe key: an id the execution already processed applies nothing. */
  id?: string;
}

/** What `send` did. */
export type SendResult =
  | { applied: true; execution: Execution }
  | { applied: false; reason: "duplicate" | "finished" | "not-due" | "stale" | "not-parent"; execution: Execution };

/** The codes of an `XStateStoreError` (a store's own errors are thrown as they are: `StoreError`). */
export type XStateStoreErrorCode =
  | "INVALID_INPUT"
  | "NOT_FOUND"
  | "NOT_XSTATE"
  | "NOT_SERIALIZABLE"
  | "DEFINITION_MISMATCH"
  | "VERSION_MISMATCH"
  | "CONFLICT";

/** What this module throws of its own; nothing was committed. */
export declare class XStateStoreError extends Error {
  name: "XStateStoreError";
  code: XStateStoreErrorCode;
  /** The execution, when one is concerned. */
  id?: string;
  /** The argument at fault (`INVALID_INPUT`). */
  field?: string;
  /** What is stored and what the machine is (`DEFINITION_MISMATCH`, `VERSION_MISMATCH`). */
  stored?: string | null;
  expected?: string;
}

/** A durable XState actor: each `send` is one store commit. */
export declare class DurableActor<TMachine extends AnyStateMachine = AnyStateMachine> {
  constructor(store: Store, machine: TMachine, options: DurableActorOptions<TMachine>);
  /** The execution's id. */
  readonly id: string;
  /** The execution as last read or committed. */
  readonly execution: Execution;
  /** `RUNNING`, `DONE` (done), `FAILED` (error) or `CANCELLED` (stopped). */
  readonly status: Status;
  /** How many steps came from actors' own results (a promise resolved...) and were committed. */
  readonly asyncCommits: number;
  /** The persisted snapshot as last committed. */
  getPersistedSnapshot(): PersistedSnapshot;
  /** The pending delayed events as last committed, soonest first. */
  scheduled(): ScheduledEvent[];
  /** Sends `event` as one committed step (a lost CAS re-reads and runs it again). */
  send(event: EventFromLogic<TMachine>, options?: SendOptions): SendResult;
  /** Fires this execution's delayed events due at `now` (ms), each as a step at its deadline, at most `max`; how many fired. */
  fireDue(now?: number, max?: number): number;
  /**
   * Applies an outbox entry addressed to this execution as one step deduped by its event id
   * (what `relay` does): a child execution's done/error, a stop from its parent, or any event.
   */
  receive(entry: OutboxEntry): SendResult;
  /** Drops the in-memory actor (the execution is untouched; a later call resumes it). */
  stop(): void;
}

/** Creates the execution `options.id` (its initial step committed) or resumes it. */
export declare function createDurableActor<TMachine extends AnyStateMachine>(
  store: Store,
  machine: TMachine,
  options: DurableActorOptions<TMachine>,
): DurableActor<TMachine>;

/** A machine the sweep may resume executions of. */
export interface MachineEntry {
  machine: AnyStateMachine;
  version: string;
  migrate?: (snapshot: PersistedSnapshot, info: MigrationInfo) => PersistedSnapshot;
}

/** Options of `sweepTimers`. */
export interface SweepOptions {
  /** ms since the epoch; default `Date.now()`. */
  now?: number;
  /** Timers read per page; default 100. */
  limit?: number;
  /** Fire at most this many (soonest first); default all that are due. */
  max?: number;
}

/**
 * Fires every due delayed event of the executions whose machine id is a key of `machines`
 * (or of a child machine one of them starts), each as one step at its own deadline; returns
 * how many fired.
 */
export declare function sweepTimers(
  store: Store,
  machines: { [machineId: string]: MachineEntry } | Map<string, MachineEntry>,
  options?: SweepOptions,
): number;

/** An outbox entry this module wrote: an emitted event (`target_id` null) or one sent to an execution. */
export interface EmittedEntry extends OutboxEntry {
  event: OutboxEntry["event"] & {
    /** `executionId/version/index`: stable across redeliveries. */
    id: string;
    /** The event's type. */
    kind: string;
    /** The event, as JSON. */
    data: JsonObject;
    /** The execution that emitted or sent it. */
    source_id?: string;
    /** The sending step's time (epoch seconds): the receiving step's time. */
    sent_at?: number;
  };
}

/** Options of `relay`. */
export interface RelayOptions {
  /** The machines whose executions (and child machines' executions) this relay applies entries to and creates. */
  machines?: { [machineId: string]: MachineEntry } | Map<string, MachineEntry>;
  /**
   * Gets every other entry (an emit, an event for an id that is no XState execution of the
   * store), acked after it returned; `false` leaves it pending. Without it they stay pending.
   */
  deliver?: (entry: EmittedEntry) => void | boolean | Promise<void | boolean>;
  /** Entries read per page (spawns and outbox); default 100. */
  limit?: number;
  /** Handle at most this many entries, then return (a later call goes on); default all. */
  max?: number;
  /** The clock (ms) of a step whose entry has no `sent_at`; default `Date.now()`. */
  now?: number;
}

/** What one `relay` call did. */
export interface RelayResult {
  /** Child executions created. */
  spawned: number;
  /** Entries applied as a step of an XState execution. */
  applied: number;
  /** Entries acked without a step (a duplicate, a finished execution, a child no longer there). */
  ignored: number;
  /** Entries handed to `deliver` and acked. */
  delivered: number;
  /** Entries left pending (no handler, declined, or a machine not in `machines`). */
  left: number;
}

/**
 * Moves what the executions committed for others, in pages of `limit`: creates child
 * executions, applies entries addressed to XState executions (exactly once, deduped by the
 * entry's id), hands the rest to `deliver`; acks each after it was applied or delivered.
 */
export declare function relay(store: Store, options?: RelayOptions): Promise<RelayResult>;

/** Options of `relayEmits`. */
export interface RelayEmitsOptions {
  /** Entries read per page; default 100. */
  limit?: number;
}

/**
 * Delivers the entries `relay` hands to its `deliver` (the emits), acking each after its
 * delivery; returns how many it delivered. Child creations and events for XState executions
 * stay pending for `relay`.
 * @deprecated Use `relay(store, {deliver, machines})`, which also moves children and sends.
 */
export declare function relayEmits(
  store: Store,
  deliver: (entry: EmittedEntry) => void | Promise<void>,
  options?: RelayEmitsOptions,
): Promise<number>;

/**
 * An actor ref for XState's `sendTo` addressing the execution `executionId` (another durable
 * actor of the store, or an id the relay hands to its `deliver`): the event goes to the outbox.
 */
export declare function durableRef(executionId: string): AnyActorRef;

/** `machines` with the child machines each one starts (recursively), under the same version. */
export declare function machineRegistry(
  machines: { [machineId: string]: MachineEntry } | Map<string, MachineEntry>,
): Map<string, MachineEntry>;

/** The persisted snapshot an execution of this module holds. */
export declare function persistedSnapshot(execution: Execution): PersistedSnapshot;

/** A state value as a dotted path; for parallel states the deepest state holding every active one. */
export declare function activePath(value: StateValue): string;

/** The machine's definition as JSON (functions dropped), as the first trace step stores it. */
export declare function definitionJson(machine: AnyStateMachine): JsonObject | null;
