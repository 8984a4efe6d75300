// The monitor's DOM and time-text helpers, shared by the shell and the views (app.js, shell.js, views/).
// Everything is built as elements and text nodes: stored data never becomes markup.

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  add(el, children);
  return el;
}

export function add(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return add(el, children);
}

export const $ = (sel, root = document) => root.querySelector(sel);

export const pad = (n, w = 2) => String(n).padStart(w, "0");

export function toSeconds(t) {
  if (typeof t === "number" && isFinite(t)) return t;
  if (typeof t === "string") {
    const ms = Date.parse(t);
    return isNaN(ms) ? null : ms / 1000;
  }
  return null;
}

export function absTime(t) {
  const s = toSeconds(t);
  if (s === null) return "–";
  const d = new Date(s * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function span(seconds) {
  const s = Math.abs(seconds);
  if (s < 1) return `${Math.round(s * 1000)}ms`;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(Math.floor(s % 60))}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}
