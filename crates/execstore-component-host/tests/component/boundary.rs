//! What only the component boundary can get wrong: input the trait cannot express (JSON
//! text that does not parse, a repeated map key) arriving from a host in another language,
//! the isolation of instances, the options of `open`, and a component that is missing or
//! not a component.

use crate::support::{self, has_sqlite, open};
use execstore::{ChildState, Effects, Event, Execution, ExecutionStore, JsonObject, StoreError};
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
