//! Shared logic of the end-to-end tests: the crash workload and the checker that proves no step
//! of it was half-applied, the CAS-race increment, and a line reader for child processes.
//!
//! The workload and the checker speak only [`ExecutionStore`], so they run against
//! [`execstore::MemoryStore`] as well as against SQLite; the checks that need raw SQL
//! (`PRAGMA integrity_check`, deliberate corruption) live in the integration tests.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{self, Receiver};
use std::thread;

use execstore::{
    executions::{Event, JsonObject, OutboxEntry, SpawnEntry},
    Effects, Execution, ExecutionStore, StoreError,
};
use serde_json::{json, Value};

/// How many executions the crash writer cycles through.
pub const CRASH_EXECUTIONS: usize = 8;
/// The trace ring the crash writer keeps per execution, small so the ring delete runs.
pub const CRASH_TRACE_MAX: u32 = 5;
/// The definition of every crash execution.
pub const CRASH_DEFINITION: &str = "crash-def";
/// `created_at` of every crash execution.
pub const CRASH_CREATED_AT: f64 = 1_700_000_000.0;

/// The id of crash execution `i`.
pub fn crash_id(i: usize) -> String {
    format!("crash-{i}")
}

/// The ids of all crash executions.
pub fn crash_ids() -> Vec<String> {
    (0..CRASH_EXECUTIONS).map(crash_id).collect()
}

/// The id of the outbox event step `n` of `id` emits (to `id` itself).
pub fn step_event_id(id: &str, n: i64) -> String {
    format!("ev-{id}-{n}")
}

/// The id of the event step `n` of `id` handled (its dedupe marker).
pub fn step_input_id(id: &str, n: i64) -> String {
    format!("in-{id}-{n}")
}

/// The id of the child step `n` of `id` spawns (every 3rd step).
pub fn step_child_id(id: &str, n: i64) -> String {
    format!("{id}/c{n}")
}

/// The active path after step `n`.
pub fn step_active_path(n: i64) -> String {
    format!("s{n}")
}

/// Whether step `n` acks its own outbox entry after the commit (in a transaction of its own,
/// so a crash between the two leaves the entry in place).
pub fn step_acks_outbox(n: i64) -> bool {
    n % 5 == 0
}

/// Whether step `n` spawns a child.
pub fn step_spawns(n: i64) -> bool {
    n % 3 == 0
}

/// Timer `u`: scheduled at `fire_at = n` on odd steps, cancelled on every 4th step.
pub fn step_u_op(n: i64) -> Option<Option<f64>> {
    if n % 2 == 1 {
        Some(Some(n as f64))
    } else if n % 4 == 0 {
        Some(None)
    } else {
        None
    }
}

/// Where timer `u` stands after steps `1..=n`: `Some(fire_at)` if armed.
pub fn expected_u_after(n: i64) -> Option<f64> {
    (1..=n).rev().find_map(step_u_op).flatten()
}

/// The effects of step `n` (`n >= 1`) of execution `id`.
pub fn step_effects(id: &str, n: i64) -> Effects {
    let data = obj(json!({ "n": n, "from": id }));
    let event = Event::new(step_event_id(id, n), "Step").with_data(data);
    let mut effects = Effects::new()
        .emit(Some(id), event)
        .processed(step_input_id(id, n))
        .schedule("t", n as f64)
        .trace(obj(json!({ "n": n, "event_kind": "Step" })));
    match step_u_op(n) {
        Some(Some(at)) => effects = effects.schedule("u", at),
        Some(None) => effects = effects.cancel("u"),
        None => {}
    }
    if step_spawns(n) {
        effects = effects.spawn(step_child_id(id, n), "r", obj(json!({ "n": n, "parent": id })));
    }
    effects
}

/// A store a child process was told to open, what it is (for messages), and the arguments
/// left after the ones naming it.
pub type OpenedStore<'a> = (execstore::Result<Box<dyn ExecutionStore>>, String, &'a [String]);

