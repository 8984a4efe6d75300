// The workspace log (reflexr 0.1.1's Storage) in the package: `WorkspaceStore`, over the
// synchronous `RawWorkspaceStore` of the wasm module (crates/execstore-wasm/src/workspace/).
// What this file adds: `transaction(ref, async (tx) => ...)`, which queues transactions (wasm
// has no threads: the store itself cannot wait), commits when the callback resolves and rolls
// back when it throws; and `subscribe(ref, { afterSeq })`, an async iterator that replays the
// log and then wakes on every commit through this store.
// `WorkspaceStore.openOpfs(name)` (a dedicated worker) gives an `OpfsWorkspaceStore`: the same
// operations, each returning a Promise, in a SQLite file in OPFS, shared with other tabs and
// workers of the origin by taking turns on its lease (see `OpfsWorkspaceStore`); its
// subscriptions also wake on their commits (a `BroadcastChannel`).
// Errors are the store's: `Error`s named `StoreError` with a stable `code`.
import { invalid } from "./rpc.js";
import { RawWorkspaceStore } from "./wasm/execstore.js";

/** The queue key of a workspace (called after the store checked the ref). */
function keyOf(ref) {
  return `${ref.tenant_id}\u0000${ref.workspace_id}`;
}

/** Each live `WorkspaceTx`'s raw transaction; removed when its callback settles. */
const RAW = new WeakMap();

/** The raw transaction of `tx`, or `BACKEND` once it has ended. */
function rawOf(tx) {
  const raw = RAW.get(tx);
  if (raw === undefined) {
    const error = new Error("the transaction has ended");
    error.name = "StoreError";
    error.code = "BACKEND";
    error.retryable = false;
    throw error;
  }
  return raw;
}

/** A waiting subscription's keep-alive timer's period (it does nothing when it fires). */
const KEEP_ALIVE_MS = 1 << 30;

/** How many envelopes a subscription reads at a time. */
const PAGE = 1000;

/** Per workspace key: how many commits were seen, and the subscriptions waiting for one. */
class Wakeups {
  #waiters = new Map();
  #counts = new Map();

  /** A commit to `key`: wakes its waiting subscriptions. */
  wake(key) {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    const waiters = this.#waiters.get(key);
    if (!waiters) return;
    this.#waiters.delete(key);
    for (const wake of waiters) wake();
  }

  /** Wakes every waiting subscription (the store closed). */
  wakeAll() {
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
    this.#waiters.clear();
  }

  /** How many commits to `key` were seen so far. */
  count(key) {
    return this.#counts.get(key) ?? 0;
  }

  /** Resolves at the next commit to `key` (or `wakeAll`). */
  wait(key) {
    return new Promise((resolve) => {
      let waiters = this.#waiters.get(key);
      if (!waiters) this.#waiters.set(key, (waiters = new Set()));
      waiters.add(resolve);
    });
  }
}

/**
 * A subscription's async iterator: `read(seq)` gives the envelopes after `seq` (a page, or a
 * Promise of one), `closed()` says whether the store closed. Never misses a commit: a wake-up
 * that comes while a read is under way makes it read again rather than wait.
 */
function follow(key, options, wakeups, read, closed) {
  const { afterSeq = 0, signal } = options ?? {};
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) {
    throw invalid("options.afterSeq", `must be an integer of 0 or more, not ${afterSeq}`);
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw invalid("options.signal", "must be an AbortSignal");
  }
  const buffer = [];
  let seq = afterSeq;
  let done = false;
  let wakeSelf = null;
  const finish = () => {
    done = true;
    if (wakeSelf) wakeSelf();
  };
  signal?.addEventListener("abort", finish, { once: true });
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      for (;;) {
        if (done || signal?.aborted) return { done: true, value: undefined };
        if (buffer.length > 0) {
          const envelope = buffer.shift();
          seq = envelope.seq;
          return { done: false, value: envelope };
        }
        if (closed()) return { done: true, value: undefined };
        const seen = wakeups.count(key);
        const page = await read(seq);
        if (done) continue;
        if (page.length > 0) {
          buffer.push(...page);
          continue;
        }
        if (wakeups.count(key) !== seen || closed()) continue;
        const woken = wakeups.wait(key);
        // A pending Promise alone does not keep Node's event loop alive: an idle in-memory
        // store's subscriber would end the process (code 13, an unsettled top-level await).
        // A timer that never fires holds it while the subscription waits for a commit.
        const keepAlive = setInterval(() => {}, KEEP_ALIVE_MS);
        try {
          await new Promise((resolve) => {
            wakeSelf = resolve;
            woken.then(resolve);
          });
        } finally {
          clearInterval(keepAlive);
          wakeSelf = null;
        }
      }
    },
    async return() {
      finish();
      signal?.removeEventListener("abort", finish);
      return { done: true, value: undefined };
    },
  };
}

