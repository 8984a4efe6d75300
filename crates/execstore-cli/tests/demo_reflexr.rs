//! The demo's workspace story read back by reflexr 0.1.1 itself: `execstore demo` writes a
//! file, and reflexr's own `SqlStorage` (tests/reflexr/read_demo.py, on a copy) reads the
//! same values execstore reads, byte for byte (envelopes, runs, dead letters, progress,
//! schedules, stored rules and their history, cursors, which leases are held and which
//! lapsed, the due runs under the stored rules' policy), and reflexr's `migrate` finds
//! nothing to do. On reflexr's reading, the story is what the demo promises: two tenants,
//! four workspaces, each log gap-free, runs in every status, dead letters, leases held and
//! lapsed, cursors behind the head, a stored rule with three versions and an archived one,
//! ordered and blocking rules.
//!
//! reflexr's Python comes from `EXECSTORE_REFLEXR_PYTHON` (scripts/test sets it); without one
//! the test prints `SKIPPED: ...` and passes, unless `EXECSTORE_REQUIRE_REFLEXR=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use execstore::kit::pyjson;
use execstore::workspace::{
    RunPolicy, RunQuery, RunStatus, StoredRule, SystemClock, Timestamp, WorkspaceStorage, RULE_ARCHIVED,
    RULE_INSTALLED,
};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use serde_json::{json, Map, Value};

/// Reports that the calling test is skipped, and why: one line `SKIPPED: <test>: <reason>`
/// (scripts/test counts it).
fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// reflexr's Python, or `None` (skipped) when none is named and none is required.
fn reflexr_python() -> Option<PathBuf> {
    let required = std::env::var("EXECSTORE_REQUIRE_REFLEXR").is_ok_and(|v| v == "1");
    match std::env::var_os("EXECSTORE_REFLEXR_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            assert!(
                !required,
                "EXECSTORE_REQUIRE_REFLEXR=1 but EXECSTORE_REFLEXR_PYTHON is not set"
            );
            skip("EXECSTORE_REFLEXR_PYTHON not set (scripts/test sets it)");
            None
        }
    }
}

/// A stored rule as reflexr stores its model.
fn stored_rule_json(r: &StoredRule) -> String {
    let mut m = Map::new();
    m.insert("rule".into(), Value::Object(r.rule.clone()));
    m.insert("version".into(), r.version.into());
    m.insert("status".into(), r.status.as_str().into());
    m.insert("provenance".into(), Value::Object(r.provenance.clone()));
    pyjson::dumps(&Value::Object(m))
}

/// What execstore reads of a workspace, in read_demo.py's shape; plus the spec's names.
struct Read {
    by_workspace: Map<String, Value>,
    rule_names: Map<String, Value>,
    cursor_names: Map<String, Value>,
    lease_keys: Map<String, Value>,
}

