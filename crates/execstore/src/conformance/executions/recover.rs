//! The recovery commands' checks (feature `conformance`): [`control::send`] through
//! [`ExecutionStore::enqueue_outbox`], and [`control::redrive`].
//!
//! `control_redrive` needs only CAS commits, so [`conformance_tests!`](crate::conformance_tests)
//! runs it on every backend. `send_through_the_outbox` needs a backend that writes an outbox
//! entry alone (the trait's default refuses): memory, SQLite and PostgreSQL call it from
//! their tests by name.

use serde_json::json;

use crate::error::StoreError;
use crate::executions::control;
use crate::executions::ExecutionStore;
use crate::executions::{ChildState, Event, Execution, Status};
use crate::kit::validate::MAX_DOCUMENT_BYTES;

use super::{all_outbox, obj, scope};

const NOW: f64 = 1_800_000_100.25;

fn put(store: &dyn ExecutionStore, id: &str, status: Status) -> Execution {
    let mut exe = Execution::new(id, "recover");
    exe.status = status;
    exe.root_path = "order".into();
    exe.active_path = Some("order.pay.charge".into());
    exe.context = obj(json!({"customer": "c-17"}));
    store.save(&mut exe).expect("save");
    exe
}

fn code<T: std::fmt::Debug>(r: crate::Result<T>) -> &'static str {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.code(),
    }
}

/// `send` enqueues one entry addressed to the execution, exactly the event given, without
/// writing the execution; the relay offers it like a step's emit; every refusal writes
/// nothing.
pub fn send_through_the_outbox(store: &dyn ExecutionStore) {
    let ns = scope("send");
    let id = format!("{ns}a");
    let before = put(store, &id, Status::Running);
    let mut event = Event::new(format!("{ns}ev1"), "Approve");
    event.data = obj(json!({"by": "ops", "amount": 12.5, "nested": {"k": [1, 2]}}));

    let token = store.change_token().expect("change_token");
    let sent = control::send(store, &id, &event, Some(before.version)).expect("send");
    assert_ne!(
        store.change_token().unwrap(),
        token,
        "a monitor polling the token sees it"
    );
    assert_eq!(
        (sent.target_id.as_str(), sent.event_id.as_str()),
        (id.as_str(), event.id.as_str())
    );
    let ours: Vec<_> = all_outbox(store)
        .into_iter()
        .filter(|e| e.target_id.as_deref() == Some(id.as_str()))
        .collect();
    assert_eq!(ours.len(), 1, "one entry");
    assert_eq!(ours[0].seq, sent.seq);
    assert_eq!(ours[0].event, event, "the event as given");
    let after = store.load(&id).unwrap().expect("stored");
    assert_eq!(
        after, before,
        "the execution is not written (no step, no new version)"
    );

    // The relay hands it over like any emit.
    let mut offered = Vec::new();
    store
        .relay_outbox(crate::kit::validate::MAX_PAGE, &mut |entries| {
            offered.extend(entries.iter().filter(|e| e.seq == sent.seq).cloned());
            offered.iter().map(|e| e.seq).collect()
        })
        .unwrap();
    assert_eq!(offered.len(), 1, "offered by the relay");
    assert!(all_outbox(store).iter().all(|e| e.seq != sent.seq), "acked");

    // Refusals change nothing.
    let count = || all_outbox(store).len();
    let n = count();
    let done = format!("{ns}done");
    put(store, &done, Status::Done);
    let suspended = format!("{ns}susp");
    put(store, &suspended, Status::Suspended);
    let ok = Event::new(format!("{ns}ev2"), "Approve");
    assert_eq!(
        code(control::send(store, &format!("{ns}nope"), &ok, None)),
        "NOT_FOUND"
    );
    assert!(matches!(
        control::send(store, &id, &ok, Some(before.version + 1)),
        Err(StoreError::Conflict { .. })
    ));
    for (target, why) in [(&done, "DONE"), (&suspended, "SUSPENDED")] {
        match control::send(store, target, &ok, None) {
            Err(StoreError::InvalidInput { field, reason }) => {
                assert_eq!(field, "status");
                assert!(reason.contains(why), "{reason}");
            }
            other => panic!("{why}: {other:?}"),
        }
    }
    let mut big = Event::new(format!("{ns}ev3"), "Approve");
    big.data = obj(json!({"blob": "x".repeat(MAX_DOCUMENT_BYTES)}));
    for bad in [
        Event::new("", "Approve"),
        Event::new(format!("{ns}ev4"), ""),
        Event::new(format!("{ns}ev5"), "Cancel"),
        Event::new(format!("{ns}ev6"), "Start"),
        big,
    ] {
        assert_eq!(
            code(control::send(store, &id, &bad, None)),
            "INVALID_INPUT",
            "{:.40}",
            bad.kind
        );
    }
    assert_eq!(code(control::send(store, "", &ok, None)), "INVALID_INPUT");
    assert_eq!(code(store.enqueue_outbox("", &ok)), "INVALID_INPUT");
    assert_eq!(count(), n, "no refusal enqueued anything");
    assert_eq!(store.load(&id).unwrap().unwrap(), before);
}

