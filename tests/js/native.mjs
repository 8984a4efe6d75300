// The native `execstore` binary for the JS tests: demo store files, and `execstore monitor`
// as a process to compare answers with. EXECSTORE_BIN names the binary (default: `debug/execstore`
// in cargo's target directory, as `cargo metadata` reports it, so CARGO_TARGET_DIR is honoured;
// scripts/lib/wasm.sh builds it first).
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** The environment without settings that would point the binary elsewhere. */
function cleanEnv() {
  const env = { ...process.env };
  delete env.EXECSTORE_DB;
  delete env.EXECSTORE_MONITOR_TOKEN;
  return env;
}

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Cargo's target directory for this workspace (CARGO_TARGET_DIR, a config's build.target-dir,
 * or `target/`), asked of cargo once; `target/` if cargo cannot be run. */
function cargoTargetDir() {
  try {
    const out = execFileSync("cargo", ["metadata", "--format-version", "1", "--no-deps"], {
      cwd: ROOT,
      encoding: "utf8",
      maxBuffer: 1 << 26,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return JSON.parse(out).target_directory;
  } catch {
    return join(ROOT, "target");
  }
}

export const BIN = process.env.EXECSTORE_BIN || join(cargoTargetDir(), "debug", "execstore");

/** A reason to skip when the binary is missing (an error if EXECSTORE_REQUIRE_BIN is set). */
export function binMissing() {
  if (existsSync(BIN)) return false;
  if (process.env.EXECSTORE_REQUIRE_BIN) throw new Error(`EXECSTORE_REQUIRE_BIN is set but ${BIN} does not exist`);
  return `no execstore binary at ${BIN} (cargo build -p execstore-cli)`;
}

/** A fresh temporary directory; `cleanup()` removes it. */
export function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), "execstore-js-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Writes a demo store (`execstore demo --no-serve`); returns its path. */
export function demo(dir, { name = "demo.db", executions = 300, seed = 1, prefix } = {}) {
  const db = join(dir, name);
  const args = ["demo", "--no-serve", "--db", db, "--executions", String(executions), "--seed", String(seed)];
  if (prefix) args.push("--prefix", prefix);
  execFileSync(BIN, args, { stdio: ["ignore", "ignore", "inherit"], env: cleanEnv() });
  return db;
}

/** Runs `execstore <args> --json`; returns the parsed output. */
export function cliJson(args) {
  return JSON.parse(execFileSync(BIN, [...args, "--json"], { encoding: "utf8", maxBuffer: 1 << 28, env: cleanEnv() }));
}

/** Starts `execstore monitor --db DB --port 0 [...extra]`; resolves with `{url, stop()}`. */
export async function nativeMonitor(db, extra = []) {
  const child = spawn(BIN, ["monitor", "--db", db, "--port", "0", ...extra], {
    stdio: ["ignore", "pipe", "inherit"],
    env: cleanEnv(),
  });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`execstore monitor exited (${code}) before serving`)));
    lines.on("line", (line) => {
      if (line.startsWith("monitor: ")) resolve(line.slice("monitor: ".length).split(/\s+/)[0]);
    });
  });
  return {
    url,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", resolve);
        child.kill();
      }),
  };
}
