// The edge handler (crates/execstore-cli/web/edge/handler.js) under Node 20: real Request objects through its
// `fetch(request)`, over a demo store file's bytes loaded into the wasm store. Its API
// answers equal the native `execstore monitor`'s on the same file (one implementation,
// execstore-monitor-api, behind both); it serves the UI's files, JSON 400/404 errors, and
// is read-only unless given a token. Also Store.sqliteFromBytes's handling of a -wal
// sidecar and of a harel-prefixed file.
// Run: node --test tests/js/  (needs `npm run build:wasm` and `cargo build -p execstore-cli`)
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, readFileSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { once } from "node:events";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import * as execstore from "execstore";
import { createHandler } from "../../crates/execstore-cli/web/edge/handler.js";
import { binMissing, cliJson, demo, nativeMonitor, tempDir } from "./native.mjs";

const WEB = fileURLToPath(new URL("../../crates/execstore-cli/web/", import.meta.url));
const files = (name) => readFile(join(WEB, name));
const ORIGIN = "https://edge.example";

/** The answer's JSON without the clock (`now`), which differs between two calls. */
function timeless(body) {
  if (body && typeof body === "object" && !Array.isArray(body)) {
    const { now: _now, ...rest } = body;
    return rest;
  }
  return body;
}

async function call(handler, path, init = {}) {
  const response = await handler(new Request(`${ORIGIN}${path}`, init));
  const text = await response.text();
  return { response, status: response.status, text, body: text && response.headers.get("content-type")?.includes("json") ? JSON.parse(text) : null };
}

