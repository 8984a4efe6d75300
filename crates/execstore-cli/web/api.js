// The monitor's API client: every request the UI makes goes through here.
//
// The transport is a `fetch`-shaped function, so the same UI can talk to the native server
// (the browser's fetch), to an edge `fetch(request)` handler, or to a store running in a
// worker (a function that answers Requests without a network).

/** A failed API call: the HTTP status and the server's `{error: {code, message}}`. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const TOKEN_KEY = "execstore.monitor.token";

/** The write token kept for this tab (never in the URL, never sent to other sites). */
export const token = {
  get() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch {
      return "";
    }
  },
  set(value) {
    try {
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // Storage refused (private mode): writes will ask again.
    }
  },
};

/**
 * A client over `transport` (default: the page's own server). `base` is the URL the API
 * paths are relative to.
 */
export function createClient({ transport = (req) => fetch(req), base = location.href } = {}) {
  async function call(method, path, params, json) {
    const url = new URL(path, base);
    for (const [name, value] of Object.entries(params || {})) {
      if (value !== undefined && value !== null && value !== "" && value !== false) {
        url.searchParams.set(name, value === true ? "true" : String(value));
      }
    }
    const headers = { Accept: "application/json" };
    // Sent on reads too: `api/info` then says who the token is (its name and role).
    if (token.get()) headers.Authorization = `Bearer ${token.get()}`;
    const init = { method, headers };
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(json);
    }
    let response;
    try {
      response = await transport(new Request(url, init));
    } catch (e) {
      throw new ApiError(0, "UNREACHABLE", `cannot reach the monitor server (${e.message}): is it still running?`);
    }
    let body = null;
    try {
      body = await response.json();
    } catch {
      // Not JSON: reported below.
    }
    if (!response.ok) {
      const error = (body && body.error) || {};
      throw new ApiError(
        response.status,
        error.code || `HTTP_${response.status}`,
        error.message || `the server answered ${response.status} ${response.statusText}`,
      );
    }
    if (body === null) throw new ApiError(response.status, "BAD_RESPONSE", "the server's answer is not JSON");
    return body;
  }
  return {
    get: (path, params) => call("GET", path, params),
    /** A write: `body` is its JSON body, with the `reason` every write needs. */
    post: (path, params, body) => call("POST", path, params, body),
    /** POST with `json` as the body (JSON). */
    postJson: (path, json) => call("POST", path, undefined, json),
    /** POST with query `params` and `json` as the body. */
    postQueryJson: (path, params, json) => call("POST", path, params, json),
    put: (path, json) => call("PUT", path, undefined, json),
    del: (path, params, body) => call("DELETE", path, params, body),
  };
}
