// The workspace log in OPFS from a page's main thread (`openWorkspaceOpfs` from
// execstore/workspace-client: the store in the package's dedicated worker), in headless
// Chromium: a transaction handle appends and commits, a rollback takes no seq, reads come
// back; typed errors (a bad ref, a duplicate id, an argument that cannot be cloned: none
// reaches the store or changes it); a subscription (callback and async iterator) receives the
// envelopes a transaction appends and stops when cancelled, also another tab's (the two tabs'
// workers take turns on the store's lease); a reader that falls behind holds at most
// SUBSCRIPTION_WINDOW envelopes (the worker waits for its credit) and still gets all in order; a transaction left open holds the
// store (another opener gets LOCKED) until `terminate()` (the lease is released, the open
// transaction is lost, a second client commits) or `close()` (rolled back); a reload keeps
// the data. Run: node --test tests/js/  (needs `npm run build:wasm` and /usr/bin/chromium)
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { chromiumSuite, noChromium } from "./chromium.mjs";

const skip = noChromium;

// Code run in the page before each snippet: helpers in scope.
const PRELUDE = `
const { openWorkspaceOpfs } = window.execstore;
const ws = { tenant_id: "acme", workspace_id: "prod" };
const entry = (id, type = "oncall:service_error") =>
  ({ id, actor: { kind: "source", name: "monitor" }, event: { type, service: "auth", id } });
const caught = (promise) => promise.then(
  (value) => ({ resolved: value }),
  (e) => ({ isError: e instanceof Error, name: e.name, code: e.code, field: e.field, key: e.key, store: e.store,
    retryable: e.retryable }));
const until = async (check, ms = 5000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
};
`;

