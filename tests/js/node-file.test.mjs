// Store.openFile in Node: a SQLite store file on the local file system, through the package's
// VFS over Node's `fs`. The file is the native store's (the native CLI reads what Node wrote,
// Node opens what the native demo wrote); one process owns it at a time (LOCKED, a bounded
// wait, a lock left by a killed process taken over); hostile paths and files are typed errors
// that change nothing; a file a crash left with its -wal opens and recovers.
// Run: node --test tests/js/  (needs `npm run build:wasm`; the interop tests `cargo build -p execstore-cli`)
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Store } from "execstore";

import { binMissing, cliJson, demo, tempDir } from "./native.mjs";

const CHILD = fileURLToPath(new URL("./node-file-child.mjs", import.meta.url));

/** What a call rejected with (failing if it resolved). */
async function rejected(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected the call to fail");
}

/** The bytes of every file in `dir`, by name. */
function filesOf(dir) {
  const out = {};
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    out[name] = statSync(path).isFile() ? readFileSync(path).toString("base64") : "dir";
  }
  return out;
}

/** Starts the child (`node-file-child.mjs MODE PATH ...`); resolves when it printed `ready`. */
function child(args) {
  const proc = spawn(process.execPath, [CHILD, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const ready = new Promise((resolve, reject) => {
    proc.stdout.on("data", (chunk) => {
      out += chunk;
      if (out.includes("ready\n")) resolve();
    });
    proc.once("exit", (code, signal) => reject(new Error(`child exited (${code ?? signal}) before ready: ${out}`)));
  });
  const exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));
  return { proc, ready, exited, output: () => out };
}

function commitOne(store, id, n = 1) {
  const exe = { id, definition_id: "orders", status: "RUNNING", version: 0, context: { n } };
  return store.commit(exe, {
    emits: [{ target_id: null, event: { id: `${id}-e`, kind: "Made", data: { n } } }],
    processed_event_id: `${id}-in`,
    trace: { event_kind: "Start" },
  });
}

