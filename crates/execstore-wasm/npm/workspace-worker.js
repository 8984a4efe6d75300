// The dedicated module worker behind workspace-client.js: it owns one `OpfsWorkspaceStore`
// and runs what the page sends. Messages in (each with an `id`): {op: "open", name, options}
// | {op: "call", method, args} | {op: "begin", tx, ref} | {op: "tx", tx, method, args} |
// {op: "commit", tx} | {op: "rollback", tx} | {op: "subscribe", sub, ref, options, window} |
// {op: "credit", sub, n} | {op: "unsubscribe", sub} | {op: "close"}. Replies as worker.js's
// (rpc.js); a subscription also posts {sub, envelope} per envelope and then {sub, end: true}
// or {sub, error}. Flow control: at most `window` envelopes are posted that the page has not
// yet taken (each `credit` message returns `n`); past that, the subscription stops reading
// until credit comes, so a page that does not keep up holds a bounded buffer.
//
// Messages are not queued here: each starts as it arrives, and the store runs its calls in
// the order they were made (a call made while a transaction is open waits for its commit or
// rollback, which must therefore not wait behind that call). A transaction is the callback
// of `store.transaction`, kept open until the page's commit or rollback; `close` rolls back
// every open one.

import { misuse, openOnce, plain, serve } from "./rpc.js";

// Loaded dynamically so that `onmessage` is in place before the module's top-level await.
const loading = import("./index.js");

/** The store methods a page may call (`transaction` and `subscribe` have ops of their own). */
const METHODS = new Set([
  "capabilities", "headSeq", "read", "ruleHistory", "envelope", "run", "runs", "searchLog", "searchRuns", "deadLetters",
  "progress", "schedules", "storedRules", "workspaces", "workspaceInfo", "dueRuns",
  "acquireLease", "releaseLease", "leases", "cursor", "saveCursor", "cursors",
]);

/** The `WorkspaceTx` methods a page may call. */
const TX_METHODS = new Set([
  "append", "envelope", "headSeq", "read", "progress", "saveProgress", "states", "saveStates",
  "clearStates", "run", "saveRuns", "scopeRuns", "deadLetter", "schedule", "saveSchedule",
  "storedRule", "storedRules", "saveStoredRule",
]);

/** What a rollback makes the transaction's callback throw. */
const ROLLBACK = Symbol("rollback");

let store = null;
/** Open transactions by the page's id: {tx, finish(rollback), done}. */
const txs = new Map();
/** Running subscriptions by the page's id: {iterator, posted (not yet credited), wake, stop()}. */
const subs = new Map();

function opened() {
  if (store === null) throw misuse("the store is closed");
  return store;
}

function txOf(id) {
  const entry = txs.get(id);
  if (entry === undefined) throw misuse("the transaction has ended");
  return entry;
}

/** Starts a transaction on `ref`; resolves once its callback runs (it holds the workspace). */
function begin(id, ref) {
  if (txs.has(id)) throw misuse(`transaction ${id} is already open`);
  return new Promise((started, failed) => {
    let finish;
    const ended = new Promise((resolve, reject) => {
      finish = (rollback) => (rollback ? reject(ROLLBACK) : resolve());
    });
    const done = opened().transaction(ref, (tx) => {
      // Begun before a close that has rolled back the open ones: ended at once.
      if (store === null) {
        failed(misuse("the store is closed"));
        throw ROLLBACK;
      }
      txs.set(id, { tx, finish, done });
      started({ result: null });
      return ended;
    });
    // Before the callback: a bad ref, LOCKED, a closed store. After it: commit's own answer.
    done.catch((error) => failed(error === ROLLBACK ? misuse("the store is closed") : error));
  });
}

/** Ends transaction `id`: commits, or rolls back; resolves when it has. */
async function end(id, rollback) {
  const entry = txOf(id);
  txs.delete(id);
  entry.finish(rollback);
  try {
    await entry.done;
  } catch (error) {
    if (error !== ROLLBACK) throw error;
  }
  return { result: null };
}

/** Starts subscription `id`, posting its envelopes (at most `window` uncredited) until it ends. */
function subscribe(id, ref, options, window) {
  if (!(Number.isSafeInteger(window) && window > 0)) throw misuse("a subscription needs a window > 0");
  const iterator = opened().subscribe(ref, options ?? undefined);
  const state = { iterator, posted: 0, stopped: false, wake: null };
  state.stop = () => {
    state.stopped = true;
    state.wake?.();
    return iterator.return();
  };
  subs.set(id, state);
  (async () => {
    try {
      for await (const envelope of iterator) {
        self.postMessage({ sub: id, envelope });
        state.posted += 1;
        while (state.posted >= window && !state.stopped) {
          await new Promise((resolve) => {
            state.wake = resolve;
          });
          state.wake = null;
        }
        if (state.stopped) break;
      }
      self.postMessage({ sub: id, end: true });
    } catch (error) {
      self.postMessage({ sub: id, error: plain(error) });
    } finally {
      subs.delete(id);
    }
  })();
  return { result: null };
}

async function run(message) {
  switch (message.op) {
    case "open":
      store = await openOnce(store, (await loading).WorkspaceStore, message);
      return { result: null };
    case "call": {
      if (!METHODS.has(message.method)) throw misuse(`${message.method} is not a store method`);
      return { result: await opened()[message.method](...message.args) };
    }
    case "begin":
      return begin(message.tx, message.ref);
    case "tx": {
      if (!TX_METHODS.has(message.method)) throw misuse(`${message.method} is not a transaction method`);
      const { tx } = txOf(message.tx);
      return { result: tx[message.method](...message.args) ?? null };
    }
    case "commit":
      return end(message.tx, false);
    case "rollback":
      return end(message.tx, true);
    case "subscribe":
      return subscribe(message.sub, message.ref, message.options, message.window);
    case "credit": {
      const state = subs.get(message.sub);
      if (state !== undefined) {
        state.posted -= message.n;
        state.wake?.();
      }
      return { result: null };
    }
    case "unsubscribe":
      await subs.get(message.sub)?.stop();
      return { result: null };
    case "close": {
      const closing = store;
      store = null;
      for (const id of [...txs.keys()]) await end(id, true);
      for (const state of subs.values()) state.stop(); // also those waiting for credit
      await closing?.close(); // ends the subscriptions
      return { result: null };
    }
    default:
      throw misuse(`unknown op ${message.op}`);
  }
}

serve(run, { ordered: false });
