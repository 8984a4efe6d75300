// Serves the repository and prints the demo's address: node examples/xstate-browser/serve.mjs
// (needs the package built: npm run build:wasm). Open it in Chromium, Firefox or Safari.
import { serveRepository } from "../../tests/js/serve.mjs";

const server = await serveRepository();
console.log(`${server.url}/examples/xstate-browser/index.html`);
