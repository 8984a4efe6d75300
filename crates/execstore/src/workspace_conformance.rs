//! The workspace log's behaviour suite (feature `conformance`): every backend of
//! [`WorkspaceStorage`] passes it.
//!
//! Plain functions over a [`WorkspaceHarness`], as [`crate::conformance`] is for executions.
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
use crate::model::JsonObject;
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
            $crate::workspace_conformance::reopen_sees_everything_committed(&mut h);
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
            schedules_tick,
            stored_rules_one_version_at_a_time,
            leases_are_exclusive_and_expire,
            cursors_only_move_forward,
            due_runs_policy_cases,
            due_runs_match_the_reference,
            workspaces_lists_those_with_a_log,
            bad_input_changes_nothing,
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
            $crate::workspace_conformance::reopen_sees_everything_committed(&mut h);
        }
    };
    (@wasm_checks $harness:expr; $($check:ident,)*) => {
        $(
            #[::wasm_bindgen_test::wasm_bindgen_test]
            async fn $check() {
                let h = $harness.await;
                $crate::workspace_conformance::$check(&h);
            }
        )*
    };
    (@checks $harness:expr; $($check:ident,)*) => {
        $(
            #[test]
            fn $check() {
                let h = $harness;
                $crate::workspace_conformance::$check(&h);
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

/// `seq` from 1 without gaps; `ts` the later of the clock and the previous `ts` (the clock
/// may go back); `correlation_id` defaults to the id; the envelope's fields and JSON.
pub fn append_assigns_gap_free_seq_and_ts(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-append", "w");
    assert_eq!(s.head_seq(&w).unwrap(), 0);
    h.clock().set(at(10));
    let mut tx = s.begin(&w).unwrap();
    let mut e2 = entry("e2", "y");
    e2.correlation_id = Some("chain".into());
    e2.causation = Some(json!({"firing_id": "f", "run_id": "r", "depth": 1}));
    e2.traceparent = Some("00-abc-def-01".into());
    let first = tx.append(&[entry("e1", "x"), e2]).unwrap();
    assert_eq!(seqs(&first), [1, 2]);
    assert_eq!(first[0].correlation_id, "e1");
    assert_eq!(first[1].correlation_id, "chain");
    assert_eq!(first[0].ts, at(10));
    assert_eq!(first[0].workspace_id, "w");
    assert_eq!(tx.head_seq().unwrap(), 2);
    tx.commit().unwrap();
    // The clock goes back: ts stays at the previous one.
    h.clock().set(at(5));
    let second = append(s, &w, &["e3"]);
    assert_eq!(second[0].seq, 3);
    assert_eq!(second[0].ts, at(10), "ts never decreases");
    h.clock().set(at(20));
    let third = append(s, &w, &["e4"]);
    assert_eq!((third[0].seq, third[0].ts), (4, at(20)));
    assert_eq!(s.head_seq(&w).unwrap(), 4);
    let got = s.envelope(&w, "e2").unwrap().expect("stored");
    assert_eq!(got, first[1]);
    assert_eq!(got.to_json(), first[1].to_json());
    assert_eq!(
        got.causation,
        Some(json!({"firing_id": "f", "run_id": "r", "depth": 1}))
    );
    assert_eq!(got.traceparent.as_deref(), Some("00-abc-def-01"));
    assert_eq!(got.event_type(), "suite:y");
    assert!(s.envelope(&w, "nope").unwrap().is_none());
    let all = s.read(&w, &LogQuery::new()).unwrap();
    assert_eq!(seqs(&all), [1, 2, 3, 4]);
    assert_eq!(all[0].to_json(), first[0].to_json());
    // The text is reflexr's: json.dumps of the model dump, keys in model order.
    assert!(all[0].to_json().starts_with(
        "{\"seq\": 1, \"id\": \"e1\", \"ts\": \"2026-01-01T12:00:10Z\", \"workspace_id\": \"w\", \"actor\": {\"kind\": \"source\", \"name\": \"suite\"}, \"causation\": null, \"correlation_id\": \"e1\", \"traceparent\": null, \"event\": {\"type\": \"suite:x\", \"z\": 1.5, "
    ), "{}", all[0].to_json());
}

/// An id already in the log, earlier in the transaction, or twice in one call is refused,
/// none of that call is appended, and the transaction stays usable.
pub fn duplicate_ids_are_refused_whole(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-dup", "w");
    append(s, &w, &["a"]);
    let mut tx = s.begin(&w).unwrap();
    for (case, entries) in [
        ("in the log", vec![entry("b", "x"), entry("a", "x")]),
        ("twice in one call", vec![entry("c", "x"), entry("c", "x")]),
    ] {
        match tx.append(&entries) {
            Err(StoreError::AlreadyExists { what: "event", .. }) => {}
            other => panic!("{case}: {other:?}"),
        }
        assert_eq!(tx.head_seq().unwrap(), 1, "{case}: nothing of the call appended");
    }
    tx.append(&[entry("d", "x")]).unwrap();
    assert!(
        matches!(
            tx.append(&[entry("d", "x")]),
            Err(StoreError::AlreadyExists { .. })
        ),
        "earlier in the transaction"
    );
    assert!(tx.envelope("b").unwrap().is_none());
    tx.commit().unwrap();
    assert_eq!(seqs(&s.read(&w, &LogQuery::new()).unwrap()), [1, 2]);
    assert_eq!(s.envelope(&w, "d").unwrap().unwrap().seq, 2);
}

/// A transaction dropped without commit leaves nothing of itself, and moves no counter.
pub fn rollback_leaves_nothing(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-rollback", "w");
    append(s, &w, &["a"]);
    commit(s, &w, |tx| {
        tx.save_runs(&[run("r0", "rule", "k", 1, t0())]).unwrap()
    });
    {
        let mut tx = s.begin(&w).unwrap();
        tx.append(&[entry("b", "x"), entry("c", "x")]).unwrap();
        tx.save_runs(&[run("r1", "rule", "k", 2, t0())]).unwrap();
        tx.save_progress("rule", &RuleProgress::from_doc(obj(json!({"cursor": 3}))))
            .unwrap();
        tx.save_states(
            "rule",
            &[("k".into(), ScopeState::from_doc(obj(json!({"scope": {}}))))],
        )
        .unwrap();
        tx.dead_letter(&[EvaluationError::new("rule", 2, "boom")])
            .unwrap();
        tx.save_schedule("hourly", at(1)).unwrap();
        tx.save_stored_rule(&stored("suite:r", 1, StoredRuleStatus::Active))
            .unwrap();
        tx.clear_states("other").unwrap();
        // dropped here
    }
    assert_eq!(s.head_seq(&w).unwrap(), 1);
    assert!(s.envelope(&w, "b").unwrap().is_none());
    assert!(s.run(&w, "r1").unwrap().is_none());
    assert!(s.progress(&w).unwrap().is_empty());
    assert!(s.dead_letters(&w, None).unwrap().is_empty());
    assert!(s.schedules(&w).unwrap().is_empty());
    assert!(s.stored_rules(&w).unwrap().is_empty());
    // No counter moved: the next append is seq 2, and a new run is listed after r0.
    assert_eq!(append(s, &w, &["b"])[0].seq, 2);
    commit(s, &w, |tx| {
        tx.save_runs(&[run("r2", "rule", "k", 2, t0())]).unwrap()
    });
    assert_eq!(ids(&s.runs(&w, &RunQuery::default()).unwrap()), ["r2", "r0"]);
    let mut tx = s.begin(&w).unwrap();
    assert!(tx.stored_rule("suite:r").unwrap().is_none());
    assert!(tx.progress("rule").unwrap().is_none());
    assert!(tx.schedule("hourly").unwrap().is_none());
}

/// Every kind of write is visible to the transaction's own later reads, and to no one else
/// before it commits.
pub fn transaction_reads_its_own_writes(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-own", "w");
    append(s, &w, &["a", "b"]);
    let mut tx = s.begin(&w).unwrap();
    tx.append(&[entry("c", "x")]).unwrap();
    assert_eq!(tx.head_seq().unwrap(), 3);
    assert_eq!(seqs(&tx.read(1, 10).unwrap()), [2, 3]);
    assert_eq!(seqs(&tx.read(0, 2).unwrap()), [1, 2]);
    assert_eq!(tx.envelope("c").unwrap().unwrap().seq, 3);
    let p = RuleProgress::from_doc(obj(
        json!({"cursor": 3, "generation": 0, "definition": "", "deadlines": {}, "silent_through": 0}),
    ));
    tx.save_progress("rule", &p).unwrap();
    assert_eq!(tx.progress("rule").unwrap(), Some(p.clone()));
    let r = run("r1", "rule", "k", 3, t0());
    tx.save_runs(std::slice::from_ref(&r)).unwrap();
    assert_eq!(tx.run("r1").unwrap(), Some(r.clone()));
    assert_eq!(ids(&tx.scope_runs("rule", "k").unwrap()), ["r1"]);
    tx.save_schedule("tick", at(3)).unwrap();
    assert_eq!(tx.schedule("tick").unwrap(), Some(at(3)));
    let sr = stored("suite:own", 1, StoredRuleStatus::Active);
    tx.save_stored_rule(&sr).unwrap();
    assert_eq!(tx.stored_rule("suite:own").unwrap(), Some(sr.clone()));
    assert_eq!(tx.stored_rules().unwrap(), vec![sr.clone()]);
    // Outside, nothing yet.
    read_beside_open_tx(h, || s.head_seq(&w), 2);
    read_beside_open_tx(h, || s.run(&w, "r1"), None);
    tx.commit().unwrap();
    assert_eq!(s.head_seq(&w).unwrap(), 3);
    assert_eq!(s.run(&w, "r1").unwrap(), Some(r));
    assert_eq!(s.progress(&w).unwrap(), vec![("rule".to_string(), p)]);
    assert_eq!(s.stored_rules(&w).unwrap(), vec![sr]);
    assert_eq!(s.schedules(&w).unwrap(), vec![("tick".to_string(), at(3))]);
}

/// Workspaces (and tenants) share nothing: seqs, ids, runs, leases and cursors are their own.
pub fn workspaces_are_isolated(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let a = ws("t-iso", "a");
    let b = ws("t-iso", "b");
    let c = ws("t-iso-2", "a");
    for w in [&a, &b, &c] {
        assert_eq!(append(s, w, &["same"])[0].seq, 1);
        commit(s, w, |tx| {
            tx.save_runs(&[run("r", "rule", "k", 1, t0())]).unwrap()
        });
    }
    append(s, &a, &["more"]);
    assert_eq!(s.head_seq(&a).unwrap(), 2);
    assert_eq!(s.head_seq(&b).unwrap(), 1);
    assert_eq!(s.head_seq(&c).unwrap(), 1);
    assert_eq!(s.read(&c, &LogQuery::new()).unwrap().len(), 1);
    assert!(s.acquire_lease(&a, "k", "x", Duration::from_secs(30)).unwrap());
    assert!(s.acquire_lease(&b, "k", "y", Duration::from_secs(30)).unwrap());
    s.save_cursor(&a, "m", 2).unwrap();
    assert_eq!(s.cursor(&b, "m").unwrap(), 0);
    assert_eq!(s.cursor(&c, "m").unwrap(), 0);
}

/// `after < seq < before`, some types, the first `limit`, the last `last` (oldest first).
pub fn read_windows_filter_in_the_store(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-read", "w");
    let mut tx = s.begin(&w).unwrap();
    let entries: Vec<Entry> = (1..=10)
        .map(|i| entry(&format!("e{i}"), if i % 3 == 0 { "three" } else { "other" }))
        .collect();
    tx.append(&entries).unwrap();
    tx.commit().unwrap();
    let read = |q: LogQuery| seqs(&s.read(&w, &q).unwrap());
    assert_eq!(read(LogQuery::new()), (1..=10).collect::<Vec<_>>());
    assert_eq!(read(LogQuery::new().after(7)), [8, 9, 10]);
    assert_eq!(read(LogQuery::new().before(4)), [1, 2, 3]);
    assert_eq!(read(LogQuery::new().after(2).before(6)), [3, 4, 5]);
    assert_eq!(read(LogQuery::new().after(6).before(6)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().before(1)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().before(0)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().after(50)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().types(["suite:three"])), [3, 6, 9]);
    assert_eq!(
        read(LogQuery::new().types(["suite:three", "suite:none"]).limit(2)),
        [3, 6]
    );
    assert_eq!(read(LogQuery::new().types(["suite:three"]).last(2)), [6, 9]);
    assert_eq!(
        read(LogQuery::new().types(Vec::<String>::new())),
        Vec::<i64>::new()
    );
    assert_eq!(read(LogQuery::new().limit(3)), [1, 2, 3]);
    assert_eq!(read(LogQuery::new().last(3)), [8, 9, 10]);
    assert_eq!(read(LogQuery::new().last(3).before(5)), [2, 3, 4]);
    assert_eq!(read(LogQuery::new().last(30)), (1..=10).collect::<Vec<_>>());
    assert_eq!(read(LogQuery::new().limit(0)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().last(0)), Vec::<i64>::new());
    assert_eq!(
        read(LogQuery::new().after(3).types(["suite:other"]).last(2)),
        [8, 10]
    );
    invalid(s.read(&w, &LogQuery::new().limit(1).last(1)), "limit and last");
    invalid(s.read(&w, &LogQuery::new().after(-1)), "negative after");
    invalid(s.read(&w, &LogQuery::new().limit(MAX_READ + 1)), "huge limit");
    // A workspace nobody wrote reads empty.
    assert!(s
        .read(&ws("t-read", "none"), &LogQuery::new())
        .unwrap()
        .is_empty());
}

/// Progress per rule; states for the keys found, in the order asked; clearing hides
/// committed and pending states.
pub fn progress_and_scope_states(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-states", "w");
    let state = |n: i64| {
        ScopeState::from_doc(obj(
            json!({"scope": {"n": n}, "dedupe": null, "pattern": {"kind": "each"}, "throttle": null}),
        ))
    };
    commit(s, &w, |tx| {
        tx.save_progress("b-rule", &RuleProgress::from_doc(obj(json!({"cursor": 1}))))
            .unwrap();
        tx.save_progress("a-rule", &RuleProgress::from_doc(obj(json!({"cursor": 2}))))
            .unwrap();
        tx.save_states(
            "r",
            &[
                ("k1".into(), state(1)),
                ("k2".into(), state(2)),
                ("k3".into(), state(3)),
            ],
        )
        .unwrap();
        tx.save_states("other", &[("k1".into(), state(9))]).unwrap();
    });
    // Progress in the order the rules first saved one; an update keeps its place.
    commit(s, &w, |tx| {
        tx.save_progress("b-rule", &RuleProgress::from_doc(obj(json!({"cursor": 5}))))
            .unwrap()
    });
    let progress = s.progress(&w).unwrap();
    assert_eq!(
        progress.iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>(),
        ["b-rule", "a-rule"]
    );
    assert_eq!(progress[0].1.doc()["cursor"], json!(5));
    let mut tx = s.begin(&w).unwrap();
    let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    let got = tx.states("r", &keys(&["k3", "missing", "k1"])).unwrap();
    assert_eq!(
        got,
        vec![("k3".to_string(), state(3)), ("k1".to_string(), state(1))]
    );
    tx.save_states("r", &[("k4".into(), state(4))]).unwrap();
    tx.clear_states("r").unwrap();
    assert!(
        tx.states("r", &keys(&["k1", "k4"])).unwrap().is_empty(),
        "cleared: committed and pending"
    );
    tx.save_states("r", &[("k5".into(), state(5))]).unwrap();
    assert_eq!(
        tx.states("r", &keys(&["k1", "k5"])).unwrap(),
        vec![("k5".to_string(), state(5))]
    );
    assert_eq!(
        tx.states("other", &keys(&["k1"])).unwrap().len(),
        1,
        "another rule's states stay"
    );
    tx.commit().unwrap();
    let mut tx = s.begin(&w).unwrap();
    assert_eq!(
        tx.states("r", &keys(&["k1", "k2", "k3", "k4", "k5"])).unwrap(),
        vec![("k5".to_string(), state(5))]
    );
    assert_eq!(
        tx.states("other", &keys(&["k1"])).unwrap(),
        vec![("k1".to_string(), state(9))]
    );
}

/// Runs: upsert keeps a run's place; listing newest first with filters and a limit; a scope's
/// unsucceeded runs in firing order, ties in creation order.
pub fn runs_upsert_list_and_scope_order(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-runs", "w");
    let r1 = run("r1", "ra", "k1", 5, t0());
    let r2 = run("r2", "ra", "k1", 3, t0());
    let r3 = run("r3", "rb", "k1", 3, t0());
    let r4 = run("r4", "ra", "k1", 3, t0());
    commit(s, &w, |tx| tx.save_runs(&[r1.clone(), r2.clone()]).unwrap());
    commit(s, &w, |tx| {
        tx.save_runs(&[r3.clone(), r4.clone()]).unwrap();
        // An update of r1 keeps its place.
        tx.save_runs(&[with_status(&r1, RunStatus::Running, t0())])
            .unwrap();
    });
    let list = |q: RunQuery| {
        ids(&s.runs(&w, &q).unwrap())
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(list(RunQuery::default()), ["r4", "r3", "r2", "r1"]);
    assert_eq!(
        list(RunQuery {
            rule: Some("ra".into()),
            ..Default::default()
        }),
        ["r4", "r2", "r1"]
    );
    assert_eq!(
        list(RunQuery {
            status: Some(RunStatus::Running),
            ..Default::default()
        }),
        ["r1"]
    );
    assert_eq!(
        list(RunQuery {
            scope_key: Some("nope".into()),
            ..Default::default()
        }),
        Vec::<String>::new()
    );
    assert_eq!(
        list(RunQuery {
            limit: Some(2),
            ..Default::default()
        }),
        ["r4", "r3"]
    );
    assert_eq!(
        list(RunQuery {
            limit: Some(0),
            ..Default::default()
        }),
        Vec::<String>::new()
    );
    assert_eq!(s.run(&w, "r1").unwrap().unwrap().status(), RunStatus::Running);
    // A run given twice in one call: the last version wins.
    commit(s, &w, |tx| {
        tx.save_runs(&[
            with_status(&r2, RunStatus::Running, t0()),
            with_status(&r2, RunStatus::Succeeded, t0()),
        ])
        .unwrap();
        // Fired seq 3 twice (r2 succeeded, r4 created later), then 5.
        assert_eq!(ids(&tx.scope_runs("ra", "k1").unwrap()), ["r4", "r1"]);
    });
    assert_eq!(s.run(&w, "r2").unwrap().unwrap().status(), RunStatus::Succeeded);
    commit(s, &w, |tx| {
        let r5 = run("r5", "ra", "k1", 3, t0());
        tx.save_runs(&[r5]).unwrap();
        assert_eq!(
            ids(&tx.scope_runs("ra", "k1").unwrap()),
            ["r4", "r5", "r1"],
            "same fired seq: creation order"
        );
    });
    // Round trip of the whole document.
    assert_eq!(s.run(&w, "r3").unwrap().unwrap().to_json(), r3.to_json());
}

/// Dead letters come back oldest first, all or one rule's.
pub fn dead_letters_oldest_first(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-dead", "w");
    commit(s, &w, |tx| {
        tx.dead_letter(&[
            EvaluationError::new("b", 1, "x"),
            EvaluationError::new("a", 2, "y"),
        ])
        .unwrap()
    });
    commit(s, &w, |tx| {
        tx.dead_letter(&[EvaluationError::new("b", 3, "z")]).unwrap()
    });
    let all = s.dead_letters(&w, None).unwrap();
    assert_eq!(
        all.iter()
            .map(|l| l.doc()["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let b = s.dead_letters(&w, Some("b")).unwrap();
    assert_eq!(
        b.iter()
            .map(|l| l.doc()["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [1, 3]
    );
    assert_eq!(
        all[0].to_json(),
        "{\"rule\": \"b\", \"seq\": 1, \"error\": \"x\"}"
    );
}

/// Schedule ticks: read and saved in a transaction; listed in UTC in first-tick order.
pub fn schedules_tick(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-sched", "w");
    let plus2 = Timestamp::parse_json_text("2026-01-01T15:00:00+02:00").unwrap();
    commit(s, &w, |tx| {
        assert!(tx.schedule("hourly").unwrap().is_none());
        tx.save_schedule("hourly", at(60)).unwrap();
        tx.save_schedule("daily", plus2).unwrap();
    });
    commit(s, &w, |tx| tx.save_schedule("hourly", at(3600)).unwrap());
    let got = s.schedules(&w).unwrap();
    assert_eq!(
        got,
        vec![("hourly".to_string(), at(3600)), ("daily".to_string(), plus2)]
    );
    assert_eq!(got[1].1.offset_seconds(), 0, "listed in UTC");
}

/// Stored rules: versions from 1 per name, the wrong one refused before anything is written
/// (the transaction stays usable); archiving is a version; active ones in code-point order;
/// history from the log's facts.
pub fn stored_rules_one_version_at_a_time(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-rules", "w");
    let mut tx = s.begin(&w).unwrap();
    for wrong in [0, 2] {
        match tx.save_stored_rule(&stored("suite:b", wrong, StoredRuleStatus::Active)) {
            Err(StoreError::Conflict {
                expected: 1,
                found: Some(f),
                ..
            }) if f == wrong => {}
            Err(StoreError::InvalidInput { .. }) if wrong == 0 => {}
            other => panic!("version {wrong}: {other:?}"),
        }
    }
    assert!(tx.stored_rule("suite:b").unwrap().is_none());
    // Names in code-point order: "B" < "a" < "b" < "é".
    for name in ["suite:b", "suite:é", "suite:B", "suite:a"] {
        tx.save_stored_rule(&stored(name, 1, StoredRuleStatus::Active))
            .unwrap();
    }
    tx.save_stored_rule(&stored("suite:b", 2, StoredRuleStatus::Active))
        .unwrap();
    assert!(matches!(
        tx.save_stored_rule(&stored("suite:b", 2, StoredRuleStatus::Active)),
        Err(StoreError::Conflict { expected: 3, .. })
    ));
    let mut facts = Vec::new();
    for (version, kind) in [
        (1, crate::workspace::RULE_INSTALLED),
        (2, crate::workspace::RULE_INSTALLED),
    ] {
        let mut e = entry(&format!("fact-b-{version}"), "x");
        e.event =
            obj(json!({"type": kind, "rule": "suite:b", "version": version, "spec": {}, "provenance": {}}));
        facts.push(e);
    }
    let mut other = entry("fact-a-1", "x");
    other.event = obj(
        json!({"type": crate::workspace::RULE_INSTALLED, "rule": "suite:a", "version": 1, "spec": {}, "provenance": {}}),
    );
    facts.insert(1, other);
    facts.push(entry("plain", "x"));
    tx.append(&facts).unwrap();
    tx.commit().unwrap();
    commit(s, &w, |tx| {
        tx.save_stored_rule(&stored("suite:a", 2, StoredRuleStatus::Archived))
            .unwrap();
        let mut e = entry("fact-a-2", "x");
        e.event = obj(
            json!({"type": crate::workspace::RULE_ARCHIVED, "rule": "suite:a", "version": 2, "reason": null, "cancelled": 0}),
        );
        tx.append(&[e]).unwrap();
        assert_eq!(
            tx.stored_rule("suite:a").unwrap().unwrap().status,
            StoredRuleStatus::Archived
        );
    });
    let names: Vec<String> = s
        .stored_rules(&w)
        .unwrap()
        .iter()
        .map(|r| r.name().to_owned())
        .collect();
    assert_eq!(names, ["suite:B", "suite:b", "suite:é"]);
    let b = s
        .stored_rules(&w)
        .unwrap()
        .into_iter()
        .find(|r| r.name() == "suite:b")
        .unwrap();
    assert_eq!(b, stored("suite:b", 2, StoredRuleStatus::Active));
    let history = |n: &str| {
        s.rule_history(&w, n)
            .unwrap()
            .iter()
            .map(|e| e.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(history("suite:b"), ["fact-b-1", "fact-b-2"]);
    assert_eq!(history("suite:a"), ["fact-a-1", "fact-a-2"]);
    assert!(history("suite:none").is_empty());
    // Archived and installed again: the versions continue.
    commit(s, &w, |tx| {
        assert!(tx
            .save_stored_rule(&stored("suite:a", 1, StoredRuleStatus::Active))
            .is_err());
        tx.save_stored_rule(&stored("suite:a", 3, StoredRuleStatus::Active))
            .unwrap();
    });
    assert_eq!(s.stored_rules(&w).unwrap().len(), 4);
}

/// Leases: taken, renewed by their holder, refused to another until they lapse by the
/// storage's clock, released only by their holder.
pub fn leases_are_exclusive_and_expire(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-lease", "w");
    let ttl = Duration::from_secs(30);
    h.clock().set(t0());
    assert!(s.acquire_lease(&w, "eval", "a", ttl).unwrap());
    assert!(!s.acquire_lease(&w, "eval", "b", ttl).unwrap());
    h.clock().set(at(20));
    assert!(
        s.acquire_lease(&w, "eval", "a", ttl).unwrap(),
        "renewed by its holder"
    );
    h.clock().set(at(40));
    assert!(
        !s.acquire_lease(&w, "eval", "b", ttl).unwrap(),
        "renewed: lapses at 50"
    );
    let leases = s.leases(&w).unwrap();
    assert_eq!(leases.len(), 1);
    assert_eq!((leases[0].holder.as_str(), leases[0].expires_at), ("a", at(50)));
    h.clock().set(at(50));
    assert!(
        s.acquire_lease(&w, "eval", "b", ttl).unwrap(),
        "lapsed at exactly its expiry"
    );
    s.release_lease(&w, "eval", "a").unwrap();
    assert!(
        !s.acquire_lease(&w, "eval", "c", ttl).unwrap(),
        "only its holder releases it"
    );
    s.release_lease(&w, "eval", "b").unwrap();
    assert!(s.acquire_lease(&w, "eval", "c", ttl).unwrap());
    assert!(s
        .acquire_lease(&w, "other", "a", Duration::from_millis(1))
        .unwrap());
    invalid(s.acquire_lease(&w, "k", "a", Duration::ZERO), "ttl 0");
    invalid(s.acquire_lease(&w, "", "a", ttl), "empty key");
    s.release_lease(&w, "never", "x").unwrap();
}

/// A cursor only moves forward; unknown cursors are 0.
pub fn cursors_only_move_forward(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-cursor", "w");
    assert_eq!(s.cursor(&w, "m").unwrap(), 0);
    s.save_cursor(&w, "m", 5).unwrap();
    s.save_cursor(&w, "m", 3).unwrap();
    assert_eq!(s.cursor(&w, "m").unwrap(), 5);
    s.save_cursor(&w, "m", 7).unwrap();
    s.save_cursor(&w, "n", 0).unwrap();
    assert_eq!(s.cursor(&w, "m").unwrap(), 7);
    assert_eq!(
        s.cursors(&w).unwrap(),
        vec![("m".to_string(), 7), ("n".to_string(), 0)]
    );
    invalid(s.save_cursor(&w, "m", -1), "negative seq");
    assert_eq!(s.cursor(&w, "m").unwrap(), 7);
}

fn due_ids(s: &dyn WorkspaceStorage, now: Timestamp, limit: usize, policy: &RunPolicy) -> Vec<String> {
    s.due_runs(now, limit, policy)
        .unwrap()
        .into_iter()
        .map(|(_, r)| r.id().to_owned())
        .collect()
}

fn set<const N: usize>(names: [&str; N]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The policy cases the seed lists, one by one.
pub fn due_runs_policy_cases(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-due", "w");
    let now = at(100);
    let mk = |id: &str, rule: &str, scope: &str, fired: i64, status: RunStatus, next: i64| {
        with_status(&run(id, rule, scope, fired, t0()), status, at(next))
    };
    commit(s, &w, |tx| {
        tx.save_runs(&[
            // Unordered rule: every due waiting run; not-yet-due and finished ones are not.
            mk("u1", "free", "k", 1, RunStatus::Pending, 10),
            mk("u2", "free", "k", 2, RunStatus::Retrying, 20),
            mk("u3", "free", "k", 3, RunStatus::Pending, 500),
            mk("u4", "free", "k", 4, RunStatus::Succeeded, 0),
            mk("u5", "free", "k", 5, RunStatus::Dead, 0),
            // Ordered scope with a backlog: only the first holder.
            mk("o1", "ord", "s1", 1, RunStatus::Pending, 30),
            mk("o2", "ord", "s1", 2, RunStatus::Pending, 5),
            mk("o3", "ord", "s1", 3, RunStatus::Pending, 6),
            // Finished runs do not hold: s2's first waiting run is due.
            mk("p1", "ord", "s2", 1, RunStatus::Succeeded, 0),
            mk("p2", "ord", "s2", 2, RunStatus::Cancelled, 0),
            mk("p3", "ord", "s2", 3, RunStatus::Skipped, 0),
            mk("p4", "ord", "s2", 4, RunStatus::Dead, 0),
            mk("p5", "ord", "s2", 5, RunStatus::Pending, 40),
            // A retrying run holds its scope even while not due yet.
            mk("q1", "ord", "s3", 1, RunStatus::Retrying, 900),
            mk("q2", "ord", "s3", 2, RunStatus::Pending, 1),
            // Blocking rule: a dead-lettered run holds the scope.
            mk("b1", "blk", "s4", 1, RunStatus::Dead, 0),
            mk("b2", "blk", "s4", 2, RunStatus::Pending, 2),
            // Same fired seq: creation order decides (c2 created first).
            mk("c2", "ord", "s5", 7, RunStatus::Pending, 50),
            mk("c1", "ord", "s5", 7, RunStatus::Pending, 3),
            // Disabled rule: left out.
            mk("d1", "off", "k", 1, RunStatus::Pending, 0),
            // Running: due only when the lease is missing or lapsed, wherever it is.
            mk("x1", "ord", "s6", 1, RunStatus::Pending, 4),
            mk("x2", "ord", "s6", 2, RunStatus::Running, 60),
            mk("x3", "ord", "s7", 1, RunStatus::Running, 70),
            mk("x4", "free", "k", 9, RunStatus::Running, 80),
        ])
        .unwrap();
    });
    h.clock().set(at(0));
    assert!(s
        .acquire_lease(&w, &run_lease("x3"), "exec", Duration::from_secs(1000))
        .unwrap());
    assert!(s
        .acquire_lease(&w, &run_lease("x4"), "exec", Duration::from_secs(50))
        .unwrap());
    let policy = RunPolicy {
        disabled: set(["off"]),
        ordered: set(["ord", "blk"]),
        blocking: set(["blk"]),
    };
    // Ordered by due time.
    assert_eq!(
        due_ids(s, now, 100, &policy),
        ["x1", "u1", "u2", "o1", "p5", "c2", "x2", "x4"],
        "x2: running without a lease; x4's lapsed at 50; x3's holds"
    );
    // The limit is applied after the policy: the backlog and the disabled rule take no place.
    assert_eq!(due_ids(s, now, 3, &policy), ["x1", "u1", "u2"]);
    assert_eq!(due_ids(s, now, 0, &policy), Vec::<String>::new());
    // Not blocking: the dead run no longer holds s4.
    let not_blocking = RunPolicy {
        blocking: BTreeSet::new(),
        ..policy.clone()
    };
    assert!(due_ids(s, now, 100, &not_blocking).contains(&"b2".to_string()));
    // A rule the policy does not name has every due run returned.
    let open = RunPolicy::new();
    let all = due_ids(s, now, 100, &open);
    for id in ["o2", "o3", "q2", "b2", "c1", "d1", "o1"] {
        assert!(
            all.contains(&id.to_string()),
            "{id} with an empty policy: {all:?}"
        );
    }
    assert!(!all.contains(&"x3".to_string()));
    // Earlier now: nothing due yet but the lapsed/missing running leases.
    assert_eq!(due_ids(s, at(0), 100, &policy), ["x2"]);
}

/// Random populations across workspaces: each backend's `due_runs` equals the reference
/// (reflexr 0.1.1's definition, [`reference_due_runs`]) for many `now`, limits and policies.
pub fn due_runs_match_the_reference(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let mut rng = fastrand::Rng::with_seed(7);
    let workspaces = [ws("t-ref", "a"), ws("t-ref", "b"), ws("t-ref2", "a")];
    let rules = ["r1", "r2", "r3"];
    let mut all: Vec<(WorkspaceRef, Run)> = Vec::new();
    for (wi, w) in workspaces.iter().enumerate() {
        let mut runs = Vec::new();
        for i in 0..60 {
            let status = RunStatus::ALL[rng.usize(0..7)];
            let r = with_status(
                &run(
                    &format!("w{wi}-r{i}"),
                    rules[rng.usize(0..3)],
                    &format!("s{}", rng.u64(0..4)),
                    rng.i64(0..10),
                    t0(),
                ),
                status,
                at(rng.i64(0..20)),
            );
            runs.push(r);
        }
        commit(s, w, |tx| tx.save_runs(&runs).unwrap());
        h.clock().set(at(0));
        for r in runs.iter().filter(|r| r.status() == RunStatus::Running) {
            if rng.u64(0..2) == 0 {
                s.acquire_lease(
                    w,
                    &run_lease(r.id()),
                    "x",
                    Duration::from_secs(rng.u64(0..20) + 1),
                )
                .unwrap();
            }
        }
        all.extend(runs.into_iter().map(|r| (w.clone(), r)));
    }
    let leases: Vec<_> = workspaces.iter().map(|w| s.leases(w).unwrap()).collect();
    for round in 0..40 {
        let now = at(rng.i64(0..22));
        let limit = rng.usize(0..30);
        let pick = |rng: &mut fastrand::Rng| {
            rules
                .iter()
                .filter(|_| rng.bool())
                .map(|r| r.to_string())
                .collect::<BTreeSet<_>>()
        };
        let policy = RunPolicy {
            disabled: pick(&mut rng),
            ordered: pick(&mut rng),
            blocking: pick(&mut rng),
        };
        let mut positions = std::collections::HashMap::new();
        let candidates = all.iter().map(|(w, r)| {
            let wi = workspaces.iter().position(|x| x == w).unwrap_or(0);
            let p = positions.entry(wi).or_insert(0i64);
            *p += 1;
            Candidate {
                workspace: w,
                position: *p,
                run: r,
                lease_expires_at: leases[wi]
                    .iter()
                    .find(|l| l.key == run_lease(r.id()))
                    .map(|l| l.expires_at),
            }
        });
        let want: Vec<String> = reference_due_runs(candidates, now, limit, &policy)
            .into_iter()
            .map(|(w, r)| format!("{w}:{}", r.id()))
            .collect();
        let got: Vec<String> = s
            .due_runs(now, limit, &policy)
            .unwrap()
            .into_iter()
            .map(|(w, r)| format!("{w}:{}", r.id()))
            .collect();
        assert_eq!(got, want, "round {round}: now {now}, limit {limit}, {policy:?}");
    }
}

/// `workspaces()` lists those with a log, by tenant then workspace.
pub fn workspaces_lists_those_with_a_log(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    append(s, &ws("t-list-b", "w"), &["e"]);
    append(s, &ws("t-list-a", "z"), &["e"]);
    append(s, &ws("t-list-a", "y"), &["e"]);
    // A transaction that appended nothing, and one rolled back, leave no listed workspace.
    commit(s, &ws("t-list-c", "w"), |tx| tx.save_schedule("x", t0()).unwrap());
    {
        let mut tx = s.begin(&ws("t-list-d", "w")).unwrap();
        tx.append(&[entry("e", "x")]).unwrap();
    }
    let got: Vec<String> = s.workspaces().unwrap().iter().map(|w| w.to_string()).collect();
    assert_eq!(got, ["t-list-a/y", "t-list-a/z", "t-list-b/w"]);
    let info = s.workspace_info(&ws("t-list-a", "z")).unwrap().unwrap();
    assert_eq!((info.head_seq, info.head_ts), (1, Some(t0())));
    assert!(s.workspace_info(&ws("t-list-x", "w")).unwrap().is_none());
    // A rolled-back transaction, a lease or a cursor makes no workspace row.
    assert!(s.workspace_info(&ws("t-list-d", "w")).unwrap().is_none());
    assert!(s
        .acquire_lease(&ws("t-list-e", "w"), "k", "h", Duration::from_secs(5))
        .unwrap());
    s.save_cursor(&ws("t-list-e", "w"), "c", 3).unwrap();
    assert!(s.workspace_info(&ws("t-list-e", "w")).unwrap().is_none());
    let info = s
        .workspace_info(&ws("t-list-c", "w"))
        .unwrap()
        .expect("committed, appended nothing");
    assert_eq!((info.head_seq, info.head_ts), (0, None));
}

/// Bad input is a typed error and changes nothing.
pub fn bad_input_changes_nothing(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-bad", "w");
    append(s, &w, &["a"]);
    invalid(s.begin(&ws("", "w")).map(|_| ()), "empty tenant");
    invalid(s.begin(&ws("t", "w\0")).map(|_| ()), "NUL");
    invalid(s.head_seq(&ws(&"x".repeat(5000), "w")), "over-long tenant");
    let mut tx = s.begin(&w).unwrap();
    invalid(tx.append(&[entry("", "x")]), "empty id");
    invalid(tx.append(&[entry("ok", "x"), entry("bad\0", "x")]), "NUL in id");
    let mut no_type = entry("nt", "x");
    no_type.event.remove("type");
    invalid(tx.append(&[no_type]), "event without type");
    invalid(
        tx.save_progress("", &RuleProgress::from_doc(JsonObject::new())),
        "empty rule",
    );
    invalid(
        tx.save_states("r", &[(String::new(), ScopeState::from_doc(JsonObject::new()))]),
        "empty scope key",
    );
    invalid(tx.read(-1, 10), "negative after");
    invalid(
        tx.save_stored_rule(&StoredRule {
            rule: JsonObject::new(),
            version: 1,
            status: StoredRuleStatus::Active,
            provenance: JsonObject::new(),
        }),
        "rule without name",
    );
    assert!(tx
        .save_stored_rule(&stored("suite:x", 4, StoredRuleStatus::Active))
        .is_err());
    assert_eq!(tx.head_seq().unwrap(), 1);
    tx.append(&[entry("b", "x")]).unwrap();
    tx.commit().unwrap();
    assert_eq!(seqs(&s.read(&w, &LogQuery::new()).unwrap()), [1, 2]);
    invalid(
        s.acquire_lease(&w, "k", "", Duration::from_secs(1)),
        "empty holder",
    );
    invalid(s.save_cursor(&w, "", 1), "empty cursor name");
    invalid(
        s.runs(
            &w,
            &RunQuery {
                limit: Some(MAX_READ + 1),
                ..Default::default()
            },
        ),
        "huge run limit",
    );
    invalid(
        s.due_runs(t0(), MAX_READ + 1, &RunPolicy::new()),
        "huge due limit",
    );
    assert!(Run::from_doc(obj(json!({"id": "r"}))).is_err());
    assert!(s.leases(&w).unwrap().is_empty());
    assert!(s.cursors(&w).unwrap().is_empty());
}

/// A subscription replays, then follows: another thread's commits arrive promptly, each
/// envelope exactly once.
pub fn subscribe_replays_then_follows(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-sub", "w");
    append(s, &w, &["a", "b", "c"]);
    let mut sub = Subscription::new(s, w.clone(), 1).unwrap();
    assert_eq!(
        sub.next_timeout(Duration::from_secs(5)).unwrap().map(|e| e.seq),
        Some(2)
    );
    assert_eq!(
        sub.next_timeout(Duration::from_secs(5)).unwrap().map(|e| e.seq),
        Some(3)
    );
    assert!(sub.next_timeout(Duration::from_millis(20)).unwrap().is_none());
    const N: usize = 60;
    let got = std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..N / 3 {
                let mut tx = s.begin(&w).unwrap();
                tx.append(&[
                    entry(&format!("n{i}-1"), "x"),
                    entry(&format!("n{i}-2"), "x"),
                    entry(&format!("n{i}-3"), "x"),
                ])
                .unwrap();
                tx.commit().unwrap();
            }
        });
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while got.len() < N && Instant::now() < deadline {
            if let Some(e) = sub.next_timeout(Duration::from_secs(2)).unwrap() {
                got.push(e.seq);
            }
        }
        got
    });
    assert_eq!(
        got,
        (4..4 + N as i64).collect::<Vec<_>>(),
        "every envelope once, in order"
    );
    // A commit in this process wakes a waiting subscriber at once (well under the poll interval).
    let started = Instant::now();
    let woke = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            append(s, &w, &["late"]);
        });
        sub.next_timeout(Duration::from_secs(10)).unwrap()
    });
    assert_eq!(woke.map(|e| e.id), Some("late".to_string()));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "woken by the commit, not a timeout"
    );
}

/// Transactions on one workspace run one at a time from the moment they begin: racing
/// read-then-write transactions lose no update, and the log stays gap-free.
pub fn transactions_serialize_per_workspace(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-serial", "w");
    let counter = |tx: &mut dyn crate::workspace::WorkspaceTx| -> i64 {
        tx.progress("count")
            .unwrap()
            .and_then(|p| p.doc()["n"].as_i64())
            .unwrap_or(0)
    };
    std::thread::scope(|scope| {
        for t in 0..4 {
            let w = &w;
            scope.spawn(move || {
                for i in 0..15 {
                    let mut tx = s.begin(w).unwrap();
                    let n = counter(&mut *tx);
                    let head = tx.head_seq().unwrap();
                    std::thread::yield_now();
                    let out = tx.append(&[entry(&format!("t{t}-{i}"), "x")]).unwrap();
                    assert_eq!(out[0].seq, head + 1);
                    tx.save_progress("count", &RuleProgress::from_doc(obj(json!({"n": n + 1}))))
                        .unwrap();
                    tx.commit().unwrap();
                }
            });
        }
    });
    let mut tx = s.begin(&w).unwrap();
    assert_eq!(counter(&mut *tx), 60, "no lost update");
    drop(tx);
    assert_eq!(
        seqs(&s.read(&w, &LogQuery::new()).unwrap()),
        (1..=60).collect::<Vec<_>>()
    );
}

/// While one transaction holds a workspace, another workspace's transactions proceed, and
/// reads outside transactions do not wait for it.
pub fn other_workspaces_proceed_during_a_transaction(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let a = ws("t-par", "a");
    let b = ws("t-par", "b");
    append(s, &a, &["x"]);
    let mut held = s.begin(&a).unwrap();
    held.append(&[entry("y", "x")]).unwrap();
    // Reads of the held workspace answer with what is committed.
    read_beside_open_tx(h, || s.head_seq(&a), 1);
    if h.parallel_workspaces() {
        // Another workspace's transaction begins, appends and commits while `a` is held.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut tx = s.begin(&b).unwrap();
                tx.append(&[entry("b1", "x")]).unwrap();
                tx.commit().unwrap();
                let _ = done.send(());
            });
            let proceeded = finished.recv_timeout(Duration::from_secs(10)).is_ok();
            assert!(
                proceeded,
                "a transaction on another workspace waited 10 s for the held one"
            );
        });
        assert_eq!(s.head_seq(&b).unwrap(), 1, "committed while `a` was held");
    }
    // A second transaction on `a` waits; on SQLite every write transaction waits (one writer
    // per file), so only backends with per-workspace locks are asked to proceed on `b`.
    let second_began = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let t = scope.spawn(|| {
            let mut tx = s.begin(&a).unwrap();
            second_began.store(true, Ordering::SeqCst);
            let head = tx.head_seq().unwrap();
            tx.append(&[entry("z", "x")]).unwrap();
            tx.commit().unwrap();
            head
        });
        std::thread::sleep(Duration::from_millis(150));
        assert!(
            !second_began.load(Ordering::SeqCst),
            "a second transaction on the workspace waited"
        );
        held.commit().unwrap();
        assert_eq!(t.join().unwrap(), 2, "it began after the first committed");
    });
    let expected = if h.parallel_workspaces() { 2 } else { 1 };
    assert_eq!(append(s, &b, &["w"])[0].seq, expected);
}

