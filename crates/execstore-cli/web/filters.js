// The execution list's time window and state/id search: their place in the URL, the API
// parameters they become, and their controls.
//
// The URL holds `time` (created | updated | finished), `from` and `until` (RFC 3339 UTC
// date-times, as the API accepts them) and `find` (the search text). The window is
// [from, until): `from` inclusive, `until` exclusive, either end open. Or, instead of
// `from`/`until`, `window` names a preset (15m, 1h, 1d, 7d): the last so long before now,
// over `time` (updated unless chosen), recomputed at each read so it slides with the clock.
// `order=id` lists by id, `order=created` newest created first, instead of most recently
// updated first. Stored data never reaches these controls; values are set as properties,
// never parsed as HTML.

import { h } from "./dom.js";
import { now } from "./format.js";

/** The window presets: their URL value, their label and their length in seconds. */
export const PRESETS = [
  ["15m", "last 15 minutes", 15 * 60],
  ["1h", "last hour", 3600],
  ["1d", "last day", 86400],
  ["7d", "last week", 7 * 86400],
];
const PRESET_SECONDS = new Map(PRESETS.map(([value, , seconds]) => [value, seconds]));

/** The list's orders besides the default (most recently updated first), as in the URL. */
export const ORDERS = ["created", "id"];

/** The times an execution has that the list can filter by. */
export const TIME_FIELDS = ["created", "updated", "finished"];

/** The route keys this module owns (a change to any of them starts the list over). */
export const FILTER_KEYS = ["time", "from", "until", "find", "window", "order", "where"];

/** The route with none of these filters (the order is not one: it stays). */
export const CLEARED = { time: "", from: "", until: "", find: "", window: "", where: "" };

/** This module's part of a route, from the page's query string. */
export function parseFilters(p) {
  const time = p.get("time") || "";
  const window = p.get("window") || "";
  return {
    time: TIME_FIELDS.includes(time) ? time : "",
    from: isoOrEmpty(p.get("from")),
    until: isoOrEmpty(p.get("until")),
    find: p.get("find") || "",
    window: PRESET_SECONDS.has(window) ? window : "",
    order: ORDERS.includes(p.get("order")) ? p.get("order") : "",
    where: p.get("where") || "",
  };
}

/** Writes this module's part of route `r` into the URLSearchParams `p`. */
export function writeFilters(r, p) {
  if (r.time) p.set("time", r.time);
  if (r.window) p.set("window", r.window);
  else {
    if (r.time && r.from) p.set("from", r.from);
    if (r.time && r.until) p.set("until", r.until);
  }
  if (r.find) p.set("find", r.find);
  if (r.order) p.set("order", r.order);
  if (r.where) p.set("where", r.where);
}

/** Whether route `r` filters by a window or a search. */
export function hasFilters(r) {
  return Boolean(r.window || (r.time && (r.from || r.until)) || r.find || r.where);
}

/** This module's part of route `r` (to carry it over to another view's links). */
export function pickFilters(r) {
  return { time: r.time, from: r.from, until: r.until, find: r.find, window: r.window, order: r.order, where: r.where };
}

/**
 * The `/api/executions` parameters of route `r` (its counts take the same): a preset window
 * is the last so long before the server's now, over `time` (updated unless chosen).
 */
export function apiParams(r) {
  const params = { search: r.find, order: r.order, where: r.where };
  if (r.window) {
    const since = now() - PRESET_SECONDS.get(r.window);
    params[`${r.time || "updated"}_after`] = new Date(since * 1000).toISOString();
  } else if (r.time) {
    params[`${r.time}_after`] = r.from;
    params[`${r.time}_before`] = r.until;
  }
  return params;
}

