// A dedicated worker for bench/compare-opfs: W1 phases 0 and 1 (w1-workload.mjs: load,
// isProcessed, mutate, commit; one transaction per step) on a fresh execstore store:
//
//   params.store "full" | "normal"   an OPFS store, Store.openOpfs(name, {synchronous})
//   params.store "sqlite-memory"     the same SQLite store in the worker's wasm memory
//                                    (Store.sqliteMemory()): no OPFS at all
//   params.store "memory"            Store.memory(): the core without SQLite
//
// It counts the OPFS access-handle calls made during phase 1 (FileSystemSyncAccessHandle's
// write, read, getSize, truncate, flush: calls, milliseconds inside them, bytes written),
// wrapping the prototype's methods before any store opens, so the figures split an OPFS
// event's time into the browser's file work and the rest. Answers {result} or {error}.
const loading = Promise.all([import("/node_modules/execstore/index.js"), import("./w1-workload.mjs")]);

const METHODS = ["write", "read", "getSize", "truncate", "flush"];
const calls = Object.fromEntries(METHODS.map((m) => [m, { n: 0, ms: 0, bytes: 0 }]));
let counting = false;
for (const method of METHODS) {
  const original = FileSystemSyncAccessHandle.prototype[method];
  FileSystemSyncAccessHandle.prototype[method] = function (...args) {
    if (!counting) return original.apply(this, args);
    const t = performance.now();
    try {
      return original.apply(this, args);
    } finally {
      const c = calls[method];
      c.n++;
      c.ms += performance.now() - t;
      if (method === "write") c.bytes += args[0].byteLength;
    }
  };
}

async function open(Store, params) {
  if (params.store === "memory") return Store.memory();
  if (params.store === "sqlite-memory") return Store.sqliteMemory();
  return Store.openOpfs(`w1-${params.store}-${Date.now()}`, { synchronous: params.store });
}

self.onmessage = async ({ data: params }) => {
  try {
    const t0 = performance.now();
    const [{ Store }, { w1 }] = await loading;
    const store = await open(Store, params);
    const openMs = performance.now() - t0;
    let result;
    try {
      // Phase 0 (the saves) runs uncounted, as a first round would; phase 1 is counted.
      result = w1(store, { ...params, onPhase1: () => (counting = true) });
    } finally {
      counting = false;
      store.close();
    }
    const events = params.executions * params.events;
    const round = (x) => Math.round(x * 10) / 10;
    self.postMessage({
      result: {
        impl: params.store.includes("memory") ? `execstore-${params.store}` : `execstore-opfs-${params.store}`,
        synchronous: params.store.includes("memory") ? null : params.store,
        ...result,
        opfs_calls_per_event: round(METHODS.reduce((sum, m) => sum + calls[m].n, 0) / events),
        opfs_us_per_event: round((METHODS.reduce((sum, m) => sum + calls[m].ms, 0) * 1000) / events),
        opfs_write_kib_per_event: round(calls.write.bytes / 1024 / events),
        opfs_calls: Object.fromEntries(METHODS.map((m) => [m, { n: calls[m].n, ms: round(calls[m].ms), bytes: calls[m].bytes }])),
        open_ms: round(openMs),
        cross_origin_isolated: globalThis.crossOriginIsolated === true,
      },
    });
  } catch (error) {
    self.postMessage({ error: String(error?.stack ?? error) });
  }
};
