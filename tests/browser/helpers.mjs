// Shared by the browser tests: the execstore binary, demo stores, a monitor server per test
// file, and a Chromium page that fails the test on any page error or dialog.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, "../..");
/** The binary under test: $EXECSTORE_BIN, else the debug build. */
export const bin = process.env.EXECSTORE_BIN || join(repo, "target/debug/execstore");
export const artifacts = resolve(process.env.EXECSTORE_ARTIFACTS || join(repo, "test-artifacts"));
mkdirSync(artifacts, { recursive: true });

export const CHROMIUM = process.env.EXECSTORE_CHROMIUM || "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--no-first-run",
];

/** The environment for execstore: no EXECSTORE_DB or token inherited from the caller. */
function cleanEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  if (!("EXECSTORE_DB" in extra)) delete env.EXECSTORE_DB;
  if (!("EXECSTORE_MONITOR_TOKEN" in extra)) delete env.EXECSTORE_MONITOR_TOKEN;
  return env;
}

export function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), "execstore-browser-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs `execstore args...` to completion; throws with its stderr if it fails. */
export function run(args) {
  const out = spawnSync(bin, args, { encoding: "utf8", env: cleanEnv() });
  if (out.status !== 0) throw new Error(`execstore ${args.join(" ")} failed (${out.status}): ${out.stderr}`);
  return out.stdout;
}

/** Writes a demo store of `n` executions and returns its path. */
export function demo(dir, { executions = 300, seed = 1, name = "demo.db" } = {}) {
  const db = join(dir, name);
  run(["demo", "--db", db, "--executions", String(executions), "--seed", String(seed), "--no-serve"]);
  return db;
}

/** The servers `serve` started, by URL. */
const servers = new Map();

/** Stops the server `serve` started at `url` and waits until it exited. */
export function stopServer(url) {
  const child = servers.get(url);
  if (!child || child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGINT");
  });
}

/**
 * Starts `execstore <args> --port 0` and resolves with its URL (read from the line it
 * prints) once it listens; the process is stopped when the test ends.
 */
export function serve(t, args, env = {}) {
  return new Promise((resolveUrl, reject) => {
    const child = spawn(bin, [...args, "--port", "0"], {
      env: cleanEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    });
    t.after(() => child.kill("SIGINT"));
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/monitor: (http:\/\/\S+)/);
      if (m) {
        servers.set(m[1], child);
        resolveUrl(m[1]);
      }
    });
    child.stderr.on("data", (d) => { err += d; });
    child.on("exit", (code) => reject(new Error(`execstore ${args.join(" ")} exited (${code}) before serving: ${err}`)));
  });
}

/** A browser for the test file, closed at its end. */
export async function browser(t) {
  const b = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  t.after(() => b.close());
  return b;
}

/** The screen sizes every UI test runs at: a desktop window and a phone (390 px wide). */
export const SIZES = {
  desktop: { viewport: { width: 1440, height: 900 } },
  phone: { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 },
};
/** The OS colour schemes (the monitor follows it until its toggle picks one). */
export const THEMES = ["light", "dark"];

/**
 * A page that records every dialog (and dismisses it), page error and console error, so a
 * test can assert that nothing of the sort happened. `size` (a SIZES key) and `theme` (the
 * OS colour scheme) parametrise it; `width` and `height` set a desktop window's size.
 */
export async function page(b, { width = 1440, height = 900, size = null, theme = "light", permissions = [] } = {}) {
  const screen = size ? SIZES[size] : { viewport: { width, height } };
  const context = await b.newContext({ ...screen, colorScheme: theme, permissions });
  const p = await context.newPage();
  p.problems = { dialogs: [], errors: [] };
  p.on("dialog", (d) => { p.problems.dialogs.push(`${d.type()}: ${d.message()}`); d.dismiss().catch(() => {}); });
  p.on("pageerror", (e) => p.problems.errors.push(String(e)));
  p.on("console", (m) => { if (m.type() === "error") p.problems.errors.push(m.text()); });
  return p;
}

/** The API's JSON at `path` (relative to the monitor's URL). */
export async function apiGet(url, path) {
  const r = await fetch(new URL(path, url));
  return { status: r.status, body: await r.json() };
}
