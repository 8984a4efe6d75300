// The package in Node (>= 20): compiles the WebAssembly module from the file beside this
// one, synchronously, at import, and hands it Node's file system for `Store.openFile` (the
// wasm imports no Node module itself: the same build runs in browsers).
import * as fs from "node:fs";
import * as path from "node:path";
import process from "node:process";
import { initSync, installNodeFileSystem } from "./wasm/execstore.js";

initSync({ module: fs.readFileSync(new URL("./wasm/execstore_bg.wasm", import.meta.url)) });
installNodeFileSystem({ fs, path, process });

export { MonitorApi, Store, WorkspaceImage } from "./wasm/execstore.js";
export { OpfsWorkspaceStore, WorkspaceStore, WorkspaceTx } from "./workspace.js";
