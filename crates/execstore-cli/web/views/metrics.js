// Metrics (`?view=metrics`): the store's trends as charts, from `/api/metrics`. The native
// monitor samples every period while it runs and keeps a ring in memory (docs/metrics.md), as
// does the in-browser monitor's worker; a monitor that keeps none (the edge) answers the
// current figures only, and this view keeps those it reads while it stays open and says so. Charts are uPlot's
// (web/vendor/), coloured from style.css's variables so they follow the theme, sized to
// their card so they fit a phone. Each card also says its latest values as text.

import uPlot from "../vendor/uPlot.esm.js";
import { $, clear, h } from "../dom.js";
import { api, errorBox, loadingLater, state } from "../shell.js";

/** How often the view reads while shown (at most; a longer sampling period reads less). */
const POLL_MS = 5000;
/** How many samples the view keeps when the monitor keeps none. */
const LOCAL_KEEP = 360;
const CHART_HEIGHT = 170;

let context = null;
let seq = 0;
let timer = null;
/** The samples shown, oldest first, and what the last answer said of the ring. */
let samples = [];
let meta = null;
/** Chart id -> { plot, key }: a chart is rebuilt when its series or the theme change. */
const charts = new Map();
let onResize = null;

export function init(c) {
  context = c;
}

// ---------------------------------------------------------------------------------------------
// Colours from the page's CSS variables (light or dark, whichever is in effect)

let probe = null;

/**
 * The colour variable `name` in the theme in effect, as a canvas takes it (`rgb(...)`), or ""
 * if the page has none: style.css writes each as `light-dark(light, dark)`, which only an
 * element's style resolves.
 */
function cssVar(name) {
  if (!probe || !probe.isConnected) {
    probe = h("span", { hidden: true, "aria-hidden": "true" });
    document.body.append(probe);
  }
  probe.style.color = `var(${name}, transparent)`;
  const colour = getComputedStyle(probe).color;
  return colour === "rgba(0, 0, 0, 0)" ? "" : colour;
}

const PALETTE = ["--accent", "--s-done", "--s-suspended", "--s-cancelled", "--s-cancelling", "--s-failed", "--s-pending", "--good"];

function colourOf(i) {
  return cssVar(PALETTE[i % PALETTE.length]) || "#888";
}

/** A status's colour (`--s-running`...), else one from the palette. */
function statusColour(status, i) {
  return cssVar(`--s-${String(status).toLowerCase()}`) || colourOf(i);
}

function themeKey() {
  return [cssVar("--text"), cssVar("--line"), cssVar("--accent")].join("|");
}

// ---------------------------------------------------------------------------------------------
// What is charted: specs built from the samples (series are the union of every sample's keys)

const sum = (o) => Object.values(o || {}).reduce((a, b) => a + b, 0);
const keysOf = (list, pick) => [...new Set(list.flatMap((s) => Object.keys(pick(s) || {})))].sort();

