// The TypeScript declarations of `openWorkspaceOpfs` (execstore/workspace-client): a typical
// use compiles under --strict (transaction handles, the callback form, subscriptions by
// callback and `for await`, typed errors); misuses do not (every operation is a Promise, a
// transaction's methods too, the options are typed).
// Run: node --test tests/js/  (needs `npm run build:wasm`, and `npm ci` for tsc)
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { tscSnippet } from "./tsc.mjs";

describe("the workspace client's TypeScript declarations", () => {
  test("a typical use compiles under --strict", () => {
    const usage = `
import type { Envelope, WorkspaceRef, WorkspaceStoreError } from "execstore";
import { openWorkspaceOpfs, SUBSCRIPTION_WINDOW, type OpfsWorkspaceClient, type WorkspaceTxClient } from "execstore/workspace-client";
const store: OpfsWorkspaceClient = await openWorkspaceOpfs("oncall", { waitMs: 1000, synchronous: "normal" });
const ws: WorkspaceRef = { tenant_id: "acme", workspace_id: "prod" };
const tx: WorkspaceTxClient = await store.begin(ws);
const appended: Envelope[] = await tx.append([{ id: "a", event: { type: "t:a" } }]);
const inTx: number = await tx.headSeq();
await tx.commit();
const ended: boolean = tx.ended;
const seqs: number[] = await store.transaction(ws, async (tx) => (await tx.append([{ id: "b", event: { type: "t:b" } }])).map((e) => e.seq));
const head: number = await store.headSeq(ws);
const tail: Envelope[] = await store.read(ws, { last: 10 });
const kind: "opfs" | "closed" = store.kind;
const sub = store.subscribe(ws, { afterSeq: head }, (e) => { const s: number = e.seq; void s; });
await sub.cancel();
const done: Promise<void> = sub.done;
const behind: boolean = sub.buffered < SUBSCRIPTION_WINDOW;
for await (const e of store.subscribe(ws, { signal: new AbortController().signal })) { const s: number = e.seq; void s; break; }
try { await store.saveCursor(ws, "relay", head); } catch (e) {
  const error = e as WorkspaceStoreError;
  if (error.code === "LOCKED") { const name: string = error.store; void name; }
  if (error.code === "BACKEND") { const again: boolean = error.retryable; void again; }
}
await store.close();
store.terminate();
void appended; void inTx; void ended; void seqs; void tail; void kind; void done; void behind;
`;
    assert.equal(tscSnippet(usage), "");
  });

  test("misuses are type errors", () => {
    const head = [
      `import { openWorkspaceOpfs } from "execstore/workspace-client";`,
      `const store = await openWorkspaceOpfs("oncall");`,
      `const ws = { tenant_id: "acme", workspace_id: "prod" };`,
      `const tx = await store.begin(ws);`,
    ];
    const misuses = [
      `export const n: number = store.headSeq(ws);`,
      `export const m: number = tx.headSeq();`,
      `await openWorkspaceOpfs("x", { synchronous: "off" });`,
      `await openWorkspaceOpfs(7);`,
      `export const k: "memory" = store.kind;`,
      `await tx.append([{ id: "a" }]);`,
      `store.subscribe(ws, {}, (e: number) => e);`,
      `store.terminate().then(() => 1);`,
    ];
    const output = tscSnippet([...head, ...misuses].join("\n"));
    const reported = new Set([...output.matchAll(/main\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1])));
    misuses.forEach((misuse, i) => {
      assert.ok(reported.has(head.length + i + 1), `compiles, but should not: ${misuse}\n${output}`);
    });
    assert.equal(reported.size, misuses.length, output);
  });
});
