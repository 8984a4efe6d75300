//! A child of the workspace crash and race tests: appends to the workspace log of a SQLite file.
//!
//! * `workspace_writer crash <db-path> <seed> [split]`: prints `ready`, then commits batches to
//!   the workspace `crash/w` until it is killed. Each transaction appends 1 to 4 envelopes
//!   (`e-<seq>`), saves the progress of the rule `crash-rule` with `cursor` = the new head, and
//!   saves the run `r-<head>` fired at the new head; once the commit returned it prints
//!   `committed <head>`. With `split` (a deliberately broken variant, to prove the test can
//!   fail) the envelopes and the progress and run are committed in two transactions.
//! * `workspace_writer race <db-path> <go-file> <appends> <writer>`: prints `ready`, waits for
//!   the go file, then commits `appends` transactions of one envelope each (`w<writer>-<i>`) to
//!   the workspace `race/w`, and prints `done <appends>`.
//!
//! Any storage error ends it with exit code 3 (usage errors: 64).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use execstore::executions::JsonObject;
use execstore::workspace::{
    Clock, Entry, NewRun, RuleProgress, Run, SystemClock, WorkspaceRef, WorkspaceStorage,
};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use serde_json::{json, Value};

const USAGE: &str = "usage: workspace_writer crash <db-path> <seed> [split]\n       \
                     workspace_writer race <db-path> <go-file> <appends> <writer>";

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

fn entry(id: String) -> Entry {
    Entry::new(
        id,
        json!({"kind": "source", "name": "writer"}),
        obj(json!({"type": "test:tick", "pad": "ü".repeat(40)})),
    )
}

fn open(path: &str) -> execstore::Result<SqliteWorkspaceStorage> {
    // Racing processes wait for each other's write lock; give them time.
    let options = SqliteWorkspaceOptions::new().busy_timeout(Duration::from_secs(60));
    SqliteWorkspaceStorage::open(path, options)
}

fn say(out: &mut impl Write, line: &str) -> bool {
    writeln!(out, "{line}").and_then(|()| out.flush()).is_ok()
}

/// One batch of the crash workload; returns the new head.
fn crash_batch(
    s: &dyn WorkspaceStorage,
    w: &WorkspaceRef,
    rng: &mut fastrand::Rng,
    split: bool,
) -> execstore::Result<i64> {
    let mut tx = s.begin(w)?;
    let head = tx.head_seq()?;
    let k = rng.i64(1..=4);
    let entries: Vec<Entry> = (head + 1..=head + k)
        .map(|seq| entry(format!("e-{seq}")))
        .collect();
    tx.append(&entries)?;
    let new_head = head + k;
    if split {
        tx.commit()?;
        // Widens the window between the two commits.
        std::thread::sleep(Duration::from_millis(2));
        tx = s.begin(w)?;
    }
    let progress = RuleProgress::from_doc(obj(json!({
        "cursor": new_head, "generation": 0, "definition": "", "deadlines": {}, "silent_through": 0
    })));
    tx.save_progress("crash-rule", &progress)?;
    let now = SystemClock.now();
    let run = Run::pending(NewRun {
        id: format!("r-{new_head}"),
        rule: "crash-rule".into(),
        scope_key: "k".into(),
        scope: JsonObject::new(),
        fired_seq: new_head,
        matched: vec![new_head],
        correlation_id: format!("e-{new_head}"),
        depth: 0,
        now,
    })?;
    tx.save_runs(&[run])?;
    tx.commit()?;
    Ok(new_head)
}

fn crash(args: &[String]) -> ExitCode {
    let (Some(path), Some(seed), split) = (
        args.first(),
        args.get(1).and_then(|s| s.parse::<u64>().ok()),
        args.get(2).map(String::as_str) == Some("split"),
    ) else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let s = match open(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("workspace_writer: open {path}: {e}");
            return ExitCode::from(3);
        }
    };
    let mut out = std::io::stdout().lock();
    if !say(&mut out, "ready") {
        return ExitCode::from(3);
    }
    let w = WorkspaceRef::new("crash", "w");
    let mut rng = fastrand::Rng::with_seed(seed);
    loop {
        match crash_batch(&s, &w, &mut rng, split) {
            // Told only once the commit returned, so the test can check none is lost.
            Ok(head) => {
                if !say(&mut out, &format!("committed {head}")) {
                    return ExitCode::from(3);
                }
            }
            Err(e) => {
                eprintln!("workspace_writer: batch: {e}");
                return ExitCode::from(3);
            }
        }
    }
}

fn race(args: &[String]) -> ExitCode {
    let (Some(path), Some(go), Some(appends), Some(writer)) = (
        args.first(),
        args.get(1),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
        args.get(3),
    ) else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let s = match open(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("workspace_writer: open {path}: {e}");
            return ExitCode::from(3);
        }
    };
    let mut out = std::io::stdout().lock();
    if !say(&mut out, "ready") {
        return ExitCode::from(3);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !Path::new(go).exists() {
        if Instant::now() > deadline {
            eprintln!("workspace_writer: no go file after 60 s");
            return ExitCode::from(3);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let w = WorkspaceRef::new("race", "w");
    for i in 0..appends {
        let appended = s.begin(&w).and_then(|mut tx| {
            tx.append(&[entry(format!("w{writer}-{i}"))])?;
            tx.commit()
        });
        if let Err(e) = appended {
            eprintln!("workspace_writer: append {i}: {e}");
            return ExitCode::from(3);
        }
    }
    if !say(&mut out, &format!("done {appends}")) {
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("crash") => crash(&args[1..]),
        Some("race") => race(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(64)
        }
    }
}
