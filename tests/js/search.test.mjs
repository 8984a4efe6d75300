// The npm package's search: `listExecutions({ where })` and the search attributes
// (declareAttribute, attributes, dropAttribute) on the memory and SQLite stores; a bad query
// is an INVALID_INPUT error naming the character. Run: node --test tests/js/
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Store } from "execstore";

const BACKENDS = [
  ["memory", () => Store.memory()],
  ["sqlite", () => Store.sqliteMemory()],
];

function fill(store) {
  for (let i = 0; i < 8; i++) {
    store.save({
      id: `s${i}`,
      definition_id: "orders",
      status: i % 2 ? "DONE" : "RUNNING",
      context: { customer: `c-${i % 3}`, total: i * 10 },
      version: 0,
    });
  }
}

const ids = (page) => page.items.map((s) => s.id);

for (const [name, open] of BACKENDS) {
  describe(`search on ${name}`, () => {
    test("where filters with the other filters and names its scan", () => {
      const store = open();
      fill(store);
      const page = store.listExecutions({ where: 'context.customer = "c-1"' });
      assert.deepEqual(ids(page), ["s1", "s4", "s7"]);
      assert.deepEqual(page.scan, ["context.customer"]);
      assert.deepEqual(ids(store.listExecutions({ status: ["DONE"], where: "context.total >= 30" })), ["s3", "s5", "s7"]);
      let error;
      try {
        store.listExecutions({ where: "context.customer =" });
      } catch (e) {
        error = e;
      }
      assert.equal(error?.code, "INVALID_INPUT");
      assert.match(error.message, /at character 19: expected a value/);
    });

    test("attributes are declared, listed and dropped", () => {
      const store = open();
      fill(store);
      assert.deepEqual(store.attributes(), []);
      assert.deepEqual(store.declareAttribute("context.customer"), { path: "context.customer" });
      assert.deepEqual(store.attributes(), [{ path: "context.customer" }]);
      const page = store.listExecutions({ where: "context.customer ^= c-2" });
      assert.deepEqual(ids(page), ["s2", "s5"]);
      assert.equal(page.scan, undefined);
      assert.throws(() => store.declareAttribute("status"), (e) => e.code === "INVALID_INPUT");
      assert.equal(store.dropAttribute("context.customer"), true);
      assert.equal(store.dropAttribute("context.customer"), false);
    });
  });
}