/**
 * One transaction on one workspace, as `transaction`'s callback gets it. Every method is
 * synchronous; after the callback settles every call throws.
 */
export class WorkspaceTx {
  /** @internal */
  constructor(raw) {
    RAW.set(this, raw);
  }

  append(entries) {
    return rawOf(this).append(entries);
  }
  envelope(eventId) {
    return rawOf(this).envelope(eventId);
  }
  headSeq() {
    return rawOf(this).headSeq();
  }
  read(afterSeq, limit) {
    return rawOf(this).read(afterSeq, limit);
  }
  progress(rule) {
    return rawOf(this).progress(rule);
  }
  saveProgress(rule, progress) {
    rawOf(this).saveProgress(rule, progress);
  }
  states(rule, keys) {
    return rawOf(this).states(rule, keys);
  }
  saveStates(rule, states) {
    rawOf(this).saveStates(rule, states);
  }
  clearStates(rule) {
    rawOf(this).clearStates(rule);
  }
  run(runId) {
    return rawOf(this).run(runId);
  }
  saveRuns(runs) {
    rawOf(this).saveRuns(runs);
  }
  scopeRuns(rule, scopeKey) {
    return rawOf(this).scopeRuns(rule, scopeKey);
  }
  deadLetter(errors) {
    rawOf(this).deadLetter(errors);
  }
  schedule(name) {
    return rawOf(this).schedule(name);
  }
  saveSchedule(name, at) {
    rawOf(this).saveSchedule(name, at);
  }
  storedRule(name) {
    return rawOf(this).storedRule(name);
  }
  storedRules() {
    return rawOf(this).storedRules();
  }
  saveStoredRule(stored) {
    rawOf(this).saveStoredRule(stored);
  }
  /** Whether the transaction has ended (its callback settled). */
  get ended() {
    return !RAW.has(this);
  }
}

/**
 * A tenant's workspaces: a gap-free event log with subscriptions, rule progress and scope
 * states, runs and `dueRuns`, dead letters, schedule ticks, leases, cursors and versioned
 * stored rules. Make one with `WorkspaceStore.memory()` (synchronous operations), or
 * `await WorkspaceStore.openOpfs(name)` in a dedicated worker (an `OpfsWorkspaceStore`).
 */
export class WorkspaceStore {
  #raw;
  // Per workspace key: the promise the next transaction waits for.
  #queues = new Map();
  #wakeups = new Wakeups();

  /** @internal */
  constructor(raw) {
    this.#raw = raw;
  }

  /** Workspaces in memory (the core's MemoryWorkspaceStorage), timed by `Date.now()`. */
  static memory() {
    return new WorkspaceStore(RawWorkspaceStore.memory());
  }

  /**
   * Opens (creating if needed) the workspace store `name` in a SQLite file in the Origin
   * Private File System, in a dedicated worker: see `OpfsWorkspaceStore`.
   */
  static openOpfs(name, options) {
    return OpfsWorkspaceStore.open(name, options);
  }

  /**
   * Opens (creating if needed) the workspace store file at `path` on the local file system
   * (Node only): a SQLite file with reflexr's tables, owned by this process until `close()`
   * (another opener waits up to `options.waitMs`, then `LOCKED`), as `Store.openFile`'s.
   * Transactions share the file's one connection: they run one at a time, whatever their
   * workspace.
   */
  static async openFile(path, options) {
    return new WorkspaceStore(await RawWorkspaceStore.openFile(path, options));
  }

  /** `"memory"`, `"file"` or `"closed"`. */
  get kind() {
    return this.#raw.kind;
  }

  /** Closes the store: every later call throws, waiting subscriptions end. */
  close() {
    this.#raw.close();
    this.#wakeups.wakeAll();
  }

  capabilities() {
    return this.#raw.capabilities();
  }

