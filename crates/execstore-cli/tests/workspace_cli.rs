//! The workspace log's read commands end to end: a file written through
//! `SqliteWorkspaceStorage`, read back by the `execstore` binary as tables and as JSON, and
//! left byte-identical; files holding only executions or only workspaces say so plainly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use execstore::executions::JsonObject;
use execstore::workspace::{
    Entry, EvaluationError, ManualClock, NewRun, RuleProgress, Run, StoredRule, StoredRuleStatus, Timestamp,
    WorkspaceRef, WorkspaceStorage,
};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use serde_json::{json, Value};

fn execstore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(args)
        .env_remove("EXECSTORE_DB")
        .output()
        .expect("run execstore")
}

fn ok(args: &[&str]) -> String {
    let out = execstore(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn fails(args: &[&str], code: i32) -> String {
    let out = execstore(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).expect("utf-8")
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

fn t(s: &str) -> Timestamp {
    Timestamp::parse_json_text(s).expect("time")
}

/// A file with two workspaces: a log with HTML and unicode in it, runs in three statuses, a
/// lease, cursors, progress, a schedule, a dead letter and a stored rule with two versions.
fn write_file(dir: &Path) -> PathBuf {
    let db = dir.join("ws.db");
    let clock = ManualClock::new(t("2026-01-01T12:00:00Z"));
    let s = SqliteWorkspaceStorage::open(&db, SqliteWorkspaceOptions::new().clock(Arc::new(clock.clone())))
        .unwrap();
    let w = WorkspaceRef::new("acme", "prod");
    let mut tx = s.begin(&w).unwrap();
    let mut entries = Vec::new();
    for i in 1..=5 {
        let kind = if i % 2 == 0 {
            "oncall:deploy"
        } else {
            "oncall:service_error"
        };
        entries.push(Entry::new(
            format!("e{i}"),
            json!({"kind": "source", "name": "mon"}),
            obj(json!({"type": kind, "service": "<b>auth</b> ✓", "n": i})),
        ));
    }
    tx.append(&entries).unwrap();
    let run = |id: &str, status: &str| {
        Run::pending(NewRun {
            id: id.into(),
            rule: "oncall:page".into(),
            scope_key: "svc=auth".into(),
            scope: obj(json!({"svc": "auth"})),
            fired_seq: 1,
            matched: vec![1],
            correlation_id: "e1".into(),
            depth: 0,
            now: t("2026-01-01T12:00:00Z"),
        })
        .unwrap()
        .with(obj(json!({"status": status})))
        .unwrap()
    };
    tx.save_runs(&[run("r1", "succeeded"), run("r2", "pending"), run("r3", "dead")])
        .unwrap();
    tx.save_progress(
        "oncall:page",
        &RuleProgress::from_doc(obj(json!({"cursor": 5, "generation": 0}))),
    )
    .unwrap();
    tx.dead_letter(&[EvaluationError::new("oncall:page", 3, "boom <script>")])
        .unwrap();
    tx.save_schedule("hourly", t("2026-01-01T13:00:00+02:00"))
        .unwrap();
    for version in 1..=2 {
        tx.save_stored_rule(&StoredRule {
            rule: obj(json!({"name": "chat:greet", "description": format!("v{version}")})),
            version,
            status: StoredRuleStatus::Active,
            provenance: obj(json!({"by": "op"})),
        })
        .unwrap();
        tx.append(&[Entry::new(
            format!("install-{version}"),
            json!({"kind": "system", "name": "reflexr"}),
            obj(json!({"type": "reflexr:rule_installed", "rule": "chat:greet", "version": version, "spec": {}, "provenance": {"by": "op"}})),
        )])
        .unwrap();
    }
    tx.commit().unwrap();
    let other = WorkspaceRef::new("globex", "main");
    let mut tx = s.begin(&other).unwrap();
    tx.append(&[Entry::new(
        "g1",
        json!({"kind": "source", "name": "x"}),
        obj(json!({"type": "oncall:deploy"})),
    )])
    .unwrap();
    tx.commit().unwrap();
    assert!(s
        .acquire_lease(&w, "run:r2", "exec-1", Duration::from_secs(60))
        .unwrap());
    s.save_cursor(&w, "mirror", 4).unwrap();
    db
}

fn snapshot(db: &Path) -> Vec<(String, Vec<u8>)> {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let p = PathBuf::from(format!("{}{suffix}", db.display()));
            std::fs::read(&p).ok().map(|b| (suffix.to_string(), b))
        })
        .collect()
}

#[test]
fn every_workspace_command_reads_the_file_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = write_file(dir.path());
    let before = snapshot(&db);
    let d = db.to_str().unwrap();
    let ws = ["--tenant", "acme", "--workspace", "prod"];
    fn cat<'a>(parts: &[&[&'a str]]) -> Vec<&'a str> {
        parts.concat()
    }
    let with = |cmd: &[&'static str]| cat(&[&["--db", d], cmd, &ws]);

    let listed = ok(&["--db", d, "workspaces"]);
    assert!(listed.contains("acme") && listed.contains("globex"), "{listed}");
    assert!(
        listed.contains("mirror=4 (-3)"),
        "the cursor's lag behind head 7: {listed}"
    );
    let table = ok(&with(&["log"]));
    assert_eq!(table.lines().count(), 1 + 7, "header and the whole log: {table}");
    assert!(
        table.contains("<b>auth</b> ✓"),
        "stored text shown as it is: {table}"
    );

    // JSON: each element is the stored envelope text, byte for byte.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let stored: Vec<String> = conn
        .prepare("SELECT envelope FROM reflexr_events WHERE tenant_id = 'acme' ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    drop(conn);
    let json_log = ok(&with(&["--json", "log"]));
    let parsed: Vec<Value> = serde_json::from_str(&json_log).unwrap();
    assert_eq!(parsed.len(), 7);
    for text in &stored {
        assert!(
            json_log.contains(text.as_str()),
            "{text} not verbatim in {json_log}"
        );
    }
    let seqs = |args: &[&str]| -> Vec<i64> {
        let v: Vec<Value> = serde_json::from_str(&ok(&cat(&[&with(&["--json", "log"]), args]))).unwrap();
        v.iter().map(|e| e["seq"].as_i64().unwrap()).collect()
    };
    assert_eq!(seqs(&["--last", "2"]), [6, 7]);
    assert_eq!(seqs(&["--after", "2", "--limit", "2"]), [3, 4]);
    assert_eq!(seqs(&["--before", "3"]), [1, 2]);
    assert_eq!(seqs(&["--type", "oncall:deploy"]), [2, 4]);
    assert_eq!(
        seqs(&[
            "--type",
            "oncall:deploy",
            "--type",
            "reflexr:rule_installed",
            "--last",
            "2"
        ]),
        [6, 7]
    );

    let runs: Vec<Value> = serde_json::from_str(&ok(&with(&["--json", "runs"]))).unwrap();
    assert_eq!(
        runs.iter().map(|r| r["id"].as_str().unwrap()).collect::<Vec<_>>(),
        ["r3", "r2", "r1"]
    );
    let pending: Vec<Value> =
        serde_json::from_str(&ok(&with(&["--json", "runs", "--status", "pending"]))).unwrap();
    assert_eq!(pending.len(), 1);
    let due_at = |now: &str, more: &[&str]| -> Vec<String> {
        let v: Vec<Value> = serde_json::from_str(&ok(&cat(&[
            &["--db", d, "--json", "due-runs", "--now", now],
            more,
        ])))
        .unwrap();
        v.iter()
            .map(|e| {
                format!(
                    "{}/{}:{}",
                    e["tenant_id"].as_str().unwrap(),
                    e["workspace_id"].as_str().unwrap(),
                    e["run"]["id"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert!(due_at("2026-01-01T11:59:59Z", &[]).is_empty(), "not due yet");
    assert_eq!(due_at("2026-01-01T12:00:00Z", &[]), ["acme/prod:r2"]);
    assert_eq!(
        due_at(
            "2026-01-01T14:00:00+02:00",
            &["--ordered", "oncall:page", "--blocking", "oncall:page"]
        ),
        ["acme/prod:r2"]
    );
    assert!(
        due_at("2026-01-01T12:00:00Z", &["--disabled", "oncall:page"]).is_empty(),
        "a disabled rule's runs are left out"
    );

    let letters = ok(&with(&["dead-letters"]));
    assert!(letters.contains("boom <script>"), "{letters}");
    let leases: Vec<Value> = serde_json::from_str(&ok(&with(&["--json", "leases"]))).unwrap();
    assert_eq!(leases[0]["key"], "run:r2");
    assert_eq!(leases[0]["holder"], "exec-1");
    let cursors: Vec<Value> = serde_json::from_str(&ok(&with(&["--json", "cursors"]))).unwrap();
    assert_eq!(cursors, vec![json!({"name": "mirror", "seq": 4, "lag": 3})]);
    let progress = ok(&with(&["progress"]));
    assert!(
        progress.contains("oncall:page") && progress.contains('5'),
        "{progress}"
    );
    let schedules: Vec<Value> = serde_json::from_str(&ok(&with(&["--json", "schedules"]))).unwrap();
    assert_eq!(
        schedules,
        vec![json!({"name": "hourly", "at": "2026-01-01T11:00:00Z"})]
    );
    let rules: Vec<Value> = serde_json::from_str(&ok(&with(&["--json", "rules"]))).unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        (
            rules[0]["version"].as_i64(),
            rules[0]["rule"]["description"].as_str()
        ),
        (Some(2), Some("v2"))
    );
    let history: Vec<Value> =
        serde_json::from_str(&ok(&with(&["--json", "rules", "--history", "chat:greet"]))).unwrap();
    assert_eq!(
        history
            .iter()
            .map(|e| e["id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["install-1", "install-2"]
    );

    // A workspace nobody wrote reads empty; bad arguments are usage errors (2) or typed (1).
    let none = ok(&["--db", d, "--json", "log", "--tenant", "x", "--workspace", "y"]);
    assert_eq!(none.trim(), "[]");
    fails(&with(&["log", "--limit", "1", "--last", "1"]), 2);
    fails(&with(&["log", "--after", "-1"]), 2);
    fails(&["--db", d, "due-runs", "--now", "yesterday"], 2);
    fails(&with(&["runs", "--status", "sleeping"]), 2);
    let err = fails(&["--db", d, "log", "--tenant", "", "--workspace", "w"], 1);
    assert!(err.contains("tenant_id"), "{err}");

    assert_eq!(
        snapshot(&db),
        before,
        "read commands leave the file byte-identical"
    );
}

#[test]
fn a_file_says_plainly_what_it_does_not_hold() {
    let dir = tempfile::tempdir().unwrap();
    let ws_only = write_file(dir.path());
    let err = fails(&["--db", ws_only.to_str().unwrap(), "list"], 1);
    assert!(
        err.contains("holds no executions") && err.contains("execstore workspaces"),
        "{err}"
    );

    let harel = dir.path().join("harel.db");
    let store =
        execstore_sqlite::SqliteStore::open(&harel, execstore_sqlite::SqliteOptions::new().prefix("harel"))
            .unwrap();
    drop(store);
    let err = fails(&["--db", harel.to_str().unwrap(), "workspaces"], 1);
    assert!(err.contains("holds no workspace log"), "{err}");
    let err = fails(
        &[
            "--db",
            harel.to_str().unwrap(),
            "--prefix",
            "harel",
            "log",
            "--tenant",
            "a",
            "--workspace",
            "b",
        ],
        1,
    );
    assert!(
        err.contains("holds no workspace log") && err.contains("execstore list"),
        "{err}"
    );
    let missing = dir.path().join("missing.db");
    let err = fails(&["--db", missing.to_str().unwrap(), "workspaces"], 1);
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists(), "nothing created");

    // Both in one file: each command reads its own tables.
    let both = dir.path().join("both.db");
    std::fs::copy(&ws_only, &both).unwrap();
    drop(
        execstore_sqlite::SqliteStore::open(&both, execstore_sqlite::SqliteOptions::new().prefix("harel"))
            .unwrap(),
    );
    ok(&["--db", both.to_str().unwrap(), "--prefix", "harel", "list"]);
    assert!(ok(&["--db", both.to_str().unwrap(), "workspaces"]).contains("acme"));
}

/// The read commands open `postgres://` as the monitor does (one place opens a target).
#[test]
fn read_commands_open_postgres_too() {
    let Some(url) = std::env::var("EXECSTORE_PG_URL").ok().filter(|u| !u.is_empty()) else {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: read_commands_open_postgres_too: EXECSTORE_PG_URL is not set, so the CLI is not tried on PostgreSQL"
        );
        return;
    };
    use execstore::{Execution, ExecutionStore};
    let prefix = format!("cli_{}", std::process::id());
    let store = execstore_postgres::PgStore::open(&url, execstore_postgres::PgOptions::new().prefix(&prefix))
        .unwrap();
    let mut exe = Execution::new("pg-exe-1", "orders");
    store.save(&mut exe).unwrap();
    let listed: Value =
        serde_json::from_str(&ok(&["--db", &url, "--prefix", &prefix, "--json", "list"])).unwrap();
    assert_eq!(listed["items"][0]["id"], "pg-exe-1");
    let shown = ok(&["--db", &url, "--prefix", &prefix, "show", "pg-exe-1"]);
    assert!(shown.contains("orders"), "{shown}");
    drop(store);
    execstore_postgres::drop_store(&url, Some(&prefix)).unwrap();
    let err = fails(&["--db", &url, "--prefix", &prefix, "list"], 1);
    assert!(err.contains("not found") || err.contains("no"), "{err}");
}

/// `leases` and `dead-letters` read page by page (the contracts' pages, a thousand rows a
/// read): every row once by default, `--limit` stops and says where to go on, `--after`
/// goes on from there, and a bad `--after` or `--limit` is refused.
#[test]
fn leases_and_dead_letters_page_on() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("paged.db");
    let s = SqliteWorkspaceStorage::open(&db, SqliteWorkspaceOptions::new()).unwrap();
    let w = WorkspaceRef::new("acme", "prod");
    // 2,500 leases (more than one read's thousand), keys needing quotes among them.
    for i in 0..2500 {
        let key = if i == 1 {
            "it's #1".to_owned()
        } else {
            format!("k{i:05}")
        };
        assert!(s.acquire_lease(&w, &key, "h", Duration::from_secs(600)).unwrap());
    }
    let mut tx = s.begin(&w).unwrap();
    let letters: Vec<EvaluationError> = (0..1500)
        .map(|i| EvaluationError::new(if i % 2 == 0 { "a" } else { "b" }, i, format!("boom {i}")))
        .collect();
    tx.dead_letter(&letters).unwrap();
    tx.commit().unwrap();
    drop(s);
    let d = db.to_str().unwrap();
    let run = |cmd: &[&str]| -> Output {
        let mut args = vec!["--db", d, "--json"];
        args.extend_from_slice(cmd);
        args.extend_from_slice(&["--tenant", "acme", "--workspace", "prod"]);
        execstore(&args)
    };
    let keys = |out: &Output| -> Vec<String> {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        v.iter().map(|l| l["key"].as_str().unwrap().to_owned()).collect()
    };
    let all = keys(&run(&["leases"]));
    let mut want: Vec<String> = (0..2500)
        .map(|i| {
            if i == 1 {
                "it's #1".to_owned()
            } else {
                format!("k{i:05}")
            }
        })
        .collect();
    want.sort();
    assert_eq!(all, want, "every lease once, by key");
    // Pages of 700 by --limit and --after reassemble the listing; each but the last says
    // where to go on (on stderr with --json), as a shell word.
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut cmd = vec!["leases", "--limit", "700"];
        let unquoted;
        if let Some(a) = &after {
            unquoted = a.trim_matches('\'').replace(r"'\''", "'");
            cmd.extend_from_slice(&["--after", &unquoted]);
        }
        let out = run(&cmd);
        let page = keys(&out);
        assert!(page.len() <= 700);
        paged.extend(page);
        let note = String::from_utf8(out.stderr).unwrap();
        match note.trim().strip_prefix("more: go on with --after ") {
            Some(next) => after = Some(next.to_owned()),
            None => {
                assert!(note.trim().is_empty(), "{note}");
                break;
            }
        }
    }
    assert_eq!(paged, want);
    assert_eq!(want[0], "it's #1");
    let first = run(&["leases", "--limit", "1"]);
    assert_eq!(
        String::from_utf8(first.stderr).unwrap().trim(),
        r"more: go on with --after 'it'\''s #1'"
    );
    // A limit that ends the listing exactly says nothing more.
    let exact = run(&["leases", "--limit", "2500"]);
    assert_eq!(keys(&exact).len(), 2500);
    assert!(
        exact.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&exact.stderr)
    );

    // Dead letters: positions are the backend's; rule `b`'s 750, oldest first, in pages.
    let seqs = |out: &Output| -> Vec<i64> {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        v.iter().map(|l| l["seq"].as_i64().unwrap()).collect()
    };
    let every = seqs(&run(&["dead-letters"]));
    assert_eq!(every, (0..1500).collect::<Vec<i64>>());
    let b_first = run(&["dead-letters", "--rule", "b", "--limit", "500"]);
    let mut b = seqs(&b_first);
    let note = String::from_utf8(b_first.stderr).unwrap();
    let next = note
        .trim()
        .strip_prefix("more: go on with --after ")
        .expect(&note)
        .to_owned();
    b.extend(seqs(&run(&["dead-letters", "--rule", "b", "--after", &next])));
    assert_eq!(b, (0..1500).filter(|i| i % 2 == 1).collect::<Vec<i64>>());
    // The table says it too, after the rows.
    let table = ok(&[
        "--db",
        d,
        "dead-letters",
        "--limit",
        "2",
        "--tenant",
        "acme",
        "--workspace",
        "prod",
    ]);
    assert!(
        table.trim_end().ends_with("more: go on with --after 2"),
        "{table}"
    );

    for bad in [
        &["leases", "--limit", "0"][..],
        &["dead-letters", "--after", "-1"],
        &["dead-letters", "--limit", "x"],
    ] {
        assert_eq!(run(bad).status.code(), Some(2), "{bad:?}");
    }
}
