//! Crash safety: a child process commits event steps to a SQLite file and is SIGKILLed at a
//! random moment; a fresh store on the file must see every step either fully applied or not at
//! all. The file is reused across trials, so each child resumes from what survived the last
//! kill: recovery is part of what is tested.
//!
//! `EXECSTORE_CRASH_TRIALS` (default 50) sets the number of trials, `EXECSTORE_CRASH_SEED`
//! replays a run (the seed is printed).

mod common;

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use execstore::ExecutionStore;
use execstore_e2e::pg;
use execstore_e2e::{
    check_crash_invariants, crash_id, crash_ids, crash_step, spawn_ready, step_child_id, step_event_id,
    step_input_id, CheckReport, StepDone, CRASH_TRACE_MAX,
};
use execstore_postgres::{PgOptions, PgStore};
use execstore_sqlite::{SqliteOptions, SqliteStore};

fn options() -> SqliteOptions {
    SqliteOptions::new().trace_max(Some(CRASH_TRACE_MAX))
}

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
}

/// Held by each Postgres test of this file: one of them crashes the server, which the other
/// must not be using meanwhile.
static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The `application_name` of the crash writer's Postgres sessions.
const WRITER_APP: &str = "execstore_crash_writer";

/// Where the crash workload runs.
enum Target {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// Tables under a prefix on a PostgreSQL server, and the server itself if the test may
    /// crash it.
    Postgres {
        url: String,
        prefix: String,
        cluster: Option<pg::Cluster>,
    },
}

impl Target {
    fn args(&self) -> Vec<OsString> {
        match self {
            Target::Sqlite(path) => vec![path.clone().into_os_string()],
            Target::Postgres { url, prefix, .. } => {
                let url = format!(
                    "{url}{}application_name={WRITER_APP}",
                    if url.contains('?') { '&' } else { '?' }
                );
                ["--pg", &url, "--prefix", prefix]
                    .iter()
                    .map(OsString::from)
                    .collect()
            }
        }
    }

    fn open(&self) -> Box<dyn ExecutionStore> {
        match self {
            Target::Sqlite(path) => {
                Box::new(SqliteStore::open(path, options()).expect("reopen after the kill"))
            }
            Target::Postgres { url, prefix, .. } => Box::new(
                PgStore::open(
                    url,
                    PgOptions::new()
                        .prefix(prefix.clone())
                        .trace_max(Some(CRASH_TRACE_MAX))
                        .max_connections(1),
                )
                .expect("reopen after the kill"),
            ),
        }
    }

    /// Returns once the server has finished with every killed writer's session: a COMMIT a
    /// writer sent just before its kill may still be in flight, and the check reads its
    /// tables one statement at a time.
    fn settle(&self) {
        let Target::Postgres { url, .. } = self else {
            return;
        };
        let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let row = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                    &[&WRITER_APP],
                )
                .expect("pg_stat_activity");
            if row.get::<_, i64>(0) == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "a killed writer's session is still open after 60 s"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Opens a fresh store, checks every crash execution, closes it.
    fn check(&self) -> CheckReport {
        check_crash_invariants(self.open().as_ref(), &crash_ids(), CRASH_TRACE_MAX).expect("read the store")
    }

    /// The stored version of each crash execution (0: none).
    fn versions(&self) -> Vec<i64> {
        let store = self.open();
        crash_ids()
            .iter()
            .map(|id| store.load(id).expect("load").map_or(0, |e| e.version))
            .collect()
    }
}

/// What a run of trials saw.
#[derive(Default)]
struct Trials {
    trials: u64,
    kills: u64,
    /// Trials that crashed the database server instead of the writer.
    server_crashes: u64,
    executions: usize,
    steps: u64,
    half_applied: usize,
    /// Steps the writer was told were committed, all of which must be found.
    acknowledged: u64,
    lost: usize,
    /// Trials after whose kill the WAL held frames, so the reopen had to recover it.
    wal_left: u64,
    /// Trials in which the child committed something.
    progressed: u64,
    failures: Vec<String>,
}

