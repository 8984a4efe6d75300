//! The workspace log: the second contract, reflexr 0.1.1's `Storage`, beside the execution store.
//!
//! A tenant's workspace holds a gap-free log of events, each rule's progress and scope states,
//! runs with a due time and a run policy, dead letters, schedule ticks, leases that expire by
//! an injectable [`Clock`], forward-only consumer cursors and versioned stored rules. Every
//! write happens in a [`WorkspaceTx`], serialized per workspace from the moment it begins.
//! The records are reflexr's own JSON, byte for byte, so a reflexr database and an execstore
//! one are the same thing.
//!
//! Every backend is a [`WorkspaceDriver`] (storage code only) behind the one
//! [`WorkspaceFront`], which makes the contract's checks, reads the clock and numbers the
//! log for all of them. [`MemoryWorkspaceStorage`] is the in-memory backend;
//! `execstore-sqlite` and `execstore-postgres` keep reflexr's `reflexr_*` tables. The behaviour suite is
//! `execstore::conformance::workspace` (feature `conformance`).

mod decode;
mod driver;
mod due;
mod front;
mod memory;
mod model;
mod policy;
pub mod recover;
pub mod search;
mod storage;
mod subscribe;
mod time;

pub use decode::{decode_list, decode_text, decode_texts, input_object, input_value};
pub use driver::{DriverTx, WorkspaceDriver};
pub use due::{due_runs as reference_due_runs, Candidate};
pub use front::{AsWorkspaceFront, FrontTx, TimedWorkspace, TimedWorkspaceTx, WorkspaceFront};
pub use memory::{MemoryWorkspaceDriver, MemoryWorkspaceStorage};
pub use model::{
    check_event, run_lease, Entry, Envelope, EvaluationError, Lease, NewRun, RuleProgress, Run, RunStatus,
    ScopeState, StoredRule, StoredRuleStatus, WorkspaceInfo, WorkspaceRef, WorkspaceSummary, RULE_ARCHIVED,
    RULE_INSTALLED,
};
pub use policy::RunPolicy;
pub use search::{
    parse_log_where, parse_run_where, LogPage, LogSearch, RunPage, RunRow, RunSearch, LOG_ROOTS, RUN_ROOTS,
};
pub use storage::{
    check_cursor, check_dead_letters_page, check_entries, check_lease, check_leases_page, rules_by_calls,
    rules_of, summaries_by_calls, LogQuery, RunQuery, WorkspaceCapabilities, WorkspaceStorage, WorkspaceTx,
    MAX_BATCH, MAX_READ,
};
pub use subscribe::{Subscription, SUBSCRIBE_PAGE};
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pub use time::SystemClock;
pub use time::{Clock, ManualClock, Timestamp};

use crate::error::{Result, StoreError};

/// Checks a key-like argument (rule, scope key, run id, schedule or stored rule name).
pub fn check_key(field: &str, value: &str) -> Result<()> {
    crate::kit::validate::check_id(field, value)
}

/// Checks how many items one call writes or asks for.
pub fn check_batch(field: &str, n: usize) -> Result<()> {
    if n > MAX_BATCH {
        return Err(StoreError::invalid(
            field,
            format!("{n} items is more than {MAX_BATCH}"),
        ));
    }
    Ok(())
}

/// Checks `due_runs`'s limit (0 is allowed and returns nothing, as in reflexr).
pub fn check_due_limit(limit: usize) -> Result<()> {
    if limit > MAX_READ {
        return Err(StoreError::invalid(
            "limit",
            format!("{limit} is more than {MAX_READ}"),
        ));
    }
    Ok(())
}

/// The error for saving a stored rule at any version but the next: a [`StoreError::Conflict`]
/// whose `expected` is the next version and `found` the one given.
pub fn wrong_version(name: &str, following: i64, given: i64) -> StoreError {
    StoreError::Conflict {
        id: format!("stored rule {name}"),
        expected: following,
        found: Some(given),
    }
}
