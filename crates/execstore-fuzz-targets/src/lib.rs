//! The bodies of execstore's fuzz targets, as plain functions of the fuzzer's bytes.
//!
//! Each function panics when a property of the code under test fails (a panic of the code
//! itself counts too), so libFuzzer reports it as a crash. The libFuzzer targets in `fuzz/`
//! (nightly, `cargo fuzz run NAME`) call exactly these, and `tests/replay.rs` replays the
//! committed seed corpus (`fuzz/corpus/NAME/`) and every finding (`fuzz/regressions/NAME/`)
//! through them on stable, in `cargo test --workspace`.
//!
//! The targets, in [`TARGETS`]:
//! - [`cursor`]: the listings' cursors decode to a typed error or to a cursor that
//!   re-encodes to the same value, and the listings and pages agree with the decoding;
//! - [`ingest`]: executions, events, trace steps, envelopes and the workspace log's records
//!   from JSON text: a typed error, or a value that written back (and stored) parses equal;
//! - [`pyjson`]: Python's `json.dumps` writer and its reader: what is written parses back to
//!   the same value, as serde_json reads it too;
//! - [`monitor`]: the monitor API's handler: a well-formed status and JSON body for any
//!   request, and a request without the token never changes the store;
//! - [`differential`]: the same sequence of store calls on the memory store and on SQLite
//!   (in memory): the same results and the same errors, call by call.
#![deny(missing_docs)]

mod cursor;
mod differential;
mod ingest;
mod monitor;
mod pools;
mod pyjson;

pub use cursor::cursor;
pub use differential::differential;
pub use ingest::ingest;
pub use monitor::{describe as describe_monitor_input, monitor};
pub use pyjson::pyjson;

use execstore::StoreError;

/// A target's body: the fuzzer's bytes in, a panic when a property fails.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/fuzz_targets/NAME.rs` and the corpus folders name it.
pub const TARGETS: &[(&str, Target)] = &[
    ("cursor", cursor),
    ("ingest", ingest),
    ("pyjson", pyjson),
    ("monitor", monitor),
    ("differential", differential),
];

/// A typed refusal of bad input: never a backend failure, which would mean the input broke
/// the store rather than being refused by it.
fn assert_refusal(e: &StoreError, what: &str) {
    assert!(
        matches!(e, StoreError::InvalidInput { .. } | StoreError::Corrupt { .. }),
        "{what}: bad input must be InvalidInput or Corrupt, not {} ({e})",
        e.code()
    );
}
