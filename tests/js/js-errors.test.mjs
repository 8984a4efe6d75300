// Errors speak JavaScript: every public method of the package, called with wrong-typed
// arguments in each position, fails with a StoreError whose message and `reason` name JS's
// types ("must be an object, not the number -1"), never Rust's (`expected i64`, `struct
// JsRef`, serde's `invalid type: ...`). The words are put in one place (the wasm crate's
// wording.rs); this sweep is what finds a new leak.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { MonitorApi, Store, WorkspaceImage, WorkspaceStore } from "execstore";

/** Rust's and serde's words, which no JS error may hold. */
const RUST_WORDING =
  /\b(i8|i16|i32|i64|i128|isize|u8|u16|u32|u64|u128|usize|f32|f64)\b|JsRef|\bstruct [A-Z]|invalid type: |invalid value: |invalid length \d|expected a (map|sequence)|\bunit value\b|\bOption value\b|Option<|Vec<|serde|panicked|unwrap|null pointer passed to rust|unsafe aliasing/;

/** Wrong-typed arguments: every JS type, and numbers no integer parameter takes. */
const WRONG = [undefined, null, -1, 1.5, 1e300, NaN, "x", true, 2n, Symbol("s"), () => 1, {}, { id: 5 }, [], [1, "a"]];

const REF = { tenant_id: "acme", workspace_id: "prod" };
const EXE = { id: "e-1", definition_id: "orders", status: "RUNNING", version: 0 };

/** Calls `fn`, sync or async; the error it threw or rejected with, or null. */
async function failure(fn) {
  try {
    await fn();
    return null;
  } catch (error) {
    return error;
  }
}

/** The methods of `object` (its class's, less the bindings' own and the closing ones). */
function methods(object) {
  return Object.getOwnPropertyNames(Object.getPrototypeOf(object)).filter(
    (m) =>
      m !== "constructor" && m !== "close" && m !== "free" && !m.startsWith("__") &&
      m !== "subscribe" && // an iterator: its argument checks are called below
      typeof Object.getOwnPropertyDescriptor(Object.getPrototypeOf(object), m).value === "function",
  );
}

/** Every argument list of the sweep for a method: each wrong value alone in each of 4 places,
 * the others plausible (`good`). */
function argumentLists(good) {
  const lists = [];
  for (let place = 0; place < 4; place++) {
    for (const bad of WRONG) {
      const args = good.slice(0, 4);
      while (args.length < 4) args.push(undefined);
      args[place] = bad;
      lists.push(args);
    }
  }
  return lists;
}

/** Sweeps `calls` ([label, fn]); returns the StoreErrors seen, and fails on Rust wording. */
async function sweep(calls) {
  const seen = [];
  for (const [label, fn] of calls) {
    const error = await failure(fn);
    if (!error) continue;
    for (const text of [String(error.message), String(error.reason ?? "")]) {
      assert.doesNotMatch(text, RUST_WORDING, `${label}: ${error.name}: ${text}`);
    }
    if (error.name === "StoreError") seen.push(error);
  }
  return seen;
}

const show = (v) => (typeof v === "symbol" ? v.toString() : typeof v === "bigint" ? `${v}n` : typeof v === "function" ? "fn" : JSON.stringify(v) ?? "undefined");

