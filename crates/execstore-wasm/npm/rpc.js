// The request/reply plumbing shared by the main-thread clients (client.js, workspace-client.js)
// and their dedicated workers (worker.js, workspace-worker.js). A request is a message with
// an `id`; its reply is {id, ok: true, result, ...} or {id, ok: false, error} with the error
// as a plain object (structured clone would drop an Error's `code` and fields). A message
// from the worker without a pending `id` (a subscription's envelope) goes to `onEvent`.

/** A worker's plain error object as an `Error` with the same `code` and fields. */
export function toError(plain) {
  const error = new Error(plain.message);
  Object.assign(error, plain);
  return error;
}

/** An `INVALID_INPUT` error made in JavaScript, shaped as the store's own. */
export function invalid(field, reason) {
  return Object.assign(new Error(`invalid input: ${field}: ${reason}`), {
    name: "StoreError", code: "INVALID_INPUT", field, reason,
  });
}

/** `BACKEND` (not retryable): the store is closed, or its worker failed. */
export function closedError(message) {
  return Object.assign(new Error(message), { name: "StoreError", code: "BACKEND", retryable: false });
}

/** The page's end of a dedicated worker that hosts a store. */
export class WorkerLink {
  #worker;
  #next = 1;
  #pending = new Map();
  #failure = null;
  #onFail;

  /** `onEvent(message)`: a message that answers no request; `onFail(error)`: the link failed. */
  constructor(worker, { onEvent = () => {}, onFail = () => {} } = {}) {
    this.#worker = worker;
    this.#onFail = onFail;
    worker.onmessage = (event) => {
      const reply = event.data;
      const pending = this.#pending.get(reply.id);
      if (pending === undefined) {
        onEvent(reply);
        return;
      }
      this.#pending.delete(reply.id);
      if (reply.ok) pending.resolve(reply);
      else pending.reject(toError(reply.error));
    };
    // A worker that fails to load or dies: every call in flight, and every later one, fails.
    worker.onerror = (event) => {
      event.preventDefault?.();
      this.fail(closedError(`the store's worker failed: ${event.message ?? "unknown error"}`));
    };
  }

  /** Whether the link has failed (closed, terminated, or the worker died). */
  get failed() {
    return this.#failure !== null;
  }

  /** Fails every request in flight, and every later one, with `error` (the first one given). */
  fail(error) {
    const first = this.#failure === null;
    this.#failure ??= error;
    for (const pending of this.#pending.values()) pending.reject(this.#failure);
    this.#pending.clear();
    if (first) this.#onFail(this.#failure);
  }

  /** Sends `message` with a new id; resolves with the reply, rejects with the worker's error. */
  request(message) {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.postMessage({ ...message, id });
      } catch (error) {
        // Not structured-cloneable (a function, a symbol...): the store never saw it.
        this.#pending.delete(id);
        reject(invalid("arguments", `cannot send them: ${error.message}`));
      }
    });
  }

  /** Ends the worker at once, as a crash would: the browser releases the store's lock. */
  terminate(error = closedError("the store is closed")) {
    this.#worker.terminate();
    this.fail(error);
  }
}

/** Sends `open` through `client`'s link; on failure terminates the client and rethrows. */
export async function opened(client, open) {
  try {
    await client._request(open);
  } catch (error) {
    client.terminate();
    throw error;
  }
  return client;
}

// --- the worker's side ---------------------------------------------------------------------

/** `error` as a plain, structured-cloneable object with its `code` and fields. */
export function plain(error) {
  if (error === null || typeof error !== "object") {
    return { name: "Error", message: String(error) };
  }
  const out = { name: error.name ?? "Error", message: String(error.message ?? error) };
  for (const key of Object.keys(error)) out[key] = error[key];
  return out;
}

/** `BACKEND` (not retryable): a message the worker cannot run. */
export function misuse(message) {
  return Object.assign(new Error(message), { name: "StoreError", code: "BACKEND", retryable: false });
}

/** `Class.openOpfs(name, options)` as the page's open `message` asks, unless `held` is a store. */
export function openOnce(held, Class, message) {
  if (held !== null) throw misuse("this worker already holds a store");
  return Class.openOpfs(message.name, message.options ?? undefined);
}

/**
 * Answers the page's requests with `run(message)` (resolving with the reply's fields).
 * `ordered`: one message at a time, in order (nothing overtakes an open that awaits OPFS);
 * otherwise each starts as it arrives (`run` keeps what order it needs).
 */
export function serve(run, { ordered }) {
  const answer = async (message) => {
    try {
      const reply = await run(message);
      self.postMessage({ id: message.id, ok: true, ...reply });
    } catch (error) {
      self.postMessage({ id: message.id, ok: false, error: plain(error) });
    }
  };
  let queue = Promise.resolve();
  self.onmessage = (event) => {
    if (ordered) queue = queue.then(() => answer(event.data));
    else answer(event.data);
  };
}
