// `import { serveXState } from "execstore/xstate-worker"`, in a dedicated module worker.
import type { AnyStateMachine } from "xstate";
import type { PersistedSnapshot, MigrationInfo } from "./xstate.js";

/** One served machine: its version and, optionally, the migration of older snapshots. */
export interface ServedMachine {
  machine: AnyStateMachine;
  version: string;
  migrate?: (snapshot: PersistedSnapshot, info: MigrationInfo) => PersistedSnapshot;
}

/** Answers `execstore/xstate-client`'s requests for these machines (by machine id). */
export function serveXState(options: {
  machines: { [machineId: string]: ServedMachine } | Map<string, ServedMachine>;
  /** The actors' clock in ms (default `Date.now`). */
  now?: () => number;
}): void;
