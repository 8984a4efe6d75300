// Crash trials of an OPFS store in headless Chromium, on a profile on disk (so OPFS files are
// real files, as in a user's browser): a dedicated worker runs a W1-like workload
// (pages/opfs-crash-worker.js) under `synchronous: "normal"` (and one trial under "full") and
// reports each commit after it returned; the test crashes the renderer (CDP Page.crash: the
// page's process, and the worker in it, dies) at a different point of each trial, opens a
// fresh page on the same profile and origin, reopens the store and checks that every
// acknowledged commit is there and that no step is half applied: each execution's version,
// context, active path, processed markers, trace, outbox events, spawns and timer are those of
// the same number of whole steps.
// Run: node --test tests/js/opfs-crash.test.mjs  (needs `npm run build:wasm` and Chromium)
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";

import { ARGS, CHROMIUM, noChromium } from "./chromium.mjs";
import { serveRepository } from "./serve.mjs";

const skip = noChromium;

const EXECUTIONS = 60;
const ROUNDS = 100; // 6,060 commits in all: every trial crashes long before the end
// When to crash, in acknowledged commits: early (among the saves), through the first WAL
// checkpoints and beyond; the last trial runs under "full".
const TRIALS = [
  { synchronous: "normal", crashAfter: 25 },
  { synchronous: "normal", crashAfter: 700 },
  { synchronous: "normal", crashAfter: 1900 },
  { synchronous: "normal", crashAfter: 3300 },
  { synchronous: "full", crashAfter: 900 },
];

/** `promise`, or a failure after `ms`: a stalled worker or a crash that does not happen fails. */
function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const id = (i) => `crash-${String(i).padStart(4, "0")}`;
const value = (i, j, r) => `e${i}-k${j}-g${r}-`.repeat(3);

/** The context after `s` whole steps of execution `i` (as the worker's `step` makes it). */
function expectedContext(i, s) {
  const context = { counter: s };
  const generation = Array(12).fill(0);
  for (let r = 1; r <= s; r++) for (let t = 0; t < 3; t++) generation[(3 * r + t) % 12] = r;
  for (let j = 0; j < 12; j++) context[`f${j}`] = value(i, j, generation[j]);
  return context;
}

/** Checks the reopened store against the acknowledged commits; returns the steps found. */
function check(state, acks, label) {
  const steps = [];
  const byTarget = new Map();
  for (const [seq, target, event] of state.outbox) {
    if (!byTarget.has(target)) byTarget.set(target, []);
    byTarget.get(target).push([seq, event]);
  }
  const spawnsOf = new Map();
  for (const [, parent, child] of state.spawns) {
    if (!spawnsOf.has(parent)) spawnsOf.set(parent, []);
    spawnsOf.get(parent).push(child);
  }
  const timerOf = new Map();
  for (const [execution, path, fireAt] of state.timers) {
    assert.equal(timerOf.has(execution), false, `${label}: ${execution} has one timer`);
    assert.equal(path, "work.timeout");
    timerOf.set(execution, fireAt);
  }
  for (let i = 0; i < EXECUTIONS; i++) {
    const exe = state.executions[i];
    const acked = acks.get(i);
    if (exe === null) {
      assert.equal(acked, undefined, `${label}: ${id(i)} was saved (acknowledged) but is missing`);
      assert.equal(byTarget.has(id(i)) || spawnsOf.has(id(i)) || timerOf.has(id(i)), false, `${label}: effects of a missing ${id(i)}`);
      steps.push(-1);
      continue;
    }
    const s = exe.version - 1; // whole steps applied: version 1 is the save
    steps.push(s);
    if (acked !== undefined) assert.ok(exe.version >= acked, `${label}: ${id(i)} at version ${exe.version}, acknowledged ${acked}`);
    // One step is all of it or none of it: every part says the same number of steps.
    assert.equal(exe.counter, s, `${label}: ${id(i)} counter`);
    assert.equal(exe.active_path, `s${s}`, `${label}: ${id(i)} active path`);
    assert.deepEqual(exe.fields, expectedContext(i, s), `${label}: ${id(i)} context`);
    assert.deepEqual(exe.processed, Array.from({ length: ROUNDS }, (_, k) => k < s), `${label}: ${id(i)} processed markers`);
    assert.deepEqual(exe.trace, Array.from({ length: s }, (_, k) => k + 1), `${label}: ${id(i)} trace`);
    const events = (byTarget.get(id(i)) ?? []).map(([, e]) => e);
    assert.deepEqual(events, Array.from({ length: s }, (_, k) => `out-${k + 1}-${i}`), `${label}: ${id(i)} outbox`);
    const spawns = Array.from({ length: Math.floor(s / 5) }, (_, k) => `${id(i)}-r${5 * (k + 1)}`);
    assert.deepEqual(spawnsOf.get(id(i)) ?? [], spawns, `${label}: ${id(i)} spawns`);
    assert.equal(timerOf.get(id(i)), s > 0 && s % 2 === 0 ? 1000 * s + i : undefined, `${label}: ${id(i)} timer`);
  }
  // Every seq once, in commit order per execution.
  const seqs = state.outbox.map(([seq]) => seq);
  assert.equal(new Set(seqs).size, seqs.length, `${label}: outbox seqs are unique`);
  assert.equal(byTarget.size <= EXECUTIONS, true);
  return steps;
}

