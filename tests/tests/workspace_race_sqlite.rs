//! Multi-process appends to one workspace on SQLite: four processes (`workspace_writer race`)
//! open the same new file at once and each commit `N` one-envelope transactions to the same
//! workspace. Afterwards the log is exactly `1..=4N`, each event id once, no seq twice, and
//! each process's envelopes in the order it appended them: transactions of different processes
//! serialize on SQLite's write lock, and no busy error reaches a writer.
//!
//! `EXECSTORE_WORKSPACE_RACE_APPENDS` (default 100) sets `N`.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use execstore::workspace::{LogQuery, WorkspaceRef, WorkspaceStorage};
use execstore_e2e::line_reader;
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};

const PROCESSES: usize = 4;

struct Racer {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

fn kill_all(racers: &mut [Racer]) {
    for r in racers.iter_mut() {
        let _ = r.child.kill();
        let _ = r.child.wait();
    }
}

fn appends() -> usize {
    std::env::var("EXECSTORE_WORKSPACE_RACE_APPENDS").map_or(100, |v| v.parse().expect("a number"))
}

/// Starts the racers on `path`, lets them go together and waits for all of them.
fn race(path: &Path, go: &Path, n: usize) -> Duration {
    let mut racers: Vec<Racer> = (0..PROCESSES)
        .map(|id| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_workspace_writer"))
                .arg("race")
                .arg(path)
                .arg(go)
                .arg(n.to_string())
                .arg(id.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn workspace_writer");
            let stdout = line_reader(child.stdout.take().expect("stdout"));
            let stderr = line_reader(child.stderr.take().expect("stderr"));
            Racer {
                child,
                stdout,
                stderr,
            }
        })
        .collect();
    for i in 0..PROCESSES {
        match racers[i].stdout.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if line == "ready" => {}
            other => {
                let err: Vec<String> = racers[i].stderr.try_iter().collect();
                kill_all(&mut racers);
                panic!("racer {i} did not get ready: {other:?}, stderr {err:?}");
            }
        }
    }
    let started = Instant::now();
    std::fs::write(go, b"go").expect("write the go file");
    for i in 0..PROCESSES {
        match racers[i].stdout.recv_timeout(Duration::from_secs(180)) {
            Ok(line) if line == format!("done {n}") => {}
            other => {
                let err: Vec<String> = racers[i].stderr.try_iter().collect();
                kill_all(&mut racers);
                panic!("racer {i} did not finish: {other:?}, stderr {err:?}");
            }
        }
    }
    let elapsed = started.elapsed();
    for (i, r) in racers.iter_mut().enumerate() {
        let status = r.child.wait().expect("wait");
        assert!(status.success(), "racer {i}: {status}");
    }
    elapsed
}

#[test]
fn processes_append_to_one_workspace() {
    let n = appends();
    let dir = tempfile::tempdir().expect("tempdir");
    // A new file, which the racers create and migrate at once.
    let path = dir.path().join("race.db");
    let elapsed = race(&path, &dir.path().join("go"), n);
    let storage = SqliteWorkspaceStorage::open(&path, SqliteWorkspaceOptions::new()).expect("open");
    let w = WorkspaceRef::new("race", "w");
    let log = storage.read(&w, &LogQuery::new()).expect("read");
    let total = (PROCESSES * n) as i64;
    eprintln!(
        "workspace race: {PROCESSES} processes x {n} appends in {elapsed:?} ({:.0} commits/s)",
        total as f64 / elapsed.as_secs_f64()
    );
    assert_eq!(
        log.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=total).collect::<Vec<_>>(),
        "seqs 1..={total}, each once"
    );
    assert_eq!(storage.head_seq(&w).expect("head"), total);
    let ids: HashSet<&str> = log.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), log.len(), "an event id twice");
    let mut by_writer: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for e in &log {
        let (writer, i) = e.id.split_once('-').expect("w<writer>-<i>");
        by_writer
            .entry(writer.to_owned())
            .or_default()
            .push(i.parse().expect("a number"));
    }
    assert_eq!(by_writer.len(), PROCESSES);
    for (writer, seen) in &by_writer {
        assert_eq!(
            seen,
            &(0..n).collect::<Vec<_>>(),
            "{writer}'s appends, in its order"
        );
    }
    // ts never decreases along the log.
    assert!(log.windows(2).all(|p| p[0].ts <= p[1].ts));
}
