//! The monitor over the workspace log (reflexr's tables), end to end: `execstore monitor`
//! run as a process on a free port over a reflexr-only SQLite file and over a file holding
//! both contracts, driven over HTTP. Every workspace endpoint, its bad parameters (400 with
//! the JSON error shape), unknown workspaces (404), `/api/info`'s `holds`, and the pushed
//! log tail (server-sent events fed by `wait_for_append`).

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{start_monitor, Monitor};
use execstore::workspace::{
    run_lease, Entry, EvaluationError, ManualClock, NewRun, Run, StoredRule, StoredRuleStatus, Timestamp,
    WorkspaceRef, WorkspaceStorage, RULE_ARCHIVED, RULE_INSTALLED,
};
use execstore::{Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore, SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use serde_json::{json, Map, Value};

fn start(db: &Path) -> Monitor {
    let db = db.to_str().expect("a UTF-8 temporary path");
    start_monitor(&["monitor", "--db", db], &[])
}

struct Answer {
    status: u16,
    body: Value,
    text: String,
    content_type: String,
}

impl Monitor {
    fn raw(&self, path: &str, headers: &[(&str, &str)]) -> Answer {
        let mut req = self.agent.get(format!("{}{path}", self.url));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let mut response = req.call().expect("the request went through");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let text = response.body_mut().read_to_string().unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            body,
            text,
            content_type,
        }
    }

    fn get(&self, path: &str) -> Answer {
        let a = self.raw(path, &[]);
        assert!(!a.body.is_null(), "GET {path}: not JSON: {}", a.text);
        a
    }

    fn ok(&self, path: &str) -> Value {
        let a = self.get(path);
        assert_eq!(a.status, 200, "GET {path}: {}", a.body);
        a.body
    }
}

fn assert_error(a: &Answer, status: u16, what: &str) {
    assert_eq!(a.status, status, "{what}: {}", a.body);
    let code = a.body["error"]["code"].as_str().unwrap_or("");
    assert!(!code.is_empty(), "{what}: no code in {}", a.body);
    let message = a.body["error"]["message"].as_str().unwrap_or("");
    assert!(message.len() > 5, "{what}: no message in {}", a.body);
}

const T0: i64 = 1_767_268_800_000_000; // 2026-01-01T12:00:00Z