  /**
   * Runs `fn(tx)` in a transaction on `ref`: it waits for the workspace's earlier
   * transactions, commits when `fn` resolves (returning what it resolved to) and rolls back
   * when it throws or rejects (rethrowing that). Nothing is visible to others until the commit.
   */
  async transaction(ref, fn) {
    if (typeof fn !== "function") throw invalid("fn", "must be a function");
    this.#raw.isBusy(ref); // checks `ref` (INVALID_INPUT) before anything waits
    const key = keyOf(ref);
    // A file's one connection: one queue for every workspace.
    const queue = this.#raw.oneConnection ? "" : key;
    const before = this.#queues.get(queue) ?? Promise.resolve();
    let release;
    const mine = new Promise((resolve) => {
      release = resolve;
    });
    const tail = before.then(() => mine);
    this.#queues.set(queue, tail);
    try {
      await before;
      const head = await runTransaction(this.#raw, ref, fn);
      if (head.appended) this.#wakeups.wake(key);
      return head.result;
    } finally {
      release();
      if (this.#queues.get(queue) === tail) this.#queues.delete(queue);
    }
  }

  /**
   * The log of `ref` after `afterSeq` (default 0), then every envelope committed later, in
   * order, never missing or repeating one: `for await (const envelope of store.subscribe(ref))`.
   * It waits for commits through this store; `break`, `signal`'s abort or `close()` end it.
   */
  subscribe(ref, options) {
    this.#raw.headSeq(ref); // checks `ref` now, not at the first `next()`
    const raw = this.#raw;
    return follow(
      keyOf(ref),
      options,
      this.#wakeups,
      (seq) => raw.read(ref, { after_seq: seq, limit: PAGE }),
      () => raw.kind === "closed",
    );
  }

  headSeq(ref) {
    return this.#raw.headSeq(ref);
  }
  read(ref, query) {
    return this.#raw.read(ref, query);
  }
  ruleHistory(ref, name) {
    return this.#raw.ruleHistory(ref, name);
  }
  envelope(ref, eventId) {
    return this.#raw.envelope(ref, eventId);
  }
  run(ref, runId) {
    return this.#raw.run(ref, runId);
  }
  runs(ref, query) {
    return this.#raw.runs(ref, query);
  }
  searchLog(ref, query) {
    return this.#raw.searchLog(ref, query);
  }
  searchRuns(ref, query) {
    return this.#raw.searchRuns(ref, query);
  }
  deadLetters(ref, rule) {
    return this.#raw.deadLetters(ref, rule);
  }
  progress(ref) {
    return this.#raw.progress(ref);
  }
  schedules(ref) {
    return this.#raw.schedules(ref);
  }
  storedRules(ref) {
    return this.#raw.storedRules(ref);
  }
  workspaces() {
    return this.#raw.workspaces();
  }
  workspaceInfo(ref) {
    return this.#raw.workspaceInfo(ref);
  }
  dueRuns(now, limit, policy) {
    return this.#raw.dueRuns(now, limit, policy);
  }
  acquireLease(ref, key, holder, ttlMs) {
    return this.#raw.acquireLease(ref, key, holder, ttlMs);
  }
  releaseLease(ref, key, holder) {
    this.#raw.releaseLease(ref, key, holder);
  }
  leases(ref) {
    return this.#raw.leases(ref);
  }
  cursor(ref, name) {
    return this.#raw.cursor(ref, name);
  }
  saveCursor(ref, name, seq) {
    this.#raw.saveCursor(ref, name, seq);
  }
  cursors(ref) {
    return this.#raw.cursors(ref);
  }
}

/**
 * Runs `fn(tx)` in a transaction of `raw` on `ref`: commits when it resolves, rolls back when
 * it throws. Resolves with `{result, appended, head}`.
 */
async function runTransaction(raw, ref, fn) {
  const rawTx = raw.begin(ref);
  const tx = new WorkspaceTx(rawTx);
  try {
    const start = rawTx.headSeq();
    const result = await fn(tx);
    const head = rawTx.headSeq();
    rawTx.commit();
    return { result, appended: head > start, head };
  } finally {
    RAW.delete(tx);
    rawTx.rollback(); // a no-op after the commit
    rawTx.free();
  }
}

/** A `BACKEND` error made here (not retryable), shaped as the store's own. */
function backendError(message) {
  const error = new Error(message);
  error.name = "StoreError";
  error.code = "BACKEND";
  error.retryable = false;
  return error;
}

/** How often a worker waiting for an OPFS store's lease asks its holder again, in ms. */
const ASK_EVERY_MS = 50;

/** Resolves after the tasks queued now (messages included) have run: a `MessageChannel`
 * round trip, much quicker than `setTimeout`. */
function turn() {
  if (typeof MessageChannel === "undefined") return new Promise((resolve) => setTimeout(resolve, 0));
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => {
      port1.close();
      resolve();
    };
    port2.postMessage(null);
  });
}

