// Recovery in the monitor (writes, behind the token; docs/recover.md): send an event to a
// RUNNING execution through the outbox, retry a FAILED one at a state its trace shows (harel's
// redrive), and an action over everything the list's filters match, counted first by a dry
// run ("this will suspend 1,234 executions") and then run on the server in one request.

import { ApiError } from "./api.js";
import { clear, h } from "./dom.js";
import { MAX_REASON } from "./reason.js";

function message(e) {
  return e instanceof ApiError ? `${e.message} (${e.code})` : String(e && e.message ? e.message : e);
}

function needsToken(ctx) {
  if (ctx.hasToken()) return false;
  ctx.needToken();
  return true;
}

/** What the last recovery action said, kept across the refresh it causes: {key, bad, text}. */
let last = null;

function resultLine(key, id) {
  if (!last || last.key !== key) return h("div", { class: "action-result", id, role: "status", hidden: true });
  return h(
    "div",
    { class: `action-result ${last.bad ? "bad" : "good"}`, id, role: "status" },
    h("strong", null, last.title),
    last.lines.length ? h("ul", null, last.lines.map((l) => h("li", null, l))) : null,
  );
}

/**
 * The event's fields from the form, checked before anything is sent: `{event}` or `{error}`.
 * `data` is JSON text of an object (empty: none).
 */
export function checkEvent(name, dataText, id) {
  const trimmed = name.trim();
  if (!trimmed) return { error: "Give the event a name (its kind, e.g. Approve)." };
  let data;
  if (dataText.trim()) {
    try {
      data = JSON.parse(dataText);
    } catch (e) {
      return { error: `The data is not JSON: ${e.message}` };
    }
    if (data === null || typeof data !== "object" || Array.isArray(data)) return { error: "The data must be a JSON object, like {\"amount\": 5}." };
  }
  const event = { name: trimmed };
  if (data) event.data = data;
  if (id.trim()) event.id = id.trim();
  return { event };
}

/** What was typed in an execution's send form, kept across the live refresh that rebuilds it. */
const drafts = new Map();

/** The "Send an event" form of a RUNNING execution's detail. */
function sendForm(ctx, exe) {
  const name = h("input", { type: "text", id: "send-name", placeholder: "Approve", autocomplete: "off", "aria-label": "Event name" });
  const data = h("textarea", { id: "send-data", rows: 3, placeholder: "{\"amount\": 5}", spellcheck: "false", "aria-label": "Event data (JSON object)" });
  const id = h("input", { type: "text", id: "send-id", placeholder: "made for you", autocomplete: "off", "aria-label": "Event id (optional)" });
  const reason = reasonField("send-reason");
  const draft = drafts.get(exe.id) || { name: "", data: "", id: "", reason: "", focus: null };
  drafts.clear();
  drafts.set(exe.id, draft);
  for (const [field, el] of [["name", name], ["data", data], ["id", id], ["reason", reason]]) {
    el.value = draft[field];
    el.addEventListener("input", () => { draft[field] = el.value; });
    el.addEventListener("focus", () => { draft.focus = field; });
    el.addEventListener("blur", () => { if (draft.focus === field) draft.focus = null; });
    if (draft.focus === field) queueMicrotask(() => { if (el.isConnected) el.focus(); });
  }
  const problem = h("p", { class: "form-error", id: "send-error", role: "alert", hidden: true });
  const button = h("button", { type: "submit", class: "small", id: "send-submit" }, "Send");
  const form = h(
    "form",
    { class: "recover-form", id: "send-form" },
    h("label", null, "Event name ", name),
    h("label", null, "Data (JSON object) ", data),
    h("label", null, "Event id ", id),
    h("label", null, "Reason ", reason),
    problem,
    button,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const checked = checkEvent(name.value, data.value, id.value);
    if (!checked.error && !reason.value.trim()) checked.error = "A reason is required: it is kept in the audit log.";
    if (checked.error) {
      problem.textContent = checked.error;
      problem.hidden = false;
      return;
    }
    problem.hidden = true;
    if (needsToken(ctx)) return;
    button.disabled = true;
    try {
      const body = await ctx.api.postQueryJson(`api/executions/${encodeURIComponent(exe.id)}/send`, { expected_version: exe.version }, { event: checked.event, reason: reason.value.trim() });
      Object.assign(draft, { name: "", data: "", id: "", reason: "", focus: null });
      last = { key: exe.id, bad: false, title: "Sent", lines: [`${body.event.name} (id ${body.event.id}) is in the outbox as entry ${body.seq}; the engine's relay delivers it.`] };
    } catch (e) {
      const conflict = e instanceof ApiError && e.status === 409;
      last = { key: exe.id, bad: true, title: conflict ? "Conflict" : "Refused", lines: [conflict ? `${exe.id} changed since this page showed it; nothing was sent. Look again and resend if still wanted.` : message(e)] };
    }
    ctx.refresh();
  });
  return form;
}

