//! The `execstore` binary end to end: a demo store written to a temporary directory, then
//! read back through every command.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use common::execstore;
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

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// Runs a command that must succeed and parses its JSON output.
fn json(dir: &Path, args: &[&str]) -> Value {
    let out = execstore(dir, args);
    assert!(out.status.success(), "{args:?} failed: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&out)))
}

/// A demo store of `n` executions in a fresh directory, and the demo's own JSON summary.
struct Demo {
    dir: TempDir,
    db: PathBuf,
    summary: Value,
}

impl Demo {
    fn new(n: u32, seed: u64) -> Demo {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("demo.db");
        let summary = json(
            dir.path(),
            &[
                "demo",
                "--no-serve",
                "--db",
                db.to_str().unwrap(),
                "--executions",
                &n.to_string(),
                "--seed",
                &seed.to_string(),
                "--json",
            ],
        );
        Demo { dir, db, summary }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut all = vec!["--db", self.db.to_str().unwrap()];
        all.extend_from_slice(args);
        execstore(self.dir.path(), &all)
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--db", self.db.to_str().unwrap(), "--json"];
        all.extend_from_slice(args);
        json(self.dir.path(), &all)
    }

    fn count(&self, key: &str) -> u64 {
        self.summary[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key} in {}", self.summary))
    }

    fn all(&self) -> Vec<Value> {
        let page = self.json(&["list", "--all"]);
        assert_eq!(page["next_cursor"], Value::Null);
        page["items"].as_array().unwrap().clone()
    }
}

fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn demo_writes_a_file_and_prints_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let out = execstore(dir.path(), &["demo", "--no-serve", "--executions", "60"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = dir.path().join("execstore-demo.db");
    assert!(db.is_file(), "the default demo file was not written");
    let text = stdout(&out);
    assert!(text.contains("executions     60 ("), "{text}");
    for status in STATUSES {
        assert!(text.contains(&format!(" {status} ")), "{status} missing: {text}");
    }
    for def in ["orders", "payments", "fulfilment"] {
        assert!(text.contains(def), "{def} missing: {text}");
    }
    for line in [
        "trace steps",
        "undelivered events",
        "armed (",
        "pending child creations",
    ] {
        assert!(text.contains(line), "{line} missing: {text}");
    }
    assert!(text.contains(" list --db execstore-demo.db\n"), "{text}");

    // The JSON summary adds up and every kind of record is there.
    let demo = Demo::new(150, 9);
    assert_eq!(demo.count("executions"), 150);
    let by_status = demo.summary["by_status"].as_object().unwrap();
    assert_eq!(
        by_status.keys().collect::<Vec<_>>(),
        STATUSES.iter().collect::<Vec<_>>()
    );
    assert!(
        by_status.values().all(|n| n.as_u64().unwrap() > 0),
        "{by_status:?}"
    );
    assert_eq!(by_status.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), 150);
    let by_def = demo.summary["by_definition"].as_object().unwrap();
    assert_eq!(
        by_def.keys().collect::<Vec<_>>(),
        ["fulfilment", "orders", "payments"]
    );
    assert!(demo.count("children") > 0 && demo.count("roots") + demo.count("children") == 150);
    for key in ["trace_steps", "outbox", "timers", "spawns"] {
        assert!(demo.count(key) > 0, "no {key}: {}", demo.summary);
    }
}

#[test]
fn list_all_returns_every_execution_the_demo_wrote() {
    let demo = Demo::new(120, 1);
    let items = demo.all();
    assert_eq!(items.len() as u64, demo.count("executions"));
    let ids = ids(&items);
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted, "not ordered by id, or repeated");
    // The per-status counts of the listing are the demo's.
    let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
    for item in &items {
        *by_status
            .entry(item["status"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for status in STATUSES {
        assert_eq!(
            by_status.get(status).copied().unwrap_or(0),
            demo.summary["by_status"][status]
        );
    }
    // Children name their parent and extend its id.
    let children: Vec<&Value> = items.iter().filter(|i| !i["parent_id"].is_null()).collect();
    assert_eq!(children.len() as u64, demo.count("children"));
    for child in children {
        let parent = child["parent_id"].as_str().unwrap();
        assert!(child["id"].as_str().unwrap().starts_with(&format!("{parent}:")));
    }
    // The default page is 100 and says where to go on.
    let first = demo.json(&["list"]);
    assert_eq!(first["items"].as_array().unwrap().len(), 100);
    assert!(first["next_cursor"].is_string());
    // --roots-only and --definition filter.
    let roots = demo.json(&["list", "--all", "--roots-only", "--definition", "fulfilment"]);
    let roots = roots["items"].as_array().unwrap();
    assert!(!roots.is_empty());
    assert!(roots
        .iter()
        .all(|i| i["parent_id"].is_null() && i["definition_id"] == "fulfilment"));
}

#[test]
fn status_filter_returns_only_those_statuses() {
    let demo = Demo::new(100, 2);
    let failed = demo.json(&["list", "--all", "--status", "failed"]);
    let failed = failed["items"].as_array().unwrap();
    assert_eq!(
        failed.len() as u64,
        demo.summary["by_status"]["FAILED"].as_u64().unwrap()
    );
    assert!(failed.iter().all(|i| i["status"] == "FAILED"));

    let some = demo.json(&[
        "list",
        "--all",
        "--status",
        "done,Cancelled",
        "--status",
        "SUSPENDED",
    ]);
    let some = some["items"].as_array().unwrap();
    let expected: u64 = ["DONE", "CANCELLED", "SUSPENDED"]
        .iter()
        .map(|s| demo.summary["by_status"][s].as_u64().unwrap())
        .sum();
    assert_eq!(some.len() as u64, expected);
    let seen: BTreeSet<&str> = some.iter().map(|i| i["status"].as_str().unwrap()).collect();
    assert_eq!(seen, BTreeSet::from(["CANCELLED", "DONE", "SUSPENDED"]));

    // An unknown status is a usage error.
    let out = demo.run(&["list", "--status", "asleep"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("PENDING, RUNNING"), "{}", stderr(&out));
}

#[test]
fn paging_by_seven_reassembles_the_whole_listing() {
    let demo = Demo::new(60, 3);
    let all = ids(&demo.all());
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut args = vec!["list", "--limit", "7"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = demo.json(&args);
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 7);
        paged.extend(ids(items));
        pages += 1;
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < 100, "the cursor does not advance");
    }
    assert_eq!(paged, all);
    assert_eq!(pages, all.len().div_ceil(7));

    // The table view says how to get the next page.
    let text = stdout(&demo.run(&["list", "--limit", "7"]));
    assert!(text.starts_with("ID "), "{text}");
    assert_eq!(text.lines().count(), 1 + 7 + 1, "{text}");
    assert!(text.contains("7 shown; next page: --cursor "), "{text}");
}

#[test]
fn show_prints_a_listed_execution() {
    let demo = Demo::new(40, 4);
    let items = demo.all();
    let parent = items
        .iter()
        .find(|i| i["parent_id"].is_string())
        .map(|c| c["parent_id"].as_str().unwrap().to_owned())
        .expect("a child");
    let out = demo.run(&["--json", "show", &parent]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let exe: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(exe["id"], parent.as_str());
    let children = exe["children"].as_object().unwrap();
    assert_eq!(children.len(), 3);
    for (cid, state) in children {
        assert!(cid.starts_with(&format!("{parent}:fulfilment.packing.")), "{cid}");
        assert!(state["root_path"]
            .as_str()
            .unwrap()
            .starts_with("fulfilment.packing."));
        assert!(state["finished"].is_boolean());
    }
    // harel's field order.
    let keys: Vec<&String> = exe.as_object().unwrap().keys().collect();
    assert_eq!(keys[..4], ["id", "definition_id", "definition_fqn", "root_path"]);

    let text = stdout(&demo.run(&["show", &parent]));
    assert!(text.starts_with(&format!("id           {parent}\n")), "{text}");
    assert!(text.contains("\nchildren     3 ("), "{text}");
    assert!(text.contains("\ncontext:\n{"), "{text}");
}

#[test]
fn show_of_an_unknown_id_fails_with_not_found() {
    let demo = Demo::new(20, 5);
    for args in [
        &["show", "no-such-id"][..],
        &["--json", "show", "no-such-id"],
        &["trace", "no-such-id"],
    ] {
        let out = demo.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(
            stderr(&out),
            "error: execution no-such-id not found\n",
            "{args:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn trace_lists_steps_in_index_order() {
    let demo = Demo::new(60, 6);
    let done = demo.json(&["list", "--all", "--status", "done", "--roots-only"]);
    let id = done["items"][0]["id"].as_str().unwrap().to_owned();
    let exe = demo.json(&["show", &id]);
    let steps = demo.json(&["trace", &id]);
    let steps = steps.as_array().unwrap();
    assert!(steps.len() >= 3, "{steps:?}");
    let indexes: Vec<i64> = steps.iter().map(|s| s["index"].as_i64().unwrap()).collect();
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "{indexes:?}");
    // harel's trace-step shape, each step starting where the previous one ended.
    assert_eq!(steps[0]["event_kind"], "Start");
    assert_eq!(steps[0]["from_path"], Value::Null);
    for step in steps {
        assert!(step["event_kind"].is_string() && step["event_data"].is_object());
        assert!(step["actions"].is_array() && step["guards"].is_array());
        assert!(
            step["context_out"].is_object() && step["timestamp"].is_f64(),
            "{step}"
        );
    }
    for pair in steps.windows(2) {
        assert_eq!(pair[1]["from_path"], pair[0]["to_path"]);
        assert!(pair[0]["timestamp"].as_f64() <= pair[1]["timestamp"].as_f64());
    }
    assert_eq!(steps.last().unwrap()["to_path"], exe["active_path"]);
    assert_eq!(steps.last().unwrap()["context_out"], exe["context"]);

    let text = stdout(&demo.run(&["trace", &id]));
    assert!(text.starts_with("INDEX  EVENT"), "{text}");
    assert_eq!(text.lines().count(), 1 + steps.len(), "{text}");
}

#[test]
fn outbox_timers_and_spawns_hold_the_demo_records() {
    let demo = Demo::new(80, 7);
    let outbox = demo.json(&["outbox"]);
    let outbox = outbox.as_array().unwrap();
    assert_eq!(outbox.len() as u64, demo.count("outbox"));
    assert!(!outbox.is_empty());
    for e in outbox {
        assert!(
            e["seq"].as_i64().unwrap() > 0 && e["event"]["id"].is_string() && e["event"]["kind"].is_string()
        );
    }
    let seqs: Vec<i64> = outbox.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    // --after and --limit page the outbox.
    let rest = demo.json(&["outbox", "--after", &seqs[0].to_string(), "--limit", "2"]);
    let rest: Vec<i64> = rest
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(rest, seqs[1..].iter().take(2).copied().collect::<Vec<_>>());

    let all = demo.json(&["timers"]);
    let all = all.as_array().unwrap();
    assert_eq!(all.len() as u64, demo.count("timers"));
    let bound = now();
    let due = demo.json(&["timers", "--due-before", &bound.to_string()]);
    let due = due.as_array().unwrap();
    assert!(!due.is_empty(), "no timer is due");
    assert!(due.len() < all.len(), "no timer is in the future");
    for t in due {
        assert!(t["fire_at"].as_f64().unwrap() <= bound, "{t}");
        assert!(t["execution_id"].is_string() && t["path"].is_string());
    }

    let spawns = demo.json(&["spawns"]);
    let spawns = spawns.as_array().unwrap();
    assert_eq!(spawns.len() as u64, demo.count("spawns"));
    assert!(!spawns.is_empty());
    for s in spawns {
        let parent = s["parent_id"].as_str().unwrap();
        assert!(s["child_id"].as_str().unwrap().starts_with(&format!("{parent}:")));
        assert!(s["context"].is_object());
    }

    for (args, header) in [
        (&["outbox"][..], "SEQ  TARGET"),
        (&["timers"], "EXECUTION"),
        (&["spawns"], "SEQ  PARENT"),
    ] {
        let text = stdout(&demo.run(args));
        assert!(text.starts_with(header), "{args:?}: {text}");
    }
}

/// `timers` without a bound lists every armed timer, as harel's `due_timers(inf)` does:
/// those past the year 9999 too (a harel file with timers at 2e12 once showed 39 of 51).
#[test]
fn timers_without_a_bound_include_the_far_future() {
    use execstore::{Effects, Execution, ExecutionStore};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("far.db");
    {
        let store =
            execstore_sqlite::SqliteStore::open(&db, execstore_sqlite::SqliteOptions::new().prefix("harel"))
                .unwrap();
        let mut exe = Execution::new("far-1", "orders");
        let fx = Effects::new()
            .schedule("order.soon", 1_700_000_000.0)
            .schedule("order.in_2e12", 2e12)
            .schedule("order.in_1e300", 1e300);
        store.commit(&mut exe, &fx).unwrap();
    }
    let db = db.to_str().unwrap();
    let due = json(dir.path(), &["--db", db, "--prefix", "harel", "timers", "--json"]);
    let fire_at: Vec<f64> = due
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["fire_at"].as_f64().unwrap())
        .collect();
    assert_eq!(fire_at, [1_700_000_000.0, 2e12, 1e300]);
    let out = execstore(dir.path(), &["--db", db, "--prefix", "harel", "timers"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("order.in_1e300") && text.contains("3 shown"),
        "{text}"
    );
}

#[test]
fn a_bad_cursor_is_refused() {
    let demo = Demo::new(20, 8);
    let out = demo.run(&["list", "--cursor", "garbage"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.starts_with("error: ") && err.contains("cursor"), "{err}");
    assert!(out.stdout.is_empty());
}

/// A URL whose scheme no backend answers is refused naming the known ones (not taken for a
/// file name), for the read and the write commands alike, and nothing is created.
#[test]
fn an_unknown_url_scheme_is_refused_naming_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["list"][..],
        &["workspaces"],
        &["purge-finished", "--older-than", "0s"],
    ] {
        let mut all = vec!["--db", "mysql://app@db/app"];
        all.extend_from_slice(args);
        let out = execstore(dir.path(), &all);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("\"mysql\""), "{args:?}: {err}");
        for known in ["memory:", "sqlite:", "postgres://", "postgresql://"] {
            assert!(err.contains(known), "{args:?}: {known} in {err}");
        }
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A URL the registry takes but that cannot name a store is refused at once, naming what was
/// given: `memory:` for a read (nothing to read), `postgres://` without a host (bad input,
/// not a retryable failure after the connect timeout).
#[test]
fn a_url_that_names_no_store_is_refused_as_given() {
    let dir = tempfile::tempdir().unwrap();
    for (url, says) in [("memory:", "in-memory"), ("postgres://", "names no host")] {
        let started = std::time::Instant::now();
        let out = execstore(dir.path(), &["--db", url, "list"]);
        assert_eq!(out.status.code(), Some(1), "{url}");
        let err = stderr(&out);
        assert!(err.contains(&format!("store {url}:")), "{url}: {err}");
        assert!(err.contains(says), "{url}: {err}");
        assert!(!err.contains("retryable"), "{url}: {err}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(4),
            "{url}: waited"
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_missing_store_file_is_an_error_and_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.db");
    let out = execstore(dir.path(), &["--db", missing.to_str().unwrap(), "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: no store at ") && err.contains("nope.db"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "something was created"
    );

    // No --db at all is a usage error.
    let out = execstore(dir.path(), &["list"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--db"), "{}", stderr(&out));
}

#[test]
fn demo_refuses_an_existing_file_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mine.db");
    std::fs::write(&db, "precious").unwrap();
    let out = execstore(dir.path(), &["demo", "--no-serve", "--db", "mine.db"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already exists; pass --force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "precious");

    let out = execstore(
        dir.path(),
        &[
            "demo",
            "--no-serve",
            "--db",
            "mine.db",
            "--force",
            "--executions",
            "25",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let page = json(dir.path(), &["--db", "mine.db", "--json", "list", "--all"]);
    assert_eq!(page["items"].as_array().unwrap().len(), 25);
}

#[test]
fn the_environment_names_the_store_but_never_the_demo_file() {
    let demo = Demo::new(20, 10);
    let listed = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(["--json", "list", "--all"])
        .current_dir(demo.dir.path())
        .env("EXECSTORE_DB", &demo.db)
        .output()
        .unwrap();
    assert!(listed.status.success(), "{}", stderr(&listed));
    let page: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(page["items"].as_array().unwrap().len(), 20);

    // `demo --force` with EXECSTORE_DB set writes the default file, not the store it names.
    let before = std::fs::read(&demo.db).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(["demo", "--no-serve", "--force", "--executions", "20"])
        .current_dir(demo.dir.path())
        .env("EXECSTORE_DB", &demo.db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(demo.dir.path().join("execstore-demo.db").is_file());
    assert_eq!(std::fs::read(&demo.db).unwrap(), before);
}

#[test]
fn the_same_seed_writes_the_same_store() {
    let a = Demo::new(40, 77);
    let b = Demo::new(40, 77);
    assert_eq!(a.summary["by_status"], b.summary["by_status"]);
    assert_eq!(ids(&a.all()), ids(&b.all()));
    let c = Demo::new(40, 78);
    assert_ne!(ids(&a.all()), ids(&c.all()));
}

#[test]
fn reads_never_change_the_file_and_a_wrong_prefix_says_so() {
    let demo = Demo::new(40, 3);
    let bytes = |p: &Path| std::fs::read(p).unwrap_or_default();
    let wal = PathBuf::from(format!("{}-wal", demo.db.display()));
    let before = (bytes(&demo.db), bytes(&wal));
    for args in [&["list"][..], &["outbox"], &["timers"], &["spawns"]] {
        assert!(demo.run(args).status.success(), "{args:?}");
    }
    let out = demo.run(&["--prefix", "harel", "list"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--prefix"), "{}", stderr(&out));
    assert_eq!(
        (bytes(&demo.db), bytes(&wal)),
        before,
        "reading changed the store file"
    );
}
