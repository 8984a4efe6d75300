//! The control commands end to end: `suspend`, `resume`, `terminate`, `purge` and
//! `purge-finished` on a store file (and on PostgreSQL when `EXECSTORE_PG_URL` is set):
//! their output and exit codes, what they change, and that every refusal and usage error
//! leaves the store exactly as it was.

mod common;

use std::process::Output;
use std::time::{SystemTime, UNIX_EPOCH};

use common::execstore;
use execstore::{
    executions::{ChildState, Event, Status},
    Effects, Execution, ExecutionStore,
};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn put(
    store: &dyn ExecutionStore,
    id: &str,
    status: Status,
    parent: Option<&str>,
    kids: &[&str],
    finished: Option<f64>,
) {
    let mut exe = Execution::new(id, "orders");
    exe.status = status;
    exe.parent_id = parent.map(str::to_owned);
    exe.finished_at = finished;
    for k in kids {
        exe.children
            .insert((*k).to_owned(), ChildState::region("orders.r", "r"));
    }
    store.save(&mut exe).expect("save");
    if status == Status::Running && parent.is_none() {
        let effects = Effects::new()
            .emit(Some(id), Event::new(format!("{id}-ev"), "Backlog"))
            .schedule("orders.t", 2e9);
        store.commit(&mut exe, &effects).expect("commit");
    }
}

/// `r` RUNNING (regions `r:a` RUNNING, `r:b` DONE); `old` DONE long ago (region `old:k`
/// CANCELLED); `live` DONE long ago with a RUNNING region; `new` DONE just now; `undated`.
fn fixture(store: &dyn ExecutionStore) {
    put(store, "r", Status::Running, None, &["r:a", "r:b"], None);
    put(store, "r:a", Status::Running, Some("r"), &[], None);
    put(store, "r:b", Status::Done, Some("r"), &[], Some(1000.0));
    put(store, "old", Status::Done, None, &["old:k"], Some(1000.0));
    put(store, "old:k", Status::Cancelled, Some("old"), &[], Some(1000.0));
    put(store, "live", Status::Done, None, &["live:k"], Some(1000.0));
    put(store, "live:k", Status::Running, Some("live"), &[], None);
    put(store, "new", Status::Done, None, &[], Some(now()));
    put(store, "undated", Status::Done, None, &[], None);
    put(store, "gone", Status::Cancelled, None, &[], Some(2000.0));
}

struct Fixture {
    dir: tempfile::TempDir,
    db: String,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("store.db");
        fixture(&SqliteStore::open(&db, SqliteOptions::new()).expect("create"));
        Fixture {
            db: db.to_str().expect("utf-8").to_owned(),
            dir,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["--db", self.db.as_str()];
        all.extend_from_slice(args);
        execstore(self.dir.path(), &all)
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    }

    fn store(&self) -> SqliteStore {
        SqliteStore::open(&self.db, SqliteOptions::new().read_only(true)).expect("open read-only")
    }

    fn status(&self, id: &str) -> Option<Status> {
        self.store().load(id).expect("load").map(|e| e.status)
    }

    /// Every row of every table, as text.
    fn rows(&self) -> Vec<String> {
        let conn = rusqlite::Connection::open(&self.db).expect("open");
        let mut all = Vec::new();
        for t in [
            "executions",
            "outbox",
            "processed_events",
            "timers",
            "spawns",
            "trace",
        ] {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {t} ORDER BY 1, 2"))
                .expect("select");
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |row| {
                    (0..n)
                        .map(|i| row.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}")))
                        .collect::<Result<Vec<_>, _>>()
                })
                .expect("query");
            for r in rows {
                all.push(format!("{t}: {}", r.expect("row").join(" | ")));
            }
        }
        all
    }
}

