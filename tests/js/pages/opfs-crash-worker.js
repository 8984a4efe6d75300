// The dedicated worker of opfs-crash.html (tests/js/opfs-crash.test.mjs): a W1-like workload
// on an execstore OPFS store, reporting each commit to the page only after it returned, and
// the read-back of a store after a crash.
//
// {op: "run", name, synchronous, executions, rounds}: opens the store, saves `executions`
// executions, then runs `rounds` rounds of: loadForEvent, mutate, commit with one emit, the
// processed event id, a timer (scheduled on even rounds, cancelled on odd ones), a spawn
// every 5th round and a trace step. Posts {ack: [i, round, version]} after each save (round
// 0) and commit, and {done: true} at the end.
// {op: "read", name, synchronous, executions, rounds}: reopens the store and posts
// {state}: every execution, its processed markers, trace, and the store's outbox, spawns and
// timers, for the test to check; then commits the next step of the first execution (`resumed`:
// its version after that).
const loading = import("/node_modules/execstore/index.js");

const id = (i) => `crash-${String(i).padStart(4, "0")}`;
const inEvent = (r, i) => `in-${r}-${i}`;
const outEvent = (r, i) => `out-${r}-${i}`;
const value = (i, j, r) => `e${i}-k${j}-g${r}-`.repeat(3);

function execution(i) {
  const context = { counter: 0 };
  for (let j = 0; j < 12; j++) context[`f${j}`] = value(i, j, 0);
  return { id: id(i), definition_id: "crash", status: "RUNNING", active_path: "s0", context, version: 0 };
}

function step(exe, i, r) {
  exe.active_path = `s${r}`;
  exe.context.counter += 1;
  for (let t = 0; t < 3; t++) exe.context[`f${(3 * r + t) % 12}`] = value(i, (3 * r + t) % 12, r);
  return {
    emits: [{ target_id: exe.id, event: { id: outEvent(r, i), kind: "progress", data: { r, i } } }],
    processed_event_id: inEvent(r, i),
    timers: [r % 2 === 0
      ? { action: "schedule", path: "work.timeout", fire_at: 1000 * r + i }
      : { action: "cancel", path: "work.timeout" }],
    spawns: r % 5 === 0 ? [{ child_id: `${exe.id}-r${r}`, root_path: "fork", context: { r } }] : [],
    trace: { event_kind: "tick", r },
  };
}

async function open(Store, params) {
  return Store.openOpfs(params.name, { synchronous: params.synchronous, waitMs: 15000 });
}

async function run(params) {
  const { Store } = await loading;
  const store = await open(Store, params);
  for (let i = 0; i < params.executions; i++) {
    const exe = execution(i);
    store.save(exe);
    self.postMessage({ ack: [i, 0, exe.version] });
  }
  for (let r = 1; r <= params.rounds; r++) {
    for (let i = 0; i < params.executions; i++) {
      const { execution: exe, processed } = store.loadForEvent(id(i), inEvent(r, i));
      if (exe === null || processed) throw new Error(`${id(i)} round ${r}: ${exe === null ? "missing" : "already processed"}`);
      store.commit(exe, step(exe, i, r));
      self.postMessage({ ack: [i, r, exe.version] });
    }
  }
  store.close();
  self.postMessage({ done: true });
}

function all(fetch) {
  const out = [];
  for (let page = fetch(null); page.length; page = fetch(page[page.length - 1])) out.push(...page);
  return out;
}

async function read(params) {
  const { Store } = await loading;
  const store = await open(Store, params);
  try {
    const executions = [];
    for (let i = 0; i < params.executions; i++) {
      const exe = store.load(id(i));
      if (exe === null) {
        executions.push(null);
        continue;
      }
      const processed = [];
      for (let r = 1; r <= params.rounds; r++) processed.push(store.isProcessed(exe.id, inEvent(r, i)));
      executions.push({
        id: exe.id, version: exe.version, counter: exe.context.counter, active_path: exe.active_path,
        fields: exe.context, processed, trace: store.readTrace(exe.id).map((s) => s.r),
      });
    }
    const state = {
      executions,
      outbox: all((last) => store.pendingOutbox(last?.seq ?? null, 1000)).map((e) => [e.seq, e.target_id, e.event.id]),
      spawns: all((last) => store.pendingSpawns(last?.seq ?? null, 1000)).map((s) => [s.seq, s.parent_id, s.child_id]),
      timers: all((last) => store.dueTimers(1e12, last, 1000)).map((t) => [t.execution_id, t.path, t.fire_at]),
      resumed: null,
    };
    // Then the recovered store takes the next step of the first execution.
    const first = store.load(id(0));
    if (first !== null && first.version <= params.rounds) {
      store.commit(first, step(first, 0, first.version));
      state.resumed = store.load(id(0)).version;
    }
    return state;
  } finally {
    store.close();
  }
}

self.onmessage = async ({ data: params }) => {
  try {
    if (params.op === "run") await run(params);
    else self.postMessage({ state: await read(params) });
  } catch (error) {
    self.postMessage({ error: String(error?.stack ?? error) });
  }
};
