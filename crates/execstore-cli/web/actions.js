// The control actions of the monitor (writes, behind the token): suspend, resume, terminate
// and purge, as harel 0.9's control plane does them, on one execution (its detail page) or on
// many (rows picked in the list, or everything the list's filters match).
//
// Every action is confirmed first and acts on the version the page showed
// (`expected_version`): if the execution moved meanwhile the server answers 409 and nothing
// changes; that is explained and the view refreshed. Results are shown as text only.

import { ApiError } from "./api.js";
import { clear, h } from "./dom.js";
import { reasonConfirm } from "./reason.js";
import { matchingBar } from "./recover.js";

const FINISHED = ["DONE", "CANCELLED"];

/** The actions, what each does, and whether it applies to a summary or execution `e`. */
export const ACTIONS = [
  { name: "suspend", label: "Suspend", what: "Pause it and its regions (RUNNING only)", applies: (e) => e.status === "RUNNING" },
  { name: "resume", label: "Resume", what: "Continue it and its regions (SUSPENDED only)", applies: (e) => e.status === "SUSPENDED" },
  { name: "terminate", label: "Terminate", what: "Cancel it and its unfinished regions at once, without hooks", applies: (e) => !FINISHED.includes(e.status) },
  { name: "purge", label: "Purge", what: "Delete its whole finished tree for good (roots only)", applies: (e) => FINISHED.includes(e.status) && !e.parent_id },
];

const byName = (name) => ACTIONS.find((a) => a.name === name);

const RANK = { read: 0, act: 1, admin: 2 };

/**
 * Whether the caller may make the write `action` (`api/info`'s `actions` names the role
 * each needs, its `caller` the token's role). Unknown caller (no token yet): offered, and
 * the server decides.
 */
function allowed(ctx, action) {
  const needed = ctx.roles && ctx.roles[action];
  if (!ctx.caller || !needed) return true;
  return RANK[ctx.caller.role] >= RANK[needed];
}

/** The ids picked in the list, with the version each showed. Kept across pages. */
const picked = new Map();

/**
 * One action on one execution: `{ok, body}` or `{ok: false, conflict, error}`. `ctx.api` is
 * the client; `version` is the version the page showed.
 */
async function act(ctx, name, id, version, reason) {
  try {
    const body = await ctx.api.post(`api/executions/${encodeURIComponent(id)}/${name}`, { expected_version: version }, { reason });
    return { ok: true, body };
  } catch (e) {
    return { ok: false, conflict: e instanceof ApiError && e.status === 409, error: e };
  }
}

function message(e) {
  return e instanceof ApiError ? `${e.message} (${e.code})` : String(e && e.message ? e.message : e);
}

/** What one result says, as text. */
function resultText(name, id, r) {
  if (!r.ok && r.conflict) {
    return `${id} changed since this page showed it, so nothing was done: the view has been refreshed, look again and retry if still wanted. (${r.error.message})`;
  }
  if (!r.ok) return `${id}: ${message(r.error)}`;
  if (name === "purge") return `Purged ${r.body.purged}: ${r.body.removed.length} execution(s) removed.`;
  if (!r.body.changed.length) return `${id}: nothing changed (harel does nothing here for its status).`;
  return `${byName(name).label}: ${r.body.changed.map((c) => `${c.id} ${c.from} → ${c.to}`).join(", ")}.`;
}

/**
 * A button that asks for confirmation in place before it runs; a write (`reason`, the
 * default) asks for its reason too and hands it to `run(reason)`.
 */