fn at(secs: i64) -> Timestamp {
    Timestamp::from_micros(T0 + secs * 1_000_000).unwrap()
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn run(id: &str, rule: &str, scope: &str, fired: i64, created: i64) -> Run {
    Run::pending(NewRun {
        id: id.into(),
        rule: rule.into(),
        scope_key: scope.into(),
        scope: obj(json!({ "service": scope })),
        fired_seq: fired,
        matched: vec![fired],
        correlation_id: "err-1".into(),
        depth: 0,
        now: at(created),
    })
    .unwrap()
}

const SCRIPT: &str = "<script>alert('x')</script>";

/// A reflexr workspace log in `db`: two tenants, a causal chain, runs of an ordered and
/// blocking stored rule, a dead letter, a held and a lapsed lease, a cursor behind the head,
/// and a stored rule in two versions and an archive.
fn write_workspaces(db: &Path) -> Arc<ManualClock> {
    let clock = Arc::new(ManualClock::new(at(0)));
    let s = SqliteWorkspaceStorage::open(db, SqliteWorkspaceOptions::new().clock(clock.clone())).unwrap();
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = s.begin(&ws).unwrap();
    let mut paged = Entry::new(
        "page-1",
        json!({"kind": "agent", "rule": "page", "run_id": "r1", "name": "pager"}),
        obj(json!({"type": "oncall:paged", "service": "auth", "note": SCRIPT})),
    );
    paged.causation = Some(json!({"firing_id": "f1", "run_id": "r1", "depth": 1}));
    paged.correlation_id = Some("err-1".into());
    tx.append(&[
        Entry::new(
            "err-1",
            json!({"kind": "source", "name": "prometheus"}),
            obj(json!({"type": "oncall:service_error", "service": "auth", "severity": 8})),
        ),
        paged,
        Entry::new(
            "hb-1",
            json!({"kind": "source", "name": "hb"}),
            obj(json!({"type": "oncall:heartbeat", "service": "api"})),
        ),
    ])
    .unwrap();
    tx.save_runs(&[
        run("r1", "page", "auth", 1, 1)
            .with(obj(
                json!({"status": "dead", "attempts": 5, "error": "pager down"}),
            ))
            .unwrap(),
        run("r2", "page", "auth", 2, 2),
        run("r3", "notify", "api", 3, 3)
            .with(obj(json!({"status": "running", "attempts": 1})))
            .unwrap(),
    ])
    .unwrap();
    tx.dead_letter(&[EvaluationError::new("page", 1, "KeyError: 'team'")])
        .unwrap();
    let rule = |d: &str| {
        obj(
            json!({"name": "page", "description": d, "ordering": "scope", "on_dead_letter": "block", "enabled": true}),
        )
    };
    for version in 1..=2 {
        let provenance = json!({"by": "<img src=x onerror=alert(1)>", "ticket": format!("T-{version}")});
        tx.save_stored_rule(&StoredRule {
            rule: rule(&format!("v{version}")),
            version,
            status: StoredRuleStatus::Active,
            provenance: obj(provenance.clone()),
        })
        .unwrap();
        tx.append(&[Entry::new(
            format!("install-page-{version}"),
            json!({"kind": "user", "id": "op", "name": "Operator"}),
            obj(json!({"type": RULE_INSTALLED, "rule": "page", "version": version,
                       "spec": rule(&format!("v{version}")), "provenance": provenance})),
        )])
        .unwrap();
    }
    tx.commit().unwrap();
    let mut tx = s.begin(&WorkspaceRef::new("globex", "staging")).unwrap();
    tx.append(&[Entry::new(
        "g-1",
        json!({"kind": "source"}),
        obj(json!({"type": "deploy:done"})),
    )])
    .unwrap();
    tx.save_stored_rule(&StoredRule {
        rule: obj(json!({"name": "old"})),
        version: 1,
        status: StoredRuleStatus::Active,
        provenance: obj(json!({})),
    })
    .unwrap();
    tx.save_stored_rule(&StoredRule {
        rule: obj(json!({"name": "old"})),
        version: 2,
        status: StoredRuleStatus::Archived,
        provenance: obj(json!({"by": "op"})),
    })
    .unwrap();
    tx.append(&[Entry::new(
        "archive-old",
        json!({"kind": "user"}),
        obj(json!({"type": RULE_ARCHIVED, "rule": "old", "version": 2, "reason": "retired", "cancelled": 0})),
    )])
    .unwrap();
    tx.commit().unwrap();
    s.save_cursor(&ws, "exporter", 2).unwrap();
    // Real time from here on: the monitor judges leases by the wall clock.
    clock.set(Timestamp::from_secs_f64(now_secs()).unwrap());
    assert!(s
        .acquire_lease(&ws, &run_lease("r3"), "worker-1", Duration::from_secs(3600))
        .unwrap());
    assert!(s
        .acquire_lease(&ws, "sweeper", "worker-2", Duration::from_millis(1))
        .unwrap());
    clock
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn seqs(items: &Value) -> Vec<i64> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect()
}

#[test]
fn a_reflexr_only_file_is_served_with_every_workspace_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("reflexr.db");
    write_workspaces(&db);
    let m = start(&db);
    let info = m.ok("api/info");
    assert_eq!(info["holds"], json!({"executions": false, "workspaces": true}));
    assert_error(&m.get("api/executions"), 404, "executions of a reflexr-only file");
    assert_eq!(m.get("api/changes").status, 200);

    let list = m.ok("api/workspaces");
    let names: Vec<(String, String)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["tenant_id"].as_str().unwrap().to_owned(),
                w["workspace_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("acme".into(), "prod".into()),
            ("globex".into(), "staging".into())
        ]
    );
    assert_eq!(list["items"][0]["head_seq"], 5);
    assert_eq!(
        list["items"][0]["cursors"],
        json!([{"name": "exporter", "seq": 2, "lag": 3}])
    );

    let w = "api/workspaces/acme/prod";
    assert_eq!(m.ok(w)["head_seq"], 5);
    let log = m.ok(&format!("{w}/log"));
    assert_eq!(seqs(&log["items"]), [1, 2, 3, 4, 5]);
    assert_eq!(log["items"][1]["event"]["note"], SCRIPT, "stored as given");
    assert_eq!(seqs(&m.ok(&format!("{w}/log?after=1&before=4"))["items"]), [2, 3]);
    assert_eq!(seqs(&m.ok(&format!("{w}/log?last=2"))["items"]), [4, 5]);
    assert_eq!(
        seqs(&m.ok(&format!("{w}/log?type=oncall:heartbeat,oncall:paged"))["items"]),
        [2, 3]
    );
    assert_eq!(m.ok(&format!("{w}/log?limit=2"))["next_after"], 2);

    let detail = m.ok(&format!("{w}/envelopes/page-1"));
    assert_eq!(detail["causes"], json!([1]));
    assert_eq!(detail["caused"], json!([]));
    assert_eq!(seqs(&detail["chain"]), [1, 2]);
    assert_eq!(m.ok(&format!("{w}/envelopes/err-1"))["caused"], json!([2]));

    let runs = m.ok(&format!("{w}/runs"));
    let by_id = |id: &str| {
        runs["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["run"]["id"] == id)
            .unwrap_or_else(|| panic!("no run {id} in {runs}"))
            .clone()
    };
    assert_eq!(by_id("r2")["held_by"], json!({"id": "r1", "status": "dead"}));
    assert_eq!(by_id("r2")["due"], false);
    assert_eq!(by_id("r2")["blocking"], true);
    assert_eq!(by_id("r3")["lease"]["holder"], "worker-1");
    assert_eq!(by_id("r3")["due"], false);
    assert_eq!(
        m.ok(&format!("{w}/runs?status=dead&rule=page&scope=auth"))["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let page = m.ok(&format!("{w}/runs?limit=2"));
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let rest = m.ok(&format!("{w}/runs?limit=2&cursor={cursor}"));
    assert_eq!(rest["items"].as_array().unwrap().len(), 1);

    assert_eq!(
        m.ok(&format!("{w}/dead-letters"))["items"],
        json!([{"rule": "page", "seq": 1, "error": "KeyError: 'team'"}])
    );
    let leases = m.ok(&format!("{w}/leases"))["items"].clone();
    assert_eq!(leases[0]["key"], "run:r3");
    assert_eq!(leases[0]["lapsed"], false);
    assert_eq!(leases[1]["key"], "sweeper");
    assert_eq!(leases[1]["lapsed"], true);
    assert_eq!(
        m.ok(&format!("{w}/cursors"))["items"],
        json!([{"name": "exporter", "seq": 2, "lag": 3}])
    );
    let rules = m.ok(&format!("{w}/rules"));
    assert_eq!(rules["items"][0]["version"], 2);
    assert_eq!(
        rules["items"][0]["provenance"]["by"],
        "<img src=x onerror=alert(1)>"
    );
    let history = m.ok(&format!("{w}/rules/page/history"));
    assert_eq!(seqs(&history["items"]), [4, 5]);
    let archived = m.ok("api/workspaces/globex/staging/rules/old/history");
    assert_eq!(archived["items"][0]["event"]["type"], RULE_ARCHIVED);
    assert_eq!(m.ok("api/workspaces/globex/staging/rules")["items"], json!([]));

    let due = m.ok("api/due-runs?now=2026-01-01T12:01:00Z");
    assert_eq!(due["policy"]["blocking"], json!(["page"]));
    assert_eq!(
        due["items"],
        json!([]),
        "r2 is held by r1, r3 runs under its lease"
    );
    let unblocked = m.ok("api/due-runs?now=now&limit=5&disabled=notify");
    assert_eq!(unblocked["items"], json!([]));
}

#[test]
fn workspace_bad_parameters_are_400s_and_unknowns_404s() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("reflexr.db");
    write_workspaces(&db);
    let m = start(&db);
    let w = "api/workspaces/acme/prod";
    for path in [
        "api/workspaces?limit=5".to_owned(),
        format!("{w}/log?limit=0"),
        format!("{w}/log?last=x"),
        format!("{w}/log?limit=1&last=1"),
        format!("{w}/log?after=-3"),
        format!("{w}/log?before=x"),
        format!("{w}/log?type=a&type=b"),
        format!("{w}/log?colour=red"),
        format!("{w}/runs?status=asleep"),
        format!("{w}/runs?limit=100000"),
        format!("{w}/runs?cursor=nope"),
        format!("{w}/dead-letters?since=1"),
        format!("{w}/leases?x=1"),
        format!("{w}/cursors?x=1"),
        format!("{w}/rules?x=1"),
        "api/due-runs?now=tomorrow".to_owned(),
        "api/due-runs?limit=0".to_owned(),
        "api/due-runs?now=1&now=2".to_owned(),
        format!("{w}/stream?after=x"),
        format!("{w}/stream?since=1"),
    ] {
        assert_error(&m.get(&path), 400, &path);
    }
    for path in [
        "api/workspaces/acme/nope",
        "api/workspaces/acme/nope/log",
        "api/workspaces/acme/nope/stream",
        "api/workspaces/acme/prod/envelopes/nope",
        "api/workspaces/acme/prod/rules/nope/history",
        "api/workspaces/acme/prod/whatever",
        "api/workspaces/acme",
    ] {
        assert_error(&m.get(path), 404, path);
    }
}

#[test]
fn a_file_with_both_contracts_serves_both() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("both.db");
    {
        let store = SqliteStore::open(&db, SqliteOptions::new()).unwrap();
        let mut exe = Execution::new("order-1", "orders");
        store.save(&mut exe).unwrap();
    }
    write_workspaces(&db);
    let m = start(&db);
    assert_eq!(
        m.ok("api/info")["holds"],
        json!({"executions": true, "workspaces": true})
    );
    assert_eq!(m.ok("api/executions")["items"][0]["id"], "order-1");
    assert_eq!(m.ok("api/workspaces")["items"].as_array().unwrap().len(), 2);
    // A harel-style file with executions only says it holds no workspace log.
    let only = dir.path().join("only.db");
    {
        let store = SqliteStore::open(&only, SqliteOptions::new()).unwrap();
        let mut exe = Execution::new("x", "d");
        store.save(&mut exe).unwrap();
    }
    let m2 = start(&only);
    assert_eq!(
        m2.ok("api/info")["holds"],
        json!({"executions": true, "workspaces": false})
    );
    assert_error(
        &m2.get("api/workspaces"),
        404,
        "workspaces of an execution-only file",
    );
}

