//! The workspace log in the package: `RawWorkspaceStore` and `RawWorkspaceTx`, the
//! synchronous core that `npm/workspace.js` wraps as `WorkspaceStore` (with
//! `transaction(ref, async (tx) => ...)`, which queues transactions, and `subscribe`). Every
//! operation of `execstore::workspace::WorkspaceStorage` and `WorkspaceTx`, taking and
//! returning reflexr's JSON shapes (snake_case keys, key order kept); bad input is
//! `INVALID_INPUT` and changes nothing.
//!
//! The seams: `shapes` (the JS shapes in and out), `tx` (a transaction), `store` (the store's
//! operations, on memory, OPFS or a file) and `opfs` (a store in a SQLite file in OPFS, its lease
//! let go and taken back as other tabs ask for it), `file` (a SQLite file on Node's file
//! system).

mod file;
mod opfs;
mod shapes;
mod store;
mod tx;

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use execstore::workspace::{Clock, Timestamp, WorkspaceRef};
use wasm_bindgen::JsValue;

pub use opfs::RawOpfsLease;
pub use store::RawWorkspaceStore;
pub use tx::RawWorkspaceTx;

type JsResult<T> = Result<T, JsValue>;

/// The workspaces a transaction holds: wasm has no threads, so a `begin` on one cannot wait
/// here (`npm/workspace.js` queues them).
type Busy = Rc<RefCell<HashSet<WorkspaceRef>>>;

/// The JS clock (`Date.now()`, millisecond precision): wasm32-unknown-unknown has no other.
struct DateClock;

impl Clock for DateClock {
    fn now(&self) -> Timestamp {
        let micros = (js_sys::Date::now() * 1000.0) as i64;
        Timestamp::from_micros(micros)
            .or_else(|_| Timestamp::from_micros(0))
            .expect("the epoch is in range")
    }
}