/// Saves from several threads leave the furthest cursor.
pub fn cursor_race_keeps_the_furthest(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-cursor-race", "w");
    std::thread::scope(|scope| {
        for t in 0..4i64 {
            let w = &w;
            scope.spawn(move || {
                for i in 0..25i64 {
                    // Even threads climb, odd ones descend: the furthest is 24 * 4 + 3.
                    let step = if t % 2 == 0 { i } else { 24 - i };
                    s.save_cursor(w, "m", step * 4 + t).unwrap();
                }
            });
        }
    });
    assert_eq!(s.cursor(&w, "m").unwrap(), 99);
}

/// Everything committed survives a close and reopen, byte for byte.
pub fn reopen_sees_everything_committed(h: &mut dyn WorkspaceHarness) {
    let w = ws("t-reopen", "w");
    let r = run("r1", "rule", "k", 1, t0());
    let sr = stored("suite:r", 1, StoredRuleStatus::Active);
    let before;
    {
        let s = h.storage();
        append(s, &w, &["a", "b"]);
        commit(s, &w, |tx| {
            tx.save_runs(std::slice::from_ref(&r)).unwrap();
            tx.save_progress("rule", &RuleProgress::from_doc(obj(json!({"cursor": 2}))))
                .unwrap();
            tx.save_states(
                "rule",
                &[("k".into(), ScopeState::from_doc(obj(json!({"scope": {"k": 1}}))))],
            )
            .unwrap();
            tx.dead_letter(&[EvaluationError::new("rule", 1, "boom")])
                .unwrap();
            tx.save_schedule("hourly", at(7)).unwrap();
            tx.save_stored_rule(&sr).unwrap();
        });
        h.clock().set(t0());
        assert!(s
            .acquire_lease(&w, "eval", "me", Duration::from_secs(60))
            .unwrap());
        s.save_cursor(&w, "m", 2).unwrap();
        before = s.read(&w, &LogQuery::new()).unwrap();
    }
    if !h.reopen() {
        return;
    }
    let s = h.storage();
    let after = s.read(&w, &LogQuery::new()).unwrap();
    assert_eq!(after, before);
    assert_eq!(
        after.iter().map(Envelope::to_json).collect::<Vec<_>>(),
        before.iter().map(Envelope::to_json).collect::<Vec<_>>()
    );
    assert_eq!(s.run(&w, "r1").unwrap().map(|r| r.to_json()), Some(r.to_json()));
    assert_eq!(s.progress(&w).unwrap().len(), 1);
    assert_eq!(s.dead_letters(&w, None).unwrap().len(), 1);
    assert_eq!(s.schedules(&w).unwrap(), vec![("hourly".to_string(), at(7))]);
    assert_eq!(s.stored_rules(&w).unwrap(), vec![sr]);
    assert_eq!(s.cursor(&w, "m").unwrap(), 2);
    assert!(!s
        .acquire_lease(&w, "eval", "other", Duration::from_secs(1))
        .unwrap());
    let mut tx = s.begin(&w).unwrap();
    assert_eq!(tx.states("rule", &["k".to_string()]).unwrap().len(), 1);
    assert_eq!(tx.append(&[entry("c", "x")]).unwrap()[0].seq, 3);
}
