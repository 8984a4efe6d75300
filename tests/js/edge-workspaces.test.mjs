// The edge handler (crates/execstore-cli/web/edge/handler.js) over files that hold a workspace log (reflexr's
// tables): the demo file (executions and workspaces), the same file with only its workspace
// log (a reflexr user's database), and with only its executions. For each, the handler
// serves what the file holds, as `execstore monitor --db F` does: its answers equal the
// native monitor's on the same file (workspaces, log windows, an envelope's chain, runs,
// dead letters, leases, cursors, rules and history, due runs, and the 404 of what the file
// does not hold); the file is never changed. Also `WorkspaceImage.fromBytes` itself.
// Run: node --test tests/js/  (needs `npm run build:wasm` and `cargo build -p execstore-cli`)
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import * as execstore from "execstore";
import { createHandler } from "../../crates/execstore-cli/web/edge/handler.js";
import { ARGS, CHROMIUM, noChromium } from "./chromium.mjs";
import { binMissing, demo, nativeMonitor, tempDir } from "./native.mjs";

const WEB = fileURLToPath(new URL("../../crates/execstore-cli/web/", import.meta.url));
const files = (name) => readFile(join(WEB, name));
const ORIGIN = "https://edge.example";
/** A fixed `now` for the due-runs listing, so both sides judge at the same instant. */
const AT = "2030-01-01T00:00:00Z";

const EXECUTION_TABLES = ["executions", "outbox", "processed_events", "timers", "spawns", "trace", "execstore_migrations"];

/** Copies `db` to `out` and drops `tables` from the copy (Python's sqlite3: a separate writer). */
function without(db, out, tables) {
  copyFileSync(db, out);
  const script = [
    "import sqlite3, sys",
    "c = sqlite3.connect(sys.argv[1])",
    "names = [r[0] for r in c.execute(\"select name from sqlite_master where type='table'\")]",
    "drop = [n for n in names if n in sys.argv[2:] or (sys.argv[2] == 'reflexr' and n.startswith('reflexr_'))]",
    "[c.execute(f'drop table \"{n}\"') for n in drop]",
    "c.commit(); c.execute('vacuum'); c.close()",
  ].join("\n");
  execFileSync("python3", ["-c", script, out, ...tables]);
  return out;
}

function pythonMissing() {
  try {
    execFileSync("python3", ["-c", "import sqlite3"], { stdio: "ignore" });
    return false;
  } catch {
    return "python3 with sqlite3 is needed to make the one-contract files";
  }
}

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
  return { response, status: response.status, body: text ? JSON.parse(text) : null };
}

