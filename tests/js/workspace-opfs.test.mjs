// The workspace log in OPFS (`await WorkspaceStore.openOpfs(name)`, in a dedicated worker) in
// headless Chromium (playwright-core, Debian's chromium): a transaction commits and rolls back,
// calls made while a transaction runs wait for it, every operation, bad input typed and
// changing nothing, close and reopen, a page reload with the data still there; two tabs on one
// store: a subscriber in tab B wakes on tab A's commits, and both write, taking turns on the
// lease, with a gap-free log, and a transaction is never interrupted (an impatient opener gets
// LOCKED, a patient one the store after the commit); the same file holds executions too,
// opened in turns. Run: node --test tests/js/  (needs `npm run build:wasm` and
// /usr/bin/chromium)
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { chromiumSuite, noChromium } from "./chromium.mjs";

const skip = noChromium;

// Code run in the worker before each snippet: helpers in scope.
const PRELUDE = `
const { WorkspaceStore, Store, state } = api;
const ws = { tenant_id: "acme", workspace_id: "prod" };
const entry = (id, type = "oncall:service_error") =>
  ({ id, actor: { kind: "source", name: "monitor" }, event: { type, service: "auth", id } });
const run = (id, status = "pending") => {
  const now = new Date().toISOString();
  return { id, rule: "page", scope_key: "auth", scope: { service: "auth" }, fired_seq: 1, matched: [1],
    correlation_id: id, depth: 0, status, attempts: 0, next_attempt_at: now, created_at: now,
    updated_at: now, error: null, reason: null, checkpoint: null, step: null, checkpoints: 0,
    output: null, trace_ids: [], epoch: 0 };
};
const caught = (promise) => promise.then(
  (value) => ({ resolved: value }),
  (e) => ({ name: e.name, code: e.code, field: e.field, key: e.key, store: e.store, retryable: e.retryable }));
`;

