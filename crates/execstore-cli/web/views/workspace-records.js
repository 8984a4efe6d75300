// A workspace's records in the workspaces view (views/workspaces.js): its dead letters, leases
// (a page at a time), consumer cursors, and stored rules with their version history. Each tab
// is drawn into `body` with `t`, the view's own tools: `route` (the URL's state), `api`,
// `here(changes)` and `go(next)` (links and moves inside the view), `load(el, fn)` (one load
// at a time per element), `grid`, `empty`, `wsPath()`, `link`, `pill` and `short`.
//
// Same rules as every view (shell.js): stored data reaches the page only as text.

import { clear, h } from "../dom.js";
import { replayedText, wsAction, wsResult } from "../recover.js";
import { actionCtx } from "../shell.js";
import { compact, timeEl } from "../format.js";

// --- Dead letters, leases, cursors -------------------------------------------------------------

export async function showDeadLetters(body, t) {
  const r = t.route;
  const list = h("div", { class: "table-wrap", id: "ws-dead" });
  // A page at a time, oldest first: `cursor` in the URL is the position the page starts after.
  const pager = h("div", { class: "pager", id: "ws-dead-pager" });
  const a = actionCtx();
  const mode = h("select", { id: "ws-replay-mode", "aria-label": "Replay mode" },
    h("option", { value: "rebuild" }, "rebuild (recompute state, fire nothing up to the head)"),
    h("option", { value: "refire" }, "refire (fire again for everything from there)"));
  const replayAll = wsAction(a, {
    label: "Replay all", id: "ws-replay-all", cls: "small ghost", title: "Replay every dead-lettered rule from just before its earliest dead letter (reflexr's replay_rule)",
    question: "Replay every dead-lettered rule of this workspace?", path: `${t.wsPath()}/dead-letters/replay-all`,
    get json() { return { mode: mode.value }; }, done: replayedText,
  });
  clear(body, wsResult(), h("div", { class: "filters" }, h("span", { class: "muted" }, "Envelopes a rule could not evaluate, oldest first. A replay evaluates the rule again from just before one; the dead letter stays listed (reflexr keeps them)."),
    a.writable ? h("label", null, "Mode ", mode) : null, replayAll), list, pager);
  const after = /^\d+$/.test(r.cursor) ? r.cursor : undefined;
  const page = await t.load(list, () => t.api.get(`${t.wsPath()}/dead-letters`, { after }));
  if (!page) return;
  clear(pager,
    h("button", { type: "button", disabled: !after, onclick: () => t.go(t.here({})) }, "« First"),
    h("span", { class: "where" }, after ? `${page.items.length} shown, later ones` : `${page.items.length} shown`),
    h("button", { type: "button", id: "ws-next", disabled: !page.next_after, onclick: () => t.go(t.here({ cursor: String(page.next_after) })) }, "Next ▶"));
  if (!page.items.length) { clear(list, t.empty("No dead letters", after ? "None after these." : "Every rule evaluated every envelope.")); return; }
  clear(list, t.grid([
    { label: "Rule", class: "id", cell: (d) => d.rule },
    { label: "Seq", class: "num", cell: (d) => t.link(t.here({ tab: "log", seq: String(d.seq) }), String(d.seq)) },
    { label: "Error", class: "data", cell: (d) => h("span", { title: String(d.error) }, String(d.error)) },
    ...(!a.writable ? [] : [{ label: "", cell: (d) => wsAction(a, {
      label: "Replay", title: "Evaluate the rule again from just before this envelope (reflexr's replay_rule)",
      question: `Replay ${d.rule} from seq ${d.seq}?`, path: `${t.wsPath()}/dead-letters/replay`,
      get json() { return { rule: d.rule, seq: d.seq, mode: mode.value }; }, done: replayedText,
    }) }]),
  ], page.items));
}

export async function showLeases(body, t) {
  const r = t.route;
  const list = h("div", { class: "table-wrap", id: "ws-leases" });
  // A page at a time, by key: `cursor` in the URL is the key the page starts after.
  const pager = h("div", { class: "pager", id: "ws-leases-pager" });
  const a = actionCtx();
  clear(body, wsResult(), h("p", { class: "muted" }, "Every lease row, by key: held until it expires, lapsed after (another holder may take it, or release it here)."), list, pager);
  const page = await t.load(list, () => t.api.get(`${t.wsPath()}/leases`, { after: r.cursor || undefined }));
  if (!page) return;
  clear(pager,
    h("button", { type: "button", disabled: !r.cursor, onclick: () => t.go(t.here({})) }, "« First"),
    h("span", { class: "where" }, r.cursor ? `${page.items.length} shown after ${r.cursor}` : `${page.items.length} shown`),
    h("button", { type: "button", id: "ws-next", disabled: !page.next_after, onclick: () => t.go(t.here({ cursor: page.next_after })) }, "Next ▶"));
  if (!page.items.length) { clear(list, t.empty("No leases", r.cursor ? `None after ${r.cursor}.` : "")); return; }
  clear(list, t.grid([
    { label: "Key", class: "id", cell: (l) => h("span", { class: "mono", title: l.key }, l.key) },
    { label: "Holder", class: "id", cell: (l) => l.holder },
    { label: "Expires", class: "when", cell: (l) => timeEl(l.expires_at) },
    { label: "", cell: (l) => h("span", { class: l.lapsed ? "chip lapsed" : "chip held-lease" }, l.lapsed ? "lapsed" : "held") },
    ...(!a.writable ? [] : [{ label: "", cell: (l) => (l.lapsed ? wsAction(a, {
      label: "Release", title: "Remove this lapsed lease row", question: `Release ${l.key} (lapsed, held by ${l.holder})?`,
      path: `${t.wsPath()}/leases/${encodeURIComponent(l.key)}/release`, done: (b) => `Released ${b.key} (was ${b.holder}'s).`,
    }) : null) }]),
  ], page.items, { rowProps: (l) => ({ class: l.lapsed ? "overdue" : null }) }));
}

