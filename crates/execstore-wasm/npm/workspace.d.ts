// The workspace log of the package (`WorkspaceStore`): reflexr 0.1.1's records, as the store
// takes and returns them (snake_case keys, key order kept, unknown fields kept).
import type { JsonObject, JsonValue, StoreError, StoreErrorCode } from "./wasm/execstore.js";

/**
 * What the workspace log's operations throw (an `Error` named `StoreError` with a stable
 * `code`): `INVALID_INPUT` (bad input: nothing changed), `ALREADY_EXISTS` (an event id
 * already in the log: none of the call appended), `CONFLICT` (a stored rule saved at any
 * version but the next), `NOT_FOUND` (a read-only file without reflexr's tables), `CORRUPT`
 * (a stored row that does not parse), `BACKEND` (SQLite or OPFS failed, the store is closed,
 * the transaction has ended; `retryable` says whether trying again may work) and, for an
 * OPFS store, `LOCKED` (another tab or worker held it past `waitMs`).
 */
export type WorkspaceStoreError = StoreError;
export type { StoreError, StoreErrorCode };

/** A tenant's workspace: the unit of isolation, ordering and locking. */
export interface WorkspaceRef {
  tenant_id: string;
  workspace_id: string;
}

/** An event: its `type` is its qualified type name (e.g. `"oncall:service_error"`). */
export interface WorkspaceEvent {
  type: string;
  [field: string]: JsonValue;
}

/** An event to append; the store assigns its `seq` and `ts`. */
export interface Entry {
  /** Unique in the workspace's log. */
  id: string;
  /** Who published it (reflexr's `Actor`, e.g. `{kind: "source", name: "monitor"}`). */
  actor?: JsonValue;
  event: WorkspaceEvent;
  /** What caused it, if a run emitted it. */
  causation?: JsonValue;
  /** Its causal chain; none starts a new one named by `id`. */
  correlation_id?: string | null;
  /** The W3C trace context of the publishing span. */
  traceparent?: string | null;
}

/** A stored event with its position: reflexr's `Envelope`. */
export interface Envelope {
  /** Gap-free from 1. */
  seq: number;
  id: string;
  /** ISO 8601 (pydantic's text); never decreases within a workspace. */
  ts: string;
  workspace_id: string;
  actor: JsonValue;
  causation: JsonValue;
  correlation_id: string;
  traceparent: string | null;
  event: WorkspaceEvent;
}

/** A window of a log: `after_seq < seq < before_seq`, some types, the first `limit` or last `last`. */
export interface LogQuery {
  after_seq?: number;
  before_seq?: number | null;
  types?: string[] | null;
  limit?: number | null;
  last?: number | null;
}

/** Where a run is in its lifecycle. */
export type RunStatus = "pending" | "running" | "retrying" | "succeeded" | "dead" | "cancelled" | "skipped";

/** One firing's action: reflexr's `Run`, as its document (unknown fields kept). */
export interface Run {
  id: string;
  rule: string;
  scope_key: string;
  status: RunStatus;
  fired_seq: number;
  /** ISO 8601. */
  next_attempt_at: string;
  [field: string]: JsonValue;
}

/** A filter on runs, newest first. */
/** A `where` search of the log or the runs (docs/search.md, "The workspace log and runs"):
 * one page examines at most `scan` rows (10,000 unless told). */
export interface SearchQuery {
  /** The query, e.g. `event.service = "auth"` or `scope.customer = "c-17" and status = dead`. */
  where: string;
  /** The log: only envelopes after this seq (0). */
  after_seq?: number;
  /** The log: only envelopes before this seq. */
  before_seq?: number | null;
  /** The log: walk down from the top of the window. */
  newest_first?: boolean;
  /** The runs: where a previous page stopped (its `next`). */
  cursor?: number | null;
  /** At most this many matches (50). */
  limit?: number;
  /** At most this many rows examined (10,000; at most 100,000). */
  scan?: number;
}

