//! Multi-process CAS race: four processes increment the counters of the same two executions
//! in one SQLite file (or on one PostgreSQL server) at the same time, each retrying on a
//! conflict. No increment may be lost and no other error (a busy or locked database, a
//! serialization failure) may reach the caller: every lost race is a `Conflict`.
//!
//! `EXECSTORE_RACE_INCREMENTS` (default 150) sets the increments per process. The PostgreSQL
//! race needs `EXECSTORE_PG_URL`; without it it fails, unless `EXECSTORE_PG_OPTIONAL=1`
//! (then it prints SKIPPED).

use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use execstore::ExecutionStore;
use execstore_e2e::{ensure_counter, line_reader, pg, RACE_IDS};
use execstore_postgres::{PgOptions, PgStore};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::Value;

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

fn increments_per_process() -> i64 {
    std::env::var("EXECSTORE_RACE_INCREMENTS").map_or(150, |v| v.parse().expect("a number"))
}

#[test]
fn cas_race_between_processes() {
    let increments = increments_per_process();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("race.db");
    let go = dir.path().join("go");
    {
        let store = SqliteStore::open(&path, SqliteOptions::new()).expect("open");
        for id in RACE_IDS {
            ensure_counter(&store, id).expect("create");
        }
    }
    let (conflicts, elapsed) = race(&[path.clone().into_os_string()], &go, increments);
    let store = SqliteStore::open(&path, SqliteOptions::new()).expect("reopen");
    check_totals("sqlite", &store, increments, &conflicts, elapsed);
}

/// The same race on a real PostgreSQL server, the four processes each with a pool of their
/// own, on tables under a fresh prefix (dropped at the end).
#[test]
fn cas_race_between_processes_on_postgres() {
    let Some(url) = pg::url_or_skip("cas_race_between_processes_on_postgres") else {
        return;
    };
    let increments = increments_per_process();
    let prefix = pg::fresh_prefix("race");
    let dir = tempfile::tempdir().expect("tempdir");
    let go = dir.path().join("go");
    let store = PgStore::open(&url, PgOptions::new().prefix(prefix.clone())).expect("open");
    for id in RACE_IDS {
        ensure_counter(&store, id).expect("create");
    }
    let args: Vec<OsString> = ["--pg", &url, "--prefix", &prefix]
        .iter()
        .map(OsString::from)
        .collect();
    let (conflicts, elapsed) = race(&args, &go, increments);
    check_totals("postgres", &store, increments, &conflicts, elapsed);
    drop(store);
    pg::drop_tables(&url, &prefix);
}

/// Runs `PROCESSES` racers on the store `store_args` names, started together by `go`, and
/// returns each one's conflict count and how long the race took. Panics if a racer fails
/// (any error but a conflict ends a racer) or does not finish in 120 s.
fn race(store_args: &[OsString], go: &Path, increments: i64) -> (Vec<u64>, Duration) {
    let mut racers: Vec<Racer> = (0..PROCESSES)
        .map(|_| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_cas_racer"))
                .args(store_args)
                .arg(go)
                .arg(increments.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn cas_racer");
            let stdout = line_reader(child.stdout.take().expect("stdout"));
            let stderr = line_reader(child.stderr.take().expect("stderr"));
            Racer {
                child,
                stdout,
                stderr,
            }
        })
        .collect();
    let mut not_ready = None;
    for (i, r) in racers.iter().enumerate() {
        match r.stdout.recv_timeout(Duration::from_secs(30)) {
            Ok(line) if line == "ready" => {}
            other => {
                let err: Vec<String> = r.stderr.try_iter().collect();
                not_ready = Some(format!("racer {i} did not get ready: {other:?}, stderr {err:?}"));
                break;
            }
        }
    }
    if let Some(why) = not_ready {
        kill_all(&mut racers);
        panic!("{why}");
    }
    // All have the store open: start them together.
    std::fs::write(go, b"go").expect("write the go file");
    let started = Instant::now();
    let deadline = started + Duration::from_secs(120);
    loop {
        let mut running = 0;
        for r in racers.iter_mut() {
            if r.child.try_wait().expect("try_wait").is_none() {
                running += 1;
            }
        }
        if running == 0 {
            break;
        }
        if Instant::now() > deadline {
            kill_all(&mut racers);
            panic!("{running} racers still running after 120 s: killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = started.elapsed();

    let mut conflicts = Vec::new();
    let mut failures = Vec::new();
    for (i, r) in racers.iter_mut().enumerate() {
        let status = r.child.wait().expect("wait");
        // The reader threads see EOF once the child is gone; collect everything it printed.
        let out: Vec<String> = r.stdout.iter().collect();
        let err: Vec<String> = r.stderr.iter().collect();
        if !status.success() {
            failures.push(format!("racer {i}: {status}, stdout {out:?}, stderr {err:?}"));
            continue;
        }
        let summary: Value = out
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("racer {i}: no JSON summary in {out:?}"));
        assert_eq!(summary["increments"], increments, "racer {i}: {summary}");
        conflicts.push(summary["conflicts"].as_u64().expect("conflicts"));
    }
    assert!(failures.is_empty(), "racers failed:\n{}", failures.join("\n"));
    (conflicts, elapsed)
}

/// The counters sum to the increments made, each execution's version is its counter + 1, and
/// the processes overlapped (there were conflicts).
fn check_totals(
    backend: &str,
    store: &dyn ExecutionStore,
    increments: i64,
    conflicts: &[u64],
    elapsed: Duration,
) {
    let mut sum = 0;
    for id in RACE_IDS {
        let exe = store.load(id).expect("load").expect("stored");
        let counter = exe.context["counter"].as_i64().expect("counter");
        assert_eq!(
            exe.version,
            counter + 1,
            "{id}: version {} counter {counter}",
            exe.version
        );
        sum += counter;
    }
    let total: u64 = conflicts.iter().sum();
    eprintln!(
        "cas race ({backend}): {PROCESSES} processes x {increments} increments in {:.1} s, counters sum {sum}, \
         conflicts: {total} (per process {conflicts:?})",
        elapsed.as_secs_f64()
    );
    assert_eq!(
        sum,
        PROCESSES as i64 * increments,
        "lost or duplicated increments"
    );
    assert!(total > 0, "no conflict at all: the processes did not overlap");
}
