
// ---- Shapes (the core's JSON: snake_case keys, harel 0.9's fields) ----------------------

/** A JSON value as the store keeps it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object; its key order is kept. */
export type JsonObject = { [key: string]: JsonValue };

/** An execution's lifecycle status. */
export type Status = "PENDING" | "RUNNING" | "DONE" | "CANCELLED" | "SUSPENDED" | "CANCELLING" | "FAILED";

/** A stimulus of a state machine; unknown keys (a newer engine's) are kept. */
export interface Event {
  id: string;
  kind: string;
  created_time?: string | null;
  received_time?: string | null;
  data?: JsonObject;
  [extra: string]: unknown;
}

/** A region child's join state. */
export interface ChildState {
  root_path: string;
  finished?: boolean;
  outcome?: string | null;
  result?: JsonObject;
  submachine?: boolean;
  key?: string;
  [extra: string]: unknown;
}

/**
 * An execution as `commit`/`save` take it: `id` and `definition_id` are required, the rest
 * defaults as in the core. Unknown keys are kept and written back in order.
 */
export interface ExecutionInput {
  id: string;
  definition_id: string;
  definition_fqn?: string | null;
  root_path?: string;
  status?: Status;
  outcome?: string | null;
  error?: string | null;
  active_path?: string | null;
  history?: JsonObject;
  context?: JsonObject;
  processed_events?: number;
  /** The optimistic-concurrency token: 0 for a new execution; set to the new version by a write. */
  version?: number;
  /** 0 (normal) to 4 (highest). */
  priority?: number;
  parent_id?: string | null;
  child_id?: string | null;
  deferred?: Event[];
  children?: { [childId: string]: ChildState };
  invoke_seq?: { [path: string]: number };
  created_at?: number | null;
  updated_at?: number | null;
  finished_at?: number | null;
  expires_at?: number | null;
  [extra: string]: unknown;
}

/** An execution as the store returns it: every field present. */
export interface Execution extends ExecutionInput {
  definition_fqn: string | null;
  root_path: string;
  status: Status;
  outcome: string | null;
  error: string | null;
  active_path: string | null;
  history: JsonObject;
  context: JsonObject;
  processed_events: number;
  version: number;
  priority: number;
  parent_id: string | null;
  child_id: string | null;
  deferred: Event[];
  children: { [childId: string]: ChildState };
  invoke_seq: { [path: string]: number };
  created_at: number | null;
  updated_at: number | null;
  finished_at: number | null;
  expires_at: number | null;
}

/** An event to put in the outbox with a commit. */
export interface Emit {
  target_id: string | null;
  event: Event;
}

/** A durable-timer change of a commit; times are epoch seconds. */
export type TimerOp = { action: "schedule"; path: string; fire_at: number } | { action: "cancel"; path: string };

/** A child to create after a commit. */
export interface Spawn {
  child_id: string;
  root_path: string;
  context: JsonObject;
}

/** A timeline step (`read_trace` adds its `index`). */
export type TraceStep = JsonObject;

/** Everything one event step defers, committed with the execution's new state. Unknown keys are refused. */
export interface Effects {
  emits?: Emit[];
  processed_event_id?: string | null;
  timers?: TimerOp[];
  spawns?: Spawn[];
  trace?: TraceStep | null;
}

/** One step of `commitBatch`. */
export interface BatchItem {
  execution: ExecutionInput;
  effects?: Effects | null;
}

/** The outcome of one `commitBatch` item. */
export type BatchOutcome = { ok: true; seqs: number[]; version: number } | { ok: false; error: StoreError };

/** A list query; every key optional. Unknown keys are refused. */
export interface ListQuery {
  /** Keep these statuses (an empty array keeps none). */
  status?: Status[] | null;
  definition_id?: string | null;
  roots_only?: boolean;
  /** 1 to 10000; default 100. */
  limit?: number;
  /** The previous page's `next_cursor`. */
  cursor?: string | null;
  /** Keep `created_at` in [created_after, created_before) (epoch seconds; either end open). */
  created_after?: number | null;
  created_before?: number | null;
  /** Keep `updated_at` in [updated_after, updated_before). */
  updated_after?: number | null;
  updated_before?: number | null;
  /** Keep `finished_at` in [finished_after, finished_before). */
  finished_after?: number | null;
  finished_before?: number | null;
  /** Keep ids starting with it, and executions in that state (active path equal to it or below it at a `.`). */
  search?: string | null;
  /** "id" (the default), "updated": most recently updated first, or "created": newest created first (a cursor is good for its own order only). */
  order?: "id" | "updated" | "created" | null;
  /** Keep what this query finds (docs/search.md), e.g. `context.customer_id = "c-17" and updated > -1h`. */
  where?: string | null;
}