/** A required "Reason" field (every write's `reason`, kept in the audit log). */
function reasonField(id, onInput) {
  const input = h("input", { type: "text", class: "reason-input", id, name: "reason", "aria-required": "true", maxlength: String(MAX_REASON), placeholder: "Reason (required, for the audit log)", "aria-label": "Reason", autocomplete: "off" });
  if (onInput) input.addEventListener("input", onInput);
  return input;
}

/** The "Retry" form of a FAILED execution: the states its trace shows it resting in. */
function retryForm(ctx, exe) {
  const select = h("select", { id: "retry-target", "aria-label": "Retry at state" });
  const button = h("button", { type: "button", class: "small", id: "retry-submit", disabled: true }, "Retry");
  const note = h("span", { class: "muted", id: "retry-note" }, "Loading the states its trace shows…");
  const reason = reasonField("retry-reason");
  const form = h("div", { class: "recover-form", id: "retry-form" }, h("label", null, "Retry at ", select), " ", h("label", null, "Reason ", reason), " ", button, " ", note);
  ctx.api.get(`api/executions/${encodeURIComponent(exe.id)}/retry-targets`).then((t) => {
    clear(select, t.targets.map((p) => h("option", { value: p }, p)));
    if (!t.targets.length) note.textContent = "Its trace shows no state to go back to: retry with harel's redrive, which knows the definition.";
    else if (!t.retryable) note.textContent = "It has unfinished children: terminate them first (harel refuses otherwise).";
    else note.textContent = "Back to RUNNING at that state; context kept, error and history cleared.";
    button.disabled = !t.targets.length || !t.retryable;
  }, (e) => {
    note.textContent = message(e);
  });
  button.addEventListener("click", async () => {
    if (needsToken(ctx)) return;
    if (!reason.value.trim()) {
      note.textContent = "A reason is required: it is kept in the audit log.";
      reason.focus();
      return;
    }
    button.disabled = true;
    try {
      const body = await ctx.api.postQueryJson(`api/executions/${encodeURIComponent(exe.id)}/retry`, { expected_version: exe.version }, { target_path: select.value, reason: reason.value.trim() });
      last = { key: exe.id, bad: false, title: "Retried", lines: [body.changed.length ? `${exe.id} FAILED → RUNNING at ${body.target_path}.` : `${exe.id}: nothing changed (it is no longer FAILED).`] };
    } catch (e) {
      const conflict = e instanceof ApiError && e.status === 409;
      last = { key: exe.id, bad: true, title: conflict ? "Conflict" : "Refused", lines: [conflict ? `${exe.id} changed since this page showed it; nothing was done.` : message(e)] };
    }
    ctx.refresh();
  });
  return form;
}

/** The detail's "Recover" section: send an event (RUNNING), retry (FAILED); null when read-only. */
export function detailSection(ctx, exe) {
  if (!ctx.writable) return null;
  let body;
  if (exe.status === "RUNNING") body = sendForm(ctx, exe);
  else if (exe.status === "FAILED") body = retryForm(ctx, exe);
  else body = h("p", { class: "muted" }, `harel's engine takes an event only while RUNNING, and retries only a FAILED execution: nothing to recover at ${exe.status}.`);
  return h("section", { class: "recover", id: "detail-recover", "aria-label": "Recover" }, h("h3", null, exe.status === "FAILED" ? "Retry" : "Send an event"), body, resultLine(exe.id, "recover-result"));
}

