//! Crash safety of the workspace log on SQLite: a child process (`workspace_writer crash`)
//! commits batches (envelopes, the rule's progress at the new head and a run, in one
//! transaction) and is SIGKILLed at a random moment; a fresh storage on the file must see
//! every batch whole or not at all, every batch the child was told was committed, and an
//! intact file. The file is reused across trials, so each child resumes from what survived:
//! recovery is part of what is tested. A deliberately broken writer (`split`: the envelopes and
//! the progress in two transactions) must be caught, which shows the check can fail.
//!
//! `EXECSTORE_CRASH_TRIALS` (default 50) sets the number of trials, `EXECSTORE_CRASH_SEED`
//! replays a run (the seed is printed).

mod workspace_common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use execstore::workspace::ManualClock;
use execstore_e2e::spawn_ready;
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use workspace_common::crash;
use workspace_common::variety::at;

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

/// Opens a fresh storage on the file, checks it, and `PRAGMA integrity_check`s the file.
fn check(path: &Path) -> crash::Report {
    let options = SqliteWorkspaceOptions::new().clock(Arc::new(ManualClock::new(at(0.0))));
    let storage = SqliteWorkspaceStorage::open(path, options).expect("reopen after the kill");
    let mut report = crash::check(&storage);
    drop(storage);
    let conn = rusqlite::Connection::open(path).expect("open");
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    if integrity != "ok" {
        report.violations.push(format!("integrity_check: {integrity}"));
    }
    report
}

/// What a run of trials saw.
#[derive(Debug, Default)]
struct Trials {
    trials: u64,
    /// Trials whose child was still running when it was killed.
    killed_mid_work: u64,
    /// Trials in which the child committed something.
    progressed: u64,
    /// `committed` lines read (each checked to be in the log).
    acknowledged: u64,
    head: i64,
    violations: Vec<String>,
}

/// Up to `trials` kill-and-check trials on the file (stopping at the first violation).
fn run_trials(path: &Path, trials: u64, rng: &mut fastrand::Rng, split: bool) -> Trials {
    let mut t = Trials::default();
    let mut before = 0;
    for trial in 1..=trials {
        t.trials = trial;
        let mut command = Command::new(env!("CARGO_BIN_EXE_workspace_writer"));
        command.arg("crash").arg(path).arg(rng.u64(..).to_string());
        if split {
            command.arg("split");
        }
        let (mut child, stdout, stderr) = spawn_ready(command, "workspace_writer", trial);
        // A random moment: mostly once the writer has committed something (so a loaded
        // machine's slow start does not turn trials into kills before any work), now and then
        // at once.
        let mut early = Vec::new();
        if rng.u64(0..10) != 0 {
            if let Ok(line) = stdout.recv_timeout(Duration::from_secs(10)) {
                early.push(line);
            }
        }
        std::thread::sleep(Duration::from_micros(rng.u64(0..60_000)));
        if child.try_wait().expect("try_wait").is_none() {
            t.killed_mid_work += 1;
        }
        child.kill().expect("SIGKILL the writer");
        child.wait().expect("reap the writer");
        let err: Vec<String> = stderr.iter().collect();
        assert!(err.is_empty(), "trial {trial}: the writer failed: {err:?}");
        let acknowledged: Vec<i64> = early
            .into_iter()
            .chain(stdout.iter())
            .filter_map(|line| {
                line.strip_prefix("committed ")
                    .map(|n| n.parse().expect("a head"))
            })
            .collect();
        let report = check(path);
        t.head = report.head;
        t.violations
            .extend(report.violations.iter().map(|v| format!("trial {trial}: {v}")));
        for n in &acknowledged {
            if *n > report.head {
                t.violations.push(format!(
                    "trial {trial}: committed {n} was acknowledged but the head is {}",
                    report.head
                ));
            }
        }
        t.acknowledged += acknowledged.len() as u64;
        if report.head > before {
            t.progressed += 1;
        }
        before = report.head;
        if !t.violations.is_empty() {
            break;
        }
    }
    t
}

fn seed() -> u64 {
    let seed = env_u64("EXECSTORE_CRASH_SEED").unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("EXECSTORE_CRASH_SEED={seed}");
    seed
}

#[test]
fn killed_writers_leave_whole_batches() {
    let trials = env_u64("EXECSTORE_CRASH_TRIALS").unwrap_or(50);
    let mut rng = fastrand::Rng::with_seed(seed());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("workspace.db");
    let t = run_trials(&path, trials, &mut rng, false);
    eprintln!(
        "workspace crash trials: {} trials, {} killed mid-work, {} made progress, {} commits acknowledged, head {}",
        t.trials, t.killed_mid_work, t.progressed, t.acknowledged, t.head
    );
    assert!(t.violations.is_empty(), "{:#?}", t.violations);
    assert_eq!(t.trials, trials);
    assert!(
        t.killed_mid_work * 4 >= trials * 3 && t.progressed * 4 >= trials * 3,
        "too few trials killed a writer at work: {t:?}"
    );
}

/// The broken writer commits a batch in two transactions: some kill lands between them, and
/// the check says so.
#[test]
fn the_check_catches_a_split_batch() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("workspace.db");
    let t = run_trials(&path, 200, &mut rng, true);
    eprintln!(
        "split writer: caught after {} trials ({} made progress): {:?}",
        t.trials,
        t.progressed,
        t.violations.first()
    );
    assert!(
        t.violations
            .iter()
            .any(|v| v.contains("progress cursor") || v.contains("newest run")),
        "200 kills of a writer that commits batches in two halves left no half: {t:?}"
    );
}
