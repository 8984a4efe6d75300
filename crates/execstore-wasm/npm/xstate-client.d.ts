// `import { connectXState } from "execstore/xstate-client"`: a page's handle on durable XState
// actors running in a dedicated worker over an OPFS store (docs/xstate.md, "In the browser").
import type { Execution, JsonObject, OpfsOptions, OutboxEntry, TraceStep } from "./index.js";
import type { PersistedSnapshot, ScheduledEvent } from "./xstate.js";

/** An execution as the worker holds it. */
export interface XStateSummary {
  execution: Execution;
  snapshot: PersistedSnapshot;
  scheduled: ScheduledEvent[];
}

/** What `send` did: `reason` is `duplicate` or `finished` when nothing was applied. */
export interface XStateSendResult {
  applied: boolean;
  reason?: "duplicate" | "finished";
  execution: Execution;
}

/** An event sent from the page: JSON with a string `type`. */
export interface XStateEvent extends JsonObject {
  type: string;
}

/** Opens the OPFS store `name` in `worker` (which called `serveXState`). */
export function connectXState(worker: Worker, name: string, options?: OpfsOptions): Promise<XStateClient>;

/** The durable actors of one worker, every call a Promise. */
export declare class XStateClient {
  private constructor();
  /** Creates the execution `id` of the machine `machineId` or resumes it (`create: false`: resume only). */
  start(id: string, machineId: string, options?: { input?: JsonObject; create?: boolean }): Promise<XStateSummary>;
  /** One commit; `options.id` is the dedupe key. */
  send(id: string, event: XStateEvent, options?: { id?: string }): Promise<XStateSendResult>;
  read(id: string): Promise<XStateSummary | null>;
  trace(id: string): Promise<TraceStep[]>;
  /** Fires every due delayed event at its deadline; how many fired. */
  sweep(options?: { now?: number; limit?: number }): Promise<number>;
  /** Delivers and acks the pending emitted events; how many. */
  relay(deliver: (entry: OutboxEntry) => unknown | Promise<unknown>, options?: { limit?: number }): Promise<number>;
  close(): Promise<void>;
  reopen(options?: OpfsOptions): Promise<void>;
  terminate(): void;
}
