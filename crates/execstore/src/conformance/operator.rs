//! The operator records' behaviour suite (feature `conformance`): every backend of
//! [`OperatorStore`] passes it. Plain functions over an [`OperatorHarness`]; each check gets
//! a fresh, empty store. Times are passed in, so nothing here reads a clock.

use serde_json::{json, Map, Value};

use crate::error::StoreError;
use crate::operator::{AuditEntry, AuditQuery, OperatorStore, SavedView, MAX_REASON_CHARS, OK, PENDING};

/// What the suite needs from a backend's test.
pub trait OperatorHarness {
    /// The store under test: empty when the harness is made.
    fn store(&self) -> &dyn OperatorStore;
    /// Closes the store and opens it again on the same data; `false` for a backend that
    /// keeps nothing.
    fn reopen(&mut self) -> bool;
}

/// The time the checks start at.
pub const T0: f64 = 1_700_000_000.0;

fn entry(at: f64, actor: &str, action: &str, target: &str) -> AuditEntry {
    let mut params = Map::new();
    params.insert("expected_version".into(), json!(3));
    AuditEntry {
        id: 0,
        at,
        actor: actor.into(),
        role: "act".into(),
        action: action.into(),
        target: target.into(),
        reason: format!("{actor} {action} {target}"),
        outcome: OK.into(),
        message: None,
        params,
    }
}

fn ids(entries: &[AuditEntry]) -> Vec<i64> {
    entries.iter().map(|e| e.id).collect()
}

fn list(s: &dyn OperatorStore, q: AuditQuery) -> Vec<AuditEntry> {
    s.list_audit(&q).expect("list_audit")
}

/// Entries come back field for field, newest first, ids increasing in record order.
pub fn audit_round_trips_newest_first(h: &mut dyn OperatorHarness) {
    let s = h.store();
    assert!(list(s, AuditQuery::new()).is_empty(), "empty at first");
    let mut failed = entry(T0 + 1.5, "ops-änne", "terminate", "order:17 ✓");
    failed.outcome = "CONFLICT".into();
    failed.message = Some("version 3 expected, found 4: \"quoted\"".into());
    failed.reason = "r".repeat(MAX_REASON_CHARS);
    failed
        .params
        .insert("nested".into(), json!({"a": [1, 2.5, null, "x"]}));
    let a = s
        .record_audit(&entry(T0, "alice", "suspend", "e1"))
        .expect("record");
    let b = s.record_audit(&failed).expect("record");
    let c = s
        .record_audit(&entry(T0 + 2.0, "bob", "outbox.ack", ""))
        .expect("record");
    assert!(a < b && b < c, "ids increase: {a} {b} {c}");
    let all = list(s, AuditQuery::new());
    assert_eq!(ids(&all), [c, b, a]);
    assert_eq!(all[1], AuditEntry { id: b, ..failed });
    assert_eq!(
        all[2],
        AuditEntry {
            id: a,
            ..entry(T0, "alice", "suspend", "e1")
        }
    );
    assert_eq!(all[0].target, "");
    assert_eq!(all[0].message, None);
}

/// Target, actor and the time window filter, together, and keyset paging walks them all.
pub fn audit_filters_and_pages(h: &mut dyn OperatorHarness) {
    let s = h.store();
    let mut recorded = Vec::new();
    for i in 0..9 {
        let actor = if i % 2 == 0 { "alice" } else { "bob" };
        let target = if i % 3 == 0 { "e1" } else { "e2" };
        recorded.push((
            i,
            s.record_audit(&entry(T0 + f64::from(i), actor, "suspend", target))
                .expect("record"),
        ));
    }
    let want = |f: &dyn Fn(i32) -> bool| -> Vec<i64> {
        recorded
            .iter()
            .rev()
            .filter(|(i, _)| f(*i))
            .map(|(_, id)| *id)
            .collect()
    };
    let q = |target: Option<&str>, actor: Option<&str>| AuditQuery {
        target: target.map(str::to_owned),
        actor: actor.map(str::to_owned),
        ..AuditQuery::new()
    };
    assert_eq!(ids(&list(s, q(Some("e1"), None))), want(&|i| i % 3 == 0));
    assert_eq!(ids(&list(s, q(None, Some("bob")))), want(&|i| i % 2 == 1));
    assert_eq!(
        ids(&list(s, q(Some("e2"), Some("alice")))),
        want(&|i| i % 3 != 0 && i % 2 == 0)
    );
    assert!(list(s, q(Some("nope"), None)).is_empty());
    let window = AuditQuery {
        since: Some(T0 + 2.0),
        until: Some(T0 + 5.0),
        ..AuditQuery::new()
    };
    assert_eq!(
        ids(&list(s, window)),
        want(&|i| (2..5).contains(&i)),
        "since inclusive, until exclusive"
    );
    // Pages of 4 by keyset: every entry once, in order.
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let page = list(
            s,
            AuditQuery {
                before,
                limit: 4,
                ..AuditQuery::new()
            },
        );
        assert!(page.len() <= 4);
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        seen.extend(ids(&page));
    }
    assert_eq!(seen, want(&|_| true));
    let page = list(
        s,
        AuditQuery {
            before: Some(recorded[5].1),
            actor: Some("alice".into()),
            limit: 1,
            ..AuditQuery::new()
        },
    );
    assert_eq!(ids(&page), [recorded[4].1]);
}

