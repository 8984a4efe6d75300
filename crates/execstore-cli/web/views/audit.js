// The Audit page (`?view=audit`): every write made through the monitor, newest first, with
// who made it (the token's name and role), why, and how it ended (refusals included);
// filtered by actor and target, paged by the API's cursor.

import { $, clear, h } from "../dom.js";
import { setServerNow } from "../format.js";
import { renderAudit } from "../audit.js";
import { api, errorBox, execLink, loadedView, loadingLater, navigate, state } from "../shell.js";

let viewSeq = 0;

function filterBox(r) {
  const field = (name, label, value) =>
    h("label", null, `${label} `, h("input", { type: "search", id: `audit-${name}`, name, value: value || null, placeholder: "any", autocomplete: "off" }));
  const form = h(
    "form",
    { class: "audit-filters", id: "audit-filters", role: "search" },
    field("actor", "Who", r.actor),
    field("target", "Target", r.target),
    h("button", { type: "submit", class: "small" }, "Filter"),
    r.actor || r.target ? h("button", { type: "button", class: "ghost small", id: "audit-clear", onclick: () => navigate({ actor: "", target: "", after: "" }) }, "Clear") : null,
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    state.stack = [];
    navigate({ actor: $("#audit-actor", form).value.trim(), target: $("#audit-target", form).value.trim(), after: "" });
  });
  return form;
}

async function load({ quiet = false } = {}) {
  const r = state.route;
  const seq = ++viewSeq;
  const main = $("#main");
  let root = $(".audit-view", main);
  const key = `${r.actor}\n${r.target}`;
  if (!root || root.dataset.key !== key) {
    root = h(
      "section",
      { class: "store-view audit-view", dataset: { key } },
      h("div", { class: "view-head" }, h("h1", null, "Audit"),
        h("p", { class: "muted" }, "Every write made through the monitor or the CLI, newest first: who (the token's name, or cli and the OS user), when, on what, why, and how it ended, refusals included.")),
      filterBox(r),
      h("div", { class: "table-wrap", id: "audit-list" }),
      h("div", { class: "pager", id: "store-pager" }),
    );
    clear(main, root);
  }
  const list = $("#audit-list", root);
  const done = quiet ? () => {} : loadingLater(list);
  try {
    const page = await api.get("api/audit", { actor: r.actor, target: r.target, cursor: r.after, limit: r.limit });
    done();
    if (seq !== viewSeq) return;
    if (page.now) setServerNow(page.now);
    clear(list, renderAudit(page.items, { link: (t) => execLink(t) }));
    const next = page.next;
    clear(
      $("#store-pager", root),
      h("button", { type: "button", disabled: !r.after, onclick: () => { state.stack = []; navigate({ after: "" }); } }, "« First"),
      h("button", { type: "button", disabled: !r.after, onclick: () => navigate({ after: state.stack.pop() || "" }) }, "◀ Prev"),
      h("span", { class: "where" }, `${page.items.length} shown`),
      h("button", { type: "button", id: "next", disabled: !next, onclick: () => { state.stack.push(r.after); navigate({ after: String(next) }); } }, "Next ▶"),
    );
  } catch (e) {
    done();
    if (seq !== viewSeq) return;
    if (!quiet) clear(list, errorBox(e, () => load()));
  }
}

export const { show, refresh, leave, onKey } = loadedView(load);
