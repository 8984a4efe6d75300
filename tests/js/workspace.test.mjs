// The workspace log of the npm package as a Node user has it: `import { WorkspaceStore }
// from "execstore"`. Transactions (commit on resolve, roll back on throw, queued per
// workspace), every operation, errors with `code`, bad input changing nothing, subscriptions
// that replay and then wake on commits, and the TypeScript declarations.
// Run: node --test tests/js/  (needs `npm run build:wasm`, and `npm ci` for tsc)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { WorkspaceStore } from "execstore";

import { tscSnippet } from "./tsc.mjs";

const WS = { tenant_id: "acme", workspace_id: "prod" };

function entry(id, type = "oncall:service_error", extra = {}) {
  return { id, actor: { kind: "source", name: "monitor" }, event: { type, service: "auth", ...extra } };
}

/** Runs `fn` and returns what it threw (failing if it did not throw). */
function thrown(fn) {
  try {
    fn();
  } catch (error) {
    return error;
  }
  assert.fail("expected an error");
}

/** Everything a workspace store holds that a bad call could change. */
function snapshot(store, ref = WS) {
  return JSON.stringify({
    log: store.read(ref),
    runs: store.runs(ref),
    dead: store.deadLetters(ref),
    progress: store.progress(ref),
    schedules: store.schedules(ref),
    rules: store.storedRules(ref),
    leases: store.leases(ref),
    cursors: store.cursors(ref),
    workspaces: store.workspaces(),
  });
}

function run(id, { rule = "page", scope_key = "auth", fired_seq = 1, status = "pending", at } = {}) {
  const now = at ?? new Date().toISOString();
  return {
    id, rule, scope_key, scope: { service: scope_key }, fired_seq, matched: [fired_seq], correlation_id: id,
    depth: 0, status, attempts: 0, next_attempt_at: now, created_at: now, updated_at: now, error: null,
    reason: null, checkpoint: null, step: null, checkpoints: 0, output: null, trace_ids: [], epoch: 0,
  };
}

