// The wasm package's MonitorApi keeps the audit log and saved views in the store when the
// store is SQLite (sqliteMemory, sqliteFromBytes, OPFS: the SQLite adapter's own
// execstore_audit and execstore_views tables, what the in-browser and edge monitors serve),
// and in its own memory for a memory store. A second MonitorApi over the same store sees
// what the first recorded only in the first case.
// Run: node --test tests/js/  (needs `npm run build:wasm`)
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { MonitorApi, Store } from "execstore";

const TOKENS = [{ name: "ada", role: "admin", token: "adm1n" }];

function api() {
  return new MonitorApi({ tokens: TOKENS });
}

function call(monitor, store, method, path, body) {
  const answer = monitor.handle(store, method, path, "Bearer adm1n", body === undefined ? undefined : JSON.stringify(body));
  return { status: answer.status, body: JSON.parse(answer.body) };
}

function running(store) {
  store.save({ id: "run-1", definition_id: "order", version: 0, status: "RUNNING" });
}

describe("MonitorApi's operator records", () => {
  test("a SQLite store keeps them in its own tables: another MonitorApi reads them", () => {
    const store = Store.sqliteMemory();
    running(store);
    const first = api();
    const put = call(first, store, "PUT", "/api/views/Failed", { query: "status=FAILED", reason: "for the team" });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const done = call(first, store, "POST", "/api/executions/run-1/suspend", { reason: "hold it" });
    assert.equal(done.status, 200, JSON.stringify(done.body));

    const second = api();
    const views = call(second, store, "GET", "/api/views").body.items;
    assert.deepEqual(views.map((v) => [v.name, v.query, v.owner]), [["Failed", "status=FAILED", "ada"]]);
    const audit = call(second, store, "GET", "/api/audit").body.items;
    assert.deepEqual(audit.map((e) => [e.actor, e.action, e.target, e.outcome, e.reason]), [
      ["ada", "executions.suspend", "run-1", "ok", "hold it"],
      ["ada", "views.put", "Failed", "ok", "for the team"],
    ]);
    assert.equal(audit[0].note, null);
    store.close();
    assert.equal(call(second, store, "GET", "/api/audit").status, 503, "a closed store answers 503");
  });

  test("a memory store: each MonitorApi keeps its own, in memory", () => {
    const store = Store.memory();
    running(store);
    const first = api();
    assert.equal(call(first, store, "POST", "/api/executions/run-1/suspend", { reason: "hold it" }).status, 200);
    assert.equal(call(first, store, "GET", "/api/audit").body.items.length, 1);
    assert.deepEqual(call(api(), store, "GET", "/api/audit").body.items, [], "not in the store");
  });
});
