// What a caller names is what is stored or looked up, and NaN is not a time (issue 23), through
// the npm package in Node:
// - a JS string holding a lone UTF-16 surrogate ("a\udc00") is INVALID_INPUT in every string
//   argument of every method of Store, WorkspaceStore, WorkspaceTx and MonitorApi, and changes
//   nothing: converted as wasm-bindgen converts it, it would be "a\ufffd" and name another
//   execution (`purge("a\udc00", v)` deleted "a\ufffd", `load("a\ud800")` returned it). The
//   tables below list each method's string arguments; a method missing from them fails the
//   test, so a new method is covered by adding its row.
// - NaN, Infinity and -Infinity in every time field are INVALID_INPUT with nothing stored
//   (JSON.stringify would have written them as null: "no finish time").
// Run: node --test tests/js/  (needs `npm run build:wasm`)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { MonitorApi, Store, WorkspaceImage, WorkspaceStore, WorkspaceTx } from "execstore";

import { binMissing, demo, tempDir } from "./native.mjs";

/** Lone surrogates, alone and inside a string. */
const LONE = ["\ud800", "\udc00", "a\ud800", "a\udc00", "x\ud800y", "\udc00z"];
/** What wasm-bindgen's conversion made of them: ids the seeded stores hold, so that a lossy
 * conversion finds (or changes) something. */
const LOSSY = [...new Set(LONE.map((s) => s.replace(/[\ud800-\udfff]/g, "\ufffd")))];

/** Runs `fn` (sync or async) and returns what it threw or rejected with (failing if neither). */
async function failure(fn) {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  assert.fail("expected an error");
}

/** The names a class has that a caller can call: its prototype's (methods and getters) or,
 * `statics`, its own; wasm-bindgen's internals left out. */
function members(cls, statics = false) {
  const owner = statics ? cls : cls.prototype;
  const skip = statics ? ["length", "name", "prototype"] : ["constructor", "free"];
  return Object.getOwnPropertyNames(owner).filter((n) => !skip.includes(n) && !n.startsWith("__"));
}

/** Fails if a member of `cls` has no row in `table` (or a row names no member). */
function assertCovered(what, names, table) {
  assert.deepEqual([...names].sort(), Object.keys(table).sort(), `${what}: every method has a row in the table`);
}

// ---------------------------------------------------------------------------------------------
// Store

const exe = (id, extra = {}) => ({ id, definition_id: "orders", status: "RUNNING", version: 0, ...extra });

/** A store holding an execution for each lossy id, with an outbox entry, a processed event, a
 * timer, a spawn and a trace step each, all named by that id. */
function seededStore() {
  const store = Store.memory();
  for (const id of LOSSY) {
    store.commit(exe(id, { definition_id: id, active_path: id }), {
      emits: [{ target_id: id, event: { id, kind: id } }],
      processed_event_id: id,
      timers: [{ action: "schedule", path: id, fire_at: 100 }],
      spawns: [{ child_id: `${id}:c`, root_path: id, context: {} }],
      trace: { event_kind: id },
    });
  }
  return store;
}

/** Everything a store holds that a call could change. */
function snapshot(store) {
  return JSON.stringify({
    executions: store.listExecutions({ limit: 10000 }),
    loaded: store.idsWithPrefix("").map((id) => [store.load(id), store.readTrace(id)]),
    processed: LOSSY.map((id) => store.isProcessed(id, id)),
    outbox: store.pendingOutbox(null, 10000),
    spawns: store.pendingSpawns(null, 10000),
    timers: store.dueTimers(1e12, null, 10000),
  });
}

const fresh = () => exe("fresh");
const V = 1; // the seeded executions' version

/** Per method of `Store`: one list of arguments per string argument (`s` in its place);
 * `[]`: it takes no string. */
