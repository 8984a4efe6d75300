//! The workspace log under concurrency on PostgreSQL, across processes: four processes append
//! to one workspace at once (the log stays gap-free, every envelope is there once, each
//! process's in its own order); and transactions on different workspaces run in parallel
//! while those on one workspace wait for each other.
//!
//! `EXECSTORE_RACE_INCREMENTS` (default 150) sets the envelopes per process. Needs
//! `EXECSTORE_PG_URL`; without it the tests fail, unless `EXECSTORE_PG_OPTIONAL=1`.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use execstore::workspace::{Entry, LogQuery, WorkspaceRef, WorkspaceStorage};
use execstore_e2e::{line_reader, obj, pg};
use execstore_postgres::{drop_workspace_schema, PgWorkspaceOptions, PgWorkspaceStorage};
use serde_json::json;

const PROCESSES: usize = 4;

struct Worker {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(url: &str, schema: &str, args: &[&str]) -> Worker {
    let mut child = Command::new(env!("CARGO_BIN_EXE_workspace_pg_worker"))
        .args([url, schema])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn workspace_pg_worker");
    let stdout = line_reader(child.stdout.take().expect("stdout"));
    let stderr = line_reader(child.stderr.take().expect("stderr"));
    Worker {
        child,
        stdout,
        stderr,
    }
}

impl Worker {
    /// The next line, or a failure naming what the worker said on stderr.
    fn expect_line(&mut self, want: &str, within: Duration) -> Instant {
        match self.stdout.recv_timeout(within) {
            Ok(line) if line == want => Instant::now(),
            other => {
                let _ = self.child.kill();
                let err: Vec<String> = self.stderr.iter().collect();
                panic!("worker: wanted {want:?}, got {other:?}; stderr {err:?}");
            }
        }
    }
}

/// A fresh schema with the tables, and a storage on it.
fn fresh(url: &str, tag: &str) -> (String, PgWorkspaceStorage) {
    let schema = pg::fresh_prefix(tag);
    let s = PgWorkspaceStorage::open(url, PgWorkspaceOptions::new().schema(schema.clone())).expect("open");
    (schema, s)
}

#[test]
fn processes_appending_to_one_workspace_leave_a_gap_free_log() {
    let Some(url) = pg::url_or_skip("processes_appending_to_one_workspace_leave_a_gap_free_log") else {
        return;
    };
    let n: usize = std::env::var("EXECSTORE_RACE_INCREMENTS").map_or(150, |v| v.parse().expect("a number"));
    let (schema, s) = fresh(&url, "wsrace");
    let dir = tempfile::tempdir().expect("tempdir");
    let go = dir.path().join("go");
    let go = go.to_str().expect("a UTF-8 path");
    let tags: Vec<String> = (0..PROCESSES).map(|p| format!("p{p}")).collect();
    let n_text = n.to_string();
    let mut workers: Vec<Worker> = tags
        .iter()
        .map(|tag| spawn(&url, &schema, &["race", go, tag, &n_text]))
        .collect();
    for w in workers.iter_mut() {
        w.expect_line("ready", Duration::from_secs(30));
    }
    std::fs::write(go, b"go").expect("write the go file");
    let started = Instant::now();
    for w in workers.iter_mut() {
        w.expect_line(&format!("done {n}"), Duration::from_secs(120));
    }
    let elapsed = started.elapsed();
    for w in workers.iter_mut() {
        let status = w.child.wait().expect("wait");
        assert!(status.success(), "{status}");
    }
    let ws = WorkspaceRef::new("race", "w");
    let log = s.read(&ws, &LogQuery::new()).expect("read");
    let total = PROCESSES * n;
    assert_eq!(s.head_seq(&ws).unwrap(), total as i64);
    assert_eq!(
        log.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=total as i64).collect::<Vec<_>>(),
        "gap-free"
    );
    let mut seen: HashMap<&str, i64> = HashMap::new();
    for e in &log {
        assert!(seen.insert(&e.id, e.seq).is_none(), "{} twice", e.id);
    }
    let mut interleavings = 0;
    for tag in &tags {
        let mine: Vec<i64> = (0..n)
            .map(|j| {
                *seen
                    .get(format!("{tag}-{j}").as_str())
                    .unwrap_or_else(|| panic!("{tag}-{j} missing"))
            })
            .collect();
        assert!(
            mine.windows(2).all(|p| p[0] < p[1]),
            "{tag}'s envelopes out of its order"
        );
        interleavings += mine.windows(2).filter(|p| p[1] != p[0] + 1).count();
    }
    assert!(log.windows(2).all(|p| p[0].ts <= p[1].ts), "ts never decreases");
    let info = s.workspace_info(&ws).unwrap().unwrap();
    assert_eq!(
        (info.head_seq, info.head_ts),
        (total as i64, log.last().map(|e| e.ts))
    );
    eprintln!(
        "workspace race (postgres): {PROCESSES} processes x {n} envelopes into one workspace in {:.2} s, \
         {interleavings} switches between processes",
        elapsed.as_secs_f64()
    );
    assert!(interleavings > 0, "the processes did not overlap");
    drop(s);
    drop_workspace_schema(&url, &schema).expect("drop the schema");
}

