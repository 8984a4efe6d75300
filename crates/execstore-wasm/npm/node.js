// The package in Node (>= 20): compiles the WebAssembly module from the file beside this
// one, synchronously, at import.
import { readFileSync } from "node:fs";
import { initSync } from "./wasm/execstore.js";

initSync({ module: readFileSync(new URL("./wasm/execstore_bg.wasm", import.meta.url)) });

export { MonitorApi, Store, WorkspaceImage } from "./wasm/execstore.js";
export { OpfsWorkspaceStore, WorkspaceStore, WorkspaceTx } from "./workspace.js";