const STORE = {
  kind: [],
  prefix: [],
  capabilities: [],
  traceMax: [],
  close: [],
  save: [(s) => [exe(s)], (s) => [exe("fresh", { definition_id: s })], (s) => [exe("fresh", { parent_id: s })]],
  commit: [
    (s) => [exe(s), {}],
    (s) => [fresh(), { processed_event_id: s }],
    (s) => [fresh(), { emits: [{ target_id: s, event: { id: "e", kind: "K" } }] }],
    (s) => [fresh(), { emits: [{ target_id: null, event: { id: s, kind: "K" } }] }],
    (s) => [fresh(), { timers: [{ action: "schedule", path: s, fire_at: 5 }] }],
    (s) => [fresh(), { timers: [{ action: "cancel", path: s }] }],
    (s) => [fresh(), { spawns: [{ child_id: s, root_path: "r", context: {} }] }],
  ],
  commitBatch: [(s) => [[{ execution: exe(s) }]], (s) => [[{ execution: fresh(), effects: { processed_event_id: s } }]]],
  load: [(s) => [s]],
  loadForEvent: [(s) => [s, "e"], (s) => [LOSSY[1], s]],
  isProcessed: [(s) => [s, "e"], (s) => [LOSSY[1], s]],
  listExecutions: [
    (s) => [{ cursor: s }],
    (s) => [{ definition_id: s }],
    (s) => [{ search: s }],
    (s) => [{ where: s }],
    (s) => [{ where: `context.k = "${s}"` }],
    (s) => [{ order: s }],
  ],
  attributes: [],
  declareAttribute: [(s) => [s], (s) => [`context.${s}`]],
  dropAttribute: [(s) => [s], (s) => [`context.${s}`]],
  pendingOutbox: [],
  send: [
    (s) => [s, { id: "e", kind: "K" }],
    (s) => [LOSSY[1], { id: s, kind: "K" }],
    (s) => [LOSSY[1], { id: "e", kind: s }],
    (s) => [LOSSY[1], { id: "e", kind: "K", data: { [s]: 1 } }],
  ],
  ackOutbox: [],
  ackOutboxMany: [],
  pendingSpawns: [],
  ackSpawn: [],
  dueTimers: [
    (s) => [1e12, { execution_id: s, path: "p", fire_at: 1 }],
    (s) => [1e12, { execution_id: "a", path: s, fire_at: 1 }],
  ],
  deleteTimer: [(s) => [s, LOSSY[1], 100], (s) => [LOSSY[1], s, 100]],
  readTrace: [(s) => [s]],
  appendTrace: [(s) => [s, { event_kind: "K" }]],
  idsWithPrefix: [(s) => [s]],
  purge: [(s) => [s, V]],
  statusCounts: [(s) => [s]],
  changeToken: [],
  relayOutbox: [],
  relaySpawns: [],
  sweepTimers: [],
  putDefinition: [
    (s) => [s, "v1", {}, 1],
    (s) => ["m", s, {}, 1],
    (s) => ["m", "v1", { [s]: 1 }, 1],
    (s) => ["m", "v1", { states: s }, 1],
  ],
  getDefinition: [(s) => [s, "v1"], (s) => ["m", s]],
};

/** The same for `Store`'s static methods (the OPFS ones refuse before they touch OPFS). */
const STORE_STATIC = {
  memory: [(s) => [{ prefix: s }]],
  sqliteMemory: [(s) => [{ prefix: s }]],
  sqliteFromBytes: [(s) => [new Uint8Array(0), { prefix: s }]],
  openOpfs: [(s) => [s]],
  importOpfs: [(s) => [s, new Uint8Array(0)]],
  openFile: [(s) => [s, { waitMs: 0 }], (s) => [join(tmpdir(), "execstore-lone-prefix.db"), { prefix: s, waitMs: 0 }]],
};

describe("lone surrogates through Store", () => {
  test("the table covers every method of Store", () => {
    assertCovered("Store", members(Store), STORE);
    assertCovered("Store (static)", members(Store, true), STORE_STATIC);
  });

  for (const [method, rows] of Object.entries(STORE)) {
    rows.forEach((row, position) => {
      test(`Store.${method}, string argument ${position + 1}: INVALID_INPUT, nothing changed`, async () => {
        const store = seededStore();
        const before = snapshot(store);
        for (const s of LONE) {
          const error = await failure(() => store[method](...row(s)));
          assert.equal(error.code, "INVALID_INPUT", `${method}(${JSON.stringify(row(s))}): ${error}`);
          assert.equal(snapshot(store), before, `${method}(${JSON.stringify(row(s))}) changed the store`);
        }
      });
    });
  }

  for (const [method, rows] of Object.entries(STORE_STATIC)) {
    rows.forEach((row, position) => {
      test(`Store.${method} (static), string argument ${position + 1}: INVALID_INPUT`, async () => {
        for (const s of LONE) {
          const error = await failure(() => Store[method](...row(s)));
          assert.equal(error.code, "INVALID_INPUT", `${method}(${JSON.stringify(row(s))}): ${error}`);
        }
      });
    });
  }

  test('the issue\'s two: purge("a\\udc00") leaves "a\\ufffd", load("a\\ud800") does not return it', () => {
    const store = Store.memory();
    store.save(exe("a\ufffd"));
    assert.throws(() => store.purge("a\udc00", 1), (e) => e.code === "INVALID_INPUT" && e.field === "executionId");
    assert.equal(store.load("a\ufffd").version, 1, '"a\\ufffd" is still there');
    assert.throws(() => store.load("a\ud800"), (e) => e.code === "INVALID_INPUT" && e.field === "id");
    assert.deepEqual(store.idsWithPrefix(""), ["a\ufffd"]);
    // The real U+FFFD is a character like any other.
    assert.equal(store.purge("a\ufffd", 1), true);
    assert.equal(store.load("a\ufffd"), null);
  });
});

