// The execstore monitor UI's shell: plain DOM, no framework. The header's nav, the routes and
// what each view shows come from one table (views/index.js's VIEWS); the shell shows the
// route's view, leaves the one before, refreshes it when the store changes (live), and hands
// it the keys it does not take itself (L: live, r: refresh). State and shared pieces are in
// shell.js, each view in views/.
//
// Rule of the monitor: stored data only ever reaches the page as text (text nodes via `h()`
// and `textContent`); no HTML string is ever parsed. URLs built here are always relative
// query strings ("?view=..."), never taken from stored data.

import { createClient, token } from "./api.js";
import { $, clear, h, span } from "./dom.js";
import { getTimeMode, now, setServerNow, setTimeMode, TIME_MODES } from "./format.js";
import * as records from "./records.js";
import { parseRoute, setViewIds } from "./route.js";
import { VIEWS } from "./views/index.js";
import { api, describe, errorBox, execLink, navigate, refresh, setApi, setHooks, showBanner, state, writeButton } from "./shell.js";

const POLL_MS = 2000;
const THEME_KEY = "execstore.monitor.theme";

// ---------------------------------------------------------------------------------------------
// Theme: the OS setting until the header's toggle picks one, kept for the next visit.

function storedTheme() {
  try {
    const t = localStorage.getItem(THEME_KEY);
    return t === "light" || t === "dark" ? t : null;
  } catch {
    return null;
  }
}

/** The theme in effect: the one picked, else the OS's. */
function currentTheme() {
  return storedTheme() || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}

function applyTheme() {
  const picked = storedTheme();
  if (picked) document.documentElement.dataset.theme = picked;
  else delete document.documentElement.dataset.theme;
  const button = $("#theme");
  if (button) {
    const dark = currentTheme() === "dark";
    button.textContent = dark ? "☾ Dark" : "☀ Light";
    button.setAttribute("aria-pressed", dark ? "true" : "false");
  }
}

function themeToggle() {
  const button = h("button", {
    type: "button", id: "theme", class: "ghost theme-toggle", "aria-label": "Dark mode",
    title: "Switch between light and dark (kept for this browser)",
    onclick: () => {
      try {
        localStorage.setItem(THEME_KEY, currentTheme() === "dark" ? "light" : "dark");
      } catch {
        // Storage refused: this page only.
        document.documentElement.dataset.theme = currentTheme() === "dark" ? "light" : "dark";
        return;
      }
      applyTheme();
    },
  });
  return button;
}

applyTheme();

setViewIds(VIEWS.map((v) => v.id));
const byId = new Map(VIEWS.map((v) => [v.id, v]));

/** The VIEWS row of a route (an unknown view: the first row). */
const viewOf = (route) => byId.get(route.view) || VIEWS[0];

/** Whether a store that holds `holds` shows view `v` (a view of `any` store always). */
const shows = (holds, v) => v.holds === "any" || Boolean(holds[v.holds]);

/** Where a link to `id` goes: that view, or the first listed one whose data the store holds. */
function home(id) {
  const holds = state.info && state.info.holds;
  const wanted = byId.get(id) || VIEWS[0];
  if (!holds || shows(holds, wanted)) return wanted;
  return VIEWS.find((v) => v.nav && shows(holds, v)) || wanted;
}

/** The header's links, one per listed view. */
function buildNav() {
  clear($("nav.views"), VIEWS.filter((v) => v.nav).map((v) => h("a", { href: `?view=${v.id}`, dataset: { view: v.id } }, v.title)));
}

// ---------------------------------------------------------------------------------------------
// Rendering a route

function render(before) {
  const r = state.route;
  for (const a of document.querySelectorAll("[data-view]")) {
    a.classList.toggle("active", a.dataset.view === r.view);
    a.setAttribute("aria-current", a.dataset.view === r.view ? "page" : "false");
  }
  const view = viewOf(r);
  document.title = r.id ? `${r.id} · execstore` : `${view.title} · execstore`;
  if (before && viewOf(before) !== view) viewOf(before).module.leave();
  view.module.show(before);
}