const VERBS = { suspend: "suspend", resume: "resume", terminate: "terminate", purge: "purge" };

/**
 * "All matching…" per action above the list: a dry run counts what the filters match, the
 * count is confirmed, then the server acts on every match (each at the version it listed).
 */
export function matchingBar(ctx) {
  if (!ctx.writable) return null;
  const wrap = h("span", { class: "matching", id: "matching" });
  const idle = () => (counted = null, clear(wrap, h("span", { class: "muted" }, "All matching: "), Object.keys(VERBS).map((name) => {
    const b = h("button", { type: "button", class: "ghost small", id: `matching-${name}`, dataset: { action: name } }, name[0].toUpperCase() + name.slice(1));
    b.addEventListener("click", () => count(name));
    return [b, " "];
  }), resultLine("*matching", "matching-result")));
  const path = (name) => `api/control/${name}/matching`;
  const filters = JSON.stringify(ctx.listParams());
  async function count(name) {
    if (needsToken(ctx)) return;
    let dry;
    try {
      dry = await ctx.api.get(path(name), ctx.listParams()); // a count: a read, no reason yet
    } catch (e) {
      last = { key: "*matching", bad: true, title: "Could not count them", lines: [message(e)] };
      idle();
      return;
    }
    confirm(name, dry);
  }
  function confirm(name, dry, focus = true) {
    // the reason typed so far survives a rebuild of the list (live refresh, `r`)
    const typed = counted && counted.name === name ? counted.reason || "" : "";
    counted = { name, dry, filters, reason: typed };
    const n = dry.matching.toLocaleString("en-US");
    if (dry.over_limit) {
      last = { key: "*matching", bad: true, title: `More than ${dry.max.toLocaleString("en-US")} executions match`, lines: ["Narrow the filters: an action over everything matching acts on at most that many."] };
      idle();
      return;
    }
    const yes = h("button", { type: "button", class: "danger small", id: "matching-yes", disabled: true }, `Yes, ${name} ${n}`);
    const no = h("button", { type: "button", class: "ghost small", id: "matching-no" }, "Cancel");
    const reason = reasonField("matching-reason", () => {
      counted.reason = reason.value;
      yes.disabled = !dry.matching || !reason.value.trim();
    });
    reason.value = typed;
    yes.disabled = !dry.matching || !typed.trim();
    no.addEventListener("click", idle);
    yes.addEventListener("click", async () => {
      counted = null;
      yes.disabled = true;
      no.disabled = true;
      try {
        const r = await ctx.api.postQueryJson(path(name), { ...ctx.listParams(), max: dry.matching || 1 }, { reason: reason.value.trim() });
        const failed = Object.entries(r.summary.failed);
        const misses = r.results.filter((x) => !x.ok).slice(0, 20).map((x) => `${x.id}: ${x.error.message} (${x.error.code})`);
        last = {
          key: "*matching",
          bad: failed.length > 0,
          title: `${name}: ${r.summary.changed} done, ${r.summary.unchanged} unchanged, ${r.summary.covered} done with an earlier one (its regions or tree), ${failed.reduce((s, [, c]) => s + c, 0)} failed (of ${r.matching})`,
          lines: [...failed.map(([code, c]) => `${c} × ${code}`), ...misses],
        };
      } catch (e) {
        last = { key: "*matching", bad: true, title: "Refused", lines: [message(e)] };
      }
      ctx.refresh();
    });
    clear(wrap, h("span", { class: "confirm", role: "alertdialog", id: "matching-confirm" }, h("span", { class: "question" }, `This will ${name} ${n} execution${dry.matching === 1 ? "" : "s"}.`), " ", reason, " ", yes, " ", no));
    if (focus) (dry.matching ? reason : no).focus();
  }
  // A live refresh rebuilt the list while the count was shown: show it again, for the same
  // filters only (other filters count other executions).
  if (counted && counted.filters === filters) confirm(counted.name, counted.dry, false);
  else idle();
  return wrap;
}

