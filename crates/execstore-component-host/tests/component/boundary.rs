//! What only the component boundary can get wrong: input the trait cannot express (JSON
//! text that does not parse, a repeated map key) arriving from a host in another language,
//! the isolation of instances, the options of `open`, and a component that is missing or
//! not a component.

use crate::support::{self, has_sqlite, open};
use execstore::{
    executions::{ChildState, Event, JsonObject},
    Effects, Execution, ExecutionStore, StoreError,
};
use execstore_component_host::{Backend, ComponentRuntime, HostError};

fn saved(store: &dyn ExecutionStore, id: &str) -> Execution {
    let mut exe = Execution::new(id, "def");
    exe.context.insert("n".into(), 1.into());
    store.save(&mut exe).expect("save");
    exe
}

#[test]
fn json_text_that_is_not_one_object_is_invalid_input_and_changes_nothing() {
    let store = open(Backend::Memory);
    let exe = saved(&store, "a");
    for bad in ["{not json", "[1, 2]", "\"text\"", "", "{} {}"] {
        match store.commit_raw_json(&exe, bad) {
            Err(StoreError::InvalidInput { field, .. }) => assert_eq!(field, "context", "{bad:?}"),
            other => panic!("{bad:?}: expected InvalidInput, got {other:?}"),
        }
    }
    assert_eq!(store.load("a").unwrap().unwrap(), exe, "nothing was written");
    // The same call with valid text commits: the refusal was about the text.
    assert_eq!(store.commit_raw_json(&exe, r#"{"n": 2}"#).unwrap(), 2);
    assert_eq!(store.load("a").unwrap().unwrap().context["n"], 2);
}

#[test]
fn a_repeated_child_key_is_invalid_input() {
    let store = open(Backend::Memory);
    let exe = saved(&store, "p");
    let child = ChildState {
        root_path: "root.r".into(),
        finished: false,
        outcome: None,
        result: JsonObject::new(),
        submachine: false,
        key: "r".into(),
        extra: JsonObject::new(),
    };
    let twice = [
        ("p:r:0".to_owned(), child.clone()),
        ("p:r:0".to_owned(), child.clone()),
    ];
    match store.save_with_children(&exe, &twice) {
        Err(StoreError::InvalidInput { field, reason }) => {
            assert_eq!(field, "children");
            assert!(reason.contains("p:r:0"), "{reason}");
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    assert_eq!(store.load("p").unwrap().unwrap().version, 1);
    let once = [("p:r:0".to_owned(), child.clone()), ("p:r:1".to_owned(), child)];
    assert_eq!(store.save_with_children(&exe, &once).unwrap(), 2);
    assert_eq!(store.load("p").unwrap().unwrap().children.len(), 2);
}

#[test]
fn each_store_is_its_own_instance() {
    let (one, two) = (open(Backend::Memory), open(Backend::Memory));
    let mut exe = saved(&one, "only-in-one");
    assert!(two.load("only-in-one").unwrap().is_none());
    let seqs = one
        .commit(&mut exe, &Effects::new().emit(None, Event::new("e", "E")))
        .unwrap();
    assert_eq!(seqs, [1]);
    assert!(two.pending_outbox(None, 10).unwrap().is_empty());
}

#[test]
fn open_passes_the_trace_limit() {
    let keep_all = support::runtime().open(Backend::Memory, None).unwrap();
    assert_eq!(keep_all.trace_max(), None);
    let keep_two = support::runtime().open(Backend::Memory, Some(2)).unwrap();
    assert_eq!(keep_two.trace_max(), Some(2));
    saved(&keep_two, "t");
    for n in 0..5 {
        let mut step = JsonObject::new();
        step.insert("n".into(), n.into());
        assert_eq!(keep_two.append_trace("t", &step).unwrap(), n);
    }
    let kept: Vec<i64> = keep_two
        .read_trace("t")
        .unwrap()
        .iter()
        .map(|s| s["index"].as_i64().unwrap())
        .collect();
    assert_eq!(kept, [3, 4], "the component's ring keeps the last two");
    assert!(!keep_two.capabilities().durable);
}

#[test]
fn sqlite_memory_is_a_backend_error_where_it_is_not_built() {
    if has_sqlite() {
        // Built in: the conformance suite runs on it (tests/conformance.rs).
        let store = open(Backend::SqliteMemory);
        saved(&store, "s");
        assert_eq!(store.load("s").unwrap().unwrap().version, 1);
        return;
    }
    match support::runtime().open(Backend::SqliteMemory, None) {
        Err(StoreError::Backend {
            message, retryable, ..
        }) => {
            assert!(message.contains("without SQLite"), "{message}");
            assert!(!retryable);
        }
        other => panic!("expected a Backend error, got {other:?}"),
    }
}

#[test]
fn a_missing_or_foreign_file_is_a_load_error() {
    let dir = std::env::temp_dir().join(format!("execstore-component-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.wasm");
    assert!(matches!(
        ComponentRuntime::from_file(&missing),
        Err(HostError::Load { .. })
    ));
    let foreign = dir.join("foreign.wasm");
    std::fs::write(&foreign, b"\0asm\x01\0\0\0").unwrap(); // a core module, not a component
    let result = ComponentRuntime::from_file(&foreign);
    std::fs::remove_dir_all(&dir).ok();
    match result {
        Err(HostError::Load { path, .. }) => assert_eq!(path, foreign),
        other => panic!("expected a Load error, got {other:?}"),
    }
}

/// NaN and ±Infinity cross a WIT `f64` as they are: in every time field (an execution's four
/// times, a timer's `fire_at`, a listing's windows, `due-timers`' `now`, `delete-timer`'s
/// `fire-at`) they are `InvalidInput` naming the field, and nothing is written, on each store
/// the component holds.
#[test]
fn nan_and_infinite_times_are_invalid_input_and_change_nothing() {
    let mut backends = vec![Backend::Memory];
    if has_sqlite() {
        backends.push(Backend::SqliteMemory);
    }
    for backend in backends {
        let store = open(backend);
        let exe = saved(&store, "t");
        let everything = || {
            (
                store.load("t").unwrap(),
                store.ids_with_prefix("").unwrap(),
                store.due_timers(f64::MAX, None, 100).unwrap(),
            )
        };
        let before = everything();
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let field_of = |result: execstore::Result<_>| match result {
                Err(StoreError::InvalidInput { field, .. }) => field,
                other => panic!("{backend:?} {bad}: expected InvalidInput, got {other:?}"),
            };
            for time in ["created_at", "updated_at", "finished_at", "expires_at"] {
                for id in ["t", "new"] {
                    let mut e = if id == "t" {
                        exe.clone()
                    } else {
                        Execution::new(id, "def")
                    };
                    match time {
                        "created_at" => e.created_at = Some(bad),
                        "updated_at" => e.updated_at = Some(bad),
                        "finished_at" => e.finished_at = Some(bad),
                        _ => e.expires_at = Some(bad),
                    }
                    let got = field_of(store.save(&mut e).map(|_| ()));
                    assert_eq!(got, format!("execution.{time}"), "{backend:?} {bad}");
                }
            }
            let mut e = exe.clone();
            let got = field_of(
                store
                    .commit(&mut e, &Effects::new().schedule("p", bad))
                    .map(|_| ()),
            );
            assert_eq!(got, "timers[0].fire_at", "{backend:?} {bad}");
            let query = execstore::executions::ListQuery::new().created_between(Some(bad), None);
            field_of(store.list_executions(&query).map(|_| ()));
            let query = execstore::executions::ListQuery::new().finished_between(None, Some(bad));
            field_of(store.list_executions(&query).map(|_| ()));
            assert_eq!(field_of(store.due_timers(bad, None, 10).map(|_| ())), "now");
            assert_eq!(field_of(store.delete_timer("t", "p", bad).map(|_| ())), "fire_at");
            assert_eq!(everything(), before, "{backend:?} {bad}: the store changed");
        }
    }
}

/// `send`: the component's own checked call and the core's `control::send` over the host's
/// `enqueue_outbox` both put one entry in the outbox; refusals cross as typed errors and
/// write nothing.
#[test]
fn send_crosses_the_boundary_and_refusals_change_nothing() {
    for backend in [Backend::Memory, Backend::SqliteMemory] {
        if backend == Backend::SqliteMemory && !has_sqlite() {
            continue;
        }
        let store = open(backend);
        let mut run = Execution::new("run", "orders");
        run.status = execstore::executions::Status::Running;
        store.save(&mut run).expect("save");
        let mut event = Event::new("evt-1", "Pay");
        event.data.insert("amount".into(), 12.5.into());
        let sent = store.send("run", &event, Some(1)).expect("the component's send");
        assert_eq!(
            (sent.target_id.as_str(), sent.event_id.as_str()),
            ("run", "evt-1")
        );
        let through_host =
            execstore::executions::control::send(&store, "run", &Event::new("evt-2", "Pay"), None)
                .expect("control::send over the host");
        assert!(through_host.seq > sent.seq);
        let outbox = store.pending_outbox(None, 10).expect("outbox");
        assert_eq!(outbox.len(), 2);
        assert_eq!(outbox[0].event, event);
        assert_eq!(outbox[0].target_id.as_deref(), Some("run"));
        assert_eq!(store.load("run").unwrap().unwrap().version, 1, "no step written");

        let refusals: [(&str, Event, Option<i64>, &str); 4] = [
            ("nope", Event::new("e", "Pay"), None, "NOT_FOUND"),
            ("run", Event::new("e", "Pay"), Some(9), "CONFLICT"),
            ("run", Event::new("e", "Cancel"), None, "INVALID_INPUT"),
            ("run", Event::new("", "Pay"), None, "INVALID_INPUT"),
        ];
        for (id, event, expected, code) in refusals {
            match store.send(id, &event, expected) {
                Err(e) => assert_eq!(e.code(), code, "{id} {event:?}"),
                Ok(s) => panic!("{id} {event:?}: sent {s:?}"),
            }
        }
        assert_eq!(store.pending_outbox(None, 10).unwrap().len(), 2, "nothing more");
    }
}

/// The search attributes cross the boundary: declared, listed, used by `where` (no scan),
/// dropped; a bad path is `invalid-input`.
#[test]
fn search_attributes_cross_the_boundary() {
    for backend in [Backend::Memory, Backend::SqliteMemory] {
        if backend == Backend::SqliteMemory && !has_sqlite() {
            continue;
        }
        let store = open(backend);
        for (id, customer) in [("a", "c-1"), ("b", "c-2")] {
            let mut exe = Execution::new(id, "orders");
            exe.context.insert("customer".into(), customer.into());
            store.save(&mut exe).expect("save");
        }
        let declared = store.declare_attribute("context.customer").expect("declare");
        assert_eq!(declared.path, "context.customer");
        assert_eq!(store.attributes().unwrap(), vec![declared]);
        let filter = execstore::executions::parse_where(r#"context.customer = "c-2""#, 0.0).unwrap();
        let page = store
            .list_executions(&execstore::executions::ListQuery::new().filter(filter))
            .unwrap();
        assert_eq!(
            page.items.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            ["b"]
        );
        assert!(page.scan.is_empty(), "declared: answered without a scan");
        match store.declare_attribute("status") {
            Err(StoreError::InvalidInput { .. }) => {}
            other => panic!("expected InvalidInput, got {other:?}"),
        }
        assert!(store.drop_attribute("context.customer").unwrap());
        assert!(!store.drop_attribute("context.customer").unwrap());
        assert!(store.attributes().unwrap().is_empty());
    }
}