/** One page of `searchLog`: the matches in scan order, how many envelopes were examined,
 * the last seq examined, and the next page's `after_seq` (or `before_seq` newest first). */
export interface LogSearchPage {
  items: Envelope[];
  scanned: number;
  scanned_to: number | null;
  next: number | null;
}

/** One page of `searchRuns`: the matches newest first, how many runs were examined, and the
 * next page's `cursor` (null when every run was examined). */
export interface RunSearchPage {
  items: Run[];
  scanned: number;
  next: number | null;
}

export interface RunQuery {
  rule?: string | null;
  status?: RunStatus | null;
  scope_key?: string | null;
  limit?: number | null;
}

/** Which rules are disabled, ordered by scope, and blocking (reflexr's `RunPolicy`). */
export interface RunPolicy {
  disabled?: string[];
  ordered?: string[];
  blocking?: string[];
}

/** A run due now, with its workspace. */
export interface DueRun {
  workspace: WorkspaceRef;
  run: Run;
}

/** A rule could not evaluate an envelope: reflexr's `EvaluationError`. */
export interface EvaluationError {
  rule: string;
  [field: string]: JsonValue;
}

/** A rule installed at runtime: reflexr's `StoredRule`. */
export interface StoredRule {
  /** The rule as JSON; its `name` is the key. */
  rule: { name: string; [field: string]: JsonValue };
  /** From 1; a save must give the next version (else `CONFLICT`). */
  version: number;
  status: "active" | "archived";
  provenance: JsonObject;
}

/** What `saveStoredRule` takes (`status` defaults to active, `provenance` to `{}`). */
export interface StoredRuleInput {
  rule: { name: string; [field: string]: JsonValue };
  version: number;
  status?: "active" | "archived";
  provenance?: JsonObject;
}

/** An exclusive, expiring claim on a key. */
export interface Lease {
  key: string;
  holder: string;
  /** ISO 8601. */
  expires_at: string;
}

/** A workspace's head. */
export interface WorkspaceInfo {
  workspace: WorkspaceRef;
  head_seq: number;
  head_ts: string | null;
}

/** What a workspace store can do beyond the contract. */
export interface WorkspaceCapabilities {
  durable: boolean;
  cross_process_wakeups: boolean;
}

/** A point in time: ISO 8601 text with an offset, or epoch milliseconds. */
export type TimeInput = string | number;

/** Options of `subscribe`. */
export interface SubscribeOptions {
  /** Start after this seq (default 0: the whole log). */
  afterSeq?: number;
  /** Ends the subscription when aborted. */
  signal?: AbortSignal;
}

/** A subscription: the log, then every later commit, in order. */
export interface Subscription extends AsyncIterableIterator<Envelope> {
  next(): Promise<IteratorResult<Envelope, undefined>>;
  return(): Promise<IteratorResult<Envelope, undefined>>;
}

/** One transaction on one workspace, as `transaction`'s callback gets it (synchronous methods). */
export declare class WorkspaceTx {
  private constructor();
  /** Appends events; an id already in the log (or twice here) is `ALREADY_EXISTS` and appends none. */
  append(entries: Entry[]): Envelope[];
  envelope(eventId: string): Envelope | null;
  headSeq(): number;
  read(afterSeq: number, limit: number): Envelope[];
  progress(rule: string): JsonObject | null;
  saveProgress(rule: string, progress: JsonObject): void;
  /** `[key, state]` pairs for the keys found, in the order asked. */
  states(rule: string, keys: string[]): [string, JsonObject][];
  saveStates(rule: string, states: [string, JsonObject][]): void;
  clearStates(rule: string): void;
  run(runId: string): Run | null;
  saveRuns(runs: Run[]): void;
  scopeRuns(rule: string, scopeKey: string): Run[];
  deadLetter(errors: EvaluationError[]): void;
  schedule(name: string): string | null;
  saveSchedule(name: string, at: TimeInput): void;
  storedRule(name: string): StoredRule | null;
  storedRules(): StoredRule[];
  saveStoredRule(stored: StoredRuleInput): void;
  readonly ended: boolean;
}

