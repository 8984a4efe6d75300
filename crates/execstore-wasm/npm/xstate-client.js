// `execstore/xstate-client`: the page's handle on the durable XState actors that run in a
// dedicated worker over an OPFS store (`execstore/xstate-worker`). Every call is a Promise;
// errors keep their `code` and fields (`XStateStoreError`'s and the store's: `LOCKED`,
// `CONFLICT`...).
//
//   import { connectXState } from "execstore/xstate-client";
//   const orders = await connectXState(new Worker(new URL("./order-worker.js", import.meta.url), { type: "module" }), "orders");
//   await orders.start("order-1", "order");                          // creates or resumes
//   await orders.send("order-1", { type: "PLACE" }, { id: "place-1" }); // one commit
//   await orders.sweep();                                              // due `after`s, at their deadlines
//   await orders.relay((entry) => show(entry.event));                  // emitted events, acked after

import { WorkerLink, opened } from "./rpc.js";

/**
 * Opens the OPFS store `name` in `worker` (a module worker that called `serveXState`) and
 * resolves with its client. `options` as `Store.openOpfs` (`waitMs`...): `LOCKED` if another
 * tab holds the store past `waitMs`.
 */
export async function connectXState(worker, name, options) {
  return opened(new XStateClient(worker, name), { op: "open", name, options });
}

/** The durable actors of one worker; made by `connectXState`. */
export class XStateClient {
  #link;
  #name;

  constructor(worker, name) {
    this.#link = new WorkerLink(worker);
    this.#name = name;
  }

  /** @internal */
  _request(message) {
    return this.#link.request(message);
  }

  async #call(op, fields = {}) {
    return (await this._request({ op, ...fields })).result;
  }

  /** Creates the execution `id` of machine `machineId` (with `options.input`) or resumes it. */
  start(id, machineId, options = {}) {
    return this.#call("start", { execution: id, machine: machineId, input: options.input, create: options.create });
  }

  /** Sends `event` to the execution as one commit; `options.id` is its dedupe key. */
  send(id, event, options = {}) {
    return this.#call("send", { execution: id, event, eventId: options.id });
  }

  /** The execution, its persisted snapshot and its armed delayed events, or null. */
  read(id) {
    return this.#call("read", { execution: id });
  }

  /** The execution's trace steps. */
  trace(id) {
    return this.#call("trace", { execution: id });
  }

  /** Fires every due delayed event (at its deadline); resolves with how many fired. */
  sweep(options = {}) {
    return this.#call("sweep", { now: options.now, limit: options.limit });
  }

  /**
   * Hands each pending emitted event to `deliver` (which may be async), oldest first, and
   * acks it once `deliver` returned; a throw leaves it pending and rejects. Resolves with
   * how many were delivered. At least once: dedupe by `entry.event.id`.
   */
  async relay(deliver, options = {}) {
    let delivered = 0;
    for (;;) {
      const entries = await this.#call("pending", { limit: options.limit ?? 100 });
      if (!entries.length) return delivered;
      for (const entry of entries) {
        await deliver(entry);
        await this.#call("ack", { seqs: [entry.seq] });
        delivered += 1;
      }
    }
  }

  /** Closes the store (the worker stays, with its actors, and may `reopen` it). */
  async close() {
    if (!this.#link.failed) await this._request({ op: "close" });
  }

  /** Opens the store again after `close` (e.g. when another tab handed it back). */
  async reopen(options) {
    await this._request({ op: "open", name: this.#name, options });
  }

  /** Ends the worker at once, as a crash would: the browser releases the store's lock. */
  terminate() {
    this.#link.terminate();
  }
}