describe("the edge handler", { skip: binMissing() }, () => {
  let tmp;
  let db;
  let native;
  let handler;

  before(async () => {
    tmp = tempDir();
    db = demo(tmp.dir, { executions: 300, seed: 3 });
    native = await nativeMonitor(db);
    handler = createHandler({ execstore, bytes: readFileSync(db), label: "demo.db", files });
  });

  after(async () => {
    await native?.stop();
    tmp?.cleanup();
  });

  async function nativeGet(path, init = {}) {
    const response = await fetch(`${native.url}${path.slice(1)}`, init);
    return { status: response.status, body: await response.json() };
  }

  test("API answers equal the native server's on the same file", async () => {
    const first = (await nativeGet("/api/executions?limit=50")).body.items;
    const parent = (await nativeGet("/api/executions?limit=1000")).body.items.find((e) => e.parent_id)?.parent_id;
    assert.ok(parent, "the demo has children");
    const page1 = (await nativeGet("/api/executions?limit=7&status=RUNNING,FAILED")).body;
    assert.ok(page1.next_cursor, "a second page");
    const timer = (await nativeGet("/api/timers?limit=1")).body.items[0];
    const paths = [
      "/api/counts",
      "/api/counts?roots_only=true",
      "/api/counts?definition=orders",
      "/api/executions",
      "/api/executions?limit=7&status=RUNNING,FAILED",
      `/api/executions?limit=7&status=RUNNING,FAILED&cursor=${encodeURIComponent(page1.next_cursor)}`,
      "/api/executions?roots_only=1&definition=orders&limit=20",
      `/api/executions?q=${first[3].id.slice(0, 2)}`,
      `/api/executions/${first[0].id}`,
      `/api/executions/${parent}`,
      `/api/executions/${parent}/trace`,
      `/api/executions/${parent}/pending`,
      `/api/executions/${timer.execution_id}/pending`,
      "/api/outbox?limit=10",
      "/api/outbox?after=3&limit=5",
      "/api/spawns",
      "/api/timers?limit=15",
      "/api/timers?due_before=now",
      // Errors: the same status and the same JSON, message included.
      "/api/executions?limit=0",
      "/api/executions?status=SLEEPING",
      "/api/executions?colour=red",
      "/api/executions?limit=5&limit=6",
      "/api/timers?cursor=garbage",
      "/api/outbox?after=-1",
      "/api/executions/no-such-execution",
      "/api/executions/no-such-execution/trace",
      "/api/no-such-endpoint",
    ];
    for (const path of paths) {
      const want = await nativeGet(path);
      const got = await call(handler, path);
      assert.equal(got.status, want.status, path);
      assert.deepEqual(timeless(got.body), timeless(want.body), path);
      assert.equal(got.response.headers.get("content-type"), "application/json", path);
      assert.equal(got.response.headers.get("cache-control"), "no-store", path);
    }
    for (const [path, method] of [["/api/outbox/1/ack", "POST"], ["/api/info", "POST"], ["/api/timers?execution_id=a&path=b&fire_at=1", "DELETE"]]) {
      const want = await nativeGet(path, { method });
      const got = await call(handler, path, { method });
      assert.equal(got.status, want.status, `${method} ${path}`);
      assert.deepEqual(got.body, want.body, `${method} ${path}`);
    }
    const info = (await call(handler, "/api/info")).body;
    const nativeInfo = (await nativeGet("/api/info")).body;
    assert.deepEqual(Object.keys(info), Object.keys(nativeInfo));
    assert.equal(info.store, "demo.db");
    assert.equal(info.writable, false);
    assert.equal(info.backend, "sqlite");
  });

  test("/api/metrics: a stateless handler keeps no ring, each answer is the current snapshot alone", async () => {
    for (let i = 0; i < 2; i++) {
      const a = await call(handler, "/api/metrics");
      assert.equal(a.status, 200);
      assert.equal(a.body.live, false);
      assert.equal(a.body.period, null);
      assert.equal(a.body.keep, 1);
      assert.equal(a.body.samples.length, 1, "no history builds up between requests");
      const counts = a.body.samples[0].executions.by_status;
      assert.equal(Object.values(counts).reduce((x, y) => x + y, 0), 300);
    }
  });

  test("MonitorApi with metrics: sampleMetrics fills the ring /api/metrics answers; bad options are INVALID_INPUT", async () => {
    const store = execstore.Store.sqliteFromBytes(readFileSync(db));
    const api = new execstore.MonitorApi({ metrics: { periodSeconds: 1, keep: 3 } });
    assert.equal(api.metricsPeriod, 1);
    assert.equal(new execstore.MonitorApi({}).metricsPeriod, undefined, "no ring");
    assert.equal(new execstore.MonitorApi({}).sampleMetrics(store), false, "no ring, no sample");
    assert.equal(api.sampleMetrics(store), true);
    assert.equal(api.sampleMetrics(store), false, "less than half a period after the last");
    let body = JSON.parse(api.handle(store, "GET", "/api/metrics").body);
    assert.deepEqual([body.live, body.period, body.keep, body.samples.length], [true, 1, 3, 1]);
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 550));
      assert.equal(api.sampleMetrics(store), true);
    }
    body = JSON.parse(api.handle(store, "GET", "/api/metrics").body);
    assert.equal(body.samples.length, 3, "the last `keep` samples");
    const at = body.samples.map((s) => s.at);
    assert.ok(at[0] < at[1] && at[1] < at[2], `oldest first: ${at}`);
    const since = JSON.parse(api.handle(store, "GET", `/api/metrics?since=${at[1]}`).body);
    assert.deepEqual(since.samples.map((s) => s.at), [at[2]]);
    for (const metrics of [{ periodSeconds: 0 }, { periodSeconds: 1, keep: 1 }, { period: 5 }, "often"]) {
      assert.throws(() => new execstore.MonitorApi({ metrics }), (e) => e.code === "INVALID_INPUT", JSON.stringify(metrics));
    }
    store.close();
    assert.throws(() => api.sampleMetrics(store), (e) => typeof e.code === "string");
  });

  test("400 and 404 are JSON errors", async () => {
    for (const [path, status, code] of [
      ["/api/executions?limit=abc", 400, "BAD_REQUEST"],
      ["/api/executions?cursor=not-a-cursor", 400, "INVALID_INPUT"],
      [`/api/executions/${"x".repeat(5000)}`, 400, "INVALID_INPUT"],
      ["/api/executions/%FF", 400, "BAD_REQUEST"],
      ["/api/executions/nope/pending", 404, "NOT_FOUND"],
      ["/api/", 404, "NOT_FOUND"],
    ]) {
      const a = await call(handler, path);
      assert.equal(a.status, status, path);
      assert.equal(a.body.error.code, code, path);
      assert.equal(typeof a.body.error.message, "string", path);
    }
  });

  test("serves the UI's files with the native server's headers", async () => {
    const index = await call(handler, "/");
    assert.equal(index.status, 200);
    assert.equal(index.response.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(index.text, readFileSync(join(WEB, "index.html"), "utf8"));
    const nativeIndex = await fetch(native.url);
    for (const header of ["content-security-policy", "x-content-type-options", "referrer-policy"]) {
      assert.equal(index.response.headers.get(header), nativeIndex.headers.get(header), header);
    }
    await nativeIndex.arrayBuffer();
    for (const [path, type] of [["/app.js", "text/javascript"], ["/api.js", "text/javascript"], ["/style.css", "text/css"], ["/favicon.svg", "image/svg+xml"]]) {
      const a = await call(handler, path);
      assert.equal(a.status, 200, path);
      assert.ok(a.response.headers.get("content-type").startsWith(type), path);
      assert.equal(a.text, readFileSync(join(WEB, path.slice(1)), "utf8"), path);
    }
    const head = await call(handler, "/app.js", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.text, "");
    assert.equal((await call(handler, "/nope.js")).status, 404);
    // Every view's module is served, as the native server embeds every web/views/*.js.
    const view = await call(handler, "/views/dead-letters.js");
    assert.equal(view.status, 200);
    assert.equal(view.text, readFileSync(join(WEB, "views/dead-letters.js"), "utf8"));
    const nativeView = await fetch(new URL("views/dead-letters.js", native.url));
    assert.equal(nativeView.status, 200);
    assert.equal(await nativeView.text(), view.text);
    assert.equal((await call(handler, "/views/nope.js")).status, 404, "a view that is not there");
    assert.equal((await call(handler, "/views/../local.js")).status, 404);
    assert.equal((await call(handler, "/local.html")).status, 404, "only the server-backed UI is served");
  });

  test("read-only by default; with a token writes need it and change only the copy in memory", async () => {
    const before = readFileSync(db);
    const seq = (await call(handler, "/api/outbox?limit=1")).body.items[0].seq;
    const denied = await call(handler, `/api/outbox/${seq}/ack`, { method: "POST", headers: { authorization: "Bearer guess" } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.code, "READ_ONLY");

    const writable = createHandler({ execstore, bytes: before, token: "s3cret", files });
    assert.equal((await call(writable, "/api/info")).body.writable, true);
    const outbox = (await call(writable, "/api/outbox?limit=10000")).body.items.length;
    const anonymous = await call(writable, `/api/outbox/${seq}/ack`, { method: "POST" });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error.code, "UNAUTHORIZED");
    const acked = await call(writable, `/api/outbox/${seq}/ack`, { method: "POST", headers: { authorization: "Bearer s3cret" }, body: JSON.stringify({ reason: "relay down" }) });
    assert.equal(acked.status, 200);
    assert.deepEqual(acked.body, { acked: seq });
    assert.equal((await call(writable, "/api/outbox?limit=10000")).body.items.length, outbox - 1);
    assert.equal((await call(handler, "/api/outbox?limit=10000")).body.items.length, outbox, "the read-only handler's copy is untouched");
    assert.ok(readFileSync(db).equals(before), "the file is untouched");
  });

  test("a bulk action is one POST whose JSON body the handler hands to the API", async () => {
    const writable = createHandler({ execstore, bytes: readFileSync(db), token: "s3cret", files });
    const running = (await call(writable, "/api/executions?status=RUNNING&roots_only=true&limit=2")).body.items;
    assert.equal(running.length, 2);
    const targets = [...running.map((e) => ({ id: e.id, expected_version: e.version })), { id: "no-such-execution" }];
    // Every write's body carries its reason.
    const withReason = (body) => body.replace(/^\{/, "{\"reason\": \"edge test\", ");
    const post = (body, authorization = "Bearer s3cret") =>
      call(writable, "/api/control/suspend", { method: "POST", headers: { authorization, "content-type": "application/json" }, body: withReason(body) });
    const anonymous = await post(JSON.stringify({ targets }), "Bearer guess");
    assert.equal(anonymous.status, 401);
    const bad = await post("{\"targets\": 7}");
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "INVALID_INPUT");
    const done = await post(JSON.stringify({ targets }));
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(done.body.results.map((r) => [r.id, r.ok, r.status ?? null]), [
      [running[0].id, true, null],
      [running[1].id, true, null],
      ["no-such-execution", false, 404],
    ]);
    for (const e of running) {
      assert.equal((await call(writable, `/api/executions/${encodeURIComponent(e.id)}`)).body.execution.status, "SUSPENDED", e.id);
    }
  });

  test("named tokens: roles decide, every write needs its reason, the audit log names the token", async () => {
    const writable = createHandler({
      execstore,
      bytes: readFileSync(db),
      files,
      tokens: [{ name: "ada", role: "admin", token: "adm1n" }, { name: "otto", role: "act", token: "act0r" }],
    });
    const info = (await call(writable, "/api/info", { headers: { authorization: "Bearer act0r" } })).body;
    assert.deepEqual(info.caller, { name: "otto", role: "act" });
    assert.equal(info.actions["executions.purge"], "admin");
    const running = (await call(writable, "/api/executions?status=RUNNING&roots_only=true&limit=1")).body.items[0];
    const post = (path, token, body) =>
      call(writable, path, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    const at = `/api/executions/${encodeURIComponent(running.id)}`;
    assert.equal((await post(`${at}/suspend`, "act0r", {})).status, 400, "no reason");
    assert.equal((await post(`${at}/purge`, "act0r", { reason: "tidy" })).status, 403, "purge is admin's");
    const done = await post(`${at}/suspend`, "act0r", { reason: "edge hold" });
    assert.equal(done.status, 200, done.text);
    const audit = (await call(writable, `${at}/audit`)).body.items;
    assert.deepEqual(audit.map((e) => [e.actor, e.action, e.outcome, e.reason]), [
      ["otto", "executions.suspend", "ok", "edge hold"],
      ["otto", "executions.purge", "FORBIDDEN", "tidy"],
    ]);
    assert.ok(!JSON.stringify(audit).includes("act0r"), "no token in the audit log");
    assert.throws(() => createHandler({ execstore, bytes: readFileSync(db), files, tokens: [{ name: "x", role: "boss", token: "t" }] }), /role/);
  });

  test("Store.sqliteFromBytes: a -wal sidecar's commits are recovered; a harel file's prefix is found; garbage is refused", async () => {
    // A monitor with a token keeps the file open read-write: an ack lands in the -wal file.
    // Its checkpointer copies a commit into the database file 10 ms later, unless a reader
    // still reads from before it: a reader (Python's sqlite3) holds a read transaction
    // begun before the ack until both files are copied, so the ack is in the -wal file alone
    // (without it, a slow copy raced the checkpoint and found the ack in both).
    const live = join(tmp.dir, "live.db");
    copyFileSync(db, live);
    const writer = await nativeMonitor(live, ["--token", "t0k"]);
    const hold = "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n" +
      "c.execute('BEGIN')\nc.execute('SELECT COUNT(*) FROM outbox').fetchone()\n" +
      "print('held', flush=True)\nsys.stdin.read()\nc.execute('COMMIT')\n";
    const reader = spawn("python3", ["-c", hold, live], { stdio: ["pipe", "pipe", "inherit"] });
    await once(reader.stdout, "data");
    let copied;
    try {
      const before = (await (await fetch(`${writer.url}api/outbox?limit=10000`)).json()).items;
      const ack = await fetch(`${writer.url}api/outbox/${before[0].seq}/ack`, { method: "POST", headers: { authorization: "Bearer t0k" }, body: JSON.stringify({ reason: "test" }) });
      assert.equal(ack.status, 200);
      assert.ok(existsSync(`${live}-wal`) && statSync(`${live}-wal`).size > 0, "the ack is in the -wal file");
      copied = { db: readFileSync(live), wal: readFileSync(`${live}-wal`), outbox: before.length };
    } finally {
      reader.stdin.end();
      await once(reader, "exit");
      await writer.stop();
    }
    const { Store } = execstore;
    const mainOnly = Store.sqliteFromBytes(copied.db, { readOnly: true });
    assert.equal(mainOnly.pendingOutbox(null, 10000).length, copied.outbox, "without the -wal the ack is missing");
    const recovered = Store.sqliteFromBytes(copied.db, { readOnly: true, wal: copied.wal });
    assert.equal(recovered.pendingOutbox(null, 10000).length, copied.outbox - 1, "with the -wal the ack is there");
    mainOnly.close();
    recovered.close();

    const harel = demo(tmp.dir, { name: "harel.db", executions: 40, prefix: "harel" });
    const bytes = readFileSync(harel);
    const listed = cliJson(["list", "--db", harel, "--prefix", "harel", "--all"]).items;
    // No prefix given: the one set of execution tables the file holds (harel's) is opened.
    const found = Store.sqliteFromBytes(bytes, { readOnly: true });
    assert.equal(found.prefix, "harel");
    assert.equal(found.listExecutions({ limit: 1000 }).items.length, listed.length);
    found.close();
    assert.equal(Store.sqliteFromBytes(bytes, { readOnly: true, prefix: "harel" }).prefix, "harel");
    for (const harelHandler of [createHandler({ execstore, bytes, prefix: "harel", files }), createHandler({ execstore, bytes, files })]) {
      const counts = (await call(harelHandler, "/api/counts")).body;
      assert.equal(counts.total, listed.length);
      assert.equal((await call(harelHandler, "/api/info")).body.prefix, "harel");
    }
    // A second set of tables beside harel's (copies of them under the prefix "other", by
    // Python's sqlite3): picking one is the caller's, and the error lists both.
    const both = join(tmp.dir, "both.db");
    copyFileSync(harel, both);
    const copy = "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n" +
      "for t in ('executions', 'outbox', 'processed_events', 'timers', 'spawns', 'trace'):\n" +
      "    c.execute(f'CREATE TABLE other_{t} AS SELECT * FROM harel_{t} WHERE 0')\n" +
      "c.commit()\nc.close()\n";
    execFileSync("python3", ["-c", copy, both]);
    const bothBytes = readFileSync(both);
    assert.throws(
      () => Store.sqliteFromBytes(bothBytes, { readOnly: true }),
      (e) => e.code === "INVALID_INPUT" && e.field === "prefix" && /harel \(harel_executions/.test(e.message) && /other \(other_executions/.test(e.message),
    );
    assert.throws(() => createHandler({ execstore, bytes: bothBytes, files }), (e) => e.code === "INVALID_INPUT" && /harel.*other/s.test(e.message));
    assert.equal(Store.sqliteFromBytes(bothBytes, { readOnly: true, prefix: "other" }).listExecutions({}).items.length, 0);

    for (const garbage of [new Uint8Array(4096), new TextEncoder().encode("SQLite format 3\0 but not really".padEnd(1024, "x"))]) {
      assert.throws(() => Store.sqliteFromBytes(garbage), (e) => e.code === "INVALID_INPUT" && e.field === "bytes");
    }
    assert.throws(() => createHandler({ execstore, bytes: new Uint8Array(10) }), (e) => e.code === "INVALID_INPUT");
  });
});
