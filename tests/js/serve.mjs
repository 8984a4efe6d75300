// A static file server for the browser tests and the browser benchmark: the repository
// (node_modules/execstore links to crates/execstore-wasm/npm) on 127.0.0.1, a free port.
// 127.0.0.1 is a secure context, as OPFS needs.
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

// The bare module names a served script may import, resolved as a dev server (or a bundler)
// does: Chromium applies a page's import map to the page only, not inside a module worker,
// where execstore/xstate-worker imports `xstate` (examples/xstate-browser, bench/xstate).
const BARE = {
  xstate: "/node_modules/xstate/dist/xstate.esm.js",
  "execstore/xstate-worker": "/node_modules/execstore/xstate-worker.js",
  "execstore/xstate-client": "/node_modules/execstore/xstate-client.js",
  "execstore/xstate": "/node_modules/execstore/xstate.js",
  execstore: "/node_modules/execstore/index.js",
};
const BARE_IMPORT = /(\bfrom\s*|\bimport\s*\(?\s*)(["'])([^"'./][^"']*)\2/g;

/** `source` (a script) with its bare imports of BARE's names made paths. */
function resolveBare(source) {
  return source.replace(BARE_IMPORT, (whole, head, quote, name) =>
    (name in BARE ? `${head}${quote}${BARE[name]}${quote}` : whole));
}
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** Starts the server; resolves with `{url, close()}`. */
export async function serveRepository(root = ROOT) {
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname));
    const file = join(root, path);
    if (request.method !== "GET" || !(file + sep).startsWith(root) || path.includes("..")) {
      response.writeHead(403).end();
      return;
    }
    try {
      const type = TYPES[extname(file)];
      const raw = await readFile(file);
      const body = type?.startsWith("text/javascript") ? resolveBare(raw.toString("utf8")) : raw;
      response.writeHead(200, {
        "content-type": type ?? "application/octet-stream",
        "cache-control": "no-store",
      });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
