// The dedicated module worker behind client.js: it owns one OPFS store and runs the calls
// the page sends, in order. Messages in: {id, op: "open", name, options} | {id, op: "call",
// method, args} | {id, op: "close"}. Messages out: {id, ok: true, result, version?} |
// {id, ok: false, error} with the error as a plain object (structured clone would drop an
// Error's `code` and fields).

import { misuse, openOnce, plain, serve } from "./rpc.js";

// Loaded dynamically so that `onmessage` is in place before the module's top-level await
// (the wasm download): a message that arrives earlier would otherwise be dropped.
const loading = import("./index.js");

/** The store methods a page may call (the callback-taking relay methods cannot cross). */
const METHODS = new Set([
  "capabilities", "traceMax", "save", "commit", "commitBatch", "load", "loadForEvent",
  "isProcessed", "listExecutions", "attributes", "declareAttribute", "dropAttribute", "putDefinition", "getDefinition", "send", "pendingOutbox", "ackOutbox", "ackOutboxMany",
  "pendingSpawns", "ackSpawn", "dueTimers", "deleteTimer", "readTrace", "appendTrace",
  "idsWithPrefix", "purge", "statusCounts", "changeToken",
]);

let store = null;

async function run(message) {
  switch (message.op) {
    case "open":
      store = await openOnce(store, (await loading).Store, message);
      return { result: null };
    case "close":
      store?.close();
      store = null;
      return { result: null };
    case "call": {
      if (store === null) throw misuse("the store is closed");
      if (!METHODS.has(message.method)) throw misuse(`${message.method} is not a store method`);
      const args = message.args;
      let result = store[message.method](...args);
      if (message.method === "commitBatch") {
        result = result.map((o) => (o.ok ? o : { ok: false, error: plain(o.error) }));
      }
      // save and commit set the new version on the (worker's copy of the) execution.
      const version = message.method === "save" || message.method === "commit" ? args[0].version : undefined;
      return { result, version };
    }
    default:
      throw misuse(`unknown op ${message.op}`);
  }
}

// One message at a time, in order (an open awaits OPFS; nothing may overtake it).
serve(run, { ordered: true });
