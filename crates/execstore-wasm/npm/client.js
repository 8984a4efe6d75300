// A page's main-thread handle on an OPFS store: the store lives in a dedicated worker
// (worker.js, started here) and every method returns a Promise. Errors are `Error`s with the
// same `code` and fields as in the worker (`CONFLICT`, `INVALID_INPUT`, `LOCKED`, ...).
//
//   import { openOpfs } from "execstore/client";
//   const store = await openOpfs("orders");
//   const exe = { id: "order-1", definition_id: "orders", version: 0 };
//   await store.commit(exe, { emits: [...] });   // exe.version is now 1
//   await store.close();

import { WorkerLink, opened, toError } from "./rpc.js";

/**
 * Opens (creating if needed) the OPFS store `name` in a new dedicated worker. Options as
 * `Store.openOpfs` (`waitMs`, `traceMax`, `prefix`, `synchronous`, `readOnly`); rejects with
 * `LOCKED` if another tab or worker holds the store past `waitMs`.
 */
export async function openOpfs(name, options) {
  const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module", name: `execstore:${name}` });
  return opened(new OpfsStoreClient(worker), { op: "open", name, options });
}

/** An OPFS store hosted by a dedicated worker; made by `openOpfs`. */
export class OpfsStoreClient {
  #link;

  constructor(worker) {
    this.#link = new WorkerLink(worker);
  }

  /** @internal */
  _request(message) {
    return this.#link.request(message);
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
  attributes() { return this.#call("attributes", []); }
  declareAttribute(path) { return this.#call("declareAttribute", [path]); }
  dropAttribute(path) { return this.#call("dropAttribute", [path]); }
  putDefinition(definitionId, definitionFqn, document, firstSeen) { return this.#call("putDefinition", [definitionId, definitionFqn, document, firstSeen]); }
  getDefinition(definitionId, definitionFqn) { return this.#call("getDefinition", [definitionId, definitionFqn]); }
  pendingOutbox(after, limit) { return this.#call("pendingOutbox", [after, limit]); }
  send(executionId, event, expectedVersion) { return this.#call("send", [executionId, event, expectedVersion]); }
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
    if (!this.#link.failed) {
      try {
        await this._request({ op: "close" });
      } finally {
        this.terminate();
      }
    }
  }

  /** Ends the worker at once, as a crash would: the browser releases the store's lock. */
  terminate() {
    this.#link.terminate();
  }
}