// ---------------------------------------------------------------------------------------------
// WorkspaceStore and WorkspaceTx

const WS = { tenant_id: "acme", workspace_id: "prod" };
const WS2 = { tenant_id: LOSSY[1], workspace_id: LOSSY[1] };
const entry = (id) => ({ id, actor: { kind: "source", name: "m" }, event: { type: "t", n: 1 } });

function runDoc(id, rule = "r", scope_key = "k") {
  const now = "2026-01-01T12:00:00Z";
  return {
    id, rule, scope_key, scope: {}, fired_seq: 1, matched: [1], correlation_id: id, depth: 0,
    status: "pending", attempts: 0, next_attempt_at: now, created_at: now, updated_at: now, error: null,
    reason: null, checkpoint: null, step: null, checkpoints: 0, output: null, trace_ids: [], epoch: 0,
  };
}

/** A workspace store with two workspaces holding, for each lossy name, an entry, progress,
 * scope states, a run, a dead letter, a schedule tick, a stored rule, a lease and a cursor. */
async function seededWorkspaces() {
  const store = WorkspaceStore.memory();
  for (const ref of [WS, WS2]) {
    await store.transaction(ref, (tx) => {
      tx.append(LOSSY.map(entry));
      for (const name of LOSSY) {
        tx.saveProgress(name, { rule: name, last_seq: 1 });
        tx.saveStates(name, [[name, { count: 1 }]]);
        tx.saveRuns([runDoc(name, name, name)]);
        tx.deadLetter([{ rule: name, seq: 1, error: "boom" }]);
        tx.saveSchedule(name, "2026-01-01T12:00:00Z");
        tx.saveStoredRule({ rule: { name }, version: 1 });
      }
    });
    for (const name of LOSSY) {
      store.acquireLease(ref, name, name, 60_000);
      store.saveCursor(ref, name, 1);
    }
  }
  return store;
}

async function wsSnapshot(store) {
  const out = { workspaces: store.workspaces() };
  for (const ref of [WS, WS2]) {
    out[`${ref.tenant_id}/${ref.workspace_id}`] = {
      log: store.read(ref),
      runs: store.runs(ref),
      dead: store.deadLetters(ref),
      progress: store.progress(ref),
      schedules: store.schedules(ref),
      rules: store.storedRules(ref),
      leases: store.leases(ref),
      cursors: store.cursors(ref),
      states: await store.transaction(ref, (tx) => LOSSY.map((name) => tx.states(name, LOSSY))),
    };
  }
  return JSON.stringify(out);
}

const refs = (s) => [{ tenant_id: s, workspace_id: "prod" }, { tenant_id: "acme", workspace_id: s }];
/** Rows for a method whose first argument is a workspace ref: one per part of the ref. */
const withRef = (...rest) => [(s) => [refs(s)[0], ...rest], (s) => [refs(s)[1], ...rest]];

