//! `GET /metrics`'s text read by Prometheus' own parser (`prometheus_client.parser`, in the
//! Python named by `EXECSTORE_PROMETHEUS_PYTHON`, which scripts/test installs): every family
//! has HELP and TYPE, label values with quotes, backslashes, newlines and braces come back
//! as stored, and the values are the store's.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use execstore::executions::{ListQuery, Status};
use execstore::workspace::{
    Entry, ManualClock, MemoryWorkspaceStorage, Timestamp, WorkspaceRef, WorkspaceStorage,
};
use execstore::{Effects, Execution, ExecutionStore, MemoryStore};
use execstore_monitor_api::{MonitorApi, Stores};
use serde_json::{json, Map, Value};

const NOW: f64 = 1_767_268_800.0;
const WEIRD_DEFINITION: &str = "we\"ird\\def\n}{,=x ünï";
const WEIRD_TENANT: &str = "t\"1}";
const WEIRD_WORKSPACE: &str = "w\\2\nend";

/// Prints the parsed families as JSON: [{name, type, documentation, samples: [[name,
/// labels, value]]}].
const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "documentation": f.documentation,
                "samples": [[s.name, s.labels, s.value] for s in f.samples]})
print(json.dumps(out))
"#;

fn skip(reason: &str) {
    // The line scripts/test counts as a skipped test (tests/src/lib.rs `skip`).
    let line = format!(
        "SKIPPED: {}: {reason}\n",
        std::thread::current().name().unwrap_or("?")
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn parse(python: &str, text: &str) -> Vec<Value> {
    let mut child = Command::new(python)
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the prometheus_client python runs");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused the text: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stores() -> (MemoryStore, MemoryWorkspaceStorage) {
    let store = MemoryStore::new();
    let rows = [
        ("a1", WEIRD_DEFINITION, "RUNNING", NOW - 20.0, None),
        ("a2", WEIRD_DEFINITION, "DONE", NOW - 200.0, Some(NOW - 5.0)),
        ("b1", "plain", "RUNNING", NOW - 900.0, None),
        ("b2", "plain", "SUSPENDED", NOW - 900.0, None),
    ];
    for (id, definition, status, created, finished) in rows {
        let mut e: Execution = serde_json::from_value(json!({
            "id": id, "definition_id": definition, "status": status,
            "created_at": created, "updated_at": finished.unwrap_or(created), "finished_at": finished,
        }))
        .unwrap();
        store.save(&mut e).unwrap();
    }
    let mut a1 = store.load("a1").unwrap().unwrap();
    let fx = Effects::new()
        .emit(Some("b1"), execstore::executions::Event::new("ev1", "ping"))
        .schedule("t.late", NOW - 7.5);
    store.commit(&mut a1, &fx).unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs_f64(NOW - 60.0).unwrap()));
    let log = MemoryWorkspaceStorage::new(clock.clone());
    let ws = WorkspaceRef::new(WEIRD_TENANT, WEIRD_WORKSPACE);
    let mut tx = log.begin(&ws).unwrap();
    let entries: Vec<Entry> = (1..=4)
        .map(|i| {
            let body = json!({"type": "x"}).as_object().cloned().unwrap_or_default();
            Entry::new(format!("e{i}"), json!({"kind": "source"}), body)
        })
        .collect();
    tx.append(&entries).unwrap();
    tx.commit().unwrap();
    log.save_cursor(&ws, "ex\"porter", 1).unwrap();
    assert!(log.acquire_lease(&ws, "k", "h", Duration::from_secs(30)).unwrap());
    clock.set(Timestamp::from_secs_f64(NOW).unwrap());
    (store, log)
}

/// The value of the sample `name` whose labels are exactly `labels`.
fn value(families: &[Value], name: &str, labels: Value) -> Option<f64> {
    families
        .iter()
        .flat_map(|f| f["samples"].as_array().unwrap())
        .find(|s| s[0] == name && s[1] == labels)
        .map(|s| s[2].as_f64().unwrap())
}

