// The monitor's presentation helpers: times relative to the server's clock, short JSON, tables,
// the collapsible JSON tree, empty states and status pills. Stored data reaches the page only as
// text nodes (`h()` from dom.js).

import { absTime, h, pad, span, toSeconds } from "./dom.js";

export function ago(t) {
  const s = toSeconds(t);
  return s === null ? "–" : `${span(now() - s)} ago`;
}

/** Seconds from now until `t`: "in 5m" or "overdue by 5m". */
export function until(t) {
  const d = t - now();
  return d >= 0 ? `in ${span(d)}` : `overdue by ${span(d)}`;
}

// ---------------------------------------------------------------------------------------------
// Time display: every time the UI shows goes through `when` (an element) or `timeText` (its
// text), in the mode the header's switch picked: relative ("5m 03s ago", "in 2m"), local
// ("2026-01-01 13:00:00") or UTC ("2026-01-01 12:00:00Z"). The choice is kept in localStorage;
// switching rewrites every `<time data-t>` on the page in place.

/** The time modes, in the switch's order. */
export const TIME_MODES = ["relative", "local", "utc"];
const TIME_MODE_KEY = "execstore.timeMode";

function storedTimeMode() {
  try {
    const mode = localStorage.getItem(TIME_MODE_KEY);
    return TIME_MODES.includes(mode) ? mode : "relative";
  } catch {
    return "relative";
  }
}

let timeMode = storedTimeMode();

/** The mode times are shown in. */
export const getTimeMode = () => timeMode;

/** Shows every time in `mode` from now on (kept), and rewrites those on the page. */
export function setTimeMode(mode) {
  if (!TIME_MODES.includes(mode)) return;
  timeMode = mode;
  try {
    localStorage.setItem(TIME_MODE_KEY, mode);
  } catch {
    // A browser without storage: the mode holds for this page.
  }
  for (const el of document.querySelectorAll("time[data-t]")) el.textContent = timeText(Number(el.dataset.t), el.dataset.part || "");
}

