// The monitor entirely in the browser (local.html): the user imports a SQLite store file
// into this browser's Origin Private File System, and the same UI as the native monitor
// (app.js) browses it. No server: the UI's transport posts each API request to a dedicated
// worker (local-worker.js) that answers it from the wasm store with the package's
// `MonitorApi`, the very code of the native server's API. The import survives reloads: the
// page reopens it from OPFS until another file is imported. As `execstore monitor --db F`,
// it shows whatever the file holds: executions, a workspace log (reflexr's tables, read from
// a copy in wasm memory: see local-worker.js), or both.

// app.js starts itself unless told not to: set before it is loaded.
window.EXECSTORE_MANUAL_START = true;
const { start } = await import("./app.js");

/** The OPFS store the imported file becomes (one at a time). */
const STORE_NAME = "monitor-local";
/** What was imported (file name, prefix, what it holds), to reopen it after a reload. */
const META_KEY = "execstore.local.store";

const $ = (sel) => document.querySelector(sel);
const packageUrl = new URL($('meta[name="execstore-package"]').content, location.href).href;
/** The page's directory: the UI asks for "api/..." relative to it. */
const baseDir = new URL(".", location.href).pathname;
/** Seconds between two metrics samples: `?metrics_period=N` when the page is opened (the
 * worker's default, 10, otherwise). */
const metricsPeriod = Number(new URLSearchParams(location.search).get("metrics_period")) || undefined;

function readMeta() {
  try {
    const meta = JSON.parse(localStorage.getItem(META_KEY) || "null");
    return meta && typeof meta.file === "string" ? meta : null;
  } catch {
    return null;
  }
}

function writeMeta(meta) {
  try {
    localStorage.setItem(META_KEY, JSON.stringify(meta));
  } catch {
    // Storage refused: the import works, but a reload asks for the file again.
  }
}

function toError(plain) {
  return Object.assign(new Error(plain.message), plain);
}

/** The worker, and a Promise per message. */
class WorkerLink {
  #worker = new Worker(new URL("./local-worker.js", import.meta.url), { type: "module", name: "execstore-monitor" });
  #next = 1;
  #pending = new Map();

  constructor() {
    this.#worker.onmessage = ({ data }) => {
      const pending = this.#pending.get(data.id);
      this.#pending.delete(data.id);
      if (data.ok) pending?.resolve(data.result);
      else pending?.reject(toError(data.error));
    };
    this.#worker.onerror = (event) => {
      event.preventDefault();
      const error = new Error(`the store's worker failed: ${event.message || "it could not be loaded"}`);
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
  }

  request(message, transfer = []) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ ...message, id }, transfer);
    });
  }
}

let link = null;
let started = false;

/** The UI's transport: a Request in, a Response out, answered by the worker. */
async function transport(request) {
  const url = new URL(request.url);
  const target = `/${url.pathname.slice(baseDir.length)}${url.search}`;
  const answer = await link.request({
    op: "api",
    method: request.method,
    target,
    authorization: request.headers.get("authorization"),
    body: request.method === "GET" || request.method === "HEAD" ? null : await request.text(),
  });
  return new Response(answer.body, { status: answer.status, headers: { "content-type": "application/json" } });
}

function setState(text, kind = "") {
  const el = $("#import-state");
  el.className = `import-state state ${kind}`.trim();
  el.textContent = text;
}

function showImporter(message, kind) {
  $("#importer").hidden = false;
  $("#main").hidden = true;
  if (message) setState(message, kind);
  const meta = readMeta();
  if (meta) $("#prefix").value = meta.prefix || "";
}

function begin() {
  $("#importer").hidden = true;
  $("#main").hidden = false;
  $("#import-another").hidden = false;
  if (!started) {
    started = true;
    start({ transport });
  }
}

function explain(error) {
  if (error.code === "NOT_FOUND" && error.what === "table") {
    return `This file has no table ${error.key} and no workspace log: is it an execstore, harel or reflexr store? Try another table prefix.`;
  }
  if (error.code === "INVALID_INPUT" && error.field === "bytes") return `This is not a SQLite database file (${error.reason}).`;
  if (error.code === "LOCKED") return "The store is open in another tab of this monitor: close it, then try again.";
  return `${error.message}${error.code ? ` (${error.code})` : ""}`;
}

const size = (n) => (n < 1 << 20 ? `${(n / 1024).toFixed(0)} KB` : `${(n / (1 << 20)).toFixed(1)} MB`);

async function importFiles(fileList) {
  const files = [...fileList];
  const wal = files.find((f) => f.name.endsWith("-wal"));
  const db = files.find((f) => f !== wal && !f.name.endsWith("-shm") && !f.name.endsWith("-journal"));
  if (!db) {
    setState("Choose the store file itself (its -wal file only goes with it).", "error");
    return;
  }
  const prefix = $("#prefix").value;
  setState(`Importing ${db.name} (${size(db.size)})${wal ? ` with ${wal.name}` : ""}…`, "loading");
  let holds;
  let found;
  performance.mark("execstore:import-start");
  try {
    const bytes = await db.arrayBuffer();
    const walBytes = wal ? await wal.arrayBuffer() : undefined;
    ({ holds, prefix: found } = await link.request(
      { op: "import", packageUrl, name: STORE_NAME, bytes, wal: walBytes, prefix, label: db.name, metricsPeriod },
      walBytes ? [bytes, walBytes] : [bytes],
    ));
  } catch (error) {
    setState(`Could not import ${db.name}: ${explain(error)}`, "error");
    return;
  }
  // The prefix the file's tables were found under, so that the reopen after a reload opens them.
  writeMeta({ file: db.name, prefix: found ?? prefix, holds });
  if (started) {
    // A fresh UI (filters, caches) over the new store: reopened from OPFS after the reload.
    location.replace(location.pathname);
    return;
  }
  setState("");
  begin();
}

function wireImporter() {
  const drop = $("#drop");
  $("#file").addEventListener("change", (e) => e.target.files.length && importFiles(e.target.files));
  for (const type of ["dragenter", "dragover"]) {
    drop.addEventListener(type, (e) => {
      e.preventDefault();
      drop.classList.add("over");
    });
  }
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    if (e.dataTransfer.files.length) importFiles(e.dataTransfer.files);
  });
  $("#import-another").addEventListener("click", () => showImporter());
}

async function main() {
  wireImporter();
  if (!window.isSecureContext || !navigator.storage || !navigator.storage.getDirectory) {
    showImporter(
      "This page needs a secure context with the Origin Private File System: open it over https or from http://127.0.0.1 or http://localhost, in a current browser.",
      "error",
    );
    $("#file").disabled = true;
    return;
  }
  link = new WorkerLink();
  const meta = readMeta();
  if (!meta) {
    showImporter();
    return;
  }
  try {
    await link.request({ op: "open", packageUrl, name: STORE_NAME, prefix: meta.prefix, label: meta.file, holds: meta.holds, metricsPeriod });
    begin();
  } catch (error) {
    showImporter(`The store imported earlier (${meta.file}) could not be opened: ${explain(error)}`, "error");
  }
}

main();
