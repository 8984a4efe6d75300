//! Several workers sharing the deferred work of one PostgreSQL store, as separate processes
//! (`relay_worker`): every outbox entry, spawn intent and timer is handed out exactly once
//! while four drain at once (released together from a barrier, each gets a share, and their
//! claims overlap in time); with claims that take no lock (a test-only option) the same
//! check sees entries handed out twice, so it can fail; a worker killed while holding a claim
//! releases it, and its entries go to the next; a waiting relay is woken by another
//! process's commit.
//!
//! These need `EXECSTORE_PG_URL`; without it they fail, unless `EXECSTORE_PG_OPTIONAL=1`.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use execstore::{
    executions::{Event, JsonObject},
    Effects, Execution, ExecutionStore,
};
use execstore_e2e::{line_reader, pg};
use execstore_postgres::{PgOptions, PgStore};

const WORKERS: usize = 4;
/// How long a draining worker holds each batch it claimed (simulated delivery), in ms.
const HOLD_MS: u64 = 5;
/// The relay_worker's switch to claims that take no lock (`PgOptions::unlocked_claims`).
const UNLOCKED: &str = "EXECSTORE_RELAY_UNLOCKED_CLAIMS";
/// The fewest entries each of the workers draining at once must be handed: two batches of
/// the 300 of each kind (a fair share is 75; released together they get 60 to 100 each).
const MIN_SHARE: usize = 20;

struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

impl Worker {
    fn start(store_args: &[OsString], mode: &str, kind: &str, ms: u64) -> Worker {
        Worker::start_with(store_args, mode, kind, ms, false)
    }

