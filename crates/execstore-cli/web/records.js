// An execution's records as the monitor shows them: the trace as a timeline (with what each step
// changed in the context), and the timers, outbox entries and spawns (store-wide views and an
// execution's own), with their write buttons behind the token.

import { h, span, toSeconds } from "./dom.js";
import { compact, copyButton, emptyBox, now, shortJson, statusPill, table, timeEl, until, when } from "./format.js";

/** An outbox entry or a spawn intent older than this is highlighted: the relay is late. */
const OVERDUE_S = 300;
const KNOWN_STEP_KEYS = new Set([
  "index", "event_kind", "event_data", "from_path", "to_path", "guards", "actions",
  "context_in", "context_out", "timestamp", "assigned", "note",
]);

/** What the renderers need from the page: set once by app.js. */
let ctx = null;

/** `context`: `{ api: () => client, writable: () => bool, execLink(id, text?, extra?), writeButton(label, run, what) }`. */
export function init(context) {
  ctx = context;
}

function diffContext(before, after) {
  const out = [];
  if (!after || typeof after !== "object") return out;
  for (const [k, v] of Object.entries(after)) {
    if (!before || !(k in before)) out.push({ op: "+", key: k, value: v });
    else if (compact(before[k]) !== compact(v)) out.push({ op: "~", key: k, old: before[k], value: v });
  }
  if (before && typeof before === "object") {
    for (const k of Object.keys(before)) if (!(k in after)) out.push({ op: "-", key: k, old: before[k] });
  }
  return out;
}

function chips(label, items, cls) {
  if (!Array.isArray(items) || !items.length) return null;
  return h("div", { class: "chips" }, h("span", { class: "chip-label" }, label), items.map((x) => h("span", { class: `chip ${cls}` }, typeof x === "string" ? x : compact(x))));
}

export function renderTimeline(trace) {
  const steps = trace.items;
  if (!steps.length) return emptyBox("No trace steps", "The engine recorded no timeline for this execution (or it was written without tracing).");
  const first = steps[0];
  const evicted = typeof first.index === "number" && first.index > 0;
  const list = h("ol", { class: "timeline", id: "timeline" });
  let previousOut = evicted ? undefined : {};
  let previousT = null;
  for (const step of steps) {
    const t = toSeconds(step.timestamp);
    const before = step.context_in !== undefined ? step.context_in : previousOut;
    const diff = before === undefined ? null : diffContext(before, step.context_out);
    const failed = typeof step.note === "string" && step.note.startsWith("failed");
    const extra = Object.entries(step).filter(([k]) => !KNOWN_STEP_KEYS.has(k));
    list.append(
      h(
        "li",
        { class: `step${failed ? " failed" : ""}`, dataset: { index: step.index, kind: step.event_kind ?? "(no event)" } },
        h("span", { class: "dot", "aria-hidden": "true" }),
        h(
          "div",
          { class: "step-head" },
          h("span", { class: "idx" }, `#${step.index ?? "?"}`),
          h("span", { class: "kind" }, step.event_kind ?? "(no event)"),
          t !== null ? when(t, { part: "time" }) : null,
          t !== null && previousT !== null ? h("span", { class: "delta" }, `+${span(t - previousT)}`) : null,
        ),
        h(
          "div",
          { class: "move mono" },
          step.from_path ? h("span", { class: "from" }, step.from_path) : h("span", { class: "muted" }, "(start)"),
          h("span", { class: "arrow", "aria-label": "to" }, " → "),
          h("span", { class: "to" }, step.to_path ?? "?"),
        ),
        chips("guards", step.guards, "guard"),
        chips("actions", step.actions, "action"),
        step.event_data && Object.keys(step.event_data).length ? h("div", { class: "kv" }, h("span", { class: "chip-label" }, "event data"), h("code", { class: "mono", title: compact(step.event_data) }, shortJson(step.event_data, 200)), copyButton(compact(step.event_data), "event data")) : null,
        diff === null
          ? h("div", { class: "diff muted" }, "context before this step is not kept (earlier steps were evicted)")
          : diff.length
            ? h("ul", { class: "diff" }, diff.map((d) => h(
              "li",
              { class: `op-${d.op === "+" ? "add" : d.op === "-" ? "del" : "chg"}` },
              h("span", { class: "op" }, d.op),
              h("span", { class: "k" }, d.key),
              d.op === "~" ? [h("span", { class: "old", title: compact(d.old) }, shortJson(d.old, 60)), " → "] : null,
              h("span", { class: d.op === "-" ? "old" : "new", title: compact(d.op === "-" ? d.old : d.value) }, shortJson(d.op === "-" ? d.old : d.value, 100)),
            )))
            : h("div", { class: "diff muted" }, "context unchanged"),
        step.note ? h("div", { class: "note" }, String(step.note)) : null,
        extra.length ? h("div", { class: "kv" }, extra.map(([k, v]) => [h("span", { class: "chip-label" }, k), h("code", { class: "mono" }, shortJson(v, 120))])) : null,
      ),
    );
    if (step.context_out !== undefined) previousOut = step.context_out;
    if (t !== null) previousT = t;
  }
  return [
    evicted ? h("p", { class: "muted" }, `Steps before #${first.index} were evicted (the store keeps the last ${trace.trace_max ?? "N"}).`) : null,
    list,
  ];
}

// ---------------------------------------------------------------------------------------------
// Outbox, timers and spawns (store-wide views and an execution's own)