/** A store's id on its channel: a store ignores its own lease requests. */
let ids = 0;
const newId = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${++ids}`;

/** The `BroadcastChannel` of the OPFS store `name`: lease requests and commits. */
const channelOf = (name) => new BroadcastChannel(`execstore:workspace:${name}`);

/**
 * Runs `take()` (which waits for the lease of the OPFS store `name`), asking whoever holds
 * it to let go, now and every `ASK_EVERY_MS` until it is taken (a request can come before the
 * holder's lock request is queued, or be heard by an agent about to let go anyway). `name`
 * null: asks nobody. `from` identifies the asking store (which ignores its own requests).
 */
async function asking(name, from, take) {
  if (name === null || typeof BroadcastChannel === "undefined") return take();
  const channel = channelOf(name);
  const ask = () => channel.postMessage({ type: "want", from });
  ask();
  const timer = setInterval(ask, ASK_EVERY_MS);
  try {
    return await take();
  } finally {
    clearInterval(timer);
    channel.close();
  }
}

/**
 * A workspace store in a SQLite file in the Origin Private File System (reflexr's tables,
 * as `SqliteWorkspaceStorage` writes them), made by `await WorkspaceStore.openOpfs(name)` in a
 * dedicated worker. Every operation returns a Promise; they run one at a time, in the order
 * they were called, so a call made while a `transaction` callback runs waits for it to end.
 * Inside the callback use `tx`, never the store: a store call awaited there would wait for
 * the very transaction that waits for it.
 *
 * Tabs and workers of the origin share the store by taking turns: the OPFS file has one
 * connection, which one agent at a time holds (the store's lease: a Web Lock and the pool's
 * OPFS access handles). An agent keeps the lease while nobody else asks for it (so its calls
 * cost no open); an agent that needs it asks the holder on a `BroadcastChannel` and waits
 * (at most `waitMs`, then `LOCKED`); the holder lets go as soon as its current call or
 * transaction ends, and takes the lease back the same way for its next call. A commit that
 * appended posts the workspace and its new head on that channel, so subscriptions in every
 * tab wake and read the new envelopes.
 */
export class OpfsWorkspaceStore {
  #raw;
  #id;
  #name;
  #channel;
  #tail = Promise.resolve();
  #running = false;
  #wanted = false;
  #closing = false;
  #wakeups = new Wakeups();

  /** @internal */
  constructor(raw, id) {
    this.#raw = raw;
    this.#id = id;
    this.#name = raw.opfsName;
    this.#channel = channelOf(this.#name);
    this.#channel.onmessage = (event) => this.#heard(event.data);
  }

  /** @internal Use `WorkspaceStore.openOpfs(name, options)`. */
  static async open(name, options) {
    // Asks a holder in another tab or worker to let go (unless told not to wait at all).
    const ask = typeof name === "string" && options?.waitMs !== 0;
    const id = newId();
    const raw = await asking(ask ? name : null, id, () => RawWorkspaceStore.openOpfs(name, options));
    return new OpfsWorkspaceStore(raw, id);
  }

  /** `"opfs"`, or `"closed"` once `close()` was called. */
  get kind() {
    return this.#closing ? "closed" : "opfs";
  }

  /** The store's name. */
  get name() {
    return this.#name;
  }

  /** Whether this agent holds the store's lease now (it is let go when another asks for it). */
  get leaseHeld() {
    return !this.#closing && this.#raw.held;
  }

  #heard(message) {
    if (message === null || typeof message !== "object" || this.#closing) return;
    if (message.type === "want" && message.from !== this.#id) {
      if (this.#running) this.#wanted = true;
      else this.#letGo();
    } else if (message.type === "commit" && typeof message.tenant_id === "string"
      && typeof message.workspace_id === "string") {
      this.#wakeups.wake(keyOf(message));
    }
  }

  #letGo() {
    this.#wanted = false;
    if (this.#raw.kind === "opfs" && this.#raw.held) this.#raw.letGo();
  }

  async #takeBack() {
    const waitMs = this.#raw.waitMs;
    const lease = await asking(waitMs > 0 ? this.#name : null, this.#id, () =>
      RawWorkspaceStore.takeLease(this.#name, waitMs));
    try {
      this.#raw.resume(lease);
    } finally {
      lease.free();
    }
  }

  /** Runs `job(raw)` after every earlier call, holding the lease. */
  #enqueue(job) {
    if (this.#closing) return Promise.reject(backendError("the store is closed"));
    const run = async () => {
      // Lets the agent's messages in first: a lease request from another tab or worker is
      // heard between two calls, even when calls queue back to back.
      await turn();
      if (this.#raw.kind === "closed") throw backendError("the store is closed");
      if (this.#wanted) this.#letGo();
      this.#running = true;
      try {
        if (!this.#raw.held) await this.#takeBack();
        return await job(this.#raw);
      } finally {
        this.#running = false;
        if (this.#wanted) this.#letGo();
      }
    };
    const result = this.#tail.then(run);
    this.#tail = result.catch(() => undefined);
    return result;
  }

  /** A plain call: checks `ref` (if given) at once, then runs in turn. */
  #call(ref, job) {
    if (ref !== undefined && !this.#closing) {
      try {
        this.#raw.isBusy(ref);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#enqueue(job);
  }

  /**
   * Closes the store once the calls made before have run: the database closes and the lease
   * is let go; later calls reject with `BACKEND`, subscriptions end.
   */
  close() {
    if (this.#closing) return this.#tail;
    const closed = this.#tail.then(() => {
      this.#raw.close();
      this.#raw.free();
      this.#channel.close();
      this.#wakeups.wakeAll();
    });
    this.#closing = true;
    this.#tail = closed.catch(() => undefined);
    this.#wakeups.wakeAll();
    return closed;
  }

  capabilities() {
    return this.#call(undefined, (raw) => raw.capabilities());
  }

  /**
   * Runs `fn(tx)` in a transaction on `ref` once the calls made before have run: commits when
   * `fn` resolves (resolving with what it resolved to), rolls back when it throws or rejects
   * (rejecting with that). Calls made meanwhile wait for it; inside `fn` use `tx`.
   */
  transaction(ref, fn) {
    if (typeof fn !== "function") return Promise.reject(invalid("fn", "must be a function"));
    return this.#call(ref, async (raw) => {
      const done = await runTransaction(raw, ref, fn);
      if (done.appended) {
        this.#wakeups.wake(keyOf(ref));
        this.#channel.postMessage({
          type: "commit", tenant_id: ref.tenant_id, workspace_id: ref.workspace_id, head_seq: done.head,
        });
      }
      return done.result;
    });
  }

  /**
   * The log of `ref` after `afterSeq` (default 0), then every envelope committed later, by
   * this store or in another tab or worker on the same store name, in order, never missing
   * or repeating one. `break`, `signal`'s abort or `close()` end it.
   */
  subscribe(ref, options) {
    if (this.#closing) throw backendError("the store is closed");
    this.#raw.isBusy(ref); // checks `ref` now, not at the first `next()`
    return follow(
      keyOf(ref),
      options,
      this.#wakeups,
      (seq) => this.read(ref, { after_seq: seq, limit: PAGE }).catch((error) => {
        if (this.#closing) return [];
        throw error;
      }),
      () => this.#closing,
    );
  }

  headSeq(ref) {
    return this.#call(ref, (raw) => raw.headSeq(ref));
  }
  read(ref, query) {
    return this.#call(ref, (raw) => raw.read(ref, query));
  }
  ruleHistory(ref, name) {
    return this.#call(ref, (raw) => raw.ruleHistory(ref, name));
  }
  envelope(ref, eventId) {
    return this.#call(ref, (raw) => raw.envelope(ref, eventId));
  }
  run(ref, runId) {
    return this.#call(ref, (raw) => raw.run(ref, runId));
  }
  runs(ref, query) {
    return this.#call(ref, (raw) => raw.runs(ref, query));
  }
  deadLetters(ref, rule) {
    return this.#call(ref, (raw) => raw.deadLetters(ref, rule));
  }
  progress(ref) {
    return this.#call(ref, (raw) => raw.progress(ref));
  }
  schedules(ref) {
    return this.#call(ref, (raw) => raw.schedules(ref));
  }
  storedRules(ref) {
    return this.#call(ref, (raw) => raw.storedRules(ref));
  }
  workspaces() {
    return this.#call(undefined, (raw) => raw.workspaces());
  }
  workspaceInfo(ref) {
    return this.#call(ref, (raw) => raw.workspaceInfo(ref));
  }
  dueRuns(now, limit, policy) {
    return this.#call(undefined, (raw) => raw.dueRuns(now, limit, policy));
  }
  acquireLease(ref, key, holder, ttlMs) {
    return this.#call(ref, (raw) => raw.acquireLease(ref, key, holder, ttlMs));
  }
  releaseLease(ref, key, holder) {
    return this.#call(ref, (raw) => {
      raw.releaseLease(ref, key, holder);
    });
  }
  leases(ref) {
    return this.#call(ref, (raw) => raw.leases(ref));
  }
  cursor(ref, name) {
    return this.#call(ref, (raw) => raw.cursor(ref, name));
  }
  saveCursor(ref, name, seq) {
    return this.#call(ref, (raw) => {
      raw.saveCursor(ref, name, seq);
    });
  }
  cursors(ref) {
    return this.#call(ref, (raw) => raw.cursors(ref));
  }
}