const WORKSPACE_STORE = {
  kind: [],
  close: [],
  capabilities: [],
  transaction: withRef(() => undefined),
  subscribe: withRef(),
  headSeq: withRef(),
  read: [...withRef(), (s) => [WS, { types: [s] }]],
  ruleHistory: [...withRef("r"), (s) => [WS, s]],
  envelope: [...withRef("e"), (s) => [WS, s]],
  run: [...withRef("r"), (s) => [WS, s]],
  runs: [...withRef(), (s) => [WS, { rule: s }], (s) => [WS, { status: s }], (s) => [WS, { scope_key: s }]],
  deadLetters: [...withRef(), (s) => [WS, s]],
  searchLog: [...withRef({ where: "seq > 0" }), (s) => [WS, { where: s }], (s) => [WS, { where: `event.note = "${s}"` }]],
  searchRuns: [...withRef({ where: "rule exists" }), (s) => [WS, { where: s }], (s) => [WS, { where: `scope.k = "${s}"` }]],
  progress: withRef(),
  schedules: withRef(),
  storedRules: withRef(),
  workspaces: [],
  workspaceInfo: withRef(),
  dueRuns: [
    (s) => [`2026-01-01T12:00:00Z${s}`, 10],
    (s) => [Date.now(), 10, { disabled: [s] }],
    (s) => [Date.now(), 10, { ordered: [s] }],
    (s) => [Date.now(), 10, { blocking: [s] }],
  ],
  acquireLease: [...withRef("k", "h", 1000), (s) => [WS, s, "h", 1000], (s) => [WS, "k", s, 1000]],
  releaseLease: [...withRef("k", "h"), (s) => [WS, s, LOSSY[1]], (s) => [WS, LOSSY[1], s]],
  leases: withRef(),
  cursor: [...withRef("c"), (s) => [WS, s]],
  saveCursor: [...withRef("c", 1), (s) => [WS, s, 1]],
  cursors: withRef(),
};

const WORKSPACE_STORE_STATIC = {
  memory: [],
  openOpfs: [(s) => [s, { waitMs: 0 }]],
  openFile: [(s) => [s, { waitMs: 0 }]],
};

/** Per method of `WorkspaceTx` (called inside a transaction that then commits). */
const WORKSPACE_TX = {
  ended: [],
  append: [(s) => [[entry(s)]]],
  envelope: [(s) => [s]],
  headSeq: [],
  read: [],
  progress: [(s) => [s]],
  saveProgress: [(s) => [s, { rule: "r", last_seq: 1 }]],
  states: [(s) => [s, ["k"]], (s) => ["r", [s]]],
  saveStates: [(s) => [s, [["k", { count: 1 }]]], (s) => ["r", [[s, { count: 1 }]]]],
  clearStates: [(s) => [s]],
  run: [(s) => [s]],
  saveRuns: [(s) => [[runDoc(s)]], (s) => [[runDoc("x", s)]], (s) => [[runDoc("x", "r", s)]]],
  scopeRuns: [(s) => [s, "k"], (s) => ["r", s]],
  deadLetter: [(s) => [[{ rule: s, seq: 1, error: "boom" }]]],
  schedule: [(s) => [s]],
  saveSchedule: [(s) => [s, "2026-01-01T12:00:00Z"], (s) => ["n", `2026-01-01T12:00:00Z${s}`]],
  storedRule: [(s) => [s]],
  storedRules: [],
  saveStoredRule: [(s) => [{ rule: { name: s }, version: 2 }]],
};

describe("lone surrogates through WorkspaceStore and WorkspaceTx", () => {
  test("the tables cover every method of WorkspaceStore and WorkspaceTx", () => {
    assertCovered("WorkspaceStore", members(WorkspaceStore), WORKSPACE_STORE);
    assertCovered("WorkspaceStore (static)", members(WorkspaceStore, true), WORKSPACE_STORE_STATIC);
    assertCovered("WorkspaceTx", members(WorkspaceTx), WORKSPACE_TX);
  });

  for (const [method, rows] of Object.entries(WORKSPACE_STORE)) {
    rows.forEach((row, position) => {
      test(`WorkspaceStore.${method}, string argument ${position + 1}: INVALID_INPUT, nothing changed`, async () => {
        const store = await seededWorkspaces();
        const before = await wsSnapshot(store);
        for (const s of LONE) {
          const error = await failure(() => store[method](...row(s)));
          assert.equal(error.code, "INVALID_INPUT", `${method}(${JSON.stringify(row(s))}): ${error}`);
          assert.equal(await wsSnapshot(store), before, `${method}(${JSON.stringify(row(s))}) changed the store`);
        }
      });
    });
  }

  for (const [method, rows] of Object.entries(WORKSPACE_STORE_STATIC)) {
    rows.forEach((row, position) => {
      test(`WorkspaceStore.${method} (static), string argument ${position + 1}: INVALID_INPUT`, async () => {
        for (const s of LONE) {
          const error = await failure(() => WorkspaceStore[method](...row(s)));
          assert.equal(error.code, "INVALID_INPUT", `${method}(${JSON.stringify(row(s))}): ${error}`);
        }
      });
    });
  }

  for (const [method, rows] of Object.entries(WORKSPACE_TX)) {
    rows.forEach((row, position) => {
      test(`WorkspaceTx.${method}, string argument ${position + 1}: INVALID_INPUT, nothing changed though the transaction commits`, async () => {
        const store = await seededWorkspaces();
        const before = await wsSnapshot(store);
        for (const s of LONE) {
          // The refusal is caught inside, so the transaction commits: whatever the call wrote
          // would be kept.
          const error = await store.transaction(WS2, (tx) => {
            try {
              tx[method](...row(s));
            } catch (e) {
              return e;
            }
            return new Error(`${method}(${JSON.stringify(row(s))}) did not throw`);
          });
          assert.equal(error.code, "INVALID_INPUT", `${method}(${JSON.stringify(row(s))}): ${error}`);
          assert.equal(await wsSnapshot(store), before, `${method}(${JSON.stringify(row(s))}) changed the store`);
        }
      });
    });
  }
});

