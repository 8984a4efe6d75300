// The execution list's `where` box (docs/search.md): a query of the one query language, in
// the URL as `where`, applied on Enter (or when the box loses focus with a changed text).
// As you type, the box suggests known paths and, after an operator, frequent values
// (`/api/suggest`, which samples recent executions), in a datalist the keyboard reaches.
// Under it: the error of a bad query, inline, and a "scan" note when a path of the query
// is not a declared search attribute (the store reads every execution to answer it).
// Stored data reaches the page only as option values and text, never as HTML.
// `makeWhereBox` makes the same box for another listing (the workspace log and runs).

import { clear, h } from "./dom.js";

let box = null;

/** The part of `text` being typed: a path (after the start, `and`, `or` or `(`), or a
 * value after `path op`; `null` when neither. */
export function typing(text) {
  const value = /([A-Za-z_][\w.-]*(?:\."[^"]*")*)\s*(=|!=|\^=|<=|>=|<|>|\bin\s*\(|\bstarts\b)\s*([^\s()"]*|"[^"]*)$/i.exec(text);
  if (value) return { kind: "value", path: value[1], prefix: value[3], head: text.slice(0, text.length - value[3].length) };
  const path = /(^|\s|\()([A-Za-z_][\w."-]*)?$/.exec(text);
  if (path) {
    const word = path[2] || "";
    const head = text.slice(0, text.length - word.length);
    const before = head.trim().split(/\s+/).pop() || "";
    if (!head.trim() || /^(and|or|\()$/i.test(before) || before.endsWith("(")) return { kind: "path", prefix: word, head };
  }
  return null;
}

/** The box, built once. `navigate` is the page's `navigate(changes, options)`; `api` its client. */
export function whereBox(navigate, api) {
  if (box) return box.root;
  box = makeWhereBox({
    id: "where",
    navigate,
    suggest: (path) => api.get("api/suggest", { path }),
    placeholder: 'context.customer_id = "c-17" and status = running and updated > -1h',
    label: "Where: a query over status, definition, state, times and context paths",
    syntax: "status = running, definition = orders, state = order.pay, " +
      "created > -1h (or ISO-8601, epoch seconds), context.total >= 100, context.customer ^= c-1, context.note exists, " +
      "status in (failed, cancelled)",
  });
  return box.root;
}

/** A where box for any listing: `id` names its elements (`ID`, `ID-error`, `ID-scan`, ...);
 * `navigate({ where, cursor })` applies a query; `suggest(path)` answers `{ paths, values }`
 * as `/api/suggest` does. Returns `{ root, input, sync(r), showError(e), note(text) }`. */
export function makeWhereBox({ id, navigate, suggest, placeholder, label, syntax }) {
  const input = h("input", {
    type: "search", id, list: `${id}-suggestions`, autocomplete: "off", spellcheck: "false",
    placeholder, "aria-label": label,
    "aria-describedby": `${id}-help ${id}-error ${id}-scan`,
  });
  const list = h("datalist", { id: `${id}-suggestions` });
  const error = h("p", { id: `${id}-error`, class: "where-error", role: "alert", hidden: true });
  const scan = h("p", { id: `${id}-scan`, class: "where-scan", role: "status", hidden: true });
  const help = h("span", {
    id: `${id}-help`, class: "muted",
    title: `Terms joined by and / or, grouped by ( ): ${syntax}. Documented in docs/search.md.`,
  }, "Enter applies (hover for the syntax)");
  let applied = "";
  const apply = () => {
    const text = input.value.trim();
    if (text === applied) return;
    applied = text;
    navigate({ where: text, cursor: "" });
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      apply();
    }
    e.stopPropagation(); // the list's j/k/n/p keys are not for the box
  });
  input.addEventListener("change", apply);
  let debounce;
  input.addEventListener("input", () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => suggestInto(suggest, input, list), 150);
  });
  input.addEventListener("focus", () => suggestInto(suggest, input, list));
  const root = h(
    "div",
    { class: "filters where-filter" },
    h("label", { class: "field grow" }, h("span", null, "Where"), input, list),
    help,
    error,
    scan,
  );
  const ctl = {
    root, input, list, error, scan,
    setApplied: (t) => { applied = t; },
    /** Shows route `r`'s query in the box (unless it is being edited). */
    sync(r) {
      if (document.activeElement !== input) input.value = r.where || "";
      applied = r.where || "";
      if (!r.where) ctl.showError(null);
    },
    /** The error of the last listing if it was the query's (a 400 naming the query), else clears it. */
    showError(e) {
      const mine = e && e.status === 400 && /^(invalid input: )?where/.test(e.message || "");
      error.hidden = !mine;
      error.textContent = mine ? `Query error: ${e.message.replace(/^invalid input: where: /, "")}` : "";
      input.setAttribute("aria-invalid", mine ? "true" : "false");
      if (mine) ctl.note("");
      return mine;
    },
    /** A line under the box (how far a search scanned, ...); empty hides it. */
    note(text) {
      scan.hidden = !text;
      scan.textContent = text || "";
    },
  };
  return ctl;
}

let suggestSeq = 0;

async function suggestInto(fetchSuggestions, input, list) {
  const seq = ++suggestSeq;
  const text = input.value;
  const at = typing(text);
  if (!at) {
    clear(list);
    return;
  }
  try {
    const answer = await fetchSuggestions(at.kind === "path" ? at.prefix : at.path);
    if (seq !== suggestSeq) return;
    const options = at.kind === "path"
      ? answer.paths.map((p) => ({ value: at.head + p.path + " ", label: `${p.path}${p.declared ? "" : " (scan)"} · ${p.count}` }))
      : answer.values
        .filter((v) => String(v.value).startsWith(at.prefix) || String(v.value).startsWith(`"${at.prefix}`))
        .map((v) => ({ value: at.head + v.value, label: v.count === null ? String(v.value) : `${v.value} · ${v.count}` }));
    clear(list, options.map((o) => h("option", { value: o.value, label: o.label })));
  } catch {
    if (seq === suggestSeq) clear(list);
  }
}

/** Shows route `r`'s query in the executions' box (unless it is being edited). */
export function syncWhereBox(r) {
  if (box) box.sync(r);
}

/** The error of the last listing if it was the query's (a 400 naming the query), else clears it. */
export function showWhereError(e) {
  if (box) box.showError(e);
}

/** The listing's `scan`: the paths it answered by reading every execution. */
export function showScan(paths) {
  if (!box) return;
  const n = (paths || []).length;
  box.note(n
    ? `scan: ${paths.join(", ")} ${n === 1 ? "is not a search attribute" : "are not search attributes"}; the store reads every execution to answer (execstore attributes declare PATH indexes it).`
    : "");
}

/** `api.get(path, params)` for a page filtered by a where box: a bad query's 400 shown under
 * `box` (and cleared on success), then thrown on. */
export async function whereGet(api, box, path, params) {
  try {
    const page = await api.get(path, params);
    if (box) box.showError(null);
    return page;
  } catch (e) {
    if (box) box.showError(e);
    throw e;
  }
}