describe("OPFS store: crash the renderer mid-workload, reopen, every acknowledged commit is there", { skip }, () => {
  let server;
  let profile;
  let context;
  let current = null; // the running trial's callbacks

  before(async () => {
    server = await serveRepository();
    profile = mkdtempSync(join(tmpdir(), "execstore-opfs-crash-"));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: ARGS });
    await context.exposeFunction("acked", (batch) => {
      for (const [i, r, version] of batch) current?.acked(i, r, version);
    });
    await context.exposeFunction("finished", () => current?.finished());
    await context.exposeFunction("failed", (message) => current?.failed(message));
  });

  after(async () => {
    await context?.close();
    await server?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  async function openPage() {
    const page = await context.newPage();
    await page.goto(`${server.url}/tests/js/pages/opfs-crash.html`);
    await page.waitForFunction(() => window.ready === true);
    return page;
  }

  test("synchronous is \"full\" or \"normal\": anything else is INVALID_INPUT and creates nothing", async () => {
    const page = await context.newPage();
    await page.goto(`${server.url}/tests/js/pages/opfs.html`);
    await page.waitForFunction(() => window.ready === true);
    const got = await page.evaluate(async () => {
      const out = [];
      for (const synchronous of ["off", "extra", "FULL", "", 1, true]) {
        const error = await window.execstore.openOpfs(`bad-sync-${out.length}`, { synchronous }).then(
          (store) => store.close().then(() => null),
          (e) => e,
        );
        out.push(error && { code: error.code, field: error.field });
      }
      const root = await navigator.storage.getDirectory();
      const names = [];
      try {
        const dir = await root.getDirectoryHandle("execstore");
        for await (const name of dir.keys()) names.push(name);
      } catch {
        // no store at all: nothing was created
      }
      const levels = [];
      for (const synchronous of ["full", "normal", undefined]) {
        const store = await window.execstore.openOpfs(`good-sync-${levels.length}`, synchronous === undefined ? {} : { synchronous });
        const exe = { id: "a", definition_id: "d", version: 0 };
        levels.push(await store.commit(exe).then(() => exe.version));
        await store.close();
      }
      return { out, created: names.filter((n) => n.startsWith("bad-sync-")), levels };
    });
    await page.close();
    assert.deepEqual(got.out, Array(6).fill({ code: "INVALID_INPUT", field: "options.synchronous" }));
    assert.deepEqual(got.created, [], "a refused open leaves no store behind");
    assert.deepEqual(got.levels, [1, 1, 1]);
  });

  const summary = [];

  for (const [t, trial] of TRIALS.entries()) {
    test(`trial ${t + 1}: synchronous "${trial.synchronous}", crash after ${trial.crashAfter} acknowledged commits`, async () => {
      const label = `trial ${t + 1}`;
      const params = { name: `crash-${t}-${Date.now()}`, synchronous: trial.synchronous, executions: EXECUTIONS, rounds: ROUNDS };
      const acks = new Map(); // execution index -> highest acknowledged version
      let count = 0;
      let done = false;
      let failure = null;
      const page = await openPage();
      const crashed = new Promise((resolve) => page.on("crash", resolve));
      const reached = new Promise((resolve) => {
        current = {
          acked(i, r, version) {
            count += 1;
            acks.set(i, Math.max(acks.get(i) ?? 0, version));
            if (count >= trial.crashAfter) resolve();
          },
          finished() {
            done = true;
            resolve();
          },
          failed(message) {
            failure = message;
            resolve();
          },
        };
      });
      const started = Date.now();
      await page.evaluate((p) => window.startWorkload(p), params);
      await within(reached, 180000, `${label}: ${trial.crashAfter} acknowledged commits`);
      assert.equal(failure, null, `${label}: the workload failed before the crash`);
      const cdp = await context.newCDPSession(page);
      cdp.send("Page.crash").catch(() => {}); // never answers: the renderer is gone
      await within(crashed, 30000, `${label}: the renderer's crash`);
      current = null;
      await page.close().catch(() => {});
      const ackedBeforeCrash = count;
      const ms = Date.now() - started;
      // It crashed mid-workload: commits were acknowledged, the workload had not finished.
      assert.ok(ackedBeforeCrash >= trial.crashAfter, `${label}: ${ackedBeforeCrash} commits acknowledged`);
      assert.equal(done, false, `${label}: the workload finished before the crash`);
      assert.ok(ackedBeforeCrash < EXECUTIONS * (ROUNDS + 1));

      // A fresh page on the same profile and origin reopens the store (this succeeding also
      // shows that the crashed worker let go of it).
      const reader = await openPage();
      const state = await within(reader.evaluate((p) => window.readStore(p), params), 120000, `${label}: reopening`);
      await reader.close();
      const steps = check(state, acks, label);
      const first = state.executions[0];
      assert.equal(state.resumed, first === null ? null : first.version + 1, `${label}: the reopened store takes a new step`);
      const stored = steps.reduce((n, s) => n + (s >= 0 ? s + 1 : 0), 0);
      // The store may hold commits that returned but whose report the crash cut off; it
      // holds all that were reported.
      assert.ok(stored >= ackedBeforeCrash, `${label}: ${stored} commits stored, ${ackedBeforeCrash} acknowledged`);
      const line = `${label} (${trial.synchronous}): crashed after ${ackedBeforeCrash} acknowledged commits (${ms} ms); ` +
        `reopened with ${stored} (${stored - ackedBeforeCrash} committed but not yet reported), steps per execution ` +
        `${Math.min(...steps)}..${Math.max(...steps)}, every part of every step consistent`;
      summary.push(line);
      console.log(line);
    });
  }

  test("every trial crashed mid-workload and checked its acknowledged commits", () => {
    assert.equal(summary.length, TRIALS.length, "a trial did not run to its check");
  });
});
