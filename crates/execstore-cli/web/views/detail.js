// An execution's detail, beside the executions list (views/executions.js): its summary, the
// control actions, its family, its statechart, timeline, context, timers, outbox, spawns and
// stored JSON.

import { clear, h } from "../dom.js";
import { copyButton, jsonTree, setServerNow, statusPill, until, when } from "../format.js";
import * as records from "../records.js";
import * as graph from "../graph.js";
import * as actions from "../actions.js";
import { ApiError } from "../api.js";
import * as recover from "../recover.js";
import { actionCtx, api, errorBox, loadingLater, navigate, state } from "../shell.js";
import { historyBody, historyCount } from "./history.js";
import { renderAudit } from "../audit.js";

let detailSeq = 0;

/**
 * Whether `id` is still stored, asked of the listing (a 200 either way, so a purged execution
 * costs no 404): the ids starting with it, looked through for it. Unknown when the listing
 * has more such ids than one page holds (null: ask the execution itself).
 */
async function stillStored(id) {
  const page = await api.get("api/executions", { q: id, limit: 200 });
  if (page.items.some((e) => e.id === id) || (page.errors || []).some((e) => e.id === id)) return true;
  return page.next_cursor ? null : false;
}

/** Loads the route's execution (`id`) into `detail` (emptied when there is none). */
export async function load(detail, { quiet = false } = {}) {
  const id = state.route.id;
  if (!id) {
    // A load still on its way is for a detail no longer open: it must not fill the pane.
    detailSeq++;
    delete detail.dataset.id;
    detail.replaceChildren();
    return;
  }
  // A live refresh waits while the operator answers a confirmation or types in a recovery
  // form here: rebuilding the detail would take the question (or the cursor) away.
  // (A question already answered has its buttons disabled: the refresh its answer asks for
  // goes ahead.)
  if (quiet && detail.dataset.id === id && detail.querySelector('.confirm button:not([disabled]), .recover-form :focus')) return;
  const seq = ++detailSeq;
  const path = `api/executions/${encodeURIComponent(id)}`;
  if (!quiet && detail.dataset.id !== id) {
    clear(detail, detailHeader(id, null));
  }
  const done = quiet ? () => {} : loadingLater(detail, "Loading the execution…");
  try {
    // Shown before and now gone (purged here or by another process), or never there: said
    // so, without asking for it (and logging a 404) on every refresh.
    if ((await stillStored(id)) === false) {
      done();
      if (seq !== detailSeq) return;
      showGone(detail, id);
      return;
    }
    const [one, trace, pending] = await Promise.all([api.get(path), api.get(`${path}/trace`), api.get(`${path}/pending`)]);
    done();
    if (seq !== detailSeq) return;
    const open = records.rememberOpen(detail);
    detail.dataset.id = id;
    delete detail.dataset.purged;
    clear(detail, renderDetail(one, trace, pending));
    records.restoreOpen(detail, open);
  } catch (e) {
    done();
    if (seq !== detailSeq) return;
    if (e instanceof ApiError && e.status === 404 && e.code === "NOT_FOUND") {
      showGone(detail, id);
      return;
    }
    if (quiet) return;
    delete detail.dataset.id;
    clear(detail, detailHeader(id, null), errorBox(e, () => load(detail)));
  }
}

/** The pane of an execution the store no longer holds: no status, no actions, no stale data. */
function showGone(detail, id) {
  // Shown until now (or already said purged): it was purged while open.
  const was = detail.dataset.id === id || detail.dataset.purged === id;
  delete detail.dataset.id;
  if (was) detail.dataset.purged = id;
  else delete detail.dataset.purged;
  clear(
    detail,
    detailHeader(id, null),
    h("div", { class: "gone", id: "gone", role: "status" },
      h("strong", null, was ? "This execution was purged" : "No such execution"),
      h("p", null, was
        ? "It is no longer in the store: it was purged (here or by another process) while it was open. Its archive, if one was written, is wherever the purge put it."
        : "The store holds no execution with this id: it was purged, or never existed."),
      h("button", { type: "button", onclick: () => navigate({ id: "" }) }, "Back to the list")),
  );
}

