// The benchmark's browser side, in a dedicated worker (OPFS is synchronous only there): the
// same side-by-side run (core.mjs) on Store.openOpfs at synchronous full and normal, and on
// Store.sqliteMemory(). Posts {results} or {error}.

// Loaded dynamically so that `onmessage` is in place before the package's top-level await
// (the wasm download): a message that arrived earlier would be dropped.
const loading = Promise.all([import("execstore"), import("./core.mjs")]);

self.onmessage = async ({ data: { n, stores } }) => {
  try {
    const [{ Store }, { runSideBySide }] = await loading;
    const results = [];
    for (const kind of stores) {
      const name = `xstate-bench-${kind}-${Date.now()}`;
      const store = kind === "sqlite-memory"
        ? Store.sqliteMemory()
        : await Store.openOpfs(name, { synchronous: kind === "opfs-full" ? "full" : "normal" });
      results.push({ where: "chromium", store: kind, ...runSideBySide(store, { n }) });
      store.close?.();
    }
    self.postMessage({ results });
  } catch (error) {
    self.postMessage({ error: `${error?.code ?? ""} ${error?.message ?? error}` });
  }
};
