// W1-style commits (shared/bench/WORKLOAD.md phases 0 and 1) through the npm package
// `execstore`: in Node over Store.memory(), Store.sqliteMemory() and a SQLite file on the local
// disk (Store.openFile, synchronous "full": an fsync per commit, as native), in headless Chromium
// over an OPFS store in a dedicated worker (one commit per step, and the same steps with
// commitBatch of one round at a time), beside `execstore bench` (native, same machine, same
// run) when the binary is given. One JSON line per run.
//
//   node bench/js/w1.mjs [--executions N] [--events K] [--native target/release/execstore] [--browser]
//
// Phase 0 saves N executions; phase 1 runs K rounds of: load, is_processed, mutate, commit
// (one emit, the processed id, a timer schedule/cancel, a spawn every 10th round, a trace
// step). commit_events_per_s = N*K / phase-1 wall time, as `execstore bench` reports it.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { w1 } from "./w1-workload.mjs";

function parseArgs(argv) {
  const args = { executions: 500, events: 10, native: null, browser: false, chromium: "/usr/bin/chromium" };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split("=", 2);
    const value = () => inline ?? argv[++i];
    if (flag === "--executions") args.executions = Number(value());
    else if (flag === "--events") args.events = Number(value());
    else if (flag === "--native") args.native = value();
    else if (flag === "--browser") args.browser = true;
    else if (flag === "--chromium") args.chromium = value();
    else throw new Error(`unknown flag ${flag}`);
  }
  return args;
}

async function inBrowser(args) {
  const { chromium } = await import("playwright-core");
  const { serveRepository } = await import("../../tests/js/serve.mjs");
  const server = await serveRepository();
  const browser = await chromium.launch({
    executablePath: args.chromium,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  try {
    const page = await browser.newPage();
    page.on("console", (m) => console.error(`page: ${m.text()}`));
    await page.goto(`${server.url}/bench/js/opfs.html`);
    return await page.evaluate(
      ({ executions, events }) => window.runBench({ executions, events }),
      { executions: args.executions, events: args.events },
    );
  } finally {
    await browser.close();
    await server.close();
  }
}

const args = parseArgs(process.argv.slice(2));
const results = [];
if (args.native) {
  for (const backend of ["memory", "sqlite"]) {
    const out = execFileSync(args.native, ["bench", "--backend", backend, "--executions", String(args.executions),
      "--events", String(args.events)], { encoding: "utf8" });
    const native = JSON.parse(out.trim().split("\n").pop());
    results.push({ impl: `native-${backend}`, where: "native", executions: args.executions, events: args.events,
      create_saves_per_s: native.create_saves_per_s, commit_events_per_s: native.commit_events_per_s });
  }
}
const { Store } = await import("execstore");
for (const [name, open] of [["memory", () => Store.memory()], ["sqlite-memory", () => Store.sqliteMemory()]]) {
  results.push({ impl: `wasm-${name}`, where: `node ${process.version}`, ...w1(open(), args) });
}
{
  const dir = mkdtempSync(join(tmpdir(), "execstore-w1-"));
  try {
    const store = await Store.openFile(join(dir, "w1.db"));
    results.push({ impl: "wasm-node-file", where: `node ${process.version}`, ...w1(store, args) });
    store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (args.browser) {
  for (const result of await inBrowser(args)) results.push(result);
}
for (const result of results) console.log(JSON.stringify(result));
if (process.argv[1] === fileURLToPath(import.meta.url) && !existsSync(args.chromium) && args.browser) process.exitCode = 1;
