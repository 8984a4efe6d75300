// An execution's detail, beside the executions list (views/executions.js): its summary, the
// control actions, its family, its statechart, timeline, context, timers, outbox, spawns and
// stored JSON.

import { clear, h } from "../dom.js";
import { jsonTree, setServerNow, statusPill, when } from "../format.js";
import * as records from "../records.js";
import * as graph from "../graph.js";
import * as actions from "../actions.js";
import { actionCtx, api, errorBox, loadingLater, navigate, state } from "../shell.js";

let detailSeq = 0;

/** Loads the route's execution (`id`) into `detail` (emptied when there is none). */
export async function load(detail, { quiet = false } = {}) {
  const id = state.route.id;
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
    clear(detail, detailHeader(id, null), errorBox(e, () => load(detail)));
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