describe("WorkspaceStore.openOpfs in Chromium", { skip }, () => {
  const problems = [];
  const { openPage: open } = chromiumSuite();
  const openPage = () => open("/tests/js/pages/workspace-opfs.html", (error) => problems.push(String(error)));

  /** Runs `code` (an async function body) in the page's worker; resolves with its result. */
  const inWorker = (page, code) => page.evaluate((c) => window.inWorker(c), PRELUDE + code);

  test("transactions commit and roll back; calls made meanwhile wait; every operation", async () => {
    const page = await openPage();
    const got = await inWorker(page, `
      const store = await WorkspaceStore.openOpfs("ws-basic", { synchronous: "normal" });
      state.basic = store;
      const out = { kind: store.kind, held: store.leaseHeld, caps: await store.capabilities() };
      out.first = (await store.transaction(ws, (tx) => tx.append([entry("a"), entry("b")]))).map((e) => e.seq);
      out.rolledBack = await store.transaction(ws, (tx) => { tx.append([entry("c")]); throw new Error("no"); })
        .catch((e) => e.message);
      out.headAfterRollback = await store.headSeq(ws);
      out.duplicate = await caught(store.transaction(ws, (tx) => tx.append([entry("x"), entry("a")])));
      // A call made while a transaction's callback runs waits for the commit.
      const order = [];
      const tx = store.transaction(ws, async (tx) => {
        tx.append([entry("c")]);
        await new Promise((r) => setTimeout(r, 50));
        order.push("commit");
      });
      const head = store.headSeq(ws).then((h) => order.push("head " + h));
      await Promise.all([tx, head]);
      out.order = order;
      // Every other operation.
      const past = "2026-01-01T00:00:00Z";
      await store.transaction(ws, (tx) => {
        tx.saveProgress("page", { rule: "page", last_seq: 3 });
        tx.saveStates("page", [["auth", { count: 2 }], ["db", { count: 1 }]]);
        tx.saveRuns([run("r1"), run("r2", "succeeded")]);
        tx.deadLetter([{ rule: "page", seq: 1, error: "boom" }]);
        tx.saveSchedule("hourly", past);
        tx.saveStoredRule({ rule: { name: "page", when: "t:odd" }, version: 1 });
      });
      out.inTx = await store.transaction(ws, (tx) => ({
        states: tx.states("page", ["db", "auth", "none"]),
        scopeRuns: tx.scopeRuns("page", "auth").map((r) => r.id),
        storedRule: tx.storedRule("page").version,
        envelope: tx.envelope("b").seq,
        read: tx.read(1, 10).map((e) => e.id),
        schedule: tx.schedule("hourly"),
        progress: tx.progress("page"),
      }));
      out.storedRuleConflict = await caught(store.transaction(ws, (tx) =>
        tx.saveStoredRule({ rule: { name: "page" }, version: 3 })));
      out.progress = await store.progress(ws);
      out.schedules = await store.schedules(ws);
      out.runs = (await store.runs(ws, { status: "pending" })).map((r) => r.id);
      out.run = (await store.run(ws, "r2")).status;
      out.dead = await store.deadLetters(ws, "page");
      out.rules = (await store.storedRules(ws)).map((r) => [r.rule.name, r.version]);
      out.history = (await store.ruleHistory(ws, "page")).length;
      out.envelope = (await store.envelope(ws, "c")).seq;
      out.tail = (await store.read(ws, { last: 2 })).map((e) => e.id);
      out.workspaces = await store.workspaces();
      out.info = (await store.workspaceInfo(ws)).head_seq;
      out.due = (await store.dueRuns(Date.now() + 1000, 10)).map((d) => d.run.id);
      out.lease = [await store.acquireLease(ws, "k", "a", 60000), await store.acquireLease(ws, "k", "b", 60000)];
      await store.releaseLease(ws, "k", "a");
      out.leases = await store.leases(ws);
      await store.saveCursor(ws, "relay", 2);
      out.cursor = await store.cursor(ws, "relay");
      out.cursors = await store.cursors(ws);
      await store.saveCursor(ws, "relay", 1);
      out.cursorBack = await store.cursor(ws, "relay");
      return out;
    `);
    assert.equal(got.kind, "opfs");
    assert.equal(got.held, true);
    assert.equal(got.caps.durable, true);
    assert.deepEqual(got.first, [1, 2]);
    assert.equal(got.rolledBack, "no");
    assert.equal(got.headAfterRollback, 2, "a rollback takes no seq");
    assert.equal(got.duplicate.code, "ALREADY_EXISTS");
    assert.equal(got.duplicate.key, "a");
    assert.deepEqual(got.order, ["commit", "head 3"]);
    assert.deepEqual(got.inTx.states, [["db", { count: 1 }], ["auth", { count: 2 }]]);
    assert.deepEqual(got.inTx.scopeRuns, ["r1"]);
    assert.equal(got.inTx.storedRule, 1);
    assert.equal(got.inTx.envelope, 2);
    assert.deepEqual(got.inTx.read, ["b", "c"]);
    assert.match(got.inTx.schedule, /^2026-01-01T00:00:00/);
    assert.deepEqual(got.inTx.progress, { rule: "page", last_seq: 3 });
    assert.equal(got.storedRuleConflict.code, "CONFLICT");
    assert.deepEqual(got.progress, [["page", { rule: "page", last_seq: 3 }]]);
    assert.equal(got.schedules.length, 1);
    assert.deepEqual(got.runs, ["r1"]);
    assert.equal(got.run, "succeeded");
    assert.deepEqual(got.dead, [{ rule: "page", seq: 1, error: "boom" }]);
    assert.deepEqual(got.rules, [["page", 1]]);
    assert.equal(got.history, 0, "no rule events in the log");
    assert.equal(got.envelope, 3);
    assert.deepEqual(got.tail, ["b", "c"]);
    assert.deepEqual(got.workspaces, [{ tenant_id: "acme", workspace_id: "prod" }]);
    assert.equal(got.info, 3);
    assert.deepEqual(got.due, ["r1"]);
    assert.deepEqual(got.lease, [true, false]);
    assert.deepEqual(got.leases, []);
    assert.equal(got.cursor, 2);
    assert.deepEqual(got.cursors, [["relay", 2]]);
    assert.equal(got.cursorBack, 2, "a cursor only moves forward");
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("bad input is a typed error and changes nothing; close, reopen, LOCKED", async () => {
    const page = await openPage();
    const got = await inWorker(page, `
      const store = await WorkspaceStore.openOpfs("ws-bad");
      await store.transaction(ws, (tx) => tx.append([entry("a")]));
      const snapshot = async () => JSON.stringify([await store.read(ws), await store.runs(ws),
        await store.cursors(ws), await store.workspaces(), await store.storedRules(ws)]);
      const before = await snapshot();
      const out = {};
      out.open = await Promise.all([
        caught(WorkspaceStore.openOpfs("bad name!")),
        caught(WorkspaceStore.openOpfs("ws-x", { waitMs: -1 })),
        caught(WorkspaceStore.openOpfs("ws-x", { waitMs: NaN })),
        caught(WorkspaceStore.openOpfs("ws-x", { synchronous: "off" })),
        caught(WorkspaceStore.openOpfs("ws-x", { cache: 1 })),
      ]);
      out.calls = await Promise.all([
        caught(store.headSeq({ tenant_id: "acme" })),
        caught(store.read(ws, { after_seq: -1 })),
        caught(store.read(ws, { limit: "10" })),
        caught(store.runs(ws, { status: "walking" })),
        caught(store.dueRuns("yesterday", 10)),
        caught(store.dueRuns(Date.now(), -1)),
        caught(store.acquireLease(ws, "k", "a", 0)),
        caught(store.saveCursor(ws, "c", 1.5)),
        caught(store.transaction(ws, "not a function")),
        caught(store.transaction(ws, (tx) => tx.append([{ id: "b", event: { no: "type" } }]))),
        caught(store.transaction(ws, (tx) => tx.saveRuns([{ id: "r" }]))),
        caught(store.transaction(ws, (tx) => tx.saveSchedule("s", NaN))),
      ]);
      out.unchanged = before === await snapshot();
      // The store is held: another opener waits at most waitMs, then LOCKED; so does the
      // execution store on the same name (one file, one holder at a time).
      out.lockedAfterWait = await caught(Store.openOpfs("ws-bad", { waitMs: 100 }));
      out.locked = await caught(WorkspaceStore.openOpfs("ws-bad", { waitMs: 0 }));
      await store.close();
      out.closed = [store.kind, await caught(store.headSeq(ws))];
      const again = await WorkspaceStore.openOpfs("ws-bad", { waitMs: 0 });
      out.reopened = (await again.read(ws)).map((e) => e.id);
      await again.close();
      // The same file holds executions too, opened in turns (never both at once).
      const executions = await Store.openOpfs("ws-bad", { waitMs: 1000 });
      const exe = { id: "order-1", definition_id: "orders", version: 0 };
      executions.save(exe);
      executions.close();
      const both = await WorkspaceStore.openOpfs("ws-bad", { waitMs: 1000 });
      await both.transaction(ws, (tx) => tx.append([entry("after-executions")]));
      out.shared = (await both.read(ws)).map((e) => e.id);
      await both.close();
      const executionsAgain = await Store.openOpfs("ws-bad", { waitMs: 1000 });
      out.execution = executionsAgain.load("order-1").version;
      executionsAgain.close();
      return out;
    `);
    for (const [i, e] of got.open.entries()) assert.equal(e.code, "INVALID_INPUT", `open ${i}: ${JSON.stringify(e)}`);
    assert.deepEqual(got.open.map((e) => e.field), ["name", "options.waitMs", "options.waitMs", "options.synchronous", "options.cache"]);
    for (const [i, e] of got.calls.entries()) assert.equal(e.code, "INVALID_INPUT", `call ${i}: ${JSON.stringify(e)}`);
    assert.equal(got.unchanged, true, "bad input changed nothing");
    assert.equal(got.locked.name, "StoreError");
    assert.equal(got.locked.code, "LOCKED");
    assert.equal(got.locked.store, "ws-bad");
    assert.equal(got.lockedAfterWait.code, "LOCKED");
    assert.equal(got.closed[0], "closed");
    assert.equal(got.closed[1].code, "BACKEND");
    assert.deepEqual(got.reopened, ["a"]);
    assert.deepEqual(got.shared, ["a", "after-executions"]);
    assert.equal(got.execution, 1);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("a page reload keeps the data; the new page's worker takes the store over", async () => {
    const page = await openPage();
    await inWorker(page, `
      const store = await WorkspaceStore.openOpfs("ws-reload");
      await store.transaction(ws, (tx) => tx.append([entry("r1"), entry("r2")]));
      await store.transaction(ws, (tx) => tx.saveRuns([run("run-1")]));
      state.reload = store; // still open when the page reloads
    `);
    await page.reload();
    await page.waitForFunction(() => window.ready === true);
    const got = await inWorker(page, `
      const store = await WorkspaceStore.openOpfs("ws-reload");
      const out = { ids: (await store.read(ws)).map((e) => e.id), run: (await store.run(ws, "run-1")).id };
      out.next = (await store.transaction(ws, (tx) => tx.append([entry("r3")])))[0].seq;
      await store.close();
      return out;
    `);
    assert.deepEqual(got, { ids: ["r1", "r2"], run: "run-1", next: 3 });
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("two tabs: a subscriber in B wakes on A's commits; both write, taking turns", async () => {
    const a = await openPage();
    const b = await openPage();
    await inWorker(a, `state.store = await WorkspaceStore.openOpfs("ws-tabs");
      await state.store.transaction(ws, (tx) => tx.append([entry("seed")]));`);
    // B opens while A holds the store: A lets go when asked.
    await inWorker(b, `
      state.store = await WorkspaceStore.openOpfs("ws-tabs");
      state.seen = [];
      state.following = (async () => {
        for await (const e of state.store.subscribe(ws, { afterSeq: 1 })) {
          state.seen.push([e.seq, e.id, Date.now()]);
          if (e.seq === 4) break;
        }
      })();
    `);
    const sent = await inWorker(a, `
      const at = [];
      for (const id of ["a1", "a2", "a3"]) {
        await state.store.transaction(ws, (tx) => tx.append([entry(id)]));
        at.push(Date.now());
        await new Promise((r) => setTimeout(r, 30));
      }
      return at;
    `);
    const seen = await inWorker(b, `
      await Promise.race([state.following, new Promise((_, no) => setTimeout(() => no(new Error("B did not wake")), 10000))]);
      return state.seen;
    `);
    assert.deepEqual(seen.map(([seq, id]) => [seq, id]), [[2, "a1"], [3, "a2"], [4, "a3"]]);
    const lags = seen.map(([, , at], i) => at - sent[i]).sort((x, y) => x - y);
    console.log(`two tabs: tab B's subscriber woke ${lags.join(", ")} ms after tab A's commits resolved (B reads under the lease A hands over)`);

    // Both write at once, 25 transactions each: every one lands once, the log stays gap-free.
    const writes = (who) => `
      const started = performance.now();
      for (let i = 0; i < 25; i++) {
        await state.store.transaction(ws, (tx) => {
          const head = tx.headSeq();
          tx.append([entry("${who}" + i)]);
          if (tx.headSeq() !== head + 1) throw new Error("not gap-free");
        });
      }
      return Math.round(performance.now() - started);
    `;
    const [msA, msB] = await Promise.all([inWorker(a, writes("A")), inWorker(b, writes("B"))]);
    const log = await inWorker(a, `return (await state.store.read(ws)).map((e) => [e.seq, e.id]);`);
    assert.equal(log.length, 4 + 50);
    log.forEach(([seq], i) => assert.equal(seq, i + 1, "gap-free"));
    const ids = log.map(([, id]) => id);
    assert.equal(new Set(ids).size, ids.length, "every id once");
    for (let i = 0; i < 25; i++) {
      assert.ok(ids.includes(`A${i}`) && ids.includes(`B${i}`), `A${i} and B${i}`);
    }
    // Taking turns: neither tab kept the store for all its transactions while the other waited.
    const switches = ids.slice(5).filter((id, i) => id[0] !== ids.slice(5)[i - 1]?.[0]).length - 1;
    assert.ok(switches >= 4, `the tabs took turns: the log switches between A and B ${switches} times\n${ids}`);
    console.log(`two tabs, 25 transactions each at once: ${msA} ms (A), ${msB} ms (B); the log switches between them ${switches} times`);
    // A transaction is never interrupted: while A's runs, a store in B that waits 100 ms at
    // most gets LOCKED; one that waits longer gets the store once A has committed.
    await inWorker(a, `state.long = state.store.transaction(ws, async (tx) => {
      tx.append([entry("long")]);
      await new Promise((r) => setTimeout(r, 800));
    });
    await new Promise((r) => setTimeout(r, 50));`);
    const during = await inWorker(b, `
      const t = performance.now();
      const impatient = await caught(WorkspaceStore.openOpfs("ws-tabs", { waitMs: 100 }));
      const head = await state.store.headSeq(ws);
      return { impatient, head, ms: Math.round(performance.now() - t) };
    `);
    await inWorker(a, `await state.long;`);
    assert.equal(during.impatient.code, "LOCKED");
    assert.equal(during.head, 4 + 50 + 1, "B read after A's transaction committed");
    assert.ok(during.ms >= 500, `B waited for the transaction (${during.ms} ms)`);
    await inWorker(a, `await state.store.close();`);
    await inWorker(b, `await state.store.close();`);
    assert.deepEqual(problems, []);
    await a.close();
    await b.close();
  });
});
