// An execution's history, three ways (the detail's "History" section, detail.js beside it): the timeline
// (records.js: every step with what it changed), a waterfall (steps and armed timers on one
// time axis) and the raw JSON of the archive bundle (`GET /api/executions/{id}/bundle`: what
// `purge --archive` writes, so a download is also a backup). The steps can be filtered by
// event kind. The mode and the kinds are part of the route (`history=`, `kind=` in the URL,
// route.js), so a view of the history can be linked to and every navigation keeps it; stored
// data reaches the page as text only.

import { clear, h, span, toSeconds } from "../dom.js";
import { copyText, emptyBox, now, timeText } from "../format.js";
import * as records from "../records.js";
import { routeSearch } from "../route.js";
import { state } from "../shell.js";

export const MODES = [
  { id: "timeline", label: "Timeline" },
  { id: "waterfall", label: "Waterfall" },
  { id: "json", label: "JSON" },
];
const NO_EVENT = "(no event)";
/** The most of a bundle shown on the page (the download is always whole). */
const SHOWN_BYTES = 400_000;

/** The bundle last read, by execution and version (read again when the version moves). */
let bundleCache = { key: "", body: null };

const kindOf = (step) => (typeof step.event_kind === "string" && step.event_kind ? step.event_kind : NO_EVENT);

/** The mode and kinds the route names. */
function prefs() {
  const r = state.route;
  const mode = MODES.some((m) => m.id === r.history) ? r.history : "timeline";
  const kinds = new Set((r.kind || "").split(",").filter(Boolean));
  return { mode, kinds };
}

/**
 * Writes the mode and kinds into the route and the URL, in place (no history entry; the rest
 * of the route is untouched), so every later navigation keeps them.
 */
function savePrefs({ mode, kinds }) {
  state.route = { ...state.route, history: mode === "timeline" ? "" : mode, kind: [...kinds].join(",") };
  history.replaceState(history.state, "", routeSearch(state.route));
}

/**
 * The History section's body for `exe` with its `trace` (`{items, trace_max}`) and `pending`
 * (`{timers, now}`); `api` reads the bundle.
 */
export function historyBody(api, exe, trace, pending) {
  const body = h("div", { class: "history", id: "history" });
  const draw = () => {
    const pref = prefs();
    const steps = trace.items;
    const counts = new Map();
    for (const s of steps) counts.set(kindOf(s), (counts.get(kindOf(s)) || 0) + 1);
    for (const k of [...pref.kinds]) if (!counts.has(k)) pref.kinds.delete(k);
    const setMode = (mode) => { savePrefs({ ...pref, mode }); draw(); };
    const toggleKind = (k) => {
      const kinds = new Set(pref.kinds);
      if (kinds.has(k)) kinds.delete(k);
      else kinds.add(k);
      savePrefs({ ...pref, kinds });
      draw();
    };
    const modes = h("div", { class: "seg", role: "group", "aria-label": "Show the history as" },
      MODES.map((m) => h("button", { type: "button", dataset: { mode: m.id }, "aria-pressed": m.id === pref.mode ? "true" : "false", onclick: () => setMode(m.id) }, m.label)));
    const kinds = pref.mode === "json" || counts.size < 2 ? null : h(
      "div",
      { class: "kinds", role: "group", "aria-label": "Filter by event kind" },
      h("span", { class: "chip-label" }, "kinds"),
      h("button", { type: "button", class: "small kind-chip", dataset: { kind: "" }, "aria-pressed": pref.kinds.size ? "false" : "true", onclick: () => { savePrefs({ ...pref, kinds: new Set() }); draw(); } }, "all"),
      [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => h("button", {
        type: "button", class: "small kind-chip", dataset: { kind: k }, "aria-pressed": pref.kinds.has(k) ? "true" : "false", onclick: () => toggleKind(k),
      }, `${k} ${n}`)),
    );
    const keep = (s) => !pref.kinds.size || pref.kinds.has(kindOf(s));
    let view;
    if (pref.mode === "waterfall") view = waterfall(exe, steps, pending, keep);
    else if (pref.mode === "json") view = bundleView(api, exe);
    else view = timeline(trace, keep);
    clear(body, h("div", { class: "history-bar" }, modes, kinds), view);
    const count = body.parentNode && body.parentNode.querySelector(":scope > summary .count");
    if (count) count.textContent = historyCount(trace);
  };
  draw();
  return body;
}

/** The count shown in the section's title. */
export function historyCount(trace) {
  const { kinds } = prefs();
  const n = trace.items.length;
  if (!kinds.size) return `${n} steps`;
  const shown = trace.items.filter((s) => kinds.has(kindOf(s))).length;
  return `${shown} of ${n} steps`;
}

// ---------------------------------------------------------------------------------------------
// Timeline: records.js's, every step drawn (a step's context change is against the step
// before it, shown or not), those of other kinds hidden.

function timeline(trace, keep) {
  const drawn = records.renderTimeline(trace);
  const list = [drawn].flat().find((el) => el && el.id === "timeline");
  if (list) {
    trace.items.forEach((s, i) => {
      const li = list.children[i];
      if (li) li.hidden = !keep(s);
    });
    const shown = trace.items.filter(keep).length;
    if (!shown) return [drawn, emptyBox("No step of these kinds", null)];
  }
  return drawn;
}

// ---------------------------------------------------------------------------------------------
// Waterfall: each step a bar from its time to the next step's (the time spent in the state it
// reached), the last one to the end of the execution (finished) or now; armed timers as marks
// at their fire time. One scale for all, from the first step to the latest of these.

