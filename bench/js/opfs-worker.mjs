// W1 in a dedicated worker: the npm package's Store over OPFS (one commit per step, then one
// commitBatch per round, each on a fresh store) and over SQLite in wasm memory.
const loading = Promise.all([import("/node_modules/execstore/index.js"), import("./w1-workload.mjs")]);

self.onmessage = async ({ data: params }) => {
  try {
    const [{ Store }, { w1 }] = await loading;
    const where = `chromium ${navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1] ?? "?"}`;
    const results = [];
    for (const batch of [false, true]) {
      const store = await Store.openOpfs(`w1-${batch ? "batch" : "single"}-${Date.now()}`);
      results.push({ impl: "wasm-opfs-sahpool", where, ...w1(store, { ...params, batch }) });
      store.close();
    }
    results.push({ impl: "wasm-sqlite-memory", where, ...w1(Store.sqliteMemory(), params) });
    self.postMessage({ results });
  } catch (error) {
    self.postMessage({ error: String(error?.stack ?? error) });
  }
};
