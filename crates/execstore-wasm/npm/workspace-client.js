// A page's main-thread handle on an OPFS workspace store: the `OpfsWorkspaceStore` lives in a
// dedicated worker (workspace-worker.js, started here), every method returns a Promise, a
// transaction is a handle whose operations go to the worker, and a subscription's envelopes
// come back as messages. Errors are `Error`s with the worker's `code` and fields.
//
//   import { openWorkspaceOpfs } from "execstore/workspace-client";
//   const store = await openWorkspaceOpfs("oncall");
//   const ws = { tenant_id: "acme", workspace_id: "prod" };
//   await store.transaction(ws, (tx) => tx.append([{ id: "deploy-9", event: { type: "oncall:deploy" } }]));
//   const tx = await store.begin(ws);      // or by hand: commit() or rollback()
//   await tx.append([...]); await tx.commit();
//   for await (const e of store.subscribe(ws, { afterSeq: 0 })) { ... }
//   await store.close();

import { WorkerLink, closedError, invalid, opened, toError } from "./rpc.js";

/**
 * Opens (creating if needed) the OPFS workspace store `name` in a new dedicated worker.
 * Options as `WorkspaceStore.openOpfs` (`waitMs`, `synchronous`, `readOnly`); rejects with
 * `LOCKED` if another tab or worker holds the store past `waitMs`.
 */
export async function openWorkspaceOpfs(name, options) {
  const worker = new Worker(new URL("./workspace-worker.js", import.meta.url), {
    type: "module", name: `execstore:workspace:${name}`,
  });
  return opened(new OpfsWorkspaceClient(worker, name), { op: "open", name, options });
}

/**
 * A subscription's flow-control window: the worker posts at most this many envelopes the page
 * has not taken yet (by `next()` or the callback), so a slow reader's buffer stays bounded;
 * the page returns credit every half window.
 */
export const SUBSCRIPTION_WINDOW = 256;

/** Rolls back a transaction the page dropped (garbage collected) without ending it. */
const dropped = typeof FinalizationRegistry === "undefined"
  ? null
  : new FinalizationRegistry(({ client, tx }) => client._request({ op: "rollback", tx }).catch(() => {}));

/** An OPFS workspace store hosted by a dedicated worker; made by `openWorkspaceOpfs`. */
export class OpfsWorkspaceClient {
  #link;
  #name;
  #closed = false;
  #nextTx = 1;
  #nextSub = 1;
  /** Running subscriptions by id: their `WorkspaceSubscriptionClient`s. */
  #subs = new Map();

  constructor(worker, name) {
    this.#name = name;
    this.#link = new WorkerLink(worker, {
      onEvent: (message) => this.#subs.get(message.sub)?._deliver(message),
      onFail: (error) => {
        for (const sub of [...this.#subs.values()]) sub._deliver(this.#closed ? { end: true } : { error });
      },
    });
  }

  /** @internal */
  _request(message) {
    return this.#link.request(message);
  }

  /** @internal */
  _forget(sub) {
    this.#subs.delete(sub);
  }

