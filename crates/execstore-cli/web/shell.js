// The monitor's shell state and the pieces every view shares: the route and navigation, the
// API client, the banner, error and loading boxes, links to an execution and the write
// buttons behind the token. The views (views/*.js) import this; app.js drives it.
//
// Rule of the monitor: stored data only ever reaches the page as text (text nodes via `h()`
// and `textContent`); no HTML string is ever parsed. URLs built here are always relative
// query strings ("?view=..."), never taken from stored data.

import { ApiError, token } from "./api.js";
import { $, clear, h } from "./dom.js";
import { linkTo, parseRoute, routeSearch } from "./route.js";
import * as filters from "./filters.js";
import * as actions from "./actions.js";
import { reasonConfirm } from "./reason.js";

// ---------------------------------------------------------------------------------------------
// State

/** The API client (set by app.js's `start`). */
export let api = null;

export function setApi(client) {
  api = client;
}

/** What app.js does on a route change and on a refresh (set by app.js). */
const hooks = { render: () => {}, refresh: () => {} };

export function setHooks(given) {
  Object.assign(hooks, given);
}

export const state = {
  route: parseRoute(location.search),
  info: null,
  /** Cursors of the pages before this one (executions: list cursors; others: `after`). */
  stack: [],
  list: null,
  counts: null,
  selected: -1,
  versions: new Map(),
  definitions: new Set(),
  changeToken: null,
  lastCheck: 0,
  live: true,
  firstListRender: false,
  firstCountsRender: false,
};

export function navigate(changes, { replace = false } = {}) {
  const before = state.route;
  const next = { ...before, ...changes };
  const filtersMoved = ["view", "status", "definition", "roots", "q", "limit", "due", ...filters.FILTER_KEYS].some(
    (k) => String(before[k]) !== String(next[k]),
  );
  if (filtersMoved) {
    state.stack = [];
    actions.unpickAll(); // picks are of the rows these filters showed
    if (!("cursor" in changes)) next.cursor = "";
    if (!("after" in changes)) next.after = "";
  }
  history[replace ? "replaceState" : "pushState"](null, "", routeSearch(next));
  state.route = next;
  hooks.render(before);
}

/** Reads the current view again, quietly (live refresh, after a write, or `r`). */
export function refresh() {
  hooks.refresh();
}

// ---------------------------------------------------------------------------------------------
// Banner: errors that are not about one panel.

export function describe(error) {
  if (error instanceof ApiError) return `${error.message} (${error.code})`;
  return String(error && error.message ? error.message : error);
}

export function showBanner(message, retry) {
  const banner = $("#banner");
  clear(
    banner,
    h("span", { class: "msg" }, message),
    retry ? h("button", { type: "button", onclick: () => { banner.hidden = true; retry(); } }, "Retry") : null,
    h("button", { type: "button", class: "ghost", onclick: () => { banner.hidden = true; }, "aria-label": "Dismiss" }, "×"),
  );
  banner.hidden = false;
}

export function errorBox(error, retry) {
  return h(
    "div",
    { class: "state error", role: "alert" },
    h("strong", null, error instanceof ApiError && error.status === 404 ? "Not found" : "Could not load this"),
    h("p", null, describe(error)),
    retry ? h("button", { type: "button", onclick: retry }, "Retry") : null,
  );
}

// The newest read of each element that shows "Loading…": only its veil may stand.
const newestRead = new WeakMap();

/** Shows "Loading…" in `el` only if the data takes more than a moment (no flicker); the
 * function returned takes it back. A newer call for the same `el` overtakes this one: this
 * one's veil no longer appears, and its end leaves the newer one's alone. A view calls the
 * function returned at the end of every read, an overtaken one included (its veil, shown
 * while it ran, would otherwise stay over what the newer read rendered). */
export function loadingLater(el, text = "Loading…") {
  const read = {};
  newestRead.set(el, read);
  const timer = setTimeout(() => {
    if (newestRead.get(el) === read && !el.querySelector(".state.loading")) {
      el.prepend(h("div", { class: "state loading", "aria-busy": "true" }, h("span", { class: "spinner" }), text));
    }
  }, 150);
  return () => {
    clearTimeout(timer);
    if (newestRead.get(el) !== read) return;
    const shown = el.querySelector(".state.loading");
    if (shown) shown.remove();
  };
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

export function execLink(id, text = id, extra = {}, cls = "") {
  return h(
    "a",
    {
      href: linkTo({ ...keepListFilters(), history: state.route.history, kind: state.route.kind, id }),
      class: cls ? `exec-link ${cls}` : "exec-link",
      title: id,
      onclick: (e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate({ view: "executions", id, ...extra });
      },
    },
    text,
  );
}

export function keepListFilters() {
  const r = state.route;
  return { status: r.status, definition: r.definition, roots: r.roots, q: r.q, ...filters.pickFilters(r), limit: r.limit, cursor: r.view === "executions" ? r.cursor : "" };
}

/**
 * A write's button: confirmed in place with its reason (reason.js), then `run(reason)`.
 */
export function writeButton(label, run, what) {
  if (!state.info || !state.info.writable) return null;
  const wrap = h("span", { class: "confirm-wrap" });
  const button = h("button", {
    type: "button",
    class: "danger small",
    title: what,
    dataset: { write: label.toLowerCase() },
    onclick: () => {
      if (!token.get()) {
        $("#token-input") && $("#token-input").focus();
        showBanner("Enter the monitor's write token (top right) to do this.");
        return;
      }
      const box = reasonConfirm({
        label,
        question: `${label}?`,
        onNo: () => clear(wrap, button),
        onYes: async (reason) => {
          try {
            await run(reason);
            refresh();
          } catch (e) {
            clear(wrap, button);
            showBanner(describe(e));
          }
        },
      });
      clear(wrap, box);
      box.focusReason();
    },
  }, label);
  return clear(wrap, button);
}

/** What the control actions (actions.js) need from the page. */
export function actionCtx() {
  const r = state.route;
  return {
    api,
    writable: Boolean(state.info && state.info.writable),
    bulkLimit: state.info && state.info.bulk_limit,
    caller: state.info && state.info.caller,
    roles: state.info && state.info.actions,
    hasToken: () => Boolean(token.get()),
    needToken: () => {
      $("#token-input") && $("#token-input").focus();
      showBanner("Enter the monitor's write token (top right) to do this.");
    },
    refresh,
    listParams: () => ({ status: r.status.join(","), definition: r.definition, roots_only: r.roots, q: r.q, ...filters.apiParams(r) }),
  };
}

/** The keys of a view with a pager (`#store-pager`): `n` pages on; the list keys do nothing. */
export function pagerKeys(e) {
  switch (e.key) {
    case "Escape":
      if (state.route.id) navigate({ id: "" });
      return false;
    case "n": case "ArrowRight":
      $("#store-pager #next") && $("#store-pager #next").click();
      return true;
    case "j": case "ArrowDown": case "k": case "ArrowUp": case "Enter": case "o":
    case "p": case "ArrowLeft": case "/":
      return true;
    default:
      return false;
  }
}

/** `show`, `refresh`, `leave` and `onKey` of a view that is one `load({ quiet })` into #main. */
export function loadedView(load) {
  return { show: () => load(), refresh: () => load({ quiet: true }), leave: () => {}, onKey: pagerKeys };
}
