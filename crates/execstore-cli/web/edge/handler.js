// The execstore monitor at the edge: a standard `fetch(request) -> Response` handler (an ES
// module, no Node APIs) that serves the monitor's JSON API and its UI over the wasm store.
//
// The API is the wasm package's `MonitorApi`: the very code of the native `execstore
// monitor` (crates/execstore-monitor-api), so routes, parameters, errors and JSON shapes
// are the same (README.md, "Monitor"). The store lives in the isolate's memory: a SQLite
// store file's bytes given at start, or any `Store` you pass. Like `execstore monitor --db F`,
// it serves whatever the file holds: executions (harel's tables, `Store.sqliteFromBytes`), a
// workspace log (reflexr's tables, `WorkspaceImage.fromBytes`, always read-only), or both;
// the endpoints of what it does not hold answer 404 saying so, and `/api/info`'s `holds`
// says which. A file that holds both is two copies in memory (one per SQLite connection).
//
//   import * as execstore from "execstore";
//   import { createHandler } from "./web/edge/handler.js";
//   const handler = createHandler({ execstore, bytes: storeFileBytes, label: "demo.db" });
//   export default { fetch: handler };          // Workers, Deno, Bun, Node's own server...
//
// Read-only unless `token` is given (then writes need `Authorization: Bearer <token>`, and
// change only the in-memory copy).

/** The UI's shell files (web/), by URL path: the same set the native server embeds, beside
 * every view's module (`/views/<name>.js`, see VIEW_PATH). */
const FILES = {
  "/": ["index.html", "text/html; charset=utf-8"],
  "/app.js": ["app.js", "text/javascript; charset=utf-8"],
  "/api.js": ["api.js", "text/javascript; charset=utf-8"],
  "/dom.js": ["dom.js", "text/javascript; charset=utf-8"],
  "/format.js": ["format.js", "text/javascript; charset=utf-8"],
  "/records.js": ["records.js", "text/javascript; charset=utf-8"],
  "/route.js": ["route.js", "text/javascript; charset=utf-8"],
  "/shell.js": ["shell.js", "text/javascript; charset=utf-8"],
  "/graph.js": ["graph.js", "text/javascript; charset=utf-8"],
  "/filters.js": ["filters.js", "text/javascript; charset=utf-8"],
  "/where.js": ["where.js", "text/javascript; charset=utf-8"],
  "/actions.js": ["actions.js", "text/javascript; charset=utf-8"],
  "/reason.js": ["reason.js", "text/javascript; charset=utf-8"],
  "/audit.js": ["audit.js", "text/javascript; charset=utf-8"],
  "/saved-views.js": ["saved-views.js", "text/javascript; charset=utf-8"],
  "/recover.js": ["recover.js", "text/javascript; charset=utf-8"],
  "/vendor/dagre.esm.js": ["vendor/dagre.esm.js", "text/javascript; charset=utf-8"],
  "/vendor/uPlot.esm.js": ["vendor/uPlot.esm.js", "text/javascript; charset=utf-8"],
  "/vendor/uPlot.min.css": ["vendor/uPlot.min.css", "text/css; charset=utf-8"],
  "/style.css": ["style.css", "text/css; charset=utf-8"],
  "/favicon.svg": ["favicon.svg", "image/svg+xml"],
};

/** A view's module: any `web/views/*.js` there is, as the native server embeds them all. */
const VIEW_PATH = /^\/views\/[a-z][a-z0-9-]*\.js$/;

/** The headers every answer carries, as the native server's (see its security_headers). */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/**
 * Loads a UI file by name ("index.html", "app.js"...) from beside this module (`web/`), by
 * `fetch` of its URL: where the runtime or its bundler can (Deno, Bun, workers with
 * bundled assets). Elsewhere (Node), pass `files`.
 */
async function fetchBeside(name) {
  const response = await fetch(new URL(`../${name}`, import.meta.url));
  return response.ok ? await response.arrayBuffer() : null;
}

/** Whether `error` says the file lacks the tables of one contract (so it holds the other). */
function lacksTables(error, what) {
  return error?.code === "NOT_FOUND" && error.what === what;
}

/**
 * Opens what a store file's bytes hold, as `execstore monitor --db F` does: its workspace
 * log (read-only) if it has reflexr's tables; its executions if it has harel's tables under
 * `prefix`, or if it has neither (then the execution store's own error says what is wrong,
 * or, writable, it makes its tables in the copy). Writable (a token): only the executions.
 */