describe("the edge handler over a workspace log", { skip: binMissing() || pythonMissing() }, () => {
  let tmp;
  const served = {};

  before(async () => {
    tmp = tempDir();
    const both = demo(tmp.dir, { executions: 60, seed: 5 });
    const paths = {
      both,
      workspaces: without(both, join(tmp.dir, "reflexr-only.db"), EXECUTION_TABLES),
      executions: without(both, join(tmp.dir, "harel-only.db"), ["reflexr"]),
    };
    for (const [kind, path] of Object.entries(paths)) {
      const bytes = readFileSync(path);
      served[kind] = {
        path,
        bytes,
        native: await nativeMonitor(path),
        edge: createHandler({ execstore, bytes, label: kind, files }),
      };
    }
  });

  after(async () => {
    for (const s of Object.values(served)) await s.native?.stop();
    tmp?.cleanup();
  });

  async function nativeGet(kind, path) {
    const response = await fetch(`${served[kind].native.url}${path.slice(1)}`);
    return { status: response.status, body: await response.json() };
  }

  async function same(kind, paths) {
    for (const path of paths) {
      const want = await nativeGet(kind, path);
      const got = await call(served[kind].edge, path);
      assert.equal(got.status, want.status, `${kind} ${path}: ${JSON.stringify(got.body).slice(0, 300)}`);
      assert.deepEqual(timeless(got.body), timeless(want.body), `${kind} ${path}`);
    }
  }

  /** The workspace routes worth comparing on a file, found from its own answers. */
  async function workspacePaths(kind) {
    const list = (await nativeGet(kind, "/api/workspaces")).body.items;
    assert.ok(list.length >= 4, `the demo's four workspaces (${list.length})`);
    const paths = ["/api/workspaces", `/api/due-runs?now=${AT}&limit=50`, "/api/due-runs?now=0"];
    for (const w of list) {
      const base = `/api/workspaces/${encodeURIComponent(w.tenant_id)}/${encodeURIComponent(w.workspace_id)}`;
      const log = (await nativeGet(kind, `${base}/log?limit=20`)).body;
      const type = log.items.find((e) => e.event?.type)?.event.type;
      const runs = (await nativeGet(kind, `${base}/runs?limit=5`)).body;
      const rules = (await nativeGet(kind, `${base}/rules`)).body.items;
      paths.push(
        base,
        `${base}/log?limit=20`,
        `${base}/log?after=3&before=9`,
        `${base}/log?last=7`,
        `${base}/runs?limit=5`,
        `${base}/runs?status=pending`,
        `${base}/dead-letters`,
        `${base}/leases`,
        `${base}/cursors`,
        `${base}/rules`,
        `${base}/log?limit=2&last=2`,
        `${base}/envelopes/no-such-envelope`,
      );
      if (type) paths.push(`${base}/log?type=${encodeURIComponent(type)}&last=5`);
      if (log.items.length) paths.push(`${base}/envelopes/${encodeURIComponent(log.items.at(-1).id)}`);
      if (runs.next_cursor) paths.push(`${base}/runs?limit=5&cursor=${encodeURIComponent(runs.next_cursor)}`);
      for (const r of rules) paths.push(`${base}/rules/${encodeURIComponent(r.name)}/history`);
    }
    paths.push("/api/workspaces/nobody/nothing/log", "/api/workspaces/x/y/runs?status=sleeping", "/api/due-runs?now=yesterday");
    return paths;
  }

  test("a file with executions and workspaces: every endpoint answers as the native monitor's", async () => {
    const info = (await call(served.both.edge, "/api/info")).body;
    assert.deepEqual(info.holds, { executions: true, workspaces: true });
    assert.deepEqual(info.holds, (await nativeGet("both", "/api/info")).body.holds);
    await same("both", [...(await workspacePaths("both")), "/api/counts", "/api/executions?limit=5", "/api/outbox?limit=3"]);
    // Something to compare: the demo's story has runs, dead letters, leases, rules.
    const w = (await call(served.both.edge, "/api/workspaces")).body.items[0];
    assert.ok(w.head_seq > 0 && w.cursors.length > 0, JSON.stringify(w));
  });

  test("a reflexr user's database (no execution tables) opens with its workspaces", async () => {
    const info = (await call(served.workspaces.edge, "/api/info")).body;
    assert.deepEqual(info.holds, { executions: false, workspaces: true });
    await same("workspaces", [...(await workspacePaths("workspaces")), "/api/executions", "/api/counts", "/api/timers"]);
    const none = await call(served.workspaces.edge, "/api/executions");
    assert.equal(none.status, 404);
    assert.match(none.body.error.message, /no executions/);
    assert.equal((await call(served.workspaces.edge, "/api/changes")).status, 200);
  });

  test("a harel file with executions only: the workspace endpoints are 404s saying so", async () => {
    const info = (await call(served.executions.edge, "/api/info")).body;
    assert.deepEqual(info.holds, { executions: true, workspaces: false });
    await same("executions", ["/api/workspaces", "/api/due-runs", "/api/counts", "/api/executions?limit=3"]);
    const none = await call(served.executions.edge, "/api/workspaces");
    assert.equal(none.status, 404);
    assert.match(none.body.error.message, /no workspace log/);
  });

  test("the workspace log is read-only, even with a token; the bytes are never changed", async () => {
    const bytes = Buffer.from(served.workspaces.bytes);
    const writable = createHandler({ execstore, bytes, token: "s3cret", files });
    const info = (await call(writable, "/api/info")).body;
    assert.equal(info.writable, true);
    assert.deepEqual(info.holds, { executions: false, workspaces: true }, "no execution tables made in the copy");
    for (const method of ["POST", "DELETE", "PUT"]) {
      const a = await call(writable, "/api/workspaces", { method, headers: { authorization: "Bearer s3cret" } });
      assert.equal(a.status, 405, method);
    }
    assert.ok(bytes.equals(readFileSync(served.workspaces.path)), "the caller's bytes are unchanged");
  });

  test("a -wal sidecar's workspace commits are recovered, as for executions", async () => {
    // A writer moves a cursor in WAL mode and the file and its -wal are copied before any
    // checkpoint, as a user would copy a live reflexr database.
    const live = join(tmp.dir, "live-reflexr.db");
    const script = [
      "import shutil, sqlite3, sys",
      "src, out = sys.argv[1], sys.argv[2]",
      "shutil.copy(src, out)",
      "c = sqlite3.connect(out)",
      "c.execute('pragma journal_mode=wal'); c.execute('pragma wal_autocheckpoint=0')",
      "c.execute(\"update reflexr_cursors set seq = 1 where tenant_id = 'acme' and workspace_id = 'prod' and name = 'exporter'\")",
      "c.commit()",
      "shutil.copy(out, out + '.main'); shutil.copy(out + '-wal', out + '.wal')",
      "c.close()",
    ].join("\n");
    execFileSync("python3", ["-c", script, served.workspaces.path, live]);
    const main = readFileSync(`${live}.main`);
    const wal = readFileSync(`${live}.wal`);
    assert.ok(wal.length > 0, "the update is in the -wal file");
    const exporter = async (handler) =>
      (await call(handler, "/api/workspaces/acme/prod/cursors")).body.items.find((c) => c.name === "exporter").seq;
    const before = await exporter(served.workspaces.edge);
    assert.notEqual(before, 1);
    assert.equal(await exporter(createHandler({ execstore, bytes: main, files })), before, "without the -wal the update is missing");
    assert.equal(await exporter(createHandler({ execstore, bytes: main, wal, files })), 1, "with the -wal it is there");
    assert.ok(readFileSync(`${live}.main`).equals(main), "the bytes given are unchanged");
  });

  test("WorkspaceImage.fromBytes: lists the workspaces; no reflexr tables, garbage and bad options are typed errors", () => {
    const { WorkspaceImage } = execstore;
    const image = WorkspaceImage.fromBytes(served.both.bytes);
    const listed = image.workspaces();
    assert.ok(listed.length >= 4);
    assert.deepEqual(Object.keys(listed[0]), ["tenant_id", "workspace_id"]);
    image.close();
    assert.throws(() => image.workspaces(), (e) => e.code === "BACKEND");
    const api = new execstore.MonitorApi({});
    const closed = api.handleWorkspaces(image, "GET", "/api/workspaces");
    assert.equal(closed.status, 503);
    assert.throws(
      () => WorkspaceImage.fromBytes(served.executions.bytes),
      (e) => e.code === "NOT_FOUND" && e.what === "reflexr tables",
    );
    assert.throws(() => WorkspaceImage.fromBytes(new Uint8Array(4096)), (e) => e.code === "INVALID_INPUT" && e.field === "bytes");
    assert.throws(() => WorkspaceImage.fromBytes("not bytes"), (e) => e.code === "INVALID_INPUT" && e.field === "bytes");
    assert.throws(
      () => WorkspaceImage.fromBytes(served.both.bytes, { readOnly: false }),
      (e) => e.code === "INVALID_INPUT" && e.field === "options.readOnly",
    );
    assert.throws(
      () => WorkspaceImage.fromBytes(served.both.bytes, { wal: 42 }),
      (e) => e.code === "INVALID_INPUT" && e.field === "options.wal",
    );
  });
});