describe("Store.openFile", () => {
  let tmp;
  before(() => {
    tmp = tempDir();
  });
  after(() => tmp.cleanup());

  test("creates a file, keeps commits across close and reopen, and removes its lock on close", async () => {
    const db = join(tmp.dir, "basic.db");
    const store = await Store.openFile(db);
    assert.equal(store.kind, "file");
    assert.equal(store.capabilities().durable, true);
    assert.ok(existsSync(`${db}-lock`), "the lock file is there while the store is open");
    commitOne(store, "a-1");
    store.close();
    assert.equal(existsSync(`${db}-lock`), false, "close removes the lock file");
    assert.equal(existsSync(`${db}-wal`), false, "close checkpoints and removes the -wal");
    assert.equal(readFileSync(db).subarray(0, 16).toString("latin1"), "SQLite format 3\0");

    const again = await Store.openFile(db);
    const loaded = again.load("a-1");
    assert.equal(loaded.version, 1);
    assert.deepEqual(loaded.context, { n: 1 });
    assert.equal(again.isProcessed("a-1", "a-1-in"), true);
    assert.equal(again.pendingOutbox().length, 1);
    again.close();
  });

  test("a relative path is resolved against the working directory", async () => {
    const cwd = process.cwd();
    process.chdir(tmp.dir);
    try {
      const store = await Store.openFile("relative.db", { prefix: "harel", traceMax: 5 });
      commitOne(store, "r-1");
      store.close();
    } finally {
      process.chdir(cwd);
    }
    const store = await Store.openFile(join(tmp.dir, "relative.db"), { prefix: "harel" });
    assert.equal(store.load("r-1").version, 1);
    store.close();
  });

  test("a second opener in this process gets LOCKED, at once or after waitMs, and the file once it is closed", async () => {
    const db = join(tmp.dir, "locked.db");
    const first = await Store.openFile(db);
    const error = await rejected(Store.openFile(db, { waitMs: 0 }));
    assert.equal(error.code, "LOCKED");
    assert.equal(error.store, db);
    assert.equal(error.pid, process.pid);

    const started = Date.now();
    const waited = await rejected(Store.openFile(db, { waitMs: 150 }));
    assert.equal(waited.code, "LOCKED");
    assert.ok(Date.now() - started >= 140, "waited about waitMs");

    const waiter = Store.openFile(db, { waitMs: 5000 });
    setTimeout(() => first.close(), 100);
    const second = await waiter;
    assert.equal(second.kind, "file");
    second.close();
  });

  test("another process's open file is LOCKED; once it is killed (SIGKILL) its lock is taken over", async () => {
    const db = join(tmp.dir, "killed.db");
    const holder = child(["hold", db]);
    await holder.ready;
    const error = await rejected(Store.openFile(db, { waitMs: 0 }));
    assert.equal(error.code, "LOCKED");
    assert.equal(error.pid, holder.proc.pid);
    holder.proc.kill("SIGKILL");
    await holder.exited;
    assert.ok(existsSync(`${db}-lock`), "the killed process left its lock file");

    const store = await Store.openFile(db, { waitMs: 0 });
    assert.equal(store.load("held-1").version, 1, "what the killed process committed is there");
    store.close();
    assert.deepEqual(readdirSync(tmp.dir).filter((n) => n.startsWith("killed.db")), ["killed.db"],
      "no lock, guard or temporary file is left");
  });

  test("a stale lock file is taken over: a dead pid, or this pid with another start time (a reused pid)", async () => {
    const db = join(tmp.dir, "stale.db");
    (await Store.openFile(db)).close();
    // A pid that does not exist: beyond Linux's pid_max.
    writeFileSync(`${db}-lock`, JSON.stringify({ pid: 4_194_999, start: null, nonce: "dead" }));
    writeFileSync(`${db}-lock.break-old`, JSON.stringify({ pid: 4_194_998, start: null, nonce: "older" }));
    const store = await Store.openFile(db, { waitMs: 0 });
    store.close();
    assert.deepEqual(readdirSync(tmp.dir).filter((n) => n.startsWith("stale.db")), ["stale.db"]);

    writeFileSync(`${db}-lock`, JSON.stringify({ pid: process.pid, start: 1, nonce: "reused" }));
    const reused = await Store.openFile(db, { waitMs: 0 });
    reused.close();
  });

  test("a live process's lock file is never taken over", async () => {
    const db = join(tmp.dir, "live.db");
    (await Store.openFile(db)).close();
    // pid 1 (init) is alive; no start time recorded: kept.
    writeFileSync(`${db}-lock`, JSON.stringify({ pid: 1, start: null, nonce: "init" }));
    const error = await rejected(Store.openFile(db, { waitMs: 0 }));
    assert.equal(error.code, "LOCKED");
    assert.equal(error.pid, 1);
    const garbage = "not a lock";
    writeFileSync(`${db}-lock`, garbage);
    const bad = await rejected(Store.openFile(db, { waitMs: 0 }));
    assert.equal(bad.code, "INVALID_INPUT");
    assert.equal(readFileSync(`${db}-lock`, "utf8"), garbage, "a file that is not a lock is left alone");
  });

  test("hostile paths and files: a typed error, and nothing changes", async () => {
    const dir = join(tmp.dir, "hostile");
    mkdirSync(dir);
    mkdirSync(join(dir, "a-directory.db"));
    writeFileSync(join(dir, "text.db"), "this is not a SQLite database, it is long enough to have a header\n");
    const readOnly = join(dir, "read-only.db");
    const made = await Store.openFile(readOnly);
    commitOne(made, "ro-1");
    made.close();
    chmodSync(readOnly, 0o444);
    const harel = join(dir, "harel.db");
    const h = await Store.openFile(harel, { prefix: "harel" });
    commitOne(h, "h-1");
    h.close();
    const before = filesOf(dir);

    const cases = [
      [join(dir, "a-directory.db"), undefined, "path"],
      [join(dir, "text.db"), undefined, "path"],
      [readOnly, undefined, "path"],
      [harel, undefined, "options.prefix"],
      [harel, { prefix: "other" }, "options.prefix"],
      [join(dir, "lone-\ud800.db"), undefined, "path"],
      [join(dir, "no-such-dir", "x.db"), undefined, "path"],
      ["", undefined, "path"],
      [join(dir, "nul\0.db"), undefined, "path"],
      [join(dir, "new.db"), { synchronous: "off" }, "options.synchronous"],
      [join(dir, "new.db"), { waitMs: -1 }, "options.waitMs"],
      [join(dir, "new.db"), { readOnly: true }, "options.readOnly"],
      [42, undefined, "path"],
    ];
    for (const [path, options, field] of cases) {
      const error = await rejected(Store.openFile(path, options));
      assert.equal(error.code, "INVALID_INPUT", `${JSON.stringify(path)}: ${error.message}`);
      assert.equal(error.field, field, `${JSON.stringify(path)}: ${error.message}`);
      assert.deepEqual(filesOf(dir), before, `${JSON.stringify(path)} changed nothing`);
    }
    // The right prefix still opens it.
    const right = await Store.openFile(harel, { prefix: "harel" });
    assert.equal(right.load("h-1").version, 1);
    right.close();
  });

  test("a file a crash left with its -wal opens and recovers every commit", async () => {
    const db = join(tmp.dir, "crashed.db");
    const writer = child(["commit", db, "25"]);
    await writer.ready;
    const { signal } = await writer.exited;
    assert.equal(signal, "SIGKILL", "the child killed itself after its commits");
    assert.ok(statSync(`${db}-wal`).size > 0, "the crash left a -wal with the commits");
    const store = await Store.openFile(db, { waitMs: 0 });
    for (let i = 0; i < 25; i++) assert.equal(store.load(`c-${i}`).version, 1, `c-${i} recovered`);
    store.close();
    assert.equal(existsSync(`${db}-wal`), false);
  });
});

describe("Store.openFile and the native store", { skip: binMissing() }, () => {
  let tmp;
  before(() => {
    tmp = tempDir();
  });
  after(() => tmp.cleanup());

  test("the native CLI lists what Node wrote, once Node closed the file", async () => {
    const db = join(tmp.dir, "from-node.db");
    const store = await Store.openFile(db, { prefix: "harel" });
    for (let i = 0; i < 7; i++) commitOne(store, `n-${i}`, i);
    store.close();
    const listed = cliJson(["--db", db, "--prefix", "harel", "list", "--limit", "100"]);
    const items = listed.items ?? listed;
    assert.deepEqual(items.map((e) => e.id).sort(), ["n-0", "n-1", "n-2", "n-3", "n-4", "n-5", "n-6"]);
  });

  test("a file the native demo wrote opens in Node, and takes commits the native CLI then sees", async () => {
    const db = demo(tmp.dir, { executions: 60, seed: 3 });
    const native = cliJson(["--db", db, "list", "--limit", "1000"]);
    const store = await Store.openFile(db);
    const page = store.listExecutions({ limit: 1000 });
    assert.deepEqual(page.items.map((e) => e.id).sort(), (native.items ?? native).map((e) => e.id).sort());
    commitOne(store, "added-in-node");
    store.close();
    const after = cliJson(["--db", db, "list", "--limit", "1000"]);
    assert.ok((after.items ?? after).some((e) => e.id === "added-in-node"));
  });
});
