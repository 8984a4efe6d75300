// The statechart pictures: an execution's graph (on its detail) and a definition's graph
// over every execution of it (`?view=definition&definition=D`), from the monitor's API
// (`/api/executions/{id}/chart`, `/api/definitions/{id}/chart`): drawn from the machine's
// stored definition when there is one (`drawChart`), else from the traces (`drawGraph`, the
// answer's `graph`, as `/graph` gives it).
//
// Laid out by dagre (web/vendor/dagre.esm.js, shipped with the monitor; see
// web/vendor/README.md) and drawn as SVG built with DOM calls: every stored name (a state,
// an event, a guard, a definition) reaches the page as a text node, never as markup. Links
// are relative query strings built with URLSearchParams.

import { graphlib, layout } from "./vendor/dagre.esm.js";
import { clear, h } from "./dom.js";

const SVG_NS = "http://www.w3.org/2000/svg";
/** Approximate advance of one character at the node (12px) and edge (11px) monospace sizes. */
const CHAR_W = 7.3;
const LABEL_CHAR_W = 6.7;
const MAX_NAME = 36;
const MAX_LABEL = 30;
const HEAT_STEPS = 5;
/**
 * The list page's parameter that finds the executions in a state (filters.js: `find`, sent
 * as the API's `search`: an id prefix, or the state and the states inside it), used by the
 * definition picture's click through.
 */
export const SEARCH_PARAM = "find";

let drawn = 0;

/** An SVG element with attributes and children (strings become text nodes). */
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const cut = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const plural = (n, one, many = `${one}s`) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

/** The definition picture's address. */
export function definitionHref(definition) {
  return `?${new URLSearchParams({ view: "definition", definition })}`;
}

/** The execution list filtered to a definition's executions in state `path` (or inside it). */
export function listHref(definition, path) {
  return `?${new URLSearchParams({ definition, [SEARCH_PARAM]: path })}`;
}

