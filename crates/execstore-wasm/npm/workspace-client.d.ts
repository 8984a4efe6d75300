import type {
  Entry, Envelope, EvaluationError, OpfsWorkspaceStore, Run, StoredRule, StoredRuleInput, SubscribeOptions,
  TimeInput, WorkspaceOpfsOptions, WorkspaceRef,
} from "./workspace.js";
import type { JsonObject } from "./wasm/execstore.js";

/**
 * Opens (creating if needed) the OPFS workspace store `name` in a new dedicated worker and
 * returns a handle whose methods return Promises. Rejects with a `StoreError` of code `LOCKED`
 * if another tab or worker holds the store past `options.waitMs`.
 */
export function openWorkspaceOpfs(name: string, options?: WorkspaceOpfsOptions): Promise<OpfsWorkspaceClient>;

/**
 * An OPFS workspace store hosted by a dedicated worker: `OpfsWorkspaceStore`'s operations,
 * each returning a Promise; transactions as handles (`begin`) or a callback (`transaction`).
 */
export declare class OpfsWorkspaceClient {
  private constructor();
  /** `"closed"` once `close()` or `terminate()` was called or the worker failed. */
  readonly kind: "opfs" | "closed";
  readonly name: string;
  /**
   * Begins a transaction on `ref`; resolves once the worker holds it. Until `commit()` or
   * `rollback()` the store's other calls wait for it; `close()` and `terminate()` end it
   * uncommitted (as does the handle's garbage collection, eventually).
   */
  begin(ref: WorkspaceRef): Promise<WorkspaceTxClient>;
  /** Commits when `fn` resolves (with its value), rolls back when it throws or rejects. */
  transaction<T>(ref: WorkspaceRef, fn: (tx: WorkspaceTxClient) => T | Promise<T>): Promise<T>;
  /** The log after `options.afterSeq`, then every later commit: to `onEnvelope`, or by `for await`. */
  subscribe(ref: WorkspaceRef, options?: SubscribeOptions, onEnvelope?: (envelope: Envelope) => void): WorkspaceSubscriptionClient;
  /** Rolls back open transactions, closes the store (letting go of its lease), ends the worker. */
  close(): Promise<void>;
  /** Ends the worker at once, as a crash would: open transactions are lost, the lease released. */
  terminate(): void;
}

/** The store's plain operations, as `OpfsWorkspaceStore` declares them (each a Promise). */
type StoreCalls =
  | "capabilities" | "headSeq" | "read" | "ruleHistory" | "envelope" | "run" | "runs" | "deadLetters"
  | "progress" | "schedules" | "storedRules" | "workspaces" | "workspaceInfo" | "dueRuns"
  | "acquireLease" | "releaseLease" | "leases" | "cursor" | "saveCursor" | "cursors";
export interface OpfsWorkspaceClient extends Pick<OpfsWorkspaceStore, StoreCalls> {}

/** A transaction in the worker: `WorkspaceTx`'s methods, each returning a Promise. */
export declare class WorkspaceTxClient {
  private constructor();
  /** Whether `commit()` or `rollback()` was called. */
  readonly ended: boolean;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  append(entries: Entry[]): Promise<Envelope[]>;
  envelope(eventId: string): Promise<Envelope | null>;
  headSeq(): Promise<number>;
  read(afterSeq: number, limit: number): Promise<Envelope[]>;
  progress(rule: string): Promise<JsonObject | null>;
  saveProgress(rule: string, progress: JsonObject): Promise<void>;
  states(rule: string, keys: string[]): Promise<[string, JsonObject][]>;
  saveStates(rule: string, states: [string, JsonObject][]): Promise<void>;
  clearStates(rule: string): Promise<void>;
  run(runId: string): Promise<Run | null>;
  saveRuns(runs: Run[]): Promise<void>;
  scopeRuns(rule: string, scopeKey: string): Promise<Run[]>;
  deadLetter(errors: EvaluationError[]): Promise<void>;
  schedule(name: string): Promise<string | null>;
  saveSchedule(name: string, at: TimeInput): Promise<void>;
  storedRule(name: string): Promise<StoredRule | null>;
  storedRules(): Promise<StoredRule[]>;
  saveStoredRule(stored: StoredRuleInput): Promise<void>;
}

/** A subscription through the worker: an async iterator of envelopes (without a callback). */
/**
 * A subscription's flow-control window: the worker posts at most this many envelopes the page
 * has not taken yet, so a slow reader's buffer stays bounded.
 */
export declare const SUBSCRIPTION_WINDOW: number;

export declare class WorkspaceSubscriptionClient implements AsyncIterableIterator<Envelope> {
  private constructor();
  /** Envelopes arrived that `next()` has not returned yet: at most `SUBSCRIPTION_WINDOW`. */
  readonly buffered: number;
  /** Settles when the subscription ends: resolves, or rejects with its error (e.g. a bad ref). */
  readonly done: Promise<void>;
  /** Ends the subscription; resolves once it has ended. */
  cancel(): Promise<void>;
  next(): Promise<IteratorResult<Envelope, undefined>>;
  return(): Promise<IteratorResult<Envelope, undefined>>;
  [Symbol.asyncIterator](): WorkspaceSubscriptionClient;
}
