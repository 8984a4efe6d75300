// The monitor's routes: everything the page shows is in its URL (`?view=...&status=...`), parsed
// here and written back, so any view can be linked to.

import * as filters from "./filters.js";

export const STATUSES = ["PENDING", "RUNNING", "DONE", "CANCELLED", "SUSPENDED", "CANCELLING", "FAILED"];
/** The chart's labels where a column is too narrow for the full name: each one distinct. */
export const STATUS_SHORT = {
  PENDING: "PEND", RUNNING: "RUN", DONE: "DONE", CANCELLED: "CNCLD", SUSPENDED: "SUSP", CANCELLING: "CNCLG", FAILED: "FAIL",
};
/** The views a route may name: the ids of the VIEWS table (views/index.js), set by the shell. */
let viewIds = ["executions"];

export function setViewIds(ids) {
  viewIds = ids;
}
export const PAGE_SIZES = [25, 50, 100, 200];
/** The history section's modes besides its default, the timeline (views/history.js MODES). */
export const HISTORY_MODES = ["waterfall", "json"];

export function parseRoute(search) {
  const p = new URLSearchParams(search);
  const limit = Number(p.get("limit"));
  const view = viewIds.includes(p.get("view")) ? p.get("view") : "executions";
  return {
    view,
    status: (p.get("status") || "").split(",").filter((s) => STATUSES.includes(s)),
    definition: p.get("definition") || "",
    roots: p.get("roots") === "1",
    q: p.get("q") || "",
    cursor: p.get("cursor") || "",
    id: p.get("id") || "",
    limit: PAGE_SIZES.includes(limit) ? limit : 50,
    after: p.get("after") || "",
    due: p.get("due") === "1",
    actor: p.get("actor") || "",
    target: p.get("target") || "",
    // The history section's mode and kind filter (the executions view's detail): part of
    // the route, so that every navigation, a reload, back/forward and a copied link keep
    // them. Another view's URL may use these names for its own (the workspaces view's
    // `history` is a rule's).
    history: view === "executions" && HISTORY_MODES.includes(p.get("history")) ? p.get("history") : "",
    kind: view === "executions" ? p.get("kind") || "" : "",
    ...filters.parseFilters(p),
  };
}

export function routeSearch(r) {
  const p = new URLSearchParams();
  if (r.view !== "executions") p.set("view", r.view);
  if (r.status.length) p.set("status", r.status.join(","));
  if (r.definition) p.set("definition", r.definition);
  if (r.roots) p.set("roots", "1");
  if (r.q) p.set("q", r.q);
  filters.writeFilters(r, p);
  if (r.limit !== 50) p.set("limit", String(r.limit));
  if (r.cursor) p.set("cursor", r.cursor);
  if (r.after) p.set("after", r.after);
  if (r.due) p.set("due", "1");
  if (r.actor) p.set("actor", r.actor);
  if (r.target) p.set("target", r.target);
  if (r.id) p.set("id", r.id);
  if (r.view === "executions" && r.history) p.set("history", r.history);
  if (r.view === "executions" && r.kind) p.set("kind", r.kind);
  const s = p.toString();
  return s ? `?${s}` : location.pathname;
}

export function linkTo(changes) {
  return routeSearch({ ...parseRoute(""), ...changes });
}
