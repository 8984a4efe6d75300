//! Crash safety of the workspace log on PostgreSQL: a child process runs transactions that
//! each append k envelopes, save a rule's progress with `cursor` = the new head and a run, and
//! is SIGKILLed at a random moment (inside a transaction, or its commit, as often as not);
//! every fifth trial the server itself is crashed (`pg_ctl restart -m immediate`) and recovers
//! from its WAL. After each, a fresh storage must find a gap-free log, every transaction
//! whole or absent (progress at the head, one run per transaction, each transaction's
//! envelopes all there), and every head the writer was told was committed.
//!
//! `EXECSTORE_CRASH_TRIALS` (default 50) sets the trials, `EXECSTORE_CRASH_SEED` replays a run.
//! The server crashes need the throwaway cluster of `scripts/lib/postgres.sh`
//! (`EXECSTORE_PG_DIR`): without it the test fails, unless `EXECSTORE_PG_OPTIONAL=1` (then
//! only the writer is killed, and it says so).

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use execstore::workspace::{WorkspaceRef, WorkspaceStorage};
use execstore_e2e::{pg, spawn_ready};
use execstore_postgres::{drop_workspace_schema, PgWorkspaceOptions, PgWorkspaceStorage};

/// One test of this file crashes the server, which the other must not use meanwhile.
static SERVER: Mutex<()> = Mutex::new(());

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a number")),
    )
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

fn workspace() -> WorkspaceRef {
    WorkspaceRef::new("crash", "w")
}

/// What a check of the stored workspace found.
struct Check {
    head: i64,
    transactions: usize,
    violations: Vec<String>,
}

/// Reads the workspace inside a transaction of its own: its row lock waits for a killed
/// writer's transaction to end (the server rolls it back, or finishes its commit), and holds
/// every other off while it reads.
fn check(url: &str, schema: &str) -> Check {
    let s = PgWorkspaceStorage::open(url, PgWorkspaceOptions::new().schema(schema).max_connections(2))
        .expect("open after the crash");
    let mut tx = s.begin(&workspace()).expect("begin");
    let head = tx.head_seq().expect("head");
    let log = tx.read(0, usize::MAX >> 1).expect("read");
    let mut violations = Vec::new();
    let seqs: Vec<i64> = log.iter().map(|e| e.seq).collect();
    if seqs != (1..=head).collect::<Vec<_>>() {
        violations.push(format!("the log is not 1..={head}: {} envelopes", log.len()));
    }
    // Each transaction's envelopes: h<head>-<i>of<k>, consecutive, ending at <head>.
    let mut transactions = 0;
    let mut i = 0;
    while i < log.len() {
        let id = &log[i].id;
        let parsed = id
            .strip_prefix('h')
            .and_then(|r| r.split_once('-'))
            .and_then(|(h, r)| Some((h.parse::<i64>().ok()?, r.split_once("of")?)))
            .and_then(|(h, (n, k))| Some((h, n.parse::<usize>().ok()?, k.parse::<usize>().ok()?)));
        let Some((h, 1, k)) = parsed else {
            violations.push(format!("seq {}: {id} does not start a transaction", log[i].seq));
            break;
        };
        for n in 1..=k {
            let want = format!("h{h}-{n}of{k}");
            match log.get(i + n - 1) {
                Some(e) if e.id == want && e.seq == h - (k - n) as i64 => {}
                other => violations.push(format!(
                    "transaction {h}: envelope {n} of {k} is {:?}",
                    other.map(|e| (&e.id, e.seq))
                )),
            }
        }
        match tx.run(&format!("r{h}")) {
            Ok(Some(r)) if r.fired_seq() == h => {}
            other => violations.push(format!("transaction {h}: its run is {other:?}")),
        }
        transactions += 1;
        i += k;
    }
    let cursor = tx
        .progress("rule")
        .expect("progress")
        .and_then(|p| p.doc().get("cursor").and_then(|c| c.as_i64()))
        .unwrap_or(0);
    if cursor != head {
        violations.push(format!("progress cursor {cursor} but head {head}"));
    }
    let runs = s.runs(&workspace(), &Default::default()).expect("runs").len();
    if runs != transactions {
        violations.push(format!("{runs} runs for {transactions} transactions"));
    }
    let info = s.workspace_info(&workspace()).expect("info");
    if head > 0 && info.and_then(|i| i.head_ts) != log.last().map(|e| e.ts) {
        violations.push("head_ts is not the last envelope's ts".into());
    }
    drop(tx);
    Check {
        head,
        transactions,
        violations,
    }
}

#[derive(Default)]
struct Trials {
    trials: u64,
    writer_kills: u64,
    server_crashes: u64,
    /// Kills after an `appended` line without its `committed`: inside the transaction or its
    /// commit.
    mid_transaction: u64,
    acknowledged: u64,
    progressed: u64,
    failures: Vec<String>,
    last_head: i64,
}