function confirmButton(label, title, question, run, { cls = "danger small", id, reason = true } = {}) {
  const wrap = h("span", { class: "confirm-wrap" });
  const button = h("button", { type: "button", class: cls, title, id, dataset: { action: label.toLowerCase() } }, label);
  const ask = () => {
    if (reason) {
      const box = reasonConfirm({
        label,
        question,
        onNo: () => clear(wrap, button),
        onYes: async (why) => {
          try {
            await run(why);
          } finally {
            clear(wrap, button);
          }
        },
      });
      clear(wrap, box);
      box.focusReason();
      return;
    }
    const yes = h("button", { type: "button", class: "danger small", dataset: { confirm: "yes" } }, `Yes, ${label.toLowerCase()}`);
    const no = h("button", { type: "button", class: "ghost small", dataset: { confirm: "no" } }, "Cancel");
    const box = h("span", { class: "confirm", role: "alertdialog", "aria-label": question }, h("span", { class: "question" }, question), " ", yes, " ", no);
    no.addEventListener("click", () => clear(wrap, button));
    yes.addEventListener("click", async () => {
      yes.disabled = true;
      no.disabled = true;
      try {
        await run();
      } finally {
        clear(wrap, button);
      }
    });
    clear(wrap, box);
    yes.focus();
  };
  button.addEventListener("click", () => {
    if (!ctx0.hasToken()) {
      ctx0.needToken();
      return;
    }
    ask();
  });
  return clear(wrap, button);
}

/** The context of the last call (the token check of a confirm button needs it). */
let ctx0 = { hasToken: () => false, needToken: () => {} };

/** Where the last result is shown, kept across the refresh it causes. */
let lastResult = null;

function resultBox(id) {
  if (!lastResult || lastResult.key !== id) return h("div", { class: "action-result", id: `${id === "*bulk" ? "bulk" : "action"}-result`, role: "status", hidden: true });
  return h(
    "div",
    { class: `action-result ${lastResult.bad ? "bad" : "good"}`, id: `${id === "*bulk" ? "bulk" : "action"}-result`, role: "status" },
    h("strong", null, lastResult.title),
    lastResult.lines.length ? h("ul", null, lastResult.lines.map((l) => h("li", null, l))) : null,
    h("button", { type: "button", class: "ghost small", "aria-label": "Dismiss", onclick: () => { lastResult = null; ctx0.refresh(); } }, "×"),
  );
}

/**
 * The "Actions" section of an execution's detail: the actions that apply to its status, or
 * null when the monitor is read-only. `ctx`: {api, writable, hasToken, needToken, refresh}.
 */
export function detailSection(ctx, exe) {
  ctx0 = ctx;
  if (!ctx.writable) return null;
  const buttons = ACTIONS.filter((a) => a.applies(exe) && allowed(ctx, `executions.${a.name}`)).map((a) =>
    confirmButton(a.label, a.what, `${a.label} ${exe.id}${a.name === "purge" ? " and its whole tree, for good" : ""}?`, async (reason) => {
      const r = await act(ctx, a.name, exe.id, exe.version, reason);
      lastResult = { key: exe.id, bad: !r.ok, title: r.ok ? "Done" : r.conflict ? "Conflict" : "Refused", lines: [resultText(a.name, exe.id, r)] };
      ctx.refresh();
    }));
  return h(
    "div",
    { class: "actions", id: "detail-actions", "aria-label": "Actions" },
    h("span", { class: "muted" }, "Actions "),
    buttons.length ? buttons : h("span", { class: "muted" }, "none apply to a finished child (purge its root)"),
    resultBox(exe.id),
  );
}

/** The list's first column: a checkbox per row (null when read-only). */
export function selectColumn(ctx, items) {
  ctx0 = ctx;
  if (!ctx.writable) return null;
  const all = h("input", { type: "checkbox", id: "pick-page", "aria-label": "Pick every row of this page" });
  all.checked = items.length > 0 && items.every((e) => picked.has(e.id));
  all.addEventListener("click", (ev) => ev.stopPropagation());
  all.addEventListener("change", () => {
    for (const e of items) {
      if (all.checked) picked.set(e.id, e.version);
      else picked.delete(e.id);
    }
    ctx.refresh();
  });
  return {
    label: all,
    class: "pick",
    cell: (e) => {
      const box = h("input", { type: "checkbox", class: "pick-row", "aria-label": `Pick ${e.id}`, dataset: { id: e.id } });
      box.checked = picked.has(e.id);
      box.addEventListener("click", (ev) => ev.stopPropagation());
      box.addEventListener("change", () => {
        if (box.checked) picked.set(e.id, e.version);
        else picked.delete(e.id);
        ctx.refresh();
      });
      return box;
    },
  };
}

/** Every execution the list's filters match (all pages), as [id, version, status, parent_id]. */
async function everythingMatching(ctx) {
  const items = [];
  let cursor = "";
  for (;;) {
    const page = await ctx.api.get("api/executions", { ...ctx.listParams(), cursor, limit: 1000 });
    items.push(...page.items);
    if (!page.next_cursor) return items;
    cursor = page.next_cursor;
  }
}

