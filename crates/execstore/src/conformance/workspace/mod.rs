//! The workspace log's behaviour suite (feature `conformance`): every backend of
//! [`WorkspaceStorage`] passes it.
//!
//! Plain functions over a [`WorkspaceHarness`], as [`crate::conformance::executions`] is for executions.
//! Each check scopes its data by a tenant of its own, and moves time with the harness's
//! [`ManualClock`]. A harness must give each check a storage of its own (a fresh memory
//! storage, file or PostgreSQL schema), because `due_runs` and `workspaces` span workspaces.
//!
//! What it does not prove: behaviour across processes and under crashes (the crash and race
//! tests in `tests/` do), nor speed.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{Result, StoreError};
use crate::executions::JsonObject;
use crate::workspace::{
    reference_due_runs, run_lease, Candidate, Entry, Envelope, EvaluationError, LogQuery, ManualClock,
    NewRun, RuleProgress, Run, RunPolicy, RunQuery, RunStatus, ScopeState, StoredRule, StoredRuleStatus,
    Subscription, Timestamp, WorkspaceRef, WorkspaceStorage, MAX_READ,
};

/// What the suite needs from a backend's test.
pub trait WorkspaceHarness {
    /// The storage under test; its clock is [`WorkspaceHarness::clock`].
    fn storage(&self) -> &dyn WorkspaceStorage;
    /// The clock the storage reads.
    fn clock(&self) -> &ManualClock;
    /// Closes the storage and opens it again on the same data. `false` for a backend that
    /// keeps nothing.
    fn reopen(&mut self) -> bool;
    /// Whether reads outside transactions share the transactions' one connection (SQLite in
    /// memory, or over a VFS that serves one connection per file): such a read, made while
    /// a transaction is open, is refused with a retryable error rather than answered, and
    /// the checks that read around an open transaction assert that instead.
    fn one_connection(&self) -> bool {
        false
    }
    /// Whether transactions on different workspaces run at the same time (a lock per
    /// workspace, as reflexr's PostgreSQL storage takes): then a transaction on another
    /// workspace must commit while one is held. SQLite has one writer per file, so `false`.
    fn parallel_workspaces(&self) -> bool {
        false
    }
}

/// A harness over any storage built on a clock: `make(clock)` builds the storage.
pub struct SimpleHarness<S> {
    storage: S,
    clock: ManualClock,
    one_connection: bool,
    parallel_workspaces: bool,
}

impl<S: WorkspaceStorage> SimpleHarness<S> {
    /// A harness whose storage `make` builds on a fresh [`ManualClock`] (at [`t0`]).
    pub fn new(make: impl FnOnce(ManualClock) -> S) -> Self {
        let clock = ManualClock::new(t0());
        SimpleHarness {
            storage: make(clock.clone()),
            clock,
            one_connection: false,
            parallel_workspaces: false,
        }
    }

    /// Marks the storage as one whose transactions on different workspaces run at once (see
    /// [`WorkspaceHarness::parallel_workspaces`]).
    pub fn parallel_workspaces(mut self) -> Self {
        self.parallel_workspaces = true;
        self
    }

    /// Marks the storage as one whose reads share its transactions' one connection (see
    /// [`WorkspaceHarness::one_connection`]).
    pub fn one_connection(mut self) -> Self {
        self.one_connection = true;
        self
    }
}

impl<S: WorkspaceStorage> WorkspaceHarness for SimpleHarness<S> {
    fn storage(&self) -> &dyn WorkspaceStorage {
        &self.storage
    }
    fn clock(&self) -> &ManualClock {
        &self.clock
    }
    fn reopen(&mut self) -> bool {
        false
    }
    fn one_connection(&self) -> bool {
        self.one_connection
    }
    fn parallel_workspaces(&self) -> bool {
        self.parallel_workspaces
    }
}

/// A read outside a transaction made while one is open: on a storage with separate readers,
/// `read` answers with what is committed (`committed`); on a one-connection storage, it is
/// refused with a retryable error, so it never shows the open transaction's writes.
fn read_beside_open_tx<T: PartialEq + fmt::Debug>(
    h: &dyn WorkspaceHarness,
    read: impl FnOnce() -> Result<T>,
    committed: T,
) {
    match read() {
        Ok(found) if !h.one_connection() => assert_eq!(found, committed, "a read beside an open transaction"),
        Err(e) if h.one_connection() => assert!(
            e.is_retryable(),
            "a read beside an open transaction on one connection: a retryable refusal, not {e:?}"
        ),
        other => panic!(
            "a read beside an open transaction (one connection: {}): {other:?}",
            h.one_connection()
        ),
    }
}

