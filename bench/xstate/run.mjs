#!/usr/bin/env node
// bench/xstate/run.mjs: events per second through a durable XState actor (execstore/xstate)
// against a plain XState actor that saves getPersistedSnapshot() to the same store after every
// event (XState's docs' pattern), side by side in one run (core.mjs says how), in Node
// (Store.openFile at synchronous full and normal, Store.sqliteMemory()) and in headless
// Chromium (Store.openOpfs at full and normal, Store.sqliteMemory(), in a dedicated worker,
// on a browser profile on disk). Prints one JSON line per store, then a table. Not a test.
//
//   node bench/xstate/run.mjs [--events N] [--no-node] [--no-browser] [--chromium PATH]
//
// N defaults to 2000 (after 200 warm-up events). Needs the package built (npm run build:wasm)
// and, for the browser, Chromium (/usr/bin/chromium or --chromium).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { runNode } from "./node.mjs";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "2000" },
    "no-node": { type: "boolean", default: false },
    "no-browser": { type: "boolean", default: false },
    chromium: { type: "string", default: process.env.EXECSTORE_CHROMIUM ?? "/usr/bin/chromium" },
  },
});
const n = Number(values.events);
if (!Number.isInteger(n) || n < 1) throw new Error(`--events must be a positive integer, not ${values.events}`);

const results = [];
const show = (r) => {
  results.push(r);
  console.log(JSON.stringify(r));
};

if (!values["no-node"]) for (const r of await runNode({ n })) show(r);

if (!values["no-browser"]) {
  const { chromium } = await import("playwright-core");
  const { serveRepository } = await import("../../tests/js/serve.mjs");
  const server = await serveRepository();
  const profile = mkdtempSync(join(tmpdir(), "execstore-xstate-bench-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: values.chromium,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
  try {
    const page = await context.newPage();
    page.on("console", (m) => console.error("page:", m.text()));
    page.on("crash", () => console.error("page crashed"));
    await page.goto(`${server.url}/bench/xstate/page.html`);
    await page.waitForFunction(() => window.ready === true);
    const browser = await page.evaluate(({ n }) => window.bench(n, ["opfs-full", "opfs-normal", "sqlite-memory"]), { n });
    for (const r of browser) show(r);
  } finally {
    await context.close();
    await server.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

console.log("\nwhere     store          docs ev/s  durable ev/s  ratio  docs p50/p99 us  durable p50/p99 us  added p50/p99 us");
for (const r of results) {
  console.log([
    r.where.padEnd(9), r.store.padEnd(14), String(r.docs.events_per_s).padStart(9), String(r.durable.events_per_s).padStart(13),
    `${r.ratio.toFixed(2)}x`.padStart(6), `${r.docs.p50_us}/${r.docs.p99_us}`.padStart(16), `${r.durable.p50_us}/${r.durable.p99_us}`.padStart(19),
    `${r.added_p50_us}/${r.added_p99_us}`.padStart(17),
  ].join(" "));
}
