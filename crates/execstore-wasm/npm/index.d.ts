// `import { Store } from "execstore"`: the module is loaded at import (top-level await in a
// browser or worker, synchronously in Node), so `Store` is ready to use.
export { Store } from "./wasm/execstore.js";
export type {
  BackendError, BatchItem, BatchOutcome, Capabilities, ChildState, ConflictError, CorruptError, DueTimer,
  Effects, Emit, Event, Execution, ExecutionInput, ExecutionPage, ExecutionSummary, InvalidInputError,
  JsonObject, JsonValue, ListQuery, LoadedForEvent, LockedError, MemoryOptions, NotFoundError, OpfsOptions,
  OutboxEntry, Spawn, SpawnEntry, SqliteMemoryOptions, Status, StatusCounts, StoreError, StoreErrorCode,
  StoreKind, TimerOp, TraceStep,
} from "./wasm/execstore.js";