/** Options of `WorkspaceStore.openOpfs`. */
export interface WorkspaceOpfsOptions {
  /**
   * How long to wait for the store's lease while another tab or worker holds it, at the open
   * and whenever this store takes it back, in milliseconds (default 5000; `0`: at once), then
   * `LOCKED`.
   */
  waitMs?: number;
  /**
   * `"full"` (the default): every commit is synced to OPFS before it resolves. `"normal"`:
   * synced at checkpoints; a crashed worker or tab loses nothing, a power loss or OS crash may
   * lose the last commits (never corrupting the file).
   */
  synchronous?: "full" | "normal";
  /** Opens an existing store for reading only: every write is refused. */
  readOnly?: boolean;
}

/** Options of `WorkspaceStore.openFile` (Node). */
export interface WorkspaceFileOptions {
  /** How long to wait for a file another process (or store) holds, in ms (default 5000; `0`: at once), then `LOCKED`. */
  waitMs?: number;
  /** `"full"` (the default): every commit is fsynced before it resolves. `"normal"`: synced at checkpoints; a killed process loses nothing, a power loss may lose the last commits (never half of one). */
  synchronous?: "full" | "normal";
}

/** A tenant's workspaces: the workspace log. */
export declare class WorkspaceStore {
  private constructor();
  /** Workspaces in memory, timed by `Date.now()`. */
  static memory(): WorkspaceStore;
  /**
   * The workspace store `name` (1 to 64 letters, digits, `.`, `_`, `-`) in a SQLite file in
   * the Origin Private File System; only in a dedicated worker. Rejects with `LOCKED` if
   * another tab or worker keeps it past `options.waitMs`.
   */
  static openOpfs(name: string, options?: WorkspaceOpfsOptions): Promise<OpfsWorkspaceStore>;
  /**
   * The workspace store file at `path` on the local file system (Node only), owned by this
   * process until `close()`. Rejects with `LOCKED` if another process or store keeps it past
   * `options.waitMs`; a directory, a non-SQLite or read-only file is `INVALID_INPUT`.
   */
  static openFile(path: string, options?: WorkspaceFileOptions): Promise<WorkspaceStore>;
  readonly kind: "memory" | "file" | "closed";
  close(): void;
  capabilities(): WorkspaceCapabilities;
  /** Runs `fn` in a transaction: commits when it resolves, rolls back when it throws. */
  transaction<T>(ref: WorkspaceRef, fn: (tx: WorkspaceTx) => T | Promise<T>): Promise<T>;
  subscribe(ref: WorkspaceRef, options?: SubscribeOptions): Subscription;
  headSeq(ref: WorkspaceRef): number;
  read(ref: WorkspaceRef, query?: LogQuery): Envelope[];
  ruleHistory(ref: WorkspaceRef, name: string): Envelope[];
  envelope(ref: WorkspaceRef, eventId: string): Envelope | null;
  run(ref: WorkspaceRef, runId: string): Run | null;
  runs(ref: WorkspaceRef, query?: RunQuery): Run[];
  searchLog(ref: WorkspaceRef, query: SearchQuery): LogSearchPage;
  searchRuns(ref: WorkspaceRef, query: SearchQuery): RunSearchPage;
  deadLetters(ref: WorkspaceRef, rule?: string | null): EvaluationError[];
  /** `[rule, progress]` pairs, in the order the rules first saved one. */
  progress(ref: WorkspaceRef): [string, JsonObject][];
  /** `[name, last tick]` pairs. */
  schedules(ref: WorkspaceRef): [string, string][];
  storedRules(ref: WorkspaceRef): StoredRule[];
  workspaces(): WorkspaceRef[];
  workspaceInfo(ref: WorkspaceRef): WorkspaceInfo | null;
  dueRuns(now: TimeInput, limit: number, policy?: RunPolicy): DueRun[];
  /** Takes or renews a lease for `ttlMs`; false if another holder has it unexpired. */
  acquireLease(ref: WorkspaceRef, key: string, holder: string, ttlMs: number): boolean;
  releaseLease(ref: WorkspaceRef, key: string, holder: string): void;
  leases(ref: WorkspaceRef): Lease[];
  cursor(ref: WorkspaceRef, name: string): number;
  saveCursor(ref: WorkspaceRef, name: string, seq: number): void;
  cursors(ref: WorkspaceRef): [string, number][];
}

