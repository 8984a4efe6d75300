// The workspace log's views (reflexr's tables): the workspaces of each tenant, a workspace's
// log as a live tail with an envelope's causal chain, its runs (due now or held, and by
// which), dead letters, leases, cursors, and stored rules with their version history.
//
// Same rules as every view (shell.js): stored data reaches the page only as text (text nodes via `h()` and
// `textContent`), no HTML string is ever parsed, and links are relative query strings built
// here. Everything the view shows is in the URL (`?view=workspaces&tenant=...&ws=...&tab=...`).
//
// The tail is pushed where the page talks to its own native server, which holds the store
// in-process (server-sent events from `/api/workspaces/{t}/{w}/stream`, fed by the store's
// `wait_for_append`), and polled elsewhere (a server without the stream endpoint answers 404):
// `log?after=<last seq>` every couple of seconds.

import { $, clear, h, span, toSeconds } from "../dom.js";
import { replayedText, wsAction, wsResult } from "../recover.js";
import { actionCtx, api } from "../shell.js";
import * as savedViews from "../saved-views.js";
import { compact, emptyBox, table, timeEl, timeText } from "../format.js";
import { makeWhereBox, whereGet } from "../where.js";
import * as records from "./workspace-records.js";

const TABS = ["log", "runs", "dead-letters", "leases", "cursors", "rules"];
const TAB_TITLES = {
  log: "Log", runs: "Runs", "dead-letters": "Dead letters", leases: "Leases", cursors: "Cursors", rules: "Rules",
};
const RUN_STATUSES = ["pending", "running", "retrying", "succeeded", "dead", "cancelled", "skipped"];
const TAIL_MAX = 500;
/** The run statuses reflexr's retry_run takes that are worth a button (not pending). */
const RETRYABLE = ["dead", "cancelled", "skipped", "retrying"];
const POLL_MS = 2000;

// ---------------------------------------------------------------------------------------------
// DOM helpers: elements and text nodes only.



// ---------------------------------------------------------------------------------------------
// Formatting

