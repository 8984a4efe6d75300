// The in-browser monitor's dedicated worker (started by local.js): it holds the store file the
// user imported and answers the UI's API requests with the package's `MonitorApi`, the same
// code as the native server's. Like `execstore monitor --db F`, it serves whatever the file
// holds: executions (harel's tables), a workspace log (reflexr's tables), or both.
//
// Where each part lives (a file opened through SQLite's OPFS VFS, sahpool, serves one
// connection, which the execution store holds; so the workspace log is read elsewhere):
// - the executions: the OPFS store `name` (`Store.importOpfs`, then `Store.openOpfs` after a
//   reload), read in place;
// - the workspace log: the file's bytes (and its -wal sidecar's) kept as plain OPFS files
//   (`execstore-monitor-images/<name>.db`, `...db-wal`), read from a read-only copy in wasm
//   memory (`WorkspaceImage.fromBytes`, SQLite's memvfs), made at import and again at each
//   reopen. It costs the file's size in memory; the page never writes, so the copy never
//   goes stale. A file with both is stored twice in OPFS (the store, and the bytes).
//
// Metrics: the API keeps a ring of samples (`MonitorApi` with `metrics`), and this worker
// takes one every `metricsPeriod` seconds (default 10) of whatever is open, as the native
// monitor's sampler does on the server, so `/api/metrics` answers the ring (`live: true`) and
// the Metrics view charts the trends since the page opened the store.
//
// Messages in (each answered in order, with its `id`):
//   {op: "open", packageUrl, name, prefix, label, holds, metricsPeriod}       reopen what was imported earlier
//   {op: "import", packageUrl, name, bytes, wal, prefix, label, metricsPeriod}   import a file, then open it
//   {op: "api", method, target, authorization}              one API request -> {status, body}
// Messages out: {id, ok: true, result} | {id, ok: false, error} (the error as a plain object,
// so its `code` and fields survive the structured clone). `open` and `import` answer
// `{kind, holds: {executions, workspaces}}`.

/** The OPFS directory of the workspace images' bytes (beside sahpool's `execstore/`). */
const IMAGES_DIR = "execstore-monitor-images";
/** Seconds between two metrics samples unless the page asks otherwise (the native default). */
const METRICS_PERIOD = 10;

let pkg = null;
let store = null;
let workspaces = null;
let api = null;

async function load(packageUrl) {
  pkg ??= await import(packageUrl);
  return pkg;
}

function plain(error) {
  if (error === null || typeof error !== "object") return { name: "Error", message: String(error) };
  const out = { name: error.name ?? "Error", message: String(error.message ?? error) };
  for (const key of Object.keys(error)) out[key] = error[key];
  return out;
}

/** The metrics sampler's interval, while a store is open. */
let sampler = null;

function closeStores() {
  clearInterval(sampler);
  sampler = null;
  store?.close();
  workspaces?.close();
  store = null;
  workspaces = null;
  api = null;
}

const lacks = (error, what) => error?.code === "NOT_FOUND" && error.what === what;

/** Read-only: the page never writes (no token), and the store is opened for reading. */
function monitorApi(MonitorApi, message) {
  const periodSeconds = Number(message.metricsPeriod) || METRICS_PERIOD;
  // The prefix the store opened (found in the file when none was chosen).
  const prefix = store?.prefix ?? (message.prefix || null);
  return new MonitorApi({ store: message.label || message.name, backend: "opfs", prefix, metrics: { periodSeconds } });
}

/** Takes a metrics sample of what is open into the API's ring (a failed read: the next one tries again). */
function sample() {
  if (api === null) return;
  try {
    if (store && workspaces) api.sampleMetricsBoth(store, workspaces);
    else if (store) api.sampleMetrics(store);
    else if (workspaces) api.sampleMetricsWorkspaces(workspaces);
  } catch (error) {
    console.warn(`execstore monitor: a metrics sample failed: ${error?.message ?? error}`);
  }
}

/** Samples now and every period from now on, each in turn with the requests (the queue). */
function startSampler() {
  clearInterval(sampler);
  const period = api?.metricsPeriod;
  if (!period) return;
  sample();
  sampler = setInterval(() => {
    queue = queue.then(sample);
  }, period * 1000);
}