/** A context path kept indexed for `where` queries. */
export interface SearchAttribute {
  /** Canonical: `context.customer_id`. */
  path: string;
}

/** A list view's projection of an execution. */
export interface ExecutionSummary {
  id: string;
  definition_id: string;
  status: Status;
  outcome: string | null;
  active_path: string | null;
  version: number;
  parent_id: string | null;
  finished_at: number | null;
  updated_at: number | null;
  created_at: number | null;
}

/** One page of `listExecutions`. */
export interface ExecutionPage {
  items: ExecutionSummary[];
  /** `null` on the last page. */
  next_cursor: string | null;
  /** The paths of the query's `where` answered by a scan (not declared attributes); absent when none. */
  scan?: string[];
}

/** An outbox entry awaiting delivery. */
export interface OutboxEntry {
  seq: number;
  target_id: string | null;
  event: Event;
}

/** What `send` enqueued. */
export interface Sent {
  /** The outbox entry's seq (its ack key). */
  seq: number;
  /** The execution it is addressed to. */
  target_id: string;
  /** The event's id, the relay's dedupe key. */
  event_id: string;
}

/** A pending child creation. */
export interface SpawnEntry {
  seq: number;
  parent_id: string;
  child_id: string;
  root_path: string;
  context: JsonObject;
}

/** A due timer; pass `fire_at` back to `deleteTimer`. */
export interface DueTimer {
  execution_id: string;
  path: string;
  fire_at: number;
}

/** What `loadForEvent` returns. */
export interface LoadedForEvent {
  execution: Execution | null;
  processed: boolean;
}

/** How many executions are in each status. */
export type StatusCounts = { [S in Status]: number };

/** What a store can do beyond the contract. */
export interface Capabilities {
  durable: boolean;
  exclusive_claims: boolean;
  wakeups: boolean;
  /** `putDefinition` keeps definition documents. */
  definitions: boolean;
}

/** A machine's definition document, kept once per id and fqn (`putDefinition`). */
export interface DefinitionDoc {
  definition_id: string;
  definition_fqn: string;
  document: unknown;
  /** Epoch seconds. */
  first_seen: number;
}

/** Where a store keeps its data. */
export type StoreKind = "memory" | "sqlite-memory" | "opfs" | "file" | "closed";

// ---- Options (JS API: camelCase) ----------------------------------------------------------

/** Options of `Store.memory()`. */
export interface MemoryOptions {
  /** Trace steps kept per execution; default 200, 0 keeps all. */
  traceMax?: number;
}

/** Options of `Store.sqliteMemory()`. */
export interface SqliteMemoryOptions extends MemoryOptions {
  /** Table prefix (e.g. "harel" for harel's `harel_executions`, ...). */
  prefix?: string;
}

/** Options of `Store.openOpfs()`. */
export interface OpfsOptions extends SqliteMemoryOptions {
  /** How long to wait for a store another worker or tab holds, in ms; default 5000, 0 fails at once with LOCKED. */
  waitMs?: number;
  /**
   * The durability of a commit that returned (SQLite's `PRAGMA synchronous` in WAL mode).
   * "full" (default): the WAL is flushed on every commit; it survives a power loss too.
   * "normal": no flush per commit; it survives a killed or crashed worker, tab or browser, but a
   * power loss or OS crash may lose the commits since the last checkpoint (never half of one).
   */
  synchronous?: "full" | "normal";
  /** Open for reading only. */
  readOnly?: boolean;
}

/** Options of `Store.openFile()` (Node). */
export interface FileOptions extends SqliteMemoryOptions {
  /** How long to wait for a file another process (or store) holds, in ms; default 5000, 0 fails at once with LOCKED. */
  waitMs?: number;
  /**
   * The durability of a commit that returned (SQLite's `PRAGMA synchronous` in WAL mode).
   * "full" (default): the WAL is fsynced on every commit; it survives a power loss too.
   * "normal": no fsync per commit; it survives the process killed, but a power loss or OS
   * crash may lose the commits since the last checkpoint (never half of one).
   */
  synchronous?: "full" | "normal";
}

/** Options of `Store.sqliteFromBytes()`. */
export interface BytesOptions extends SqliteMemoryOptions {
  /**
   * Table prefix; default: the one set of execution tables the file holds (`"harel"` for a file
   * harel 0.9 wrote, none for execstore's bare names); a file with several: INVALID_INPUT
   * (field `prefix`) listing them.
   */
  prefix?: string;
  /** Open for reading only. */
  readOnly?: boolean;
  /** The bytes of the file's `-wal` sidecar, if it has one with content: its commits are recovered into the image. */
  wal?: Uint8Array | ArrayBuffer;
}