#[test]
fn prometheus_parses_the_text_and_reads_the_stores_figures() {
    let Ok(python) = std::env::var("EXECSTORE_PROMETHEUS_PYTHON") else {
        skip("EXECSTORE_PROMETHEUS_PYTHON is not set (scripts/test installs prometheus_client and sets it)");
        return;
    };
    let (store, log) = stores();
    let stores = Stores {
        executions: Some(&store),
        workspaces: Some(&log),
    };
    let api = MonitorApi::new(Map::new(), None);
    let text = api.prometheus(stores, NOW).unwrap();
    let families = parse(&python, &text);

    // Every family: an execstore_ name, its HELP, a gauge or a counter.
    assert!(families.len() >= 15, "{families:?}");
    for f in &families {
        let name = f["name"].as_str().unwrap();
        assert!(name.starts_with("execstore_"), "{name}");
        assert!(
            !f["documentation"].as_str().unwrap().is_empty(),
            "{name} has no HELP"
        );
        assert!(["gauge", "counter"].contains(&f["type"].as_str().unwrap()), "{f}");
    }
    // The log's head is a counter (the parser names the family without `_total`).
    let log_family = families
        .iter()
        .find(|f| f["name"] == "execstore_workspace_log_envelopes")
        .expect("the log family");
    assert_eq!(log_family["type"], "counter");

    // The store's own counts, by status and by definition and status.
    for (status, n) in store.count_by_status(&ListQuery::new()).unwrap() {
        assert_eq!(
            value(
                &families,
                "execstore_executions",
                json!({"status": status.as_str()})
            ),
            Some(n as f64),
            "{status:?}"
        );
    }
    for definition in [WEIRD_DEFINITION, "plain"] {
        for (status, n) in store
            .count_by_status(&ListQuery::new().definition(definition))
            .unwrap()
        {
            assert_eq!(
                value(
                    &families,
                    "execstore_definition_executions",
                    json!({"definition": definition, "status": status.as_str()})
                ),
                Some(n as f64),
                "{definition:?} {status:?}"
            );
        }
    }
    let started = store
        .list_executions(&ListQuery::new().created_between(Some(NOW - 60.0), None))
        .unwrap()
        .items
        .len();
    assert_eq!(started, 1);
    assert_eq!(
        value(
            &families,
            "execstore_executions_started_last_minute",
            json!({"definition": WEIRD_DEFINITION})
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &families,
            "execstore_executions_finished_last_minute",
            json!({"definition": WEIRD_DEFINITION, "status": Status::Done.as_str()})
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &families,
            "execstore_executions_started_last_minute",
            json!({"definition": "plain"})
        ),
        None
    );
    let outbox = store.pending_outbox(None, 100).unwrap().len() as f64;
    assert_eq!(
        value(&families, "execstore_outbox_depth", json!({})),
        Some(outbox)
    );
    assert_eq!(value(&families, "execstore_timers_due", json!({})), Some(1.0));
    assert_eq!(
        value(&families, "execstore_timer_lag_seconds", json!({})),
        Some(7.5)
    );

    // The workspace's labels come back as stored; its figures are the log's.
    let ws = WorkspaceRef::new(WEIRD_TENANT, WEIRD_WORKSPACE);
    let labels = json!({"tenant": WEIRD_TENANT, "workspace": WEIRD_WORKSPACE});
    let head = log.head_seq(&ws).unwrap() as f64;
    assert_eq!(head, 4.0);
    assert_eq!(
        value(
            &families,
            "execstore_workspace_log_envelopes_total",
            labels.clone()
        ),
        Some(head)
    );
    assert_eq!(
        value(
            &families,
            "execstore_workspace_cursor_lag",
            json!({"tenant": WEIRD_TENANT, "workspace": WEIRD_WORKSPACE, "cursor": "ex\"porter"})
        ),
        Some(3.0)
    );
    assert_eq!(
        value(&families, "execstore_workspace_leases", labels.clone()),
        Some(1.0)
    );
    // Taken at NOW - 60 for 30 s: lapsed by NOW.
    assert_eq!(
        value(&families, "execstore_workspace_lapsed_leases", labels),
        Some(1.0)
    );
}
