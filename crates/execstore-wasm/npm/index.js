// The package in a browser page or worker (and anywhere `fetch` can load the .wasm beside
// this file): loads the WebAssembly module once, at import.
import init from "./wasm/execstore.js";

await init({ module_or_path: new URL("./wasm/execstore_bg.wasm", import.meta.url) });

export { MonitorApi, Store, WorkspaceImage } from "./wasm/execstore.js";
export { OpfsWorkspaceStore, WorkspaceStore, WorkspaceTx } from "./workspace.js";
