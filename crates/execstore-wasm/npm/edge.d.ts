// `import { createHandler } from "execstore/edge"`: the execstore monitor (its JSON API and
// its UI) as a standard `fetch(request) -> Response` handler, over a store in memory.
import type { MonitorApiToken, Store, WorkspaceImage } from "./index.js";

/** Options of `createHandler`. */
export interface EdgeHandlerOptions {
  /** The loaded package: `import * as execstore from "execstore"`. */
  execstore: typeof import("./index.js");
  /** A SQLite store file's bytes to serve (a copy is kept in memory; the file is never written). */
  bytes?: Uint8Array | ArrayBuffer;
  /** The bytes of its `-wal` sidecar, if it has one with content. */
  wal?: Uint8Array | ArrayBuffer;
  /** The table prefix (`"harel"` for harel's files). */
  prefix?: string;
  /** A `Store` to serve instead of `bytes` (default: an empty `Store.memory()`). */
  store?: Store;
  /** A `WorkspaceImage` (a file's workspace log, read-only) to serve beside `store`. */
  workspaces?: WorkspaceImage;
  /** Allows writes to requests with `Authorization: Bearer <token>`; none: read-only. */
  token?: string;
  /** Named tokens with roles, instead of `token`. */
  tokens?: MonitorApiToken[];
  /** What the UI shows as the store. */
  label?: string;
  /** Loads a UI file by name (`"index.html"`, `"views/executions.js"`...); `null`: a 404.
   * Default: `fetch` of the file beside the handler, where the runtime can (Deno, Bun). */
  files?: (name: string) => Promise<string | Uint8Array | ArrayBuffer | null> | string | Uint8Array | ArrayBuffer | null;
}

/** Makes the handler: `/api/...` answered by `MonitorApi`, the monitor's UI files by `files`. */
export function createHandler(options: EdgeHandlerOptions): (request: Request) => Promise<Response>;
