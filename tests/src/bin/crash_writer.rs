//! The child of the crash test: opens the SQLite file given as its first argument (default
//! options, a trace ring of [`CRASH_TRACE_MAX`]), prints `ready`, then runs the crash workload
//! on random executions until it is killed. Any store error ends it with exit code 2.
//!
//! Usage: `crash_writer <db-path> <seed> [split]`; `split` commits each step in two
//! transactions (see [`crash_step_with`]), to prove the crash test catches a half-applied step.

use std::io::Write;
use std::process::ExitCode;

use execstore_e2e::{crash_ids, crash_step_with, CRASH_TRACE_MAX};
use execstore_sqlite::{SqliteOptions, SqliteStore};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(seed)) = (args.next(), args.next().and_then(|s| s.parse::<u64>().ok())) else {
        eprintln!("usage: crash_writer <db-path> <seed> [split]");
        return ExitCode::from(64);
    };
    let split = args.next().as_deref() == Some("split");
    let options = SqliteOptions::new().trace_max(Some(CRASH_TRACE_MAX));
    let store = match SqliteStore::open(&path, options) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("crash_writer: open {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "ready").and_then(|()| out.flush()).is_err() {
        return ExitCode::from(2);
    }
    let ids = crash_ids();
    let mut rng = fastrand::Rng::with_seed(seed);
    loop {
        let id = &ids[rng.usize(..ids.len())];
        if let Err(e) = crash_step_with(&store, id, split) {
            eprintln!("crash_writer: step on {id}: {e}");
            return ExitCode::from(2);
        }
    }
}
