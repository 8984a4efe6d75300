// The executions view: its filters, the counts by status as a chart (click to filter), the
// list with its pager and bulk actions, and the open execution's detail beside it
// (detail.js). Everything it shows is in the URL (route.js).

import { $, clear, h } from "../dom.js";
import { emptyBox, statusPill, table, timeEl } from "../format.js";
import { PAGE_SIZES, STATUS_SHORT, STATUSES } from "../route.js";
import * as filters from "../filters.js";
import * as where from "../where.js";
import * as actions from "../actions.js";
import { actionCtx, api, describe, errorBox, execLink, loadingLater, navigate, state } from "../shell.js";
import * as detail from "./detail.js";
import * as savedViews from "../saved-views.js";

/** What the saved views' menu needs: the API, whether writes are on, and how to open one. */
function savedViewsCtx() {
  const ctx = actionCtx();
  return {
    api,
    get writable() {
      return actionCtx().writable;
    },
    hasToken: ctx.hasToken,
    needToken: ctx.needToken,
    open: (query) => {
      history.pushState(null, "", query ? `?${query}` : location.pathname);
      dispatchEvent(new PopStateEvent("popstate"));
    },
  };
}

let listSeq = 0;

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
    h("h1", { class: "view-title sr-only", id: "executions-title" }, "Executions"),
    h(
      "div",
      { class: "filters" },
      h("label", { class: "field grow" }, h("span", null, "Search"), search),
      h("label", { class: "field" }, h("span", null, "Definition"), definition, h("datalist", { id: "definitions" })),
      h("label", { class: "check" }, roots, " roots only"),
      limit,
      h("button", { type: "button", class: "ghost", id: "clear", onclick: () => navigate({ status: [], definition: "", roots: false, q: "", ...filters.CLEARED }) }, "Clear filters"),
      savedViews.menu(savedViewsCtx()),
    ),
    filters.filterControls(navigate),
    where.whereBox(navigate, api),
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
  where.syncWhereBox(r);
  $("#clear").hidden = !(r.status.length || r.definition || r.roots || r.q || filters.hasFilters(r));
  s.root.classList.toggle("with-detail", Boolean(r.id));
}

/** The list's filters as API parameters: the list and its counts take the same. */
function filterParams(r) {
  return { definition: r.definition, roots_only: r.roots, q: r.q, ...filters.apiParams(r) };
}

/** Whether route `r` filters the list beyond the statuses (the counts follow these). */
const filtered = (r) => Boolean(r.definition || r.roots || r.q || filters.hasFilters(r));

async function loadCounts({ quiet = false } = {}) {
  const r = state.route;
  const seq = listSeq;
  try {
    const counts = await api.get("api/counts", filterParams(r));
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
    h("div", { class: "total", id: "counts-total" }, h("strong", null, state.counts ? state.counts.total.toLocaleString() : "…"), h("span", null, filtered(state.route) ? " matching the filters" : " executions")),
  );
}

async function loadList({ quiet = false } = {}) {
  const r = state.route;
  const seq = ++listSeq;
  const { tableWrap } = executionsShell();
  const done = quiet ? () => {} : loadingLater(tableWrap);
  try {
    const page = await api.get("api/executions", { status: r.status.join(","), cursor: r.cursor, limit: r.limit, ...filterParams(r) });
    done();
    if (seq !== listSeq) return;
    const previous = state.versions;
    state.versions = new Map(page.items.map((e) => [e.id, e.version]));
    state.list = page;
    where.showWhereError(null);
    where.showScan(page.scan);
    renderTable(quiet ? previous : null);
    renderPager();
    if (!state.firstListRender) {
      state.firstListRender = true;
      performance.mark("execstore:list-rendered");
    }
  } catch (e) {
    done();
    if (seq !== listSeq) return;
    if (quiet) return;
    state.list = null;
    where.showWhereError(e);
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
          : emptyBox("This store has no executions yet", null),
    );
    return;
  }
  for (const e of page.items) state.definitions.add(e.definition_id);
  clear($("#definitions"), [...state.definitions].sort().map((d) => h("option", { value: d })));
  const selectedIndex = page.items.findIndex((e) => e.id === r.id);
  if (selectedIndex >= 0) state.selected = selectedIndex;
  else if (state.selected >= page.items.length) state.selected = page.items.length - 1;
  const columns = [
    // A real link (Tab reaches it, open in a new tab works); a plain click opens the detail.
    { label: "Id", class: "id mono", cell: (e) => [e.parent_id ? h("span", { class: "child-mark", title: `child of ${e.parent_id}` }, "↳ ") : null, execLink(e.id, e.id, {}, "row-link")] },
    { label: "Definition", class: "def", cell: (e) => e.definition_id },
    { label: "Status", class: "status", cell: (e) => statusPill(e.status) },
    { label: "Outcome", class: "outcome", cell: (e) => e.outcome || h("span", { class: "muted" }, "–") },
    { label: "Active state", class: "path mono", cell: (e) => e.active_path || h("span", { class: "muted" }, "–") },
    { label: "Ver", class: "num", cell: (e) => e.version },
    // The time the list is ordered by: created in the created order, else updated.
    r.order === "created"
      ? { label: "Created", class: "when", cell: (e) => (e.created_at ? timeEl(e.created_at) : h("span", { class: "muted" }, "–")) }
      : { label: "Updated", class: "when", cell: (e) => (e.updated_at ? timeEl(e.updated_at) : h("span", { class: "muted" }, "–")) },
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
  // The counts follow every filter of the list (the API's counts take the same ones).
  if (state.counts) {
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
// The view

/** Shows the view for the route (`before`: the route shown until now, or null). */
export function show(before) {
  const r = state.route;
  const s = executionsShell();
  const main = $("#main");
  if (s.root.parentNode !== main) clear(main, s.root);
  syncFilters();
  const listMoved = !before || before.view !== "executions" ||
    ["status", "definition", "roots", "q", "limit", "cursor", ...filters.FILTER_KEYS].some((k) => String(before[k]) !== String(r[k]));
  const countsMoved = !before || before.view !== "executions" ||
    ["definition", "roots", "q", ...filters.FILTER_KEYS].some((k) => String(before[k]) !== String(r[k]));
  if (listMoved) loadList();
  else if (state.list) renderTable();
  if (countsMoved) loadCounts();
  else renderChart();
  if (!before || before.id !== r.id || before.view !== "executions") detail.load(s.detail);
}

/** Reads the list, the counts and the open execution again, quietly. */
export function refresh() {
  loadList({ quiet: true });
  loadCounts({ quiet: true });
  if (state.route.id) detail.load(executionsShell().detail, { quiet: true });
}

/** Leaves the view: its page is taken off (kept, with its controls, for the way back). */
export function leave() {
  shell && shell.root.remove();
}

/** The list's keys: j/k move, Enter opens, n/p page, / searches; `true` if it took the key. */
export function onKey(e) {
  const r = state.route;
  if (e.key === "Escape") {
    if (r.id) navigate({ id: "" });
    return false;
  }
  const rows = state.list ? state.list.items : [];
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
    case "n": case "ArrowRight": nextPage(); break;
    case "p": case "ArrowLeft": prevPage(); break;
    case "/": $("#q").focus(); break;
    default:
      return false;
  }
  return true;
}