/// Opens the store that leads `args` for a test's child process: `<db-path>` (a SQLite file)
/// or `--pg <url> --prefix <prefix>` (tables on a PostgreSQL server), with `trace_max` and
/// `connections` pooled connections for Postgres. `None` if the arguments are not understood.
pub fn open_store_args(args: &[String], trace_max: Option<u32>, connections: u32) -> Option<OpenedStore<'_>> {
    match args {
        [flag, url, pflag, prefix, rest @ ..] if flag == "--pg" && pflag == "--prefix" => {
            let options = execstore_postgres::PgOptions::new()
                .prefix(prefix.clone())
                .trace_max(trace_max)
                .max_connections(connections);
            let store = execstore_postgres::PgStore::open(url, options)
                .map(|s| Box::new(s) as Box<dyn ExecutionStore>);
            Some((store, format!("{url} (prefix {prefix})"), rest))
        }
        [flag, ..] if flag.starts_with("--") => None,
        [path, rest @ ..] => {
            let options = execstore_sqlite::SqliteOptions::new().trace_max(trace_max);
            let store = execstore_sqlite::SqliteStore::open(path, options)
                .map(|s| Box::new(s) as Box<dyn ExecutionStore>);
            Some((store, path.clone(), rest))
        }
        [] => None,
    }
}

/// What one call of [`crash_step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepDone {
    /// The execution did not exist and was created at version 1 (no step yet).
    Created,
    /// Step `n` was committed (and its outbox entry acked if [`step_acks_outbox`]).
    Step(i64),
}

impl StepDone {
    /// The execution's version once this was committed.
    pub fn version(self) -> i64 {
        match self {
            StepDone::Created => 1,
            StepDone::Step(n) => n + 1,
        }
    }
}

/// One unit of the crash workload on `id`: create the execution if absent, else load it, commit
/// the next step with its effects, then ack the step's outbox entry if the step says so.
pub fn crash_step(store: &dyn ExecutionStore, id: &str) -> execstore::Result<StepDone> {
    crash_step_with(store, id, false)
}

/// The execution through which a split step commits its outbox entry.
pub const SPLIT_RELAY: &str = "split-relay";

/// [`crash_step`], or with `split` a deliberately broken variant that commits a step in two
/// transactions: the state with every effect but the outbox entry, then the outbox entry
/// (through [`SPLIT_RELAY`]). A kill between the two leaves the step half-applied, which the
/// crash test must notice.
pub fn crash_step_with(store: &dyn ExecutionStore, id: &str, split: bool) -> execstore::Result<StepDone> {
    let Some(mut exe) = store.load(id)? else {
        let mut exe = Execution::new(id, CRASH_DEFINITION);
        exe.created_at = Some(CRASH_CREATED_AT);
        exe.context.insert("counter".into(), 0.into());
        store.save(&mut exe)?;
        return Ok(StepDone::Created);
    };
    let n = exe.version;
    exe.context.insert("counter".into(), n.into());
    exe.active_path = Some(step_active_path(n));
    exe.processed_events = n;
    exe.updated_at = Some(CRASH_CREATED_AT + n as f64);
    let mut effects = step_effects(id, n);
    let seqs = if split {
        let emits = std::mem::take(&mut effects.emits);
        store.commit(&mut exe, &effects)?;
        let mut relay = store
            .load(SPLIT_RELAY)?
            .unwrap_or_else(|| Execution::new(SPLIT_RELAY, "relay"));
        let mut relayed = Effects::new();
        relayed.emits = emits;
        store.commit(&mut relay, &relayed)?
    } else {
        store.commit(&mut exe, &effects)?
    };
    if step_acks_outbox(n) {
        for seq in seqs {
            store.ack_outbox(seq)?;
        }
    }
    Ok(StepDone::Step(n))
}

/// What the checker found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// Executions examined.
    pub executions: usize,
    /// Committed steps whose effects were all verified (the sum of `n` over executions).
    pub steps: u64,
    /// Every violation found, in words; empty when nothing was half-applied.
    pub violations: Vec<String>,
}

