// A page's main-thread handle on an OPFS store: the store lives in a dedicated worker
// (worker.js, started here) and every method returns a Promise. Errors are `Error`s with the
// same `code` and fields as in the worker (`CONFLICT`, `INVALID_INPUT`, `LOCKED`, ...).
//
//   import { openOpfs } from "execstore/client";
//   const store = await openOpfs("orders");
//   const exe = { id: "order-1", definition_id: "orders", version: 0 };
//   await store.commit(exe, { emits: [...] });   // exe.version is now 1
//   await store.close();

function toError(plain) {
  const error = new Error(plain.message);
  Object.assign(error, plain);
  return error;
}

function closedError(message) {
  return Object.assign(new Error(message), { name: "StoreError", code: "BACKEND", retryable: false });
}

/**
 * Opens (creating if needed) the OPFS store `name` in a new dedicated worker. Options as
 * `Store.openOpfs` (`waitMs`, `traceMax`, `prefix`, `synchronous`, `readOnly`); rejects with
 * `LOCKED` if another tab or worker holds the store past `waitMs`.
 */
export async function openOpfs(name, options) {
  const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module", name: `execstore:${name}` });
  const client = new OpfsStoreClient(worker);
  try {
    await client._request({ op: "open", name, options });
  } catch (error) {
    client.terminate();
    throw error;
  }
  return client;
}

/** An OPFS store hosted by a dedicated worker; made by `openOpfs`. */
export class OpfsStoreClient {
  #worker;
  #next = 1;
  #pending = new Map();
  #failure = null;

  constructor(worker) {
    this.#worker = worker;
    worker.onmessage = (event) => {
      const reply = event.data;
      const pending = this.#pending.get(reply.id);
      if (pending === undefined) return;
      this.#pending.delete(reply.id);
      if (reply.ok) pending.resolve(reply);
      else pending.reject(toError(reply.error));
    };
    // A worker that fails to load or dies: every call in flight, and every later one, fails.
    worker.onerror = (event) => {
      event.preventDefault?.();
      this.#fail(closedError(`the store's worker failed: ${event.message ?? "unknown error"}`));
    };
  }

  #fail(error) {
    this.#failure ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  /** @internal */
  _request(message) {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.postMessage({ ...message, id });
      } catch (error) {
        // Not structured-cloneable (a function, a symbol...): the store never saw it.
        this.#pending.delete(id);
        reject(Object.assign(new Error(`cannot send the arguments: ${error.message}`), {
          name: "StoreError", code: "INVALID_INPUT", field: "arguments", reason: String(error.message),
        }));
      }
    });
  }

  async #call(method, args) {
    return (await this._request({ op: "call", method, args })).result;
  }

  get kind() {
    return "opfs";
  }

  capabilities() { return this.#call("capabilities", []); }
  traceMax() { return this.#call("traceMax", []); }

  async save(execution) {
    const reply = await this._request({ op: "call", method: "save", args: [execution] });
    execution.version = reply.version;
    return reply.result;
  }

  async commit(execution, effects) {
    const reply = await this._request({ op: "call", method: "commit", args: [execution, effects] });
    execution.version = reply.version;
    return reply.result;
  }

  async commitBatch(items) {
    const outcomes = await this.#call("commitBatch", [items]);
    return outcomes.map((outcome, i) => {
      if (outcome.ok) {
        items[i].execution.version = outcome.version;
        return outcome;
      }
      return { ok: false, error: toError(outcome.error) };
    });
  }

  load(id) { return this.#call("load", [id]); }
  loadForEvent(id, eventId) { return this.#call("loadForEvent", [id, eventId]); }
  isProcessed(executionId, eventId) { return this.#call("isProcessed", [executionId, eventId]); }
  listExecutions(query) { return this.#call("listExecutions", [query]); }
  pendingOutbox(after, limit) { return this.#call("pendingOutbox", [after, limit]); }
  ackOutbox(seq) { return this.#call("ackOutbox", [seq]); }
  ackOutboxMany(seqs) { return this.#call("ackOutboxMany", [seqs]); }
  pendingSpawns(after, limit) { return this.#call("pendingSpawns", [after, limit]); }
  ackSpawn(seq) { return this.#call("ackSpawn", [seq]); }
  dueTimers(now, after, limit) { return this.#call("dueTimers", [now, after, limit]); }
  deleteTimer(executionId, path, fireAt) { return this.#call("deleteTimer", [executionId, path, fireAt]); }
  readTrace(executionId) { return this.#call("readTrace", [executionId]); }
  appendTrace(executionId, step) { return this.#call("appendTrace", [executionId, step]); }
  idsWithPrefix(prefix) { return this.#call("idsWithPrefix", [prefix]); }
  purge(executionId, expectedVersion) { return this.#call("purge", [executionId, expectedVersion]); }
  statusCounts(definitionId, rootsOnly) { return this.#call("statusCounts", [definitionId, rootsOnly]); }
  changeToken() { return this.#call("changeToken", []); }

  /** Closes the store (releasing its OPFS files and lock) and ends the worker. */
  async close() {
    if (this.#failure === null) {
      try {
        await this._request({ op: "close" });
      } finally {
        this.terminate();
      }
    }
  }

  /** Ends the worker at once, as a crash would: the browser releases the store's lock. */
  terminate() {
    this.#worker.terminate();
    this.#fail(closedError("the store is closed"));
  }
}