/** Reads the current view again, quietly (live refresh, after a write, or `r`). */
function refreshView() {
  viewOf(state.route).module.refresh();
  const pulse = $("#pulse");
  pulse.classList.remove("beat");
  void pulse.offsetWidth;
  pulse.classList.add("beat");
}

setHooks({ render, refresh: refreshView });

// ---------------------------------------------------------------------------------------------
// Live updates: poll the store's change token; read again only when it moved.

async function poll() {
  if (state.live && !document.hidden) {
    try {
      const { token: changeToken, now: serverNow } = await api.get("api/changes");
      setServerNow(serverNow);
      if (state.changeToken !== null && changeToken !== state.changeToken) refresh();
      state.changeToken = changeToken;
      state.lastCheck = Date.now();
      setOnline(true);
      $("#banner").dataset.kind === "poll" && ($("#banner").hidden = true);
    } catch (e) {
      setOnline(false);
      showBanner(`Live refresh failed: ${describe(e)}`);
      $("#banner").dataset.kind = "poll";
    }
  }
  updateFresh();
  setTimeout(poll, POLL_MS);
}

/** The Live dot: red, and said in words, while the server does not answer. */
function setOnline(online) {
  document.body.classList.toggle("offline", !online);
  const live = $("label.live");
  if (live) live.title = online ? "Refresh when the store changes (key: L)" : "The monitor's server does not answer";
  if (!online) $("#fresh").textContent = "server gone";
}

function updateFresh() {
  if (document.body.classList.contains("offline")) return;
  const fresh = $("#fresh");
  if (!state.live) fresh.textContent = "paused";
  else if (state.lastCheck) {
    const age = (Date.now() - state.lastCheck) / 1000;
    fresh.textContent = age < 1.5 ? "up to date" : `checked ${span(age)} ago`;
  }
}

// ---------------------------------------------------------------------------------------------
// Keyboard: L and r here, the rest to the view (its `onKey` says whether it took the key).

function onKey(e) {
  const tag = (e.target && e.target.tagName) || "";
  // Keys go to text fields; a focused checkbox or button leaves them to the list.
  const typing = tag === "SELECT" || tag === "TEXTAREA" ||
    (tag === "INPUT" && !["checkbox", "radio", "button"].includes(e.target.type));
  const view = viewOf(state.route).module;
  if (e.key === "Escape") {
    if (typing) { e.target.blur(); return; }
    if (view.onKey && view.onKey(e)) e.preventDefault();
    return;
  }
  if (typing || e.metaKey || e.ctrlKey || e.altKey) return;
  // Enter on a focused link or button is its own (a list row's link opens it).
  if (e.key === "Enter" && (tag === "A" || tag === "BUTTON")) return;
  if (e.key === "l" || e.key === "L") $("#live").click();
  else if (e.key === "r") refresh();
  else if (!(view.onKey && view.onKey(e))) return;
  e.preventDefault();
}

// ---------------------------------------------------------------------------------------------
// Start