/** Options of `Store.importOpfs()`. */
export interface ImportOptions extends OpfsOptions {
  /** Overwrite an OPFS store of the same name (default false: INVALID_INPUT if one exists). */
  replace?: boolean;
  /** The bytes of the file's `-wal` sidecar, if it has one with content: its commits are recovered into the import. */
  wal?: Uint8Array | ArrayBuffer;
}

/** Options of `new MonitorApi()`. */
export interface MonitorApiOptions {
  /** What the UI shows as the store (a file name...). */
  store?: string;
  /** `/api/info`'s backend; default "sqlite". */
  backend?: string;
  /** The table prefix the store was opened with. */
  prefix?: string | null;
  /** The token writes need (`Authorization: Bearer <token>`), one admin named "token"; none: read-only, writes answer 403. */
  token?: string;
  /** Named tokens with roles instead of `token` (docs/operators.md): writes are allowed to what each role allows, and the audit log (kept in the store's own tables for a SQLite store, in this API's memory for a memory store) records the name. */
  tokens?: MonitorApiToken[];
  /** Keep a ring of metrics samples for `GET /api/metrics`, taken by `sampleMetrics()` (call it every period, as the in-browser monitor's worker does); none: `/api/metrics` answers the current figures alone (`live: false`). */
  metrics?: MonitorApiMetrics;
}

/** `MonitorApiOptions.metrics`: the ring's period and size (defaults: one sample every 10 s, 360 kept). */
export interface MonitorApiMetrics {
  /** Seconds between two samples, 1 to 86400. */
  periodSeconds?: number;
  /** Samples kept, 2 to 100000. */
  keep?: number;
}

/** One of `MonitorApiOptions.tokens`. */
export interface MonitorApiToken {
  /** What the audit log records: letters, digits, '-', '_', '.', '@'. */
  name: string;
  /** "read", "act" or "admin". */
  role: "read" | "act" | "admin";
  /** The token as sent in `Authorization: Bearer <token>`. */
  token: string;
}

/** One answer of `MonitorApi.handle()`: the HTTP status and the JSON text of the body. */
export interface ApiAnswer {
  status: number;
  body: string;
}

// ---- Errors --------------------------------------------------------------------------------

/** The stable codes of a `StoreError`: the core's (`StoreError::CODES`, which a test checks
 * this list against), then `LOCKED`. */
export type StoreErrorCode =
  | "CONFLICT"
  | "INVALID_INPUT"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "CORRUPT"
  | "BACKEND"
  | "LOCKED";

interface StoreErrorBase extends Error {
  name: "StoreError";
}
/** A lost CAS write: nothing was written. `found` is `null` when no execution is stored. */
export interface ConflictError extends StoreErrorBase {
  code: "CONFLICT";
  id: string;
  expected: number;
  found: number | null;
}
/** Refused input (`field` names it, e.g. `effects.timers[0].fire_at`): nothing changed. */
export interface InvalidInputError extends StoreErrorBase {
  code: "INVALID_INPUT";
  field: string;
  reason: string;
}
/** Names something that is not stored. */
export interface NotFoundError extends StoreErrorBase {
  code: "NOT_FOUND";
  what: string;
  key: string;
}
/** Would create something that already exists: nothing changed. */
export interface AlreadyExistsError extends StoreErrorBase {
  code: "ALREADY_EXISTS";
  what: string;
  key: string;
}
/** Stored data that does not parse. */
export interface CorruptError extends StoreErrorBase {
  code: "CORRUPT";
  what: string;
  reason: string;
}
/** The backend failed (SQLite, OPFS, a closed store). */
export interface BackendError extends StoreErrorBase {
  code: "BACKEND";
  retryable: boolean;
}
/** The OPFS store is open in another worker or tab; the store file (Node) in another process or store. */
export interface LockedError extends StoreErrorBase {
  code: "LOCKED";
  /** The store's name (OPFS), or the file's absolute path. */
  store: string;
  /** A store file's owner: its pid (null while another opener takes a stale lock over). */
  pid?: number | null;
}
/** What every operation throws: an `Error` with a stable `code`. */
export type StoreError =
  | ConflictError
  | InvalidInputError
  | NotFoundError
  | AlreadyExistsError
  | CorruptError
  | BackendError
  | LockedError;
