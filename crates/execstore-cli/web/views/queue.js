// The store's queues, store-wide: the outbox, the armed timers and the pending spawns
// (one view each, `?view=outbox|timers|spawns`), paged with `after` / the timers' cursor.

import { $, clear, h } from "../dom.js";
import { setServerNow } from "../format.js";
import * as records from "../records.js";
import { api, errorBox, loadingLater, navigate, loadedView, state } from "../shell.js";

let viewSeq = 0;

async function load({ quiet = false } = {}) {
  const r = state.route;
  const seq = ++viewSeq;
  const main = $("#main");
  let root = $(".store-view", main);
  if (!root || root.dataset.view !== r.view) {
    const titles = {
      outbox: ["Outbox", "Events committed but not yet delivered by the relay, oldest first. Older than 5 minutes: highlighted."],
      timers: ["Timers", "Armed timers, soonest first. Past their time and not fired yet: highlighted."],
      spawns: ["Spawns", "Children forked but not yet created by the relay, oldest first."],
    };
    const [title, blurb] = titles[r.view];
    root = h(
      "section",
      { class: "store-view", dataset: { view: r.view } },
      h("div", { class: "view-head" }, h("h1", null, title), h("p", { class: "muted" }, blurb),
        r.view === "timers" ? h("label", { class: "check" }, h("input", { type: "checkbox", id: "due-only", checked: r.due, onchange: (e) => navigate({ due: e.target.checked }) }), " due only") : null),
      h("div", { class: "table-wrap", id: "store-list" }),
      h("div", { class: "pager", id: "store-pager" }),
    );
    clear(main, root);
  }
  const list = $("#store-list", root);
  const done = quiet ? () => {} : loadingLater(list);
  try {
    let page;
    if (r.view === "timers") page = await api.get("api/timers", { cursor: r.after, limit: r.limit, due_before: r.due ? "now" : "" });
    else page = await api.get(`api/${r.view}`, { after: r.after, limit: r.limit });
    done();
    if (seq !== viewSeq) return;
    setServerNow(page.now);
    const render = { outbox: records.renderOutbox, timers: records.renderTimers, spawns: records.renderSpawns }[r.view];
    clear(list, render(page.items));
    const next = r.view === "timers" ? page.next_cursor : page.next_after;
    const overdue = list.querySelectorAll("tr.overdue").length;
    clear(
      $("#store-pager", root),
      h("button", { type: "button", disabled: !r.after, onclick: () => { state.stack = []; navigate({ after: "" }); } }, "« First"),
      h("button", { type: "button", disabled: !r.after, onclick: () => navigate({ after: state.stack.pop() || "" }) }, "◀ Prev"),
      h("span", { class: "where" }, `${page.items.length} shown`, overdue ? h("span", { class: "overdue-text" }, ` · ${overdue} overdue`) : ""),
      h("button", { type: "button", id: "next", disabled: next === null || next === undefined, onclick: () => { state.stack.push(r.after); navigate({ after: String(next) }); } }, "Next ▶"),
    );
  } catch (e) {
    done();
    if (seq !== viewSeq) return;
    if (!quiet) clear(list, errorBox(e, () => load()));
  }
}

export const { show, refresh, leave, onKey } = loadedView(load);