/** Moves to `href` inside the app (its popstate handler reads the new route). */
function go(href) {
  history.pushState(null, "", href);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

/** A link that moves inside the app on a plain click (the address is a relative query). */
function appLink(href, props, ...children) {
  const a = h("a", { ...props, href }, ...children);
  a.addEventListener("click", (e) => {
    if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    go(href);
  });
  return a;
}

// ---------------------------------------------------------------------------------------------
// Layout and drawing

/** What a transition's label says: its events (with counts) and guards. */
function edgeLines(t) {
  const events = t.events.map((e) => (e.count > 1 ? `${e.name} ×${e.count}` : e.name));
  if (t.other_events) events.push(`+${t.other_events}`);
  const lines = [cut(events.join(", ") || "(no event)", MAX_LABEL)];
  if (t.guards.length) lines.push(cut(`[${t.guards.map((g) => g.name).join(", ")}]`, MAX_LABEL));
  return lines;
}

/**
 * Where the line from `node`'s centre towards `toward` leaves the box drawn for it, when it is
 * drawn narrower than laid out (else `at`, dagre's end point).
 */
function clipTo(node, toward, at) {
  if (!node || node.drawWidth === undefined || node.drawWidth >= node.width) return at;
  const dx = toward.x - node.x;
  const dy = toward.y - node.y;
  const w = node.drawWidth / 2;
  const hh = node.height / 2;
  if (!dx && !dy) return at;
  if (Math.abs(dy) * w > Math.abs(dx) * hh) {
    const sy = dy < 0 ? -hh : hh;
    return { x: node.x + (sy * dx) / dy, y: node.y + sy };
  }
  const sx = dx < 0 ? -w : w;
  return { x: node.x + sx, y: node.y + (sx * dy) / dx };
}

/**
 * Lays out and draws `graph` (the API's `{states, transitions}`). `mode` is "execution"
 * (the active state highlighted) or "definition" (states coloured by how many executions are
 * in them now, each a link made by `hrefOf(path)`).
 */
export function drawGraph(graph, { mode, active = null, hrefOf = null } = {}) {
  const id = ++drawn;
  const g = new graphlib.Graph({ compound: true });
  g.setGraph({ rankdir: "TB", nodesep: 30, ranksep: 46, edgesep: 16, marginx: 16, marginy: 24 });
  g.setDefaultEdgeLabel(() => ({}));
  const maxNow = Math.max(1, ...graph.states.map((st) => st.now));
  const activeWithin = new Set();
  for (let p = active; p; p = p.includes(".") ? p.slice(0, p.lastIndexOf(".")) : null) activeWithin.add(p);

  // A self-transition is drawn as a loop on its node's right with its label beside it: the
  // node is laid out that much wider on both sides (drawn at its own width, centred), so no
  // other node or label is placed where the loop and its label go.
  const loopRoom = new Map();
  for (const t of graph.transitions) {
    if (t.from === null || t.from !== t.to) continue;
    const lines = [`×${t.count}`, ...edgeLines(t)];
    const room = 40 + Math.ceil(Math.max(...lines.map((l) => l.length)) * LABEL_CHAR_W) + 8;
    loopRoom.set(`s:${t.from}`, Math.max(loopRoom.get(`s:${t.from}`) || 0, room));
  }
  for (const st of graph.states) {
    if (st.composite) g.setNode(`c:${st.path}`, { cluster: true, st });
    if (!st.composite || st.visited) {
      const name = cut(st.name, MAX_NAME);
      const sub = mode === "definition" ? (st.now ? `${st.now.toLocaleString()} now` : "") : (st.entered ? `entered ×${st.entered}` : "");
      const width = Math.max(64, Math.ceil(Math.max(name.length * CHAR_W, sub.length * LABEL_CHAR_W)) + 22);
      const room = loopRoom.get(`s:${st.path}`) || 0;
      g.setNode(`s:${st.path}`, { st, name, sub, width: width + 2 * room, drawWidth: width, height: sub ? 42 : 30 });
    }
  }
  for (const st of graph.states) {
    const up = st.parent ? `c:${st.parent}` : undefined;
    if (st.composite && up) g.setParent(`c:${st.path}`, up);
    if (g.hasNode(`s:${st.path}`)) {
      const parent = st.composite ? `c:${st.path}` : up;
      if (parent) g.setParent(`s:${st.path}`, parent);
    }
  }
  const loops = [];
  for (const t of graph.transitions) {
    const v = t.from === null ? "start" : `s:${t.from}`;
    const w = t.to === null ? "end" : `s:${t.to}`;
    for (const [pseudo, on] of [["start", t.from === null], ["end", t.to === null]]) {
      if (on && !g.hasNode(pseudo)) g.setNode(pseudo, { pseudo, width: 16, height: 16 });
    }
    const lines = [`×${t.count}`, ...edgeLines(t)];
    if (v === w) {
      loops.push({ v, t, lines });
      continue;
    }
    const width = Math.ceil(Math.max(...lines.map((l) => l.length)) * LABEL_CHAR_W) + 10;
    g.setEdge(v, w, { t, lines, width, height: lines.length * 13 + 6, labelpos: "c" });
  }
  layout(g);

  const maxCount = Math.max(1, ...graph.transitions.map((t) => t.count));
  const strokeOf = (count) => (1 + 3 * Math.log(count) / Math.log(maxCount + 1)).toFixed(2);
  const clusters = s("g", { class: "clusters" });
  const edges = s("g", { class: "edges" });
  const labels = s("g", { class: "edge-labels" });
  const nodes = s("g", { class: "nodes" });
  let right = g.graph().width || 0;

  // Clusters: composite states, outermost first (drawn below what they hold).
  const clusterIds = g.nodes().filter((n) => g.node(n).cluster);
  const depthOf = (n) => g.node(n).st.depth;
  clusterIds.sort((a, b) => depthOf(a) - depthOf(b));
  for (const n of clusterIds) {
    const c = g.node(n);
    const x = c.x - c.width / 2;
    const y = c.y - c.height / 2 - 14;
    const label = mode === "definition" && c.st.now_within ? `${cut(c.st.name, MAX_NAME)} (${c.st.now_within.toLocaleString()} inside)` : cut(c.st.name, MAX_NAME);
    // At least as wide as its name (dagre sizes a cluster by what it holds).
    const width = Math.max(c.width, Math.ceil(label.length * LABEL_CHAR_W) + 20);
    right = Math.max(right, x + width);
    clusters.append(s(
      "g",
      { class: `cluster${activeWithin.has(c.st.path) ? " active-within" : ""}`, "data-path": c.st.path, "data-within": c.st.now_within },
      s("title", null, c.st.path),
      s("rect", { x, y, width, height: c.height + 14, rx: 10 }),
      s("text", { x: x + 10, y: y + 13, class: "cluster-name" }, label),
    ));
  }

  const marker = `arrow-${id}`;
  const defs = s("defs", null, s("marker", { id: marker, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" })));
  const labelBox = (x, y, lines, t) => s(
    "g",
    { class: "edge-label", "data-from": t.from ?? "", "data-to": t.to ?? "", "data-count": t.count },
    s("title", null, `${t.from ?? "(start)"} → ${t.to ?? "(none)"}: ${plural(t.count, "step")}`),
    s("rect", { x: x - 3, y: y - 2, width: Math.ceil(Math.max(...lines.map((l) => l.length)) * LABEL_CHAR_W) + 6, height: lines.length * 13 + 4, rx: 3 }),
    lines.map((l, i) => s("text", { x, y: y + 10 + i * 13, class: i === 0 ? "count" : l.startsWith("[") ? "guard" : "event" }, l)),
  );
  for (const e of g.edges()) {
    const edge = g.edge(e);
    const pts = edge.points.map((p) => ({ ...p }));
    // A node laid out wider than drawn (room for its loop): the edge ends at the drawn box.
    if (pts.length > 1) {
      pts[0] = clipTo(g.node(e.v), pts[1], pts[0]);
      pts[pts.length - 1] = clipTo(g.node(e.w), pts[pts.length - 2], pts[pts.length - 1]);
    }
    const d = pts.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
    edges.append(s("path", { d, class: "edge", "stroke-width": strokeOf(edge.t.count), "marker-end": `url(#${marker})`, "data-from": edge.t.from ?? "", "data-to": edge.t.to ?? "" }));
    labels.append(labelBox(edge.x - edge.width / 2 + 5, edge.y - edge.height / 2 + 3, edge.lines, edge.t));
  }
  // Self-transitions (an event handled in place): a loop on the node's right side.
  for (const { v, t, lines } of loops) {
    const n = g.node(v);
    const x = n.x + (n.drawWidth ?? n.width) / 2;
    const d = `M${x},${n.y - 7} C${x + 34},${n.y - 26} ${x + 34},${n.y + 26} ${x},${n.y + 7}`;
    edges.append(s("path", { d, class: "edge loop", "stroke-width": strokeOf(t.count), "marker-end": `url(#${marker})`, "data-from": t.from ?? "", "data-to": t.to ?? "" }));
    labels.append(labelBox(x + 32, n.y - 8, lines, t));
    right = Math.max(right, x + 40 + Math.max(...lines.map((l) => l.length)) * LABEL_CHAR_W);
  }

  for (const n of g.nodes()) {
    const node = g.node(n);
    if (node.cluster) continue;
    if (node.pseudo) {
      nodes.append(s("g", { class: `pseudo ${node.pseudo}` }, s("title", null, node.pseudo === "start" ? "start: the first step" : "no active state"), node.pseudo === "start"
        ? s("circle", { cx: node.x, cy: node.y, r: 7 })
        : [s("circle", { cx: node.x, cy: node.y, r: 8, class: "ring" }), s("circle", { cx: node.x, cy: node.y, r: 4 })]));
      continue;
    }
    const st = node.st;
    const drawWidth = node.drawWidth ?? node.width;
    const x = node.x - drawWidth / 2;
    const y = node.y - node.height / 2;
    let cls = "state";
    if (mode === "execution" && st.path === active) cls += " active";
    if (mode === "definition" && st.now) cls += ` heat-${Math.min(HEAT_STEPS, Math.ceil((HEAT_STEPS * st.now) / maxNow))}`;
    const statuses = Object.entries(st.now_by_status || {}).map(([k, v]) => `${k} ${v.toLocaleString()}`).join(", ");
    const tip = [st.path, st.entered ? `entered ${plural(st.entered, "time")}` : null, st.now ? `now: ${statuses}` : null].filter(Boolean).join("\n");
    const body = [
      s("title", null, tip),
      s("rect", { x, y, width: drawWidth, height: node.height, rx: 8 }),
      s("text", { x: node.x, y: y + 19, class: "state-name", "text-anchor": "middle" }, node.name),
      node.sub ? s("text", { x: node.x, y: y + 34, class: "state-sub", "text-anchor": "middle" }, node.sub) : null,
    ];
    const group = s("g", { class: cls, "data-path": st.path, "data-now": st.now, "data-entered": st.entered }, body);
    if (hrefOf) {
      const href = hrefOf(st.path);
      const a = s("a", { href, class: "state-link" }, group);
      a.addEventListener("click", (e) => {
        if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        go(href);
      });
      nodes.append(a);
    } else {
      nodes.append(group);
    }
  }
  // A graph with nothing laid out yet (no state, no step) has no extent: dagre says -Infinity.
  const finite = (n) => (Number.isFinite(n) ? n : 0);
  const width = Math.ceil(Math.max(finite(right), finite(g.graph().width)) + 8);
  const height = Math.ceil(finite(g.graph().height) + 8);
  return s(
    "svg",
    { xmlns: SVG_NS, class: `statechart ${mode}`, viewBox: `0 -14 ${width} ${height + 14}`, width, height: height + 14, role: "img", "aria-label": `statechart: ${plural(graph.states.length, "state")}, ${plural(graph.transitions.length, "transition")}` },
    defs, clusters, edges, nodes, labels,
  );
}

// ---------------------------------------------------------------------------------------------
// A chart drawn from the machine's definition (`/chart`): every state and transition it
// declares, nested and parallel states as clusters (each with a small box of its own name for
// the edges that start or end on it), initial states marked with a dot, final ones with a
// double border, the states an execution is in highlighted.

/** What a chart edge's label says: its label, and how many steps took it. */
function chartEdgeLines(e) {
  const lines = [cut(e.label || "(event)", MAX_LABEL)];
  if (e.count !== null && e.count !== undefined) lines.push(`×${e.count.toLocaleString()}`);
  return lines;
}

/**
 * Lays out and draws `chart` (the API's `{nodes, edges}`), `mode` "execution" (its states
 * marked `active` highlighted) or "definition" (coloured by executions now, each a link).
 */
export function drawChart(chart, { mode, hrefOf = null } = {}) {
  const id = ++drawn;
  const g = new graphlib.Graph({ compound: true, multigraph: true });
  g.setGraph({ rankdir: "TB", nodesep: 30, ranksep: 46, edgesep: 16, marginx: 16, marginy: 24 });
  g.setDefaultEdgeLabel(() => ({}));
  const byId = new Map(chart.nodes.map((n) => [n.id, n]));
  const holds = new Set(chart.nodes.filter((n) => n.parent).map((n) => n.parent));
  const maxNow = Math.max(1, ...chart.nodes.map((n) => n.now));
  // The machine itself is the picture: its states are drawn at the top level.
  const drawnParent = (n) => (n.parent && byId.get(n.parent)?.parent ? `c:${n.parent}` : undefined);
  for (const n of chart.nodes) {
    if (!n.parent) continue;
    if (holds.has(n.id)) g.setNode(`c:${n.id}`, { cluster: true, n });
    const name = cut(n.key, MAX_NAME);
    const sub = mode === "definition" && n.now ? `${n.now.toLocaleString()} now` : n.kind === "parallel" ? "parallel" : "";
    const width = Math.max(64, Math.ceil(Math.max(name.length * CHAR_W, sub.length * LABEL_CHAR_W)) + 22) + (n.initial ? 14 : 0);
    g.setNode(`s:${n.id}`, { n, name, sub, width, height: sub ? 42 : 30 });
  }
  for (const n of chart.nodes) {
    if (!n.parent) continue;
    const up = drawnParent(n);
    if (holds.has(n.id)) {
      if (up) g.setParent(`c:${n.id}`, up);
      g.setParent(`s:${n.id}`, `c:${n.id}`);
    } else if (up) {
      g.setParent(`s:${n.id}`, up);
    }
  }
  const loops = [];
  chart.edges.forEach((e, i) => {
    const v = `s:${e.from}`;
    if (!g.hasNode(v)) return;
    const targets = e.to.filter((t) => g.hasNode(`s:${t}`));
    const lines = chartEdgeLines(e);
    if (!targets.length || targets.every((t) => `s:${t}` === v)) {
      loops.push({ v, e, lines });
      return;
    }
    for (const t of targets) {
      const width = Math.ceil(Math.max(...lines.map((l) => l.length)) * LABEL_CHAR_W) + 10;
      g.setEdge(v, `s:${t}`, { e, to: t, lines, width, height: lines.length * 13 + 6, labelpos: "c" }, `e${i}:${t}`);
    }
  });
  layout(g);

  const maxCount = Math.max(1, ...chart.edges.map((e) => e.count || 0));
  const strokeOf = (count) => (1 + 3 * Math.log((count || 0) + 1) / Math.log(maxCount + 1)).toFixed(2);
  const clusters = s("g", { class: "clusters" });
  const edges = s("g", { class: "edges" });
  const labels = s("g", { class: "edge-labels" });
  const nodes = s("g", { class: "nodes" });
  let right = g.graph().width || 0;
  const clusterIds = g.nodes().filter((k) => g.node(k).cluster);
  clusterIds.sort((a, b) => g.node(a).n.depth - g.node(b).n.depth);
  for (const k of clusterIds) {
    const c = g.node(k);
    const x = c.x - c.width / 2;
    const y = c.y - c.height / 2 - 14;
    const label = `${cut(c.n.key, MAX_NAME)}${c.n.kind === "parallel" ? " (parallel)" : ""}`;
    const width = Math.max(c.width, Math.ceil(label.length * LABEL_CHAR_W) + 20);
    right = Math.max(right, x + width);
    clusters.append(s(
      "g",
      { class: `cluster ${c.n.kind}${c.n.active ? " active-within" : ""}`, "data-path": c.n.path, "data-id": c.n.id },
      s("title", null, c.n.id),
      s("rect", { x, y, width, height: c.height + 14, rx: 10 }),
      s("text", { x: x + 10, y: y + 13, class: "cluster-name" }, label),
    ));
  }
  const marker = `arrow-${id}`;
  const defs = s("defs", null, s("marker", { id: marker, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" })));
  const labelBox = (x, y, lines, e, to) => s(
    "g",
    { class: `edge-label ${e.kind}`, "data-from": e.from, "data-to": to ?? "", "data-kind": e.kind, "data-event": e.event, "data-count": e.count ?? "" },
    s("title", null, `${e.from} → ${to ?? "(no target)"}: ${e.event || e.kind}${e.count === null || e.count === undefined ? "" : `, ${plural(e.count, "step")}`}`),
    s("rect", { x: x - 3, y: y - 2, width: Math.ceil(Math.max(...lines.map((l) => l.length)) * LABEL_CHAR_W) + 6, height: lines.length * 13 + 4, rx: 3 }),
    lines.map((l, i) => s("text", { x, y: y + 10 + i * 13, class: i === 0 ? "event" : "count" }, l)),
  );
  for (const k of g.edges()) {
    const edge = g.edge(k);
    const d = edge.points.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
    edges.append(s("path", { d, class: `edge ${edge.e.kind}`, "stroke-width": strokeOf(edge.e.count), "marker-end": `url(#${marker})`, "data-from": edge.e.from, "data-to": edge.to }));
    labels.append(labelBox(edge.x - edge.width / 2 + 5, edge.y - edge.height / 2 + 3, edge.lines, edge.e, edge.to));
  }
  // Several loops on one state are stacked down its right side.
  const loopsAt = new Map();
  for (const { v, e, lines } of loops) {
    const n = g.node(v);
    const k = loopsAt.get(v) || 0;
    loopsAt.set(v, k + 1);
    const x = n.x + n.width / 2;
    const y = n.y + k * 30;
    const d = `M${x},${y - 7} C${x + 30},${y - 22} ${x + 30},${y + 22} ${x},${y + 7}`;
    edges.append(s("path", { d, class: `edge loop ${e.kind}${e.to.length ? "" : " targetless"}`, "stroke-width": strokeOf(e.count), "marker-end": `url(#${marker})`, "data-from": e.from, "data-to": e.to[0] ?? "" }));
    labels.append(labelBox(x + 30, y - 8, lines, e, e.to[0] ?? null));
    right = Math.max(right, x + 36 + Math.max(...lines.map((l) => l.length)) * LABEL_CHAR_W);
  }
  for (const k of g.nodes()) {
    const node = g.node(k);
    if (node.cluster) continue;
    const n = node.n;
    const x = node.x - node.width / 2;
    const y = node.y - node.height / 2;
    let cls = `state ${n.kind}`;
    if (holds.has(n.id)) cls += " composite";
    if (n.initial) cls += " initial";
    if (mode === "execution" && n.active) cls += " active";
    if (mode === "definition" && n.now) cls += ` heat-${Math.min(HEAT_STEPS, Math.ceil((HEAT_STEPS * n.now) / maxNow))}`;
    const tx = node.x + (n.initial ? 7 : 0);
    const body = [
      s("title", null, [n.id, n.kind, n.initial ? "initial" : null, n.now ? `${n.now.toLocaleString()} executions now` : null].filter(Boolean).join("\n")),
      s("rect", { x, y, width: node.width, height: node.height, rx: 8 }),
      n.kind === "final" ? s("rect", { x: x + 3, y: y + 3, width: node.width - 6, height: node.height - 6, rx: 6, class: "final-inner" }) : null,
      n.initial ? s("circle", { cx: x + 10, cy: node.y, r: 4, class: "initial-dot" }) : null,
      s("text", { x: tx, y: y + 19, class: "state-name", "text-anchor": "middle" }, node.name),
      node.sub ? s("text", { x: tx, y: y + 34, class: "state-sub", "text-anchor": "middle" }, node.sub) : null,
    ];
    const group = s("g", { class: cls, "data-path": n.path, "data-id": n.id, "data-now": n.now, "data-kind": n.kind }, body);
    if (hrefOf) {
      const href = hrefOf(n.path);
      const a = s("a", { href, class: "state-link" }, group);
      a.addEventListener("click", (ev) => {
        if (ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.button !== 0) return;
        ev.preventDefault();
        go(href);
      });
      nodes.append(a);
    } else {
      nodes.append(group);
    }
  }
  const finite = (v) => (Number.isFinite(v) ? v : 0);
  const width = Math.ceil(Math.max(finite(right), finite(g.graph().width)) + 8);
  const height = Math.ceil(finite(g.graph().height) + 8);
  return s(
    "svg",
    { xmlns: SVG_NS, class: `statechart chart ${mode}`, viewBox: `0 -14 ${width} ${height + 14}`, width, height: height + 14, role: "img", "aria-label": `statechart of ${chart.root}: ${plural(chart.nodes.length - 1, "state")}, ${plural(chart.edges.length, "transition")}` },
    defs, clusters, edges, nodes, labels,
  );
}

/** The chart's transitions as a table. */
function chartTable(chart) {
  if (!chart.edges.length) return null;
  return h(
    "details",
    { class: "graph-transitions chart-transitions" },
    h("summary", null, `Transitions (${chart.edges.length})`),
    h(
      "table",
      { class: "grid" },
      h("thead", null, h("tr", null, ["From", "To", "Kind", "Event", "Steps"].map((c) => h("th", null, c)))),
      h("tbody", null, chart.edges.map((e) => h(
        "tr",
        null,
        h("td", { class: "mono" }, e.from),
        h("td", { class: "mono" }, e.to.join(", ") || "(no target)"),
        h("td", null, e.kind),
        h("td", { class: "mono" }, e.label),
        h("td", { class: "num" }, e.count === null || e.count === undefined ? "" : e.count.toLocaleString()),
      ))),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// The viewer: every picture fits its frame's width, and zooms and pans (buttons, Ctrl+wheel or
// a trackpad's pinch, drag; two fingers pinch on a touch screen). It only moves the SVG's
// viewBox, so the drawing (and its links) stays as drawn.

const MAX_ZOOM = 8;

/** `svg` (from `drawGraph`) in a frame with −, + and Fit. */
export function viewer(svg) {
  const [x0, y0, w0, h0] = svg.getAttribute("viewBox").split(" ").map(Number);
  svg.style.setProperty("--natural-width", `${w0}px`);
  const view = { x: x0, y: y0, w: w0, h: h0 };
  const level = h("span", { class: "zoom-level", "aria-live": "polite" });
  const wrap = h("div", { class: "graph-wrap zoomable" }, svg);
  const set = () => {
    view.w = Math.min(w0, Math.max(w0 / MAX_ZOOM, view.w));
    view.h = (view.w / w0) * h0;
    view.x = Math.min(x0 + w0 - view.w, Math.max(x0, view.x));
    view.y = Math.min(y0 + h0 - view.h, Math.max(y0, view.y));
    svg.setAttribute("viewBox", `${view.x.toFixed(1)} ${view.y.toFixed(1)} ${view.w.toFixed(1)} ${view.h.toFixed(1)}`);
    const zoom = w0 / view.w;
    svg.dataset.zoom = zoom.toFixed(3);
    level.textContent = `${Math.round(zoom * 100)}%`;
  };
  /** Zooms by `factor` keeping the point at (`fx`, `fy`) (fractions of the frame) in place. */
  const zoomBy = (factor, fx = 0.5, fy = 0.5) => {
    const w = Math.min(w0, Math.max(w0 / MAX_ZOOM, view.w / factor));
    const hh = (w / w0) * h0;
    view.x += (view.w - w) * fx;
    view.y += (view.h - hh) * fy;
    view.w = w;
    set();
  };
  const fit = () => {
    Object.assign(view, { x: x0, y: y0, w: w0, h: h0 });
    set();
  };
  const unitsPerPx = () => view.w / Math.max(1, svg.getBoundingClientRect().width);
  wrap.addEventListener("wheel", (e) => {
    if (!e.ctrlKey && !e.metaKey) return; // plain wheel scrolls the page
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    zoomBy(Math.exp(-e.deltaY / 300), (e.clientX - r.left) / r.width, (e.clientY - r.top) / r.height);
  }, { passive: false });
  // Drag pans (after a few pixels, so a click on a state still follows its link); two
  // pointers pinch.
  const pointers = new Map();
  let drag = null;
  let pinch = null;
  wrap.addEventListener("pointerdown", (e) => {
    pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      pinch = { d: Math.hypot(a.x - b.x, a.y - b.y), w: view.w };
      drag = null;
    } else if (pointers.size === 1) {
      drag = { x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false, id: e.pointerId };
    }
  });
  wrap.addEventListener("pointermove", (e) => {
    if (!pointers.has(e.pointerId)) return;
    pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (pinch && pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      const d = Math.hypot(a.x - b.x, a.y - b.y);
      if (pinch.d > 0) zoomBy(view.w / (pinch.w * pinch.d / d));
      return;
    }
    if (!drag) return;
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) {
      drag.moved = true;
      wrap.classList.add("panning");
      wrap.setPointerCapture(e.pointerId);
    }
    const k = unitsPerPx();
    view.x = drag.vx - dx * k;
    view.y = drag.vy - dy * k;
    set();
  });
  const end = (e) => {
    pointers.delete(e.pointerId);
    if (pointers.size < 2) pinch = null;
    if (drag && drag.id === e.pointerId) {
      if (drag.moved) {
        // The click that ends a drag does not follow a link.
        wrap.addEventListener("click", (c) => { c.preventDefault(); c.stopPropagation(); }, { capture: true, once: true });
      }
      drag = null;
      wrap.classList.remove("panning");
    }
  };
  wrap.addEventListener("pointerup", end);
  wrap.addEventListener("pointercancel", end);
  const tools = h(
    "div",
    { class: "graph-tools", role: "group", "aria-label": "Zoom" },
    h("button", { type: "button", class: "small zoom-out", "aria-label": "Zoom out", title: "Zoom out (Ctrl+wheel)", onclick: () => zoomBy(1 / 1.4) }, "−"),
    h("button", { type: "button", class: "small zoom-in", "aria-label": "Zoom in", title: "Zoom in (Ctrl+wheel)", onclick: () => zoomBy(1.4) }, "+"),
    h("button", { type: "button", class: "small zoom-fit", title: "The whole picture in the frame's width", onclick: fit }, "Fit"),
    level,
    h("span", { class: "muted small" }, "drag to pan"),
  );
  set();
  return h("div", { class: "graph-viewer" }, tools, wrap);
}

/** The transitions as a table (the same data as text, for reading and for searching). */
function transitionsTable(graph) {
  if (!graph.transitions.length) return null;
  const rows = [...graph.transitions].sort((a, b) => b.count - a.count);
  return h(
    "details",
    { class: "graph-transitions" },
    h("summary", null, `Transitions (${graph.transitions.length})`),
    h(
      "table",
      { class: "grid" },
      h("thead", null, h("tr", null, ["From", "To", "Steps", "Events", "Guards"].map((c) => h("th", null, c)))),
      h("tbody", null, rows.map((t) => h(
        "tr",
        null,
        h("td", { class: "mono" }, t.from ?? "(start)"),
        h("td", { class: "mono" }, t.to ?? "(none)"),
        h("td", { class: "num" }, t.count.toLocaleString()),
        h("td", null, t.events.map((e) => `${e.name} ×${e.count}`).join(", "), t.other_events ? ` +${t.other_events}` : ""),
        h("td", null, t.guards.map((g) => `${g.name} ×${g.count}`).join(", ")),
      ))),
    ),
  );
}

function note(text) {
  return h("p", { class: "muted graph-note" }, text);
}

// ---------------------------------------------------------------------------------------------
// An execution's picture (a section of its detail)

/** One section per execution, kept across live refreshes (no flicker; redrawn on change). */
const sections = new Map();

/**
 * The "Statechart" section of an execution's detail: fetched, laid out and drawn; redrawn
 * only when the graph changed. `exe` is the stored execution.
 */
export function executionSection(api, exe) {
  let entry = sections.get(exe.id);
  if (!entry) {
    const body = h("div", { class: "graph-body" }, note("Drawing the statechart…"));
    const count = h("span", { class: "count" });
    const el = h("details", { class: "section graph-section", open: true, dataset: { key: "graph" }, id: "exec-graph" }, h("summary", null, h("span", null, "Statechart"), count), body);
    entry = { el, body, count, json: null };
    sections.clear();
    sections.set(exe.id, entry);
  }
  const current = entry;
  api.get(`api/executions/${encodeURIComponent(exe.id)}/chart`).then((answer) => {
    const json = JSON.stringify(answer);
    if (json === current.json) return;
    current.json = json;
    const g = answer.graph;
    if (answer.chart) {
      // Drawn from the machine's stored definition.
      const c = answer.chart;
      current.count.textContent = `${plural(c.nodes.length - 1, "state")} · ${plural(c.edges.length, "transition")}`;
      clear(
        current.body,
        note(`Drawn from the definition of ${answer.definition_fqn ?? answer.definition_id}${answer.source === "trace" ? " (held by its first trace step)" : ""}; counts from its trace.`),
        g.first_index ? note(`Steps before #${g.first_index} were evicted from the trace: their transitions are not counted.`) : null,
        c.truncated ? note("The definition has too many states: some are left out.") : null,
        viewer(drawChart(c, { mode: "execution" })),
        h("div", { class: "graph-legend" },
          h("span", { class: "key active" }, "active state"),
          h("span", { class: "muted" }, "● initial · double border: final"),
          appLink(definitionHref(g.definition_id), { class: "def-link" }, "Every execution of ", h("span", { class: "mono" }, g.definition_id), " →")),
        chartTable(c),
      );
      return;
    }
    current.count.textContent = `${plural(g.graph.states.filter((st) => st.visited).length, "state")} · ${plural(g.graph.transitions.length, "transition")}`;
    clear(
      current.body,
      g.graph.steps ? null : note("No trace steps: only the current state is known."),
      g.first_index ? note(`Steps before #${g.first_index} were evicted from the trace: their transitions are not counted.`) : null,
      g.graph.truncated ? note("The trace names too many states: some are left out.") : null,
      viewer(drawGraph(g.graph, { mode: "execution", active: g.active_path })),
      h("div", { class: "graph-legend" },
        h("span", { class: "key active" }, "active state"),
        h("span", { class: "key visited" }, "visited"),
        appLink(definitionHref(g.definition_id), { class: "def-link" }, "Every execution of ", h("span", { class: "mono" }, g.definition_id), " →")),
      transitionsTable(g.graph),
    );
  }).catch((e) => {
    current.json = null;
    clear(current.body, h("div", { class: "error-box" }, `Cannot draw the statechart: ${e.message || e}`));
  });
  return entry.el;
}

// ---------------------------------------------------------------------------------------------
// A definition's picture (its own view)

let defState = { definition: null, json: null, seq: 0 };

function definitionPage(main) {
  let page = main.querySelector("#def-graph");
  if (!page) {
    page = h("section", { class: "def-graph", id: "def-graph" });
    clear(main, page);
  }
  return page;
}

/** Shows `?view=definition&definition=D` in `main`. */
export function showDefinition(api, main, definition, { quiet = false } = {}) {
  const page = definitionPage(main);
  if (!definition) {
    defState = { definition: null, json: null, seq: defState.seq + 1 };
    clear(page, h("h1", { class: "view-title" }, "Statechart"), note("Pick a definition: open an execution and follow \"Every execution of …\", or add ?definition=NAME to this address."));
    return;
  }
  if (defState.definition !== definition) {
    defState = { definition, json: null, seq: defState.seq };
    clear(page, h("h1", { class: "view-title" }, "Statechart of ", h("span", { class: "mono" }, definition)), note("Reading every execution of it…"));
  }
  const seq = ++defState.seq;
  const started = performance.now();
  api.get(`api/definitions/${encodeURIComponent(definition)}/chart`).then((answer) => {
    if (seq !== defState.seq) return;
    const json = JSON.stringify(answer);
    if (json === defState.json) return;
    defState.json = json;
    const fetched = performance.now();
    // No execution left (a chart from a stored definition): an empty trace graph.
    const g = answer.graph ?? { executions: 0, traces_read: 0, by_status: {}, graph: { states: [], transitions: [], truncated: false } };
    const chart = answer.chart;
    const statuses = Object.entries(g.by_status).map(([k, v]) => h("span", { class: `pill s-${k.toLowerCase()}` }, `${k} ${v.toLocaleString()}`));
    const hrefOf = (path) => listHref(definition, path);
    const svg = chart ? drawChart(chart, { mode: "definition", hrefOf }) : drawGraph(g.graph, { mode: "definition", hrefOf });
    const occupied = g.graph.states.filter((st) => st.now).sort((a, b) => b.now - a.now);
    clear(
      page,
      h("h1", { class: "view-title" }, "Statechart of ", h("span", { class: "mono", id: "def-name" }, definition)),
      h("div", { class: "def-summary" },
        h("strong", { id: "def-total" }, plural(g.executions, "execution")), " ", statuses, " ",
        appLink(`?${new URLSearchParams({ definition })}`, { class: "def-list" }, "list them →")),
      chart ? note(`Drawn from the definition of ${answer.definition_fqn ?? definition}${answer.source === "trace" ? " (held by an execution's first trace step)" : ""}: every state and transition it declares; counts from the traces.`) : null,
      g.traces_read < g.executions ? note(`Transitions from the traces of the ${g.traces_read.toLocaleString()} most recently updated executions; states now from all of them.`) : null,
      g.graph.truncated ? note("The traces name too many states: some are left out.") : null,
      h("div", { class: "graph-legend" },
        h("span", null, "executions in the state now:"),
        Array.from({ length: HEAT_STEPS }, (_, i) => h("span", { class: `key heat-${i + 1}` }, i === HEAT_STEPS - 1 ? "most" : "")),
        h("span", { class: "muted" }, "· click a state for its executions")),
      viewer(svg),
      occupied.length ? h(
        "details",
        { class: "graph-occupancy", open: true },
        h("summary", null, `Where they are now (${occupied.length} states)`),
        h("table", { class: "grid" },
          h("thead", null, h("tr", null, ["State", "Now", "By status"].map((c) => h("th", null, c)))),
          h("tbody", null, occupied.map((st) => h("tr", null,
            h("td", null, appLink(listHref(definition, st.path), { class: "mono" }, st.path)),
            h("td", { class: "num" }, st.now.toLocaleString()),
            h("td", null, Object.entries(st.now_by_status).map(([k, v]) => h("span", { class: `pill s-${k.toLowerCase()}` }, `${k} ${v.toLocaleString()}`))),
          )))),
      ) : null,
      chart ? chartTable(chart) : transitionsTable(g.graph),
    );
    page.dataset.fetchMs = String(Math.round(fetched - started));
    page.dataset.renderMs = String(Math.round(performance.now() - fetched));
    page.dataset.ready = "1";
  }).catch((e) => {
    if (seq !== defState.seq || quiet) return;
    clear(page, h("h1", { class: "view-title" }, "Statechart of ", h("span", { class: "mono" }, definition)), h("div", { class: "error-box" }, `Cannot draw it: ${e.message || e}`));
  });
}

/** Reads the definition's graph again, quietly (live refresh). */
export function refreshDefinition(api, main, definition) {
  showDefinition(api, main, definition, { quiet: true });
}
