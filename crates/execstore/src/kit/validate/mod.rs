//! Input checks and serialization shared by every backend, so that all of them accept and
//! refuse exactly the same things and write exactly the same bytes: the checks
//! (`checks.rs`) and the preparation of what a write stores (`prepare.rs`), both re-exported
//! here.

mod checks;
mod prepare;

pub use checks::{
    check_event, check_execution, check_id, check_limit, check_seq, check_time, ALL_TIMERS,
    MAX_DOCUMENT_BYTES, MAX_ID_BYTES, MAX_PAGE,
};
pub use prepare::{
    prepare_commit, prepare_event, prepare_trace, prepare_write, ListKeys, PreparedBatch, PreparedCommit,
    PreparedSpawn, PreparedWrite,
};