/**
 * The workspace log in a SQLite file in OPFS (made by `WorkspaceStore.openOpfs`): the same
 * operations as `WorkspaceStore`, each returning a Promise, run one at a time in call order
 * (a call made while a `transaction` callback runs waits for it to end: inside the callback,
 * use `tx`, never the store). Tabs and workers of the origin share the store by taking turns
 * on its lease; subscriptions wake on commits made in any of them.
 */
export declare class OpfsWorkspaceStore {
  private constructor();
  readonly kind: "opfs" | "closed";
  /** The store's name. */
  readonly name: string;
  /** Whether this agent holds the store's lease now (let go when another tab asks for it). */
  readonly leaseHeld: boolean;
  /** Closes the store once earlier calls have run: the file and the lease are let go. */
  close(): Promise<void>;
  capabilities(): Promise<WorkspaceCapabilities>;
  /** Runs `fn` in a transaction: commits when it resolves, rolls back when it throws. */
  transaction<T>(ref: WorkspaceRef, fn: (tx: WorkspaceTx) => T | Promise<T>): Promise<T>;
  /** The log, then every later commit (in any tab or worker of the origin), in order. */
  subscribe(ref: WorkspaceRef, options?: SubscribeOptions): Subscription;
  headSeq(ref: WorkspaceRef): Promise<number>;
  read(ref: WorkspaceRef, query?: LogQuery): Promise<Envelope[]>;
  ruleHistory(ref: WorkspaceRef, name: string): Promise<Envelope[]>;
  envelope(ref: WorkspaceRef, eventId: string): Promise<Envelope | null>;
  run(ref: WorkspaceRef, runId: string): Promise<Run | null>;
  runs(ref: WorkspaceRef, query?: RunQuery): Promise<Run[]>;
  searchLog(ref: WorkspaceRef, query: SearchQuery): Promise<LogSearchPage>;
  searchRuns(ref: WorkspaceRef, query: SearchQuery): Promise<RunSearchPage>;
  deadLetters(ref: WorkspaceRef, rule?: string | null): Promise<EvaluationError[]>;
  progress(ref: WorkspaceRef): Promise<[string, JsonObject][]>;
  schedules(ref: WorkspaceRef): Promise<[string, string][]>;
  storedRules(ref: WorkspaceRef): Promise<StoredRule[]>;
  workspaces(): Promise<WorkspaceRef[]>;
  workspaceInfo(ref: WorkspaceRef): Promise<WorkspaceInfo | null>;
  dueRuns(now: TimeInput, limit: number, policy?: RunPolicy): Promise<DueRun[]>;
  acquireLease(ref: WorkspaceRef, key: string, holder: string, ttlMs: number): Promise<boolean>;
  releaseLease(ref: WorkspaceRef, key: string, holder: string): Promise<void>;
  leases(ref: WorkspaceRef): Promise<Lease[]>;
  cursor(ref: WorkspaceRef, name: string): Promise<number>;
  saveCursor(ref: WorkspaceRef, name: string, seq: number): Promise<void>;
  cursors(ref: WorkspaceRef): Promise<[string, number][]>;
}
