//! Several workers sharing the deferred work of one PostgreSQL store, as separate processes
//! (`relay_worker`): every outbox entry, spawn intent and timer is handed out exactly once
//! while four drain at once; a worker killed while holding a claim releases it, and its
//! entries go to the next; a waiting relay is woken by another process's commit.
//!
//! These need `EXECSTORE_PG_URL`; without it they fail, unless `EXECSTORE_PG_OPTIONAL=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use execstore::{Effects, Event, Execution, ExecutionStore, JsonObject};
use execstore_e2e::{line_reader, pg};
use execstore_postgres::{PgOptions, PgStore};

const WORKERS: usize = 4;

struct Worker {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

impl Worker {
    fn start(store_args: &[OsString], mode: &str, kind: &str, ms: u64) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_relay_worker"))
            .args(store_args)
            .args([mode, kind, &ms.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn relay_worker");
        let stdout = line_reader(child.stdout.take().expect("stdout"));
        let stderr = line_reader(child.stderr.take().expect("stderr"));
        Worker {
            child,
            stdout,
            stderr,
        }
    }

    /// The next line, or a panic with the worker's stderr after 60 s.
    fn line(&mut self) -> String {
        match self.stdout.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(e) => {
                let _ = self.child.kill();
                let err: Vec<String> = self.stderr.try_iter().collect();
                panic!("relay_worker said nothing more ({e}); stderr {err:?}");
            }
        }
    }

    /// Every line until `done`, and checks it exited cleanly.
    fn finish(mut self) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let line = self.line();
            if line == "done" {
                break;
            }
            lines.push(line);
        }
        let status = self.child.wait().expect("wait");
        assert!(
            status.success(),
            "relay_worker: {status}, stderr {:?}",
            self.stderr.try_iter().collect::<Vec<_>>()
        );
        lines
    }
}

/// A store on fresh tables, dropped by `cleanup`.
struct PgFixture {
    url: String,
    prefix: String,
    store: PgStore,
}

impl PgFixture {
    fn new(test: &str) -> Option<Self> {
        let url = pg::url_or_skip(test)?;
        let prefix = pg::fresh_prefix("relay");
        let store = PgStore::open(&url, PgOptions::new().prefix(prefix.clone())).expect("open");
        Some(PgFixture { url, prefix, store })
    }

    fn args(&self) -> Vec<OsString> {
        ["--pg", &self.url, "--prefix", &self.prefix]
            .iter()
            .map(OsString::from)
            .collect()
    }

    /// `n` steps on each of 10 executions, each step emitting one event, spawning one child
    /// and arming one timer: returns the expected keys of each kind.
    fn fill(&self, steps: usize) -> BTreeMap<&'static str, BTreeSet<String>> {
        let mut expected: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
        for e in 0..10 {
            let mut exe = Execution::new(format!("exe-{e}"), "relay");
            for n in 0..steps {
                let effects = Effects::new()
                    .emit(None, Event::new(format!("ev-{e}-{n}"), "Ping"))
                    .spawn(format!("child-{e}-{n}"), "root.r", JsonObject::new())
                    .schedule(format!("t{n}"), 1000.0 + n as f64);
                let seqs = self.store.commit(&mut exe, &effects).expect("commit");
                expected.entry("outbox").or_default().insert(seqs[0].to_string());
                expected
                    .entry("spawns")
                    .or_default()
                    .insert(format!("child-{e}-{n}"));
                expected
                    .entry("timers")
                    .or_default()
                    .insert(format!("exe-{e}/t{n}"));
            }
        }
        expected
    }

    fn cleanup(self) {
        drop(self.store);
        pg::drop_tables(&self.url, &self.prefix);
    }
}

fn keys(lines: &[String], tag: &str) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(tag).map(str::to_owned))
        .collect()
}