export function renderTimers(items, { withExecution = true } = {}) {
  if (!items.length) return emptyBox("No armed timers", null);
  return table(
    [
      withExecution ? { label: "Execution", class: "id mono", cell: (t) => ctx.execLink(t.execution_id) } : null,
      { label: "State", class: "path mono", cell: (t) => t.path },
      { label: "Fires at", class: "when", cell: (t) => when(t.fire_at) },
      { label: "", class: "due", cell: (t) => h("span", { class: t.fire_at < now() ? "overdue-text" : "muted" }, until(t.fire_at)) },
      ctx.writable()
        ? { label: "", class: "act", cell: (t) => ctx.writeButton("Delete", (reason) => ctx.api().del("api/timers", { execution_id: t.execution_id, path: t.path, fire_at: t.fire_at }, { reason }), "Remove this timer (only if it still fires at this time)") }
        : null,
    ].filter(Boolean),
    items,
    { rowProps: (t) => ({ class: t.fire_at < now() ? "overdue" : null }) },
  );
}

function outboxAge(e) {
  return toSeconds(e.event.created_time);
}

export function renderOutbox(items, { withTarget = true } = {}) {
  if (!items.length) return emptyBox("Nothing waiting in the outbox", "Every event emitted so far was delivered.");
  return table(
    [
      { label: "Seq", class: "num", cell: (e) => e.seq },
      withTarget ? { label: "Target", class: "id mono", cell: (e) => (e.target_id ? ctx.execLink(e.target_id) : h("span", { class: "muted" }, "(broadcast)")) } : null,
      { label: "Event", class: "kind", cell: (e) => h("span", { class: "chip action" }, e.event.kind) },
      { label: "Event id", class: "mono small", cell: (e) => e.event.id },
      { label: "Created", class: "when", cell: (e) => (outboxAge(e) !== null ? timeEl(outboxAge(e)) : h("span", { class: "muted" }, "–")) },
      { label: "Data", class: "data mono", cell: (e) => h("code", { title: compact(e.event.data) }, shortJson(e.event.data, 90)) },
      ctx.writable()
        ? { label: "", class: "act", cell: (e) => ctx.writeButton("Ack", (reason) => ctx.api().post(`api/outbox/${e.seq}/ack`, undefined, { reason }), "Mark delivered: removes it from the outbox") }
        : null,
    ].filter(Boolean),
    items,
    { rowProps: (e) => ({ class: outboxAge(e) !== null && now() - outboxAge(e) > OVERDUE_S ? "overdue" : null, dataset: { seq: e.seq } }) },
  );
}

export function renderSpawns(items, { withParent = true } = {}) {
  if (!items.length) return emptyBox("No pending spawns", "Every forked child was created.");
  const since = (s) => (typeof s.parent_updated_at === "number" ? s.parent_updated_at : null);
  return table(
    [
      { label: "Seq", class: "num", cell: (s) => s.seq },
      withParent ? { label: "Parent", class: "id mono", cell: (s) => ctx.execLink(s.parent_id) } : null,
      { label: "Child to create", class: "id mono", cell: (s) => s.child_id },
      { label: "Runs", class: "path mono", cell: (s) => s.root_path },
      withParent ? { label: "Waiting", class: "when", cell: (s) => (since(s) !== null ? h("span", { title: "at least since the parent's last commit" }, `≥ ${span(now() - since(s))}`) : "–") } : null,
      { label: "Seed context", class: "data mono", cell: (s) => h("code", { title: compact(s.context) }, shortJson(s.context, 90)) },
      ctx.writable()
        ? { label: "", class: "act", cell: (s) => ctx.writeButton("Ack", (reason) => ctx.api().post(`api/spawns/${s.seq}/ack`, undefined, { reason }), "Mark created: removes the intent") }
        : null,
    ].filter(Boolean),
    items,
    { rowProps: (s) => ({ class: since(s) !== null && now() - since(s) > OVERDUE_S ? "overdue" : null }) },
  );
}

// ---------------------------------------------------------------------------------------------
// The detail's sections and the family tree

export function rememberOpen(root) {
  const open = new Map();
  for (const d of root.querySelectorAll("details[data-key]")) open.set(d.dataset.key, d.open);
  return open;
}

export function restoreOpen(root, open) {
  for (const d of root.querySelectorAll("details[data-key]")) {
    if (open.has(d.dataset.key)) d.open = open.get(d.dataset.key);
  }
}

export function section(key, title, count, body, { open = true } = {}) {
  return h(
    "details",
    { class: "section", open, dataset: { key } },
    h("summary", null, h("span", null, title), count !== null && count !== undefined ? h("span", { class: "count" }, count) : null),
    body,
  );
}

export function renderFamily(one) {
  const exe = one.execution;
  if (!one.ancestors.length && !one.children.length) return null;
  const node = (id, summary, current, join) =>
    h(
      "div",
      { class: `node${current ? " current" : ""}` },
      current ? h("span", { class: "mono" }, id) : ctx.execLink(id),
      summary ? statusPill(summary.status) : h("span", { class: "muted" }, current ? "" : " not created yet"),
      summary && summary.active_path ? h("span", { class: "mono muted" }, ` ${summary.active_path}`) : null,
      join ? h("span", { class: `join${join.finished ? " finished" : ""}` }, join.finished ? `joined${join.outcome ? `: ${join.outcome}` : ""}` : "not joined", join.root_path ? ` · ${join.root_path}` : "") : null,
    );
  const tree = h("ul", { class: "tree" });
  let level = tree;
  for (const a of one.ancestors) {
    const li = h("li", null, node(a.id, a.summary, false));
    level.append(li);
    const ul = h("ul");
    li.append(ul);
    level = ul;
  }
  const self = h("li", null, node(exe.id, exe, true));
  level.append(self);
  if (one.children.length) {
    self.append(h("ul", null, one.children.map((c) => h("li", null, node(c.id, c.summary, false, c.join)))));
  }
  return section("family", "Parent and children", one.children_total ? `${one.children_total} children` : "child", h("div", { class: "family" }, tree));
}