/// Bad input is refused with a typed error and records nothing.
pub fn bad_input_changes_nothing(h: &mut dyn OperatorHarness) {
    let s = h.store();
    let good = entry(T0, "alice", "suspend", "e1");
    let bad: Vec<(&str, AuditEntry)> = vec![
        (
            "at",
            AuditEntry {
                at: f64::NAN,
                ..good.clone()
            },
        ),
        (
            "at",
            AuditEntry {
                at: -1.0,
                ..good.clone()
            },
        ),
        (
            "actor",
            AuditEntry {
                actor: String::new(),
                ..good.clone()
            },
        ),
        (
            "action",
            AuditEntry {
                action: String::new(),
                ..good.clone()
            },
        ),
        (
            "outcome",
            AuditEntry {
                outcome: String::new(),
                ..good.clone()
            },
        ),
        (
            "reason",
            AuditEntry {
                reason: "r".repeat(MAX_REASON_CHARS + 1),
                ..good.clone()
            },
        ),
        (
            "reason",
            AuditEntry {
                reason: "a\0b".into(),
                ..good.clone()
            },
        ),
        (
            "target",
            AuditEntry {
                target: "x".repeat(100_000),
                ..good.clone()
            },
        ),
    ];
    for (field, e) in bad {
        match s.record_audit(&e) {
            Err(StoreError::InvalidInput { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    assert!(list(s, AuditQuery::new()).is_empty(), "nothing recorded");
    for q in [
        AuditQuery {
            limit: 0,
            ..AuditQuery::new()
        },
        AuditQuery {
            limit: 1_000_000,
            ..AuditQuery::new()
        },
        AuditQuery {
            since: Some(f64::INFINITY),
            ..AuditQuery::new()
        },
        AuditQuery {
            before: Some(0),
            ..AuditQuery::new()
        },
    ] {
        assert!(
            matches!(s.list_audit(&q), Err(StoreError::InvalidInput { .. })),
            "{q:?}"
        );
    }
    let view = SavedView {
        name: String::new(),
        query: "a=b".into(),
        owner: "o".into(),
        updated_at: T0,
    };
    assert!(matches!(s.put_view(&view), Err(StoreError::InvalidInput { .. })));
    let view = SavedView {
        name: " padded".into(),
        ..view
    };
    assert!(matches!(s.put_view(&view), Err(StoreError::InvalidInput { .. })));
    let view = SavedView {
        name: "tab\there".into(),
        ..view
    };
    assert!(matches!(s.put_view(&view), Err(StoreError::InvalidInput { .. })));
    assert!(matches!(s.delete_view(""), Err(StoreError::InvalidInput { .. })));
    assert!(s.list_views().expect("list").is_empty());
}

/// Views are kept by name, replaced by a put of the same name, removed by a delete.
pub fn views_put_list_delete(h: &mut dyn OperatorHarness) {
    let s = h.store();
    let v = |name: &str, query: &str, owner: &str, at: f64| SavedView {
        name: name.into(),
        query: query.into(),
        owner: owner.into(),
        updated_at: at,
    };
    s.put_view(&v("Failed orders", "status=FAILED&definition=order", "alice", T0))
        .expect("put");
    s.put_view(&v("ärger ✓", "q=%C3%A4&x=1", "bob", T0 + 1.0))
        .expect("put");
    s.put_view(&v("Failed orders", "status=FAILED", "bob", T0 + 2.0))
        .expect("replace");
    let views = s.list_views().expect("list");
    assert_eq!(
        views,
        [
            v("Failed orders", "status=FAILED", "bob", T0 + 2.0),
            v("ärger ✓", "q=%C3%A4&x=1", "bob", T0 + 1.0)
        ]
    );
    assert!(s.delete_view("Failed orders").expect("delete"));
    assert!(!s.delete_view("Failed orders").expect("again"), "gone");
    assert_eq!(s.list_views().expect("list").len(), 1);
}

/// What was recorded survives closing and opening the store again.
pub fn reopen_keeps_everything(h: &mut dyn OperatorHarness) {
    let a = h
        .store()
        .record_audit(&entry(T0, "alice", "purge", "e9"))
        .expect("record");
    let view = SavedView {
        name: "v".into(),
        query: "a=1".into(),
        owner: "alice".into(),
        updated_at: T0,
    };
    h.store().put_view(&view).expect("put");
    if !h.reopen() {
        return;
    }
    let all = list(h.store(), AuditQuery::new());
    assert_eq!(
        all,
        [AuditEntry {
            id: a,
            ..entry(T0, "alice", "purge", "e9")
        }]
    );
    assert_eq!(h.store().list_views().expect("list"), [view]);
    let b = h
        .store()
        .record_audit(&entry(T0, "bob", "purge", "e9"))
        .expect("record");
    assert!(b > a, "ids keep increasing after a reopen");
}

/// Parameters keep JSON's types.
pub fn params_keep_their_types(h: &mut dyn OperatorHarness) {
    let s = h.store();
    let mut e = entry(T0, "alice", "bulk.suspend", "");
    let targets: Vec<Value> = (0..50)
        .map(|i| json!({"id": format!("e{i}"), "expected_version": i}))
        .collect();
    e.params.insert("targets".into(), Value::Array(targets));
    e.params.insert("flag".into(), json!(true));
    e.params.insert("big".into(), json!(9_007_199_254_740_993_i64));
    s.record_audit(&e).expect("record");
    let got = list(s, AuditQuery::new()).remove(0);
    assert_eq!(got.params, e.params);
}

/// An entry recorded `PENDING` before its action gets its outcome once, and only once; the
/// other entries are untouched, an unknown id is `false`, bad arguments change nothing.
pub fn pending_entries_get_their_outcome_once(h: &mut dyn OperatorHarness) {
    let s = h.store();
    let pending = |target: &str| AuditEntry {
        outcome: PENDING.into(),
        ..entry(T0, "alice", "terminate", target)
    };
    let a = s.record_audit(&pending("e1")).expect("record");
    let b = s.record_audit(&pending("e2")).expect("record");
    let c = s.record_audit(&pending("e3")).expect("record");
    assert!(s.set_audit_outcome(a, OK, None).expect("set a"));
    assert!(s
        .set_audit_outcome(b, "CONFLICT", Some("version 3 expected, found 4"))
        .expect("set b"));
    assert!(!s.set_audit_outcome(c + 1000, OK, None).expect("unknown id"));
    // Once set, an outcome stays.
    match s.set_audit_outcome(a, "CONFLICT", Some("later")) {
        Err(StoreError::InvalidInput { field, .. }) => assert_eq!(field, "id"),
        other => panic!("a second outcome: {other:?}"),
    }
    // Bad arguments: typed errors, nothing changes.
    for (id, outcome, field) in [(0, OK, "id"), (c, "", "outcome"), (c, PENDING, "outcome")] {
        match s.set_audit_outcome(id, outcome, None) {
            Err(StoreError::InvalidInput { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{id} {outcome:?}: {other:?}"),
        }
    }
    let long = "m".repeat(100_000);
    assert!(matches!(
        s.set_audit_outcome(c, "CONFLICT", Some(&long)),
        Err(StoreError::InvalidInput { .. })
    ));
    let all = list(s, AuditQuery::new());
    assert_eq!(ids(&all), [c, b, a]);
    assert_eq!((all[2].outcome.as_str(), all[2].message.as_deref()), (OK, None));
    assert_eq!(
        (all[1].outcome.as_str(), all[1].message.as_deref()),
        ("CONFLICT", Some("version 3 expected, found 4"))
    );
    assert_eq!(
        all[0],
        AuditEntry {
            id: c,
            ..pending("e3")
        },
        "untouched"
    );
    // The rest of an entry is as recorded.
    assert_eq!(
        AuditEntry {
            outcome: PENDING.into(),
            message: None,
            ..all[1].clone()
        },
        AuditEntry {
            id: b,
            ..pending("e2")
        }
    );
}

/// One `#[test]` per check of the operator suite for a backend's test crate; `durable` adds
/// the reopen check. `wasm ephemeral:` / `wasm durable:` make one async
/// `#[wasm_bindgen_test]` per check instead (the harness is a future), for the suites run
/// under `cargo test --target wasm32-unknown-unknown` (crates/execstore-wasm/tests).
#[macro_export]
macro_rules! operator_conformance_tests {
    (wasm ephemeral: $harness:expr) => {
        $crate::operator_conformance_tests!(@wasm $harness;
            audit_round_trips_newest_first,
            audit_filters_and_pages,
            bad_input_changes_nothing,
            views_put_list_delete,
            params_keep_their_types,
            pending_entries_get_their_outcome_once,
        );
    };
    (wasm durable: $harness:expr) => {
        $crate::operator_conformance_tests!(wasm ephemeral: $harness);
        $crate::operator_conformance_tests!(@wasm $harness; reopen_keeps_everything,);
    };
    (@wasm $harness:expr; $($check:ident,)*) => {
        $(
            #[::wasm_bindgen_test::wasm_bindgen_test]
            async fn $check() {
                let mut h = $harness.await;
                $crate::conformance::operator::$check(&mut h);
            }
        )*
    };
    (ephemeral: $harness:expr) => {
        $crate::operator_conformance_tests!(@checks $harness;
            audit_round_trips_newest_first,
            audit_filters_and_pages,
            bad_input_changes_nothing,
            views_put_list_delete,
            params_keep_their_types,
            pending_entries_get_their_outcome_once,
        );
    };
    (durable: $harness:expr) => {
        $crate::operator_conformance_tests!(ephemeral: $harness);
        $crate::operator_conformance_tests!(@checks $harness; reopen_keeps_everything,);
    };
    (@checks $harness:expr; $($check:ident,)*) => {
        $(
            #[test]
            fn $check() {
                let mut h = $harness;
                $crate::conformance::operator::$check(&mut h);
            }
        )*
    };
}
