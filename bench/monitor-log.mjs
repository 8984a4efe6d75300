// The time to first render of a workspace's log view in the browser, for a log of 100,000
// envelopes beside one of 1,000 (the view pages: it asks for the last 100 and follows from
// there, so the first render should not grow with the log). A benchmark, not a test: it
// prints figures and asserts nothing about time.
//
//   node bench/monitor-log.mjs [--envelopes 100000] [--small 1000] [--repeat 5] [--last 100]
//
// For each size it writes a store with one workspace of that many envelopes (`execstore bench
// --workload w2 --backend sqlite --db F --workspaces 1 --w2-events N`, which keeps the file),
// serves it with the native `execstore monitor --db F` and opens
// `?view=workspaces&tenant=t0&ws=w0&last=L` in headless Chromium (playwright-core), a fresh
// page each time. First render: from navigation start to the moment the first log row is in
// the DOM (a MutationObserver installed before the page's scripts). Also: the log request's
// server time and body size. Needs the release binary (EXECSTORE_BIN, default
// target/release/execstore: `cargo build --release -p execstore-cli`) and Chromium
// (EXECSTORE_CHROMIUM, default /usr/bin/chromium). Prints one JSON line per size, then a table.
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = process.env.EXECSTORE_BIN || join(ROOT, "target", "release", "execstore");
const CHROMIUM = process.env.EXECSTORE_CHROMIUM ?? "/usr/bin/chromium";

const { values: opts } = parseArgs({
  options: {
    envelopes: { type: "string", default: "100000" },
    small: { type: "string", default: "1000" },
    repeat: { type: "string", default: "5" },
    last: { type: "string", default: "100" },
  },
});
const repeat = Number(opts.repeat);
const last = Number(opts.last);
for (const [name, v] of [["repeat", repeat], ["last", last], ["envelopes", Number(opts.envelopes)], ["small", Number(opts.small)]]) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a whole number >= 1`);
}
if (![50, 100, 200, 500].includes(last)) throw new Error("--last must be one of 50 100 200 500 (the view's choices)");
if (!existsSync(BIN)) throw new Error(`no execstore binary at ${BIN}: cargo build --release -p execstore-cli (or set EXECSTORE_BIN)`);
if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set EXECSTORE_CHROMIUM)`);

const env = { ...process.env };
delete env.EXECSTORE_DB;
delete env.EXECSTORE_MONITOR_TOKEN;

function writeStore(dir, envelopes) {
  const db = join(dir, `log-${envelopes}.db`);
  const started = performance.now();
  const out = execFileSync(BIN, [
    "bench", "--workload", "w2", "--backend", "sqlite", "--db", db,
    "--workspaces", "1", "--w2-events", String(envelopes), "--runs", "100",
  ], { encoding: "utf8", env, maxBuffer: 1 << 24 });
  JSON.parse(out.trim().split("\n").pop()); // the bench's own line: it ran to the end
  const writeMs = performance.now() - started;
  // The head as the store says (W2 also appends while a subscriber follows).
  const [ws] = JSON.parse(execFileSync(BIN, ["workspaces", "--db", db, "--json"], { encoding: "utf8", env }));
  return { db, head: ws.head_seq, writeMs };
}

async function monitor(db) {
  const child = spawn(BIN, ["monitor", "--db", db, "--port", "0"], { stdio: ["ignore", "pipe", "inherit"], env });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`execstore monitor exited (${code})`)));
    lines.on("line", (l) => l.startsWith("monitor: ") && resolve(l.slice(9).split(/\s+/)[0]));
  });
  return { url, stop: () => new Promise((r) => (child.exitCode !== null ? r() : (child.once("exit", r), child.kill()))) };
}

/** Records, before any of the page's scripts run, when the first log row enters the DOM. */
function observeFirstRow() {
  const seen = () => document.querySelector(".ws-log tbody tr, #ws-tail tbody tr");
  new MutationObserver((_, observer) => {
    if (window.__firstLogRow === undefined && seen()) {
      window.__firstLogRow = performance.now();
      window.__rows = document.querySelectorAll("#ws-tail tbody tr").length;
      observer.disconnect();
    }
  }).observe(document, { childList: true, subtree: true });
}

async function measure(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  await page.addInitScript(observeFirstRow);
  let log = null;
  page.on("response", async (response) => {
    if (/\/api\/workspaces\/t0\/w0\/log\?/.test(response.url()) && log === null) {
      const timing = response.request().timing();
      log = { serverMs: timing.responseStart - timing.requestStart, bytes: (await response.body()).length };
    }
  });
  await page.goto(`${url}?view=workspaces&tenant=t0&ws=w0&last=${last}`);
  await page.waitForFunction(() => window.__firstLogRow !== undefined, null, { timeout: 60000 });
  const { ms, rows, logAt } = await page.evaluate(() => {
    const entry = performance.getEntriesByType("resource").find((e) => /\/api\/workspaces\/t0\/w0\/log\?/.test(e.name));
    return { ms: window.__firstLogRow, rows: window.__rows, logAt: entry ? [entry.startTime, entry.responseEnd] : null };
  });
  if (log && logAt) [log.startMs, log.endMs] = logAt;
  await context.close();
  return { ms, rows, log };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x) => Math.round(x * 10) / 10;

const dir = mkdtempSync(join(tmpdir(), "execstore-monitor-log-"));
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
});
const results = [];
try {
  for (const envelopes of [Number(opts.small), Number(opts.envelopes)]) {
    const store = writeStore(dir, envelopes);
    const server = await monitor(store.db);
    try {
      await measure(browser, server.url); // warm-up: the file's pages into the OS cache
      const runs = [];
      for (let i = 0; i < repeat; i++) runs.push(await measure(browser, server.url));
      const result = {
        bench: "monitor-log-first-render",
        envelopes: store.head,
        last,
        repeat,
        first_render_ms_median: round(median(runs.map((r) => r.ms))),
        first_render_ms_min: round(Math.min(...runs.map((r) => r.ms))),
        first_render_ms_max: round(Math.max(...runs.map((r) => r.ms))),
        rows_rendered: runs[0].rows,
        log_request_server_ms_median: round(median(runs.map((r) => r.log?.serverMs ?? NaN))),
        // When the page asked for the log, and had its answer (from navigation start): the rest
        // of the first render is the page's own start (scripts, /api/info...), not the log.
        log_request_sent_ms_median: round(median(runs.map((r) => r.log?.startMs ?? NaN))),
        log_answer_in_ms_median: round(median(runs.map((r) => r.log?.endMs ?? NaN))),
        log_response_bytes: runs[0].log?.bytes ?? null,
        store_write_s: round(store.writeMs / 1000),
      };
      console.log(JSON.stringify(result));
      results.push(result);
    } finally {
      await server.stop();
    }
  }
} finally {
  await browser.close();
  rmSync(dir, { recursive: true, force: true });
}
console.log("\nenvelopes in the log | first render (median, min-max) | rows | log asked at / answered at | log request (server) | log response");
for (const r of results) {
  console.log(
    `${String(r.envelopes).padStart(20)} | ${r.first_render_ms_median} ms (${r.first_render_ms_min}-${r.first_render_ms_max})`.padEnd(56) +
      ` | ${r.rows_rendered} | ${r.log_request_sent_ms_median} / ${r.log_answer_in_ms_median} ms | ${r.log_request_server_ms_median} ms | ${r.log_response_bytes} bytes`,
  );
}