function waterfall(exe, steps, pending, keep) {
  const times = steps.map((s) => toSeconds(s.timestamp));
  const dated = times.filter((t) => t !== null);
  if (!dated.length) return emptyBox("No times to draw", "The trace's steps carry no timestamps.");
  const finished = toSeconds(exe.finished_at);
  const end = finished !== null ? finished : Math.max(now(), ...dated);
  const timers = (pending.timers || []).map((t) => ({ ...t, at: toSeconds(t.fire_at) })).filter((t) => t.at !== null);
  const t0 = Math.min(...dated);
  const t1 = Math.max(end, ...dated, ...timers.map((t) => t.at));
  const total = Math.max(t1 - t0, 1e-3);
  const pct = (t) => `${(((t - t0) / total) * 100).toFixed(3)}%`;
  const rows = [];
  steps.forEach((s, i) => {
    if (!keep(s) || times[i] === null) return;
    let next = null;
    for (let j = i + 1; j < steps.length && next === null; j++) next = times[j];
    const until = next !== null ? next : end;
    const bar = h("span", { class: "wf-bar", title: `${timeText(times[i])} → ${timeText(until)} (${span(until - times[i])}) in ${s.to_path ?? "?"}` });
    bar.style.left = pct(times[i]);
    bar.style.width = `${Math.max(0, ((until - times[i]) / total) * 100).toFixed(3)}%`;
    const failed = typeof s.note === "string" && s.note.startsWith("failed");
    rows.push(h("div", { class: `wf-row step${failed ? " failed" : ""}`, dataset: { index: s.index, kind: kindOf(s), start: times[i], end: until } },
      h("span", { class: "wf-label", title: `${kindOf(s)}: ${s.from_path ?? "(start)"} → ${s.to_path ?? "?"}` },
        h("span", { class: "idx" }, `#${s.index ?? "?"}`), kindOf(s), h("span", { class: "muted mono" }, ` → ${s.to_path ?? "?"}`)),
      h("span", { class: "wf-track" }, bar)));
  });
  for (const t of timers) {
    const mark = h("span", { class: "wf-bar", title: `fires ${timeText(t.at)}` });
    mark.style.left = pct(t.at);
    const overdue = t.at < now();
    rows.push(h("div", { class: `wf-row timer${overdue ? " overdue" : ""}`, dataset: { start: t.at } },
      h("span", { class: "wf-label", title: `timer of ${t.path}` }, "timer ", h("span", { class: "mono" }, t.path),
        h("span", { class: "muted" }, overdue ? " (overdue)" : "")),
      h("span", { class: "wf-track" }, mark)));
  }
  return h("div", { class: "waterfall", id: "waterfall", role: "list", "aria-label": "Steps and timers on a time axis" },
    h("div", { class: "wf-axis", "aria-hidden": "true" }, h("span", null, timeText(t0)), h("span", null, `+${span(t1 - t0)}`)),
    rows.length ? rows.map((r) => { r.setAttribute("role", "listitem"); return r; }) : emptyBox("No step of these kinds", null));
}

// ---------------------------------------------------------------------------------------------
// The raw JSON: the archive bundle, shown, copied and downloaded as a file.

function bundleView(api, exe) {
  const box = h("div", { class: "bundle", id: "bundle" }, h("p", { class: "muted" }, "Reading the bundle…"));
  const key = `${exe.id}\u0000${exe.version}`;
  const show = (bundle) => {
    const text = JSON.stringify(bundle, null, 2);
    const file = `execstore-${exe.id.replace(/[^A-Za-z0-9._-]+/g, "_")}-v${exe.version}.json`;
    const download = h("button", {
      type: "button", class: "small", id: "bundle-download",
      title: "The archive bundle purge writes: every execution of the tree and their traces",
      onclick: () => {
        const url = URL.createObjectURL(new Blob([`${text}\n`], { type: "application/json" }));
        const a = h("a", { href: url, download: file, hidden: true });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
      },
    }, "Download ", file);
    const copy = h("button", { type: "button", class: "small", id: "bundle-copy", onclick: async () => { copy.textContent = (await copyText(text)) ? "Copied" : "Copy failed"; } }, "Copy JSON");
    const shown = text.length > SHOWN_BYTES ? `${text.slice(0, SHOWN_BYTES)}\n…` : text;
    clear(
      box,
      h("div", { class: "history-bar" }, download, copy,
        h("span", { class: "muted" }, `${bundle.executions.length} execution${bundle.executions.length === 1 ? "" : "s"}, ${Object.values(bundle.traces).reduce((n, t) => n + t.length, 0)} steps · ${(text.length / 1024).toFixed(1)} KiB`)),
      h("p", { class: "muted small" }, "The archive bundle `purge --archive` writes (root first, then every descendant, and their traces): keep it as a backup."),
      text.length > SHOWN_BYTES ? h("p", { class: "muted" }, `Only the first ${SHOWN_BYTES.toLocaleString()} characters are shown; the download is whole.`) : null,
      h("pre", { class: "json bundle-json", id: "bundle-json" }, shown),
    );
  };
  if (bundleCache.key === key) show(bundleCache.body);
  else {
    api.get(`api/executions/${encodeURIComponent(exe.id)}/bundle`).then((bundle) => {
      bundleCache = { key, body: bundle };
      show(bundle);
    }).catch((e) => {
      clear(box, h("div", { class: "error-box" }, `Cannot read the bundle: ${e.message || e}`));
    });
  }
  return box;
}
