// The workspace log (reflexr 0.1.1's Storage) in the package: `WorkspaceStore`, over the
// synchronous `RawWorkspaceStore` of the wasm module (crates/execstore-wasm/src/workspace.rs).
// What this file adds: `transaction(ref, async (tx) => ...)`, which queues a workspace's
// transactions (wasm has no threads: the store itself cannot wait), commits when the
// callback resolves and rolls back when it throws; and `subscribe(ref, { afterSeq })`, an
// async iterator that replays the log and then wakes on every commit through this store.
// Errors are the store's: `Error`s named `StoreError` with a stable `code`.
import { RawWorkspaceStore } from "./wasm/execstore.js";

/** An `INVALID_INPUT` error made here, shaped as the store's own. */
function invalid(field, reason) {
  const error = new Error(`invalid input: ${field}: ${reason}`);
  error.name = "StoreError";
  error.code = "INVALID_INPUT";
  error.field = field;
  error.reason = reason;
  return error;
}

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

/** How many envelopes a subscription reads at a time. */
const PAGE = 1000;

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
 * stored rules. Make one with `WorkspaceStore.memory()`.
 */
export class WorkspaceStore {
  #raw;
  // Per workspace key: the promise the next transaction waits for.
  #queues = new Map();
  // Per workspace key: the wake-up functions of waiting subscriptions.
  #waiters = new Map();

  /** @internal */
  constructor(raw) {
    this.#raw = raw;
  }

  /** Workspaces in memory (the core's MemoryWorkspaceStorage), timed by `Date.now()`. */
  static memory() {
    return new WorkspaceStore(RawWorkspaceStore.memory());
  }

  /** `"memory"` or `"closed"`. */
  get kind() {
    return this.#raw.kind;
  }

  /** Closes the store: every later call throws, waiting subscriptions end. */
  close() {
    this.#raw.close();
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
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
    const before = this.#queues.get(key) ?? Promise.resolve();
    let release;
    const mine = new Promise((resolve) => {
      release = resolve;
    });
    const tail = before.then(() => mine);
    this.#queues.set(key, tail);
    try {
      await before;
      const raw = this.#raw.begin(ref);
      const tx = new WorkspaceTx(raw);
      try {
        const result = await fn(tx);
        const appended = raw.headSeq() > this.#raw.headSeq(ref);
        raw.commit();
        if (appended) this.#wake(key);
        return result;
      } finally {
        RAW.delete(tx);
        raw.rollback(); // a no-op after the commit
        raw.free();
      }
    } finally {
      release();
      if (this.#queues.get(key) === tail) this.#queues.delete(key);
    }
  }

  #wake(key) {
    const waiters = this.#waiters.get(key);
    if (!waiters) return;
    this.#waiters.delete(key);
    for (const wake of waiters) wake();
  }

  #wait(key) {
    return new Promise((resolve) => {
      let waiters = this.#waiters.get(key);
      if (!waiters) this.#waiters.set(key, (waiters = new Set()));
      waiters.add(resolve);
    });
  }

  /**
   * The log of `ref` after `afterSeq` (default 0), then every envelope committed later, in
   * order, never missing or repeating one: `for await (const envelope of store.subscribe(ref))`.
   * It waits for commits through this store; `break`, `signal`'s abort or `close()` end it.
   */
  subscribe(ref, options) {
    const { afterSeq = 0, signal } = options ?? {};
    this.#raw.headSeq(ref); // checks `ref` now, not at the first `next()`
    if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) {
      throw invalid("options.afterSeq", `must be an integer of 0 or more, not ${afterSeq}`);
    }
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw invalid("options.signal", "must be an AbortSignal");
    }
    const key = keyOf(ref);
    const store = this;
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
          if (store.kind === "closed") return { done: true, value: undefined };
          const page = store.#raw.read(ref, { after_seq: seq, limit: PAGE });
          if (page.length > 0) {
            buffer.push(...page);
            continue;
          }
          const woken = store.#wait(key);
          await new Promise((resolve) => {
            wakeSelf = resolve;
            woken.then(resolve);
          });
          wakeSelf = null;
        }
      },
      async return() {
        finish();
        signal?.removeEventListener("abort", finish);
        return { done: true, value: undefined };
      },
    };
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
