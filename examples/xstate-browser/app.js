// The demo page: the order runs in worker.js (which owns the OPFS store); this page sends it
// events, sweeps its due timers on load and every 250 ms, relays its emitted events once and
// shows the result. `?timeout=MS` sets a new order's payment timeout; window.demo is what the
// browser test reads.
import { connectXState } from "execstore/xstate-client";

const params = new URLSearchParams(location.search);
const STORE = params.get("store") ?? "xstate-demo";
const TIMEOUT = Number(params.get("timeout") ?? 10000);
const RELAYED = `${STORE}:relayed`; // what this page received, kept across reloads

const orderId = () => localStorage.getItem(`${STORE}:order`) ?? "order-1";
const relayed = () => JSON.parse(localStorage.getItem(RELAYED) ?? "[]");

const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
const orders = await connectXState(worker, STORE, { waitMs: 10000 });

async function deliver(entry) {
  // The receiver dedupes by the event's id: a redelivery after a crash shows nothing twice.
  const seen = relayed();
  if (!seen.some((e) => e.id === entry.event.id)) {
    seen.push({ id: entry.event.id, kind: entry.event.kind, at: Date.now() });
    localStorage.setItem(RELAYED, JSON.stringify(seen));
  }
}

const clock = (seconds) => new Date(seconds * 1000).toISOString().slice(11, 23);

async function render() {
  const summary = await orders.read(orderId());
  const trace = await orders.trace(orderId());
  document.getElementById("state").textContent = `${summary.execution.active_path} (${summary.execution.status})`;
  const next = summary.scheduled[0];
  document.getElementById("deadline").textContent = next ? `timeout at ${new Date(next.fire_at).toISOString()}` : "";
  document.getElementById("relayed").textContent = relayed().map((e) => `${e.id}  ${e.kind}`).join("\n");
  document.getElementById("trace").textContent = trace
    .map((s) => `${s.index}  ${clock(s.timestamp)}  ${s.event_kind.replace(/^xstate\.after\.(\w+)\..*/, "after $1")}  ${s.from_path ?? "-"} -> ${s.to_path}`
      + (s.fired_at ? `  (its deadline; swept at ${clock(s.fired_at)})` : ""))
    .join("\n");
  window.demo.summary = summary;
}

// One tick: fire what is due (at its deadline), relay what was emitted, show it.
let ticking = Promise.resolve();
function tick() {
  ticking = ticking.then(async () => {
    window.demo.fired += await orders.sweep();
    await orders.relay(deliver);
    await render();
  });
  return ticking;
}

window.demo = { orders, orderId, relayed, fired: 0, tick, send: null };
window.demo.send = async (type) => {
  const result = await orders.send(orderId(), { type }, { id: crypto.randomUUID() });
  await tick();
  return result;
};

await orders.start(orderId(), "order", { input: { timeoutMs: TIMEOUT } });
for (const button of document.querySelectorAll("button[data-event]")) {
  button.onclick = () => window.demo.send(button.dataset.event);
}
document.getElementById("reset").onclick = async () => {
  localStorage.setItem(`${STORE}:order`, `order-${Date.now()}`);
  await orders.start(orderId(), "order", { input: { timeoutMs: TIMEOUT } });
  await tick();
};
await tick(); // the sweep on load: a timeout that fell due while the page was away fires now
setInterval(tick, 250);
window.ready = true;
