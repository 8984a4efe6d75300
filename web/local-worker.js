// The in-browser monitor's dedicated worker (started by local.js): it owns the OPFS store
// the user imported and answers the UI's API requests with the package's `MonitorApi`, the
// same code as the native server's. Messages in (each answered in order, with its `id`):
//   {op: "open", packageUrl, name, prefix, label}          open the store imported earlier
//   {op: "import", packageUrl, name, bytes, wal, prefix, label}   import a file, then open it
//   {op: "api", method, target, authorization}              one API request -> {status, body}
// Messages out: {id, ok: true, result} | {id, ok: false, error} (the error as a plain object,
// so its `code` and fields survive the structured clone).

let pkg = null;
let store = null;
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

function closeStore() {
  store?.close();
  store = null;
  api = null;
}

/** Read-only: the page never writes (no token), and the store is opened for reading. */
function monitorApi(MonitorApi, message) {
  return new MonitorApi({ store: message.label || message.name, backend: "opfs", prefix: message.prefix || null });
}

async function run(message) {
  switch (message.op) {
    case "open": {
      const { Store, MonitorApi } = await load(message.packageUrl);
      closeStore();
      store = await Store.openOpfs(message.name, { readOnly: true, prefix: message.prefix || undefined, waitMs: 10000 });
      api = monitorApi(MonitorApi, message);
      return { kind: store.kind };
    }
    case "import": {
      const { Store, MonitorApi } = await load(message.packageUrl);
      closeStore();
      const started = performance.now();
      store = await Store.importOpfs(message.name, message.bytes, {
        readOnly: true, replace: true, waitMs: 10000, prefix: message.prefix || undefined, wal: message.wal || undefined,
      });
      api = monitorApi(MonitorApi, message);
      return { kind: store.kind, importMs: performance.now() - started };
    }
    case "api":
      if (store === null) {
        const body = { error: { code: "BACKEND", message: "no store is open in this page: import a store file" } };
        return { status: 503, body: JSON.stringify(body) };
      }
      return api.handle(store, message.method, message.target, message.authorization ?? null);
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
