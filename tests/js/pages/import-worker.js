// A dedicated worker for import.test.mjs: runs Store.importOpfs scenarios on the bytes the
// page sends and answers what the store then holds (or the error, as a plain object).
const { Store } = await import("/node_modules/execstore/index.js");

function plain(error) {
  const out = { name: error.name, message: error.message };
  for (const key of Object.keys(error)) out[key] = error[key];
  return out;
}

/** What a store holds, in short. */
function summary(store) {
  const counts = store.statusCounts();
  return { total: Object.values(counts).reduce((a, b) => a + b, 0), outbox: store.pendingOutbox(null, 10000).length };
}

const ops = {
  async import({ name, bytes, options }) {
    const store = await Store.importOpfs(name, bytes, options);
    try {
      return { kind: store.kind, ...summary(store) };
    } finally {
      store.close();
    }
  },
  async open({ name, options }) {
    const store = await Store.openOpfs(name, options);
    try {
      return summary(store);
    } finally {
      store.close();
    }
  },
  async importThenWrite({ name, bytes }) {
    const store = await Store.importOpfs(name, bytes, { replace: true });
    try {
      const exe = { id: "written-after-import", definition_id: "orders", status: "RUNNING", version: 0 };
      store.commit(exe, { emits: [{ target_id: null, event: { id: "e-import", kind: "Imported" } }] });
      return summary(store);
    } finally {
      store.close();
    }
  },
};

self.onmessage = async ({ data }) => {
  try {
    self.postMessage({ id: data.id, ok: true, result: await ops[data.op](data) });
  } catch (error) {
    self.postMessage({ id: data.id, ok: false, error: plain(error) });
  }
};
self.postMessage({ ready: true });