export async function showCursors(body, t) {
  const list = h("div", { class: "table-wrap", id: "ws-cursors" });
  clear(body, h("p", { class: "muted" }, "Each consumer's cursor and how far it lags behind the log's head."), list);
  const page = await t.load(list, () => t.api.get(`${t.wsPath()}/cursors`));
  if (!page) return;
  if (!page.items.length) { clear(list, t.empty("No cursors", "")); return; }
  const head = page.head_seq || 1;
  clear(list, t.grid([
    { label: "Consumer", class: "id", cell: (c) => c.name },
    { label: "Seq", class: "num", cell: (c) => String(c.seq) },
    { label: "Lag", class: "num", cell: (c) => String(c.lag) },
    { label: `Position (head ${page.head_seq})`, cell: (c) => h("span", { class: "lagbar", title: `${c.seq} of ${page.head_seq}` }, h("span", { class: c.lag > 0 ? "fill behind" : "fill", style: null, dataset: { pct: String(Math.round((100 * c.seq) / head)) } })) },
  ], page.items));
  // Widths set through the DOM (the CSP forbids inline style attributes).
  for (const fill of list.querySelectorAll(".lagbar .fill")) fill.style.width = `${fill.dataset.pct}%`;
}

// --- Stored rules and their history ------------------------------------------------------------

export async function showRules(body, t) {
  const r = t.route;
  const list = h("div", { class: "table-wrap", id: "ws-rules" });
  const history = h("div", { id: "ws-history" });
  const a = actionCtx();
  clear(body, wsResult(), h("p", { class: "muted" }, "Rules installed in this workspace at runtime (active ones), and each one's versions as the log records them."), list, history);
  const page = await t.load(list, () => t.api.get(`${t.wsPath()}/rules`));
  if (!page) return;
  if (!page.items.length) clear(list, t.empty("No active stored rules", ""));
  else {
    clear(list, t.grid([
      { label: "Rule", class: "id", cell: (x) => t.link(t.here({ tab: "rules", history: x.name }), x.name, { class: "rule-link" }) },
      { label: "Version", class: "num", cell: (x) => String(x.version) },
      { label: "Status", cell: (x) => t.pill(x.status) },
      { label: "Policy", cell: (x) => `${x.rule.ordering || "none"} / ${x.rule.on_dead_letter || "continue"}` },
      { label: "Description", class: "data", cell: (x) => String(x.rule.description ?? "") },
      { label: "Provenance", class: "data", cell: (x) => h("span", { class: "mono provenance" }, t.short(x.provenance)) },
      ...(!a.writable ? [] : [{ label: "", cell: (x) => {
        const paused = x.rule.enabled === false;
        return [paused ? h("span", { class: "chip lapsed" }, "paused") : null, " ", wsAction(a, {
          label: paused ? "Resume" : "Pause",
          title: paused ? "Evaluate it again (its next version, enabled)" : "Stop evaluating it; its cursor holds (its next version, disabled)",
          question: `${paused ? "Resume" : "Pause"} ${x.name}?`,
          path: `${t.wsPath()}/rules/${encodeURIComponent(x.name)}/${paused ? "resume" : "pause"}`, params: { expected_version: x.version },
          done: (b) => (b.changed ? `${b.name} is ${b.enabled ? "resumed" : "paused"} (version ${b.version}).` : `${b.name} was already ${b.enabled ? "running" : "paused"}.`),
        })];
      } }]),
    ], page.items));
  }
  const archived = h("input", { type: "search", id: "ws-history-name", placeholder: "any rule's name (archived too)", value: r.history || null, "aria-label": "Rule history by name" });
  archived.addEventListener("change", () => t.go(t.here({ tab: "rules", history: archived.value.trim() })));
  clear(history, h("div", { class: "filters" }, h("label", null, "History of ", archived)));
  if (!r.history) return;
  const h2 = h("div", { id: "ws-history-list" });
  history.append(h("h2", null, `Versions of ${r.history}`), h2);
  const hist = await t.load(h2, () => t.api.get(`${t.wsPath()}/rules/${encodeURIComponent(r.history)}/history`));
  if (!hist) return;
  clear(h2, t.grid([
    { label: "Seq", class: "num", cell: (e) => t.link(t.here({ tab: "log", env: e.id }), String(e.seq)) },
    { label: "Time", class: "when", cell: (e) => timeEl(e.ts) },
    { label: "Fact", cell: (e) => (e.event.type || "").replace(/^reflexr:/, "") },
    { label: "Version", class: "num", cell: (e) => String(e.event.version ?? "") },
    { label: "By", class: "id", cell: (e) => (e.actor && (e.actor.name || e.actor.id || e.actor.kind)) || "" },
    { label: "Provenance / reason", class: "data", cell: (e) => h("span", { class: "mono provenance" }, e.event.provenance !== undefined ? compact(e.event.provenance) : String(e.event.reason ?? "")) },
    { label: "Description", class: "data", cell: (e) => String((e.event.spec && e.event.spec.description) ?? "") },
  ], hist.items));
}