fn run_trials(
    url: &str,
    schema: &str,
    trials: u64,
    rng: &mut fastrand::Rng,
    split: bool,
    cluster: Option<&pg::Cluster>,
) -> Trials {
    let mut t = Trials::default();
    for trial in 1..=trials {
        t.trials = trial;
        let mut command = Command::new(env!("CARGO_BIN_EXE_workspace_pg_worker"));
        command.args([url, schema, "crash"]).arg(rng.u64(..).to_string());
        if split {
            command.arg("split");
        }
        let (mut child, stdout, stderr) = spawn_ready(command, "the writer", trial);
        std::thread::sleep(Duration::from_millis(rng.u64(5..=80)));
        if let Some(status) = child.try_wait().expect("try_wait") {
            let err: Vec<String> = stderr.iter().collect();
            panic!("trial {trial}: the writer stopped before the kill: {status}, stderr {err:?}");
        }
        match cluster.filter(|_| trial % 5 == 0) {
            Some(cluster) => {
                // The writer loses its server mid-transaction: it fails (exit 2), or is
                // killed after.
                cluster.crash_and_restart();
                t.server_crashes += 1;
                let _ = child.kill();
                child.wait().expect("wait");
            }
            None => {
                child.kill().expect("SIGKILL the writer");
                let status = child.wait().expect("wait");
                assert_eq!(
                    status.signal(),
                    Some(9),
                    "trial {trial}: not ended by SIGKILL: {status}"
                );
                t.writer_kills += 1;
            }
        }
        let lines: Vec<String> = stdout.iter().collect();
        let found = check(url, schema);
        t.failures
            .extend(found.violations.iter().map(|v| format!("trial {trial}: {v}")));
        let mut last_appended = None;
        let mut last_committed = None;
        for line in &lines {
            if let Some(h) = line.strip_prefix("appended ") {
                last_appended = h.parse::<i64>().ok();
            } else if let Some(h) = line.strip_prefix("committed ") {
                let h: i64 = h.parse().expect("a head");
                last_committed = Some(h);
                t.acknowledged += 1;
                if h > found.head {
                    t.failures.push(format!(
                        "trial {trial}: head {h} was committed, the log ends at {}",
                        found.head
                    ));
                }
            }
        }
        if last_appended.is_some() && last_appended != last_committed {
            t.mid_transaction += 1;
        }
        if found.head > t.last_head {
            t.progressed += 1;
        }
        t.last_head = found.head;
        let _ = found.transactions;
        if !t.failures.is_empty() {
            break; // later trials would build on the damage
        }
    }
    t
}

/// The server crashes this test may make: the cluster of `EXECSTORE_PG_DIR`; a failure when
/// there is none and the server is required.
fn cluster(test: &str) -> Option<pg::Cluster> {
    let cluster = pg::Cluster::from_env();
    if cluster.is_none() {
        let optional = std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1");
        assert!(
            optional,
            "{test}: EXECSTORE_PG_DIR does not name a PostgreSQL cluster this test may crash and restart \
             (scripts/lib/postgres.sh's pg_start sets it; EXECSTORE_PG_OPTIONAL=1 runs the writer kills only)"
        );
        eprintln!("{test}: server crashes SKIPPED: no EXECSTORE_PG_DIR cluster (EXECSTORE_PG_OPTIONAL=1)");
    }
    cluster
}

#[test]
fn workspace_crash_trials_on_postgres() {
    let Some(url) = pg::url_or_skip("workspace_crash_trials_on_postgres") else {
        return;
    };
    let _server = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let cluster = cluster("workspace_crash_trials_on_postgres");
    let trials = env_u64("EXECSTORE_CRASH_TRIALS").unwrap_or(50);
    let seed = seed();
    let schema = pg::fresh_prefix("wscrash");
    drop(PgWorkspaceStorage::open(&url, PgWorkspaceOptions::new().schema(schema.clone())).expect("create"));
    let started = Instant::now();
    let t = run_trials(
        &url,
        &schema,
        trials,
        &mut fastrand::Rng::with_seed(seed),
        false,
        cluster.as_ref(),
    );
    let end = check(&url, &schema);
    eprintln!(
        "workspace crash trials (postgres): {}, writer kills: {}, server crashes: {}, kills inside a \
         transaction or its commit: {}, acknowledged commits checked: {}, trials with progress: {}; at the \
         end {} transactions, head {} ({:.1} s)",
        t.trials,
        t.writer_kills,
        t.server_crashes,
        t.mid_transaction,
        t.acknowledged,
        t.progressed,
        end.transactions,
        end.head,
        started.elapsed().as_secs_f64()
    );
    assert!(t.failures.is_empty(), "seed {seed}:\n{}", t.failures.join("\n"));
    assert_eq!(t.trials, trials);
    if cluster.is_some() {
        assert_eq!(
            t.server_crashes,
            trials / 5,
            "the server was crashed every fifth trial"
        );
    }
    assert!(t.acknowledged > 0, "the writer never reported a commit");
    assert!(
        t.progressed * 2 > trials,
        "the writer made progress in only {} of {trials} trials",
        t.progressed
    );
    assert!(t.mid_transaction > 0, "no kill landed inside a transaction");
    drop_workspace_schema(&url, &schema).expect("drop the schema");
}

/// The check can fail: a writer that commits its envelopes and its progress in two
/// transactions is caught half-way by some kill.
#[test]
fn workspace_crash_trials_catch_a_split_writer_on_postgres() {
    let Some(url) = pg::url_or_skip("workspace_crash_trials_catch_a_split_writer_on_postgres") else {
        return;
    };
    let _server = SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let seed = seed();
    let schema = pg::fresh_prefix("wssplit");
    drop(PgWorkspaceStorage::open(&url, PgWorkspaceOptions::new().schema(schema.clone())).expect("create"));
    let t = run_trials(&url, &schema, 40, &mut fastrand::Rng::with_seed(seed), true, None);
    drop_workspace_schema(&url, &schema).expect("drop the schema");
    eprintln!(
        "split writer: caught after {} of 40 trials: {:?}",
        t.trials,
        t.failures.first()
    );
    assert!(
        t.failures.iter().any(|f| f.contains("progress cursor")),
        "seed {seed}: 40 kills of a split writer, no half-applied transaction seen: {:?}",
        t.failures
    );
}
