// The npm package's `send`: an event for an execution through the outbox, as an engine would
// receive it (control::send, the monitor's "Send an event"), on the memory and SQLite stores.
// Bad input (an unknown execution, a malformed event, a NaN, a lone surrogate, a control
// kind, a stale version, an execution not RUNNING) is a StoreError with its code, and nothing
// is written. Run: node --test tests/js/  (needs `npm run build:wasm`)
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Store } from "execstore";

const BACKENDS = [
  ["memory", () => Store.memory()],
  ["sqlite", () => Store.sqliteMemory()],
];

function seeded(open) {
  const store = open();
  store.save({ id: "run", definition_id: "orders", status: "RUNNING", version: 0 });
  store.save({ id: "done", definition_id: "orders", status: "DONE", version: 0 });
  return store;
}

/** Everything `send` could change. */
function snapshot(store) {
  return JSON.stringify({
    outbox: store.pendingOutbox(null, 1000),
    executions: ["run", "done"].map((id) => store.load(id)),
  });
}

for (const [name, open] of BACKENDS) {
  describe(`send on ${name}`, () => {
    test("enqueues one outbox entry for the execution, writing no step", () => {
      const store = seeded(open);
      const sent = store.send("run", { id: "evt-1", kind: "Pay", data: { amount: 12.5, items: [1, 2] } }, 1);
      assert.deepEqual(Object.keys(sent).sort(), ["event_id", "seq", "target_id"]);
      assert.equal(sent.target_id, "run");
      assert.equal(sent.event_id, "evt-1");
      const outbox = store.pendingOutbox();
      assert.equal(outbox.length, 1);
      assert.equal(outbox[0].seq, sent.seq);
      assert.equal(outbox[0].target_id, "run");
      assert.equal(outbox[0].event.kind, "Pay");
      assert.deepEqual(outbox[0].event.data, { amount: 12.5, items: [1, 2] });
      assert.equal(store.load("run").version, 1, "the execution is not written");
      // Without expectedVersion; a relay's ack takes the seq.
      const second = store.send("run", { id: "evt-2", kind: "Pay" });
      assert.ok(second.seq > sent.seq);
      store.ackOutboxMany([sent.seq, second.seq]);
      assert.deepEqual(store.pendingOutbox(), []);
    });

    const ok = { id: "evt-x", kind: "Pay" };
    const refusals = [
      ["an unknown execution", () => ["nope", ok], "NOT_FOUND"],
      ["a stale expectedVersion", () => ["run", ok, 7], "CONFLICT"],
      ["an execution not RUNNING", () => ["done", ok], "INVALID_INPUT"],
      ["one of harel's control kinds", () => ["run", { id: "e", kind: "Cancel" }], "INVALID_INPUT"],
      ["an event without a kind", () => ["run", { id: "e" }], "INVALID_INPUT"],
      ["an empty kind", () => ["run", { id: "e", kind: "" }], "INVALID_INPUT"],
      ["an empty event id", () => ["run", { id: "", kind: "Pay" }], "INVALID_INPUT"],
      ["data that is not an object", () => ["run", { id: "e", kind: "Pay", data: [1] }], "INVALID_INPUT"],
      ["an event that is not an object", () => ["run", "Pay"], "INVALID_INPUT"],
      ["no event", () => ["run"], "INVALID_INPUT"],
      ["NaN in the data", () => ["run", { id: "e", kind: "Pay", data: { amount: NaN } }], "INVALID_INPUT"],
      ["Infinity deep in the data", () => ["run", { id: "e", kind: "Pay", data: { a: [{ b: -Infinity }] } }], "INVALID_INPUT"],
      ["a NaN expectedVersion", () => ["run", ok, NaN], "INVALID_INPUT"],
      ["a string expectedVersion", () => ["run", ok, "1"], "INVALID_INPUT"],
      ["a lone surrogate in the id", () => ["run\ud800", ok], "INVALID_INPUT"],
      ["a lone surrogate in the kind", () => ["run", { id: "e", kind: "P\udc00" }], "INVALID_INPUT"],
      ["a lone surrogate in the data", () => ["run", { id: "e", kind: "Pay", data: { s: "a\ud800" } }], "INVALID_INPUT"],
      ["an event too large", () => ["run", { id: "e", kind: "Pay", data: { blob: "x".repeat(9 * 1024 * 1024) } }], "INVALID_INPUT"],
    ];
    for (const [what, args, code] of refusals) {
      test(`refuses ${what} with ${code}, changing nothing`, () => {
        const store = seeded(open);
        const before = snapshot(store);
        assert.throws(
          () => store.send(...args()),
          (e) => e.name === "StoreError" && e.code === code,
          what,
        );
        assert.equal(snapshot(store), before, `${what}: nothing changed`);
      });
    }

    test("NaN names where it is", () => {
      const store = seeded(open);
      assert.throws(
        () => store.send("run", { id: "e", kind: "Pay", data: { a: { b: NaN } } }),
        (e) => e.code === "INVALID_INPUT" && e.field === "event.data.a.b" && /finite/.test(e.message),
      );
    });
  });
}
