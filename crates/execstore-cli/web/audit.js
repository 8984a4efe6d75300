// The audit log's table, shared by the Audit page (views/audit.js) and the execution
// detail's "Audit" section: who made which write, when, on what, why, and how it ended.
// Stored text only ever reaches the page as text.

import { h } from "./dom.js";
import { emptyBox, table, when } from "./format.js";

/**
 * The outcome as a pill: `ok`, or the error's code (its message as the title); `PENDING`
 * (recorded before the action, never completed) says the outcome is unknown, in the API's words.
 */
function outcome(e) {
  if (e.outcome === "PENDING") {
    const note = e.note || "outcome unknown";
    return h("span", { class: "pill s-pending outcome outcome-unknown", title: note }, "outcome unknown", h("span", { class: "muted" }, ` (${note.replace(/^outcome unknown \(|\)$/g, "")})`));
  }
  const ok = e.outcome === "ok";
  return h("span", { class: `pill ${ok ? "s-done" : "s-failed"} outcome`, title: e.message || "" }, e.outcome);
}

function params(e) {
  const keys = Object.keys(e.params || {});
  if (!keys.length) return "";
  return h("span", { class: "mono muted" }, keys.map((k) => `${k}=${JSON.stringify(e.params[k])}`).join(" "));
}

/**
 * The entries as a table; `target` false leaves the target column out (the detail's
 * section: it is always that execution). `link(target)` makes a target a link, or text.
 */
export function renderAudit(items, { target = true, link = (t) => t } = {}) {
  if (!items.length) return emptyBox("No audit entries", "No write has been recorded here yet.");
  const columns = [
    { label: "When", class: "when", cell: (e) => when(e.at) },
    { label: "Who", class: "actor", cell: (e) => [e.actor, e.role ? h("span", { class: "muted" }, ` · ${e.role}`) : null] },
    { label: "Action", class: "action mono", cell: (e) => e.action },
    target ? { label: "Target", class: "target mono", cell: (e) => (e.target ? link(e.target) : "–") } : null,
    { label: "Reason", class: "reason", cell: (e) => e.reason || h("span", { class: "muted" }, "–") },
    { label: "Outcome", class: "outcome", cell: (e) => outcome(e) },
    { label: "Parameters", class: "params", cell: (e) => params(e) },
  ].filter(Boolean);
  const t = table(columns, items, { rowProps: (e) => ({ dataset: { id: String(e.id), outcome: e.outcome } }) });
  t.classList.add("audit-grid");
  return t;
}
