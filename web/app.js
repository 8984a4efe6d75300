// The execstore monitor UI: plain DOM, no framework.
//
// Rule of this file: stored data only ever reaches the page as text (text nodes via `h()`
// and `textContent`); no HTML string is ever parsed. URLs built here are always relative
// query strings ("?view=..."), never taken from stored data.

import { ApiError, createClient, token } from "./api.js";
import { $, absTime, add, clear, h, span } from "./dom.js";
import { ago, emptyBox, jsonTree, now, setServerNow, statusPill, table, timeEl, until } from "./format.js";
import * as records from "./records.js";
import { linkTo, PAGE_SIZES, parseRoute, routeSearch, STATUS_SHORT, STATUSES } from "./route.js";
import * as workspaces from "./workspaces.js";
import * as graph from "./graph.js";
import * as filters from "./filters.js";
import * as actions from "./actions.js";

const POLL_MS = 2000;

// DOM helpers are in dom.js, times, tables and the JSON tree in format.js, an execution's
// records (timeline, timers, outbox, spawns) in records.js.

// ---------------------------------------------------------------------------------------------
// State

let api;
const state = {
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
};
let listSeq = 0;
let detailSeq = 0;
let viewSeq = 0;

function navigate(changes, { replace = false } = {}) {
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
  render(before);
}

// ---------------------------------------------------------------------------------------------
// Banner: errors that are not about one panel.

function describe(error) {
  if (error instanceof ApiError) return `${error.message} (${error.code})`;
  return String(error && error.message ? error.message : error);
}

function showBanner(message, retry) {
  const banner = $("#banner");
  clear(
    banner,
    h("span", { class: "msg" }, message),
    retry ? h("button", { type: "button", onclick: () => { banner.hidden = true; retry(); } }, "Retry") : null,
    h("button", { type: "button", class: "ghost", onclick: () => { banner.hidden = true; }, "aria-label": "Dismiss" }, "×"),
  );
  banner.hidden = false;
}

function errorBox(error, retry) {
  return h(
    "div",
    { class: "state error", role: "alert" },
    h("strong", null, error instanceof ApiError && error.status === 404 ? "Not found" : "Could not load this"),
    h("p", null, describe(error)),
    retry ? h("button", { type: "button", onclick: retry }, "Retry") : null,
  );
}

