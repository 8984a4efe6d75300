#!/usr/bin/env node
// bench/graph.mjs: how long the definition picture takes for many executions: the API's
// answer (`GET /api/definitions/{id}/graph`, every execution's state and every trace) and the
// first render in Chromium (`?view=definition&definition=D`: fetch, dagre layout, SVG).
//
//   node bench/graph.mjs [--executions 10000] [--db FILE --prefix P --definition D]
//                        [--repeat 5] [--keep DIR]
//
// Without --db it writes a store with harel 0.9 itself (tests/browser/harel_graph_fixture.py:
// harel's engine with tracing on, `--executions` orders of a nested chart; about 2.5 minutes
// for 10,000, harel commits each step with a sync) using $EXECSTORE_HAREL_PYTHON. The monitor
// is the release binary ($EXECSTORE_BIN, else target/release/execstore: build it first with
// `cargo build --release -p execstore-cli`). Needs tests/browser's node_modules (playwright-core)
// and Chromium (/usr/bin/chromium or $EXECSTORE_CHROMIUM). Prints one JSON object; figures
// are medians (and minimums) over --repeat runs, in milliseconds.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createRequire } from "node:module";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "tests/browser/package.json"));
const { chromium } = require("playwright-core");

const { values: opt } = parseArgs({
  options: {
    executions: { type: "string", default: "10000" },
    db: { type: "string" },
    prefix: { type: "string" },
    definition: { type: "string", default: "shop" },
    repeat: { type: "string", default: "5" },
    keep: { type: "string" },
  },
});
const repeat = Math.max(1, Number(opt.repeat));
const bin = process.env.EXECSTORE_BIN || join(root, "target/release/execstore");
if (!existsSync(bin)) throw new Error(`no ${bin}: cargo build --release -p execstore-cli`);

const dir = opt.keep ? resolve(opt.keep) : mkdtempSync(join(tmpdir(), "execstore-graph-bench-"));
mkdirSync(dir, { recursive: true });
let db = opt.db;
let prefix = opt.prefix;
let made = null;
if (!db) {
  const python = process.env.EXECSTORE_HAREL_PYTHON;
  if (!python) throw new Error("set EXECSTORE_HAREL_PYTHON (a python with harel 0.9) or pass --db");
  db = join(dir, "harel.db");
  prefix = "harel";
  const t0 = performance.now();
  const out = spawnSync(python, [join(root, "tests/browser/harel_graph_fixture.py"), db, opt.executions], { encoding: "utf8", maxBuffer: 1 << 28 });
  if (out.status !== 0) throw new Error(`harel_graph_fixture.py: ${out.stderr}`);
  made = { by: "harel 0.9 DurableRunner (trace on)", seconds: Math.round((performance.now() - t0) / 100) / 10 };
}

function serve() {
  return new Promise((ok, fail) => {
    const args = ["monitor", "--db", db, "--port", "0", ...(prefix ? ["--prefix", prefix] : [])];
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/monitor: (http:\/\/\S+)/);
      if (m) ok({ child, url: m[1] });
    });
    child.on("exit", (code) => fail(new Error(`monitor exited (${code})`)));
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x) => Math.round(x * 10) / 10;
const summary = (xs) => ({ median: round(median(xs)), min: round(Math.min(...xs)) });

const { child, url } = await serve();
try {
  const path = `api/definitions/${encodeURIComponent(opt.definition)}/graph`;
  // The API: wall time of the whole answer (request, store reads, JSON), seen by a client.
  const api = [];
  let body;
  let bytes = 0;
  for (let i = 0; i < repeat + 1; i++) {
    const t0 = performance.now();
    const r = await fetch(new URL(path, url));
    const text = await r.text();
    const t = performance.now() - t0;
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${text}`);
    if (i > 0) api.push(t); // the first warms the page cache
    body = JSON.parse(text);
    bytes = text.length;
  }
  // Chromium: from navigation to the picture drawn, and its parts (the page's own marks).
  const browser = await chromium.launch({
    executablePath: process.env.EXECSTORE_CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu"],
  });
  const firstRender = [];
  const fetchMs = [];
  const layoutMs = [];
  try {
    for (let i = 0; i < repeat; i++) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      await page.goto(`${url}?view=definition&definition=${encodeURIComponent(opt.definition)}`);
      await page.waitForSelector("#def-graph[data-ready] svg.statechart", { timeout: 120_000 });
      firstRender.push(await page.evaluate(() => performance.now()));
      fetchMs.push(Number(await page.getAttribute("#def-graph", "data-fetch-ms")));
      layoutMs.push(Number(await page.getAttribute("#def-graph", "data-render-ms")));
      if (i === 0 && opt.keep) await page.screenshot({ path: join(dir, "graph-bench.png"), fullPage: true });
      await page.close();
    }
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify({
    definition: opt.definition,
    executions: body.executions,
    traces_read: body.traces_read,
    steps: body.graph.steps,
    states: body.graph.states.length,
    transitions: body.graph.transitions.length,
    db_bytes: statSync(db).size,
    made,
    answer_bytes: bytes,
    api_ms: summary(api),
    browser_first_render_ms: summary(firstRender),
    browser_fetch_ms: summary(fetchMs),
    browser_layout_and_draw_ms: summary(layoutMs),
    repeat,
  }, null, 2));
} finally {
  child.kill("SIGINT");
  if (!opt.keep) rmSync(dir, { recursive: true, force: true });
}