function short(v, max = 120) {
  const s = typeof v === "string" ? v : compact(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function pill(status) {
  return h("span", { class: `pill r-${String(status).toLowerCase()}` }, status);
}

// ---------------------------------------------------------------------------------------------
// Routes

function parse(search) {
  const p = new URLSearchParams(search);
  const tab = TABS.includes(p.get("tab")) ? p.get("tab") : "log";
  const last = Number(p.get("last"));
  return {
    tenant: p.get("tenant") || "",
    ws: p.get("ws") || "",
    tab,
    env: p.get("env") || "",
    type: p.get("type") || "",
    seq: /^\d+$/.test(p.get("seq") || "") ? p.get("seq") : "",
    last: [50, 100, 200, 500].includes(last) ? last : 100,
    status: RUN_STATUSES.includes(p.get("status")) ? p.get("status") : "",
    rule: p.get("rule") || "",
    scope: p.get("scope") || "",
    cursor: p.get("cursor") || "",
    history: p.get("history") || "",
    where: p.get("where") || "",
  };
}

function search(r) {
  const p = new URLSearchParams();
  p.set("view", "workspaces");
  if (r.tenant) p.set("tenant", r.tenant);
  if (r.ws) p.set("ws", r.ws);
  if (r.tenant && r.ws && r.tab !== "log") p.set("tab", r.tab);
  for (const k of ["env", "type", "seq", "status", "rule", "scope", "cursor", "history", "where"]) if (r[k]) p.set(k, r[k]);
  if ([50, 200, 500].includes(r.last)) p.set("last", String(r.last));
  return `?${p}`;
}

/** A link within these views: a real `href` (deep link), handled in the page on a plain click. */
function link(changes, text, props = {}) {
  const target = { ...parse(""), ...changes };
  return h("a", {
    ...props,
    href: search(target),
    onclick: (e) => {
      if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      go(target);
    },
  }, text);
}

function here(changes) {
  const r = view.route;
  return { tenant: r.tenant, ws: r.ws, tab: r.tab, ...changes };
}

function go(next, { replace = false } = {}) {
  // What `next` leaves out (or names as undefined) takes its default: never `last=undefined`.
  const full = { ...parse("") };
  for (const [k, v] of Object.entries(next)) if (v !== undefined) full[k] = v;
  history[replace ? "replaceState" : "pushState"](null, "", search(full));
  show();
}

function wsPath(r = view.route) {
  return `api/workspaces/${encodeURIComponent(r.tenant)}/${encodeURIComponent(r.ws)}`;
}

/** The tabs whose filters can be saved as a view (saved-views.js). */
const SAVED_VIEW_TABS = ["log", "runs", "dead-letters"];

/** What the saved views' menu needs (as the executions list's): opening one goes to its URL. */
function savedViewsCtx() {
  const a = actionCtx();
  return {
    api,
    kind: "workspaces",
    get writable() {
      return actionCtx().writable;
    },
    hasToken: a.hasToken,
    needToken: a.needToken,
    open: (query) => {
      history.pushState(null, "", query ? `?${query}` : location.pathname);
      dispatchEvent(new PopStateEvent("popstate"));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// State

let ctx = null; // { api, now(), errorBox(e, retry), live() }
const view = {
  route: parse(""),
  /** The latest load of each element (by id). */
  seqs: {},
  /** The tail: envelopes shown, the last seq, the push channel or poll timer. */
  tail: { items: [], last: 0, source: null, timer: null, paused: false, key: "" },
  selected: -1,
};

function stopTail() {
  const t = view.tail;
  if (t.source) t.source.close();
  if (t.timer) clearTimeout(t.timer);
  t.source = null;
  t.timer = null;
}

// ---------------------------------------------------------------------------------------------
// Rendering

/** Shows the view for the current URL in `#main`. */
export function show() {
  const before = view.route;
  view.route = parse(location.search);
  const r = view.route;
  const main = $("#main");
  const key = `${r.tenant}\u0000${r.ws}\u0000${r.tab}\u0000${r.type}\u0000${r.seq}\u0000${r.last}\u0000${r.where}`;
  if (key !== view.tail.key) stopTail();
  view.selected = -1;
  document.title = r.tenant ? `${r.tenant}/${r.ws} · ${TAB_TITLES[r.tab]} · execstore` : "Workspaces · execstore";
  if (!r.tenant || !r.ws) {
    renderList(main);
    return;
  }
  let root = $(".ws-view", main);
  if (!root || root.dataset.key !== `${r.tenant}\u0000${r.ws}` || before.tab !== r.tab) {
    root = h("section", { class: "ws-view", dataset: { key: `${r.tenant}\u0000${r.ws}` } },
      h("div", { class: "view-head" },
        h("h1", null, link({}, "Workspaces"), " / ", h("span", { class: "ws-name" }, `${r.tenant} / ${r.ws}`)),
        h("span", { class: "muted", id: "ws-head" }),
        SAVED_VIEW_TABS.includes(r.tab) ? savedViews.menu(savedViewsCtx()) : null),
      h("nav", { class: "tabs", "aria-label": "Workspace views" },
        TABS.map((t) => link(here({ tab: t }), TAB_TITLES[t], { class: t === r.tab ? "tab active" : "tab", "aria-current": t === r.tab ? "page" : "false", dataset: { tab: t } }))),
      h("div", { class: "ws-body", id: "ws-body" }));
    clear(main, root);
  }
  const body = $("#ws-body", root);
  if (r.tab === "log") showLog(body);
  else if (r.tab === "runs") showRuns(body);
  else {
    // The records' tabs (workspace-records.js), with the view's tools.
    const tools = { route: r, api: ctx.api, here, go, load, grid, empty, wsPath, link, pill, short };
    const tab = { "dead-letters": records.showDeadLetters, leases: records.showLeases, cursors: records.showCursors, rules: records.showRules };
    tab[r.tab](body, tools);
  }
}

/** Reads the current view again, quietly (live refresh or `r`); the tail follows by itself. */
export function refresh() {
  const r = view.route;
  if (!r.tenant) renderList($("#main"), { quiet: true });
  else if (r.tab !== "log") show();
  else if (!view.tail.source && !view.tail.timer && !view.tail.paused) followTail();
}

/** Leaves the view: stops the tail. */
export function leave() {
  stopTail();
  view.tail.key = "";
}

/** Loads into `el` (one load at a time per element: a later one wins). */
async function load(el, fn, { quiet = false } = {}) {
  const slot = el.id || "main";
  const seq = (view.seqs[slot] || 0) + 1;
  view.seqs[slot] = seq;
  if (!quiet && !el.firstChild) el.append(h("div", { class: "state loading", "aria-busy": "true" }, h("span", { class: "spinner" }), "Loading…"));
  try {
    const out = await fn();
    if (seq !== view.seqs[slot] || !el.isConnected) return null;
    return out;
  } catch (e) {
    if (seq === view.seqs[slot] && !quiet) clear(el, ctx.errorBox(e, () => show()));
    return null;
  }
}

const grid = (columns, rows, { rowProps, cls = "" } = {}) => table(columns, rows, { rowProps, cls: `ws-grid ${cls}`, indexed: true });

/** An empty state (format.js's, without an action). */
const empty = (title, text) => emptyBox(title, text);

// --- Workspaces ------------------------------------------------------------------------------

async function renderList(main, { quiet = false } = {}) {
  let root = $(".ws-list", main);
  if (!root) {
    root = h("section", { class: "ws-list" },
      h("div", { class: "view-head" }, h("h1", null, "Workspaces"),
        h("p", { class: "muted" }, "Each tenant's workspaces: the log's head, when it last moved, and how far each consumer's cursor lags behind it.")),
      h("div", { class: "table-wrap", id: "ws-list" }),
      h("div", { class: "view-head" }, h("h2", null, "Due now"),
        h("p", { class: "muted" }, "The runs an executor would start now, across workspaces, by the stored rules' policy (ordered and blocking rules hold their scope's later runs).")),
      h("div", { class: "table-wrap", id: "ws-due" }));
    clear(main, root);
  }
  showDue($("#ws-due", root), { quiet });
  const list = $("#ws-list", root);
  const page = await load(list, () => ctx.api.get("api/workspaces"), { quiet });
  if (!page) return;
  if (!page.items.length) {
    clear(list, empty("No workspaces", "This store's workspace log holds no workspace yet."));
    return;
  }
  clear(list, grid([
    { label: "Tenant", class: "id", cell: (w) => w.tenant_id },
    { label: "Workspace", class: "id", cell: (w) => link({ tenant: w.tenant_id, ws: w.workspace_id }, w.workspace_id, { class: "ws-link" }) },
    { label: "Head", class: "num", cell: (w) => String(w.head_seq) },
    { label: "Last event", class: "when", cell: (w) => (w.head_ts ? timeEl(w.head_ts) : "–") },
    { label: "Cursors (lag)", cell: (w) => (w.cursors.length ? w.cursors.map((c) => h("span", { class: c.lag > 0 ? "chip lag" : "chip", title: `${c.name} at seq ${c.seq}, ${c.lag} behind the head` }, `${c.name} −${c.lag}`)) : h("span", { class: "muted" }, "none")) },
  ], page.items));
}

async function showDue(el, { quiet = false } = {}) {
  const page = await load(el, () => ctx.api.get("api/due-runs", { now: "now", limit: 50 }), { quiet });
  if (!page) return;
  if (!page.items.length) {
    clear(el, empty("Nothing due", "No run can start now."));
    return;
  }
  clear(el, grid([
    { label: "Workspace", class: "id", cell: (d) => link({ tenant: d.tenant_id, ws: d.workspace_id, tab: "runs" }, `${d.tenant_id} / ${d.workspace_id}`) },
    { label: "Run", class: "id", cell: (d) => h("span", { class: "mono" }, d.run.id) },
    { label: "Rule", class: "id", cell: (d) => d.run.rule },
    { label: "Scope", class: "id", cell: (d) => d.run.scope_key },
    { label: "Status", cell: (d) => pill(d.run.status) },
    { label: "Attempts", class: "num", cell: (d) => String(d.run.attempts) },
    { label: "Due since", class: "when", cell: (d) => timeEl(d.run.next_attempt_at) },
  ], page.items, { cls: "due-grid" }));
}

// --- Log: the live tail and an envelope's causal chain ----------------------------------------

function envelopeRow(e) {
  const r = view.route;
  const fields = { ...e.event };
  delete fields.type;
  const tr = h("tr", { class: e.id === r.env ? "open" : null, dataset: { seq: String(e.seq) } },
    h("td", { class: "num" }, String(e.seq)),
    h("td", { class: "when" }, timeEl(e.ts)),
    h("td", { class: "type" }, link(here({ type: r.type, seq: r.seq, last: r.last, where: r.where, env: e.id }), e.event.type || "(no type)", { class: "env-link" })),
    h("td", { class: "id" }, (e.actor && (e.actor.name || e.actor.id || e.actor.kind)) || "–"),
    h("td", { class: "id" }, e.causation ? `run ${e.causation.run_id || "?"}` : ""),
    h("td", { class: "data" }, short(fields)));
  return tr;
}

function showLog(body) {
  const r = view.route;
  let root = $(".ws-log", body);
  if (!root) {
    const typeInput = h("input", { type: "search", id: "ws-type", placeholder: "event types, comma separated", value: r.type || null, "aria-label": "Filter by event type" });
    const seqInput = h("input", { type: "number", id: "ws-seq", min: "0", placeholder: "seq", value: r.seq || null, "aria-label": "Jump to seq" });
    const lastSelect = h("select", { id: "ws-last", "aria-label": "How many of the last" }, [50, 100, 200, 500].map((n) => h("option", { value: String(n), selected: n === r.last }, `last ${n}`)));
    typeInput.addEventListener("change", () => go({ ...here({}), type: typeInput.value.trim(), last: r.last, where: view.route.where }, { replace: true }));
    seqInput.addEventListener("change", () => go({ ...here({}), type: r.type, seq: seqInput.value.trim(), last: r.last }));
    lastSelect.addEventListener("change", () => go({ ...here({}), type: r.type, last: Number(lastSelect.value), where: view.route.where }, { replace: true }));
    const pause = h("button", { type: "button", id: "ws-pause", class: "small", title: "Pause or resume the tail (key: space)" }, "Pause");
    pause.addEventListener("click", () => togglePause());
    view.logWhere = logWhereBox();
    root = h("div", { class: "ws-log" },
      h("div", { class: "filters" },
        h("label", null, "Type ", typeInput),
        h("label", null, "Jump to seq ", seqInput),
        lastSelect,
        pause,
        h("span", { class: "muted", id: "ws-tail-state", "aria-live": "polite" })),
      view.logWhere.root,
      h("div", { class: "split" },
        h("div", { class: "table-wrap", id: "ws-tail" }),
        h("aside", { class: "detail", id: "ws-env", hidden: true })));
    clear(body, root);
  }
  view.logWhere.sync(r);
  const key = `${r.tenant}\u0000${r.ws}\u0000${r.tab}\u0000${r.type}\u0000${r.seq}\u0000${r.last}\u0000${r.where}`;
  if (view.tail.key !== key) {
    view.tail.key = key;
    view.tail.items = [];
    view.tail.last = 0;
    loadTail();
  } else {
    renderTail();
  }
  showEnvelope();
}

/** The log's where box: a query over the envelopes (docs/search.md), kept in the URL. */
function logWhereBox() {
  return makeWhereBox({
    id: "ws-where",
    navigate: ({ where }) => { const r = view.route; go(here({ type: r.type, last: r.last, where })); },
    suggest: (path) => ctx.api.get(`${wsPath()}/suggest`, { of: "log", path }),
    placeholder: 'event.service = "auth" and event.amount > 10',
    label: "Where: a query over the envelopes' seq, type, time, actor, causation and event fields",
    syntax: "event.service = auth, event.amount > 10, event.note exists, type = shop:paid, at > -1h, " +
      "seq > 100, causation.run_id exists, actor.name = web",
  });
}

/** A search page of the log: its matches (older pages go before them) and how far it scanned. */
function showLogSearch(page, items) {
  stopTail();
  view.tail.items = items;
  view.tail.last = items.length ? items[items.length - 1].seq : 0;
  $("#ws-head") && ($("#ws-head").textContent = `head seq ${page.head_seq}`);
  renderTail();
  const s = page.search;
  const all = view.tail.items.length;
  const more = page.next_before
    ? h("button", { type: "button", id: "ws-where-more", class: "small", onclick: () => olderMatches(page.next_before) }, `Older ▲ (scan below seq ${page.next_before})`)
    : null;
  view.logWhere.note(s.scanned_to === null
    ? "scanned nothing: the log is empty"
    : `scanned down to seq ${s.scanned_to} (${s.scanned} envelopes): ${s.matches} matches on this page, ${all} shown${s.done ? "; the whole log is scanned" : ""}`);
  const state = $("#ws-tail-state");
  if (state) clear(state, "a search: the tail does not follow ", more);
}

async function olderMatches(before) {
  const r = view.route;
  const key = view.tail.key;
  const params = { where: r.where, last: r.last, before, type: r.type };
  const page = await load($("#ws-tail"), () => whereGet(ctx.api, view.logWhere, `${wsPath()}/log`, params), { quiet: true });
  if (!page || view.tail.key !== key) return;
  showLogSearch(page, page.items.concat(view.tail.items));
}

async function loadTail() {
  const r = view.route;
  const tail = $("#ws-tail");
  const params = { type: r.type };
  if (r.seq) {
    // A jump: the window around the seq.
    const from = Math.max(0, Number(r.seq) - Math.floor(r.last / 2) - 1);
    Object.assign(params, { after: from, limit: r.last });
  } else {
    params.last = r.last;
  }
  if (r.where) params.where = r.where;
  const page = await load(tail, () => whereGet(ctx.api, view.logWhere, `${wsPath()}/log`, params));
  if (!page) return;
  if (r.where) {
    showLogSearch(page, page.items);
    return;
  }
  view.tail.items = page.items;
  view.tail.last = page.items.length ? page.items[page.items.length - 1].seq : 0;
  if (!r.seq) view.tail.last = Math.max(view.tail.last, r.type ? page.head_seq : 0);
  $("#ws-head") && ($("#ws-head").textContent = `head seq ${page.head_seq}`);
  renderTail();
  const opened = document.querySelector("#ws-tail tr.open");
  const wrap = $("#ws-tail");
  if (opened) opened.scrollIntoView({ block: "center" });
  else if (!r.seq && wrap) wrap.scrollTop = wrap.scrollHeight;
  if (r.seq) {
    const row = document.querySelector(`#ws-tail tr[data-seq="${Number(r.seq)}"]`);
    if (row) { row.classList.add("sel"); row.scrollIntoView({ block: "center" }); }
    tailState("a window around the seq: the tail follows only without a jump");
  } else if (!view.tail.paused) {
    followTail();
  }
}

function renderTail() {
  const tail = $("#ws-tail");
  if (!tail) return;
  const items = view.tail.items;
  if (!items.length) {
    clear(tail, empty("No envelopes", view.route.type ? "None of these types in the log (yet)." : "The log is empty (yet)."));
    return;
  }
  clear(tail, h("table", { class: "grid ws-grid log-grid" },
    h("thead", null, h("tr", null, ["Seq", "Time", "Type", "Actor", "Caused by", "Event"].map((t) => h("th", null, t)))),
    h("tbody", null, items.map(envelopeRow))));
}

function tailState(text) {
  const el = $("#ws-tail-state");
  if (el) el.textContent = text;
}

function append(envelopes) {
  const r = view.route;
  const types = r.type ? r.type.split(",").map((s) => s.trim()).filter(Boolean) : null;
  const fresh = envelopes.filter((e) => e.seq > view.tail.last);
  if (!fresh.length) return;
  view.tail.last = fresh[fresh.length - 1].seq;
  const shown = types ? fresh.filter((e) => types.includes(e.event.type)) : fresh;
  if (!shown.length) return;
  view.tail.items = view.tail.items.concat(shown).slice(-TAIL_MAX);
  const body = $("#ws-tail tbody");
  if (!body) { renderTail(); return; }
  for (const e of shown) {
    const row = envelopeRow(e);
    row.classList.add("changed");
    body.append(row);
  }
  while (body.children.length > TAIL_MAX) body.firstChild.remove();
  const wrap = $("#ws-tail");
  wrap.scrollTop = wrap.scrollHeight;
  $("#ws-head") && ($("#ws-head").textContent = `head seq ${view.tail.last}`);
}

/** Follows the log past the last seq shown: pushed (SSE) where the server offers it, else polled. */
function followTail() {
  stopTail();
  const r = view.route;
  if (view.tail.paused || r.seq || r.tab !== "log") return;
  const key = view.tail.key;
  if (ctx.stream && typeof EventSource === "function") {
    const source = new EventSource(`${wsPath()}/stream?after=${view.tail.last}`);
    view.tail.source = source;
    tailState("following (pushed)");
    source.addEventListener("envelope", (ev) => {
      if (view.tail.key !== key) return;
      try { append([JSON.parse(ev.data)]); } catch { /* not an envelope: ignored */ }
    });
    source.addEventListener("error", () => {
      // The server ends each batch; EventSource reconnects by itself with the last id.
      if (source.readyState === EventSource.CLOSED) { view.tail.source = null; tailState("stream closed: polling"); poll(key); }
    });
    return;
  }
  tailState("following (polled)");
  poll(key);
}

function poll(key) {
  view.tail.timer = setTimeout(async () => {
    view.tail.timer = null;
    if (view.tail.key !== key || view.tail.paused) return;
    if (ctx.live()) {
      try {
        const page = await ctx.api.get(`${wsPath()}/log`, { after: view.tail.last, limit: 500 });
        if (view.tail.key !== key) return;
        append(page.items);
      } catch (e) {
        tailState(`poll failed: ${e.message}`);
      }
    }
    if (view.tail.key === key && !view.tail.paused) poll(key);
  }, POLL_MS);
}

function togglePause() {
  view.tail.paused = !view.tail.paused;
  const b = $("#ws-pause");
  if (b) {
    b.textContent = view.tail.paused ? "Resume" : "Pause";
    b.setAttribute("aria-pressed", view.tail.paused ? "true" : "false");
  }
  if (view.tail.paused) { stopTail(); tailState("paused"); } else { followTail(); }
}

async function showEnvelope() {
  const r = view.route;
  const aside = $("#ws-env");
  if (!aside) return;
  if (!r.env) { aside.hidden = true; clear(aside); return; }
  aside.hidden = false;
  const one = await load(aside, () => ctx.api.get(`${wsPath()}/envelopes/${encodeURIComponent(r.env)}`));
  if (!one) return;
  const e = one.envelope;
  const close = link(here({ type: r.type, seq: r.seq, last: r.last }), "×", { class: "close", title: "Close (Esc)", "aria-label": "Close" });
  clear(aside,
    h("div", { class: "detail-head" }, close, h("h2", null, e.event.type || "(no type)")),
    h("dl", { class: "kv" },
      h("dt", null, "seq"), h("dd", null, String(e.seq)),
      h("dt", null, "id"), h("dd", { class: "mono" }, e.id),
      h("dt", null, "time"), h("dd", null, timeEl(e.ts)),
      h("dt", null, "actor"), h("dd", { class: "mono" }, compact(e.actor)),
      h("dt", null, "correlation"), h("dd", { class: "mono" }, e.correlation_id),
      h("dt", null, "causation"), h("dd", { class: "mono" }, e.causation ? compact(e.causation) : "– (nothing caused it: a source, a user or the system)"),
      e.traceparent ? [h("dt", null, "traceparent"), h("dd", { class: "mono" }, e.traceparent)] : null),
    h("h3", null, "Causal chain"),
    chainTree(one),
    one.truncated ? h("p", { class: "muted" }, "The correlation is longer than the part looked through.") : null,
    h("h3", null, "Event"),
    h("pre", { class: "json", id: "ws-env-json" }, JSON.stringify(e.event, null, 2)));
}

/** The correlation's envelopes as a tree (each under the envelope that fired the run that
 * caused it), on a timeline from the root's time. */
function chainTree(one) {
  const nodes = one.chain;
  if (!nodes.length) return h("p", { class: "muted" }, "–");
  const bySeq = new Map(nodes.map((n) => [n.seq, n]));
  const children = new Map();
  const roots = [];
  for (const n of nodes) {
    if (n.parent_seq !== null && bySeq.has(n.parent_seq)) {
      if (!children.has(n.parent_seq)) children.set(n.parent_seq, []);
      children.get(n.parent_seq).push(n);
    } else roots.push(n);
  }
  const t0 = toSeconds(nodes[0].ts);
  const me = one.envelope.seq;
  const causes = new Set(one.causes);
  const caused = new Set(one.caused);
  const item = (n, depth) => {
    const role = n.seq === me ? "this" : causes.has(n.seq) ? "cause" : caused.has(n.seq) ? "caused" : "related";
    const offset = toSeconds(n.ts) - t0;
    return h("li", { class: `chain-node ${role}`, dataset: { seq: String(n.seq) } },
      h("span", { class: "offset", title: timeText(n.ts) }, `+${span(offset)}`),
      h("span", { class: "bar-track" }, h("span", { class: "bar-dot", style: null })),
      link(here({ env: n.id }), `#${n.seq} ${n.type}`, { class: "env-link" }),
      n.rule ? h("span", { class: "muted" }, ` ← ${n.rule} (run ${n.run_id})`) : n.run_id ? h("span", { class: "muted" }, ` ← run ${n.run_id}`) : null,
      role !== "related" ? h("span", { class: `role ${role}` }, role === "this" ? "this envelope" : role === "cause" ? "caused it" : "it caused") : null,
      children.has(n.seq) && depth < 32 ? h("ul", null, children.get(n.seq).map((c) => item(c, depth + 1))) : null);
  };
  return h("ul", { class: "chain", id: "ws-chain" }, roots.map((n) => item(n, 0)));
}

// --- Runs ----------------------------------------------------------------------------------------

function dueCell(item) {
  const run = item.run;
  if (item.held_by) {
    return h("span", { class: "held" }, "held by ", link(here({ tab: "runs", rule: run.rule, scope: run.scope_key }), item.held_by.id, { class: "mono" }), ` (${item.held_by.status})`);
  }
  if (item.due) return h("span", { class: "due" }, run.status === "running" ? "due again (lease lapsed)" : "due now");
  if (run.status === "pending" || run.status === "retrying") return h("span", { class: "muted" }, "waits: ", timeEl(run.next_attempt_at));
  return "";
}

async function showRuns(body) {
  const r = view.route;
  const status = h("select", { id: "ws-status", "aria-label": "Status" }, h("option", { value: "" }, "any status"), RUN_STATUSES.map((s) => h("option", { value: s, selected: s === r.status }, s)));
  const rule = h("input", { type: "search", id: "ws-rule", placeholder: "rule", value: r.rule || null, "aria-label": "Rule" });
  const scope = h("input", { type: "search", id: "ws-scope", placeholder: "scope key", value: r.scope || null, "aria-label": "Scope" });
  const apply = () => go(here({ status: status.value, rule: rule.value.trim(), scope: scope.value.trim(), where: r.where }), { replace: true });
  const runsWhere = makeWhereBox({
    id: "ws-runs-where",
    navigate: ({ where }) => go(here({ status: r.status, rule: r.rule, scope: r.scope, where })),
    suggest: (path) => ctx.api.get(`${wsPath()}/suggest`, { of: "runs", path }),
    placeholder: 'scope.customer = "c-17" and event.service = auth',
    label: "Where: a query over the runs' rule, status, scope, times and the event that fired them",
    syntax: "scope.customer = c-17, status = dead, rule exists, event.service = auth (the firing event), " +
      "due < -5m, attempts >= 3, fired_seq > 100",
  });
  runsWhere.sync(r);
  status.addEventListener("change", apply);
  rule.addEventListener("change", apply);
  scope.addEventListener("change", apply);
  const list = h("div", { class: "table-wrap", id: "ws-runs" });
  const pager = h("div", { class: "pager", id: "ws-pager" });
  const a = actionCtx();
  const retryDead = wsAction(a, {
    label: "Retry dead runs", id: "ws-retry-dead", cls: "small ghost",
    title: r.rule ? `Retry every dead run of ${r.rule}, as reflexr's retry_run does` : "Retry every dead run of this workspace, as reflexr's retry_run does",
    question: r.rule ? `Retry every dead run of ${r.rule}?` : "Retry every dead run of this workspace?",
    path: `${wsPath()}/runs/retry-dead`, json: r.rule ? { rule: r.rule } : {},
    done: (b) => `${b.retried} dead run(s) retried: pending, due now, with a fresh retry budget.`,
  });
  clear(body, wsResult(), h("div", { class: "filters" }, status, rule, scope, retryDead,
    h("span", { class: "muted" }, "Due now, or held by an earlier run of its scope (rules ordered by scope), by the stored rules' policy.")), runsWhere.root, list, pager);
  const page = await load(list, () => whereGet(ctx.api, runsWhere, `${wsPath()}/runs`, { status: r.status, rule: r.rule, scope: r.scope, cursor: r.cursor, where: r.where || undefined }));
  if (!page) return;
  if (page.search) {
    runsWhere.note(`scanned ${page.search.scanned} runs: ${page.search.matches} matches${page.search.done ? "; every run examined" : "; Next ▶ scans on"}`);
  }
  if (!page.items.length) { clear(list, empty("No runs", "No run matches these filters.")); return; }
  clear(list, grid([
    { label: "Run", class: "id", cell: (i) => h("span", { class: "mono", title: i.run.id }, i.run.id) },
    { label: "Rule", class: "id", cell: (i) => link(here({ tab: "runs", rule: i.run.rule }), i.run.rule) },
    { label: "Scope", class: "id", cell: (i) => link(here({ tab: "runs", rule: i.run.rule, scope: i.run.scope_key }), i.run.scope_key) },
    { label: "Status", cell: (i) => [pill(i.run.status), i.ordered ? h("span", { class: "chip", title: i.blocking ? "ordered by scope; a dead run blocks its scope" : "ordered by scope" }, i.blocking ? "ordered·blocking" : "ordered") : null] },
    { label: "Fired", class: "num", cell: (i) => String(i.run.fired_seq) },
    { label: "Attempts", class: "num", cell: (i) => String(i.run.attempts) },
    { label: "Next attempt", class: "when", cell: (i) => timeEl(i.run.next_attempt_at) },
    { label: "Due / held", cell: dueCell },
    { label: "Lease", cell: (i) => (i.lease ? h("span", { class: i.lease.lapsed ? "lapsed" : "held-lease" }, `${i.lease.holder} · ${i.lease.lapsed ? "lapsed" : "expires"} `, timeEl(i.lease.expires_at)) : "–") },
    { label: "Error", class: "data", cell: (i) => (i.run.error ? h("span", { title: i.run.error }, i.run.error) : "") },
    ...(!a.writable ? [] : [{ label: "", cell: (i) => (RETRYABLE.includes(i.run.status) ? wsAction(a, {
      label: "Retry", title: "Make it runnable now (a finished run gets a fresh retry budget), as reflexr's retry_run",
      question: `Retry run ${i.run.id}?`, path: `${wsPath()}/runs/${encodeURIComponent(i.run.id)}/retry`,
      done: (b) => `Run ${b.run.id} is pending, due now (fact ${b.fact}).`,
    }) : null) }]),
  ], page.items, { rowProps: (i) => ({ class: i.due ? "due-row" : i.held_by ? "held-row" : null }) }));
  clear(pager,
    h("button", { type: "button", disabled: !r.cursor, onclick: () => go(here({ status: r.status, rule: r.rule, scope: r.scope, where: r.where })) }, "« First"),
    h("span", { class: "where" }, `${page.items.length} shown`),
    h("button", { type: "button", id: "ws-next", disabled: !page.next_cursor, onclick: () => go(here({ status: r.status, rule: r.rule, scope: r.scope, where: r.where, cursor: page.next_cursor })) }, "Next ▶"));
}

// ---------------------------------------------------------------------------------------------
// Keyboard: j/k move, Enter opens, Esc closes or goes up, space pauses the tail, g jumps.

/** Handles a key in this view; `true` if it did. */
export function onKey(e) {
  const r = view.route;
  const rows = [...document.querySelectorAll("#main .ws-grid tbody tr")];
  const move = (delta) => {
    if (!rows.length) return;
    view.selected = Math.max(0, Math.min(rows.length - 1, (view.selected < 0 ? (delta > 0 ? -1 : rows.length) : view.selected) + delta));
    rows.forEach((tr, i) => {
      tr.classList.toggle("sel", i === view.selected);
      tr.setAttribute("aria-selected", i === view.selected ? "true" : "false");
      if (i === view.selected) tr.scrollIntoView({ block: "nearest" });
    });
  };
  switch (e.key) {
    case "Escape":
      if (r.env) go(here({ type: r.type, seq: r.seq, last: r.last }));
      else if (r.history) go(here({}));
      else if (r.tenant) go({ ...parse("") });
      else return false;
      return true;
    case "j": case "ArrowDown": move(1); return true;
    case "k": case "ArrowUp": move(-1); return true;
    case "Enter": case "o": {
      const a = rows[view.selected] && rows[view.selected].querySelector("a");
      if (a) a.click();
      return true;
    }
    case " ":
      if (r.tenant && r.tab === "log") { togglePause(); return true; }
      return false;
    case "g":
      if ($("#ws-seq")) { $("#ws-seq").focus(); return true; }
      return false;
    case "n": case "ArrowRight":
      if ($("#ws-next")) { $("#ws-next").click(); return true; }
      return false;
    default:
      if (r.tenant && /^[1-6]$/.test(e.key)) { go(here({ tab: TABS[Number(e.key) - 1] })); return true; }
      return false;
  }
}

/** Sets up the view: `api` (the client), `now()` (the server's clock), `errorBox`, `live()`
 * (whether live refresh is on) and `stream` (the server pushes the tail). */
export function init(context) {
  ctx = context;
}