// ---------------------------------------------------------------------------------------------
// MonitorApi (the edge and in-browser monitors)

const TOKEN = "t0ken";

/** Per entry point: `(s, ctx) => arguments` for each string argument. */
const MONITOR = {
  writable: [],
  // The metrics sampler's: no string argument.
  metricsPeriod: [],
  sampleMetrics: [],
  sampleMetricsBoth: [],
  sampleMetricsWorkspaces: [],
  handle: [
    (s, c) => [c.store, `GET${s}`, "/api/executions"],
    (s, c) => [c.store, "GET", `/api/executions/${s}`],
    (s, c) => [c.store, "GET", `/api/executions?q=${s}`],
    (s, c) => [c.store, "POST", `/api/executions/${s}/terminate`, `Bearer ${TOKEN}`, `{"reason":"r${s}"}`],
    (s, c) => [c.store, "GET", "/api/executions", `Bearer ${s}`],
    (s, c) => [c.store, "POST", "/api/control/terminate", `Bearer ${TOKEN}`, `{"reason":"r","targets":[{"id":"${s}"}]}`],
  ],
  handleBoth: [
    (s, c) => [c.store, c.image, "GET", `/api/executions/${s}`],
    (s, c) => [c.store, c.image, "POST", "/api/control/terminate", `Bearer ${TOKEN}`, `{"reason":"r","targets":[{"id":"${s}"}]}`],
  ],
  handleWorkspaces: [
    (s, c) => [c.image, "GET", `/api/workspaces/${s}/x/log`],
    (s, c) => [c.image, "GET", "/api/workspaces", `Bearer ${s}`],
  ],
};

const MONITOR_STATIC = {};
const IMAGE = { workspaces: [], close: [] };
const IMAGE_STATIC = { fromBytes: [] };

describe("lone surrogates through MonitorApi", () => {
  const noBin = binMissing();
  let tmp;
  let image = null;

  before(() => {
    if (noBin) return;
    tmp = tempDir();
    image = WorkspaceImage.fromBytes(readFileSync(demo(tmp.dir, { executions: 20, seed: 3 })));
  });
  after(() => {
    image?.close();
    tmp?.cleanup();
  });

  test("the table covers every entry point of MonitorApi and WorkspaceImage", () => {
    assertCovered("MonitorApi", members(MonitorApi), MONITOR);
    assertCovered("MonitorApi (static)", members(MonitorApi, true), MONITOR_STATIC);
    assertCovered("WorkspaceImage", members(WorkspaceImage), IMAGE);
    assertCovered("WorkspaceImage (static)", members(WorkspaceImage, true), IMAGE_STATIC);
  });

  test("new MonitorApi(options): a lone surrogate in an option is INVALID_INPUT", () => {
    for (const s of LONE) {
      for (const key of ["store", "backend", "prefix", "token"]) {
        assert.throws(() => new MonitorApi({ [key]: s }), (e) => e.code === "INVALID_INPUT", key);
      }
    }
  });

  for (const [method, rows] of Object.entries(MONITOR)) {
    rows.forEach((row, position) => {
      const needsImage = method !== "handle";
      test(`MonitorApi.${method}, string argument ${position + 1}: INVALID_INPUT, nothing changed`, {
        skip: needsImage && noBin,
      }, async () => {
        const api = new MonitorApi({ token: TOKEN });
        const store = seededStore();
        const before = snapshot(store);
        for (const s of LONE) {
          const args = row(s, { store, image });
          const error = await failure(() => api[method](...args));
          assert.equal(error.code, "INVALID_INPUT", `${method}(${JSON.stringify(args.slice(needsImage ? 2 : 1))}): ${error}`);
          assert.equal(snapshot(store), before, `${method}(${JSON.stringify(args.slice(1))}) changed the store`);
        }
        // The real U+FFFD is an id like any other: found, and written with the token.
        const id = encodeURIComponent(LOSSY[1]);
        assert.equal(api.handle(store, "GET", `/api/executions/${id}`).status, 200);
        assert.equal(api.handle(store, "POST", `/api/executions/${id}/terminate`, `Bearer ${TOKEN}`, '{"reason":"r"}').status, 200);
        assert.notEqual(snapshot(store), before);
      });
    });
  }
});