fn read_with_execstore(storage: &dyn WorkspaceStorage, now: Timestamp) -> Read {
    let mut read = Read {
        by_workspace: Map::new(),
        rule_names: Map::new(),
        cursor_names: Map::new(),
        lease_keys: Map::new(),
    };
    for ws in storage.workspaces().unwrap() {
        let key = format!("{}/{}", ws.tenant_id, ws.workspace_id);
        let envelopes = storage.read(&ws, &Default::default()).unwrap();
        // Every rule the log installed or archived: reflexr lists only the active ones.
        let names: BTreeSet<String> = envelopes
            .iter()
            .filter(|e| [RULE_INSTALLED, RULE_ARCHIVED].contains(&e.event_type()))
            .filter_map(|e| e.event.get("rule").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let history: Map<String, Value> = names
            .iter()
            .map(|n| {
                let h: Vec<String> = storage
                    .rule_history(&ws, n)
                    .unwrap()
                    .iter()
                    .map(|e| e.to_json())
                    .collect();
                (n.clone(), json!(h))
            })
            .collect();
        let cursors = storage.cursors(&ws).unwrap();
        let leases = storage.leases(&ws).unwrap();
        read.rule_names.insert(key.clone(), json!(names));
        read.cursor_names.insert(
            key.clone(),
            json!(cursors.iter().map(|(n, _)| n).collect::<Vec<_>>()),
        );
        read.lease_keys.insert(
            key.clone(),
            json!(leases.iter().map(|l| &l.key).collect::<Vec<_>>()),
        );
        let d = json!({
            "head_seq": storage.head_seq(&ws).unwrap(),
            "envelopes": envelopes.iter().map(|e| e.to_json()).collect::<Vec<_>>(),
            "runs": storage.runs(&ws, &RunQuery::default()).unwrap().iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            "dead_letters": storage.dead_letters(&ws, None).unwrap().iter().map(|l| l.to_json()).collect::<Vec<_>>(),
            "progress": storage.progress(&ws).unwrap().iter().map(|(r, p)| json!([r, p.to_json()])).collect::<Vec<_>>(),
            "schedules": storage.schedules(&ws).unwrap().iter().map(|(n, at)| json!([n, at.micros()])).collect::<Vec<_>>(),
            "stored_rules": storage.stored_rules(&ws).unwrap().iter().map(stored_rule_json).collect::<Vec<_>>(),
            "history": history,
            "cursors": cursors.iter().map(|(n, s)| (n.clone(), json!(s))).collect::<Map<_, _>>(),
            // Another holder gets a lease exactly when it has lapsed.
            "lease_taken_by_another": leases.iter().map(|l| (l.key.clone(), json!(l.expires_at <= now))).collect::<Map<_, _>>(),
        });
        read.by_workspace.insert(key, d);
    }
    read
}

/// The policy the stored rules declare (as the monitor judges runs by).
fn stored_policy(storage: &dyn WorkspaceStorage) -> RunPolicy {
    let mut policy = RunPolicy::new();
    for ws in storage.workspaces().unwrap() {
        for r in storage.stored_rules(&ws).unwrap() {
            let name = r.name().to_owned();
            if r.rule.get("on_dead_letter").and_then(Value::as_str) == Some("block") {
                policy.blocking.insert(name.clone());
                policy.ordered.insert(name.clone());
            }
            if r.rule.get("ordering").and_then(Value::as_str) == Some("scope") {
                policy.ordered.insert(name);
            }
        }
    }
    policy
}

fn run_reflexr(python: &Path, target: &Path, spec: &Value, dir: &Path) -> Value {
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reflexr");
    let spec_path = dir.join("spec.json");
    let out_path = dir.join("out.json");
    std::fs::write(&spec_path, spec.to_string()).unwrap();
    let out = Command::new(python)
        .current_dir(&scripts)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(scripts.join("read_demo.py"))
        .arg(target)
        .arg(&out_path)
        .arg(&spec_path)
        .output()
        .expect("run read_demo.py");
    assert!(
        out.status.success(),
        "read_demo.py failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out_path).unwrap()).unwrap()
}

#[test]
fn reflexr_reads_the_demo_workspace_story() {
    let Some(python) = reflexr_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let demo = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(["demo", "--no-serve", "--executions", "30", "--seed", "11", "--db"])
        .arg(&db)
        .env_remove("EXECSTORE_DB")
        .output()
        .unwrap();
    assert!(
        demo.status.success(),
        "demo: {}",
        String::from_utf8_lossy(&demo.stderr)
    );
    // reflexr works on a copy: the lease probes take the lapsed leases.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&db, &copy).unwrap();

    let storage = SqliteWorkspaceStorage::open(
        &db,
        SqliteWorkspaceOptions::new()
            .read_only(true)
            .clock(Arc::new(SystemClock)),
    )
    .unwrap();
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let now = Timestamp::from_micros(since_epoch.as_micros() as i64).unwrap();
    let ours = read_with_execstore(&storage, now);
    let policy = stored_policy(&storage);
    let due: Vec<Value> = storage
        .due_runs(now, 10_000, &policy)
        .unwrap()
        .iter()
        .map(|(w, r)| json!([w.tenant_id, w.workspace_id, r.id()]))
        .collect();
    let spec = json!({
        "now": now.micros(),
        "rule_names": ours.rule_names,
        "cursor_names": ours.cursor_names,
        "lease_keys": ours.lease_keys,
        "policy": {"disabled": policy.disabled, "ordered": policy.ordered, "blocking": policy.blocking},
    });
    let theirs = run_reflexr(&python, &copy, &spec, dir.path());

    // reflexr's migrate finds its head recorded and changes nothing.
    let m = &theirs["migrate"];
    assert_eq!(
        m["schema_before"], m["schema_after"],
        "reflexr's migrate changed the demo's schema"
    );
    assert_eq!(m["version"].as_array().map(Vec::len), Some(1));

    // The same values, byte for byte, through both.
    let listed: Vec<Value> = storage
        .workspaces()
        .unwrap()
        .iter()
        .map(|w| json!([w.tenant_id, w.workspace_id]))
        .collect();
    assert_eq!(theirs["workspaces"], json!(listed));
    for (key, mine) in &ours.by_workspace {
        let got = &theirs["by_workspace"][key];
        for field in mine.as_object().unwrap().keys() {
            assert_eq!(
                got[field], mine[field],
                "{key}: {field} differs between reflexr and execstore"
            );
        }
    }
    assert_eq!(
        theirs["due"],
        json!(due),
        "due runs under the stored rules' policy"
    );

    // The story, as reflexr reads it.
    let by = theirs["by_workspace"].as_object().unwrap();
    let tenants: BTreeSet<&str> = by.keys().map(|k| k.split('/').next().unwrap()).collect();
    assert_eq!(
        (tenants.len(), by.len()),
        (2, 4),
        "two tenants, four workspaces: {:?}",
        by.keys()
    );
    let parse = |text: &Value| -> Value { serde_json::from_str(text.as_str().unwrap()).unwrap() };
    let mut statuses = BTreeSet::new();
    let (mut dead_letters, mut held, mut lapsed, mut behind) = (0, 0, 0, 0);
    let mut versions: BTreeMap<String, usize> = BTreeMap::new();
    let mut archived = 0;
    let mut ordered_and_blocking = false;
    for (key, d) in by {
        let head = d["head_seq"].as_i64().unwrap();
        let seqs: Vec<i64> = d["envelopes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| parse(e)["seq"].as_i64().unwrap())
            .collect();
        assert_eq!(
            seqs,
            (1..=head).collect::<Vec<_>>(),
            "{key}: the log is gap-free up to its head"
        );
        for r in d["runs"].as_array().unwrap() {
            statuses.insert(parse(r)["status"].as_str().unwrap().to_owned());
        }
        dead_letters += d["dead_letters"].as_array().unwrap().len();
        for taken in d["lease_taken_by_another"].as_object().unwrap().values() {
            if taken.as_bool().unwrap() {
                lapsed += 1
            } else {
                held += 1
            }
        }
        behind += d["cursors"]
            .as_object()
            .unwrap()
            .values()
            .filter(|s| s.as_i64().unwrap() < head)
            .count();
        let active: BTreeSet<String> = d["stored_rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let r = parse(r);
                if r["rule"]["on_dead_letter"] == "block" && r["rule"]["ordering"] == "scope" {
                    ordered_and_blocking = true;
                }
                r["rule"]["name"].as_str().unwrap().to_owned()
            })
            .collect();
        for (name, history) in d["history"].as_object().unwrap() {
            let facts: Vec<Value> = history.as_array().unwrap().iter().map(parse).collect();
            let installs = facts
                .iter()
                .filter(|e| e["event"]["type"] == RULE_INSTALLED)
                .count();
            let entry = versions.entry(name.clone()).or_default();
            *entry = (*entry).max(installs);
            if facts.last().is_some_and(|e| e["event"]["type"] == RULE_ARCHIVED) {
                assert!(!active.contains(name), "{key}: the archived {name} is not active");
                archived += 1;
            }
        }
    }
    for status in RunStatus::ALL {
        assert!(
            statuses.contains(status.as_str()),
            "no {} run among {statuses:?}",
            status.as_str()
        );
    }
    assert!(dead_letters > 0, "dead letters");
    assert!(
        held > 0 && lapsed > 0,
        "leases held ({held}) and lapsed ({lapsed})"
    );
    assert!(behind > 0, "cursors behind the head");
    assert!(
        versions.values().any(|&n| n >= 3),
        "a stored rule with three versions: {versions:?}"
    );
    assert!(archived > 0, "an archived stored rule");
    assert!(ordered_and_blocking, "an ordered, blocking stored rule");
    assert!(!due.is_empty(), "some runs are due now");
}