async function imagesDir() {
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle(IMAGES_DIR, { create: true });
}

/** Writes `bytes` to the OPFS file `name` of the images directory (`null`: removes it). */
async function putFile(dir, name, bytes) {
  if (!bytes) {
    await dir.removeEntry(name).catch(() => {});
    return;
  }
  const handle = await dir.getFileHandle(name, { create: true });
  const access = await handle.createSyncAccessHandle();
  try {
    access.truncate(0);
    access.write(new Uint8Array(bytes), { at: 0 });
    access.flush();
  } finally {
    access.close();
  }
}

async function getFile(dir, name) {
  try {
    const file = await (await dir.getFileHandle(name)).getFile();
    return new Uint8Array(await file.arrayBuffer());
  } catch (error) {
    if (error?.name === "NotFoundError") return null;
    throw error;
  }
}

function holds() {
  return { executions: store !== null, workspaces: workspaces !== null };
}

async function run(message) {
  switch (message.op) {
    case "open": {
      const { Store, MonitorApi, WorkspaceImage } = await load(message.packageUrl);
      closeStores();
      // Earlier imports (before workspaces were served) recorded no `holds`: executions.
      const want = message.holds ?? { executions: true, workspaces: false };
      if (want.executions) {
        store = await Store.openOpfs(message.name, { readOnly: true, prefix: message.prefix || undefined, waitMs: 10000 });
      }
      if (want.workspaces) {
        const dir = await imagesDir();
        const bytes = await getFile(dir, `${message.name}.db`);
        if (!bytes) throw Object.assign(new Error("the imported file's workspace log is gone from this browser's storage: import the file again"), { code: "NOT_FOUND" });
        workspaces = WorkspaceImage.fromBytes(bytes, { wal: await getFile(dir, `${message.name}.db-wal`) });
      }
      api = monitorApi(MonitorApi, message);
      startSampler();
      return { kind: store?.kind ?? "memory", holds: holds() };
    }
    case "import": {
      const { Store, MonitorApi, WorkspaceImage } = await load(message.packageUrl);
      // Checked before anything is replaced: a file that is neither store changes nothing.
      let image = null;
      try {
        image = WorkspaceImage.fromBytes(message.bytes, { wal: message.wal || undefined });
      } catch (error) {
        if (!lacks(error, "reflexr tables")) throw error;
      }
      closeStores();
      const started = performance.now();
      try {
        store = await Store.importOpfs(message.name, message.bytes, {
          readOnly: true, replace: true, waitMs: 10000, prefix: message.prefix || undefined, wal: message.wal || undefined,
        });
      } catch (error) {
        // A reflexr user's database: no execution tables, only the workspace log.
        if (!(image && lacks(error, "table"))) {
          image?.close();
          throw error;
        }
      }
      const dir = await imagesDir();
      await putFile(dir, `${message.name}.db`, image ? message.bytes : null);
      await putFile(dir, `${message.name}.db-wal`, image ? message.wal : null);
      workspaces = image;
      api = monitorApi(MonitorApi, message);
      startSampler();
      return { kind: store?.kind ?? "memory", holds: holds(), prefix: store?.prefix ?? null, importMs: performance.now() - started };
    }
    case "api": {
      if (api === null) {
        const body = { error: { code: "BACKEND", message: "no store is open in this page: import a store file" } };
        return { status: 503, body: JSON.stringify(body) };
      }
      const { method, target } = message;
      const authorization = message.authorization ?? null;
      const body = message.body ?? null;
      if (!workspaces) return api.handle(store, method, target, authorization, body);
      if (!store) return api.handleWorkspaces(workspaces, method, target, authorization, body);
      return api.handleBoth(store, workspaces, method, target, authorization, body);
    }
    default:
      throw new Error(`unknown op ${message.op}`);
  }
}

let queue = Promise.resolve();
self.onmessage = (event) => {
  const message = event.data;
  queue = queue.then(async () => {
    try {
      self.postMessage({ id: message.id, ok: true, result: await run(message) });
    } catch (error) {
      self.postMessage({ id: message.id, ok: false, error: plain(error) });
    }
  });
};
