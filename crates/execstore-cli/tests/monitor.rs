//! The monitor's JSON API end to end: `execstore monitor` (and `demo`) run as a process on a
//! free port, driven over HTTP. Every endpoint, bad parameters (400 with a JSON error),
//! unknown ids (404), the read-only default (403) and writes with the token.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{start_monitor, Monitor};
use serde_json::Value;
use tempfile::TempDir;

const STATUSES: [&str; 7] = [
    "PENDING",
    "RUNNING",
    "DONE",
    "CANCELLED",
    "SUSPENDED",
    "CANCELLING",
    "FAILED",
];

fn start(args: &[&str], env: &[(&str, &str)]) -> Monitor {
    start_monitor(args, env)
}

/// An answer: status and JSON body.
/// Every write's body: a JSON object with its reason.
const REASON: &str = r#"{"reason": "a test"}"#;

struct Answer {
    status: u16,
    body: Value,
}

impl Monitor {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    fn answer(&self, response: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Answer {
        let mut response = response.expect("the request went through");
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        Answer { status, body }
    }

    fn get(&self, path: &str) -> Answer {
        self.answer(self.agent.get(self.url(path)).call())
    }

    /// GET that must succeed.
    fn ok(&self, path: &str) -> Value {
        let a = self.get(path);
        assert_eq!(a.status, 200, "GET {path}: {}", a.body);
        a.body
    }

    fn post(&self, path: &str, token: Option<&str>) -> Answer {
        let mut req = self.agent.post(self.url(path));
        if let Some(token) = token {
            req = req.header("Authorization", format!("Bearer {token}"));
        }
        self.answer(req.header("Content-Type", "application/json").send(REASON))
    }

    fn delete(&self, path: &str, token: Option<&str>) -> Answer {
        let mut req = self.agent.delete(self.url(path)).force_send_body();
        if let Some(token) = token {
            req = req.header("Authorization", format!("Bearer {token}"));
        }
        self.answer(req.header("Content-Type", "application/json").send(REASON))
    }
}

/// Reports that the calling test is skipped, and why: one line `SKIPPED: <test>: <reason>`
/// straight to stderr, past the test harness's capture (scripts/test counts it as skipped, not
/// passed). `<test>` is the thread's name, which libtest sets to the test's.
fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Asserts a JSON error answer: its status and code, and a message that says something.
fn assert_error(a: &Answer, status: u16, code: &str, what: &str) {
    assert_eq!(a.status, status, "{what}: {}", a.body);
    assert_eq!(a.body["error"]["code"], code, "{what}: {}", a.body);
    let message = a.body["error"]["message"].as_str().unwrap_or("");
    assert!(message.len() > 5, "{what}: no message in {}", a.body);
}

fn demo(n: u32, seed: u64) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let out = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(["demo", "--no-serve", "--db"])
        .arg(&db)
        .args(["--executions", &n.to_string(), "--seed", &seed.to_string()])
        .env_remove("EXECSTORE_DB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (dir, db)
}

/// The CLI's own JSON for the same store, to compare the API with.
fn cli(db: &Path, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .arg("--db")
        .arg(db)
        .arg("--json")
        .args(args)
        .env_remove("EXECSTORE_DB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ids(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every page of `/api/executions?<filter>` with page size `limit`.
fn all_pages(m: &Monitor, filter: &str, limit: usize) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        // By id, as the CLI lists (the monitor's default order has its own tests).
        let mut path = format!("api/executions?order=id&limit={limit}&{filter}");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let page = m.ok(&path);
        let got = page["items"].as_array().unwrap();
        assert!(got.len() <= limit);
        items.extend(got.iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    items
}

#[test]
fn the_list_pages_filters_counts_and_searches_like_the_store() {
    let (_dir, db) = demo(150, 3);
    let m = start(&["monitor", "--db", db.to_str().unwrap()], &[]);

    let info = m.ok("api/info");
    assert_eq!(info["backend"], "sqlite");
    assert_eq!(info["writable"], false);
    assert!(info["now"].as_f64().unwrap() > 1e9);

    // Paging with a small page size walks every execution once, in id order, as the CLI lists.
    let everything = all_pages(&m, "", 7);
    let listed = cli(&db, &["list", "--all"]);
    assert_eq!(Value::Array(everything.clone()), listed["items"]);
    assert_eq!(everything.len(), 150);

    // Counts per status agree with the listing, under each filter.
    let counts = m.ok("api/counts");
    assert_eq!(counts["total"], 150);
    for status in STATUSES {
        let n = everything.iter().filter(|e| e["status"] == status).count();
        assert_eq!(counts["counts"][status], n, "{status}");
    }
    let fulfilment = m.ok("api/counts?definition=fulfilment&roots_only=true");
    let roots: Vec<&Value> = everything
        .iter()
        .filter(|e| e["definition_id"] == "fulfilment" && e["parent_id"].is_null())
        .collect();
    assert_eq!(fulfilment["total"], roots.len());
    assert!(
        roots.len()
            < everything
                .iter()
                .filter(|e| e["definition_id"] == "fulfilment")
                .count()
    );

    // Filters: several statuses (any case), a definition, roots only.
    let some = all_pages(&m, "status=running,Failed&definition=orders", 5);
    let expected: Vec<&Value> = everything
        .iter()
        .filter(|e| (e["status"] == "RUNNING" || e["status"] == "FAILED") && e["definition_id"] == "orders")
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(some.iter().collect::<Vec<_>>(), expected);
    let root_only = all_pages(&m, "roots_only=1", 50);
    assert!(root_only.iter().all(|e| e["parent_id"].is_null()));
    assert_eq!(
        root_only.len(),
        everything.iter().filter(|e| e["parent_id"].is_null()).count()
    );

    // Search by id prefix: the exact id and every id it starts, across pages and filters.
    let parent = everything
        .iter()
        .find(|e| {
            let id = e["id"].as_str().unwrap();
            everything.iter().any(|c| c["parent_id"] == id)
        })
        .expect("a demo parent");
    let pid = parent["id"].as_str().unwrap();
    let family = all_pages(&m, &format!("q={pid}"), 2);
    let expected: Vec<String> = ids(&Value::Array(everything.clone()))
        .into_iter()
        .filter(|id| id.starts_with(pid))
        .collect();
    assert!(expected.len() >= 2, "a parent and its children");
    assert_eq!(ids(&Value::Array(family)), expected);
    let short = &pid[..2];
    let found = all_pages(&m, &format!("q={short}&roots_only=true"), 3);
    let expected: Vec<String> = everything
        .iter()
        .filter(|e| e["id"].as_str().unwrap().starts_with(short) && e["parent_id"].is_null())
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids(&Value::Array(found)), expected);
    let none = m.ok("api/executions?q=zzzz-no-such-id");
    assert_eq!(none["items"], serde_json::json!([]));
    assert!(none["next_cursor"].is_null());
}

#[test]
fn detail_trace_and_pending_show_what_the_store_holds() {
    let (_dir, db) = demo(120, 5);
    let m = start(&["monitor", "--db", db.to_str().unwrap()], &[]);
    let everything = all_pages(&m, "", 200);
    let child = everything
        .iter()
        .find(|e| !e["parent_id"].is_null())
        .expect("a region child");
    let cid = child["id"].as_str().unwrap();
    let pid = child["parent_id"].as_str().unwrap();

    // The child: its stored JSON, its ancestors (root first).
    let detail = m.ok(&format!("api/executions/{cid}"));
    assert_eq!(detail["execution"], cli(&db, &["show", cid]));
    assert_eq!(detail["ancestors"][0]["id"], pid);
    assert_eq!(detail["ancestors"][0]["summary"]["id"], pid);
    // The parent: its children with their join state and summary.
    let parent = m.ok(&format!("api/executions/{pid}"));
    assert!(parent["ancestors"].as_array().unwrap().is_empty());
    let children: BTreeSet<&str> = parent["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(children.contains(cid), "{children:?}");
    let this = parent["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == cid)
        .unwrap();
    assert_eq!(this["summary"]["status"], child["status"]);
    assert!(this["join"]["root_path"].is_string());

    // The trace, oldest first, as stored.
    for e in everything.iter().take(40) {
        let id = e["id"].as_str().unwrap();
        let trace = m.ok(&format!("api/executions/{id}/trace"));
        assert_eq!(trace["items"], cli(&db, &["trace", id]), "{id}");
        assert_eq!(trace["trace_max"], 200);
    }

    // Pending: the execution's own timers, outbox entries and spawn intents.
    let timers = cli(&db, &["timers", "--limit", "10000"]);
    let outbox = cli(&db, &["outbox", "--limit", "10000"]);
    let spawns = cli(&db, &["spawns", "--limit", "10000"]);
    let mut seen = [false; 3];
    for e in &everything {
        let id = e["id"].as_str().unwrap();
        let pending = m.ok(&format!("api/executions/{id}/pending"));
        let mine = |all: &Value, key: &str| -> Vec<Value> {
            all.as_array()
                .unwrap()
                .iter()
                .filter(|x| x[key] == id)
                .cloned()
                .collect()
        };
        let cases = [
            ("timers", mine(&timers, "execution_id")),
            ("outbox", mine(&outbox, "target_id")),
            ("spawns", mine(&spawns, "parent_id")),
        ];
        for (i, (key, expected)) in cases.into_iter().enumerate() {
            seen[i] |= !expected.is_empty();
            assert_eq!(pending[key], Value::Array(expected), "{key} of {id}");
        }
        assert_eq!(pending["truncated"], false);
    }
    assert_eq!(
        seen, [true; 3],
        "the demo has timers, addressed outbox entries and spawns"
    );
}

#[test]
fn store_wide_views_page_oldest_first() {
    let (_dir, db) = demo(200, 7);
    let m = start(&["monitor", "--db", db.to_str().unwrap()], &[]);

    let outbox = cli(&db, &["outbox", "--limit", "10000"]);
    let mut paged = Vec::new();
    let mut after = String::new();
    loop {
        let page = m.ok(&format!("api/outbox?limit=4{after}"));
        paged.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_after"].as_i64() {
            Some(seq) => after = format!("&after={seq}"),
            None => break,
        }
    }
    assert!(paged.len() > 4);
    assert_eq!(Value::Array(paged), outbox);

    let timers = cli(&db, &["timers", "--limit", "10000"]);
    let mut paged = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = m.ok(&format!("api/timers?limit=5{cursor}"));
        paged.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    assert!(paged.len() > 5);
    assert_eq!(Value::Array(paged), timers);
    let now = m.ok("api/info")["now"].as_f64().unwrap();
    let due = m.ok("api/timers?due_before=now&limit=10000");
    let due = due["items"].as_array().unwrap();
    assert!(!due.is_empty() && due.iter().all(|t| t["fire_at"].as_f64().unwrap() <= now + 5.0));
    assert!(due.len() < timers.as_array().unwrap().len());

    let spawns = m.ok("api/spawns?limit=10000");
    let items = spawns["items"].as_array().unwrap();
    let expected = cli(&db, &["spawns", "--limit", "10000"]);
    assert_eq!(items.len(), expected.as_array().unwrap().len());
    for (got, want) in items.iter().zip(expected.as_array().unwrap()) {
        for key in ["seq", "parent_id", "child_id", "root_path", "context"] {
            assert_eq!(got[key], want[key]);
        }
        assert!(got["parent_updated_at"].is_f64(), "{got}");
    }
    // Each parent's time is its own (read for the page's parents at once).
    let mut parents: Vec<&str> = items.iter().map(|i| i["parent_id"].as_str().unwrap()).collect();
    parents.sort_unstable();
    parents.dedup();
    assert!(parents.len() > 1, "{parents:?}");
    for item in items.iter().take(30) {
        let parent = item["parent_id"].as_str().unwrap();
        let detail = m.ok(&format!("api/executions/{parent}"));
        assert_eq!(
            item["parent_updated_at"], detail["execution"]["updated_at"],
            "{item}"
        );
    }
}

#[test]
fn bad_parameters_are_400_with_a_json_error() {
    let (_dir, db) = demo(20, 1);
    let m = start(&["monitor", "--db", db.to_str().unwrap()], &[]);
    for path in [
        "api/executions?limit=0",
        "api/executions?limit=abc",
        "api/executions?limit=10001",
        "api/executions?status=SLEEPING",
        "api/executions?roots_only=maybe",
        "api/executions?cursor=not-a-cursor",
        "api/executions?colour=red",
        "api/executions?limit=5&limit=6",
        "api/counts?roots_only=yes",
        "api/counts?colour=red",
        "api/outbox?after=-1",
        "api/outbox?after=x",
        "api/spawns?limit=-3",
        "api/timers?cursor=garbage",
        "api/timers?due_before=yesterday",
        "api/timers?due_before=-5",
    ] {
        let a = m.get(path);
        assert_error(
            &a,
            400,
            if path.contains("status=SLEEPING") || path.contains("cursor=not") {
                "INVALID_INPUT"
            } else {
                "BAD_REQUEST"
            },
            path,
        );
    }
    // An id the store would refuse is a 400 too, not a 404.
    let long = "x".repeat(5000);
    assert_error(
        &m.get(&format!("api/executions/{long}")),
        400,
        "INVALID_INPUT",
        "over-long id",
    );
}

/// Bytes that are not UTF-8 once percent-decoded (`%FF`, or `%ED%A0%80`, a surrogate's
/// encoding, which UTF-8 forbids) in an id, a prefix, a search, a definition or a cursor are a
/// 400 saying so: decoded lossily they would be U+FFFD and name (or change) the execution whose
/// id holds a real U+FFFD.
#[test]
fn ids_that_are_not_utf8_once_decoded_are_400_not_u_fffd() {
    use execstore::{executions::Status, Execution, ExecutionStore};
    use execstore_sqlite::{SqliteOptions, SqliteStore};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fffd.db");
    {
        let store = SqliteStore::open(&db, SqliteOptions::new()).unwrap();
        for id in ["a\u{fffd}", "a\u{fffd}b"] {
            let mut exe = Execution::new(id, "d\u{fffd}");
            exe.status = Status::Running;
            store.save(&mut exe).unwrap();
        }
    }
    let m = start(
        &["monitor", "--db", db.to_str().unwrap(), "--token", "s3cret"],
        &[],
    );
    let everything = || m.ok("api/executions?limit=10000&order=id");
    let before = everything();
    assert_eq!(ids(&before["items"]), ["a\u{fffd}", "a\u{fffd}b"]);
    for bad in ["%FF", "%ED%A0%80", "%ED%B0%80", "%C0%80"] {
        for path in [
            format!("api/executions/a{bad}"),
            format!("api/executions/a{bad}/trace"),
            format!("api/executions/a{bad}/pending"),
            format!("api/executions/a{bad}/graph"),
            format!("api/definitions/d{bad}/graph"),
            format!("api/executions?q=a{bad}"),
            format!("api/executions?search=a{bad}"),
            format!("api/executions?definition=d{bad}"),
            format!("api/executions?cursor=a{bad}"),
            format!("api/counts?definition=d{bad}"),
            format!("api/timers?cursor=a{bad}"),
        ] {
            let a = m.get(&path);
            assert_eq!(a.status, 400, "{path}: {}", a.body);
            let message = a.body["error"]["message"].as_str().unwrap_or("");
            assert!(message.contains("UTF-8"), "{path}: {}", a.body);
        }
        for action in ["suspend", "terminate", "purge"] {
            let path = format!("api/executions/a{bad}/{action}");
            let a = m.post(&path, Some("s3cret"));
            assert_eq!(a.status, 400, "{path}: {}", a.body);
        }
        assert_eq!(everything(), before, "{bad}: the store changed");
    }
    // The real U+FFFD, percent-encoded as UTF-8, names its execution.
    assert_eq!(m.ok("api/executions/a%EF%BF%BD")["execution"]["id"], "a\u{fffd}");
    assert_eq!(ids(&m.ok("api/executions?q=a%EF%BF%BD")["items"]).len(), 2);
}

#[test]
fn unknown_ids_and_endpoints_are_404() {
    let (_dir, db) = demo(20, 1);
    let m = start(&["monitor", "--db", db.to_str().unwrap()], &[]);
    for path in [
        "api/executions/no-such-execution",
        "api/executions/no-such-execution/trace",
        "api/executions/no-such-execution/pending",
        "api/no-such-endpoint",
    ] {
        assert_error(&m.get(path), 404, "NOT_FOUND", path);
    }
}

#[test]
fn read_only_by_default_writes_are_403_and_the_file_is_untouched() {
    let (_dir, db) = demo(60, 2);
    let before = std::fs::read(&db).unwrap();
    let m = start(&["monitor", "--db", db.to_str().unwrap()], &[]);
    let outbox = m.ok("api/outbox");
    let seq = outbox["items"][0]["seq"].as_i64().unwrap();
    let timer = m.ok("api/timers?limit=1")["items"][0].clone();
    let spawn = m.ok("api/spawns?limit=1")["items"][0]["seq"].as_i64().unwrap();
    let token = m.ok("api/changes")["token"].clone();

    assert_error(
        &m.post(&format!("api/outbox/{seq}/ack"), None),
        403,
        "READ_ONLY",
        "ack",
    );
    assert_error(
        &m.post(&format!("api/outbox/{seq}/ack"), Some("guess")),
        403,
        "READ_ONLY",
        "ack with a token",
    );
    assert_error(
        &m.post(&format!("api/spawns/{spawn}/ack"), None),
        403,
        "READ_ONLY",
        "spawn ack",
    );
    let del = format!(
        "api/timers?execution_id={}&path={}&fire_at={}",
        timer["execution_id"].as_str().unwrap(),
        timer["path"].as_str().unwrap(),
        timer["fire_at"]
    );
    assert_error(&m.delete(&del, None), 403, "READ_ONLY", "timer delete");

    assert_eq!(m.ok("api/outbox")["items"], outbox["items"]);
    assert_eq!(m.ok("api/changes")["token"], token);
    // A wrong host (a rebound DNS name) is refused.
    let a = m.answer(
        m.agent
            .get(m.url("api/info"))
            .header("Host", "evil.example")
            .call(),
    );
    assert_error(&a, 421, "BAD_HOST", "foreign Host header");
    drop(m);
    assert!(
        std::fs::read(&db).unwrap() == before,
        "the read-only monitor changed the file"
    );
}

#[test]
fn with_a_token_writes_need_it_and_apply() {
    let (_dir, db) = demo(60, 4);
    for by_env in [false, true] {
        let db = db.to_str().unwrap();
        let m = if by_env {
            start(&["monitor", "--db", db], &[("EXECSTORE_MONITOR_TOKEN", "s3cret")])
        } else {
            start(&["monitor", "--db", db, "--token", "s3cret"], &[])
        };
        assert_eq!(m.ok("api/info")["writable"], true);
        let before = m.ok("api/outbox?limit=10000")["items"]
            .as_array()
            .unwrap()
            .clone();
        let seq = before[0]["seq"].as_i64().unwrap();
        let token = m.ok("api/changes")["token"].clone();

        assert_error(
            &m.post(&format!("api/outbox/{seq}/ack"), None),
            401,
            "UNAUTHORIZED",
            "no token",
        );
        assert_error(
            &m.post(&format!("api/outbox/{seq}/ack"), Some("s3cre")),
            401,
            "UNAUTHORIZED",
            "wrong token",
        );
        assert_error(
            &m.post("api/outbox/abc/ack", Some("s3cret")),
            400,
            "BAD_REQUEST",
            "bad seq",
        );
        assert_eq!(
            m.ok("api/outbox?limit=10000")["items"].as_array().unwrap().len(),
            before.len()
        );

        let a = m.post(&format!("api/outbox/{seq}/ack"), Some("s3cret"));
        assert_eq!(
            (a.status, &a.body["acked"]),
            (200, &Value::from(seq)),
            "{}",
            a.body
        );
        let after = m.ok("api/outbox?limit=10000")["items"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(after.len(), before.len() - 1);
        assert!(after.iter().all(|e| e["seq"] != seq));
        assert_ne!(m.ok("api/changes")["token"], token, "the change token moved");
        assert_error(
            &m.post(&format!("api/outbox/{seq}/ack"), Some("s3cret")),
            404,
            "NOT_FOUND",
            "acked twice",
        );

        let spawn = m.ok("api/spawns?limit=1")["items"][0]["seq"].as_i64().unwrap();
        assert_eq!(
            m.post(&format!("api/spawns/{spawn}/ack"), Some("s3cret")).status,
            200
        );
        assert!(m.ok("api/spawns?limit=10000")["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["seq"] != spawn));

        let timer = m.ok("api/timers?limit=1")["items"][0].clone();
        let (eid, path) = (
            timer["execution_id"].as_str().unwrap(),
            timer["path"].as_str().unwrap(),
        );
        let stale = format!("api/timers?execution_id={eid}&path={path}&fire_at=1");
        assert_error(
            &m.delete(&stale, Some("s3cret")),
            404,
            "NOT_FOUND",
            "stale fire_at",
        );
        assert_error(
            &m.delete(&format!("api/timers?execution_id={eid}"), Some("s3cret")),
            400,
            "BAD_REQUEST",
            "no path",
        );
        let del = format!(
            "api/timers?execution_id={eid}&path={path}&fire_at={}",
            timer["fire_at"]
        );
        let a = m.delete(&del, Some("s3cret"));
        assert_eq!(
            (a.status, &a.body["deleted"]),
            (200, &Value::Bool(true)),
            "{}",
            a.body
        );
        assert!(m.ok("api/timers?limit=10000")["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t != &timer));
    }
}

#[test]
fn the_demo_serves_the_monitor_over_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("served.db");
    let m = start(&["demo", "--db", db.to_str().unwrap(), "--executions", "25"], &[]);
    assert_eq!(m.ok("api/counts")["total"], 25);
    let index = m
        .agent
        .get(m.url(""))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(
        index.contains("<script type=\"module\" src=\"app.js\">"),
        "{index}"
    );
    for asset in ["app.js", "api.js", "style.css", "favicon.svg"] {
        let r = m.agent.get(m.url(asset)).call().unwrap();
        assert_eq!(r.status(), 200, "{asset}");
        assert!(r.headers().get("content-security-policy").is_some());
    }
}

#[test]
fn a_missing_store_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(["monitor", "--port", "0", "--db"])
        .arg(dir.path().join("nope.db"))
        .env_remove("EXECSTORE_DB")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    assert!(!dir.path().join("nope.db").exists());
}

#[test]
fn postgres_is_served_too() {
    let Some(url) = std::env::var("EXECSTORE_PG_URL").ok().filter(|u| !u.is_empty()) else {
        skip("EXECSTORE_PG_URL is not set, so the monitor is not tried on PostgreSQL");
        return;
    };
    use execstore::{
        executions::{Event, Status},
        Effects, Execution, ExecutionStore,
    };
    let prefix = format!("mon{}", std::process::id());
    let store = execstore_postgres::PgStore::open(&url, execstore_postgres::PgOptions::new().prefix(&prefix))
        .expect("open PostgreSQL");
    for (i, status) in [Status::Running, Status::Failed, Status::Running]
        .into_iter()
        .enumerate()
    {
        let mut exe = Execution::new(format!("pg-{i}"), "orders");
        exe.status = status;
        store.save(&mut exe).unwrap();
    }
    // something to ack and a timer to delete, which the read-only monitor must leave alone
    let mut exe = store.load("pg-0").unwrap().unwrap();
    let seqs = store
        .commit(
            &mut exe,
            &Effects::new()
                .emit(None, Event::new("pg-ev", "Ping"))
                .schedule("pg.t", 1_700_000_000.5),
        )
        .unwrap();
    let m = start(&["monitor", "--db", &url, "--prefix", &prefix], &[]);
    let info = m.ok("api/info");
    assert_eq!(info["backend"], "postgres");
    // Without a token the monitor is read-only on PostgreSQL as on SQLite.
    assert_eq!(info["writable"], false, "{info}");
    assert_error(
        &m.post(&format!("api/outbox/{}/ack", seqs[0]), None),
        403,
        "READ_ONLY",
        "ack on PostgreSQL",
    );
    assert_error(
        &m.delete(
            "api/timers?execution_id=pg-0&path=pg.t&fire_at=1700000000.5",
            None,
        ),
        403,
        "READ_ONLY",
        "timer delete on PostgreSQL",
    );
    assert_eq!(
        store
            .pending_outbox(None, 10)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        seqs,
        "the refused ack acked nothing"
    );
    assert_eq!(
        store.due_timers(f64::MAX, None, 10).unwrap().len(),
        1,
        "the refused delete deleted nothing"
    );
    let counts = m.ok("api/counts");
    assert_eq!(
        (
            counts["counts"]["RUNNING"].as_u64(),
            counts["counts"]["FAILED"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let page = m.ok("api/executions?status=RUNNING&limit=1&order=id");
    assert_eq!(ids(&page["items"]), ["pg-0"]);
    let next = page["next_cursor"].as_str().unwrap();
    assert_eq!(
        ids(&m.ok(&format!("api/executions?status=RUNNING&order=id&cursor={next}"))["items"]),
        ["pg-2"]
    );
    assert_eq!(m.ok("api/executions/pg-1")["execution"]["status"], "FAILED");
    let token = m.ok("api/changes")["token"].clone();
    let mut exe = store.load("pg-1").unwrap().unwrap();
    store.save(&mut exe).unwrap();
    assert_ne!(m.ok("api/changes")["token"], token);
    drop(m);
    execstore_postgres::drop_store(&url, Some(&prefix)).expect("drop the test store");
}
