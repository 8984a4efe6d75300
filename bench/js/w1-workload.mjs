// W1 phases 0 and 1 (shared/bench/WORKLOAD.md) over any execstore `Store` (synchronous
// methods) or, with `batch`, one commitBatch per round. Runs in Node and in a worker.
const MASK = (1n << 64n) - 1n;

function splitmix64(x) {
  let z = (x + 0x9e3779b97f4a7c15n) & MASK;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return z ^ (z >> 31n);
}
const hex = (v, w) => v.toString(16).padStart(w, "0");
const dec = (v, w) => String(v).padStart(w, "0");
const exeId = (seed, i) =>
  hex(splitmix64((BigInt(seed) << 32n) + 2n * BigInt(i)), 16) + hex(splitmix64((BigInt(seed) << 32n) + 2n * BigInt(i) + 1n), 16);
const ctxValue = (i, j, g) => {
  const u = `e${dec(i, 8)}-k${dec(j, 2)}-g${dec(g, 5)}-`;
  return u + u;
};

function execution(seed, i) {
  const d = Math.floor(i / 5) % 5;
  const context = { counter: 0 };
  for (let j = 1; j <= 19; j++) context[`f${dec(j, 2)}`] = ctxValue(i, j, 0);
  return {
    id: exeId(seed, i), definition_id: `def-${d}`, definition_fqn: `bench.definitions.Workflow${d}`, root_path: "",
    status: "RUNNING", outcome: null, error: null, active_path: "root.work.s00", history: {}, context,
    processed_events: 0, version: 0, priority: 0, parent_id: i % 5 === 4 ? exeId(seed, i - 1) : null, child_id: null,
    deferred: [], children: {}, invoke_seq: {}, created_at: null, updated_at: null, finished_at: null, expires_at: null,
  };
}

/** Mutates `exe` for round r and returns the step's effects. */
function step(exe, i, r, rounds, trace) {
  const old = exe.active_path;
  const next = `root.work.s${dec(r, 2)}`;
  exe.history[`root.work.h${dec(r, 2)}`] = next;
  exe.active_path = next;
  const contextOut = {};
  for (let t = 0; t < 3; t++) {
    const j = ((3 * (r - 1) + t) % 19) + 1;
    exe.context[`f${dec(j, 2)}`] = contextOut[`f${dec(j, 2)}`] = ctxValue(i, j, r);
  }
  exe.context.counter += 1;
  exe.processed_events += 1;
  if (r === rounds && i % 2 === 1) exe.status = "DONE";
  const schedule = r % 2 === 0;
  const effects = {
    emits: [{ target_id: exe.id, event: { id: `${hex(r, 8)}${hex(i, 16)}00000001`, kind: "progress", created_time: null,
      received_time: null, data: { round: r, counter: exe.context.counter, path: next } } }],
    processed_event_id: `${hex(r, 8)}${hex(i, 16)}00000000`,
    timers: [schedule
      ? { action: "schedule", path: "root.work.timeout", fire_at: 1700000000 + 1000 * r + (i % 1000) }
      : { action: "cancel", path: "root.work.timeout" }],
    spawns: r % 10 === 0 ? [{ child_id: `${exe.id}-r${dec(r, 4)}`, root_path: "root.fork.region", context: { parent_id: exe.id, round: r } }] : [],
  };
  if (trace) {
    effects.trace = { event: "tick", round: r, transition: `${old} -> ${next}`,
      actions: ["assign", "emit:progress", `timer:${schedule ? "schedule" : "cancel"}`], context_out: contextOut };
  }
  return effects;
}

const round2 = (x) => Math.round(x * 10) / 10;

/**
 * Runs phases 0 and 1 on `store`; returns the rates. With `batch`, each round's N steps go
 * in one `commitBatch` (one transaction) after the N loads. `onPhase1`, if given, is called
 * as phase 1 starts (bench/js/opfs-sync-worker.mjs starts counting OPFS calls there).
 */
export function w1(store, { executions: n, events: k, trace = true, seed = 1, batch = false, onPhase1 = null }) {
  const ids = Array.from({ length: n }, (_, i) => exeId(seed, i));
  let t0 = performance.now();
  for (let i = 0; i < n; i++) store.save(execution(seed, i));
  const create = (performance.now() - t0) / 1000;
  onPhase1?.();
  t0 = performance.now();
  for (let r = 1; r <= k; r++) {
    const items = [];
    for (let i = 0; i < n; i++) {
      const exe = store.load(ids[i]);
      if (store.isProcessed(ids[i], `${hex(r, 8)}${hex(i, 16)}00000000`)) throw new Error("W1: already processed");
      const effects = step(exe, i, r, k, trace);
      if (batch) items.push({ execution: exe, effects });
      else store.commit(exe, effects);
    }
    if (batch) {
      const failed = store.commitBatch(items).filter((o) => !o.ok);
      if (failed.length) throw failed[0].error;
    }
  }
  const commit = (performance.now() - t0) / 1000;
  const last = store.load(ids[n - 1]);
  if (last.version !== k + 1) throw new Error(`W1: version ${last.version}, wanted ${k + 1}`);
  return {
    executions: n, events: k, batch: batch ? n : 1,
    create_saves_per_s: round2(n / create), commit_events_per_s: round2((n * k) / commit),
  };
}