/** The count "all matching" showed last and is waiting on: {name, dry, filters}. */
let counted = null;

// ---------------------------------------------------------------------------------------------
// Workspaces (views/workspaces.js, views/dead-letters.js): each action confirmed in place, then
// one POST; the result is shown above the tab (`#ws-action-result`) and the view refreshed.

/** The result of the last workspace action, as a status line (hidden when there is none). */
export function wsResult() {
  // In a block of its own: the tab's body may be a column flexbox, where the result's
  // `flex-basis: 100%` (meant for a row of buttons) would make it as tall as the view.
  return h("div", { class: "ws-result" }, resultLine("*ws", "ws-action-result"));
}

/**
 * A button that asks `question` in place, then POSTs `opts.json` (read at the click, so it may
 * be a getter) to `path` with query `params`, and shows `done(body)` as the result. Null when
 * the monitor is read-only.
 */
export function wsAction(ctx, opts) {
  const { label, title, question, path, params = {}, done, id, cls = "small" } = opts;
  if (!ctx.writable) return null;
  const wrap = h("span", { class: "confirm-wrap" });
  const button = h("button", { type: "button", class: cls, title, id, dataset: { wsAction: label.toLowerCase() } }, label);
  const key = `${path}?${new URLSearchParams(params)}`;
  const idle = () => {
    if (openQuestion === key) openQuestion = null;
    return clear(wrap, button);
  };
  const ask = (focus = true) => {
    if (openQuestion !== key) openReason = "";
    openQuestion = key;
    const yes = h("button", { type: "button", class: "danger small", dataset: { confirm: "yes" }, disabled: true }, `Yes, ${label.toLowerCase()}`);
    const no = h("button", { type: "button", class: "ghost small", dataset: { confirm: "no" } }, "Cancel");
    const reason = reasonField(undefined, () => {
      openReason = reason.value;
      yes.disabled = !reason.value.trim();
    });
    // the reason typed so far survives a rebuild of the view (live refresh)
    reason.value = openReason;
    yes.disabled = !openReason.trim();
    no.addEventListener("click", idle);
    yes.addEventListener("click", async () => {
      openQuestion = null;
      yes.disabled = true;
      no.disabled = true;
      try {
        // opts.json is read now: it may be a getter
        const body = await ctx.api.postQueryJson(path, params, { ...(opts.json || {}), reason: reason.value.trim() });
        last = { key: "*ws", bad: false, title: "Done", lines: [done(body)] };
      } catch (e) {
        const conflict = e instanceof ApiError && e.status === 409;
        last = { key: "*ws", bad: true, title: conflict ? "Conflict" : "Refused", lines: [conflict ? `It changed since this page showed it; nothing was done. (${e.message})` : message(e)] };
      }
      idle();
      ctx.refresh();
    });
    clear(wrap, h("span", { class: "confirm", role: "alertdialog", "aria-label": question }, h("span", { class: "question" }, question), " ", reason, " ", yes, " ", no));
    if (focus) reason.focus();
  };
  button.addEventListener("click", () => {
    if (!needsToken(ctx)) ask();
  });
  // A live refresh rebuilt the view while this question was open: ask it again.
  if (openQuestion === key) {
    ask(false);
    return wrap;
  }
  return idle();
}

/** The workspace question open when the view was last built (its path and query). */
let openQuestion = null;
/** The reason typed into that question so far. */
let openReason = "";

/** What a replay answer says. */
export function replayedText(body) {
  if (!body.replayed.length) return "No dead-lettered rule to replay.";
  return body.replayed.map((r) => `${r.rule} replayed from after seq ${r.from_seq} (generation ${r.generation}, fact at seq ${r.seq}); reflexr's reactor evaluates it again.`).join(" ");
}