/** A text that `Date` reads as an instant, as ISO UTC; anything else, "". */
function isoOrEmpty(text) {
  if (!text) return "";
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

/** An ISO instant as a `datetime-local` value (the browser's zone, to the second). */
function toLocalInput(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
}

/** A `datetime-local` value (the browser's zone) as an ISO UTC instant; "" if empty. */
function fromLocalInput(value) {
  return value ? isoOrEmpty(value) : "";
}

let controls = null;
/** The search text typed but not yet applied (debounced), or null. */
let pendingFind = null;

/**
 * The controls (built once): a search box and a window over one of the times. `navigate`
 * is the page's `navigate(changes, options)`.
 */
export function filterControls(navigate) {
  if (controls) return controls.root;
  const find = h("input", {
    type: "search", id: "find", placeholder: "order.checkout or id prefix", autocomplete: "off", spellcheck: "false",
    "aria-label": "Executions in this state (or below it), or whose id starts with this",
    title: "Executions in this state or below it (order.checkout finds order.checkout.pay), or whose id starts with this",
  });
  const time = h("select", { id: "time-field", "aria-label": "Filter by time" },
    h("option", { value: "" }, "any time"),
    TIME_FIELDS.map((f) => h("option", { value: f }, f)));
  const windowSelect = h("select", { id: "time-window", "aria-label": "Time window" },
    h("option", { value: "" }, "any window"),
    PRESETS.map(([value, label]) => h("option", { value }, label)),
    h("option", { value: "custom" }, "custom…"));
  const order = h("select", { id: "order", "aria-label": "Order" },
    h("option", { value: "" }, "recently updated first"),
    h("option", { value: "created" }, "newest created first"),
    h("option", { value: "id" }, "by id"));
  const from = h("input", { type: "datetime-local", step: "1", id: "time-from", "aria-label": "From (inclusive)" });
  const until = h("input", { type: "datetime-local", step: "1", id: "time-until", "aria-label": "Until (exclusive)" });
  let debounce;
  find.addEventListener("input", () => {
    clearTimeout(debounce);
    pendingFind = find.value.trim();
    debounce = setTimeout(() => {
      const value = pendingFind;
      pendingFind = null;
      navigate({ find: value }, { replace: true });
    }, 300);
  });
  const applyWindow = () => navigate({ time: time.value, window: "", from: fromLocalInput(from.value), until: fromLocalInput(until.value) });
  // The field moves a preset window over to it; "any time" drops the window.
  time.addEventListener("change", () => (windowSelect.value !== "" && windowSelect.value !== "custom" && time.value
    ? navigate({ time: time.value })
    : applyWindow()));
  from.addEventListener("change", applyWindow);
  until.addEventListener("change", applyWindow);
  windowSelect.addEventListener("change", () => {
    const value = windowSelect.value;
    const field = time.value || "updated";
    if (!value) navigate({ time: "", window: "", from: "", until: "" });
    else if (value === "custom") navigate({ time: field, window: "" });
    else navigate({ time: field, window: value, from: "", until: "" });
  });
  order.addEventListener("change", () => navigate({ order: order.value }));
  const root = h(
    "div",
    { class: "filters time-filters" },
    h("label", { class: "field grow" }, h("span", null, "In state or id"), find),
    h("label", { class: "field" }, h("span", null, "Window"), windowSelect),
    h("label", { class: "field" }, h("span", null, "Time"), time),
    h("label", { class: "field" }, h("span", null, "From"), from),
    h("label", { class: "field" }, h("span", null, "Until"), until),
    h("label", { class: "field" }, h("span", null, "Order"), order),
  );
  controls = { root, find, time, from, until, windowSelect, order };
  return root;
}

/** Shows route `r` in the controls (leaving alone the one being typed in). */
export function syncFilterControls(r) {
  if (!controls) return;
  const c = controls;
  // Another control may move the route while a search is still being debounced: the
  // text typed stays until it is applied.
  if (document.activeElement !== c.find && pendingFind === null) c.find.value = r.find;
  c.time.value = r.time;
  c.windowSelect.value = r.window || (r.time ? "custom" : "");
  c.order.value = r.order;
  c.from.disabled = c.until.disabled = !r.time || Boolean(r.window);
  if (document.activeElement !== c.from) c.from.value = toLocalInput(r.from);
  if (document.activeElement !== c.until) c.until.value = toLocalInput(r.until);
}
