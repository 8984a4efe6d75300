//! The workspace log's behaviour suite (`execstore::conformance::workspace`), run through the
//! component boundary: every call goes from this host into the component's
//! `workspace-store` interface and back, with the host's `ManualClock` read through the
//! component's `clock` import. The threaded checks run too: the host's
//! `ComponentWorkspaceStorage` is `Send + Sync` (calls take turns on the instance, a
//! workspace's transactions wait for each other in the host).
//!
//! Not run: `reopen_sees_everything_committed` (the component's workspace storage is in
//! memory: a reopened one starts empty by design).

use std::sync::Arc;

use execstore::conformance::workspace::SimpleHarness;
use execstore::workspace::{ManualClock, WorkspaceStorage};
use execstore_component_host::{ComponentWorkspaceStorage, WorkspaceBackend};

/// A fresh workspace storage in a fresh component instance, on `clock`.
pub fn open(clock: ManualClock) -> ComponentWorkspaceStorage {
    crate::support::runtime()
        .open_workspace(WorkspaceBackend::Memory, Arc::new(clock))
        .expect("open a workspace storage inside the component")
}

/// The suite's harness over the component's in-memory workspace storage.
pub fn harness() -> SimpleHarness<ComponentWorkspaceStorage> {
    SimpleHarness::new(open)
}

/// Through the component, over the core's in-memory workspace storage.
mod memory {
    execstore::workspace_conformance_tests!(ephemeral: super::harness());
}

/// A transaction's resource is the component's: dropping it on the host rolls back and
/// frees the workspace; a second transaction on a held workspace waits in the host.
#[test]
fn a_dropped_transaction_rolls_back_and_frees_the_workspace() {
    let clock = ManualClock::new(execstore::conformance::workspace::t0());
    let storage = open(clock);
    let ws = execstore::workspace::WorkspaceRef::new("t", "w");
    let mut tx = storage.begin(&ws).expect("begin");
    tx.append(&[execstore::conformance::workspace::entry("e1", "t:a")])
        .expect("append");
    drop(tx);
    assert_eq!(storage.head_seq(&ws).expect("head"), 0);
    let mut tx = storage.begin(&ws).expect("begin again");
    let envelopes = tx
        .append(&[execstore::conformance::workspace::entry("e1", "t:a")])
        .expect("append");
    assert_eq!(envelopes[0].seq, 1);
    tx.commit().expect("commit");
    assert_eq!(storage.head_seq(&ws).expect("head"), 1);
}

/// Text a host in another language could send that is not one JSON object is
/// `invalid-input` naming the field, and appends nothing; good text goes through.
#[test]
fn event_text_that_does_not_parse_is_invalid_input_and_changes_nothing() {
    let storage = open(ManualClock::new(execstore::conformance::workspace::t0()));
    let ws = execstore::workspace::WorkspaceRef::new("t", "w");
    for bad in ["{\"type\": \"t:a\"", "[1, 2]", "\"text\"", "{\"no_type\": 1}"] {
        match storage.append_raw_event(&ws, "e1", bad) {
            Err(execstore::StoreError::InvalidInput { field, .. }) => {
                assert!(field.contains("event"), "{bad}: field {field}")
            }
            other => panic!("{bad}: expected invalid-input, got {other:?}"),
        }
    }
    assert_eq!(storage.head_seq(&ws).expect("head"), 0);
    assert_eq!(storage.workspaces().expect("workspaces"), vec![]);
    let seqs = storage
        .append_raw_event(&ws, "e1", r#"{"type": "t:a", "n": 1.5}"#)
        .expect("append");
    assert_eq!(seqs, vec![1]);
    let envelope = storage.envelope(&ws, "e1").expect("read").expect("found");
    assert_eq!(envelope.event["n"], serde_json::json!(1.5));
}

/// A bad stored rule fails in the component's decoder, the core's one for every surface: the
/// error names the field under the argument (`stored.rule.name`, as the npm package and
/// Python name it), and nothing is saved.
#[test]
fn a_bad_stored_rule_names_its_field_as_every_surface_does() {
    use execstore::workspace::{StoredRule, StoredRuleStatus};
    let storage = open(ManualClock::new(execstore::conformance::workspace::t0()));
    let ws = execstore::workspace::WorkspaceRef::new("t", "w");
    let mut tx = storage.begin(&ws).expect("begin");
    let rule = |v: serde_json::Value| v.as_object().cloned().expect("an object");
    let nameless = StoredRule {
        rule: rule(serde_json::json!({"when": "x"})),
        version: 1,
        status: StoredRuleStatus::Active,
        provenance: Default::default(),
    };
    match tx.save_stored_rule(&nameless) {
        Err(execstore::StoreError::InvalidInput { field, .. }) => assert_eq!(field, "stored.rule.name"),
        other => panic!("expected invalid-input, got {other:?}"),
    }
    let zero = StoredRule {
        rule: rule(serde_json::json!({"name": "r"})),
        version: 0,
        ..nameless
    };
    match tx.save_stored_rule(&zero) {
        Err(execstore::StoreError::InvalidInput { field, .. }) => assert_eq!(field, "stored.version"),
        other => panic!("expected invalid-input, got {other:?}"),
    }
    assert_eq!(tx.stored_rules().expect("stored rules"), vec![]);
}
