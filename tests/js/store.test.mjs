// The npm package `execstore` as a Node user has it: `import { Store } from "execstore"`,
// over the memory store and SQLite compiled to wasm. Run: node --test tests/js/
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Store } from "execstore";

/** Runs `fn` and returns what it threw (failing if it did not throw). */
function thrown(fn) {
  try {
    fn();
  } catch (error) {
    return error;
  }
  assert.fail("expected an error");
}

/** Everything a store holds that a bad call could change. */
function snapshot(store) {
  return JSON.stringify({
    executions: store.listExecutions({ limit: 10000 }),
    loaded: store.idsWithPrefix("").map((id) => store.load(id)),
    outbox: store.pendingOutbox(null, 10000),
    spawns: store.pendingSpawns(null, 10000),
    timers: store.dueTimers(1e12, null, 10000),
  });
}

const BACKENDS = [
  ["memory", () => Store.memory()],
  ["sqliteMemory", () => Store.sqliteMemory()],
];

for (const [kind, open] of BACKENDS) {
  describe(`Store.${kind}()`, () => {
    test("create, commit with effects, load, list", () => {
      const store = open();
      const exe = { id: "order-1", definition_id: "orders", status: "RUNNING", version: 0 };
      const seqs = store.commit(exe, {
        emits: [{ target_id: "pay-1", event: { id: "e-1", kind: "Charge", data: { amount: 5 } } }],
        processed_event_id: "in-1",
        timers: [{ action: "schedule", path: "order.wait", fire_at: 1_700_000_600 }],
        spawns: [{ child_id: "order-1:r1", root_path: "order.regions.r1", context: { k: "v" } }],
        trace: { event_kind: "Start", n: 1 },
      });
      assert.equal(seqs.length, 1);
      assert.equal(typeof seqs[0], "number");
      assert.equal(exe.version, 1, "commit sets the new version on the object passed");

      const loaded = store.load("order-1");
      assert.equal(loaded.status, "RUNNING");
      assert.equal(loaded.version, 1);
      assert.equal(store.load("missing"), null);

      assert.deepEqual(store.loadForEvent("order-1", "in-1"), { execution: loaded, processed: true });
      assert.equal(store.isProcessed("order-1", "in-2"), false);

      const [entry] = store.pendingOutbox();
      assert.deepEqual(entry, {
        seq: seqs[0],
        target_id: "pay-1",
        event: { id: "e-1", kind: "Charge", created_time: null, received_time: null, data: { amount: 5 } },
      });
      store.ackOutbox(entry.seq);
      assert.deepEqual(store.pendingOutbox(), []);

      assert.deepEqual(store.dueTimers(1_700_000_000), [], "not due yet");
      const [timer] = store.dueTimers(1_700_000_600);
      assert.deepEqual(timer, { execution_id: "order-1", path: "order.wait", fire_at: 1_700_000_600 });
      assert.equal(store.deleteTimer("order-1", "order.wait", 1_700_000_599), false, "guarded on fire_at");
      assert.equal(store.deleteTimer(timer.execution_id, timer.path, timer.fire_at), true);

      const [spawn] = store.pendingSpawns();
      assert.equal(spawn.child_id, "order-1:r1");
      assert.deepEqual(spawn.context, { k: "v" });
      store.ackSpawn(spawn.seq);

      assert.deepEqual(store.readTrace("order-1"), [{ event_kind: "Start", n: 1, index: 0 }]);
      assert.equal(store.appendTrace("order-1", { note: "manual" }), 1);

      assert.deepEqual(store.listExecutions(), {
        items: [
          {
            id: "order-1", definition_id: "orders", status: "RUNNING", outcome: null, active_path: null,
            version: 1, parent_id: null, finished_at: null, updated_at: null, created_at: null,
          },
        ],
        next_cursor: null,
      });
      assert.equal(store.statusCounts().RUNNING, 1);
      assert.deepEqual(store.idsWithPrefix("order-"), ["order-1"]);
      assert.equal(store.capabilities().durable, false);
      assert.equal(store.kind, kind === "memory" ? "memory" : "sqlite-memory");
    });

    test("an execution from load can be changed and committed back; key order and unknown fields are kept", () => {
      const store = open();
      const exe = {
        id: "x-1", definition_id: "d", version: 0,
        context: { zebra: 1, apple: { y: 2, b: 3 }, mango: [1, "two"] },
        engine_note: "a newer engine's field", another_new_field: { z: 1, a: 2 },
      };
      store.save(exe);
      const loaded = store.load("x-1");
      assert.deepEqual(Object.keys(loaded.context), ["zebra", "apple", "mango"]);
      assert.deepEqual(Object.keys(loaded.context.apple), ["y", "b"]);
      assert.equal(loaded.engine_note, "a newer engine's field");
      assert.deepEqual(Object.keys(loaded).slice(-2), ["engine_note", "another_new_field"]);
      assert.deepEqual(Object.keys(loaded.another_new_field), ["z", "a"]);

      loaded.status = "DONE";
      loaded.outcome = "shipped";
      loaded.context.counter = 7;
      const token = store.changeToken();
      assert.deepEqual(store.commit(loaded, { processed_event_id: "done-1" }), []);
      assert.equal(loaded.version, 2);
      assert.notEqual(store.changeToken(), token, "the change token moves with a write");
      const again = store.load("x-1");
      assert.deepEqual(again, loaded, "what was committed is what loads, field for field");
      assert.deepEqual(Object.keys(again.context), ["zebra", "apple", "mango", "counter"]);
      assert.equal(store.listExecutions({ status: ["DONE"] }).items[0].id, "x-1");
    });

    test("listing pages with an opaque cursor and filters", () => {
      const store = open();
      for (let i = 0; i < 7; i++) {
        store.save({ id: `p-${i}`, definition_id: i % 2 ? "odd" : "even", version: 0, status: "RUNNING" });
      }
      store.save({ id: "p-7", definition_id: "even", parent_id: "p-0", version: 0 });
      const seen = [];
      let cursor = null;
      let pages = 0;
      do {
        const page = store.listExecutions({ limit: 3, cursor });
        assert.ok(page.items.length <= 3);
        seen.push(...page.items.map((s) => s.id));
        cursor = page.next_cursor;
        pages++;
      } while (cursor !== null);
      assert.deepEqual(seen, ["p-0", "p-1", "p-2", "p-3", "p-4", "p-5", "p-6", "p-7"]);
      assert.equal(pages, 3);
      assert.deepEqual(
        store.listExecutions({ definition_id: "odd" }).items.map((s) => s.id),
        ["p-1", "p-3", "p-5"],
      );
      assert.equal(store.listExecutions({ roots_only: true }).items.length, 7);
      assert.equal(store.listExecutions({ status: [] }).items.length, 0);
      const bad = thrown(() => store.listExecutions({ cursor: "not-a-cursor" }));
      assert.equal(bad.code, "INVALID_INPUT");
      assert.equal(bad.field, "cursor");
    });

    test("listing newest created first, its cursor refused by the updated order", () => {
      const store = open();
      [5, 9, 1, 9, 3].forEach((t, i) =>
        store.save({ id: `c-${i}`, definition_id: "d", version: 0, created_at: t, updated_at: 10 - i }));
      const seen = [];
      let cursor = null;
      do {
        const page = store.listExecutions({ order: "created", limit: 2, cursor });
        seen.push(...page.items.map((s) => [s.id, s.created_at]));
        cursor = page.next_cursor;
      } while (cursor !== null);
      assert.deepEqual(seen, [["c-3", 9], ["c-1", 9], ["c-0", 5], ["c-4", 3], ["c-2", 1]]);
      const created = store.listExecutions({ order: "created", limit: 2 }).next_cursor;
      assert.equal(thrown(() => store.listExecutions({ order: "updated", cursor: created })).code, "INVALID_INPUT");
    });

    test("listing most recently updated first, its cursor refused by the id order", () => {
      const store = open();
      [5, 9, 1, 9, 3].forEach((t, i) => store.save({ id: `u-${i}`, definition_id: "d", version: 0, updated_at: t }));
      const walk = (query) => {
        const seen = [];
        let cursor = null;
        do {
          const page = store.listExecutions({ ...query, limit: 2, cursor });
          seen.push(...page.items.map((s) => s.id));
          cursor = page.next_cursor;
        } while (cursor !== null);
        return seen;
      };
      assert.deepEqual(walk({ order: "updated" }), ["u-3", "u-1", "u-0", "u-4", "u-2"]);
      assert.deepEqual(walk({}), ["u-0", "u-1", "u-2", "u-3", "u-4"]);
      assert.deepEqual(walk({ order: "id" }), walk({}));
      const cursor = store.listExecutions({ order: "updated", limit: 2 }).next_cursor;
      assert.equal(thrown(() => store.listExecutions({ cursor })).code, "INVALID_INPUT");
      const bad = thrown(() => store.listExecutions({ order: "newest" }));
      assert.equal(bad.code, "INVALID_INPUT");
      assert.equal(bad.field, "order");
    });

    test("a stale commit is CONFLICT with id, expected and found, and writes nothing", () => {
      const store = open();
      const exe = { id: "c-1", definition_id: "d", version: 0 };
      store.save(exe);
      const stale = store.load("c-1");
      const fresh = store.load("c-1");
      store.commit(fresh, { emits: [{ target_id: null, event: { id: "win", kind: "E" } }] });
      const before = snapshot(store);

      const error = thrown(() =>
        store.commit(stale, {
          emits: [{ target_id: null, event: { id: "lose", kind: "E" } }],
          processed_event_id: "lose-in",
        }),
      );
      assert.ok(error instanceof Error);
      assert.equal(error.name, "StoreError");
      assert.equal(error.code, "CONFLICT");
      assert.equal(error.id, "c-1");
      assert.equal(error.expected, 1);
      assert.equal(error.found, 2);
      assert.match(error.message, /c-1/);
      assert.equal(stale.version, 1, "the caller's version is unchanged");
      assert.equal(snapshot(store), before);
      assert.equal(store.isProcessed("c-1", "lose-in"), false);

      const again = thrown(() => store.save({ id: "c-1", definition_id: "d", version: 0 }));
      assert.equal(again.code, "CONFLICT");
      assert.equal(again.found, 2);
      const none = thrown(() => store.save({ id: "never", definition_id: "d", version: 3 }));
      assert.equal(none.code, "CONFLICT");
      assert.equal(none.found, null, "found is null when nothing is stored");
    });

    test("bad input of every kind is INVALID_INPUT naming the field, and changes nothing", () => {
      const store = open();
      const good = { id: "b-1", definition_id: "d", version: 0 };
      store.commit(good, { timers: [{ action: "schedule", path: "t", fire_at: 10 }] });
      const before = snapshot(store);
      const exe = () => store.load("b-1");
      const cases = [
        ["a string version", () => store.commit({ ...exe(), version: "1" }), "execution.version"],
        ["a fractional version", () => store.commit({ ...exe(), version: 1.5 }), "execution.version"],
        ["a NaN version", () => store.commit({ ...exe(), version: NaN }), "execution.version"],
        ["a missing id", () => store.commit({ definition_id: "d", version: 0 }), "execution.id"],
        ["an empty id", () => store.commit({ ...exe(), id: "" }), "id"],
        ["a status not in the enum", () => store.commit({ ...exe(), status: "WALKING" }), "execution.status"],
        ["a priority out of range", () => store.commit({ ...exe(), priority: 9 }), "priority"],
        ["a negative time", () => store.commit({ ...exe(), created_at: -1 }), "created_at"],
        [
          "a NaN fire_at",
          () => store.commit(exe(), { timers: [{ action: "schedule", path: "t", fire_at: NaN }] }),
          "effects.timers[0].fire_at",
        ],
        [
          "an infinite fire_at",
          () => store.commit(exe(), { timers: [{ action: "schedule", path: "t", fire_at: Infinity }] }),
          "effects.timers[0].fire_at",
        ],
        [
          "a negative fire_at",
          () => store.commit(exe(), { timers: [{ action: "schedule", path: "t", fire_at: -5 }] }),
          "fire_at",
        ],
        ["a misspelt effect", () => store.commit(exe(), { procesed_event_id: "x" }), "effects.procesed_event_id"],
        ["a BigInt", () => store.commit({ ...exe(), priority: 1n }), "execution"],
        ["not an object", () => store.commit("b-1"), "execution"],
        ["an undefined execution", () => store.commit(undefined), "execution"],
        ["a number id to load", () => store.load(42), "id"],
        ["a string seq", () => store.ackOutbox("1"), "seq"],
        ["seq 0", () => store.ackOutbox(0), "seq"],
        ["a page size of 0", () => store.pendingOutbox(null, 0), "limit"],
        ["a negative page size", () => store.listExecutions({ limit: -1 }), "query.limit"],
        ["an unknown query key", () => store.listExecutions({ statuses: ["DONE"] }), "query.statuses"],
        ["a NaN now", () => store.dueTimers(NaN), "now"],
        ["a string expected version", () => store.purge("b-1", "1"), "expectedVersion"],
        ["seqs not an array", () => store.ackOutboxMany(3), "seqs"],
        ["a batch that is not an array", () => store.commitBatch({}), "items"],
        ["an unknown option", () => Store.memory({ trace_max: 3 }), "options.trace_max"],
      ];
      for (const [what, call, field] of cases) {
        const error = thrown(call);
        assert.equal(error.code, "INVALID_INPUT", `${what}: ${error.message}`);
        assert.ok(error.field.endsWith(field) || error.field === field, `${what}: field ${error.field}, wanted ${field}`);
        assert.equal(typeof error.reason, "string");
        assert.equal(snapshot(store), before, `${what} changed the store`);
      }
      assert.equal(store.load("b-1").version, 1);
    });

    test("NOT_FOUND for what is not stored", () => {
      const store = open();
      const error = thrown(() => store.ackOutbox(12345));
      assert.equal(error.code, "NOT_FOUND");
      assert.equal(error.key, "12345");
      assert.equal(thrown(() => store.ackSpawn(1)).code, "NOT_FOUND");
      assert.equal(thrown(() => store.appendTrace("nobody", { a: 1 })).code, "NOT_FOUND");
    });

    test("commitBatch: one transaction, an outcome per item", () => {
      const store = open();
      const a = { id: "batch-a", definition_id: "d", version: 0 };
      const b = { id: "batch-b", definition_id: "d", version: 0 };
      store.save(b);
      const staleB = { ...store.load("batch-b"), version: 0 };
      // The second step of `a`, written as if the first had committed (version 1).
      const aNext = { ...a, version: 1, status: "RUNNING" };
      const items = [
        { execution: a, effects: { emits: [{ target_id: null, event: { id: "ba", kind: "E" } }] } },
        { execution: staleB },
        { execution: { id: "batch-c", definition_id: "d", version: 0, priority: 99 } },
        { execution: aNext, effects: { processed_event_id: "second-step-of-a" } },
      ];
      const outcomes = store.commitBatch(items);
      assert.equal(outcomes.length, 4);
      assert.equal(outcomes[0].ok, true);
      assert.equal(outcomes[0].seqs.length, 1);
      assert.equal(outcomes[1].ok, false);
      assert.equal(outcomes[1].error.code, "CONFLICT");
      assert.equal(outcomes[1].error.found, 1);
      assert.equal(outcomes[2].ok, false);
      assert.equal(outcomes[2].error.code, "INVALID_INPUT");
      assert.equal(outcomes[3].ok, true, "a later item of the same execution sees the earlier write");
      assert.equal(outcomes[3].version, 2);
      assert.equal(a.version, 1, "the new version is set on each item's execution");
      assert.equal(aNext.version, 2);
      assert.equal(store.load("batch-a").status, "RUNNING");
      assert.equal(store.load("batch-c"), null, "a refused item leaves no trace");
      assert.equal(store.isProcessed("batch-a", "second-step-of-a"), true);
    });

    test("relay callbacks: acked what deliver returns; a throwing deliver acks nothing", () => {
      const store = open();
      const exe = { id: "r-1", definition_id: "d", version: 0 };
      store.commit(exe, {
        emits: [
          { target_id: null, event: { id: "r-e1", kind: "E" } },
          { target_id: null, event: { id: "r-e2", kind: "E" } },
        ],
      });
      const boom = thrown(() => store.relayOutbox(10, () => { throw new RangeError("delivery failed"); }));
      assert.ok(boom instanceof RangeError, "the callback's own error comes back");
      assert.equal(store.pendingOutbox().length, 2);
      const acked = store.relayOutbox(10, (entries) => [entries[0].seq]);
      assert.equal(acked, 1);
      assert.deepEqual(store.pendingOutbox().map((e) => e.event.id), ["r-e2"]);
      assert.equal(store.ackOutboxMany(store.pendingOutbox().map((e) => e.seq).concat([999999])), 1);
    });

    test("purge is guarded on the version", () => {
      const store = open();
      const exe = { id: "gone", definition_id: "d", version: 0 };
      store.commit(exe, { emits: [{ target_id: "gone", event: { id: "g", kind: "E" } }] });
      assert.equal(store.purge("gone", 5), false);
      assert.notEqual(store.load("gone"), null);
      assert.equal(store.purge("gone", 1), true);
      assert.equal(store.load("gone"), null);
      assert.deepEqual(store.pendingOutbox(), []);
    });

    test("a closed store refuses every call", () => {
      const store = open();
      store.close();
      store.close();
      assert.equal(store.kind, "closed");
      const error = thrown(() => store.load("a"));
      assert.equal(error.code, "BACKEND");
    });
  });
}

test("traceMax keeps the newest steps", () => {
  for (const store of [Store.memory({ traceMax: 2 }), Store.sqliteMemory({ traceMax: 2, prefix: "harel" })]) {
    const exe = { id: "t", definition_id: "d", version: 0 };
    store.save(exe);
    for (let i = 0; i < 4; i++) store.appendTrace("t", { i });
    assert.deepEqual(store.readTrace("t"), [{ i: 2, index: 2 }, { i: 3, index: 3 }]);
    assert.equal(store.traceMax(), 2);
  }
});

test("Store.openOpfs outside a browser worker is BACKEND, not a hang", async () => {
  await assert.rejects(Store.openOpfs("x"), (error) => error.code === "BACKEND" && /dedicated worker/.test(error.message));
  await assert.rejects(Store.openOpfs("../x"), (error) => error.code === "INVALID_INPUT" && error.field === "name");
  await assert.rejects(Store.openOpfs("x", { waitMs: -1 }), (error) => error.code === "INVALID_INPUT");
});