describe("JS errors speak JavaScript", () => {
  test("Store's methods (memory and SQLite) with wrong-typed arguments", async () => {
    const calls = [];
    for (const make of [() => Store.memory(), () => Store.sqliteMemory()]) {
      const store = make();
      store.commit({ ...EXE });
      for (const m of methods(store)) {
        for (const args of argumentLists(["e-1", { ...EXE }, 1, 10])) {
          calls.push([`${store.kind}.${m}(${args.map(show).join(", ")})`, () => store[m](...args)]);
        }
      }
    }
    const seen = await sweep(calls);
    assert.ok(seen.filter((e) => e.code === "INVALID_INPUT").length > 300, `only ${seen.length} refusals`);
  });

  test("the factories and MonitorApi with wrong-typed arguments", async () => {
    const calls = [];
    for (const bad of WRONG) {
      calls.push([`Store.memory(${show(bad)})`, () => Store.memory(bad)]);
      calls.push([`Store.sqliteMemory({traceMax: ${show(bad)}})`, () => Store.sqliteMemory({ traceMax: bad })]);
      calls.push([`Store.sqliteFromBytes(${show(bad)})`, () => Store.sqliteFromBytes(bad)]);
      calls.push([`WorkspaceImage.fromBytes(${show(bad)})`, () => WorkspaceImage.fromBytes(bad)]);
      calls.push([`new MonitorApi(${show(bad)})`, () => new MonitorApi(bad)]);
      for (const key of ["store", "backend", "prefix", "token", "tokens", "metrics"]) {
        calls.push([`new MonitorApi({${key}: ${show(bad)}})`, () => new MonitorApi({ [key]: bad })]);
      }
      calls.push([`new MonitorApi({tokens: [${show(bad)}]})`, () => new MonitorApi({ tokens: [bad] })]);
      calls.push([`WorkspaceStore.memory(${show(bad)})`, () => WorkspaceStore.memory(bad)]);
    }
    const seen = await sweep(calls);
    assert.ok(seen.length > 80, `only ${seen.length} refusals`);
  });

  test("WorkspaceStore's methods and a transaction's with wrong-typed arguments", async () => {
    const store = WorkspaceStore.memory();
    await store.transaction(REF, (tx) => tx.append([{ id: "a-1", event: { type: "t" } }]));
    const calls = [];
    for (const m of methods(store)) {
      if (m === "transaction") continue;
      for (const args of argumentLists([{ ...REF }, "k", "h", 1000])) {
        calls.push([`ws.${m}(${args.map(show).join(", ")})`, () => store[m](...args)]);
      }
    }
    for (const args of argumentLists([{ ...REF }, { afterSeq: 0 }])) {
      calls.push([`ws.subscribe(${args.map(show).join(", ")})`, () => store.subscribe(...args)]);
    }
    for (const bad of WRONG) calls.push([`ws.transaction(${show(bad)})`, () => store.transaction(bad, () => null)]);
    let seen = await sweep(calls);
    // a transaction's own methods, each wrong value in each place, in one transaction each
    const txCalls = [];
    let names = [];
    await store.transaction(REF, (tx) => {
      names = methods(tx);
    });
    for (const m of names) {
      for (const args of argumentLists([[{ id: "a-2", event: { type: "t" } }], "r", 1, 1])) {
        txCalls.push([
          `tx.${m}(${args.map(show).join(", ")})`,
          () => store.transaction(REF, (tx) => tx[m](...args)),
        ]);
      }
    }
    seen = seen.concat(await sweep(txCalls));
    assert.ok(seen.filter((e) => e.code === "INVALID_INPUT").length > 300, `only ${seen.length} refusals`);
  });

  test("what serde said is said in JS's words", () => {
    const cases = [
      [() => Store.memory(-1), "options", "must be an object, not the number -1"],
      [() => Store.memory().commit({ ...EXE, version: 1.5 }), "execution.version", "must be an integer, not the number 1.5"],
      [() => Store.memory().commit({ ...EXE, id: 5 }), "execution.id", "must be a string, not the number 5"],
      [() => Store.memory().save("order-1"), "execution", 'must be an object, not the string "order-1"'],
      [() => Store.memory().listExecutions({ statuses: "RUNNING" }), null, null],
      [() => WorkspaceStore.memory().headSeq(5), "ref", "must be an object, not the number 5"],
      [() => WorkspaceStore.memory().headSeq([]), "ref", "must be an object, not an array of 0 items"],
      [() => new MonitorApi({ store: Store.memory() }), "options.store", null],
      [() => new MonitorApi({ tokens: [{ name: "a", role: "read" }] }), "options.tokens[0].token", 'lacks the field "token"'],
    ];
    for (const [fn, field, reason] of cases) {
      let error = null;
      try {
        fn();
      } catch (e) {
        error = e;
      }
      if (field === null) {
        if (error) assert.doesNotMatch(error.message, RUST_WORDING);
        continue;
      }
      assert.ok(error, `${fn} did not throw`);
      assert.equal(error.code, "INVALID_INPUT", error.message);
      assert.equal(error.field, field, error.message);
      if (reason !== null) {
        assert.equal(error.reason, reason);
        assert.equal(error.message, `invalid input: ${field}: ${reason}`);
      }
      assert.doesNotMatch(error.message, RUST_WORDING);
    }
  });
});
