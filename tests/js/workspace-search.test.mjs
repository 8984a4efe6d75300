// `searchLog` and `searchRuns` of the npm package's WorkspaceStore (docs/search.md, "The
// workspace log and runs"): the matches, a bounded page and its cursor, the firing event of
// a run, and a bad query as an error with `code` INVALID_INPUT that changes nothing.
// Run: node --test tests/js/  (needs `npm run build:wasm`)
import assert from "node:assert/strict";
import { test } from "node:test";

import { WorkspaceStore } from "execstore";

const WS = { tenant_id: "shop", workspace_id: "main" };
const T0 = "2026-01-01T12:00:00Z";

function run(i) {
  return {
    id: `r${String(i).padStart(2, "0")}`, rule: "bill", scope_key: `k${i}`, scope: { customer: `c-${i % 3}` },
    fired_seq: 2 * i + 1, matched: [2 * i + 1], correlation_id: "c", depth: 0,
    status: i % 2 === 0 ? "dead" : "pending", attempts: 0, next_attempt_at: T0, created_at: T0, updated_at: T0,
    error: null, reason: null, checkpoint: null, step: null, checkpoints: 0, output: null, trace_ids: [], epoch: 0,
  };
}

async function filled() {
  const store = WorkspaceStore.memory();
  await store.transaction(WS, (tx) => {
    tx.append(Array.from({ length: 40 }, (_, k) => {
      const i = k + 1;
      return { id: `e${i}`, actor: { kind: "source", name: "m" }, event: { type: "shop:hit", service: i % 5 === 0 ? "auth" : "web", n: i } };
    }));
    tx.saveRuns(Array.from({ length: 12 }, (_, i) => run(i)));
  });
  return store;
}

test("searchLog: the events' fields, a bounded page, going on", async () => {
  const store = await filled();
  let page = store.searchLog(WS, { where: 'event.service = "auth"' });
  assert.deepEqual(page.items.map((e) => e.seq), [5, 10, 15, 20, 25, 30, 35, 40]);
  assert.deepEqual([page.scanned, page.scanned_to, page.next], [40, 40, null]);
  page = store.searchLog(WS, { where: "event.n > 10 and event.service = auth", scan: 12 });
  assert.deepEqual([page.items.length, page.scanned_to, page.next], [0, 12, 12]);
  page = store.searchLog(WS, { where: "event.n > 10 and event.service = auth", scan: 12, after_seq: page.next });
  assert.deepEqual([page.items.map((e) => e.seq), page.next], [[15, 20], 24]);
  page = store.searchLog(WS, { where: "event.service = auth", newest_first: true, limit: 2 });
  assert.deepEqual([page.items.map((e) => e.seq), page.next], [[40, 35], 35]);
});

test("searchRuns: scope, status, the firing event, the cursor", async () => {
  const store = await filled();
  assert.deepEqual(store.searchRuns(WS, { where: "scope.customer = c-0 and status = dead" }).items.map((r) => r.id), ["r06", "r00"]);
  // Fired by envelope 2i + 1: auth at 5 and 15 (i = 2, 7).
  assert.deepEqual(store.searchRuns(WS, { where: "event.service = auth" }).items.map((r) => r.id), ["r07", "r02"]);
  const first = store.searchRuns(WS, { where: "rule exists", scan: 5 });
  assert.equal(first.scanned, 5);
  const rest = store.searchRuns(WS, { where: "rule exists", cursor: first.next });
  assert.deepEqual([...first.items, ...rest.items].map((r) => r.id), Array.from({ length: 12 }, (_, i) => `r${String(11 - i).padStart(2, "0")}`));
});

test("a bad query is INVALID_INPUT naming the position, and changes nothing", async () => {
  const store = await filled();
  const before = JSON.stringify(store.read(WS));
  for (const [call, says] of [
    [() => store.searchLog(WS, { where: "event.service =" }), /at character 16/],
    [() => store.searchLog(WS, { where: "status = running" }), /unknown path status/],
    [() => store.searchRuns(WS, { where: "status = sleeping" }), /none of/],
    [() => store.searchLog(WS, {}), /where/],
    [() => store.searchLog(WS, { where: "seq > 0", scan: 0 }), /scan/],
  ]) {
    let error = null;
    try { call(); } catch (e) { error = e; }
    assert.ok(error, `${call} threw`);
    assert.equal(error.code, "INVALID_INPUT");
    assert.match(error.message, says);
  }
  assert.equal(JSON.stringify(store.read(WS)), before);
});
