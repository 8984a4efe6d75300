// The in-browser monitor (crates/execstore-cli/web/local.html) over files that hold a workspace log, in headless
// Chromium: a reflexr user's database (the demo file without its execution tables) imported
// through the file picker opens on its workspaces (as the native CLI lists them), the
// executions view is hidden, a workspace's log opens; a reload reopens it from OPFS (the
// bytes kept there, read from a memvfs copy); a file with both (the demo) then shows both,
// and a bad file changes nothing. Screenshots in test-artifacts/.
// Run: node --test tests/js/  (needs `npm run build:wasm`, `cargo build -p execstore-cli`, Chromium, python3)
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

import { binMissing, cliJson, demo, tempDir } from "./native.mjs";
import { ARGS, CHROMIUM, noChromium } from "./chromium.mjs";
import { serveRepository } from "./serve.mjs";

const ARTIFACTS = process.env.EXECSTORE_ARTIFACTS ?? fileURLToPath(new URL("../../test-artifacts", import.meta.url));
const skip = noChromium || binMissing();

/** The demo file without its execution tables: what a reflexr user's database holds. */
function reflexrOnly(db, out) {
  copyFileSync(db, out);
  const script = [
    "import sqlite3, sys",
    "c = sqlite3.connect(sys.argv[1])",
    "for n in ['executions', 'outbox', 'processed_events', 'timers', 'spawns', 'trace', 'execstore_migrations']:",
    "    c.execute(f'drop table if exists \"{n}\"')",
    "c.commit(); c.execute('vacuum'); c.close()",
  ].join("\n");
  execFileSync("python3", ["-c", script, out]);
  return out;
}

const wsNames = (p) => p.$$eval("#ws-list tbody tr", (rows) => rows.map((r) => [...r.cells].slice(0, 2).map((c) => c.textContent).join("/")));
const navVisible = (p) => p.$$eval(".views a", (as) => Object.fromEntries(as.map((a) => [a.dataset.view, !a.hidden])));

describe("the in-browser monitor over a workspace log", { skip }, () => {
  let tmp;
  let both;
  let wsOnly;
  let listed;
  let server;
  let browser;
  let page;
  const problems = [];

  before(async () => {
    tmp = tempDir();
    both = demo(tmp.dir, { executions: 80, seed: 9 });
    wsOnly = reflexrOnly(both, join(tmp.dir, "reflexr.db"));
    listed = cliJson(["workspaces", "--db", wsOnly]).map((w) => `${w.tenant_id}/${w.workspace_id}`);
    assert.ok(listed.length >= 4);
    mkdirSync(ARTIFACTS, { recursive: true });
    server = await serveRepository();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    page = await context.newPage();
    page.on("pageerror", (error) => problems.push(String(error)));
    page.on("dialog", (dialog) => {
      problems.push(`dialog: ${dialog.message()}`);
      dialog.dismiss();
    });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    tmp?.cleanup();
  });

  test("a reflexr user's database opens on its workspaces; a workspace's log opens", async () => {
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html`);
    await page.waitForSelector("#importer:not([hidden])");
    await page.setInputFiles("#file", wsOnly);
    await page.waitForSelector("#ws-list tbody tr", { timeout: 30000 });
    assert.deepEqual(await wsNames(page), listed);
    const nav = await navVisible(page);
    assert.equal(nav.workspaces, true);
    assert.equal(nav.executions, false, "no executions view for a file without executions");
    assert.ok((await page.$$(".ws-list .chip.lag")).length > 0, "cursors behind the head are shown");
    await page.screenshot({ path: join(ARTIFACTS, "monitor-local-workspaces.png") });
    await page.keyboard.press("j");
    await page.keyboard.press("Enter");
    await page.waitForSelector(".ws-log tbody tr", { timeout: 30000 });
    assert.match(page.url(), /tenant=/);
    assert.ok((await page.$$(".ws-log tbody tr")).length > 0);
    await page.screenshot({ path: join(ARTIFACTS, "monitor-local-workspace-log.png") });
    assert.deepEqual(problems, []);
  });

  test("a reload reopens it from OPFS; a file with both then shows both; a bad file changes nothing", async () => {
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html?view=workspaces`);
    await page.waitForSelector("#ws-list tbody tr", { timeout: 30000 });
    assert.equal(await page.isVisible("#importer"), false, "no import asked: the bytes are in OPFS");
    assert.deepEqual(await wsNames(page), listed);

    await page.click("#import-another");
    await page.setInputFiles("#file", both);
    // The page reloads onto the new store: the executions view first.
    await page.waitForSelector(".executions-grid tbody tr", { timeout: 30000 });
    await page.waitForFunction(() => document.querySelector(".chart .total strong")?.textContent === "80");
    const nav = await navVisible(page);
    assert.equal(nav.workspaces, true);
    assert.equal(nav.executions, true);
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html?view=workspaces`);
    await page.waitForSelector("#ws-list tbody tr", { timeout: 30000 });
    assert.deepEqual(await wsNames(page), listed);

    const bad = join(tmp.dir, "not-a-store.db");
    writeFileSync(bad, "this is not a SQLite file".repeat(100));
    await page.click("#import-another");
    await page.setInputFiles("#file", bad);
    await page.waitForSelector("#import-state.error");
    assert.match(await page.textContent("#import-state"), /not a SQLite database file/);
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html?view=workspaces`);
    await page.waitForSelector("#ws-list tbody tr", { timeout: 30000 });
    assert.deepEqual(await wsNames(page), listed);
    await page.goto(`${server.url}/crates/execstore-cli/web/local.html`);
    await page.waitForFunction(() => document.querySelector(".chart .total strong")?.textContent === "80", null, { timeout: 30000 });
    assert.deepEqual(problems, []);
  });
});