    /// A worker, with claims that take no lock if `unlocked`.
    fn start_with(store_args: &[OsString], mode: &str, kind: &str, ms: u64, unlocked: bool) -> Worker {
        let mut command = Command::new(env!("CARGO_BIN_EXE_relay_worker"));
        if unlocked {
            command.env(UNLOCKED, "1");
        } else {
            command.env_remove(UNLOCKED);
        }
        let mut child = command
            .args(store_args)
            .args([mode, kind, &ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn relay_worker");
        let stdin = child.stdin.take();
        let stdout = line_reader(child.stdout.take().expect("stdout"));
        let stderr = line_reader(child.stderr.take().expect("stderr"));
        Worker {
            child,
            stdin,
            stdout,
            stderr,
        }
    }

    /// A `drain` worker, started and released at once (no barrier with others).
    fn drain(store_args: &[OsString], kind: &str, ms: u64) -> Worker {
        let mut worker = Worker::start(store_args, "drain", kind, ms);
        worker.ready();
        worker.go();
        worker
    }

    /// Waits until a `drain` worker has its store open and waits at the barrier.
    fn ready(&mut self) {
        let line = self.line();
        assert_eq!(line, "ready", "relay_worker's first line");
    }

    /// Releases a `drain` worker from the barrier.
    fn go(&mut self) {
        let mut stdin = self.stdin.take().expect("released once");
        stdin.write_all(b"go\n").expect("release relay_worker");
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

/// The `held <from> <to>` lines: when a worker held each of its batches (µs since the epoch).
fn held(lines: &[String]) -> Vec<(u128, u128)> {
    keys(lines, "held ")
        .iter()
        .map(|l| {
            let (from, to) = l.split_once(' ').expect("held <from> <to>");
            (from.parse().expect("from"), to.parse().expect("to"))
        })
        .collect()
}

/// What `WORKERS` workers, released together, were handed of one kind of work.
struct Shared {
    kind: String,
    /// The keys handed to each worker, in order.
    per_worker: Vec<Vec<String>>,
    /// When each worker held each of its batches.
    held: Vec<Vec<(u128, u128)>>,
    seconds: f64,
}

impl Shared {
    fn all(&self) -> Vec<&String> {
        self.per_worker.iter().flatten().collect()
    }

    fn distinct(&self) -> BTreeSet<String> {
        self.all().into_iter().cloned().collect()
    }

    /// How many hand-outs repeated an entry already handed out.
    fn duplicates(&self) -> usize {
        self.all().len() - self.distinct().len()
    }

    /// How many pairs of batches, held by two different workers, were held at once.
    fn overlaps(&self) -> usize {
        let mut n = 0;
        for (a, mine) in self.held.iter().enumerate() {
            for theirs in &self.held[a + 1..] {
                for &(from, to) in mine {
                    n += theirs.iter().filter(|&&(f, t)| f < to && from < t).count();
                }
            }
        }
        n
    }

    /// The exactly-once check: every entry of `want` handed out, none twice.
    fn exactly_once(&self, want: &BTreeSet<String>) -> Result<(), String> {
        let distinct = self.distinct();
        if self.duplicates() > 0 {
            let mut seen = BTreeSet::new();
            let twice: Vec<&String> = self
                .all()
                .into_iter()
                .filter(|k| !seen.insert(*k))
                .take(5)
                .collect();
            return Err(format!(
                "{}: {} entries handed out twice, e.g. {twice:?}",
                self.kind,
                self.duplicates()
            ));
        }
        if &distinct != want {
            return Err(format!(
                "{}: {} of {} entries handed out",
                self.kind,
                distinct.len(),
                want.len()
            ));
        }
        Ok(())
    }

    fn report(&self) {
        eprintln!(
            "{}: {WORKERS} workers handed {:?} ({} duplicates, {} overlapping batch pairs) in {:.2} s",
            self.kind,
            self.per_worker.iter().map(Vec::len).collect::<Vec<_>>(),
            self.duplicates(),
            self.overlaps(),
            self.seconds
        );
    }
}

/// Starts `WORKERS` drain workers of `kind`, waits until every one has its store open, then
/// releases them all at once and collects what each was handed.
fn share(fx: &PgFixture, kind: &str, unlocked: bool) -> Shared {
    let mut workers: Vec<Worker> = (0..WORKERS)
        .map(|_| Worker::start_with(&fx.args(), "drain", kind, HOLD_MS, unlocked))
        .collect();
    for worker in &mut workers {
        worker.ready();
    }
    let started = Instant::now();
    for worker in &mut workers {
        worker.go();
    }
    let lines: Vec<Vec<String>> = workers.into_iter().map(Worker::finish).collect();
    Shared {
        kind: kind.to_owned(),
        per_worker: lines.iter().map(|l| keys(l, "got ")).collect(),
        held: lines.iter().map(|l| held(l)).collect(),
        seconds: started.elapsed().as_secs_f64(),
    }
}

#[test]
fn four_workers_share_every_kind_of_work_exactly_once_on_postgres() {
    let Some(fx) = PgFixture::new("four_workers_share_every_kind_of_work_exactly_once_on_postgres") else {
        return;
    };
    let expected = fx.fill(30);
    for (kind, want) in &expected {
        let shared = share(&fx, kind, false);
        shared.report();
        if let Err(e) = shared.exactly_once(want) {
            panic!("{e}");
        }
        // They ran at the same time: each was handed a share (a worker that drained
        // everything alone would pass the check above), and claims of different workers
        // were held at once.
        for (w, got) in shared.per_worker.iter().enumerate() {
            assert!(
                got.len() >= MIN_SHARE,
                "{kind}: worker {w} was handed {} of {} entries (at least {MIN_SHARE} expected)",
                got.len(),
                want.len()
            );
        }
        assert!(
            shared.overlaps() > 0,
            "{kind}: no two workers ever held a batch at the same time"
        );
    }
    assert!(fx.store.pending_outbox(None, 10).unwrap().is_empty());
    assert!(fx.store.pending_spawns(None, 10).unwrap().is_empty());
    assert!(fx.store.due_timers(1e12, None, 10).unwrap().is_empty());
    fx.cleanup();
}

/// The same run with claims that take no lock (what a relay built on `pending_outbox` and
/// acks would do): the exactly-once check above fails on every kind of work, so its passing
/// means something. (Removing only `SKIP LOCKED` would not do: `FOR UPDATE` alone makes the
/// workers queue behind one another's row locks, and a claim that waited skips the rows the
/// holder deleted; they are never handed out twice, only one claim at a time.)
#[test]
fn claims_without_locks_hand_entries_out_twice_on_postgres() {
    let Some(fx) = PgFixture::new("claims_without_locks_hand_entries_out_twice_on_postgres") else {
        return;
    };
    let expected = fx.fill(30);
    for (kind, want) in &expected {
        let shared = share(&fx, kind, true);
        shared.report();
        match shared.exactly_once(want) {
            Err(caught) => eprintln!("{kind}: caught: {caught}"),
            Ok(()) => {
                panic!("{kind}: {WORKERS} workers claiming without locks were each handed distinct entries")
            }
        }
        assert!(shared.duplicates() > 0, "{kind}: caught, but not for duplicates");
        // Still at least once: nothing is lost, some entries are handed out twice.
        let distinct = shared.distinct();
        assert!(distinct.is_subset(want), "{kind}: unknown entries handed out");
    }
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
        let others: BTreeSet<String> = keys(&Worker::drain(&fx.args(), kind, 0).finish(), "got ")
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
            after.extend(keys(&Worker::drain(&fx.args(), kind, 0).finish(), "got "));
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
