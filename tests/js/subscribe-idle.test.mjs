// `for await (const e of store.subscribe(ref))` on an idle in-memory WorkspaceStore, in a
// child process: the subscription waits for a commit and the process stays alive while it
// does (a pending Promise alone would let Node end it with code 13, "unsettled top-level
// await"); `break`, `close()` and `signal`'s abort end the wait and let the process exit.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const HEAD = `
import { WorkspaceStore } from "execstore";
const store = WorkspaceStore.memory();
const ws = { tenant_id: "acme", workspace_id: "prod" };
const append = (id) => store.transaction(ws, (tx) => tx.append([{ id, event: { type: "t" } }]));
`;

/** Runs `code` (an ES module) in a child Node; resolves `{code, signal, stdout, stderr}`.
 * `killAfterMs`: SIGTERM it then if still running. */
function child(code, killAfterMs = 20_000) {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ["--input-type=module", "-e", HEAD + code], { cwd: ROOT });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (d) => (stdout += d));
    proc.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill("SIGTERM"), killAfterMs);
    proc.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe("subscribe on an idle in-memory store", () => {
  test("waits, keeping the process alive, for a commit that comes later", async () => {
    // The commit's timer is unref'd: it alone would not keep the process alive.
    const run = await child(`
setTimeout(() => append("late"), 300).unref();
for await (const e of store.subscribe(ws, { afterSeq: 0 })) {
  console.log(e.seq, e.id);
  break;
}
console.log("after");
`);
    assert.equal(run.code, 0, `exit ${run.code} ${run.signal}: ${run.stderr}`);
    assert.equal(run.stdout, "1 late\nafter\n");
  });

  test("with nothing to come, it waits until the process is ended", async () => {
    const run = await child(
      `
console.log("waiting");
for await (const e of store.subscribe(ws, { afterSeq: 0 })) console.log(e.seq);
console.log("ended");
`,
      1500,
    );
    assert.equal(run.signal, "SIGTERM", `it ended by itself (exit ${run.code}): ${run.stderr}`);
    assert.equal(run.stdout, "waiting\n");
  });

  test("close() and an abort end the wait, and the process exits", async () => {
    const run = await child(`
const controller = new AbortController();
setTimeout(() => controller.abort(), 200).unref();
for await (const e of store.subscribe(ws, { signal: controller.signal })) console.log(e.seq);
console.log("aborted");
setTimeout(() => store.close(), 200).unref();
for await (const e of store.subscribe(ws)) console.log(e.seq);
console.log("closed");
`);
    assert.equal(run.code, 0, `exit ${run.code} ${run.signal}: ${run.stderr}`);
    assert.equal(run.stdout, "aborted\nclosed\n");
  });
});