  async #call(method, args) {
    return (await this._request({ op: "call", method, args })).result;
  }

  /** `"opfs"`, or `"closed"` once `close()` or `terminate()` was called or the worker failed. */
  get kind() {
    return this.#closed || this.#link.failed ? "closed" : "opfs";
  }

  /** The store's name. */
  get name() {
    return this.#name;
  }

  /**
   * Begins a transaction on `ref` (after the calls made before it, and the workspace's other
   * transactions): resolves with its handle once the worker holds it. Until its `commit()` or
   * `rollback()`, the store's other calls wait for it; `close()` and `terminate()` roll it back.
   */
  async begin(ref) {
    const id = this.#nextTx++;
    await this._request({ op: "begin", tx: id, ref });
    const tx = new WorkspaceTxClient(this, id);
    dropped?.register(tx, { client: this, tx: id }, tx);
    return tx;
  }

  /**
   * Runs `fn(tx)` in a transaction on `ref`: commits when it resolves (resolving with what it
   * resolved to), rolls back when it throws or rejects (rejecting with that). `tx`'s methods
   * return Promises; await them before `fn` resolves.
   */
  async transaction(ref, fn) {
    if (typeof fn !== "function") throw invalid("fn", "must be a function");
    const tx = await this.begin(ref);
    let result;
    try {
      result = await fn(tx);
    } catch (error) {
      await tx.rollback().catch(() => {});
      throw error;
    }
    await tx.commit();
    return result;
  }

  /**
   * The log of `ref` after `options.afterSeq` (default 0), then every envelope committed later
   * (in any tab), in order: to `onEnvelope(envelope)` if given, else by `for await`. Ends at
   * `cancel()`, `break`, `options.signal`'s abort, `close()` or `terminate()`.
   */
  subscribe(ref, options, onEnvelope) {
    const { signal, ...rest } = options ?? {};
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw invalid("options.signal", "must be an AbortSignal");
    }
    if (onEnvelope !== undefined && typeof onEnvelope !== "function") {
      throw invalid("onEnvelope", "must be a function");
    }
    const id = this.#nextSub++;
    const sub = new WorkspaceSubscriptionClient(this, id, onEnvelope);
    this.#subs.set(id, sub);
    sub._started(this._request({ op: "subscribe", sub: id, ref, options: rest, window: SUBSCRIPTION_WINDOW }));
    if (signal !== undefined) {
      if (signal.aborted) sub.cancel();
      else signal.addEventListener("abort", () => sub.cancel(), { once: true });
    }
    return sub;
  }

  capabilities() { return this.#call("capabilities", []); }
  headSeq(ref) { return this.#call("headSeq", [ref]); }
  read(ref, query) { return this.#call("read", [ref, query]); }
  ruleHistory(ref, name) { return this.#call("ruleHistory", [ref, name]); }
  envelope(ref, eventId) { return this.#call("envelope", [ref, eventId]); }
  run(ref, runId) { return this.#call("run", [ref, runId]); }
  runs(ref, query) { return this.#call("runs", [ref, query]); }
  searchLog(ref, query) { return this.#call("searchLog", [ref, query]); }
  searchRuns(ref, query) { return this.#call("searchRuns", [ref, query]); }
  deadLetters(ref, rule) { return this.#call("deadLetters", [ref, rule]); }
  progress(ref) { return this.#call("progress", [ref]); }
  schedules(ref) { return this.#call("schedules", [ref]); }
  storedRules(ref) { return this.#call("storedRules", [ref]); }
  workspaces() { return this.#call("workspaces", []); }
  workspaceInfo(ref) { return this.#call("workspaceInfo", [ref]); }
  dueRuns(now, limit, policy) { return this.#call("dueRuns", [now, limit, policy]); }
  acquireLease(ref, key, holder, ttlMs) { return this.#call("acquireLease", [ref, key, holder, ttlMs]); }
  releaseLease(ref, key, holder) { return this.#call("releaseLease", [ref, key, holder]); }
  leases(ref) { return this.#call("leases", [ref]); }
  cursor(ref, name) { return this.#call("cursor", [ref, name]); }
  saveCursor(ref, name, seq) { return this.#call("saveCursor", [ref, name, seq]); }
  cursors(ref) { return this.#call("cursors", [ref]); }

  /**
   * Rolls back the open transactions, closes the store once the calls made before have run
   * (the database closes, the lease is let go), ends the subscriptions and the worker.
   */
  async close() {
    if (this.#link.failed) return;
    try {
      await this._request({ op: "close" });
    } finally {
      this.terminate();
    }
  }

  /**
   * Ends the worker at once, as a crash would: an open transaction is lost (never committed),
   * the browser releases the store's lease, subscriptions end, later calls reject (`BACKEND`).
   */
  terminate() {
    this.#closed = true;
    this.#link.terminate();
  }
}

/**
 * A transaction begun by `OpfsWorkspaceClient.begin`: `WorkspaceTx`'s methods, each returning
 * a Promise, run in the worker in the order called; then `commit()` or `rollback()`.
 */
export class WorkspaceTxClient {
  #client;
  #id;
  #ended = false;

  /** @internal */
  constructor(client, id) {
    this.#client = client;
    this.#id = id;
  }

  async #call(method, args) {
    return (await this.#client._request({ op: "tx", tx: this.#id, method, args })).result;
  }

  async #end(op) {
    if (this.#ended) throw closedError("the transaction has ended");
    this.#ended = true;
    dropped?.unregister(this);
    await this.#client._request({ op, tx: this.#id });
  }

  /** Whether `commit()` or `rollback()` was called. */
  get ended() {
    return this.#ended;
  }

  /** Commits: what the transaction wrote becomes visible (and wakes subscriptions). */
  commit() { return this.#end("commit"); }
  /** Rolls back: nothing the transaction wrote stays, no seq is taken. */
  rollback() { return this.#end("rollback"); }

  append(entries) { return this.#call("append", [entries]); }
  envelope(eventId) { return this.#call("envelope", [eventId]); }
  headSeq() { return this.#call("headSeq", []); }
  read(afterSeq, limit) { return this.#call("read", [afterSeq, limit]); }
  progress(rule) { return this.#call("progress", [rule]); }
  saveProgress(rule, progress) { return this.#call("saveProgress", [rule, progress]); }
  states(rule, keys) { return this.#call("states", [rule, keys]); }
  saveStates(rule, states) { return this.#call("saveStates", [rule, states]); }
  clearStates(rule) { return this.#call("clearStates", [rule]); }
  run(runId) { return this.#call("run", [runId]); }
  saveRuns(runs) { return this.#call("saveRuns", [runs]); }
  scopeRuns(rule, scopeKey) { return this.#call("scopeRuns", [rule, scopeKey]); }
  deadLetter(errors) { return this.#call("deadLetter", [errors]); }
  schedule(name) { return this.#call("schedule", [name]); }
  saveSchedule(name, at) { return this.#call("saveSchedule", [name, at]); }
  storedRule(name) { return this.#call("storedRule", [name]); }
  storedRules() { return this.#call("storedRules", []); }
  saveStoredRule(stored) { return this.#call("saveStoredRule", [stored]); }
}

/**
 * A subscription through the worker: an async iterator of envelopes (unless a callback gets
 * them), with `cancel()`; `done` settles when it ends (rejecting if it failed, e.g. a bad ref).
 */
export class WorkspaceSubscriptionClient {
  #client;
  #id;
  #onEnvelope;
  #buffer = [];
  #waiting = null;
  #ended = false;
  #error = null;
  #settle;
  /** Envelopes taken since credit was last returned to the worker. */
  #taken = 0;
  /** Settles when the subscription ends: resolves, or rejects with its error. */
  done;

  /** @internal */
  constructor(client, id, onEnvelope) {
    this.#client = client;
    this.#id = id;
    this.#onEnvelope = onEnvelope;
    this.done = new Promise((resolve, reject) => {
      this.#settle = { resolve, reject };
    });
    // Unobserved, a failure shows through next() or the callback's owner reading `done`.
    this.done.catch(() => {});
  }

  /** @internal The worker's answer to the subscribe request. */
  _started(request) {
    request.catch((error) => this._deliver({ error }));
  }

  /** @internal A message from the worker (or the link's end). */
  _deliver(message) {
    if (this.#ended) return;
    if (message.envelope !== undefined) {
      if (this.#onEnvelope !== undefined) {
        try {
          this.#onEnvelope(message.envelope);
        } catch (error) {
          globalThis.reportError?.(error);
        }
        this.#took();
      } else this.#buffer.push(message.envelope);
    } else {
      this.#ended = true;
      this.#client._forget(this.#id);
      if (message.error !== undefined) {
        this.#error = message.error instanceof Error ? message.error : toError(message.error);
        this.#settle.reject(this.#error);
      } else this.#settle.resolve();
    }
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.();
  }

  /** Counts an envelope taken; every half window, returns that much credit to the worker. */
  #took() {
    this.#taken += 1;
    if (this.#taken >= SUBSCRIPTION_WINDOW / 2 && !this.#ended) {
      const n = this.#taken;
      this.#taken = 0;
      this.#client._request({ op: "credit", sub: this.#id, n }).catch(() => {});
    }
  }

  /**
   * How many envelopes have arrived that `next()` has not returned yet: at most
   * `SUBSCRIPTION_WINDOW`, however far the reader falls behind (the worker waits for it).
   */
  get buffered() {
    return this.#buffer.length;
  }

  /** Ends the subscription (the worker stops it); resolves once it has ended. */
  async cancel() {
    if (!this.#ended) {
      await this.#client._request({ op: "unsubscribe", sub: this.#id }).catch(() => {});
      this._deliver({ end: true });
    }
    await this.done.catch(() => {});
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  async next() {
    for (;;) {
      if (this.#buffer.length > 0) {
        const value = this.#buffer.shift();
        this.#took();
        return { done: false, value };
      }
      if (this.#ended) {
        if (this.#error !== null) {
          const error = this.#error;
          this.#error = null; // thrown once, then done
          throw error;
        }
        return { done: true, value: undefined };
      }
      await new Promise((resolve) => {
        this.#waiting = resolve;
      });
    }
  }

  async return() {
    this.#buffer.length = 0;
    await this.cancel();
    return { done: true, value: undefined };
  }
}