function executionCharts(list) {
  const withExec = list.filter((s) => s.executions);
  if (!withExec.length) return [];
  const ex = (s) => s.executions || {};
  const statuses = keysOf(withExec, (s) => ex(s).by_status);
  const started = keysOf(withExec, (s) => ex(s).started_last_minute);
  const finished = [...new Set(withExec.flatMap((s) =>
    Object.entries(ex(s).finished_last_minute || {}).flatMap(([d, by]) => Object.keys(by).map((st) => `${d}\u0000${st}`))))].sort();
  return [
    {
      id: "exec-status", group: "Executions", title: "Executions by status", unit: "",
      series: statuses.map((st, i) => ({ label: st, colour: statusColour(st, i), get: (s) => s.executions ? ex(s).by_status[st] ?? 0 : null })),
    },
    {
      id: "exec-definition", group: "Executions", title: "Executions by definition", unit: "",
      series: keysOf(withExec, (s) => ex(s).by_definition).map((d, i) => ({
        label: d, colour: colourOf(i), get: (s) => s.executions && ex(s).by_definition[d] ? sum(ex(s).by_definition[d]) : null,
      })),
    },
    {
      id: "started", group: "Executions", title: "Started per minute, by definition", unit: "/min",
      series: started.length
        ? started.map((d, i) => ({ label: d, colour: colourOf(i), get: (s) => s.executions ? ex(s).started_last_minute[d] ?? 0 : null }))
        : [{ label: "all", colour: colourOf(0), get: (s) => s.executions ? sum(ex(s).started_last_minute) : null }],
    },
    {
      id: "finished", group: "Executions", title: "Finished per minute, by definition and status", unit: "/min",
      series: finished.length
        ? finished.map((key, i) => {
          const [d, st] = key.split("\u0000");
          return { label: `${d} ${st}`, colour: statusColour(st, i), dash: i % 2 ? [6, 3] : null, get: (s) => s.executions ? (ex(s).finished_last_minute[d] || {})[st] ?? 0 : null };
        })
        : [{ label: "all", colour: colourOf(0), get: (s) => s.executions ? 0 : null }],
    },
    {
      id: "queues", group: "Executions", title: "Outbox depth and spawns pending", unit: "",
      series: [
        { label: "outbox", colour: colourOf(0), get: (s) => s.executions ? ex(s).outbox_depth : null },
        { label: "spawns", colour: colourOf(2), get: (s) => s.executions ? ex(s).spawns_pending : null },
      ],
    },
    {
      id: "outbox-age", group: "Executions", title: "Oldest outbox entry's age", unit: "s",
      series: [{ label: "age", colour: colourOf(5), get: (s) => s.executions ? ex(s).outbox_oldest_age_seconds ?? 0 : null }],
    },
    {
      id: "timers", group: "Executions", title: "Timers armed and due", unit: "",
      series: [
        { label: "armed", colour: colourOf(0), get: (s) => s.executions ? ex(s).timers_armed : null },
        { label: "due", colour: colourOf(4), get: (s) => s.executions ? ex(s).timers_due : null },
      ],
    },
    {
      id: "timer-lag", group: "Executions", title: "Due-timer lag (oldest due timer)", unit: "s",
      series: [{ label: "lag", colour: colourOf(5), get: (s) => s.executions ? ex(s).timer_lag_seconds : null }],
    },
  ];
}

/** Envelopes a minute between two samples, where the server did not say (no ring). */
function localRate(list, i, w) {
  const s = list[i];
  const own = (s.workspaces || []).find((x) => x.tenant === w.tenant && x.workspace === w.workspace);
  if (!own) return null;
  if (own.log_rate_per_minute !== null && own.log_rate_per_minute !== undefined) return own.log_rate_per_minute;
  const prev = i > 0 ? (list[i - 1].workspaces || []).find((x) => x.tenant === w.tenant && x.workspace === w.workspace) : null;
  if (!prev || s.at <= list[i - 1].at || own.head_seq < prev.head_seq) return null;
  return ((own.head_seq - prev.head_seq) / (s.at - list[i - 1].at)) * 60;
}

function workspaceCharts(list) {
  const all = new Map();
  for (const s of list) for (const w of s.workspaces || []) all.set(`${w.tenant}\u0000${w.workspace}`, w);
  const out = [];
  let n = 0;
  for (const [key, w] of [...all.entries()].sort()) {
    const one = (s) => (s.workspaces || []).find((x) => `${x.tenant}\u0000${x.workspace}` === key);
    const name = `Workspace ${w.tenant} / ${w.workspace}`;
    const cursors = keysOf(list, (s) => (one(s) || {}).cursor_lag);
    const runs = keysOf(list, (s) => (one(s) || {}).runs);
    const id = `ws-${n++}`;
    out.push(
      {
        id: `${id}-rate`, group: name, title: "Log rate", unit: "/min",
        series: [{ label: "envelopes", colour: colourOf(0), get: (s, i) => localRate(list, i, w) }],
      },
      {
        id: `${id}-lag`, group: name, title: "Cursor lag", unit: "",
        series: (cursors.length ? cursors : ["(no cursor)"]).map((c, i) => ({ label: c, colour: colourOf(i), get: (s) => one(s) ? (one(s).cursor_lag || {})[c] ?? null : null })),
      },
      {
        id: `${id}-runs`, group: name, title: "Runs by status", unit: "",
        series: runs.map((st, i) => ({ label: st, colour: colourOf(i), get: (s) => one(s) ? one(s).runs[st] ?? 0 : null })),
      },
      {
        id: `${id}-health`, group: name, title: "Due runs, dead letters, lapsed leases", unit: "",
        series: [
          { label: "due runs", colour: colourOf(0), get: (s) => one(s) ? one(s).due_runs : null },
          { label: "dead letters", colour: colourOf(5), get: (s) => one(s) ? one(s).dead_letters : null },
          { label: "lapsed leases", colour: colourOf(4), get: (s) => one(s) ? one(s).lapsed_leases : null },
        ],
      },
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Drawing

const compactNumber = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });

function fmt(v, unit) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const n = Math.abs(v) >= 100 || Number.isInteger(v) ? Math.round(v).toLocaleString() : v.toFixed(1);
  return unit ? `${n} ${unit}` : n;
}