/// Every undelivered outbox entry, paging through `pending_outbox`.
pub fn all_outbox(store: &dyn ExecutionStore) -> execstore::Result<Vec<OutboxEntry>> {
    execstore::executions::paging::outbox_pages(store, None, 1000)
        .collect::<execstore::Result<Vec<_>>>()
        .map(|pages| pages.concat())
}

/// Every pending spawn, paging through `pending_spawns`.
pub fn all_spawns(store: &dyn ExecutionStore) -> execstore::Result<Vec<SpawnEntry>> {
    execstore::executions::paging::spawn_pages(store, None, 1000)
        .collect::<execstore::Result<Vec<_>>>()
        .map(|pages| pages.concat())
}

/// Checks that every execution in `ids` holds exactly the effects of the steps its version
/// says were committed, and none of a later step: with `v` the stored version and
/// `n = v - 1`, the context counter is `n`; the dedupe markers of steps `1..=n` exist and that
/// of `n + 1` does not; its outbox holds the entry of every step `1..=n` (those of
/// [`step_acks_outbox`] steps may be acked) and no other; its trace is the last
/// `min(n, trace_max)` steps; its timers are `t` at `n` and `u` as [`expected_u_after`]; it
/// issued a spawn for every third step and no other. An absent execution has no rows at all.
pub fn check_crash_invariants(
    store: &dyn ExecutionStore,
    ids: &[String],
    trace_max: u32,
) -> execstore::Result<CheckReport> {
    let mut report = CheckReport::default();
    let outbox = all_outbox(store)?;
    let spawns = all_spawns(store)?;
    let timers = store.due_timers(1e18, None, execstore::kit::validate::MAX_PAGE)?;
    for id in ids {
        report.executions += 1;
        let mut bad = |what: String| report.violations.push(format!("{id}: {what}"));
        let exe = store.load(id)?;
        let n = match &exe {
            None => 0,
            Some(exe) if exe.version < 1 => {
                bad(format!("stored at version {}", exe.version));
                continue;
            }
            Some(exe) => exe.version - 1,
        };
        if let Some(exe) = &exe {
            if exe.context.get("counter") != Some(&json!(n)) {
                bad(format!(
                    "version {} but context.counter {:?}",
                    exe.version,
                    exe.context.get("counter")
                ));
            }
            let want_path = (n >= 1).then(|| step_active_path(n));
            if exe.active_path != want_path {
                bad(format!(
                    "step {n}: active_path {:?}, want {want_path:?}",
                    exe.active_path
                ));
            }
            if exe.processed_events != n {
                bad(format!("step {n}: processed_events {}", exe.processed_events));
            }
            if exe.created_at != Some(CRASH_CREATED_AT) || exe.definition_id != CRASH_DEFINITION {
                bad(format!(
                    "created_at {:?} definition {}",
                    exe.created_at, exe.definition_id
                ));
            }
        }

        // Dedupe markers: 1..=n present, n + 1 absent.
        for k in 1..=n + 1 {
            let done = store.is_processed(id, &step_input_id(id, k))?;
            if done != (k <= n) {
                bad(format!("step {n}: dedupe marker of step {k} present={done}"));
            }
        }

        // Outbox entries addressed to this execution.
        let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
        let mut last_k = 0;
        for entry in outbox
            .iter()
            .filter(|e| e.target_id.as_deref() == Some(id.as_str()))
        {
            let Some(k) = entry.event.data.get("n").and_then(Value::as_i64) else {
                bad(format!(
                    "outbox seq {} without a step number: {:?}",
                    entry.seq, entry.event
                ));
                continue;
            };
            if entry.event.id != step_event_id(id, k) || entry.event.kind != "Step" {
                bad(format!(
                    "outbox seq {} of step {k} has event {:?}",
                    entry.seq, entry.event
                ));
            }
            if k <= last_k {
                bad(format!(
                    "outbox step {k} (seq {}) out of order after step {last_k}",
                    entry.seq
                ));
            }
            last_k = k;
            *seen.entry(k).or_default() += 1;
        }
        for (&k, &count) in &seen {
            if k < 1 || k > n {
                bad(format!("step {n}: outbox holds an entry of step {k}"));
            } else if count > 1 {
                bad(format!("outbox holds {count} entries of step {k}"));
            }
        }
        for k in (1..=n).filter(|k| !step_acks_outbox(*k)) {
            if !seen.contains_key(&k) {
                bad(format!("step {n}: outbox entry of step {k} is missing"));
            }
        }

        // Trace: the last min(n, trace_max) steps, index = step - 1.
        let trace = store.read_trace(id)?;
        let first = (n - i64::from(trace_max) + 1).max(1);
        let want: Vec<i64> = (first..=n).collect();
        let got: Vec<(Option<i64>, Option<i64>)> = trace
            .iter()
            .map(|s| {
                (
                    s.get("index").and_then(Value::as_i64),
                    s.get("n").and_then(Value::as_i64),
                )
            })
            .collect();
        let want_pairs: Vec<(Option<i64>, Option<i64>)> =
            want.iter().map(|k| (Some(k - 1), Some(*k))).collect();
        if got != want_pairs {
            bad(format!("step {n}: trace (index, n) {got:?}, want {want_pairs:?}"));
        }

        // Timers.
        let mine: BTreeMap<&str, f64> = timers
            .iter()
            .filter(|t| t.execution_id == *id)
            .map(|t| (t.path.as_str(), t.fire_at))
            .collect();
        let mut want_timers: BTreeMap<&str, f64> = BTreeMap::new();
        if n >= 1 {
            want_timers.insert("t", n as f64);
        }
        if let Some(at) = expected_u_after(n) {
            want_timers.insert("u", at);
        }
        if mine != want_timers {
            bad(format!("step {n}: timers {mine:?}, want {want_timers:?}"));
        }

        // Spawns issued by this execution.
        let got: Vec<(String, String, Option<i64>)> = spawns
            .iter()
            .filter(|s| s.parent_id == *id)
            .map(|s| {
                (
                    s.child_id.clone(),
                    s.root_path.clone(),
                    s.context.get("n").and_then(Value::as_i64),
                )
            })
            .collect();
        let want: Vec<(String, String, Option<i64>)> = (1..=n)
            .filter(|k| step_spawns(*k))
            .map(|k| (step_child_id(id, k), "r".to_owned(), Some(k)))
            .collect();
        if got.len() as i64 != n / 3 || got != want {
            bad(format!("step {n}: spawns {got:?}, want {want:?}"));
        }

        report.steps += n as u64;
    }
    Ok(report)
}