/** Shows "Loading…" in `el` only if the data takes more than a moment (no flicker). */
function loadingLater(el, text = "Loading…") {
  const timer = setTimeout(() => {
    if (!el.querySelector(".state.loading")) {
      el.prepend(h("div", { class: "state loading", "aria-busy": "true" }, h("span", { class: "spinner" }), text));
    }
  }, 150);
  return () => {
    clearTimeout(timer);
    const shown = el.querySelector(".state.loading");
    if (shown) shown.remove();
  };
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

function execLink(id, text = id, extra = {}) {
  return h(
    "a",
    {
      href: linkTo({ ...keepListFilters(), id }),
      class: "exec-link",
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

function keepListFilters() {
  const r = state.route;
  return { status: r.status, definition: r.definition, roots: r.roots, q: r.q, ...filters.pickFilters(r), limit: r.limit, cursor: r.view === "executions" ? r.cursor : "" };
}

function writeButton(label, run, what) {
  if (!state.info || !state.info.writable) return null;
  let armed = null;
  const button = h("button", {
    type: "button",
    class: "danger small",
    title: what,
    onclick: async () => {
      if (!token.get()) {
        $("#token-input") && $("#token-input").focus();
        showBanner("Enter the monitor's write token (top right) to do this.");
        return;
      }
      if (!armed) {
        button.textContent = "Confirm?";
        armed = setTimeout(() => { armed = null; button.textContent = label; }, 3000);
        return;
      }
      clearTimeout(armed);
      armed = null;
      button.disabled = true;
      try {
        await run();
        refresh();
      } catch (e) {
        button.disabled = false;
        button.textContent = label;
        showBanner(describe(e));
      }
    },
  }, label);
  return button;
}

/** What the control actions (actions.js) need from the page. */
function actionCtx() {
  const r = state.route;
  return {
    api,
    writable: Boolean(state.info && state.info.writable),
    bulkLimit: state.info && state.info.bulk_limit,
    hasToken: () => Boolean(token.get()),
    needToken: () => {
      $("#token-input") && $("#token-input").focus();
      showBanner("Enter the monitor's write token (top right) to do this.");
    },
    refresh,
    listParams: () => ({ status: r.status.join(","), definition: r.definition, roots_only: r.roots, q: r.q, ...filters.apiParams(r) }),
  };
}

// ---------------------------------------------------------------------------------------------
// Executions view: filters, status chart, the list and the detail.

let shell = null;

function executionsShell() {
  if (shell) return shell;
  const search = h("input", {
    type: "search", id: "q", placeholder: "id starts with…", autocomplete: "off", spellcheck: "false",
    "aria-label": "Search by id prefix",
  });
  const definition = h("input", {
    type: "search", id: "definition", placeholder: "any definition", list: "definitions", autocomplete: "off",
    "aria-label": "Definition",
  });
  const roots = h("input", { type: "checkbox", id: "roots" });
  const limit = h("select", { id: "limit", "aria-label": "Page size" }, PAGE_SIZES.map((n) => h("option", { value: n }, `${n} / page`)));
  let debounce;
  const later = (f) => { clearTimeout(debounce); debounce = setTimeout(f, 300); };
  search.addEventListener("input", () => later(() => navigate({ q: search.value.trim(), id: state.route.id }, { replace: true })));
  definition.addEventListener("input", () => later(() => navigate({ definition: definition.value.trim() }, { replace: true })));
  roots.addEventListener("change", () => navigate({ roots: roots.checked }));
  limit.addEventListener("change", () => navigate({ limit: Number(limit.value) }));
  const chart = h("div", { class: "chart", id: "chart", role: "group", "aria-label": "Executions per status: click to filter" });
  const tableWrap = h("div", { class: "table-wrap", id: "list", tabindex: "-1" });
  const pager = h("div", { class: "pager", id: "pager" });
  const detail = h("aside", { class: "detail", id: "detail", "aria-label": "Execution detail" });
  const listPane = h(
    "section",
    { class: "list-pane" },
    h(
      "div",
      { class: "filters" },
      h("label", { class: "field grow" }, h("span", null, "Search"), search),
      h("label", { class: "field" }, h("span", null, "Definition"), definition, h("datalist", { id: "definitions" })),
      h("label", { class: "check" }, roots, " roots only"),
      limit,
      h("button", { type: "button", class: "ghost", id: "clear", onclick: () => navigate({ status: [], definition: "", roots: false, q: "", ...filters.CLEARED }) }, "Clear filters"),
    ),
    filters.filterControls(navigate),
    chart,
    tableWrap,
    pager,
  );
  shell = { root: h("div", { class: "executions" }, listPane, detail), search, definition, roots, limit, chart, tableWrap, pager, detail };
  return shell;
}

function syncFilters() {
  const r = state.route;
  const s = executionsShell();
  if (document.activeElement !== s.search) s.search.value = r.q;
  if (document.activeElement !== s.definition) s.definition.value = r.definition;
  s.roots.checked = r.roots;
  s.limit.value = String(r.limit);
  filters.syncFilterControls(r);
  $("#clear").hidden = !(r.status.length || r.definition || r.roots || r.q || filters.hasFilters(r));
  s.root.classList.toggle("with-detail", Boolean(r.id));
}

async function loadCounts({ quiet = false } = {}) {
  const r = state.route;
  const seq = listSeq;
  try {
    const counts = await api.get("api/counts", { definition: r.definition, roots_only: r.roots });
    if (seq !== listSeq) return;
    state.counts = counts;
    renderChart();
    renderPager();
    if (!state.firstCountsRender) {
      state.firstCountsRender = true;
      performance.mark("execstore:counts-rendered");
    }
  } catch (e) {
    if (!quiet) clear(executionsShell().chart, h("span", { class: "muted" }, `counts unavailable: ${describe(e)}`));
  }
}

function renderChart() {
  const { chart } = executionsShell();
  const counts = state.counts ? state.counts.counts : {};
  const max = Math.max(1, ...STATUSES.map((s) => counts[s] || 0));
  const selected = state.route.status;
  clear(
    chart,
    STATUSES.map((s) => {
      const n = counts[s] || 0;
      const bar = h("span", { class: `bar s-${s.toLowerCase()}` });
      bar.style.height = `${n ? Math.max(4, Math.round((n / max) * 100)) : 0}%`;
      const on = selected.includes(s);
      return h(
        "button",
        {
          type: "button",
          class: `col${on ? " on" : ""}${selected.length && !on ? " dim" : ""}`,
          "aria-pressed": on ? "true" : "false",
          title: `${n.toLocaleString()} ${s}: click to ${on ? "remove from" : "add to"} the filter`,
          dataset: { status: s },
          onclick: () => navigate({ status: on ? selected.filter((x) => x !== s) : STATUSES.filter((x) => x === s || selected.includes(x)) }),
        },
        h("span", { class: "n" }, n.toLocaleString()),
        h("span", { class: "track" }, bar),
        h("span", { class: "label", "aria-label": s }, h("span", { class: "full" }, s), h("span", { class: "short", "aria-hidden": "true" }, STATUS_SHORT[s])),
      );
    }),
    h("div", { class: "total" }, h("strong", null, state.counts ? state.counts.total.toLocaleString() : "…"), h("span", null, state.route.definition || state.route.roots ? " matching definition / roots" : " executions")),
  );
}

async function loadList({ quiet = false } = {}) {
  const r = state.route;
  const seq = ++listSeq;
  const { tableWrap } = executionsShell();
  const done = quiet ? () => {} : loadingLater(tableWrap);
  try {
    const page = await api.get("api/executions", {
      status: r.status.join(","), definition: r.definition, roots_only: r.roots, q: r.q, cursor: r.cursor, limit: r.limit,
      ...filters.apiParams(r),
    });
    if (seq !== listSeq) return;
    done();
    const previous = state.versions;
    state.versions = new Map(page.items.map((e) => [e.id, e.version]));
    state.list = page;
    renderTable(quiet ? previous : null);
    renderPager();
    if (!state.firstListRender) {
      state.firstListRender = true;
      performance.mark("execstore:list-rendered");
    }
  } catch (e) {
    if (seq !== listSeq) return;
    done();
    if (quiet) return;
    state.list = null;
    clear(tableWrap, errorBox(e, () => loadList()));
    renderPager();
  }
}

function renderTable(previousVersions) {
  const { tableWrap } = executionsShell();
  const page = state.list;
  const r = state.route;
  if (!page.items.length) {
    const filtered = r.status.length || r.definition || r.roots || r.q || filters.hasFilters(r);
    clear(
      tableWrap,
      actions.bulkBar(actionCtx()),
      unreadableBox(page.errors),
      filtered
        ? emptyBox("No executions match these filters", r.q ? `No id starts with "${r.q}" among them.` : null,
          h("button", { type: "button", onclick: () => navigate({ status: [], definition: "", roots: false, q: "", ...filters.CLEARED }) }, "Clear filters"))
        : r.cursor
          ? emptyBox("No more executions", "This page is past the end.", h("button", { type: "button", onclick: () => navigate({ cursor: "" }) }, "First page"))
          : emptyBox("This store has no executions yet", state.info && !state.info.prefix ? "A file written by harel 0.9 needs --prefix harel." : null),
    );
    return;
  }
  for (const e of page.items) state.definitions.add(e.definition_id);
  clear($("#definitions"), [...state.definitions].sort().map((d) => h("option", { value: d })));
  const selectedIndex = page.items.findIndex((e) => e.id === r.id);
  if (selectedIndex >= 0) state.selected = selectedIndex;
  else if (state.selected >= page.items.length) state.selected = page.items.length - 1;
  const columns = [
    { label: "Id", class: "id mono", cell: (e) => h("span", { title: e.id }, e.parent_id ? h("span", { class: "child-mark", title: `child of ${e.parent_id}` }, "↳ ") : null, e.id) },
    { label: "Definition", class: "def", cell: (e) => e.definition_id },
    { label: "Status", class: "status", cell: (e) => statusPill(e.status) },
    { label: "Outcome", class: "outcome", cell: (e) => e.outcome || h("span", { class: "muted" }, "–") },
    { label: "Active state", class: "path mono", cell: (e) => e.active_path || h("span", { class: "muted" }, "–") },
    { label: "Ver", class: "num", cell: (e) => e.version },
    { label: "Updated", class: "when", cell: (e) => (e.updated_at ? timeEl(e.updated_at) : h("span", { class: "muted" }, "–")) },
  ];
  const pick = actions.selectColumn(actionCtx(), page.items);
  if (pick) columns.unshift(pick);
  const grid = table(columns, page.items, {
    rowProps: (e, i) => ({
      class: [
        e.id === r.id ? "open" : "",
        i === state.selected ? "sel" : "",
        previousVersions && previousVersions.get(e.id) !== e.version ? "changed" : "",
      ].join(" ").trim() || null,
      dataset: { id: e.id, index: i },
      "aria-selected": i === state.selected ? "true" : "false",
      onclick: (ev) => {
        if (ev.target.closest("a,button")) return;
        state.selected = i;
        navigate({ id: e.id });
      },
    }),
  });
  grid.classList.add("executions-grid");
  clear(tableWrap, actions.bulkBar(actionCtx()), unreadableBox(page.errors), grid);
}

/** The rows the store cannot read and the listing left out (its `errors`), named as text. */
function unreadableBox(errors) {
  if (!Array.isArray(errors) || !errors.length) return null;
  const n = errors.length;
  return h(
    "div",
    { class: "unreadable", role: "status" },
    h("strong", null, `${n} execution${n === 1 ? "" : "s"} cannot be read and ${n === 1 ? "is" : "are"} left out:`),
    h("ul", null, errors.map((e) => h("li", null, h("code", null, String(e.id)), ` (${e.field}): ${e.message}`))),
  );
}

function renderPager() {
  const { pager } = executionsShell();
  const r = state.route;
  const page = state.list;
  const pageNo = r.cursor ? (state.stack.length ? state.stack.length + 1 : null) : 1;
  let total = null;
  if (state.counts && !r.q && !filters.hasFilters(r)) {
    const c = state.counts.counts;
    total = (r.status.length ? r.status : STATUSES).reduce((sum, s) => sum + (c[s] || 0), 0);
  }
  let range = "";
  if (page && page.items.length && pageNo) {
    const from = (pageNo - 1) * r.limit + 1;
    range = `${from.toLocaleString()}–${(from + page.items.length - 1).toLocaleString()}`;
  } else if (page && page.items.length) {
    range = `${page.items.length} rows`;
  }
  clear(
    pager,
    h("button", { type: "button", id: "first", disabled: !r.cursor, onclick: () => { state.stack = []; navigate({ cursor: "" }); } }, "« First"),
    h("button", { type: "button", id: "prev", disabled: !r.cursor, onclick: prevPage }, "◀ Prev"),
    h("span", { class: "where", id: "range" }, range, total !== null ? ` of ${total.toLocaleString()}` : "", pageNo ? ` · page ${pageNo}` : ""),
    h("button", { type: "button", id: "next", disabled: !(page && page.next_cursor), onclick: nextPage }, "Next ▶"),
  );
}

function nextPage() {
  const page = state.list;
  if (!page || !page.next_cursor) return;
  state.stack.push(state.route.cursor);
  state.selected = 0;
  navigate({ cursor: page.next_cursor });
}

function prevPage() {
  if (!state.route.cursor) return;
  const previous = state.stack.length ? state.stack.pop() : "";
  state.selected = 0;
  navigate({ cursor: previous });
}

// ---------------------------------------------------------------------------------------------
// Execution detail

async function loadDetail({ quiet = false } = {}) {
  const id = state.route.id;
  const { detail } = executionsShell();
  if (!id) {
    detail.replaceChildren();
    return;
  }
  const seq = ++detailSeq;
  const path = `api/executions/${encodeURIComponent(id)}`;
  if (!quiet && detail.dataset.id !== id) {
    clear(detail, detailHeader(id, null));
  }
  const done = quiet ? () => {} : loadingLater(detail, "Loading the execution…");
  try {
    const [one, trace, pending] = await Promise.all([api.get(path), api.get(`${path}/trace`), api.get(`${path}/pending`)]);
    if (seq !== detailSeq) return;
    done();
    const open = records.rememberOpen(detail);
    detail.dataset.id = id;
    clear(detail, renderDetail(one, trace, pending));
    records.restoreOpen(detail, open);
  } catch (e) {
    if (seq !== detailSeq) return;
    done();
    if (quiet) return;
    delete detail.dataset.id;
    clear(detail, detailHeader(id, null), errorBox(e, () => loadDetail()));
  }
}

/** Which collapsible sections the user opened or closed, kept across a live refresh. */
function detailHeader(id, exe) {
  return h(
    "div",
    { class: "detail-head" },
    h("button", { type: "button", class: "ghost close", title: "Close (Esc)", "aria-label": "Close", onclick: () => navigate({ id: "" }) }, "×"),
    h("div", { class: "title" }, h("span", { class: "mono id", id: "detail-id" }, id), exe ? statusPill(exe.status) : null),
    exe ? h("div", { class: "sub" }, exe.definition_id, exe.active_path ? h("span", { class: "mono" }, ` · ${exe.active_path}`) : null) : null,
  );
}

function renderDetail(one, trace, pending) {
  const exe = one.execution;
  setServerNow(pending.now);
  const field = (label, value) => (value === null || value === undefined || value === "" ? null : [h("dt", null, label), h("dd", null, value)]);
  const summary = h(
    "dl",
    { class: "summary" },
    field("Definition", [exe.definition_id, " ", h("a", { href: graph.definitionHref(exe.definition_id), class: "def-graph-link" }, "statechart")]),
    field("Definition FQN", exe.definition_fqn),
    field("Status", statusPill(exe.status)),
    field("Outcome", exe.outcome),
    field("Active state", exe.active_path && h("span", { class: "mono" }, exe.active_path)),
    field("Root path", exe.root_path && h("span", { class: "mono" }, exe.root_path)),
    field("Version", String(exe.version)),
    field("Events", String(exe.processed_events)),
    field("Priority", exe.priority ? String(exe.priority) : null),
    field("Created", exe.created_at && [absTime(exe.created_at), " ", h("span", { class: "muted" }, `(${ago(exe.created_at)})`)]),
    field("Updated", exe.updated_at && [absTime(exe.updated_at), " ", h("span", { class: "muted" }, `(${ago(exe.updated_at)})`)]),
    field("Finished", exe.finished_at && absTime(exe.finished_at)),
    field("Expires", exe.expires_at && [absTime(exe.expires_at), " ", h("span", { class: "muted" }, `(${until(exe.expires_at)})`)]),
    field("Deferred", exe.deferred && exe.deferred.length ? `${exe.deferred.length} events` : null),
  );
  const error = exe.error ? h("div", { class: "error-box" }, h("strong", null, "Error"), h("pre", null, exe.error)) : null;
  const timersOverdue = pending.timers.filter((t) => t.fire_at < pending.now).length;
  return [
    detailHeader(exe.id, exe),
    error,
    summary,
    actions.detailSection(actionCtx(), exe),
    records.renderFamily(one),
    graph.executionSection(api, exe),
    records.section("timeline", "Timeline", `${trace.items.length} steps`, records.renderTimeline(trace)),
    records.section("context", "Context", `${Object.keys(exe.context || {}).length} keys`, h("div", { class: "json", id: "context" }, jsonTree(exe.context, { open: 2 }))),
    records.section("timers", "Timers", timersOverdue ? `${pending.timers.length} (${timersOverdue} overdue)` : pending.timers.length, records.renderTimers(pending.timers, { withExecution: false })),
    records.section("outbox", "Outbox (addressed to it)", pending.outbox.length, records.renderOutbox(pending.outbox, { withTarget: false })),
    records.section("spawns", "Spawns (pending children)", pending.spawns.length, records.renderSpawns(pending.spawns, { withParent: false })),
    pending.truncated ? h("p", { class: "muted" }, "Only the first 200,000 timers, outbox entries and spawns of the store were looked through.") : null,
    records.section("raw", "Stored JSON", null, h("div", { class: "json" }, jsonTree(exe, { open: 1 })), { open: false }),
  ];
}

async function loadStoreView({ quiet = false } = {}) {
  const r = state.route;
  const seq = ++viewSeq;
  const main = $("#main");
  let root = $(".store-view", main);
  if (!root || root.dataset.view !== r.view) {
    const titles = {
      outbox: ["Outbox", "Events committed but not yet delivered by the relay, oldest first. Older than 5 minutes: highlighted."],
      timers: ["Timers", "Armed timers, soonest first. Past their time and not fired yet: highlighted."],
      spawns: ["Spawns", "Children forked but not yet created by the relay, oldest first."],
    };
    const [title, blurb] = titles[r.view];
    root = h(
      "section",
      { class: "store-view", dataset: { view: r.view } },
      h("div", { class: "view-head" }, h("h1", null, title), h("p", { class: "muted" }, blurb),
        r.view === "timers" ? h("label", { class: "check" }, h("input", { type: "checkbox", id: "due-only", checked: r.due, onchange: (e) => navigate({ due: e.target.checked }) }), " due only") : null),
      h("div", { class: "table-wrap", id: "store-list" }),
      h("div", { class: "pager", id: "store-pager" }),
    );
    clear(main, root);
  }
  const list = $("#store-list", root);
  const done = quiet ? () => {} : loadingLater(list);
  try {
    let page;
    if (r.view === "timers") page = await api.get("api/timers", { cursor: r.after, limit: r.limit, due_before: r.due ? "now" : "" });
    else page = await api.get(`api/${r.view}`, { after: r.after, limit: r.limit });
    if (seq !== viewSeq) return;
    done();
    setServerNow(page.now);
    const render = { outbox: records.renderOutbox, timers: records.renderTimers, spawns: records.renderSpawns }[r.view];
    clear(list, render(page.items));
    const next = r.view === "timers" ? page.next_cursor : page.next_after;
    const overdue = list.querySelectorAll("tr.overdue").length;
    clear(
      $("#store-pager", root),
      h("button", { type: "button", disabled: !r.after, onclick: () => { state.stack = []; navigate({ after: "" }); } }, "« First"),
      h("button", { type: "button", disabled: !r.after, onclick: () => navigate({ after: state.stack.pop() || "" }) }, "◀ Prev"),
      h("span", { class: "where" }, `${page.items.length} shown`, overdue ? h("span", { class: "overdue-text" }, ` · ${overdue} overdue`) : ""),
      h("button", { type: "button", id: "next", disabled: next === null || next === undefined, onclick: () => { state.stack.push(r.after); navigate({ after: String(next) }); } }, "Next ▶"),
    );
  } catch (e) {
    if (seq !== viewSeq) return;
    done();
    if (!quiet) clear(list, errorBox(e, () => loadStoreView()));
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering a route

function render(before) {
  const r = state.route;
  for (const a of document.querySelectorAll("[data-view]")) {
    a.classList.toggle("active", a.dataset.view === r.view);
    a.setAttribute("aria-current", a.dataset.view === r.view ? "page" : "false");
  }
  document.title = r.id ? `${r.id} · execstore` : `${r.view === "executions" ? "Executions" : r.view[0].toUpperCase() + r.view.slice(1)} · execstore`;
  if (r.view !== "workspaces") workspaces.leave();
  if (r.view === "workspaces") {
    shell && shell.root.remove();
    workspaces.show();
    return;
  }
  if (r.view === "definition") {
    shell && shell.root.remove();
    graph.showDefinition(api, $("#main"), r.definition);
    return;
  }
  if (r.view !== "executions") {
    shell && shell.root.remove();
    loadStoreView();
    return;
  }
  const s = executionsShell();
  const main = $("#main");
  if (s.root.parentNode !== main) clear(main, s.root);
  syncFilters();
  const listMoved = !before || before.view !== "executions" ||
    ["status", "definition", "roots", "q", "limit", "cursor", ...filters.FILTER_KEYS].some((k) => String(before[k]) !== String(r[k]));
  const countsMoved = !before || before.view !== "executions" || before.definition !== r.definition || before.roots !== r.roots;
  if (listMoved) loadList();
  else if (state.list) renderTable();
  if (countsMoved) loadCounts();
  else renderChart();
  if (!before || before.id !== r.id || before.view !== "executions") loadDetail();
}

/** Reads the current view again, quietly (live refresh, after a write, or `r`). */
function refresh() {
  const r = state.route;
  if (r.view === "executions") {
    loadList({ quiet: true });
    loadCounts({ quiet: true });
    if (r.id) loadDetail({ quiet: true });
  } else if (r.view === "workspaces") {
    workspaces.refresh();
  } else if (r.view === "definition") {
    graph.refreshDefinition(api, $("#main"), r.definition);
  } else {
    loadStoreView({ quiet: true });
  }
  const pulse = $("#pulse");
  pulse.classList.remove("beat");
  void pulse.offsetWidth;
  pulse.classList.add("beat");
}

// ---------------------------------------------------------------------------------------------
// Live updates: poll the store's change token; read again only when it moved.

async function poll() {
  if (state.live && !document.hidden) {
    try {
      const { token: changeToken, now: serverNow } = await api.get("api/changes");
      setServerNow(serverNow);
      if (state.changeToken !== null && changeToken !== state.changeToken) refresh();
      state.changeToken = changeToken;
      state.lastCheck = Date.now();
      $("#banner").dataset.kind === "poll" && ($("#banner").hidden = true);
    } catch (e) {
      showBanner(`Live refresh failed: ${describe(e)}`);
      $("#banner").dataset.kind = "poll";
    }
  }
  updateFresh();
  setTimeout(poll, POLL_MS);
}

function updateFresh() {
  const fresh = $("#fresh");
  if (!state.live) fresh.textContent = "paused";
  else if (state.lastCheck) {
    const age = (Date.now() - state.lastCheck) / 1000;
    fresh.textContent = age < 1.5 ? "up to date" : `checked ${span(age)} ago`;
  }
}

// ---------------------------------------------------------------------------------------------
// Keyboard

function onKey(e) {
  const tag = (e.target && e.target.tagName) || "";
  // Keys go to text fields; a focused checkbox or button leaves them to the list.
  const typing = tag === "SELECT" || tag === "TEXTAREA" ||
    (tag === "INPUT" && !["checkbox", "radio", "button"].includes(e.target.type));
  if (e.key === "Escape") {
    if (typing) { e.target.blur(); return; }
    if (state.route.view === "workspaces") { if (workspaces.onKey(e)) e.preventDefault(); return; }
    if (state.route.id) navigate({ id: "" });
    return;
  }
  if (typing || e.metaKey || e.ctrlKey || e.altKey) return;
  const r = state.route;
  if (r.view === "workspaces" && !["l", "L", "r"].includes(e.key)) {
    if (workspaces.onKey(e)) e.preventDefault();
    return;
  }
  const rows = state.list && r.view === "executions" ? state.list.items : [];
  const move = (delta) => {
    if (!rows.length) return;
    state.selected = Math.max(0, Math.min(rows.length - 1, (state.selected < 0 ? (delta > 0 ? -1 : rows.length) : state.selected) + delta));
    for (const tr of document.querySelectorAll(".executions-grid tbody tr")) {
      const on = Number(tr.dataset.index) === state.selected;
      tr.classList.toggle("sel", on);
      tr.setAttribute("aria-selected", on ? "true" : "false");
      if (on) tr.scrollIntoView({ block: "nearest" });
    }
  };
  switch (e.key) {
    case "j": case "ArrowDown": move(1); break;
    case "k": case "ArrowUp": move(-1); break;
    case "Enter": case "o":
      if (rows[state.selected]) navigate({ id: rows[state.selected].id });
      break;
    case "n": case "ArrowRight":
      if (r.view === "executions") nextPage(); else $("#store-pager #next") && $("#store-pager #next").click();
      break;
    case "p": case "ArrowLeft":
      if (r.view === "executions") prevPage();
      break;
    case "/":
      if (r.view === "executions") { $("#q").focus(); }
      break;
    case "l": case "L":
      $("#live").click();
      break;
    case "r":
      refresh();
      break;
    default:
      return;
  }
  e.preventDefault();
}

// ---------------------------------------------------------------------------------------------
// Start

async function loadInfo() {
  try {
    state.info = await api.get("api/info");
    setServerNow(state.info.now);
    const label = `${state.info.backend}: ${state.info.store}${state.info.prefix ? ` (prefix ${state.info.prefix})` : ""}`;
    $("#store").textContent = label;
    $("#store").title = label;
    // What the store holds: a reflexr user's database has no executions, a harel file no
    // workspace log; the views of what is not there are hidden.
    const holds = state.info.holds || { executions: true, workspaces: false };
    for (const a of document.querySelectorAll("[data-view]")) {
      a.hidden = a.dataset.view === "workspaces" ? !holds.workspaces : !holds.executions;
    }
    if (!holds.executions && state.route.view !== "workspaces") {
      history.replaceState(null, "", "?view=workspaces");
      state.route = parseRoute(location.search);
    }
    // What the monitor warns about the store (a workspace log at a schema version it does
    // not know...), as text.
    const warnings = Array.isArray(state.info.warnings) ? state.info.warnings : [];
    if (warnings.length) showBanner(`Warning: ${warnings.join(" ")}`);
    const mode = $("#mode");
    if (state.info.writable) {
      const input = h("input", { type: "password", id: "token-input", placeholder: "write token", autocomplete: "off", "aria-label": "Write token", value: token.get() || null });
      input.addEventListener("change", () => token.set(input.value.trim()));
      clear(mode, h("span", { class: "badge write" }, "writes on"), input);
    } else {
      clear(mode, h("span", { class: "badge", title: "Started without --token: nothing can be changed from here" }, "read-only"));
    }
  } catch (e) {
    showBanner(`Cannot read the monitor's info: ${describe(e)}`, () => location.reload());
  }
}

/** Starts the UI over `transport` (default: this page's server). */
export async function start({ transport } = {}) {
  api = createClient(transport ? { transport } : {});
  // A token handed over in the fragment (#token=...) is kept for the tab, then dropped from
  // the address bar so it is not bookmarked or shared.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get("token")) {
    token.set(fragment.get("token"));
    history.replaceState(null, "", location.pathname + location.search);
  }
  window.addEventListener("popstate", () => {
    const before = state.route;
    state.route = parseRoute(location.search);
    if (state.route.cursor !== before.cursor && state.stack[state.stack.length - 1] === state.route.cursor) state.stack.pop();
    render(before);
  });
  document.addEventListener("keydown", onKey);
  $("#live").addEventListener("change", (e) => {
    state.live = e.target.checked;
    document.body.classList.toggle("paused", !state.live);
    updateFresh();
    if (state.live) refresh();
  });
  for (const a of document.querySelectorAll("[data-view], [data-nav]")) {
    a.addEventListener("click", (e) => {
      if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      let view = a.dataset.view || a.dataset.nav;
      if (view === "executions" && state.info && state.info.holds && !state.info.holds.executions) view = "workspaces";
      state.stack = [];
      navigate({ ...parseRoute(""), view });
    });
  }
  records.init({
    api: () => api,
    writable: () => Boolean(state.info && state.info.writable),
    execLink,
    writeButton,
  });
  await loadInfo();
  workspaces.init({
    api,
    now,
    errorBox,
    live: () => state.live,
    // Over this page's own server the tail is pushed (SSE); a server without the stream
    // endpoint (the edge) answers 404 and the tail falls back to polling.
    stream: !transport,
  });
  render(null);
  poll();
}

if (!window.EXECSTORE_MANUAL_START) start();