describe("WorkspaceStore.memory()", () => {
  test("a transaction appends with gap-free seqs and commits when the callback resolves", async () => {
    const store = WorkspaceStore.memory();
    assert.equal(store.kind, "memory");
    assert.deepEqual(store.capabilities(), { durable: false, cross_process_wakeups: false });
    const result = await store.transaction(WS, async (tx) => {
      assert.equal(tx.envelope("alert-7"), null);
      const envelopes = tx.append([entry("alert-7"), entry("alert-8")]);
      await new Promise((resolve) => setTimeout(resolve, 5)); // an await inside is fine
      assert.equal(tx.headSeq(), 2);
      assert.equal(store.headSeq(WS), 0, "nothing is visible before the commit");
      return envelopes;
    });
    assert.deepEqual(result.map((e) => e.seq), [1, 2]);
    assert.equal(result[0].correlation_id, "alert-7");
    assert.equal(result[0].workspace_id, "prod");
    assert.match(result[0].ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$/);
    assert.deepEqual(Object.keys(result[0]), [
      "seq", "id", "ts", "workspace_id", "actor", "causation", "correlation_id", "traceparent", "event",
    ]);
    assert.equal(store.headSeq(WS), 2);
    assert.deepEqual(store.read(WS), result);
    assert.deepEqual(store.envelope(WS, "alert-8"), result[1]);
    assert.deepEqual(store.workspaces(), [WS]);
    assert.equal(store.workspaceInfo(WS).head_seq, 2);
    assert.equal(store.workspaceInfo({ tenant_id: "acme", workspace_id: "other" }), null);
  });

  test("a callback that throws rolls back and rethrows; nothing moved", async () => {
    const store = WorkspaceStore.memory();
    await store.transaction(WS, (tx) => tx.append([entry("a")]));
    const before = snapshot(store);
    const boom = new Error("boom");
    let kept;
    await assert.rejects(
      store.transaction(WS, async (tx) => {
        kept = tx;
        tx.append([entry("b")]);
        tx.saveRuns([run("r1")]);
        throw boom;
      }),
      (error) => error === boom,
    );
    assert.equal(snapshot(store), before);
    assert.equal(kept.ended, true);
    assert.equal(thrown(() => kept.headSeq()).code, "BACKEND", "a transaction is unusable after it ends");
    const [next] = await store.transaction(WS, (tx) => tx.append([entry("b")]));
    assert.equal(next.seq, 2, "the rolled-back append took no seq");
  });

  test("a workspace's transactions queue; other workspaces do not wait", async () => {
    const store = WorkspaceStore.memory();
    const order = [];
    let releaseFirst;
    const gate = new Promise((resolve) => (releaseFirst = resolve));
    const first = store.transaction(WS, async (tx) => {
      order.push("first begins");
      await gate;
      tx.append([entry("one")]);
      order.push("first ends");
    });
    const second = store.transaction(WS, (tx) => {
      order.push("second begins");
      const seq = tx.headSeq();
      tx.append([entry(`two-${seq}`)]);
    });
    const other = store.transaction({ tenant_id: "acme", workspace_id: "dev" }, (tx) => {
      order.push("other workspace");
      tx.append([entry("x")]);
    });
    await other;
    assert.deepEqual(order, ["first begins", "other workspace"]);
    releaseFirst();
    await Promise.all([first, second]);
    assert.deepEqual(order, ["first begins", "other workspace", "first ends", "second begins"]);
    assert.deepEqual(store.read(WS).map((e) => e.id), ["one", "two-1"], "the second read the first's commit");
  });

  test("a duplicate id is ALREADY_EXISTS, appends none of the call, and the transaction goes on", async () => {
    const store = WorkspaceStore.memory();
    await store.transaction(WS, (tx) => tx.append([entry("a")]));
    await store.transaction(WS, (tx) => {
      const error = thrown(() => tx.append([entry("b"), entry("a")]));
      assert.equal(error.name, "StoreError");
      assert.equal(error.code, "ALREADY_EXISTS");
      assert.equal(error.what, "event");
      assert.equal(error.key, "a");
      assert.ok(error instanceof Error);
      assert.equal(thrown(() => tx.append([entry("c"), entry("c")])).code, "ALREADY_EXISTS");
      assert.equal(tx.headSeq(), 1);
      tx.append([entry("b")]);
    });
    assert.deepEqual(store.read(WS).map((e) => [e.seq, e.id]), [[1, "a"], [2, "b"]]);
  });

  test("read windows, types, last; rule history of stored rules", async () => {
    const store = WorkspaceStore.memory();
    await store.transaction(WS, (tx) => {
      tx.append([1, 2, 3, 4, 5].map((i) => entry(`e${i}`, i % 2 ? "t:odd" : "t:even")));
      tx.saveStoredRule({ rule: { name: "page", when: "t:odd" }, version: 1 });
      assert.equal(thrown(() => tx.saveStoredRule({ rule: { name: "page" }, version: 3 })).code, "CONFLICT");
    });
    assert.deepEqual(store.read(WS, { after_seq: 1, before_seq: 5 }).map((e) => e.seq), [2, 3, 4]);
    assert.deepEqual(store.read(WS, { types: ["t:odd"], last: 2 }).map((e) => e.seq), [3, 5]);
    assert.deepEqual(store.read(WS, { limit: 2 }).map((e) => e.seq), [1, 2]);
    assert.deepEqual(store.storedRules(WS), [
      { rule: { name: "page", when: "t:odd" }, version: 1, status: "active", provenance: {} },
    ]);
    assert.equal(thrown(() => store.read(WS, { limit: 1, last: 1 })).code, "INVALID_INPUT");
    assert.ok(Array.isArray(store.ruleHistory(WS, "page")));
  });

  test("progress, scope states, runs, dead letters, schedules, due runs", async () => {
    const store = WorkspaceStore.memory();
    const past = "2026-01-01T12:00:00Z";
    await store.transaction(WS, (tx) => {
      tx.append([entry("e1")]);
      tx.saveProgress("page", { rule: "page", last_seq: 1 });
      tx.saveStates("page", [["auth", { count: 1 }], ["db", { count: 2 }]]);
      assert.deepEqual(tx.states("page", ["db", "nope", "auth"]), [["db", { count: 2 }], ["auth", { count: 1 }]]);
      tx.saveRuns([run("r1", { at: past }), run("r2", { at: past, fired_seq: 2 })]);
      assert.deepEqual(tx.scopeRuns("page", "auth").map((r) => r.id), ["r1", "r2"]);
      tx.deadLetter([{ rule: "page", seq: 1, error: "boom" }]);
      tx.saveSchedule("hourly", past);
      assert.equal(tx.schedule("hourly"), past);
    });
    assert.deepEqual(store.progress(WS), [["page", { rule: "page", last_seq: 1 }]]);
    assert.deepEqual(store.runs(WS).map((r) => r.id).sort(), ["r1", "r2"]);
    assert.equal(store.run(WS, "r1").status, "pending");
    assert.deepEqual(store.runs(WS, { status: "running" }), []);
    assert.deepEqual(store.deadLetters(WS, "page"), [{ rule: "page", seq: 1, error: "boom" }]);
    assert.deepEqual(store.schedules(WS), [["hourly", past]]);
    const due = store.dueRuns("2026-01-01T13:00:00Z", 10);
    assert.deepEqual(due.map((d) => [d.workspace, d.run.id]), [[WS, "r1"], [WS, "r2"]]);
    const ordered = store.dueRuns(Date.parse("2026-01-01T13:00:00Z"), 10, { ordered: ["page"] });
    assert.deepEqual(ordered.map((d) => d.run.id), ["r1"], "an ordered rule's scope starts one run at a time");
    assert.deepEqual(store.dueRuns(past, 0), []);
    await store.transaction(WS, (tx) => tx.clearStates("page"));
    await store.transaction(WS, (tx) => assert.deepEqual(tx.states("page", ["auth"]), []));
  });

  test("leases and cursors", async () => {
    const store = WorkspaceStore.memory();
    assert.equal(store.acquireLease(WS, "run:r1", "a", 60_000), true);
    assert.equal(store.acquireLease(WS, "run:r1", "b", 60_000), false);
    store.releaseLease(WS, "run:r1", "b");
    assert.equal(store.leases(WS)[0].holder, "a");
    store.releaseLease(WS, "run:r1", "a");
    assert.equal(store.acquireLease(WS, "run:r1", "b", 20), true);
    await new Promise((resolve) => setTimeout(resolve, 40));
    assert.equal(store.acquireLease(WS, "run:r1", "c", 60_000), true, "a lapsed lease is taken over");
    assert.equal(thrown(() => store.acquireLease(WS, "k", "a", 0)).code, "INVALID_INPUT");
    store.saveCursor(WS, "mailer", 5);
    store.saveCursor(WS, "mailer", 3);
    assert.equal(store.cursor(WS, "mailer"), 5);
    assert.deepEqual(store.cursors(WS), [["mailer", 5]]);
    assert.equal(store.cursor(WS, "nobody"), 0);
  });

  test("every bad input is INVALID_INPUT and changes nothing", async () => {
    const store = WorkspaceStore.memory();
    await store.transaction(WS, (tx) => tx.append([entry("a")]));
    const before = snapshot(store);
    const bad = [
      () => store.headSeq({ tenant_id: "acme" }),
      () => store.headSeq({ tenant_id: "", workspace_id: "w" }),
      () => store.headSeq({ tenant_id: "a", workspace_id: "w", extra: 1 }),
      () => store.headSeq("acme/prod"),
      () => store.read(WS, { after_seq: -1 }),
      () => store.read(WS, { limit: "5" }),
      () => store.read(WS, { lmit: 5 }),
      () => store.runs(WS, { status: "walking" }),
      () => store.dueRuns("yesterday", 10),
      () => store.dueRuns(Number.NaN, 10),
      () => store.dueRuns("2026-01-01T00:00:00Z", -1),
      () => store.acquireLease(WS, "k", "h", "60"),
      () => store.saveCursor(WS, "c", 1.5),
      () => store.saveCursor(WS, "c", -1),
      () => store.cursor(WS, 7),
      () => store.subscribe(WS, { afterSeq: -1 }),
      () => store.subscribe({ tenant_id: 1, workspace_id: "w" }),
    ];
    for (const call of bad) {
      const error = thrown(call);
      assert.equal(error.code, "INVALID_INPUT", `${call}: ${error.message}`);
      assert.equal(typeof error.field, "string");
    }
    await assert.rejects(store.transaction({ tenant_id: "acme" }, () => {}), { code: "INVALID_INPUT" });
    await assert.rejects(store.transaction(WS, "not a function"), { code: "INVALID_INPUT" });
    const inTx = [
      (tx) => tx.append([{ id: "x", event: { service: "no type" } }]),
      (tx) => tx.append([{ id: "x", event: "text" }]),
      (tx) => tx.append([{ event: { type: "t:a" } }]),
      (tx) => tx.append({ id: "x" }),
      (tx) => tx.saveRuns([{ id: "r" }]),
      (tx) => tx.saveRuns([{ ...run("r"), status: "walking" }]),
      (tx) => tx.deadLetter([{ seq: 1 }]),
      (tx) => tx.saveSchedule("s", "not a time"),
      (tx) => tx.saveStoredRule({ rule: { when: "x" }, version: 1 }),
      (tx) => tx.saveStoredRule({ rule: { name: "n" }, version: 1, status: "paused" }),
      (tx) => tx.saveStates("r", { auth: {} }),
      (tx) => tx.read(0, -1),
    ];
    await store.transaction(WS, (tx) => {
      for (const call of inTx) {
        const error = thrown(() => call(tx));
        assert.equal(error.code, "INVALID_INPUT", `${call}: ${error.message}`);
      }
      assert.equal(tx.headSeq(), 1);
    });
    assert.equal(snapshot(store), before);
  });

  test("a bad entry or stored rule names its field as every surface does (the core's decoder)", async () => {
    const store = WorkspaceStore.memory();
    const before = snapshot(store);
    const cases = [
      [(tx) => tx.append([entry("a"), { ...entry("b"), corelation_id: "c" }]), "entries[1].corelation_id", "is not a known field"],
      [(tx) => tx.append([entry("a"), { event: { type: "t:a" } }]), "entries[1].id", "is required"],
      [(tx) => tx.append([entry("a"), { ...entry("b"), event: "text" }]), "entries[1].event", "must be a JSON object"],
      [(tx) => tx.append([entry("a"), { ...entry("b"), traceparent: 7 }]), "entries[1].traceparent", "must be a string or null"],
      [(tx) => tx.append([entry("a"), 3]), "entries[1]", "must be a JSON object"],
      [(tx) => tx.saveStoredRule({ rule: { name: "n" }, version: 1, status: "paused" }), "stored.status", null],
      [(tx) => tx.saveStoredRule({ rule: { when: "x" }, version: 1 }), "stored.rule.name", null],
      [(tx) => tx.saveStoredRule({ rule: { name: "n" }, version: 1.5 }), "stored.version", "must be an integer"],
      [(tx) => tx.saveStoredRule({ rule: { name: "n" }, version: 1, note: "x" }), "stored.note", "is not a known field"],
    ];
    await store.transaction(WS, (tx) => {
      for (const [call, field, reason] of cases) {
        const error = thrown(() => call(tx));
        assert.equal(error.code, "INVALID_INPUT", `${call}: ${error.message}`);
        assert.equal(error.field, field, `${call}: ${error.message}`);
        if (reason !== null) assert.equal(error.reason, reason, `${call}: ${error.message}`);
      }
      assert.equal(tx.headSeq(), 0);
    });
    assert.equal(snapshot(store), before);
    await store.transaction(WS, (tx) => tx.saveStoredRule({ rule: { name: "n" }, version: 1 }));
    assert.deepEqual(store.storedRules(WS), [{ rule: { name: "n" }, version: 1, status: "active", provenance: {} }]);
  });

  test("a closed store throws BACKEND", async () => {
    const store = WorkspaceStore.memory();
    store.close();
    assert.equal(store.kind, "closed");
    assert.equal(thrown(() => store.headSeq(WS)).code, "BACKEND");
    await assert.rejects(store.transaction(WS, () => {}), { code: "BACKEND" });
  });
});

