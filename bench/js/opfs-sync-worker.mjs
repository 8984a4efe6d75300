// A dedicated worker for bench/compare-opfs: W1 phases 0 and 1 (w1-workload.mjs: load,
// isProcessed, mutate, commit; one transaction per step) on a fresh execstore OPFS store
// opened with `synchronous` ("full" or "normal"). Answers {result} or {error}.
const loading = Promise.all([import("/node_modules/execstore/index.js"), import("./w1-workload.mjs")]);

self.onmessage = async ({ data: params }) => {
  try {
    const t0 = performance.now();
    const [{ Store }, { w1 }] = await loading;
    const name = `w1-${params.synchronous}-${Date.now()}`;
    const store = await Store.openOpfs(name, { synchronous: params.synchronous });
    const openMs = performance.now() - t0;
    let result;
    try {
      result = w1(store, params);
    } finally {
      store.close();
    }
    self.postMessage({
      result: {
        impl: `execstore-opfs-${params.synchronous}`,
        synchronous: params.synchronous,
        ...result,
        open_ms: Math.round(openMs * 10) / 10,
        cross_origin_isolated: globalThis.crossOriginIsolated === true,
      },
    });
  } catch (error) {
    self.postMessage({ error: String(error?.stack ?? error) });
  }
};
