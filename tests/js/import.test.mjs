// Store.importOpfs in headless Chromium, in a dedicated worker: a SQLite store file written
// by the native `execstore demo` becomes an OPFS store; an existing store is replaced only
// with `replace: true`; a bad file or a wrong prefix is refused and leaves the store as it
// was; a -wal sidecar's commits are recovered into the import; an import opened for writing
// takes commits that persist.
// Run: node --test tests/js/  (needs `npm run build:wasm`, `cargo build -p execstore-cli`, Chromium)
import assert from "node:assert/strict";
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";

import { binMissing, demo, nativeMonitor, tempDir } from "./native.mjs";
import { ARGS, CHROMIUM, noChromium } from "./chromium.mjs";
import { serveRepository } from "./serve.mjs";

const skip = noChromium || binMissing();

describe("Store.importOpfs in Chromium", { skip }, () => {
  let tmp;
  let server;
  let browser;
  let page;
  let files;

  before(async () => {
    tmp = tempDir();
    const db = demo(tmp.dir, { executions: 120, seed: 7 });
    const other = demo(tmp.dir, { name: "other.db", executions: 40, seed: 8 });
    // A copy with an ack in its -wal file: a monitor with a token holds it open. Its checkpoint
    // thread may already have copied the ack into live.db itself, so the -wal is imported over
    // the untouched original (a byte copy of live.db before the ack): the ack can then come
    // from the -wal only.
    const live = join(tmp.dir, "live.db");
    copyFileSync(db, live);
    const writer = await nativeMonitor(live, ["--token", "t0k"]);
    try {
      const outbox = (await (await fetch(`${writer.url}api/outbox?limit=1`)).json()).items;
      const ack = await fetch(`${writer.url}api/outbox/${outbox[0].seq}/ack`, { method: "POST", headers: { authorization: "Bearer t0k" }, body: JSON.stringify({ reason: "test" }) });
      assert.equal(ack.status, 200);
      files = {
        demo: readFileSync(db).toString("base64"),
        other: readFileSync(other).toString("base64"),
        liveWal: readFileSync(`${live}-wal`).toString("base64"),
      };
    } finally {
      await writer.stop();
    }
    server = await serveRepository();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    page = await (await browser.newContext()).newPage();
    page.on("pageerror", (error) => console.error("page error:", error));
    await page.goto(`${server.url}/tests/js/pages/import.html`);
    await page.waitForFunction(() => window.ready === true);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    tmp?.cleanup();
  });

  const run = (op, args) => page.evaluate(([op, args]) => window.run(op, args), [op, args]);

  test("imports, refuses to overwrite unless asked, and a bad import changes nothing", async () => {
    const first = await run("import", { name: "imp", bytes: files.demo, options: { readOnly: true, replace: true } });
    assert.equal(first.ok, true, JSON.stringify(first.error));
    assert.equal(first.result.kind, "opfs");
    assert.equal(first.result.total, 120);
    const outbox = first.result.outbox;
    assert.ok(outbox > 0);

    const again = await run("import", { name: "imp", bytes: files.other });
    assert.equal(again.ok, false);
    assert.equal(again.error.code, "INVALID_INPUT");
    assert.equal(again.error.field, "name");

    for (const [what, args] of [
      ["not SQLite", { bytes: btoa("not a database at all".repeat(60)), options: { replace: true } }],
      ["wrong prefix", { bytes: files.other, options: { replace: true, prefix: "harel" } }],
      ["not bytes", { options: { replace: true } }],
    ]) {
      const bad = await run("import", { name: "imp", ...args });
      assert.equal(bad.ok, false, what);
      assert.ok(["INVALID_INPUT", "NOT_FOUND"].includes(bad.error.code), `${what}: ${bad.error.code}`);
      const still = await run("open", { name: "imp", options: { readOnly: true } });
      assert.deepEqual(still.result, { total: 120, outbox }, `${what} left the store as it was`);
    }

    const replaced = await run("import", { name: "imp", bytes: files.other, options: { replace: true, readOnly: true } });
    assert.equal(replaced.result.total, 40);
  });

  test("a -wal sidecar's commits are recovered into the import", async () => {
    const mainOnly = await run("import", { name: "wal", bytes: files.demo, options: { replace: true, readOnly: true } });
    const withWal = await run("import", { name: "wal", bytes: files.demo, wal: files.liveWal, options: { replace: true, readOnly: true } });
    assert.equal(mainOnly.ok && withWal.ok, true, JSON.stringify([mainOnly.error, withWal.error]));
    assert.equal(withWal.result.outbox, mainOnly.result.outbox - 1, "the ack in the -wal is there");
  });

  test("an import opened for writing takes commits that persist", async () => {
    const written = await run("importThenWrite", { name: "rw", bytes: files.other });
    assert.equal(written.ok, true, JSON.stringify(written.error));
    assert.equal(written.result.total, 41);
    const reopened = await run("open", { name: "rw" });
    assert.deepEqual(reopened.result, written.result);
  });
});