// The edge's UI in Chromium: the handler behind a plain Node HTTP server, over the reflexr-only
// file. The workspaces view opens (no executions view), a workspace's log renders, and its
// tail falls back to polling (the edge has no stream endpoint: 404).

describe("the edge's UI over a reflexr user's database, in Chromium", { skip: noChromium || binMissing() || pythonMissing() }, () => {
  let tmp;
  let server;
  let url;
  let browser;

  before(async () => {
    tmp = tempDir();
    const db = without(demo(tmp.dir, { executions: 20, seed: 2 }), join(tmp.dir, "reflexr.db"), EXECUTION_TABLES);
    const handler = createHandler({ execstore, bytes: readFileSync(db), label: "reflexr.db", files });
    server = createServer(async (req, res) => {
      const response = await handler(new Request(`http://${req.headers.host}${req.url}`, { method: req.method }));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${server.address().port}/`;
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve()));
    tmp?.cleanup();
  });

  test("opens on the workspaces; a log renders and its tail is polled", async () => {
    const page = await browser.newPage();
    const problems = [];
    page.on("pageerror", (e) => problems.push(String(e)));
    page.on("dialog", (d) => { problems.push(`dialog: ${d.message()}`); d.dismiss(); });
    await page.goto(url);
    await page.waitForSelector("#ws-list tbody tr", { timeout: 30000 });
    const nav = await page.$$eval(".views a", (as) => Object.fromEntries(as.map((a) => [a.dataset.view, !a.hidden])));
    assert.deepEqual([nav.executions, nav.workspaces], [false, true]);
    await page.goto(`${url}?view=workspaces&tenant=acme&ws=prod`);
    await page.waitForSelector(".ws-log tbody tr", { timeout: 30000 });
    await page.waitForFunction(() => /polling|polled/.test(document.querySelector("#ws-tail-state")?.textContent || ""), null, { timeout: 30000 });
    assert.deepEqual(problems, []);
    await page.close();
  });
});
