//! The execstore store in WebAssembly: the npm package `execstore`.
//!
//! One store, three places to keep it, the same operations and the same JSON as the Rust
//! core:
//!
//! * `Store.memory()`: the core's [`execstore::MemoryStore`], gone with the page;
//! * `Store.sqliteMemory()`: the SQLite adapter ([`execstore_sqlite::SqliteStore`], SQLite
//!   compiled to wasm) on a private in-memory database;
//! * `await Store.openOpfs(name)`: the same adapter on a database in the browser's Origin
//!   Private File System, through sqlite-wasm-vfs's `sahpool` VFS, in a dedicated worker.
//!   The database survives reloads; one worker at a time owns it (Web Locks, and the
//!   pool's own access-handle lease), a second opener gets `LOCKED` or waits a bounded time.
//!   `synchronous: "full" | "normal"` chooses what a returned commit survives (see
//!   [`opfs`]'s "Durability"). `await Store.importOpfs(name, bytes)` makes one from a SQLite
//!   file's bytes;
//! * `await Store.openFile(path)`, in Node: the same adapter on a SQLite file on the local
//!   file system ([`node_file`]), through a VFS over Node's synchronous `fs`; one process
//!   at a time owns it (a lock file; a second opener gets `LOCKED` or waits a bounded
//!   time), and the native CLI reads it once it is closed;
//! * `Store.sqliteFromBytes(bytes)`: the SQLite adapter on a database file's bytes, kept in
//!   wasm memory (anywhere: Node, edge runtimes, pages).
//!
//! `MonitorApi` answers the monitor's JSON API over a store, with the very code of the
//! native `execstore monitor` (`execstore-monitor-api`): the edge handler and the
//! in-browser monitor of `crates/execstore-cli/web/` use it.
//!
//! Every operation is synchronous, as in better-sqlite3, and takes and returns plain JS
//! objects shaped like the core's JSON (snake_case keys, key order kept). Errors are JS
//! `Error`s with a stable `code`. The package's `client.js` wraps a worker-hosted OPFS store
//! in Promise-returning methods for a page's main thread.
//!
//! The Rust items here are for the crate's own wasm tests: [`opfs`] opens OPFS stores,
//! [`memcmp`] is the `memcmp` SQLite runs on.
//! On targets other than `wasm32-unknown-unknown` the crate is empty.
#![cfg(all(target_family = "wasm", target_os = "unknown"))]
#![deny(missing_docs)]

mod convert;
mod errors;
pub mod image;
pub mod memcmp;
mod monitor;
pub mod node_file;
pub mod opfs;
mod store;
mod wording;
mod workspace;

pub use errors::WasmError;
pub use monitor::{MonitorApi, WorkspaceImage};
pub use store::Store;
pub use workspace::{RawOpfsLease, RawWorkspaceStore, RawWorkspaceTx};

use wasm_bindgen::prelude::wasm_bindgen;

/// The TypeScript declarations of every object shape the package takes and returns.
#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = include_str!("types.d.ts");
