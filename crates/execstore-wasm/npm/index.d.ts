// The classes' `[Symbol.dispose]()` (`using store = Store.memory()`) is declared by TypeScript's
// esnext.disposable library: referenced here, so that a project whose `lib` is older compiles.
/// <reference lib="esnext.disposable" />
// `import { Store } from "execstore"`: the module is loaded at import (top-level await in a
// browser or worker, synchronously in Node), so `Store` is ready to use.
export { MonitorApi, Store, WorkspaceImage } from "./wasm/execstore.js";
export type {
  AlreadyExistsError, ApiAnswer, BackendError, BatchItem, BytesOptions, BatchOutcome, Capabilities, ChildState, ConflictError, CorruptError, DueTimer,
  Effects, Emit, Event, Execution, ExecutionInput, ExecutionPage, ExecutionSummary, InvalidInputError,
  ImportOptions, JsonObject, JsonValue, ListQuery, LoadedForEvent, LockedError, MemoryOptions, MonitorApiOptions, MonitorApiToken, NotFoundError, OpfsOptions,
  OutboxEntry, SearchAttribute, Sent, Spawn, SpawnEntry, SqliteMemoryOptions, Status, StatusCounts, StoreError, StoreErrorCode,
  StoreKind, TimerOp, TraceStep,
  FileOptions,
  DefinitionDoc,
} from "./wasm/execstore.js";
// The workspace log (reflexr's Storage): `import { WorkspaceStore } from "execstore"`.
export { OpfsWorkspaceStore, WorkspaceStore, WorkspaceTx } from "./workspace.js";
export type {
  DueRun, Entry, Envelope, EvaluationError, Lease, LogQuery, Run, RunPolicy, RunQuery, RunStatus, StoredRule,
  StoredRuleInput, SubscribeOptions, Subscription, TimeInput, WorkspaceCapabilities, WorkspaceEvent, WorkspaceInfo,
  WorkspaceOpfsOptions, WorkspaceRef, WorkspaceStoreError,
  WorkspaceFileOptions,
} from "./workspace.js";