async function loadInfo() {
  try {
    state.info = await api.get("api/info");
    setServerNow(state.info.now);
    const label = `${state.info.backend}: ${state.info.store}${state.info.prefix ? ` (prefix ${state.info.prefix})` : ""}`;
    $("#store").textContent = label;
    $("#store").title = label;
    // What the store holds: a reflexr user's database has no executions, a harel file no
    // workspace log; the views of what is not there are hidden.
    const holds = state.info.holds || { executions: true, workspaces: false };
    for (const a of document.querySelectorAll(".views a[data-view]")) {
      a.hidden = !shows(holds, viewOf({ view: a.dataset.view }));
    }
    if (!shows(holds, viewOf(state.route))) {
      history.replaceState(null, "", `?view=${home(state.route.view).id}`);
      state.route = parseRoute(location.search);
    }
    // What the monitor warns about the store (a workspace log at a schema version it does
    // not know...), as text.
    const warnings = Array.isArray(state.info.warnings) ? state.info.warnings : [];
    if (warnings.length) showBanner(`Warning: ${warnings.join(" ")}`);
    const mode = $("#mode");
    if (state.info.writable) {
      const input = h("input", { type: "password", id: "token-input", placeholder: "write token", autocomplete: "off", "aria-label": "Write token", value: token.get() || null });
      // A new token: ask again who it is (api/info names the token and its role).
      input.addEventListener("change", () => {
        token.set(input.value.trim());
        loadInfo().then(() => refresh());
      });
      const caller = state.info.caller;
      const who = caller
        ? h("span", { class: "badge caller", id: "caller", title: `Writes are recorded in the audit log as ${caller.name}` }, `${caller.name} · ${caller.role}`)
        : state.info.caller_error
          ? h("span", { class: "badge bad", id: "caller", title: state.info.caller_error }, "unknown token")
          : null;
      clear(mode, h("span", { class: "badge write" }, "writes on"), who, input);
    } else {
      clear(mode, h("span", { class: "badge", title: "Started without --token: nothing can be changed from here" }, "read-only"));
    }
  } catch (e) {
    showBanner(`Cannot read the monitor's info: ${describe(e)}`, () => location.reload());
  }
}

/** The header's switch of how every time is shown (format.js's `when`), kept in the browser. */
function timeModeSwitch() {
  const labels = { relative: "Relative", local: "Local", utc: "UTC" };
  const select = h(
    "select",
    { id: "time-mode", "aria-label": "Show times as", title: "Show every time as relative, local or UTC" },
    TIME_MODES.map((m) => h("option", { value: m }, labels[m])),
  );
  select.value = getTimeMode();
  select.addEventListener("change", () => setTimeMode(select.value));
  return h("label", { class: "time-mode" }, select);
}

/** Starts the UI over `transport` (default: this page's server). */
export async function start({ transport } = {}) {
  setApi(createClient(transport ? { transport } : {}));
  state.route = parseRoute(location.search);
  buildNav();
  $("#mode").before(themeToggle());
  applyTheme();
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", applyTheme);
  // A token handed over in the fragment (#token=...) is kept for the tab, then dropped from
  // the address bar so it is not bookmarked or shared.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get("token")) {
    token.set(fragment.get("token"));
    history.replaceState(null, "", location.pathname + location.search);
  }
  window.addEventListener("popstate", () => {
    const before = state.route;
    state.route = parseRoute(location.search);
    if (state.route.cursor !== before.cursor && state.stack[state.stack.length - 1] === state.route.cursor) state.stack.pop();
    render(before);
  });
  document.addEventListener("keydown", onKey);
  $("#live").closest("label").before(timeModeSwitch());
  $("#live").addEventListener("change", (e) => {
    state.live = e.target.checked;
    document.body.classList.toggle("paused", !state.live);
    updateFresh();
    if (state.live) refresh();
  });
  for (const a of document.querySelectorAll("[data-view], [data-nav]")) {
    a.addEventListener("click", (e) => {
      if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      const view = home(a.dataset.view || a.dataset.nav).id;
      state.stack = [];
      navigate({ ...parseRoute(""), view });
    });
  }
  records.init({
    api: () => api,
    writable: () => Boolean(state.info && state.info.writable),
    execLink,
    writeButton,
  });
  await loadInfo();
  const context = {
    api,
    now,
    errorBox,
    live: () => state.live,
    // Over this page's own server the workspace tail is pushed (SSE); a server without the
    // stream endpoint (the edge) answers 404 and the tail falls back to polling.
    stream: !transport,
  };
  for (const module of new Set(VIEWS.map((v) => v.module))) if (module.init) module.init(context);
  render(null);
  poll();
}

if (!window.EXECSTORE_MANUAL_START) start();
