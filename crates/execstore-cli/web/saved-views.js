// Saved views: a name for a filter set of the executions list or of a workspace's log, runs
// or dead letters (its URL's query), kept in this browser (localStorage) or in the store for
// the team (`api/views`: saving and deleting are writes, with a reason, recorded in the
// audit log). Opening one goes to its URL: the URL stays the source of truth. Each page's
// menu lists the views of its kind (a workspace page's: those whose query names
// `view=workspaces`; the executions list's: the others).

import { clear, h } from "./dom.js";
import { reasonConfirm } from "./reason.js";

const KEY = "execstore.monitor.views";

/** The views kept in this browser: [{name, query}], by name. */
export function browserViews() {
  try {
    const list = JSON.parse(localStorage.getItem(KEY) || "[]");
    return Array.isArray(list) ? list.filter((v) => v && typeof v.name === "string" && typeof v.query === "string") : [];
  } catch {
    return [];
  }
}

function keepBrowserViews(list) {
  try {
    localStorage.setItem(KEY, JSON.stringify(list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))));
    return true;
  } catch {
    return false;
  }
}

/** The list's query as saved: the URL's, without the open execution or envelope and the page. */
export function currentQuery(search = location.search) {
  const p = new URLSearchParams(search);
  for (const k of ["id", "env", "cursor", "after"]) p.delete(k);
  return p.toString();
}

/** The kind of page a saved query opens: `"workspaces"` or `"executions"`. */
export function kindOf(query) {
  return new URLSearchParams(query).get("view") === "workspaces" ? "workspaces" : "executions";
}

/** A saved view's link: the list with its query. */
function href(query) {
  return query ? `?${query}` : location.pathname;
}

/**
 * The "Saved views" menu. `ctx`: {api, writable, caller, hasToken, needToken, open(query),
 * kind}: `kind` (`"executions"`, the default, or `"workspaces"`) picks the views it lists.
 */
export function menu(ctx) {
  const body = h("div", { class: "saved-views-menu", id: "saved-views-menu" });
  const root = h("details", { class: "saved-views", id: "saved-views" }, h("summary", { class: "ghost" }, "Saved views"), body);
  let seq = 0;
  const status = (text, bad = false) => h("p", { class: `muted${bad ? " bad" : ""}`, id: "saved-views-status", role: "status" }, text);

  async function render(note = null) {
    const mine = seq + 1;
    seq = mine;
    let team = [];
    let teamError = null;
    const kind = ctx.kind || "executions";
    const ours = (v) => kindOf(v.query) === kind;
    try {
      team = (await ctx.api.get("api/views")).items.filter(ours);
    } catch (e) {
      teamError = e.message;
    }
    if (mine !== seq) return;
    const open = (query) => (e) => {
      if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      root.open = false;
      ctx.open(query);
    };
    const local = browserViews().filter(ours);
    const name = h("input", { type: "text", id: "view-name", placeholder: "Name this view", maxlength: "200", autocomplete: "off", "aria-label": "Name of the view to save" });
    const formRow = h("div", { class: "save-row" });
    const saveLocal = h("button", { type: "button", class: "small", id: "save-local" }, "Save in this browser");
    const saveTeam = ctx.writable ? h("button", { type: "button", class: "small", id: "save-team" }, "Save for the team") : null;
    const named = () => {
      const v = name.value.trim();
      if (!v) name.focus();
      return v;
    };
    saveLocal.addEventListener("click", () => {
      const n = named();
      if (!n) return;
      const query = currentQuery();
      const ok = keepBrowserViews([...browserViews().filter((v) => v.name !== n), { name: n, query }]);
      render(ok ? `Saved "${n}" in this browser.` : "This browser refused to keep it (storage is off).");
    });
    if (saveTeam) {
      saveTeam.addEventListener("click", () => {
        const n = named();
        if (!n) return;
        if (!ctx.hasToken()) {
          ctx.needToken();
          return;
        }
        clear(formRow, reasonConfirm({
          label: "Save",
          question: `Save "${n}" for the team?`,
          onNo: () => render(),
          onYes: async (reason) => {
            try {
              await ctx.api.put(`api/views/${encodeURIComponent(n)}`, { query: currentQuery(), reason });
              render(`Saved "${n}" for the team.`);
            } catch (e) {
              render(`Not saved: ${e.message}`);
            }
          },
        }));
        formRow.querySelector(".reason-input").focus();
      });
    }
    clear(formRow, name, " ", saveLocal, " ", saveTeam);

    const localList = local.length
      ? h("ul", { class: "views-list", id: "views-browser" }, local.map((v) =>
        h("li", null,
          h("a", { href: href(v.query), class: "saved-view", dataset: { scope: "browser", name: v.name }, onclick: open(v.query) }, v.name),
          " ",
          h("button", {
            type: "button", class: "ghost small", title: `Forget "${v.name}"`, "aria-label": `Forget ${v.name}`, dataset: { forget: v.name },
            onclick: () => { keepBrowserViews(browserViews().filter((x) => x.name !== v.name)); render(`Forgot "${v.name}".`); },
          }, "×"))))
      : h("p", { class: "muted" }, "None yet.");

    const teamItem = (v) => {
      const li = h("li", null,
        h("a", { href: href(v.query), class: "saved-view", dataset: { scope: "team", name: v.name }, onclick: open(v.query) }, v.name),
        h("span", { class: "muted" }, ` · ${v.owner}`));
      if (ctx.writable) {
        const del = h("button", { type: "button", class: "ghost small", title: `Delete "${v.name}" for everyone`, "aria-label": `Delete ${v.name}`, dataset: { delete: v.name } }, "×");
        del.addEventListener("click", () => {
          if (!ctx.hasToken()) {
            ctx.needToken();
            return;
          }
          del.replaceWith(reasonConfirm({
            label: "Delete",
            question: `Delete "${v.name}" for everyone?`,
            onNo: () => render(),
            onYes: async (reason) => {
              try {
                await ctx.api.del(`api/views/${encodeURIComponent(v.name)}`, undefined, { reason });
                render(`Deleted "${v.name}".`);
              } catch (e) {
                render(`Not deleted: ${e.message}`);
              }
            },
          }));
          li.querySelector(".reason-input").focus();
        });
        li.append(" ", del);
      }
      return li;
    };
    const teamList = teamError
      ? h("p", { class: "muted bad" }, `Cannot read the team's views: ${teamError}`)
      : team.length
        ? h("ul", { class: "views-list", id: "views-team" }, team.map(teamItem))
        : h("p", { class: "muted" }, "None yet.");
    clear(
      body,
      h("h2", null, "In this browser"),
      localList,
      h("h2", null, "Team (kept in the store)"),
      teamList,
      formRow,
      note ? status(note, /^Not /.test(note)) : null,
    );
  }
  root.addEventListener("toggle", () => {
    if (!root.open) return;
    // What was shown last time is stale: nothing of it is clickable while the lists load.
    clear(body, h("p", { class: "muted" }, "Loading…"));
    render();
  });
  return root;
}