/// The ids of the executions the CAS racers increment.
pub const RACE_IDS: [&str; 2] = ["race-0", "race-1"];

/// Creates `id` with `context.counter = 0` unless it exists.
pub fn ensure_counter(store: &dyn ExecutionStore, id: &str) -> execstore::Result<()> {
    if store.load(id)?.is_none() {
        let mut exe = Execution::new(id, "race-def");
        exe.context.insert("counter".into(), 0.into());
        store.save(&mut exe)?;
    }
    Ok(())
}

/// One successful increment of `context.counter` of `id` (load, +1, commit), retrying on
/// [`StoreError::Conflict`]. `think` runs between the load and the commit, as an engine's
/// transition would. Returns how many conflicts it took; any other error is returned.
pub fn increment_counter(
    store: &dyn ExecutionStore,
    id: &str,
    think: &mut dyn FnMut(),
) -> execstore::Result<u64> {
    let mut conflicts = 0;
    loop {
        let mut exe = store.load(id)?.ok_or_else(|| StoreError::NotFound {
            what: "execution",
            key: id.to_owned(),
        })?;
        let counter = exe.context.get("counter").and_then(Value::as_i64).unwrap_or(0);
        exe.context.insert("counter".into(), (counter + 1).into());
        think();
        match store.save(&mut exe) {
            Ok(()) => return Ok(conflicts),
            Err(StoreError::Conflict { .. }) => conflicts += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Reads `from` line by line on a thread of its own, so a test can wait for a line with a
/// timeout (`recv_timeout`) instead of blocking on a child that hangs.
pub fn line_reader(from: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Spawns `command` (stdin closed, stdout and stderr piped and read by [`line_reader`]) and
/// waits up to 30 s for its first line, which must be `ready`; otherwise kills it and panics
/// with what it printed on stderr (`what` names it, `trial` says which). Returns the child
/// and its stdout and stderr lines.
pub fn spawn_ready(
    mut command: std::process::Command,
    what: &str,
    trial: u64,
) -> (std::process::Child, Receiver<String>, Receiver<String>) {
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let stdout = line_reader(child.stdout.take().expect("stdout is piped"));
    let stderr = line_reader(child.stderr.take().expect("stderr is piped"));
    match stdout.recv_timeout(std::time::Duration::from_secs(30)) {
        Ok(line) if line == "ready" => {}
        other => {
            let _ = child.kill();
            let status = child.wait();
            let err: Vec<String> = stderr.iter().collect();
            panic!("trial {trial}: {what} did not get ready: {other:?}, {status:?}, stderr {err:?}");
        }
    }
    (child, stdout, stderr)
}

/// A `json!` object as a [`JsonObject`].
pub fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not a JSON object: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use execstore::MemoryStore;

    fn run(store: &dyn ExecutionStore, steps: usize, seed: u64) {
        let ids = crash_ids();
        let mut rng = fastrand::Rng::with_seed(seed);
        for _ in 0..steps {
            crash_step(store, &ids[rng.usize(..ids.len())]).unwrap();
        }
    }

    #[test]
    fn workload_on_memory_store_is_consistent() {
        let store = MemoryStore::with_trace_max(Some(CRASH_TRACE_MAX));
        let ids = crash_ids();
        let empty = check_crash_invariants(&store, &ids, CRASH_TRACE_MAX).unwrap();
        assert!(empty.violations.is_empty(), "{:?}", empty.violations);
        for round in 0..5 {
            run(&store, 100, round);
            let report = check_crash_invariants(&store, &ids, CRASH_TRACE_MAX).unwrap();
            assert!(report.violations.is_empty(), "{:#?}", report.violations);
            assert_eq!(report.executions, CRASH_EXECUTIONS);
            assert_eq!(report.steps, (round + 1) * 100 - CRASH_EXECUTIONS as u64);
        }
    }

    #[test]
    fn u_timer_follows_last_op() {
        assert_eq!(expected_u_after(0), None);
        assert_eq!(expected_u_after(1), Some(1.0));
        assert_eq!(expected_u_after(2), Some(1.0));
        assert_eq!(expected_u_after(3), Some(3.0));
        assert_eq!(expected_u_after(4), None);
        assert_eq!(expected_u_after(6), Some(5.0));
        assert_eq!(expected_u_after(8), None);
    }

    #[test]
    fn checker_catches_a_missing_effect() {
        // A store that lost step 7's outbox entry (as a half-applied commit would).
        let store = MemoryStore::with_trace_max(Some(CRASH_TRACE_MAX));
        let id = crash_id(0);
        for _ in 0..10 {
            crash_step(&store, &id).unwrap();
        }
        let seq = all_outbox(&store)
            .unwrap()
            .into_iter()
            .find(|e| e.event.id == step_event_id(&id, 7))
            .unwrap()
            .seq;
        store.ack_outbox(seq).unwrap();
        let report = check_crash_invariants(&store, &[id], CRASH_TRACE_MAX).unwrap();
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
        assert!(report.violations[0].contains("outbox entry of step 7 is missing"));
    }

    #[test]
    fn checker_catches_an_effect_without_its_step() {
        // Three steps committed (version 4), plus the outbox entry of step 4 that was never
        // committed: delivered through another execution, as a split commit would.
        let store = MemoryStore::with_trace_max(Some(CRASH_TRACE_MAX));
        let id = crash_id(1);
        for _ in 0..4 {
            crash_step(&store, &id).unwrap();
        }
        let mut other = Execution::new("elsewhere", "d");
        let effects = Effects::new().emit(
            Some(&id),
            Event::new(step_event_id(&id, 4), "Step").with_data(obj(json!({"n": 4}))),
        );
        store.commit(&mut other, &effects).unwrap();
        let report = check_crash_invariants(&store, &[id], CRASH_TRACE_MAX).unwrap();
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.contains("outbox holds an entry of step 4")),
            "{:?}",
            report.violations
        );
    }
}

/// Reports that the calling test is skipped, and why, as one line
/// `SKIPPED: <test>: <reason>` written straight to stderr: past the test harness's capture,
/// so a plain `cargo test` shows it, and scripts/test's closing totals count the test as
/// skipped, not passed (grouped by reason). `<test>` is the thread's name, which libtest
/// sets to the test's. Call it once, then return from the test.
pub fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    // One write, so lines of tests running in parallel do not interleave.
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// The PostgreSQL server the tests run against, from the environment.
pub mod pg {
    use std::path::PathBuf;
    use std::process::Command;

    /// `EXECSTORE_PG_URL`; `None` only if it is unset and `EXECSTORE_PG_OPTIONAL=1`, after
    /// reporting the calling test as skipped ([`crate::skip`]): the caller returns. Otherwise
    /// a missing server fails the test `test`.
    pub fn url_or_skip(test: &str) -> Option<String> {
        match std::env::var("EXECSTORE_PG_URL") {
            Ok(url) if !url.is_empty() => Some(url),
            _ if std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1") => {
                crate::skip("EXECSTORE_PG_URL is not set (EXECSTORE_PG_OPTIONAL=1)");
                None
            }
            _ => panic!(
                "EXECSTORE_PG_URL is not set: {test} needs a PostgreSQL server, e.g. \
                 `source scripts/lib/postgres.sh && pg_start && trap pg_stop EXIT` (or set \
                 EXECSTORE_PG_OPTIONAL=1 to skip it)"
            ),
        }
    }

    /// A table prefix no other test run uses.
    pub fn fresh_prefix(tag: &str) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        format!("{tag}{:x}_{nanos:x}", std::process::id())
    }

    /// Drops the store under `prefix`.
    pub fn drop_tables(url: &str, prefix: &str) {
        execstore_postgres::drop_store(url, Some(prefix)).expect("drop the test tables");
    }

    /// The throwaway cluster `scripts/lib/postgres.sh` started (`EXECSTORE_PG_DIR`), which
    /// a test may crash and restart; `None` for a server given only by URL.
    #[derive(Debug)]
    pub struct Cluster {
        dir: PathBuf,
        pg_ctl: PathBuf,
    }

    impl Cluster {
        /// The cluster of `EXECSTORE_PG_DIR`, if it is set and PostgreSQL's `pg_ctl` is found.
        pub fn from_env() -> Option<Self> {
            let dir = PathBuf::from(std::env::var_os("EXECSTORE_PG_DIR")?);
            let mut bins: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
                .ok()?
                .filter_map(|e| e.ok().map(|e| e.path().join("bin/pg_ctl")))
                .filter(|p| p.exists())
                .collect();
            bins.sort();
            let pg_ctl = bins.pop()?;
            dir.join("data").is_dir().then_some(Cluster { dir, pg_ctl })
        }

        fn pg_ctl(&self, args: &[&str]) {
            let data = self.dir.join("data");
            let log = self.dir.join("server.log");
            // As the cluster's owner: `postgres` when we are root (scripts/lib/postgres.sh).
            let root = Command::new("id")
                .arg("-u")
                .output()
                .is_ok_and(|o| o.stdout == b"0\n");
            let mut command = if root {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(&self.pg_ctl);
                c
            } else {
                Command::new(&self.pg_ctl)
            };
            let status = command
                .args(args)
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(&log)
                .status()
                .expect("run pg_ctl");
            assert!(status.success(), "pg_ctl {args:?}: {status}");
        }

        /// Crashes the server as a power cut would leave it (`pg_ctl restart -m immediate`:
        /// every server process killed without a checkpoint) and starts it again with the
        /// options it ran with, recovering from its WAL, waiting until it accepts connections.
        pub fn crash_and_restart(&self) {
            self.pg_ctl(&["restart", "-m", "immediate", "-w", "-t", "60"]);
        }
    }
}