#[test]
fn the_stream_pushes_new_envelopes_as_server_sent_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("reflexr.db");
    write_workspaces(&db);
    let m = start(&db);
    // What is there after the given seq comes at once.
    let a = m.raw("api/workspaces/acme/prod/stream?after=3", &[]);
    assert_eq!(a.status, 200, "{}", a.text);
    assert!(
        a.content_type.starts_with("text/event-stream"),
        "{}",
        a.content_type
    );
    assert!(a.text.starts_with("retry: "), "{}", a.text);
    assert!(a.text.contains("id: 4\nevent: envelope\ndata: {"), "{}", a.text);
    assert!(a.text.contains("id: 5\n"), "{}", a.text);
    // A reconnecting EventSource's Last-Event-ID wins over the URL's after.
    let b = m.raw(
        "api/workspaces/acme/prod/stream?after=0",
        &[("Last-Event-ID", "4")],
    );
    assert!(
        !b.text.contains("id: 4\n") && b.text.contains("id: 5\n"),
        "{}",
        b.text
    );
    // At the head it waits for the next commit (another process's: this test's).
    let writer = std::thread::spawn({
        let db = db.clone();
        move || {
            std::thread::sleep(Duration::from_millis(700));
            let s = SqliteWorkspaceStorage::open(&db, SqliteWorkspaceOptions::new()).unwrap();
            let mut tx = s.begin(&WorkspaceRef::new("acme", "prod")).unwrap();
            tx.append(&[Entry::new(
                "late-1",
                json!({"kind": "source"}),
                obj(json!({"type": "oncall:heartbeat"})),
            )])
            .unwrap();
            tx.commit().unwrap();
        }
    });
    let started = Instant::now();
    let c = m.raw("api/workspaces/acme/prod/stream?after=5", &[]);
    writer.join().unwrap();
    assert!(c.text.contains("id: 6\nevent: envelope\n"), "{}", c.text);
    assert!(c.text.contains("\"late-1\""), "{}", c.text);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(600) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
}
