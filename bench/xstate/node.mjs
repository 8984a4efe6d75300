// The benchmark's Node side: Store.openFile (a fresh file, synchronous full and normal) and
// Store.sqliteMemory(). Prints one JSON line per store.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Store } from "execstore";

import { runSideBySide } from "./core.mjs";

export async function runNode({ n, stores = ["file-full", "file-normal", "sqlite-memory"] }) {
  const results = [];
  for (const kind of stores) {
    const dir = mkdtempSync(join(tmpdir(), "execstore-xstate-bench-"));
    try {
      const store = kind === "sqlite-memory"
        ? Store.sqliteMemory()
        : await Store.openFile(join(dir, "bench.db"), { synchronous: kind === "file-full" ? "full" : "normal" });
      const result = { where: "node", store: kind, ...runSideBySide(store, { n }) };
      store.close?.();
      results.push(result);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return results;
}