// ---------------------------------------------------------------------------------------------
// NaN and ±Infinity in time fields

const NON_FINITE = [NaN, Infinity, -Infinity];
const EXECUTION_TIMES = ["created_at", "updated_at", "finished_at", "expires_at"];
const LIST_BOUNDS = ["created_after", "created_before", "updated_after", "updated_before", "finished_after", "finished_before"];

/** `[name, field the error names, (store, v) => call]`. */
const TIME_CALLS = [
  ...EXECUTION_TIMES.flatMap((t) => [
    [`save: execution.${t}`, `execution.${t}`, (store, v) => store.save(exe("t-new", { [t]: v }))],
    [`save of a stored one: execution.${t}`, `execution.${t}`, (store, v) => store.save(exe("t-1", { version: 1, [t]: v }))],
    [`commit: execution.${t}`, `execution.${t}`, (store, v) => store.commit(exe("t-1", { version: 1, [t]: v }), { processed_event_id: "e" })],
    [`commitBatch: items[0].execution.${t}`, `items[0].execution.${t}`, (store, v) => store.commitBatch([{ execution: exe("t-new", { [t]: v }) }])],
  ]),
  ["commit: effects.timers[0].fire_at", "effects.timers[0].fire_at", (store, v) =>
    store.commit(exe("t-1", { version: 1 }), { timers: [{ action: "schedule", path: "p", fire_at: v }] })],
  ...LIST_BOUNDS.map((b) => [`listExecutions: query.${b}`, `query.${b}`, (store, v) => store.listExecutions({ [b]: v })]),
  ["dueTimers: now", "now", (store, v) => store.dueTimers(v)],
  ["dueTimers: after.fire_at", "after.fire_at", (store, v) => store.dueTimers(1e12, { execution_id: "t-1", path: "p", fire_at: v })],
  ["deleteTimer: fireAt", "fireAt", (store, v) => store.deleteTimer("t-1", "p", v)],
  ["sweepTimers: now", "now", (store, v) => store.sweepTimers(v, 10, () => undefined)],
];

describe("NaN and Infinity in time fields", () => {
  for (const [name, field, call] of TIME_CALLS) {
    test(`${name}: INVALID_INPUT naming it, nothing stored`, () => {
      const store = Store.memory();
      store.save(exe("t-1", { created_at: 1, updated_at: 2 })); // stored at version 1
      const before = snapshot(store);
      for (const v of NON_FINITE) {
        assert.throws(() => call(store, v), (e) => {
          assert.equal(e.code, "INVALID_INPUT", `${name} = ${v}: ${e}`);
          assert.equal(e.field, field, `${name} = ${v}: ${e}`);
          return true;
        });
        assert.equal(snapshot(store), before, `${name} = ${v} changed the store`);
      }
    });
  }

  test("the workspace log: saveSchedule's `at`, dueRuns' `now`, acquireLease's ttlMs", async () => {
    const store = await seededWorkspaces();
    const before = await wsSnapshot(store);
    for (const v of NON_FINITE) {
      const error = await store.transaction(WS, (tx) => {
        try {
          tx.saveSchedule("tick", v);
        } catch (e) {
          return e;
        }
        return new Error("saveSchedule did not throw");
      });
      assert.equal(error.code, "INVALID_INPUT", String(error));
      assert.throws(() => store.dueRuns(v, 10), (e) => e.code === "INVALID_INPUT");
      assert.throws(() => store.acquireLease(WS, "k2", "h", v), (e) => e.code === "INVALID_INPUT");
      assert.equal(await wsSnapshot(store), before, `${v} changed the store`);
    }
  });
});