/// Generates one `#[test]` per check. `$harness` makes a fresh [`WorkspaceHarness`] per test;
/// `durable:` adds the reopen check.
///
/// In wasm32-unknown-unknown, `wasm ephemeral:` and `wasm durable:` generate one async
/// `#[wasm_bindgen_test]` per check that needs neither threads nor a clock of the system
/// (the calling crate depends on `wasm-bindgen-test`); there `$harness` is a future of the
/// harness (`async { SimpleHarness::new(...) }`).
#[macro_export]
macro_rules! workspace_conformance_tests {
    (ephemeral: $harness:expr) => {
        $crate::workspace_conformance_tests!(@portable checks $harness);
        // These need threads and the system's clock: not on wasm32-unknown-unknown.
        $crate::workspace_conformance_tests!(@checks $harness;
            subscribe_replays_then_follows,
            transactions_serialize_per_workspace,
            cursor_race_keeps_the_furthest,
            other_workspaces_proceed_during_a_transaction,
        );
    };
    (durable: $harness:expr) => {
        $crate::workspace_conformance_tests!(ephemeral: $harness);
        #[test]
        fn reopen_sees_everything_committed() {
            let mut h = $harness;
            $crate::conformance::workspace::reopen_sees_everything_committed(&mut h);
        }
    };
    // The checks that need neither threads nor the system's clock, so they also run in wasm32.
    (@portable $mode:ident $harness:expr) => {
        $crate::workspace_conformance_tests!(@$mode $harness;
            append_assigns_gap_free_seq_and_ts,
            duplicate_ids_are_refused_whole,
            rollback_leaves_nothing,
            transaction_reads_its_own_writes,
            workspaces_are_isolated,
            read_windows_filter_in_the_store,
            progress_and_scope_states,
            runs_upsert_list_and_scope_order,
            dead_letters_oldest_first,
            dead_letters_page_pages_the_dead_letters,
            schedules_tick,
            stored_rules_one_version_at_a_time,
            leases_are_exclusive_and_expire,
            cursors_only_move_forward,
            due_runs_policy_cases,
            due_runs_match_the_reference,
            workspaces_lists_those_with_a_log,
            summaries_match_the_calls_they_spare,
            leases_of_match_the_leases,
            all_stored_rules_match_the_calls,
            leases_page_pages_the_leases,
            bad_input_changes_nothing,
            malformed_keys_are_refused_alike,
            recover_runs_letters_leases_rules,
            log_search_matches_the_reference,
            run_search_matches_the_reference,
            bad_searches_are_refused,
        );
    };
    (wasm ephemeral: $harness:expr) => {
        $crate::workspace_conformance_tests!(@portable wasm_checks $harness);
    };
    (wasm durable: $harness:expr) => {
        $crate::workspace_conformance_tests!(wasm ephemeral: $harness);
        #[::wasm_bindgen_test::wasm_bindgen_test]
        async fn reopen_sees_everything_committed() {
            let mut h = $harness.await;
            $crate::conformance::workspace::reopen_sees_everything_committed(&mut h);
        }
    };
    (@wasm_checks $harness:expr; $($check:ident,)*) => {
        $(
            #[::wasm_bindgen_test::wasm_bindgen_test]
            async fn $check() {
                let h = $harness.await;
                $crate::conformance::workspace::$check(&h);
            }
        )*
    };
    (@checks $harness:expr; $($check:ident,)*) => {
        $(
            #[test]
            fn $check() {
                let h = $harness;
                $crate::conformance::workspace::$check(&h);
            }
        )*
    };
}

/// The clock's starting time in every check: 2026-01-01T12:00:00Z.
pub fn t0() -> Timestamp {
    Timestamp::from_micros(1_767_268_800_000_000).expect("in range")
}

fn at(seconds: i64) -> Timestamp {
    t0().plus_micros(seconds * 1_000_000).expect("in range")
}

fn ws(tenant: &str, workspace: &str) -> WorkspaceRef {
    WorkspaceRef::new(tenant, workspace)
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

/// An entry of type `t:kind` with a payload that exercises the JSON text (unicode, floats,
/// nesting, key order).
pub fn entry(id: &str, kind: &str) -> Entry {
    Entry::new(
        id,
        json!({"kind": "source", "name": "suite"}),
        obj(
            json!({"type": format!("suite:{kind}"), "z": 1.5, "a": [1, null, true], "text": "é \"<b>\" \u{1F600}"}),
        ),
    )
}

fn run(id: &str, rule: &str, scope: &str, fired_seq: i64, now: Timestamp) -> Run {
    Run::pending(NewRun {
        id: id.into(),
        rule: rule.into(),
        scope_key: scope.into(),
        scope: obj(json!({"k": scope})),
        fired_seq,
        matched: vec![fired_seq],
        correlation_id: format!("c-{id}"),
        depth: 0,
        now,
    })
    .expect("valid run")
}

fn with_status(r: &Run, status: RunStatus, next: Timestamp) -> Run {
    r.with(obj(
        json!({"status": status.as_str(), "next_attempt_at": next.to_json_text()}),
    ))
    .expect("valid")
}

fn stored(name: &str, version: i64, status: StoredRuleStatus) -> StoredRule {
    StoredRule {
        rule: obj(json!({"name": name, "description": format!("v{version}"), "when": {"on": ["suite:x"]}})),
        version,
        status,
        provenance: obj(json!({"by": "suite", "note": "ü"})),
    }
}

fn commit(
    storage: &dyn WorkspaceStorage,
    w: &WorkspaceRef,
    f: impl FnOnce(&mut dyn crate::workspace::WorkspaceTx),
) {
    let mut tx = storage.begin(w).expect("begin");
    f(&mut *tx);
    tx.commit().expect("commit");
}

fn append(storage: &dyn WorkspaceStorage, w: &WorkspaceRef, ids: &[&str]) -> Vec<Envelope> {
    let mut tx = storage.begin(w).expect("begin");
    let entries: Vec<Entry> = ids.iter().map(|id| entry(id, "x")).collect();
    let out = tx.append(&entries).expect("append");
    tx.commit().expect("commit");
    out
}

fn seqs(envelopes: &[Envelope]) -> Vec<i64> {
    envelopes.iter().map(|e| e.seq).collect()
}

fn ids(runs: &[Run]) -> Vec<&str> {
    runs.iter().map(Run::id).collect()
}

fn invalid<T: std::fmt::Debug>(r: crate::Result<T>, what: &str) {
    match r {
        Err(StoreError::InvalidInput { .. }) => {}
        other => panic!("{what}: expected InvalidInput, got {other:?}"),
    }
}

mod concurrency;
mod due;
mod log;
mod records;
mod recover;
mod search;

pub use concurrency::*;
pub use due::*;
pub use log::*;
pub use records::*;
pub use recover::recover_runs_letters_leases_rules;
pub use search::*;