/// Runs up to `trials` kill-and-check trials on one store (stopping at the first violation),
/// the children running the workload whole or `split`. Every `server_crash_every`-th trial
/// (if any, on Postgres) crashes the server mid-run instead of killing the writer.
fn run_trials(
    target: &Target,
    trials: u64,
    rng: &mut fastrand::Rng,
    split: bool,
    server_crash_every: Option<u64>,
) -> Trials {
    let mut t = Trials::default();
    let mut before: i64 = 0;
    let wal = match target {
        Target::Sqlite(path) => {
            let mut wal = path.as_os_str().to_owned();
            wal.push("-wal");
            Some(PathBuf::from(wal))
        }
        Target::Postgres { .. } => None,
    };
    let ids = crash_ids();
    for trial in 1..=trials {
        t.trials = trial;
        let mut command = Command::new(env!("CARGO_BIN_EXE_crash_writer"));
        command.args(target.args()).arg(rng.u64(..).to_string());
        if split {
            command.arg("split");
        }
        let (mut child, stdout, stderr) = spawn_ready(command, "crash_writer", trial);
        std::thread::sleep(Duration::from_millis(rng.u64(0..=80)));
        if let Some(status) = child.try_wait().expect("try_wait") {
            let err: Vec<String> = stderr.iter().collect();
            panic!("trial {trial}: crash_writer stopped before the kill: {status}, stderr {err:?}");
        }
        let crash_server = match (target, server_crash_every) {
            (
                Target::Postgres {
                    cluster: Some(cluster),
                    ..
                },
                Some(every),
            ) if trial % every == 0 => Some(cluster),
            _ => None,
        };
        if let Some(cluster) = crash_server {
            // The writer loses its server mid-commit: it fails (exit 2) or is killed after.
            cluster.crash_and_restart();
            t.server_crashes += 1;
            let _ = child.kill();
            child.wait().expect("wait");
        } else {
            child.kill().expect("SIGKILL crash_writer");
            let status = child.wait().expect("wait");
            assert_eq!(
                status.signal(),
                Some(9),
                "trial {trial}: not ended by SIGKILL: {status}"
            );
        }
        t.kills += 1;
        target.settle();
        if wal
            .as_ref()
            .is_some_and(|wal| std::fs::metadata(wal).is_ok_and(|m| m.len() > 0))
        {
            t.wal_left += 1;
        }

        let report = target.check();
        t.executions += report.executions;
        t.steps += report.steps;
        t.half_applied += report.violations.len();
        t.failures
            .extend(report.violations.iter().map(|v| format!("trial {trial}: {v}")));
        if let Target::Sqlite(path) = target {
            let integrity = common::integrity_check(path);
            if integrity != "ok" {
                t.failures
                    .push(format!("trial {trial}: integrity_check: {integrity}"));
            }
        }
        // Every step the writer was told is committed must be there.
        let versions = target.versions();
        for line in stdout.try_iter() {
            let mut words = line.split(' ');
            let (Some("committed"), Some(id), Some(version)) = (words.next(), words.next(), words.next())
            else {
                continue;
            };
            let version: i64 = version.parse().expect("a version");
            t.acknowledged += 1;
            let stored = ids.iter().position(|i| i == id).map_or(0, |i| versions[i]);
            if stored < version {
                t.lost += 1;
                t.failures.push(format!(
                    "trial {trial}: {id} was committed at version {version}, the store has {stored}"
                ));
            }
        }
        let after: i64 = versions.iter().sum();
        if after > before {
            t.progressed += 1;
        }
        before = after;
        if !t.failures.is_empty() {
            break; // later trials would build on the damage
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
    eprintln!("crash seed: {seed} (EXECSTORE_CRASH_SEED={seed} replays it)");
    seed
}

#[test]
fn crash_trials() {
    let trials = env_u64("EXECSTORE_CRASH_TRIALS").unwrap_or(50);
    let seed = seed();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crash.db");
    let started = Instant::now();
    let target = Target::Sqlite(path);
    let t = run_trials(&target, trials, &mut fastrand::Rng::with_seed(seed), false, None);
    let committed = target.check().steps;
    eprintln!(
        "crash trials: {}, kills: {}, executions checked: {}, steps verified: {}, half-applied: {}, \
         acknowledged commits checked: {}, lost: {} (committed steps at the end: {committed}, trials with \
         progress: {}, WAL left behind by {} kills, {:.1} s)",
        t.trials,
        t.kills,
        t.executions,
        t.steps,
        t.half_applied,
        t.acknowledged,
        t.lost,
        t.progressed,
        t.wal_left,
        started.elapsed().as_secs_f64()
    );
    assert!(t.failures.is_empty(), "seed {seed}:\n{}", t.failures.join("\n"));
    assert_eq!(t.kills, trials);
    assert!(committed > 0, "no step was ever committed");
    assert!(
        t.progressed * 2 > trials,
        "the child made progress in only {} of {trials} trials: kills did not land mid-run",
        t.progressed
    );
    // The kills found work to recover: most left frames in the WAL for the reopen to replay.
    assert!(
        t.wal_left * 2 > trials,
        "only {} of {trials} kills left a WAL behind: the reopen hardly had anything to recover",
        t.wal_left
    );
    // And the durability check had something to check.
    assert!(
        t.acknowledged > 0,
        "the writer never reported a commit: no acknowledged commit was checked"
    );
}

/// Every how many trials the PostgreSQL crash test crashes the server instead of the writer.
const SERVER_CRASH_EVERY: u64 = 5;

/// The cluster behind `EXECSTORE_PG_URL`, which the PostgreSQL crash test crashes and
/// restarts; a panic saying why if it cannot be had (the test would otherwise only kill
/// writers, and say it checked server crashes).
fn cluster_to_crash() -> pg::Cluster {
    let Some(dir) = std::env::var_os("EXECSTORE_PG_DIR") else {
        panic!(
            "crash_trials_on_postgres crashes the server, so it needs the data directory of the \
             cluster at EXECSTORE_PG_URL: EXECSTORE_PG_DIR is not set (scripts/lib/postgres.sh's \
             pg_start sets both for the throwaway cluster it starts; a server given only by URL \
             cannot be crash-tested)"
        )
    };
    pg::Cluster::from_env().unwrap_or_else(|| {
        panic!(
            "EXECSTORE_PG_DIR={} does not name a cluster this test can restart (it needs \
             <dir>/data and PostgreSQL's pg_ctl under /usr/lib/postgresql/*/bin)",
            std::path::Path::new(&dir).display()
        )
    })
}

/// The same trials against a real PostgreSQL server (its throwaway cluster): the writer is
/// SIGKILLed mid-commit (the server rolls back its open transaction), and every fifth trial
/// crashes the server itself instead (`pg_ctl restart -m immediate`) and the check runs
/// after its WAL recovery. Nothing half-applied, nothing acknowledged lost. All
/// `EXECSTORE_CRASH_TRIALS` trials run, and the server crashes are counted: a server whose
/// data directory is unknown (`EXECSTORE_PG_DIR`) fails the test rather than skipping them.
#[test]
fn crash_trials_on_postgres() {
    let Some(url) = pg::url_or_skip("crash_trials_on_postgres") else {
        return;
    };
    let cluster = cluster_to_crash();
    let _server = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let trials = env_u64("EXECSTORE_CRASH_TRIALS").unwrap_or(50);
    let seed = seed();
    let prefix = pg::fresh_prefix("crash");
    let target = Target::Postgres {
        url: url.clone(),
        prefix: prefix.clone(),
        cluster: Some(cluster),
    };
    let started = Instant::now();
    let t = run_trials(
        &target,
        trials,
        &mut fastrand::Rng::with_seed(seed),
        false,
        Some(SERVER_CRASH_EVERY),
    );
    let committed = target.check().steps;
    eprintln!(
        "postgres crash trials: {}, writer kills: {}, server crashes: {}, executions checked: {}, \
         steps verified: {}, half-applied: {}, acknowledged commits checked: {}, lost: {} (committed \
         steps at the end: {committed}, trials with progress: {}, {:.1} s)",
        t.trials,
        t.kills - t.server_crashes,
        t.server_crashes,
        t.executions,
        t.steps,
        t.half_applied,
        t.acknowledged,
        t.lost,
        t.progressed,
        started.elapsed().as_secs_f64()
    );
    assert!(t.failures.is_empty(), "seed {seed}:\n{}", t.failures.join("\n"));
    assert_eq!(t.trials, trials, "every trial ran");
    assert_eq!(t.kills, trials, "every trial ended its writer");
    assert_eq!(
        t.server_crashes,
        trials / SERVER_CRASH_EVERY,
        "every {SERVER_CRASH_EVERY}th trial crashed the server"
    );
    assert!(
        t.server_crashes > 0,
        "no server crash in {trials} trials (EXECSTORE_CRASH_TRIALS below {SERVER_CRASH_EVERY})"
    );
    assert!(committed > 0, "no step was ever committed");
    assert!(t.acknowledged > 0, "the writer never reported a commit");
    assert!(
        t.progressed * 2 > trials,
        "the child made progress in only {} of {trials} trials",
        t.progressed
    );
    pg::drop_tables(&url, &prefix);
}

/// The same catch on Postgres: a split writer killed between its two transactions.
#[test]
fn crash_trials_on_postgres_catch_a_split_commit() {
    let Some(url) = pg::url_or_skip("crash_trials_on_postgres_catch_a_split_commit") else {
        return;
    };
    let _server = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let seed = seed();
    let prefix = pg::fresh_prefix("split");
    let target = Target::Postgres {
        url: url.clone(),
        prefix: prefix.clone(),
        cluster: None,
    };
    let t = run_trials(&target, 40, &mut fastrand::Rng::with_seed(seed), true, None);
    pg::drop_tables(&url, &prefix);
    assert!(
        t.half_applied > 0,
        "seed {seed}: 40 kills of a split writer on Postgres, no half-applied step seen"
    );
}

/// The trials can fail: a writer that commits each step in two transactions is caught
/// half-way by some kill.
#[test]
fn crash_trials_catch_a_split_commit() {
    let seed = seed();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("split.db");
    let t = run_trials(
        &Target::Sqlite(path),
        40,
        &mut fastrand::Rng::with_seed(seed),
        true,
        None,
    );
    eprintln!(
        "split writer: half-applied steps found after {} of 40 trials: {:?}",
        t.trials,
        t.failures.first()
    );
    assert!(
        t.half_applied > 0,
        "seed {seed}: 40 kills of a split writer, no half-applied step seen"
    );
    assert!(
        t.failures.iter().any(|f| f.contains("outbox entry of step")),
        "{:?}",
        t.failures
    );
}

/// A file with 14 steps on each of two executions, closed.
fn populated(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("populated.db");
    let store = SqliteStore::open(&path, options()).expect("open");
    for i in 0..2 {
        for _ in 0..15 {
            crash_step(&store, &crash_id(i)).expect("step");
        }
    }
    assert_eq!(
        crash_step(&store, &crash_id(2)).expect("create"),
        StepDone::Created
    );
    path
}

/// Each deliberate half-application, done with raw SQL on a file that checks clean, is
/// reported: the checker can fail.
#[test]
fn checker_catches_half_applied_rows() {
    let id = crash_id(0);
    let damage: Vec<(&str, String, String)> = vec![
        (
            "an outbox entry of a committed step deleted",
            format!(
                "DELETE FROM outbox WHERE json_extract(event, '$.id') = '{}'",
                step_event_id(&id, 7)
            ),
            "outbox entry of step 7 is missing".into(),
        ),
        (
            "an outbox entry of a step not committed",
            format!(
                "INSERT INTO outbox (target_id, event) SELECT target_id, json_set(event, '$.id', '{}', \
                 '$.data.n', 15) FROM outbox WHERE target_id = '{id}' LIMIT 1",
                step_event_id(&id, 15)
            ),
            "outbox holds an entry of step 15".into(),
        ),
        (
            "a dedupe marker deleted",
            format!(
                "DELETE FROM processed_events WHERE event_id = '{}'",
                step_input_id(&id, 4)
            ),
            "dedupe marker of step 4 present=false".into(),
        ),
        (
            "the dedupe marker of the next step present",
            format!(
                "INSERT INTO processed_events (execution_id, event_id) VALUES ('{id}', '{}')",
                step_input_id(&id, 15)
            ),
            "dedupe marker of step 15 present=true".into(),
        ),
        (
            "a spawn intent deleted",
            format!("DELETE FROM spawns WHERE child_id = '{}'", step_child_id(&id, 6)),
            "spawns".into(),
        ),
        (
            "a timer left behind",
            format!("UPDATE timers SET fire_at = 13 WHERE execution_id = '{id}' AND path = 't'"),
            "timers".into(),
        ),
        (
            "a trace step lost",
            format!("DELETE FROM trace WHERE execution_id = '{id}' AND idx = 13"),
            "trace".into(),
        ),
        (
            "the state not advanced",
            format!("UPDATE executions SET data = json_set(data, '$.context.counter', 13) WHERE id = '{id}'"),
            "context.counter".into(),
        ),
    ];
    for (what, sql, expect) in damage {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = populated(dir.path());
        let target = Target::Sqlite(path.clone());
        let clean = target.check();
        assert!(clean.violations.is_empty(), "{:?}", clean.violations);
        assert_eq!(clean.steps, 28);
        let changed = common::raw_readwrite(&path).execute(&sql, []).expect(&sql);
        assert_eq!(changed, 1, "{what}: {sql}");
        let report = target.check();
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.starts_with(&format!("{id}: ")) && v.contains(&expect)),
            "{what}: want a violation containing {expect:?}, got {:?}",
            report.violations
        );
    }
}

/// The crash writer fails loudly on a file it cannot use, and the test sees that.
#[test]
fn crash_writer_reports_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let not_a_db = dir.path().join("garbage.db");
    std::fs::write(&not_a_db, vec![0x5a; 8192]).expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash_writer"))
        .arg(&not_a_db)
        .arg("1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "crash_writer kept running on a garbage file"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(2), "crash_writer on a garbage file: {status}");
}
