// Compiles under `tsc --strict` against the package's declarations (tests/js/types.test.mjs).
import { Store } from "execstore";
import type { BatchOutcome, Execution, ExecutionPage, StoreError } from "execstore";
import { openOpfs, type OpfsStoreClient } from "execstore/client";

const store: Store = Store.sqliteMemory({ traceMax: 10, prefix: "harel" });
const exe = { id: "a", definition_id: "d", version: 0, context: { n: 1 } };
const seqs: number[] = store.commit(exe, {
  emits: [{ target_id: null, event: { id: "e", kind: "K", data: { x: [1, "y", null] } } }],
  timers: [{ action: "schedule", path: "p", fire_at: 1 }, { action: "cancel", path: "q" }],
  processed_event_id: "in",
});
const loaded: Execution | null = store.load("a");
if (loaded !== null) {
  loaded.status = "DONE";
  const version: number = store.save(loaded);
  void version;
}
const page: ExecutionPage = store.listExecutions({ status: ["RUNNING"], limit: 5, cursor: null });
const outcomes: BatchOutcome[] = store.commitBatch([{ execution: exe }]);
for (const outcome of outcomes) {
  if (!outcome.ok && outcome.error.code === "CONFLICT") {
    const found: number | null = outcome.error.found;
    void found;
  }
}
try {
  store.ackOutbox(seqs[0]);
} catch (e) {
  const error = e as StoreError;
  if (error.code === "INVALID_INPUT") {
    const field: string = error.field;
    void field;
  }
}
const counts: number = store.statusCounts().RUNNING;

async function client(): Promise<void> {
  const remote: OpfsStoreClient = await openOpfs("orders", { waitMs: 0, synchronous: "normal" });
  const remoteSeqs: number[] = await remote.commit({ id: "b", definition_id: "d" });
  const remotePage: ExecutionPage = await remote.listExecutions();
  await remote.close();
  void remoteSeqs;
  void remotePage;
}
void page;
void counts;
void client;