describe("WorkspaceStore.subscribe", () => {
  test("replays, then wakes on each commit, never missing or repeating one", async () => {
    const store = WorkspaceStore.memory();
    await store.transaction(WS, (tx) => tx.append([entry("a"), entry("b")]));
    const seen = [];
    const reading = (async () => {
      for await (const envelope of store.subscribe(WS, { afterSeq: 1 })) {
        seen.push(envelope.seq);
        if (envelope.seq === 12) break;
      }
    })();
    for (let i = 0; i < 10; i++) {
      await store.transaction(WS, (tx) => tx.append([entry(`n${i}`)]));
      if (i % 3 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    // an unrelated workspace's commits do not disturb it
    await store.transaction({ tenant_id: "acme", workspace_id: "dev" }, (tx) => tx.append([entry("z")]));
    await reading;
    assert.deepEqual(seen, [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  test("a commit wakes a waiting subscription at once; a rollback does not", async () => {
    const store = WorkspaceStore.memory();
    const sub = store.subscribe(WS);
    const next = sub.next();
    let settled = false;
    next.then(() => (settled = true));
    await store.transaction(WS, () => {}).catch(() => {});
    await assert.rejects(store.transaction(WS, (tx) => {
      tx.append([entry("gone")]);
      throw new Error("no");
    }));
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(settled, false);
    await store.transaction(WS, (tx) => tx.append([entry("here")]));
    // "At once" in event-loop turns, not milliseconds (a loaded machine stretches those): the
    // commit's wake-up settles the waiting `next()` within a few turns; without it, never.
    for (let turn = 0; turn < 20 && !settled; turn++) await new Promise((resolve) => setTimeout(resolve, 0));
    assert.equal(settled, true, "the commit woke the waiting subscription within 20 event-loop turns");
    const { value } = await next;
    assert.equal(value.id, "here");
    assert.deepEqual(await sub.return(), { done: true, value: undefined });
    assert.deepEqual(await sub.next(), { done: true, value: undefined });
  });

  test("an abort signal or close() ends a waiting subscription", async () => {
    const store = WorkspaceStore.memory();
    const controller = new AbortController();
    const sub = store.subscribe(WS, { signal: controller.signal });
    const waiting = sub.next();
    controller.abort();
    assert.deepEqual(await waiting, { done: true, value: undefined });
    const other = store.subscribe(WS);
    const pending = other.next();
    store.close();
    assert.deepEqual(await pending, { done: true, value: undefined });
  });
});

describe("the TypeScript declarations of the workspace log", () => {
  const tsc = tscSnippet;
  const ROOT = fileURLToPath(new URL("../../", import.meta.url));

  const USAGE = `
import { WorkspaceStore, type Envelope, type WorkspaceRef } from "execstore";
const store = WorkspaceStore.memory();
const ws: WorkspaceRef = { tenant_id: "acme", workspace_id: "prod" };
const seqs: number[] = await store.transaction(ws, async (tx) => {
  const got: Envelope[] = tx.append([{ id: "a", actor: { kind: "source" }, event: { type: "t:a", n: 1 } }]);
  tx.saveRuns(store.runs(ws, { status: "pending", limit: 5 }));
  tx.saveStates("rule", [["key", { count: 1 }]]);
  return got.map((e) => e.seq);
});
for await (const envelope of store.subscribe(ws, { afterSeq: seqs[0] })) {
  const type: string = envelope.event.type;
  void type;
  break;
}
const due = store.dueRuns(Date.now(), 10, { ordered: ["rule"] });
const id: string = due[0].run.id;
const ok: boolean = store.acquireLease(ws, "k", "h", 1000);
void id;
void ok;
`;

  test("a typical use compiles under --strict", () => {
    assert.equal(tsc(USAGE), "");
  });

  test("misuses are type errors", () => {
    const head = [
      `import { WorkspaceStore } from "execstore";`,
      `const store = WorkspaceStore.memory();`,
      `const ws = { tenant_id: "acme", workspace_id: "prod" };`,
    ];
    const misuses = [
      `store.headSeq({ tenant_id: "a" });`,
      `store.read(ws, { after_seq: "1" });`,
      `store.runs(ws, { status: "walking" });`,
      `void store.transaction(ws, (tx) => tx.append([{ id: "a", event: { kind: "no type" } }]));`,
      `export const n: string = store.cursor(ws, "c");`,
      `store.subscribe(ws, { after: 1 });`,
      `void store.transaction(ws, (tx) => tx.commit());`,
      `store.dueRuns(new Date(), 1);`,
    ];
    const output = tsc([...head, ...misuses].join("\n"));
    const reported = new Set([...output.matchAll(/main\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1])));
    misuses.forEach((misuse, i) => {
      assert.ok(reported.has(head.length + i + 1), `compiles, but should not: ${misuse}\n${output}`);
    });
    assert.equal(reported.size, misuses.length, output);
  });

  test("the workspace declarations contain no `any`", () => {
    for (const name of ["workspace.d.ts", "wasm/execstore.d.ts"]) {
      const text = readFileSync(join(ROOT, "crates/execstore-wasm/npm", name), "utf8");
      const part = name === "wasm/execstore.d.ts" ? text.slice(0, text.indexOf("export type InitInput")) : text;
      const code = part.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
      assert.doesNotMatch(code, /\bany\b/, `${name} declares an any`);
    }
  });
});