fn append_one(s: &PgWorkspaceStorage, ws: &WorkspaceRef, id: &str) {
    let mut tx = s.begin(ws).expect("begin");
    tx.append(&[Entry::new(
        id,
        json!({"kind": "source", "name": "b"}),
        obj(json!({"type": "test:x"})),
    )])
    .expect("append");
    tx.commit().expect("commit");
}

/// Process A holds a transaction on workspace `one` for a second; meanwhile this process
/// commits 20 transactions on workspace `two`, well within that second, while its own
/// transaction on `one` waits until A has committed (and then sees A's append).
#[test]
fn workspaces_proceed_in_parallel_across_processes() {
    let Some(url) = pg::url_or_skip("workspaces_proceed_in_parallel_across_processes") else {
        return;
    };
    let (schema, s) = fresh(&url, "wspar");
    let (one, two) = (WorkspaceRef::new("par", "one"), WorkspaceRef::new("par", "two"));
    // Warm the pool and the statements.
    append_one(&s, &two, "warm");
    let mut a = spawn(&url, &schema, &["hold", "1000"]);
    a.expect_line("ready", Duration::from_secs(30));
    let holding = a.expect_line("holding", Duration::from_secs(30));
    let burst = Instant::now();
    for i in 0..20 {
        append_one(&s, &two, &format!("b{i}"));
    }
    let burst = burst.elapsed();
    assert!(
        a.stdout.try_recv().is_err(),
        "A committed before the burst on the other workspace ended ({burst:?})"
    );
    let asked = Instant::now();
    let mut tx = s.begin(&one).expect("begin on the held workspace");
    let waited = asked.elapsed();
    let head = tx.head_seq().unwrap();
    tx.append(&[Entry::new(
        "after-a",
        json!({"kind": "source", "name": "b"}),
        obj(json!({"type": "test:x"})),
    )])
    .unwrap();
    tx.commit().unwrap();
    let committed = a.expect_line("committed", Duration::from_secs(30));
    let held_for = committed.duration_since(holding);
    eprintln!(
        "parallel workspaces (postgres): 20 commits on another workspace in {:.1} ms while A held its \
         transaction; a transaction on A's workspace waited {:.0} ms (A held it {:.0} ms)",
        burst.as_secs_f64() * 1e3,
        waited.as_secs_f64() * 1e3,
        held_for.as_secs_f64() * 1e3
    );
    assert!(
        burst < Duration::from_millis(600),
        "20 commits took {burst:?}: they waited for A"
    );
    assert_eq!(head, 1, "it began after A's commit, and sees A's append");
    assert!(
        waited + burst >= Duration::from_millis(700),
        "the transaction on A's workspace did not wait for A: {waited:?}"
    );
    let ids: Vec<String> = s
        .read(&one, &LogQuery::new())
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, ["held", "after-a"]);
    assert_eq!(s.head_seq(&two).unwrap(), 21);
    let status = a.child.wait().expect("wait");
    assert!(status.success(), "{status}");
    drop(s);
    drop_workspace_schema(&url, &schema).expect("drop the schema");
}
