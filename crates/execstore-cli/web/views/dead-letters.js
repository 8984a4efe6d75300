// Dead letters across workspaces (`?view=dead-letters`): every envelope a rule could not
// evaluate, in every workspace of every tenant, so an operator sees them without opening
// each workspace. Each row links to its workspace's dead letters and to the envelope's place
// in the log. Read from `/api/workspaces` and each one's `/dead-letters` (its first page: a
// workspace with more says so, and its own tab pages on).

import { $, clear, h } from "../dom.js";
import { emptyBox, table } from "../format.js";
import { replayedText, wsAction, wsResult } from "../recover.js";
import { actionCtx, api, errorBox, loadingLater, loadedView } from "../shell.js";

let seq = 0;

/** A link to the workspace view at `params`, followed inside the page on a plain click. */
function wsLink(params, text, props = {}) {
  const href = `?${new URLSearchParams({ view: "workspaces", ...params })}`;
  return h("a", {
    ...props,
    href,
    onclick: (e) => {
      if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      history.pushState(null, "", href);
      window.dispatchEvent(new PopStateEvent("popstate"));
    },
  }, text);
}

async function load({ quiet = false } = {}) {
  const mine = ++seq;
  const main = $("#main");
  let root = $(".dead-letters-view", main);
  if (!root) {
    root = h("section", { class: "view-page dead-letters-view" },
      h("div", { class: "view-head" }, h("h1", null, "Dead letters"),
        h("p", { class: "muted" }, "Envelopes a rule could not evaluate, in every workspace, by workspace and seq."),
        h("span", { class: "muted", id: "dl-summary", "aria-live": "polite" })),
      h("div", { id: "dl-result" }),
      h("div", { id: "dl-more" }),
      h("div", { class: "table-wrap", id: "dl-list" }));
    clear(main, root);
  }
  const list = $("#dl-list", root);
  const done = quiet ? () => {} : loadingLater(list);
  try {
    const workspaces = (await api.get("api/workspaces")).items;
    const pages = await Promise.all(workspaces.map((w) =>
      api.get(`api/workspaces/${encodeURIComponent(w.tenant_id)}/${encodeURIComponent(w.workspace_id)}/dead-letters`)));
    done();
    if (mine !== seq || !root.isConnected) return;
    clear($("#dl-result", root), wsResult());
    const rows = workspaces.flatMap((w, i) => pages[i].items.map((d) => ({ ...d, tenant: w.tenant_id, ws: w.workspace_id })));
    const where = new Set(rows.map((d) => `${d.tenant}\u0000${d.ws}`)).size;
    // Each workspace's first page only: where more follow, its own tab pages on.
    const more = workspaces.filter((w, i) => pages[i].next_after);
    $("#dl-summary", root).textContent = `${rows.length} in ${where} of ${workspaces.length} workspace${workspaces.length === 1 ? "" : "s"}` +
      (more.length ? ` (the oldest ${pages.find((p) => p.next_after).items.length} of each)` : "");
    clear($("#dl-more", root), more.length ? h("p", { class: "muted" }, "More in ",
      more.flatMap((w, i) => [i ? ", " : null, wsLink({ tenant: w.tenant_id, ws: w.workspace_id, tab: "dead-letters" }, `${w.tenant_id} / ${w.workspace_id}`, { class: "ws-more" })]),
      ": its Dead letters tab pages on.") : null);
    if (!rows.length) {
      clear(list, emptyBox("No dead letters", "Every rule evaluated every envelope, in every workspace."));
      return;
    }
    clear(list, table([
      { label: "Workspace", class: "id", cell: (d) => wsLink({ tenant: d.tenant, ws: d.ws, tab: "dead-letters" }, `${d.tenant} / ${d.ws}`, { class: "ws-link" }) },
      { label: "Rule", class: "id", cell: (d) => String(d.rule) },
      { label: "Seq", class: "num", cell: (d) => wsLink({ tenant: d.tenant, ws: d.ws, seq: String(d.seq) }, String(d.seq), { class: "seq-link" }) },
      { label: "Error", class: "data", cell: (d) => h("span", { title: String(d.error) }, String(d.error)) },
      ...(!actionCtx().writable ? [] : [{ label: "", cell: (d) => wsAction(actionCtx(), {
        label: "Replay", title: "Evaluate the rule again from just before this envelope, rebuilding its state (reflexr's replay_rule)",
        question: `Replay ${d.rule} of ${d.tenant} / ${d.ws} from seq ${d.seq}?`,
        path: `api/workspaces/${encodeURIComponent(d.tenant)}/${encodeURIComponent(d.ws)}/dead-letters/replay`,
        json: { rule: d.rule, seq: d.seq }, done: replayedText,
      }) }]),
    ], rows));
  } catch (e) {
    done();
    if (mine !== seq) return;
    if (!quiet) clear(list, errorBox(e, () => load()));
  }
}

export const { show, refresh, leave, onKey } = loadedView(load);
