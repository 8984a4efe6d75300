import type {
  BatchItem, BatchOutcome, Capabilities, DueTimer, Effects, Event, Execution, ExecutionInput, ExecutionPage,
  DefinitionDoc, ListQuery, LoadedForEvent, OpfsOptions, OutboxEntry, SearchAttribute, Sent, SpawnEntry, StatusCounts, TraceStep,
} from "./index.js";

/**
 * Opens (creating if needed) the OPFS store `name` in a new dedicated worker and returns a
 * handle whose methods return Promises. Rejects with a `StoreError` of code `LOCKED` if another
 * tab or worker holds the store past `options.waitMs`.
 */
export function openOpfs(name: string, options?: OpfsOptions): Promise<OpfsStoreClient>;

/** An OPFS store hosted by a dedicated worker: the `Store` methods, each returning a Promise. */
export declare class OpfsStoreClient {
  private constructor();
  readonly kind: "opfs";
  capabilities(): Promise<Capabilities>;
  traceMax(): Promise<number | null>;
  /** Resolves with the new version, also set on `execution`. */
  save(execution: ExecutionInput): Promise<number>;
  /** Resolves with the outbox seqs; the new version is set on `execution`. */
  commit(execution: ExecutionInput, effects?: Effects): Promise<number[]>;
  /** One transaction; each item's new version is set on its `execution`. */
  commitBatch(items: BatchItem[]): Promise<BatchOutcome[]>;
  load(id: string): Promise<Execution | null>;
  loadForEvent(id: string, eventId: string): Promise<LoadedForEvent>;
  isProcessed(executionId: string, eventId: string): Promise<boolean>;
  listExecutions(query?: ListQuery): Promise<ExecutionPage>;
  attributes(): Promise<SearchAttribute[]>;
  declareAttribute(path: string): Promise<SearchAttribute>;
  dropAttribute(path: string): Promise<boolean>;
  putDefinition(definitionId: string, definitionFqn: string, document: unknown, firstSeen: number): Promise<boolean>;
  getDefinition(definitionId: string, definitionFqn: string): Promise<DefinitionDoc | null>;
  pendingOutbox(after?: number | null, limit?: number): Promise<OutboxEntry[]>;
  /** Sends `event` to the execution through the outbox; resolves with what was enqueued. */
  send(executionId: string, event: Event, expectedVersion?: number | null): Promise<Sent>;
  ackOutbox(seq: number): Promise<void>;
  ackOutboxMany(seqs: number[]): Promise<number>;
  pendingSpawns(after?: number | null, limit?: number): Promise<SpawnEntry[]>;
  ackSpawn(seq: number): Promise<void>;
  dueTimers(now: number, after?: DueTimer | null, limit?: number): Promise<DueTimer[]>;
  deleteTimer(executionId: string, path: string, fireAt: number): Promise<boolean>;
  readTrace(executionId: string): Promise<TraceStep[]>;
  appendTrace(executionId: string, step: TraceStep): Promise<number>;
  idsWithPrefix(prefix: string): Promise<string[]>;
  purge(executionId: string, expectedVersion: number): Promise<boolean>;
  statusCounts(definitionId?: string | null, rootsOnly?: boolean): Promise<StatusCounts>;
  changeToken(): Promise<string>;
  /** Closes the store (its OPFS files and lock are released) and ends the worker. */
  close(): Promise<void>;
  /** Ends the worker at once, as a crash would; the browser releases the store's lock. */
  terminate(): void;
}