#[test]
fn suspend_resume_terminate_move_the_tree() {
    let f = Fixture::new();
    let out = f.ok(&["suspend", "r"]);
    assert!(out.starts_with("r: suspend (2 executions)"), "{out}");
    assert!(out.contains("r:a  RUNNING -> SUSPENDED  (version 2)"), "{out}");
    assert_eq!(f.status("r"), Some(Status::Suspended));
    assert_eq!(f.status("r:a"), Some(Status::Suspended));
    assert_eq!(
        f.status("r:b"),
        Some(Status::Done),
        "a finished region is left alone"
    );

    let out = f.ok(&["suspend", "r"]);
    assert_eq!(
        out,
        "r: nothing changed (SUSPENDED; suspend acts on a RUNNING execution)\n"
    );
    let out = f.ok(&["resume", "old"]);
    assert!(out.contains("nothing changed (DONE"), "{out}");

    let v: Value = serde_json::from_str(&f.ok(&["--json", "resume", "r"])).expect("json");
    assert_eq!(v["command"], "resume");
    assert_eq!(v["changed"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["changed"][0]["from"], "SUSPENDED");
    assert_eq!(v["changed"][0]["to"], "RUNNING");
    assert_eq!(f.status("r:a"), Some(Status::Running));

    let version = f.store().load("r").unwrap().unwrap().version;
    let before = now();
    f.ok(&["terminate", "r", "--expected-version", &version.to_string()]);
    let exe = f.store().load("r").unwrap().unwrap();
    assert_eq!(exe.status, Status::Cancelled);
    let finished = exe.finished_at.expect("finished_at stamped");
    assert!(
        finished >= before - 1.0 && finished <= now() + 1.0,
        "stamped with the clock: {finished}"
    );
    assert_eq!(exe.updated_at, Some(finished));
    assert_eq!(f.status("r:a"), Some(Status::Cancelled));
    let outbox = f.store().pending_outbox(None, 100).unwrap();
    assert!(
        outbox.iter().any(|e| e.target_id.as_deref() == Some("r")),
        "the backlog stays"
    );
}

#[test]
fn refusals_exit_1_and_change_nothing() {
    let f = Fixture::new();
    let existing = f.dir.path().join("exists.json");
    std::fs::write(&existing, "keep").unwrap();
    let before = f.rows();
    let refused: &[(&[&str], i32, &str)] = &[
        (&["suspend", "nope"], 1, "execution nope not found"),
        (&["resume", "nope"], 1, "not found"),
        (&["terminate", "nope"], 1, "not found"),
        (&["purge", "nope"], 1, "not found"),
        (&["purge", "r:a"], 1, "purge refused: 'r:a' is a child of 'r'"),
        (
            &["purge", "live"],
            1,
            "purge refused: not finished: live:k (RUNNING)",
        ),
        (&["purge", "r", "--archive", "new.json"], 1, "not finished"),
        (
            &["purge", "old", "--archive", "exists.json"],
            1,
            "cannot create the archive",
        ),
        (
            &["terminate", "r", "--expected-version", "1"],
            1,
            "stale write to r: expected version 1, found 2",
        ),
        (&["purge", "old", "--expected-version", "7"], 1, "stale write"),
        (&["suspend", ""], 1, "invalid input"),
        (&["purge-finished", "--older-than", "5x"], 2, "unknown time unit"),
        (
            &["purge-finished", "--older-than", "1h", "--status", "FAILED"],
            2,
            "only DONE and CANCELLED",
        ),
        (
            &["purge-finished", "--older-than", "1h", "--status", "NOPE"],
            2,
            "not one of",
        ),
        (&["purge-finished"], 2, "--older-than"),
        (&["suspend"], 2, "<ID>"),
    ];
    for (args, code, says) in refused {
        let out = f.run(args);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(f.rows(), before, "no refusal changed the store");
    assert!(
        !f.dir.path().join("new.json").exists(),
        "a refused purge leaves no archive"
    );
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep");
    // the missing-file and wrong-prefix refusals of the read commands hold for these too
    let out = execstore(f.dir.path(), &["--db", "missing.db", "suspend", "r"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!f.dir.path().join("missing.db").exists(), "no store is created");
    let out = f.run(&["--prefix", "harel", "terminate", "r"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no executions"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(f.rows(), before);
}

#[test]
fn purge_and_purge_finished() {
    let f = Fixture::new();
    let out = f.ok(&["purge", "old", "--archive", "old.json"]);
    assert_eq!(out, "purged old: 2 executions removed, archived to old.json\n");
    let bundle: Value =
        serde_json::from_str(&std::fs::read_to_string(f.dir.path().join("old.json")).unwrap()).unwrap();
    assert_eq!(bundle["root_id"], "old");
    let ids: Vec<&str> = bundle["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["old", "old:k"]);
    assert!(bundle["traces"]["old:k"].is_array());
    assert_eq!(f.status("old"), None);
    assert_eq!(f.status("old:k"), None);

    let before = f.rows();
    let v: Value =
        serde_json::from_str(&f.ok(&["--json", "purge-finished", "--older-than", "1h", "--dry-run"]))
            .unwrap();
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["purged"], serde_json::json!(["gone"]));
    assert!(v["refused"]["live"].as_str().unwrap().contains("not finished"));
    assert_eq!(v["skipped_undated"], 1);
    assert_eq!(f.rows(), before, "a dry run deletes nothing");

    let out = f.ok(&["purge-finished", "--older-than", "1h", "--status", "done"]);
    assert!(
        out.starts_with("purged 0 root tree(s)\nrefused 1:\n  live: purge refused"),
        "{out}"
    );
    assert_eq!(
        f.status("gone"),
        Some(Status::Cancelled),
        "CANCELLED was not asked for"
    );

    let out = f.ok(&[
        "purge-finished",
        "--older-than",
        "0s",
        "--include-undated",
        "--archive",
        "all.jsonl",
    ]);
    assert!(
        out.starts_with("purged 3 root tree(s)\n  gone\n  new\n  undated\n"),
        "{out}"
    );
    let lines = std::fs::read_to_string(f.dir.path().join("all.jsonl")).unwrap();
    let roots: Vec<String> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["root_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(roots, ["gone", "new", "undated"]);
    for id in ["gone", "new", "undated"] {
        assert_eq!(f.status(id), None, "{id}");
    }
    assert_eq!(f.status("live"), Some(Status::Done));
    assert_eq!(f.status("r"), Some(Status::Running));
}

#[test]
fn control_commands_on_postgres() {
    let Some(url) = std::env::var("EXECSTORE_PG_URL").ok().filter(|u| !u.is_empty()) else {
        skip("EXECSTORE_PG_URL is not set, so the control commands are not tried on PostgreSQL");
        return;
    };
    let prefix = format!("ctl{}_{}", std::process::id(), (now() * 1e3) as u64 % 1_000_000);
    let store = execstore_postgres::PgStore::open(&url, execstore_postgres::PgOptions::new().prefix(&prefix))
        .expect("open PostgreSQL");
    fixture(&store);
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["--db", url.as_str(), "--prefix", prefix.as_str()];
        all.extend_from_slice(args);
        execstore(dir.path(), &all)
    };
    let out = run(&["suspend", "r"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(store.load("r:a").unwrap().unwrap().status, Status::Suspended);
    let out = run(&["terminate", "r"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(store.load("r").unwrap().unwrap().status, Status::Cancelled);
    let out = run(&["purge", "live"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(store.load("live").unwrap().unwrap().status, Status::Done);
    let out = run(&["purge", "r", "--archive", "r.json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(store.load("r").unwrap().is_none() && store.load("r:a").unwrap().is_none());
    assert!(dir.path().join("r.json").exists());
    let out = run(&["--json", "purge-finished", "--older-than", "1h"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(v["purged"], serde_json::json!(["gone", "old"]));
    drop(store);
    execstore_postgres::drop_store(&url, Some(&prefix)).expect("drop the test tables");
}

/// `POST /api/control/{action}` with `body` to the monitor, with `Bearer token` if any: the
/// status and the JSON answer.
/// A body that is a JSON object gets the `reason` every write needs (unless it has one).
fn post_json(m: &common::Monitor, path: &str, token: Option<&str>, body: &str) -> (u16, Value) {
    let body = match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(mut fields)) => {
            fields.entry("reason").or_insert_with(|| Value::from("a test"));
            Value::Object(fields).to_string()
        }
        _ => body.to_owned(),
    };
    let body = body.as_str();
    let mut req = m
        .agent
        .post(format!("{}{path}", m.url))
        .header("Content-Type", "application/json");
    if let Some(token) = token {
        req = req.header("Authorization", format!("Bearer {token}"));
    }
    let mut response = req.send(body).expect("the request went through");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().expect("read the answer");
    let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, json)
}

#[test]
fn the_monitor_applies_a_bulk_action_in_one_request() {
    let f = Fixture::new();
    let before = f.rows();
    {
        let read_only = common::start_monitor(&["monitor", "--db", &f.db], &[]);
        let (status, body) = post_json(
            &read_only,
            "api/control/suspend",
            None,
            r#"{"targets": [{"id": "r"}]}"#,
        );
        assert_eq!(
            (status, &body["error"]["code"]),
            (403, &Value::from("READ_ONLY")),
            "{body}"
        );
    }
    let m = common::start_monitor(&["monitor", "--db", &f.db, "--token", "s3cret"], &[]);
    let (status, body) = post_json(&m, "api/control/suspend", None, r#"{"targets": [{"id": "r"}]}"#);
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &Value::from("UNAUTHORIZED")),
        "{body}"
    );
    for bad in [
        "not json",
        r#"{"targets": "r"}"#,
        r#"{"targets": [{"id": "r"}, {"id": ""}]}"#,
        r#"{"targets": [{"id": "r", "expected_version": -2}]}"#,
    ] {
        let (status, body) = post_json(&m, "api/control/suspend", Some("s3cret"), bad);
        // Not JSON, or a refused object: malformed input either way.
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &Value::from("INVALID_INPUT")),
            "{bad}: {body}"
        );
    }
    assert_eq!(f.rows(), before, "no refused request changed the store");

    // One request: a change, a no-op, a conflict (r moved just before), an unknown id.
    let body = r#"{"targets": [
        {"id": "r", "expected_version": 2},
        {"id": "new"},
        {"id": "r", "expected_version": 2},
        {"id": "nope"}
    ]}"#;
    let (status, answer) = post_json(&m, "api/control/suspend", Some("s3cret"), body);
    assert_eq!(status, 200, "{answer}");
    let results = answer["results"].as_array().expect("results");
    let summary: Vec<(&str, bool, Option<u64>)> = results
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["ok"].as_bool().unwrap(),
                r["status"].as_u64(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("r", true, None),
            ("new", true, None),
            ("r", false, Some(409)),
            ("nope", false, Some(404))
        ],
        "{answer}"
    );
    assert_eq!(
        results[0]["changed"].as_array().map(Vec::len),
        Some(2),
        "r and r:a: {answer}"
    );
    assert_eq!(results[1]["changed"], Value::Array(vec![]));
    assert_eq!(results[2]["error"]["code"], "CONFLICT");
    assert_eq!(f.status("r"), Some(Status::Suspended));
    assert_eq!(f.status("r:a"), Some(Status::Suspended));
    assert_eq!(f.status("new"), Some(Status::Done));

    let (status, answer) = post_json(
        &m,
        "api/control/purge",
        Some("s3cret"),
        r#"{"targets": [{"id": "live"}, {"id": "old"}]}"#,
    );
    assert_eq!(status, 200, "{answer}");
    let results = answer["results"].as_array().expect("results");
    assert_eq!(
        (results[0]["ok"].as_bool(), results[0]["status"].as_u64()),
        (Some(false), Some(400))
    );
    assert!(
        results[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not finished"),
        "{answer}"
    );
    assert_eq!(results[1]["ok"], true, "{answer}");
    assert_eq!(results[1]["purged"], "old");
    assert_eq!(f.status("old"), None);
    assert_eq!(f.status("old:k"), None);
    assert_eq!(f.status("live"), Some(Status::Done));
}