function openBytes(execstore, bytes, { wal, prefix, writable }) {
  let workspaces = null;
  if (execstore.WorkspaceImage) {
    try {
      workspaces = execstore.WorkspaceImage.fromBytes(bytes, { wal });
    } catch (error) {
      if (!lacksTables(error, "reflexr tables")) throw error;
    }
  }
  const open = (readOnly) => execstore.Store.sqliteFromBytes(bytes, { prefix, wal, readOnly });
  if (!workspaces) return { store: open(!writable), workspaces };
  let store;
  try {
    store = open(true);
  } catch (error) {
    if (lacksTables(error, "table")) return { store: null, workspaces };
    workspaces.close();
    throw error;
  }
  if (writable) {
    store.close();
    store = open(false);
  }
  return { store, workspaces };
}

/**
 * Makes the handler.
 *
 * @param {object} options
 * @param {object} options.execstore  the loaded `execstore` package (`import * as execstore from "execstore"`)
 * @param {Uint8Array|ArrayBuffer} [options.bytes]  a SQLite store file to serve (a copy is kept in memory)
 * @param {Uint8Array|ArrayBuffer} [options.wal]  its `-wal` sidecar, if it has one with content
 * @param {string} [options.prefix]  the table prefix (default: the one set of execution tables the
 *   file holds, `harel_*` for harel's files; several: an error listing them)
 * @param {object} [options.store]  a `Store` to serve instead of `bytes` (default: an empty `Store.memory()`)
 * @param {object} [options.workspaces]  a `WorkspaceImage` to serve beside `options.store`
 * @param {string} [options.token]  allows writes to requests with `Authorization: Bearer <token>`
 * @param {{name: string, role: string, token: string}[]} [options.tokens]  named tokens with roles
 *   instead of `token` (docs/operators.md); the audit log and saved views are kept in the served
 *   SQLite store's own tables (with `bytes`: in the in-memory copy), in memory for a memory store
 * @param {string} [options.label]  what the UI shows as the store
 * @param {(name: string) => Promise<string|Uint8Array|ArrayBuffer|null>} [options.files]  loads a UI file by name
 * @returns {(request: Request) => Promise<Response>}
 */
export function createHandler(options) {
  const { execstore, bytes, wal, prefix, token, tokens, files = fetchBeside } = options;
  if (!execstore || !execstore.Store || !execstore.MonitorApi) {
    throw new TypeError("createHandler needs options.execstore, the loaded `execstore` package");
  }
  let store = options.store ?? null;
  let workspaces = options.workspaces ?? null;
  let backend = "memory";
  if (!store && bytes) {
    ({ store, workspaces } = openBytes(execstore, bytes, { wal, prefix, writable: Boolean(token || (tokens && tokens.length)) }));
    backend = "sqlite";
  } else if (store) {
    backend = store.kind === "memory" ? "memory" : "sqlite";
  } else if (workspaces) {
    backend = "sqlite";
  } else {
    store = execstore.Store.memory();
  }
  const api = new execstore.MonitorApi({
    store: options.label ?? (bytes ? "store file (in memory)" : store?.kind ?? "workspace image"),
    backend,
    // The prefix the store opened (sqliteFromBytes finds it in the file when none is given).
    prefix: store?.prefix ?? prefix ?? null,
    ...(token !== undefined ? { token } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
  });
  const cache = new Map();

  async function file(path) {
    const [name, type] = Object.hasOwn(FILES, path) ? FILES[path] : [path.slice(1), "text/javascript; charset=utf-8"];
    // A view that is not there is a 404, whether the loader answers null or fails.
    if (!cache.has(name)) cache.set(name, Promise.resolve(files(name)).catch(() => null));
    const body = await cache.get(name);
    if (body === null || body === undefined) return null;
    return { body, type };
  }

  function respond(status, body, headers, method) {
    return new Response(method === "HEAD" ? null : body, {
      status,
      headers: { ...SECURITY_HEADERS, ...headers },
    });
  }

  return async function handle(request) {
    const url = new URL(request.url);
    const method = request.method.toUpperCase();
    if (url.pathname.startsWith("/api/")) {
      const target = url.pathname + url.search;
      const authorization = request.headers.get("authorization");
      const sent = method === "GET" || method === "HEAD" ? null : await request.text();
      const { status, body } = !workspaces
        ? api.handle(store, method, target, authorization, sent)
        : store
          ? api.handleBoth(store, workspaces, method, target, authorization, sent)
          : api.handleWorkspaces(workspaces, method, target, authorization, sent);
      return respond(status, body, { "content-type": "application/json", "cache-control": "no-store" }, method);
    }
    if ((Object.hasOwn(FILES, url.pathname) || VIEW_PATH.test(url.pathname)) && (method === "GET" || method === "HEAD")) {
      const found = await file(url.pathname);
      if (found) return respond(200, found.body, { "content-type": found.type, "cache-control": "no-cache" }, method);
    }
    return respond(404, "not found", { "content-type": "text/plain; charset=utf-8" }, method);
  };
}