/** An axis tick: 12, 1.5, 12K, 3.4M. */
const tick = (v) => (Math.abs(v) >= 10000 ? compactNumber.format(v) : fmt(v, ""));

function plotOptions(spec, width) {
  const axis = { stroke: cssVar("--muted"), grid: { stroke: cssVar("--line"), width: 1 }, ticks: { stroke: cssVar("--line"), width: 1 } };
  return {
    width,
    height: CHART_HEIGHT,
    legend: { show: false },
    cursor: { drag: { x: true, y: false } },
    scales: { y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [{ ...axis }, { ...axis, size: 52, values: (u, ticks) => ticks.map(tick) }],
    series: [{}, ...spec.series.map((s) => ({ label: s.label, stroke: s.colour, width: 2, dash: s.dash || undefined, points: { show: false } }))],
  };
}

function cardOf(spec, grid) {
  let card = grid.querySelector(`[data-chart="${spec.id}"]`);
  if (!card) {
    card = h("section", { class: "metric-card", dataset: { chart: spec.id } },
      h("h3", null, spec.title),
      h("p", { class: "metric-now", "aria-live": "off" }),
      h("div", { class: "metric-plot", role: "img" }));
    grid.append(card);
  }
  return card;
}

function draw(spec, card, list) {
  const xs = list.map((s) => s.at);
  const data = [xs, ...spec.series.map((s) => list.map((sample, i) => {
    const v = s.get(sample, i);
    return v === undefined ? null : v;
  }))];
  const last = (col) => {
    for (let i = col.length - 1; i >= 0; i--) if (col[i] !== null) return col[i];
    return null;
  };
  const now = spec.series.map((s, i) => `${s.label}: ${fmt(last(data[i + 1]), spec.unit)}`).join(" · ");
  // The legend: each series' colour, name and latest value, as text.
  clear($(".metric-now", card), spec.series.map((s, i) => {
    const swatch = h("i", { class: "swatch", "aria-hidden": "true" });
    // Set through the CSSOM: the page's CSP refuses inline style attributes.
    swatch.style.background = s.colour;
    return h("span", { class: "metric-key" }, swatch, `${s.label}: ${fmt(last(data[i + 1]), spec.unit)}`);
  }));
  const plotEl = $(".metric-plot", card);
  plotEl.setAttribute("aria-label", `${spec.title}: ${now}`);
  card.dataset.points = String(xs.length);
  card.dataset.latest = JSON.stringify(spec.series.map((s, i) => last(data[i + 1])));
  const key = `${themeKey()}\u0001${spec.series.map((s) => `${s.label}=${s.colour}`).join("\u0000")}`;
  const width = Math.max(200, plotEl.clientWidth || card.clientWidth - 24);
  const known = charts.get(spec.id);
  if (known && known.key === key && known.plot.root.isConnected) {
    known.plot.setData(data);
    if (Math.abs(known.plot.width - width) > 2) known.plot.setSize({ width, height: CHART_HEIGHT });
    return;
  }
  if (known) known.plot.destroy();
  clear(plotEl);
  const plot = new uPlot(plotOptions(spec, width), data, plotEl);
  charts.set(spec.id, { plot, key });
}

function ensureStyles() {
  if (document.querySelector("link[data-uplot]")) return;
  const base = new URL("../vendor/uPlot.min.css", import.meta.url);
  document.head.append(h("link", { rel: "stylesheet", href: base.href, dataset: { uplot: "" } }));
}

function render(root) {
  const grid = $("#metrics-grid", root);
  const specs = [...executionCharts(samples), ...workspaceCharts(samples)].filter((spec) => spec.series.length);
  const wanted = new Set(specs.map((s) => s.id));
  for (const [id, c] of charts) {
    if (!wanted.has(id)) {
      c.plot.destroy();
      charts.delete(id);
      const gone = grid.querySelector(`[data-chart="${id}"]`);
      if (gone) gone.remove();
    }
  }
  // Cards (and each workspace's heading) in spec order: a workspace that appears later goes
  // after the others.
  let group = null;
  const groups = new Set(specs.map((s) => s.group).filter(Boolean));
  for (const head of grid.querySelectorAll(".metric-group")) if (!groups.has(head.dataset.group)) head.remove();
  for (const spec of specs) {
    if (spec.group && spec.group !== group) {
      group = spec.group;
      const head = [...grid.querySelectorAll(".metric-group")].find((e) => e.dataset.group === group) ||
        h("h2", { class: "metric-group", dataset: { group } }, group);
      grid.append(head);
    }
    const card = cardOf(spec, grid);
    grid.append(card);
    draw(spec, card, samples);
  }
  const period = meta && meta.period ? `every ${fmt(meta.period, "s")}` : null;
  const summary = $("#metrics-summary", root);
  summary.dataset.live = meta && meta.live ? "true" : "false";
  summary.textContent = meta && meta.live
    ? `Sampled by the monitor ${period}, the last ${meta.keep.toLocaleString()} kept in memory: ${samples.length} sample${samples.length === 1 ? "" : "s"} so far.`
    : `This monitor keeps no history (at the edge each read is a single snapshot): the charts hold what this page read, every ${POLL_MS / 1000} s since it opened (${samples.length} so far).`;
  if (!specs.length) clear(grid, h("div", { class: "state empty" }, h("strong", null, "No figures yet")));
}

// ---------------------------------------------------------------------------------------------
// Reading

async function load({ quiet = false } = {}) {
  const mine = ++seq;
  const main = $("#main");
  let root = $(".metrics-view", main);
  if (!root) {
    ensureStyles();
    for (const c of charts.values()) c.plot.destroy();
    charts.clear();
    samples = [];
    meta = null;
    root = h("section", { class: "view-page metrics-view" },
      h("div", { class: "view-head" }, h("h1", null, "Metrics"),
        h("p", { class: "muted" }, "Trends of the store: executions, queues and timers, and each workspace's log.",
          h("span", { id: "prometheus-link" }, " ", h("a", { href: "metrics" }, "Prometheus text"), " at /metrics.")),
        h("span", { class: "muted", id: "metrics-summary", "aria-live": "polite" })),
      h("div", { id: "metrics-grid", class: "metrics-grid" }));
    clear(main, root);
  }
  const grid = $("#metrics-grid", root);
  const done = quiet || samples.length ? () => {} : loadingLater(grid);
  try {
    const since = meta && meta.live && samples.length ? { since: String(samples[samples.length - 1].at) } : {};
    const answer = await api.get("api/metrics", since);
    done();
    if (mine !== seq || !root.isConnected) return;
    const live = Boolean(answer.live);
    if (meta && meta.live !== live) samples = [];
    meta = { live, period: answer.period, keep: answer.keep };
    const keep = live ? answer.keep : LOCAL_KEEP;
    const newest = samples.length ? samples[samples.length - 1].at : -Infinity;
    for (const s of answer.samples || []) if (s.at > newest) samples.push(s);
    if (samples.length > keep) samples = samples.slice(samples.length - keep);
    // `/metrics` is the native server's (the in-browser monitor, over OPFS, serves none).
    $("#prometheus-link", root).hidden = !live || state.info?.backend === "opfs";
    render(root);
  } catch (e) {
    done();
    if (mine !== seq) return;
    if (!quiet) clear(grid, errorBox(e, () => load()));
  }
}

export function show() {
  leave();
  load();
  const every = Math.min(POLL_MS, meta && meta.period ? meta.period * 1000 : POLL_MS);
  timer = setInterval(() => {
    if (!context || context.live()) load({ quiet: true });
  }, every);
  let pending = null;
  onResize = () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      const root = $(".metrics-view");
      if (root && samples.length) render(root);
    }, 150);
  };
  window.addEventListener("resize", onResize);
}

export function refresh() {
  return load({ quiet: true });
}

export function leave() {
  if (timer) clearInterval(timer);
  timer = null;
  if (onResize) window.removeEventListener("resize", onResize);
  onResize = null;
  seq++;
}