#[test]
fn four_workers_share_every_kind_of_work_exactly_once_on_postgres() {
    let Some(fx) = PgFixture::new("four_workers_share_every_kind_of_work_exactly_once_on_postgres") else {
        return;
    };
    let expected = fx.fill(30);
    for (kind, want) in &expected {
        let started = Instant::now();
        let workers: Vec<Worker> = (0..WORKERS)
            .map(|_| Worker::start(&fx.args(), "drain", kind, 2))
            .collect();
        let per_worker: Vec<Vec<String>> = workers.into_iter().map(|w| keys(&w.finish(), "got ")).collect();
        let counts: Vec<usize> = per_worker.iter().map(Vec::len).collect();
        let all: Vec<String> = per_worker.into_iter().flatten().collect();
        let distinct: BTreeSet<String> = all.iter().cloned().collect();
        eprintln!(
            "{kind}: {} entries, {WORKERS} workers handed {counts:?} ({} duplicates) in {:.2} s",
            want.len(),
            all.len() - distinct.len(),
            started.elapsed().as_secs_f64()
        );
        assert_eq!(all.len(), distinct.len(), "{kind}: an entry was handed out twice");
        assert_eq!(&distinct, want, "{kind}: every entry handed out");
    }
    assert!(fx.store.pending_outbox(None, 10).unwrap().is_empty());
    assert!(fx.store.pending_spawns(None, 10).unwrap().is_empty());
    assert!(fx.store.due_timers(1e12, None, 10).unwrap().is_empty());
    fx.cleanup();
}

#[test]
fn a_killed_worker_releases_its_claim_on_postgres() {
    let Some(fx) = PgFixture::new("a_killed_worker_releases_its_claim_on_postgres") else {
        return;
    };
    let expected = fx.fill(3);
    for kind in ["outbox", "timers", "spawns"] {
        let want = &expected[kind];
        let mut stalled = Worker::start(&fx.args(), "stall", kind, 0);
        let mut held = BTreeSet::new();
        loop {
            let line = stalled.line();
            match line.strip_prefix("claimed ") {
                Some(key) => held.insert(key.to_owned()),
                None if line == "holding" => break,
                None => panic!("unexpected line {line:?}"),
            };
        }
        assert_eq!(held.len(), 10, "{kind}: one batch claimed");
        // While the claim is held, another worker gets everything else, and none of it.
        let others: BTreeSet<String> = keys(&Worker::start(&fx.args(), "drain", kind, 0).finish(), "got ")
            .into_iter()
            .collect();
        assert!(
            others.is_disjoint(&held),
            "{kind}: held entries handed out: {:?}",
            others.intersection(&held)
        );
        assert_eq!(others.len(), want.len() - held.len(), "{kind}");
        // The holder dies without acking: its entries go to the next worker.
        stalled.child.kill().expect("SIGKILL");
        stalled.child.wait().expect("wait");
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut after = BTreeSet::new();
        while after.len() < held.len() && Instant::now() < deadline {
            // The server notices the dead session shortly; until then its claim stands.
            after.extend(keys(
                &Worker::start(&fx.args(), "drain", kind, 0).finish(),
                "got ",
            ));
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            after, held,
            "{kind}: the dead worker's entries are delivered after it"
        );
    }
    fx.cleanup();
}

#[test]
fn a_waiting_relay_is_woken_by_another_process_on_postgres() {
    let Some(fx) = PgFixture::new("a_waiting_relay_is_woken_by_another_process_on_postgres") else {
        return;
    };
    // Quiet tables: the wait runs out.
    let mut quiet = Worker::start(&fx.args(), "wait", "outbox", 300);
    assert_eq!(quiet.line(), "listening");
    let line = quiet.line();
    assert!(line.starts_with("woken false "), "{line}");

    for kind in ["outbox", "spawns", "timers"] {
        let mut waiter = Worker::start(&fx.args(), "wait", kind, 60_000);
        assert_eq!(waiter.line(), "listening");
        std::thread::sleep(Duration::from_millis(100));
        let mut exe = fx
            .store
            .load("waker")
            .unwrap()
            .unwrap_or_else(|| Execution::new("waker", "relay"));
        let effects = match kind {
            "outbox" => Effects::new().emit(None, Event::new(format!("wake-{}", exe.version), "Ping")),
            "spawns" => Effects::new().spawn(format!("wake-{}", exe.version), "root.r", JsonObject::new()),
            _ => Effects::new().schedule("t", 5.0),
        };
        let committed = Instant::now();
        fx.store.commit(&mut exe, &effects).unwrap();
        let line = waiter.line();
        let latency = committed.elapsed();
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts[..2], ["woken", "true"], "{kind}: {line}");
        eprintln!(
            "{kind}: woken {:.1} ms after the commit returned",
            latency.as_secs_f64() * 1000.0
        );
        assert!(waiter.child.wait().expect("wait").success());
    }
    fx.cleanup();
}