function utcText(s) {
  const d = new Date(s * 1000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}Z`;
}

function relativeText(s) {
  const d = s - now();
  return d >= 0 ? `in ${span(d)}` : `${span(d)} ago`;
}

/**
 * `t` (epoch seconds or a date-time text) as text in `mode` (the current one unless given);
 * `part` "time": the time of day only, where the mode shows a date. "–" for no time.
 */
export function timeText(t, part = "", mode = timeMode) {
  const s = toSeconds(t);
  if (s === null) return "–";
  if (mode === "relative") return relativeText(s);
  const text = mode === "utc" ? utcText(s) : absTime(s);
  return part === "time" ? text.slice(11) : text;
}

/**
 * A `<time>` element showing `t` in the current mode, rewritten when the mode changes; its
 * title gives all three. `part` as for `timeText`.
 */
export function when(t, { part = "" } = {}) {
  const s = toSeconds(t);
  if (s === null) return h("span", { class: "muted" }, "–");
  return h(
    "time",
    {
      datetime: new Date(s * 1000).toISOString(),
      title: `${timeText(s, "", "utc")} · ${timeText(s, "", "local")} local · ${timeText(s, "", "relative")}`,
      dataset: { t: String(s), part },
    },
    timeText(s, part),
  );
}

/** A time as an element (see `when`). */
export function timeEl(t) {
  return when(t);
}

export const compact = (v) => (v === undefined ? "" : JSON.stringify(v));

export function shortJson(v, max = 140) {
  const s = compact(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** The server's clock (epoch seconds), as last seen, advanced by the local clock. */
let clockSkew = 0;

/** Records the server's clock (epoch seconds) as the page's "now". */
export function setServerNow(t) {
  clockSkew = t - Date.now() / 1000;
}
export const now = () => Date.now() / 1000 + clockSkew;

export function emptyBox(title, text, action) {
  return h("div", { class: "state empty" }, h("strong", null, title), text ? h("p", null, text) : null, action);
}

export function statusPill(status) {
  return h("span", { class: `pill s-${String(status).toLowerCase()}` }, status);
}

/** A grid of `rows` by `columns` (`{label, class, cell(row, i)}`); `cls` adds classes to the
 * table, `indexed` puts each row's position in its `data-index`. */
export function table(columns, rows, { rowProps, cls = "", indexed = false } = {}) {
  const props = (row, i) => {
    const own = rowProps ? rowProps(row, i) : null;
    return indexed ? { ...own, dataset: { index: String(i) } } : own;
  };
  return h(
    "table",
    { class: `grid ${cls}`.trim() },
    h("thead", null, h("tr", null, columns.map((c) => h("th", { class: c.class }, c.label)))),
    h("tbody", null, rows.map((row, i) => h("tr", props(row, i), columns.map((c) => h("td", { class: c.class }, c.cell(row, i)))))),
  );
}

// ---------------------------------------------------------------------------------------------
// JSON tree (collapsible); deeper levels are built when first opened.

export function jsonTree(value, { key, depth = 0, open = 1 } = {}) {
  const label = key === undefined ? null : h("span", { class: "k" }, `${key}: `);
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const shape = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    if (!entries.length) return h("div", { class: "jl" }, label, h("span", { class: "v empty" }, Array.isArray(value) ? "[]" : "{}"));
    const details = h("details", { class: "jt", open: depth < open }, h("summary", null, label, h("span", { class: "shape" }, shape), h("span", { class: "peek" }, ` ${shortJson(value, 80)}`)));
    const build = () => {
      if (details.dataset.built) return;
      details.dataset.built = "1";
      details.append(h("div", { class: "jc" }, entries.map(([k, v]) => jsonTree(v, { key: k, depth: depth + 1, open }))));
    };
    if (depth < open) build();
    else details.addEventListener("toggle", build);
    return details;
  }
  const type = value === null ? "null" : typeof value;
  return h("div", { class: "jl" }, label, h("span", { class: `v ${type}` }, compact(value)),
    copyButton(typeof value === "string" ? value : compact(value), key === undefined ? "value" : `${key}`));
}

// ---------------------------------------------------------------------------------------------
// Copy buttons: an id or a value to the clipboard, as text.

/** Puts `text` on the clipboard (the async API, else a hidden text area's copy). */
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Refused (no permission): the older way below.
  }
  const area = h("textarea", { readonly: true, class: "sr-only", "aria-hidden": "true" });
  area.value = text;
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand("copy");
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

/** A small button copying `text`; `what` names it for screen readers ("Copy <what>"). */
export function copyButton(text, what = "value") {
  const button = h("button", {
    type: "button",
    class: "copy ghost",
    title: `Copy ${what}`,
    "aria-label": `Copy ${what}`,
    dataset: { copy: text },
    onclick: async (e) => {
      e.stopPropagation();
      const ok = await copyText(text);
      button.replaceChildren(ok ? "✓" : "✗");
      button.classList.toggle("copied", ok);
      setTimeout(() => { button.replaceChildren(copyIcon()); button.classList.remove("copied"); }, 1500);
    },
  }, copyIcon());
  return button;
}

/** Two overlapping sheets, drawn (a glyph for it is missing from many fonts). */
function copyIcon() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  for (const [k, v] of Object.entries({ viewBox: "0 0 16 16", width: "11", height: "11", "aria-hidden": "true", class: "copy-icon" })) svg.setAttribute(k, v);
  for (const [x, y] of [[1.5, 4.5], [5, 1]]) {
    const r = document.createElementNS(ns, "rect");
    for (const [k, v] of Object.entries({ x, y, width: "9.5", height: "10.5", rx: "1.5" })) r.setAttribute(k, String(v));
    svg.append(r);
  }
  return svg;
}