/// `redrive` moves a FAILED execution back to RUNNING at the target, clearing its error and
/// history and keeping its context; anything else is a no-op; the refusals change nothing.
pub fn control_redrive(store: &dyn ExecutionStore) {
    let ns = scope("redrive");
    let id = format!("{ns}f");
    let mut failed = Execution::new(&id, "recover");
    failed.status = Status::Failed;
    failed.root_path = "order".into();
    failed.active_path = Some("order.pay".into());
    failed.error = Some("ZeroDivisionError: division by zero".into());
    failed.history = obj(json!({"order.pay": "order.pay.charge"}));
    failed.context = obj(json!({"customer": "c-17"}));
    failed.finished_at = None;
    store.save(&mut failed).unwrap();

    // Refusals: outside the branch, a live child, a stale version, an unknown id, bad input.
    for target in ["other.a", "orderx.a", "ord"] {
        assert_eq!(
            code(control::redrive(store, &id, target, None, NOW)),
            "INVALID_INPUT",
            "{target}"
        );
    }
    assert!(matches!(
        control::redrive(store, &id, "order.pay.charge", Some(failed.version + 1), NOW),
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        code(control::redrive(
            store,
            &format!("{ns}nope"),
            "order.a",
            None,
            NOW
        )),
        "NOT_FOUND"
    );
    assert_eq!(code(control::redrive(store, &id, "", None, NOW)), "INVALID_INPUT");
    assert_eq!(
        code(control::redrive(store, &id, "order.a", None, f64::NAN)),
        "INVALID_INPUT"
    );
    let with_child = format!("{ns}p");
    let mut parent = failed.clone();
    parent.id = with_child.clone();
    parent.version = 0;
    parent
        .children
        .insert(format!("{with_child}:r"), ChildState::region("order.r", "r"));
    store.save(&mut parent).unwrap();
    match control::redrive(store, &with_child, "order.pay.charge", None, NOW) {
        Err(StoreError::InvalidInput { reason, .. }) => {
            assert!(reason.contains("unfinished children"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.load(&id).unwrap().unwrap(),
        failed,
        "refusals change nothing"
    );
    assert_eq!(store.load(&with_child).unwrap().unwrap(), parent);

    let out = control::redrive(store, &id, "order.pay.charge", Some(failed.version), NOW).unwrap();
    assert_eq!(out.changed.len(), 1);
    assert_eq!(
        (out.changed[0].from, out.changed[0].to),
        (Status::Failed, Status::Running)
    );
    let now = store.load(&id).unwrap().unwrap();
    assert_eq!(out.changed[0].version, now.version);
    assert_eq!(now.version, failed.version + 1);
    assert_eq!(now.status, Status::Running);
    assert_eq!(now.active_path.as_deref(), Some("order.pay.charge"));
    assert_eq!(now.error, None);
    assert!(now.history.is_empty());
    assert_eq!(now.context, failed.context, "context kept");
    assert_eq!((now.updated_at, now.finished_at), (Some(NOW), None));

    // Not FAILED (now RUNNING, or DONE): harel's silent no-op.
    let again = control::redrive(store, &id, "order.a", None, NOW + 1.0).unwrap();
    assert!(again.changed.is_empty());
    assert_eq!(store.load(&id).unwrap().unwrap(), now);
    let done = put(store, &format!("{ns}d"), Status::Done);
    assert!(control::redrive(store, &done.id, "order.a", None, NOW)
        .unwrap()
        .changed
        .is_empty());
    assert_eq!(store.load(&done.id).unwrap().unwrap(), done);
}
