// Definition documents through the npm package: Store.putDefinition / getDefinition on each
// kind of store, execstore/xstate keeping the machine's definition with an execution's first
// commit (once per version, a changed definition under the same version refused), and the
// chart the monitor API (MonitorApi: the edge and in-browser monitors) draws from it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";

import { MonitorApi, Store } from "execstore";
import { createDurableActor, definitionJson } from "execstore/xstate";
import { createMachine } from "xstate";

import { order } from "../browser/xstate-order.mjs";
import { tempDir } from "./native.mjs";

const kinds = {
  memory: () => Store.memory(),
  sqliteMemory: () => Store.sqliteMemory(),
};

describe("Store.putDefinition / getDefinition", () => {
  for (const [kind, open] of Object.entries(kinds)) {
    test(`${kind}: kept once per (id, fqn); equal again changes nothing; different refused`, () => {
      const store = open();
      assert.equal(store.capabilities().definitions, true);
      assert.equal(store.getDefinition("m", "m@1"), null);
      const doc = { id: "m", states: { a: {}, "<b>": { type: "final" } } };
      assert.equal(store.putDefinition("m", "m@1", doc, 10.5), true);
      assert.deepEqual(store.getDefinition("m", "m@1"), { definition_id: "m", definition_fqn: "m@1", document: doc, first_seen: 10.5 });
      // The same JSON, keys in another order, later: nothing changes.
      assert.equal(store.putDefinition("m", "m@1", { states: doc.states, id: "m" }, 99), false);
      assert.equal(store.getDefinition("m", "m@1").first_seen, 10.5);
      assert.throws(() => store.putDefinition("m", "m@1", { id: "m", states: {} }, 11), (e) => e.code === "ALREADY_EXISTS");
      assert.deepEqual(store.getDefinition("m", "m@1").document, doc);
      for (const bad of [["", "f", {}, 1], ["m", "", {}, 1], ["m", "f", {}, Number.NaN], ["m", "f", undefined, 1]]) {
        assert.throws(() => store.putDefinition(...bad), (e) => e.code === "INVALID_INPUT", JSON.stringify(bad));
      }
      assert.equal(store.getDefinition("m", "f"), null);
    });
  }
});

describe("execstore/xstate keeps the definition", () => {
  test("with the first commit, once per version; a changed definition under the same version is refused", () => {
    const store = Store.sqliteMemory();
    let now = 1_700_000_000_000;
    const clock = { now: () => now };
    const a = createDurableActor(store, order, { id: "o-1", version: "1", ...clock });
    const kept = store.getDefinition("order", "order@1");
    assert.deepEqual(kept.document, definitionJson(order));
    assert.equal(kept.first_seen, now / 1000);
    // `always` is in it (XState's own `definition` leaves it out).
    assert.equal(kept.document.states.checking.always.length, 2);
    a.send({ type: "CHECKOUT" });
    now += 5000;
    createDurableActor(store, order, { id: "o-2", version: "1", ...clock });
    assert.equal(store.getDefinition("order", "order@1").first_seen, 1_700_000_000, "the first time stays");
    // Another machine under the same id and version: refused, nothing committed.
    const changed = createMachine({ id: "order", initial: "x", states: { x: {} } });
    const other = Store.sqliteMemory();
    other.putDefinition("order", "order@1", definitionJson(order), 1);
    assert.throws(() => createDurableActor(other, changed, { id: "o-3", version: "1" }), (e) => e.code === "ALREADY_EXISTS");
    assert.equal(other.load("o-3"), null, "nothing committed");
    // A new version is a new document.
    createDurableActor(other, changed, { id: "o-4", version: "2" });
    assert.deepEqual(other.getDefinition("order", "order@2").document, definitionJson(changed));
  });

  test("a file store keeps it across a reopen, and the monitor API draws the chart from it", async (t) => {
    const tmp = tempDir();
    t.after(tmp.cleanup);
    const path = join(tmp.dir, "x.db");
    let store = await Store.openFile(path);
    const a = createDurableActor(store, order, { id: "o-1", version: "1" });
    for (const type of ["ADD", "CHECKOUT", "SWITCH"]) a.send({ type });
    store.close();
    store = await Store.openFile(path);
    const api = new MonitorApi({});
    const res = api.handle(store, "GET", "/api/executions/o-1/chart");
    assert.equal(res.status, 200, res.body);
    const body = JSON.parse(res.body);
    assert.equal(body.source, "document");
    const active = body.chart.nodes.filter((n) => n.active).map((n) => n.id);
    assert.deepEqual(active, ["order", "order.paying", "order.paying.wallet"]);
    const checkout = body.chart.edges.find((e) => e.from === "order.cart" && e.event === "CHECKOUT");
    assert.equal(checkout.count, 1);
    const def = JSON.parse(api.handle(store, "GET", "/api/definitions/order/chart").body);
    assert.equal(def.definition_fqn, "order@1");
    assert.deepEqual(def.chart.nodes.map((n) => n.id), body.chart.nodes.map((n) => n.id));
    store.close();
  });
});