/** Which collapsible sections the user opened or closed, kept across a live refresh. */
function detailHeader(id, exe) {
  return h(
    "div",
    { class: "detail-head" },
    h("button", { type: "button", class: "ghost close", title: "Close (Esc)", "aria-label": "Close", onclick: () => navigate({ id: "" }) }, "×"),
    h("div", { class: "title" }, h("h2", { class: "mono id", id: "detail-id" }, id), copyButton(id, "id"), exe ? statusPill(exe.status) : null),
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
    field("Definition", [exe.definition_id, copyButton(exe.definition_id, "definition"), " ", h("a", { href: graph.definitionHref(exe.definition_id), class: "def-graph-link" }, "statechart")]),
    field("Definition FQN", exe.definition_fqn),
    field("Status", statusPill(exe.status)),
    field("Outcome", exe.outcome),
    field("Active state", exe.active_path && [h("span", { class: "mono" }, exe.active_path), copyButton(exe.active_path, "active state")]),
    field("Root path", exe.root_path && h("span", { class: "mono" }, exe.root_path)),
    field("Version", String(exe.version)),
    field("Events", String(exe.processed_events)),
    field("Priority", exe.priority ? String(exe.priority) : null),
    field("Created", exe.created_at && when(exe.created_at)),
    field("Updated", exe.updated_at && when(exe.updated_at)),
    field("Finished", exe.finished_at && when(exe.finished_at)),
    field("Expires", exe.expires_at && when(exe.expires_at)),
    field("Deferred", exe.deferred && exe.deferred.length ? `${exe.deferred.length} events` : null),
  );
  const error = exe.error ? h("div", { class: "error-box" }, h("strong", null, "Error"), h("pre", null, exe.error)) : null;
  const timersOverdue = pending.timers.filter((t) => t.fire_at < pending.now).length;
  return [
    detailHeader(exe.id, exe),
    error,
    summary,
    actions.detailSection(actionCtx(), exe),
    recover.detailSection(actionCtx(), exe),
    auditSection(exe.id),
    records.renderFamily(one),
    graph.executionSection(api, exe),
    records.section("timeline", "History", historyCount(trace), historyBody(api, exe, trace, pending)),
    records.section("context", "Context", `${Object.keys(exe.context || {}).length} keys`, h("div", { class: "json", id: "context" }, jsonTree(exe.context, { open: 2 }))),
    records.section("timers", "Timers", timersOverdue ? `${pending.timers.length} (${timersOverdue} overdue)` : pending.timers.length, records.renderTimers(pending.timers, { withExecution: false })),
    records.section("outbox", "Outbox (addressed to it)", pending.outbox.length, records.renderOutbox(pending.outbox, { withTarget: false })),
    records.section("spawns", "Spawns (pending children)", pending.spawns.length, records.renderSpawns(pending.spawns, { withParent: false })),
    pending.truncated ? h("p", { class: "muted" }, "Only the first 200,000 timers, outbox entries and spawns of the store were looked through.") : null,
    records.section("raw", "Stored JSON", null, h("div", { class: "json" }, jsonTree(exe, { open: 1 })), { open: false }),
  ];
}

/**
 * The "Audit" section: the writes made on this execution through the monitor (newest first,
 * the last 20), loaded after the rest; a link to the Audit page for all of them.
 */
function auditSection(id) {
  const body = h("div", { id: "detail-audit" }, h("span", { class: "muted" }, "Loading…"));
  const section = records.section("audit", "Audit", null, body);
  api
    .get(`api/executions/${encodeURIComponent(id)}/audit`, { limit: 20 })
    .then((page) => {
      const count = section.querySelector("summary");
      if (count) count.append(h("span", { class: "count" }, page.next ? "20+" : String(page.items.length)));
      clear(
        body,
        renderAudit(page.items, { target: false }),
        page.items.length ? h("a", { href: `?view=audit&target=${encodeURIComponent(id)}`, class: "audit-all" }, "All of its audit entries") : null,
      );
    })
    .catch((e) => clear(body, errorBox(e)));
  return section;
}
