// Store.openFile is durable across SIGKILL: a child Node process commits steps to one execution
// in a loop and prints each acknowledged version; the parent SIGKILLs it at a random point
// (sometimes while it is still opening the file), reopens the file (taking the killed child's
// lock over) and checks that every acknowledged commit is there and nothing is half applied:
// the version is the last acknowledged one or the one in flight, every step's processed
// marker, outbox event, timer and trace step is there and none beyond, and SQLite's
// integrity_check says ok. EXECSTORE_NODE_FILE_KILLS trials (default 30), alternating
// synchronous "full" and "normal" (both survive a killed process); EXECSTORE_NODE_FILE_SEED
// repeats a run.
// Run: node --test tests/js/node-file-kill.test.mjs  (needs `npm run build:wasm`; python3 for integrity_check)
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Store } from "execstore";

import { tempDir } from "./native.mjs";

const CHILD = fileURLToPath(new URL("./node-file-child.mjs", import.meta.url));
const KILLS = Number(process.env.EXECSTORE_NODE_FILE_KILLS || 30);
const SEED = Number(process.env.EXECSTORE_NODE_FILE_SEED || Date.now() % 1_000_000);

function python() {
  try {
    execFileSync("python3", ["-c", "import sqlite3"], { stdio: "ignore" });
    return "python3";
  } catch {
    return null;
  }
}
const PYTHON = python();

/** A small seeded PRNG (mulberry32), so a failing run can be repeated. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs the child until it is killed: at `killAfterMs` after spawning if `early`, else after
 * `acks` acknowledged commits. Resolves with the highest acknowledged version (0: none). */
function trial({ db, synchronous, early, killAfterMs, acks }) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CHILD, "loop", db, synchronous], { stdio: ["ignore", "pipe", "inherit"] });
    let buffered = "";
    let highest = 0;
    let seen = 0;
    let killed = false;
    const kill = () => {
      if (!killed) {
        killed = true;
        proc.kill("SIGKILL");
      }
    };
    if (early) setTimeout(kill, killAfterMs);
    proc.stdout.on("data", (chunk) => {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop();
      for (const line of lines) {
        if (line.startsWith("ack ")) {
          highest = Math.max(highest, Number(line.slice(4)));
          if (++seen >= acks) kill();
        }
      }
    });
    proc.once("exit", (code, signal) => {
      // A partial last line was never acknowledged in full: ignored.
      if (signal !== "SIGKILL") reject(new Error(`the child ended by itself (${code ?? signal})`));
      else resolve({ highest, seen });
    });
  });
}

describe("Store.openFile survives SIGKILL at random points", () => {
  let tmp;
  before(() => {
    tmp = tempDir();
  });
  after(() => tmp.cleanup());

  test(`${KILLS} kills (seed ${SEED}): every acknowledged commit is there, none half applied`, { timeout: 600_000 }, async () => {
    const random = rng(SEED);
    const db = join(tmp.dir, "kill.db");
    let acknowledged = 0; // the highest version any child acknowledged
    let version = 0; // the version found at the last reopen
    let inFlightLanded = 0;
    for (let k = 0; k < KILLS; k++) {
      const synchronous = k % 3 === 2 ? "normal" : "full";
      const early = random() < 0.15;
      const label = `kill ${k + 1} (seed ${SEED}, ${synchronous}${early ? ", early" : ""})`;
      const { highest } = await trial({
        db,
        synchronous,
        early,
        killAfterMs: Math.floor(random() * 250),
        acks: 1 + Math.floor(random() * 120),
      });
      acknowledged = Math.max(acknowledged, highest);

      const store = await Store.openFile(db, { waitMs: 5000, traceMax: 0 });
      try {
        const exe = store.load("k");
        const found = exe?.version ?? 0;
        assert.ok(found >= acknowledged, `${label}: version ${found}, but ${acknowledged} was acknowledged`);
        assert.ok(found <= Math.max(acknowledged, version) + 1, `${label}: version ${found} is beyond the one commit in flight`);
        if (found > acknowledged) inFlightLanded++;
        if (exe) assert.equal(exe.context.step, found, `${label}: the state is the step's`);
        // Every step up to the version, and none beyond: processed markers, outbox, trace, timers.
        for (let step = version + 1; step <= found; step++) {
          assert.equal(store.isProcessed("k", `k-in-${step}`), true, `${label}: step ${step}'s marker`);
        }
        assert.equal(store.isProcessed("k", `k-in-${found + 1}`), false, `${label}: no marker past ${found}`);
        const steps = [];
        for (let page = store.pendingOutbox(null, 10_000); page.length; page = store.pendingOutbox(page.at(-1).seq, 10_000)) {
          steps.push(...page.map((e) => e.event.data.step));
        }
        assert.deepEqual(steps, Array.from({ length: found }, (_, i) => i + 1), `${label}: one outbox event per step`);
        const trace = store.readTrace("k").map((t) => t.step);
        // The child keeps the default 200 trace steps per execution: the last 200 steps.
        const kept = Math.min(found, 200);
        assert.deepEqual(trace, Array.from({ length: kept }, (_, i) => found - kept + i + 1), `${label}: one trace step per step`);
        const timers = store.dueTimers(2e9, null, 100).map((t) => [t.path, t.fire_at]).sort();
        const want = [0, 1, 2].flatMap((r) => {
          const last = Array.from({ length: found }, (_, i) => i + 1).filter((s) => s % 3 === r).pop();
          return last === undefined ? [] : [[`t${r}`, 1_700_000_000 + last]];
        }).sort();
        assert.deepEqual(timers, want, `${label}: the timers of the last steps`);
        version = found;
      } finally {
        store.close();
      }
      if (PYTHON) {
        const check = execFileSync(PYTHON, ["-c",
          "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); print(c.execute('PRAGMA integrity_check').fetchone()[0])", db],
          { encoding: "utf8" }).trim();
        assert.equal(check, "ok", `${label}: integrity_check`);
      }
      assert.equal(existsSync(`${db}-lock`), false, `${label}: the reopen's close removed the lock`);
    }
    assert.ok(version > 0, "commits were made");
    console.log(`node file kill test: ${KILLS} kills (seed ${SEED}), ${version} steps committed, ` +
      `${acknowledged} acknowledged, a commit in flight landed ${inFlightLanded} times` +
      (PYTHON ? "" : "; integrity_check skipped (no python3 with sqlite3)"));
  });
});
