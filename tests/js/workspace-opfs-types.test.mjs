// The TypeScript declarations of `WorkspaceStore.openOpfs` and `OpfsWorkspaceStore`: a typical
// use compiles under --strict, misuses do not (every operation is a Promise, the options are
// typed), the error type names its codes; and in Node (no OPFS) `openOpfs` rejects with a
// typed error, bad names and options with INVALID_INPUT.
// Run: node --test tests/js/  (needs `npm run build:wasm`, and `npm ci` for tsc)
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { OpfsWorkspaceStore, WorkspaceStore } from "execstore";

import { tscSnippet } from "./tsc.mjs";

const tsc = tscSnippet;

describe("OpfsWorkspaceStore's TypeScript declarations", () => {
  test("a typical use compiles under --strict", () => {
    const usage = `
import { WorkspaceStore, type Envelope, type OpfsWorkspaceStore, type WorkspaceRef, type WorkspaceStoreError } from "execstore";
const store: OpfsWorkspaceStore = await WorkspaceStore.openOpfs("oncall", { waitMs: 1000, synchronous: "normal" });
const ws: WorkspaceRef = { tenant_id: "acme", workspace_id: "prod" };
const seqs: number[] = await store.transaction(ws, (tx) => tx.append([{ id: "a", event: { type: "t:a" } }]).map((e) => e.seq));
const head: number = await store.headSeq(ws);
const tail: Envelope[] = await store.read(ws, { last: 10 });
const held: boolean = store.leaseHeld;
const kind: "opfs" | "closed" = store.kind;
for await (const e of store.subscribe(ws, { afterSeq: head })) { const s: number = e.seq; void s; break; }
try { await store.saveCursor(ws, "relay", head); } catch (e) {
  const error = e as WorkspaceStoreError;
  if (error.code === "LOCKED") { const name: string = error.store; void name; }
  if (error.code === "BACKEND") { const again: boolean = error.retryable; void again; }
}
await store.close();
void seqs; void tail; void held; void kind;
`;
    assert.equal(tsc(usage), "");
  });

  test("misuses are type errors", () => {
    const head = [
      `import { WorkspaceStore } from "execstore";`,
      `const store = await WorkspaceStore.openOpfs("oncall");`,
      `const ws = { tenant_id: "acme", workspace_id: "prod" };`,
    ];
    const misuses = [
      `export const n: number = store.headSeq(ws);`,
      `await WorkspaceStore.openOpfs("x", { synchronous: "off" });`,
      `await WorkspaceStore.openOpfs("x", { waitMs: "1s" });`,
      `await WorkspaceStore.openOpfs(7);`,
      `export const k: "memory" = store.kind;`,
      `store.close().then((x: number) => x);`,
      `await store.read(ws, { after_seq: "1" });`,
    ];
    const output = tsc([...head, ...misuses].join("\n"));
    const reported = new Set([...output.matchAll(/main\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1])));
    misuses.forEach((misuse, i) => {
      assert.ok(reported.has(head.length + i + 1), `compiles, but should not: ${misuse}\n${output}`);
    });
    assert.equal(reported.size, misuses.length, output);
  });
});

describe("WorkspaceStore.openOpfs outside a browser worker", () => {
  test("Node has no OPFS: a typed BACKEND error; bad names and options are INVALID_INPUT", async () => {
    assert.equal(typeof OpfsWorkspaceStore, "function");
    await assert.rejects(WorkspaceStore.openOpfs("oncall"), { name: "StoreError", code: "BACKEND", retryable: false });
    const bad = [
      [["bad name!"], "name"],
      [[""], "name"],
      [[7], "name"],
      [["ok", { waitMs: -1 }], "options.waitMs"],
      [["ok", { waitMs: Number.NaN }], "options.waitMs"],
      [["ok", { synchronous: "off" }], "options.synchronous"],
      [["ok", { readonly: true }], "options.readonly"],
      [["ok", "fast"], "options"],
    ];
    for (const [args, field] of bad) {
      await assert.rejects(WorkspaceStore.openOpfs(...args), { code: "INVALID_INPUT", field }, JSON.stringify(args));
    }
  });
});