/**
 * Runs `name` on every target with one `POST api/control/{name}` (one per `bulk_limit`
 * targets, as `api/info` says), each target its own commit on the server; one result per
 * target, as `act` gives.
 */
async function actAll(ctx, name, targets, reason) {
  const results = [];
  const limit = Math.max(1, ctx.bulkLimit || targets.length); // api/info is loaded when writable
  for (let i = 0; i < targets.length; i += limit) {
    const chunk = targets.slice(i, i + limit);
    try {
      const body = await ctx.api.postJson(`api/control/${name}`, {
        reason,
        targets: chunk.map(([id, version]) => ({ id, expected_version: version ?? null })),
      });
      for (const r of body.results) {
        results.push(r.ok
          ? { ok: true, body: r }
          : { ok: false, conflict: r.status === 409, error: new ApiError(r.status, r.error.code, r.error.message) });
      }
    } catch (e) {
      // The request failed as a whole (no token, unreachable...): so did every target in it.
      results.push(...chunk.map(() => ({ ok: false, conflict: e instanceof ApiError && e.status === 409, error: e })));
    }
  }
  return results;
}

/** Runs `name` on every target in one request and shows the tally and every miss. */
async function runBulk(ctx, name, targets, reason) {
  const tally = { changed: 0, noop: 0, conflict: 0, refused: 0 };
  const lines = [];
  const results = await actAll(ctx, name, targets, reason);
  for (const [i, [id]] of targets.entries()) {
    const r = results[i];
    if (r.ok && (name === "purge" || r.body.changed.length)) tally.changed += 1;
    else if (r.ok) tally.noop += 1;
    else if (r.conflict) tally.conflict += 1;
    else tally.refused += 1;
    if (!r.ok) lines.push(resultText(name, id, r));
    picked.delete(id);
  }
  const label = byName(name).label;
  lastResult = {
    key: "*bulk",
    bad: tally.conflict + tally.refused > 0,
    title: `${label}: ${tally.changed} done, ${tally.noop} unchanged, ${tally.conflict} conflicts, ${tally.refused} refused (of ${targets.length})`,
    lines: tally.conflict ? [...lines, "Conflicts: those executions moved since the list showed them; the list has been refreshed."] : lines,
  };
  ctx.refresh();
}

/**
 * The bulk bar above the list: what is picked, "pick everything matching", and the actions,
 * each confirmed with its count. `ctx.listParams()` gives the list's filters.
 */
export function bulkBar(ctx) {
  ctx0 = ctx;
  if (!ctx.writable) return null;
  const targets = () => [...picked.entries()];
  const n = picked.size;
  const buttons = ACTIONS.filter((a) => allowed(ctx, `control.${a.name}`)).map((a) =>
    confirmButton(a.label, `${a.what}: on every picked execution`, `${a.label} ${n} picked execution(s)?`, (reason) => runBulk(ctx, a.name, targets(), reason), { cls: "small", id: `bulk-${a.name}` }));
  const matching = confirmButton("Everything matching", "Act on every execution the filters match, on all pages", "Pick every execution the filters match (all pages)?", async () => {
    try {
      for (const e of await everythingMatching(ctx)) picked.set(e.id, e.version);
    } catch (e) {
      lastResult = { key: "*bulk", bad: true, title: "Could not list them", lines: [message(e)] };
    }
    ctx.refresh();
  }, { cls: "ghost small", id: "pick-matching", reason: false });
  return h(
    "div",
    { class: "bulk", id: "bulk" },
    h("span", { class: "picked", id: "picked-count" }, `${n} picked`),
    n ? h("button", { type: "button", class: "ghost small", id: "unpick", onclick: () => { picked.clear(); ctx.refresh(); } }, "Unpick all") : null,
    matching,
    n ? buttons : null,
    matchingBar(ctx),
    resultBox("*bulk"),
  );
}

/** Forgets the picked rows and the last bulk result (the filters changed). */
export function unpickAll() {
  picked.clear();
  if (lastResult && lastResult.key === "*bulk") lastResult = null;
}
