// The package in headless Chromium, as a page uses it (playwright-core, Debian's chromium):
// a bundler-free page opens an OPFS store through the main-thread client (the store runs in
// the package's dedicated worker), writes, reloads, reads back; a worker restart keeps the
// data; a second opener (same tab or another tab) gets LOCKED or waits a bounded time.
// Run: node --test tests/js/  (needs `npm run build:wasm` and /usr/bin/chromium)
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { chromiumSuite, noChromium } from "./chromium.mjs";

const skip = noChromium;

describe("OPFS store in Chromium", { skip }, () => {
  const { openPage: open } = chromiumSuite();
  const openPage = () => open("/tests/js/pages/opfs.html");

  test("write, reload, read back; a worker restart keeps the data", async () => {
    const page = await openPage();
    const written = await page.evaluate(async () => {
      const store = await window.execstore.openOpfs("reload-test");
      const ids = [];
      for (let i = 0; i < 5; i++) {
        const exe = { id: `order-${i}`, definition_id: "orders", status: "RUNNING", version: 0, context: { i, z: 1, a: 2 } };
        await store.commit(exe, {
          emits: [{ target_id: null, event: { id: `e-${i}`, kind: "Placed" } }],
          processed_event_id: `in-${i}`,
          timers: [{ action: "schedule", path: "order.wait", fire_at: 1000 + i }],
          trace: { event_kind: "Place", i },
        });
        ids.push([exe.id, exe.version]);
      }
      const batch = [5, 6, 7].map((i) => ({ execution: { id: `order-${i}`, definition_id: "orders", version: 0 } }));
      const outcomes = await store.commitBatch(batch);
      const conflict = await store.save({ id: "order-0", definition_id: "orders", version: 0 }).catch((e) => e);
      const invalid = await store.commit({ id: "order-9", definition_id: "orders", version: "0" }).catch((e) => e);
      return {
        ids,
        batch: outcomes.map((o) => o.ok && o.version),
        batchVersions: batch.map((b) => b.execution.version),
        conflict: { isError: conflict instanceof Error, code: conflict.code, id: conflict.id, expected: conflict.expected, found: conflict.found },
        invalid: { code: invalid.code, field: invalid.field },
      };
    });
    assert.deepEqual(written.ids, [0, 1, 2, 3, 4].map((i) => [`order-${i}`, 1]));
    assert.deepEqual(written.batch, [1, 1, 1]);
    assert.deepEqual(written.batchVersions, [1, 1, 1], "the client sets each item's new version");
    assert.deepEqual(written.conflict, { isError: true, code: "CONFLICT", id: "order-0", expected: 0, found: 1 });
    assert.deepEqual(written.invalid, { code: "INVALID_INPUT", field: "execution.version" });

    // The store is still open in the worker when the page reloads: the reload ends the
    // worker, the browser releases its lock and files, and the new page opens the store.
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    const afterReload = await page.evaluate(async () => {
      const store = await window.execstore.openOpfs("reload-test");
      const page1 = await store.listExecutions({ limit: 5 });
      const page2 = await store.listExecutions({ limit: 5, cursor: page1.next_cursor });
      const exe = await store.load("order-3");
      const outbox = await store.pendingOutbox();
      const timers = await store.dueTimers(2000);
      const trace = await store.readTrace("order-3");
      const processed = await store.isProcessed("order-3", "in-3");
      // Load, change, commit back.
      exe.status = "DONE";
      exe.context.done = true;
      const seqs = await store.commit(exe, { emits: [{ target_id: null, event: { id: "done-3", kind: "Done" } }] });
      const version = exe.version;
      store.terminate(); // a crash: no close, the worker just ends
      return {
        ids: [...page1.items, ...page2.items].map((s) => s.id), last: page2.next_cursor,
        contextKeys: Object.keys(exe.context), outbox: outbox.length, timers: timers.length, trace, processed,
        seqs: seqs.length, version,
      };
    });
    assert.deepEqual(afterReload.ids, [0, 1, 2, 3, 4, 5, 6, 7].map((i) => `order-${i}`));
    assert.equal(afterReload.last, null);
    assert.deepEqual(afterReload.contextKeys, ["i", "z", "a", "done"]);
    assert.equal(afterReload.outbox, 5);
    assert.equal(afterReload.timers, 5);
    assert.deepEqual(afterReload.trace, [{ event_kind: "Place", i: 3, index: 0 }]);
    assert.equal(afterReload.processed, true);
    assert.equal(afterReload.seqs, 1);
    assert.equal(afterReload.version, 2);

    // A new worker after the crash sees everything, including the last commit.
    const afterRestart = await page.evaluate(async () => {
      const store = await window.execstore.openOpfs("reload-test");
      const exe = await store.load("order-3");
      const outbox = (await store.pendingOutbox()).map((e) => e.event.id);
      await store.close();
      return { status: exe.status, version: exe.version, done: exe.context.done, outbox };
    });
    assert.deepEqual(afterRestart, {
      status: "DONE", version: 2, done: true, outbox: ["e-0", "e-1", "e-2", "e-3", "e-4", "done-3"],
    });
    await page.close();
  });

  test("a second opener gets LOCKED or waits for the owner; never two owners", async () => {
    const owner = await openPage();
    const other = await openPage();
    await owner.evaluate(async () => {
      window.held = await window.execstore.openOpfs("lock-test");
      await window.held.save({ id: "held-1", definition_id: "d", version: 0 });
    });
    const refused = await other.evaluate(async () => {
      const codes = [];
      for (const waitMs of [0, 300]) {
        const error = await window.execstore.openOpfs("lock-test", { waitMs }).then(() => null, (e) => e);
        codes.push(error && { code: error.code, store: error.store });
      }
      return codes;
    });
    assert.deepEqual(refused, [
      { code: "LOCKED", store: "lock-test" },
      { code: "LOCKED", store: "lock-test" },
    ]);
    // In the owner's own tab too: a second worker is refused.
    const sameTab = await owner.evaluate(() =>
      window.execstore.openOpfs("lock-test", { waitMs: 0 }).then(() => "opened", (e) => e.code));
    assert.equal(sameTab, "LOCKED");

    // The other tab waits; the owner closes; the waiter gets the store with the owner's data.
    await other.evaluate(() => {
      window.waiting = window.execstore.openOpfs("lock-test", { waitMs: 20000 });
    });
    await owner.evaluate(async () => {
      await window.held.commit(await window.held.load("held-1"), { processed_event_id: "last-word" });
      await window.held.close();
    });
    const handedOver = await other.evaluate(async () => {
      const store = await window.waiting;
      const exe = await store.load("held-1");
      const processed = await store.isProcessed("held-1", "last-word");
      await store.close();
      return { version: exe.version, processed };
    });
    assert.deepEqual(handedOver, { version: 2, processed: true });
    await owner.close();
    await other.close();
  });

  test("the Store itself in a bundler-free page: memory and SQLite work, OPFS needs a worker", async () => {
    const page = await openPage();
    const result = await page.evaluate(async () => {
      const { Store } = window.execstoreDirect;
      const out = {};
      for (const store of [Store.memory(), Store.sqliteMemory()]) {
        const exe = { id: "p-1", definition_id: "d", version: 0 };
        store.commit(exe, { processed_event_id: "x" });
        out[store.kind] = [exe.version, store.isProcessed("p-1", "x")];
      }
      const error = await Store.openOpfs("main-thread").then(() => null, (e) => e);
      out.opfsOnMainThread = error && error.code;
      return out;
    });
    assert.deepEqual(result, { memory: [1, true], "sqlite-memory": [1, true], opfsOnMainThread: "BACKEND" });
    await page.close();
  });
});
