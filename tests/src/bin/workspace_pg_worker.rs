//! The child process of the PostgreSQL workspace crash and race tests
//! (`tests/tests/workspace_crash_pg.rs`, `tests/tests/workspace_race_pg.rs`). It opens a
//! `PgWorkspaceStorage` on `<url>` in `<schema>`, prints `ready`, and then:
//!
//! - `crash <seed> [split]`: until killed, on workspace `crash/w`, transactions that each
//!   append k (1..=5) envelopes named `h<head>-<i>of<k>`, save rule `rule`'s progress with
//!   `cursor` = the new head and a run `r<head>`; prints `appended <head>` before the commit
//!   and `committed <head>` once it returned. `split` commits the envelopes and the rest in
//!   two transactions, to prove the check catches a half-applied one.
//! - `race <go-file> <tag> <n>`: once `<go-file>` exists, appends `<tag>-0` .. `<tag>-<n-1>`
//!   to workspace `race/w` in transactions of 1 to 3; prints `done <n>`.
//! - `hold <ms>`: begins a transaction on `par/one`, appends `held`, prints `holding`, sleeps
//!   `<ms>`, commits and prints `committed`.
//!
//! Any storage error ends it with exit code 2 (64 for bad arguments).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use execstore::executions::JsonObject;
use execstore::workspace::{Entry, RuleProgress, Run, WorkspaceRef, WorkspaceStorage};
use execstore_e2e::obj;
use execstore_postgres::{PgWorkspaceOptions, PgWorkspaceStorage};
use serde_json::json;

const USAGE: &str = "usage: workspace_pg_worker <url> <schema> crash <seed> [split]\n       \
                     workspace_pg_worker <url> <schema> race <go-file> <tag> <n>\n       \
                     workspace_pg_worker <url> <schema> hold <ms>";

fn say(line: &str) -> execstore::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| execstore::StoreError::backend(e, false))
}

fn entry(id: String, n: usize) -> Entry {
    let event: JsonObject = obj(json!({"type": "test:step", "n": n, "text": "é ✓", "x": 0.1}));
    Entry::new(id, json!({"kind": "source", "name": "worker"}), event)
}

/// The run each crash transaction saves.
fn run_for(head: i64) -> execstore::Result<Run> {
    Run::pending(execstore::workspace::NewRun {
        id: format!("r{head}"),
        rule: "rule".into(),
        scope_key: "k".into(),
        scope: JsonObject::new(),
        fired_seq: head,
        matched: vec![head],
        correlation_id: format!("c{head}"),
        depth: 0,
        now: execstore::workspace::Timestamp::from_micros(1_767_268_800_000_000)?,
    })
}

fn crash(s: &PgWorkspaceStorage, seed: u64, split: bool) -> execstore::Result<()> {
    let ws = WorkspaceRef::new("crash", "w");
    let mut rng = fastrand::Rng::with_seed(seed);
    loop {
        let mut tx = s.begin(&ws)?;
        let k = rng.usize(1..=5);
        let head = tx.head_seq()? + k as i64;
        let entries: Vec<Entry> = (1..=k).map(|i| entry(format!("h{head}-{i}of{k}"), i)).collect();
        tx.append(&entries)?;
        if split {
            tx.commit()?;
            std::thread::sleep(Duration::from_micros(rng.u64(0..1500)));
            tx = s.begin(&ws)?;
        }
        say(&format!("appended {head}"))?;
        // Sometimes dawdle inside the transaction, so kills land there too.
        if rng.bool() {
            std::thread::sleep(Duration::from_micros(rng.u64(0..2000)));
        }
        tx.save_progress("rule", &RuleProgress::from_doc(obj(json!({"cursor": head}))))?;
        tx.save_runs(&[run_for(head)?])?;
        tx.commit()?;
        // Told only once the transaction is durable, so the test can check none is lost.
        say(&format!("committed {head}"))?;
    }
}

fn race(s: &PgWorkspaceStorage, go: &str, tag: &str, n: usize) -> execstore::Result<()> {
    let ws = WorkspaceRef::new("race", "w");
    while !std::path::Path::new(go).exists() {
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut rng = fastrand::Rng::with_seed(n as u64 ^ tag.len() as u64);
    let mut i = 0;
    while i < n {
        let k = rng.usize(1..=3).min(n - i);
        let mut tx = s.begin(&ws)?;
        let entries: Vec<Entry> = (i..i + k).map(|j| entry(format!("{tag}-{j}"), j)).collect();
        tx.append(&entries)?;
        tx.commit()?;
        i += k;
    }
    say(&format!("done {n}"))
}

fn hold(s: &PgWorkspaceStorage, ms: u64) -> execstore::Result<()> {
    let ws = WorkspaceRef::new("par", "one");
    let mut tx = s.begin(&ws)?;
    tx.append(&[entry("held".into(), 0)])?;
    say("holding")?;
    std::thread::sleep(Duration::from_millis(ms));
    tx.commit()?;
    say("committed")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, schema, mode, rest @ ..] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let storage = match PgWorkspaceStorage::open(
        url,
        PgWorkspaceOptions::new()
            .schema(schema.clone())
            .max_connections(2),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("workspace_pg_worker: open {schema}: {e}");
            return ExitCode::from(2);
        }
    };
    if say("ready").is_err() {
        return ExitCode::from(2);
    }
    let result = match (mode.as_str(), rest) {
        ("crash", [seed, more @ ..]) if more.len() <= 1 => match seed.parse() {
            Ok(seed) => crash(&storage, seed, more.first().map(String::as_str) == Some("split")),
            Err(_) => Err(execstore::StoreError::invalid("seed", USAGE)),
        },
        ("race", [go, tag, n]) => match n.parse() {
            Ok(n) => race(&storage, go, tag, n),
            Err(_) => Err(execstore::StoreError::invalid("n", USAGE)),
        },
        ("hold", [ms]) => match ms.parse() {
            Ok(ms) => hold(&storage, ms),
            Err(_) => Err(execstore::StoreError::invalid("ms", USAGE)),
        },
        _ => Err(execstore::StoreError::invalid("mode", USAGE)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ execstore::StoreError::InvalidInput { .. }) => {
            eprintln!("workspace_pg_worker: {e}");
            ExitCode::from(64)
        }
        Err(e) => {
            eprintln!("workspace_pg_worker: {mode}: {e}");
            ExitCode::from(2)
        }
    }
}