describe("openWorkspaceOpfs (main-thread client) in Chromium", { skip, timeout: 120_000 }, () => {
  const problems = [];
  const { openPage: open } = chromiumSuite();
  const openPage = () => open("/tests/js/pages/workspace-client.html", (error) => problems.push(String(error)));

  /** Runs `code` (an async function body) on the page's main thread. */
  const inPage = (page, code) => page.evaluate(async (c) => {
    const AsyncFunction = (async () => {}).constructor;
    return new AsyncFunction(c)();
  }, PRELUDE + code);

  after(() => assert.deepEqual(problems, [], "no page errors"));

  test("a transaction handle appends and commits; rollback; reads; typed errors change nothing", async () => {
    const page = await openPage();
    const got = await inPage(page, `
      const store = await openWorkspaceOpfs("wsc-basic", { synchronous: "normal" });
      const out = { kind: store.kind, name: store.name, caps: await store.capabilities() };
      const tx = await store.begin(ws);
      // A call made while the transaction is open waits for its commit (and does not block it).
      const headMeanwhile = store.headSeq(ws);
      out.appended = (await tx.append([entry("a"), entry("b")])).map((e) => [e.seq, e.id]);
      out.inTxHead = await tx.headSeq();
      await tx.saveProgress("page", { rule: "page", last_seq: 2 });
      out.inTxProgress = await tx.progress("page");
      await tx.commit();
      out.headMeanwhile = await headMeanwhile;
      out.ended = tx.ended;
      out.afterCommit = await caught(tx.append([entry("late")]));
      out.commitTwice = await caught(tx.commit());

      const rb = await store.begin(ws);
      await rb.append([entry("c")]);
      await rb.rollback();
      out.headAfterRollback = await store.headSeq(ws);

      out.helper = await store.transaction(ws, async (tx) => (await tx.append([entry("c")])).map((e) => e.seq));
      out.helperThrows = await store.transaction(ws, async (tx) => { await tx.append([entry("d")]); throw new Error("no"); })
        .catch((e) => e.message);

      out.read = (await store.read(ws, { after_seq: 0 })).map((e) => [e.seq, e.id, e.event.type]);
      out.envelope = (await store.envelope(ws, "b")).seq;
      out.progress = await store.progress(ws);
      out.workspaces = await store.workspaces();
      await store.saveCursor(ws, "relay", 2);
      out.cursor = await store.cursor(ws, "relay");

      // Typed errors: from the store (a bad ref, a duplicate id) and before it (not cloneable).
      out.badRef = await caught(store.headSeq({ tenant_id: "acme" }));
      out.badBegin = await caught(store.begin({ tenant_id: "", workspace_id: "prod" }));
      out.duplicate = await caught(store.transaction(ws, (tx) => tx.append([entry("x"), entry("a")])));
      out.uncloneable = await caught(store.transaction(ws, (tx) =>
        tx.append([{ id: "f", event: { type: "t:f", handler: () => 1 } }])));
      out.uncloneableCall = await caught(store.read(ws, { after_seq: 0, types: [Symbol("t")] }));
      out.badFn = await caught(store.transaction(ws, "not a function"));
      out.head = await store.headSeq(ws);
      await store.close();
      out.kindAfterClose = store.kind;
      out.afterClose = await caught(store.headSeq(ws));
      return out;
    `);
    assert.equal(got.kind, "opfs");
    assert.equal(got.name, "wsc-basic");
    assert.equal(got.caps.durable, true);
    assert.deepEqual(got.appended, [[1, "a"], [2, "b"]]);
    assert.equal(got.inTxHead, 2);
    assert.equal(got.headMeanwhile, 2, "a call made during the transaction ran after its commit");
    assert.deepEqual(got.inTxProgress, { rule: "page", last_seq: 2 });
    assert.equal(got.ended, true);
    assert.equal(got.afterCommit.code, "BACKEND", "a committed transaction takes no more calls");
    assert.equal(got.commitTwice.code, "BACKEND");
    assert.equal(got.headAfterRollback, 2, "a rollback takes no seq");
    assert.deepEqual(got.helper, [3]);
    assert.equal(got.helperThrows, "no");
    assert.deepEqual(got.read, [[1, "a", "oncall:service_error"], [2, "b", "oncall:service_error"],
      [3, "c", "oncall:service_error"]]);
    assert.equal(got.envelope, 2);
    assert.deepEqual(got.progress, [["page", { rule: "page", last_seq: 2 }]]);
    assert.deepEqual(got.workspaces, [ws()]);
    assert.equal(got.cursor, 2);
    assert.equal(got.badRef.isError, true);
    assert.equal(got.badRef.name, "StoreError");
    assert.equal(got.badRef.code, "INVALID_INPUT");
    assert.match(got.badRef.field, /workspace_id/);
    assert.equal(got.badBegin.code, "INVALID_INPUT");
    assert.match(got.badBegin.field, /tenant_id/);
    assert.equal(got.duplicate.code, "ALREADY_EXISTS");
    assert.equal(got.duplicate.key, "a");
    assert.equal(got.uncloneable.code, "INVALID_INPUT");
    assert.equal(got.uncloneable.field, "arguments");
    assert.equal(got.uncloneableCall.code, "INVALID_INPUT");
    assert.equal(got.uncloneableCall.field, "arguments");
    assert.equal(got.badFn.code, "INVALID_INPUT");
    assert.equal(got.head, 3, "no failed call appended anything");
    assert.equal(got.kindAfterClose, "closed");
    assert.equal(got.afterClose.code, "BACKEND");
    await page.close();
  });

  test("a subscription receives what transactions append, by callback and async iterator, until cancelled", async () => {
    const page = await openPage();
    const got = await inPage(page, `
      const store = await openWorkspaceOpfs("wsc-subscribe");
      await store.transaction(ws, (tx) => tx.append([entry("old")]));
      const seen = [];
      const sub = store.subscribe(ws, { afterSeq: 0 }, (e) => seen.push([e.seq, e.id]));
      const iterated = [];
      const controller = new AbortController();
      const iterating = (async () => {
        for await (const e of store.subscribe(ws, { afterSeq: 1, signal: controller.signal })) {
          iterated.push(e.id);
          if (e.id === "two") break;
        }
      })();
      await until(() => seen.length === 1);
      await store.transaction(ws, (tx) => tx.append([entry("one")]));
      const tx = await store.begin(ws);
      await tx.append([entry("two")]);
      await new Promise((r) => setTimeout(r, 100));
      const beforeCommit = seen.length;
      await tx.commit();
      await until(() => seen.length === 3);
      await iterating;
      await sub.cancel();
      await store.transaction(ws, (tx) => tx.append([entry("three")]));
      await new Promise((r) => setTimeout(r, 200));
      const out = { seen, iterated, beforeCommit };
      const bad = store.subscribe({ tenant_id: "acme" });
      out.bad = await caught(bad.next());
      out.badDone = await caught(bad.done);
      const aborted = store.subscribe(ws, { afterSeq: 4 });
      const next = aborted.next();
      await aborted.return();
      out.afterReturn = await next;
      await store.close();
      return out;
    `);
    assert.deepEqual(got.seen, [[1, "old"], [2, "one"], [3, "two"]], "nothing after cancel()");
    assert.equal(got.beforeCommit, 2, "an uncommitted append is not delivered");
    assert.deepEqual(got.iterated, ["one", "two"]);
    assert.equal(got.bad.code, "INVALID_INPUT");
    assert.equal(got.badDone.code, "INVALID_INPUT");
    assert.equal(got.afterReturn.done, true, "return() ends a pending next()");
    await page.close();
  });

  test("a reader that falls behind holds at most the window; it then gets every envelope in order", async () => {
    const page = await openPage();
    const got = await inPage(page, `
      const { SUBSCRIPTION_WINDOW } = window.execstore;
      const store = await openWorkspaceOpfs("wsc-window", { synchronous: "normal" });
      const total = 4 * SUBSCRIPTION_WINDOW + 17;
      for (let start = 0; start < total; start += 200) {
        const ids = Array.from({ length: Math.min(200, total - start) }, (_, i) => entry("e" + (start + i)));
        await store.transaction(ws, (tx) => tx.append(ids));
      }
      const out = { window: SUBSCRIPTION_WINDOW, total };
      // An iterator nobody reads for a while: the worker stops at the window.
      const slow = store.subscribe(ws, { afterSeq: 0 });
      const first = await slow.next();
      await new Promise((r) => setTimeout(r, 500));
      out.bufferedWhileStalled = slow.buffered;
      let maxBuffered = slow.buffered;
      const seqs = [first.value.seq];
      while (seqs.length < total) {
        const { value } = await slow.next();
        seqs.push(value.seq);
        maxBuffered = Math.max(maxBuffered, slow.buffered);
      }
      out.maxBuffered = maxBuffered;
      out.inOrder = seqs.every((s, i) => s === i + 1);
      // Still following: a commit after the backlog arrives.
      await store.transaction(ws, (tx) => tx.append([entry("after")]));
      out.after = (await slow.next()).value.id;
      // A callback gets everything: it returns credit as it goes.
      const seen = [];
      const fast = store.subscribe(ws, { afterSeq: 0 }, (e) => seen.push(e.seq));
      await until(() => seen.length === total + 1);
      out.callbackInOrder = seen.every((s, i) => s === i + 1);
      await fast.cancel();
      // A stalled subscription (the worker waiting for credit) ends on cancel() and on close().
      const stalled = store.subscribe(ws, { afterSeq: 0 });
      await until(() => stalled.buffered === SUBSCRIPTION_WINDOW);
      await stalled.cancel();
      out.stalledCancelled = await caught(stalled.done);
      const stalled2 = store.subscribe(ws, { afterSeq: 0 });
      await until(() => stalled2.buffered === SUBSCRIPTION_WINDOW);
      await store.close();
      out.closedDone = await caught(stalled2.done);
      return out;
    `);
    assert.equal(got.window, 256);
    assert.equal(got.bufferedWhileStalled, got.window - 1, "the worker posted one window, and one was taken");
    assert.ok(got.maxBuffered <= got.window, `buffered ${got.maxBuffered} > window ${got.window}`);
    assert.ok(got.inOrder, "every envelope once, in order");
    assert.equal(got.after, "after");
    assert.ok(got.callbackInOrder);
    assert.deepEqual(got.stalledCancelled, { resolved: undefined });
    assert.deepEqual(got.closedDone, { resolved: undefined });
    await page.close();
  });

  test("a transaction left open holds the store until terminate() (lost) or close() (rolled back)", async () => {
    const page = await openPage();
    const got = await inPage(page, `
      const first = await openWorkspaceOpfs("wsc-lease");
      await first.transaction(ws, (tx) => tx.append([entry("kept")]));
      const open = await first.begin(ws);
      await open.append([entry("never")]);
      const out = {};
      // The open transaction holds the lease: another opener waits, then gets LOCKED.
      out.locked = await caught(openWorkspaceOpfs("wsc-lease", { waitMs: 300 }));
      first.terminate();
      out.afterTerminate = await caught(open.commit());
      out.firstKind = first.kind;
      const second = await openWorkspaceOpfs("wsc-lease", { waitMs: 5000 });
      out.tail = (await second.read(ws, { after_seq: 0 })).map((e) => e.id);
      out.committed = await second.transaction(ws, async (tx) => (await tx.append([entry("second")])).map((e) => e.seq));
      // close() with a transaction open rolls it back and lets go.
      const left = await second.begin(ws);
      await left.append([entry("rolled-back")]);
      const queued = caught(second.begin(ws)); // waits for left; ended by the close
      await second.close();
      out.queued = await queued;
      out.leftAfterClose = await caught(left.commit());
      const third = await openWorkspaceOpfs("wsc-lease", { waitMs: 5000 });
      out.finally = (await third.read(ws, { after_seq: 0 })).map((e) => [e.seq, e.id]);
      await third.close();
      return out;
    `);
    assert.equal(got.locked.code, "LOCKED");
    assert.equal(got.locked.store, "wsc-lease");
    assert.equal(got.afterTerminate.code, "BACKEND");
    assert.equal(got.firstKind, "closed");
    assert.deepEqual(got.tail, ["kept"], "the terminated transaction's append is lost");
    assert.deepEqual(got.committed, [2]);
    assert.equal(got.queued.code, "BACKEND", "a transaction begun before close() is not left holding the store");
    assert.equal(got.leftAfterClose.code, "BACKEND");
    assert.deepEqual(got.finally, [[1, "kept"], [2, "second"]]);
    await page.close();
  });

  test("two tabs' clients take turns on the store; a subscriber in one wakes on the other's commits", async () => {
    const a = await openPage();
    const b = await openPage();
    await inPage(a, `
      window.store = await openWorkspaceOpfs("wsc-tabs");
      window.seen = [];
      window.sub = window.store.subscribe(ws, { afterSeq: 0 }, (e) => window.seen.push(e.id));
      await window.store.transaction(ws, (tx) => tx.append([entry("from-a")]));
      await until(() => window.seen.length === 1);
    `);
    const fromB = await inPage(b, `
      const store = await openWorkspaceOpfs("wsc-tabs", { waitMs: 5000 });
      const seqs = [];
      for (const id of ["b1", "b2"]) seqs.push(...(await store.transaction(ws, (tx) => tx.append([entry(id)]))).map((e) => e.seq));
      await store.close();
      return seqs;
    `);
    const seenByA = await inPage(a, `
      await until(() => window.seen.length === 3);
      await window.sub.cancel();
      const tail = (await window.store.read(ws, { after_seq: 0 })).map((e) => e.seq);
      await window.store.close();
      return { seen: window.seen, tail };
    `);
    assert.deepEqual(fromB, [2, 3]);
    assert.deepEqual(seenByA, { seen: ["from-a", "b1", "b2"], tail: [1, 2, 3] });
    await a.close();
    await b.close();
  });

  test("a page reload keeps the data; the new page's client takes the store over", async () => {
    const page = await openPage();
    await inPage(page, `
      const store = await openWorkspaceOpfs("wsc-reload");
      await store.transaction(ws, (tx) => tx.append([entry("r1"), entry("r2")]));
      window.kept = store; // still open when the page reloads
    `);
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    const got = await inPage(page, `
      const store = await openWorkspaceOpfs("wsc-reload");
      const ids = (await store.read(ws, { after_seq: 0 })).map((e) => e.id);
      const head = await store.headSeq(ws);
      await store.close();
      return { ids, head };
    `);
    assert.deepEqual(got, { ids: ["r1", "r2"], head: 2 });
    await page.close();
  });
});

function ws() {
  return { tenant_id: "acme", workspace_id: "prod" };
}
