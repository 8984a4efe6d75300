//! The child of the crash test: opens the store its arguments name (a SQLite file, or tables
//! on a PostgreSQL server; a trace ring of [`CRASH_TRACE_MAX`]), prints `ready`, then runs the
//! crash workload on random executions until it is killed, printing `committed <id>
//! <version>` once each step is durable. Any store error ends it with exit code 2.
//!
//! Usage: `crash_writer <db-path> <seed> [split]` or
//! `crash_writer --pg <url> --prefix <prefix> <seed> [split]`; `split` commits each step in two
//! transactions (see [`crash_step_with`]), to prove the crash test catches a half-applied step.

use std::io::Write;
use std::process::ExitCode;

use execstore_e2e::{crash_ids, crash_step_with, open_store_args, CRASH_TRACE_MAX};

const USAGE: &str = "usage: crash_writer <db-path> <seed> [split]\n       \
                     crash_writer --pg <url> --prefix <prefix> <seed> [split]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((store, what, rest)) = open_store_args(&args, Some(CRASH_TRACE_MAX), 2) else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let (Some(seed), split) = (
        rest.first().and_then(|s| s.parse::<u64>().ok()),
        rest.get(1).map(String::as_str) == Some("split"),
    ) else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let store = match store {
        Ok(store) => store,
        Err(e) => {
            eprintln!("crash_writer: open {what}: {e}");
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
        match crash_step_with(store.as_ref(), id, split) {
            // Told only once the step is durable, so the test can check none is lost.
            Ok(done) => {
                if writeln!(out, "committed {id} {}", done.version())
                    .and_then(|()| out.flush())
                    .is_err()
                {
                    return ExitCode::from(2);
                }
            }
            Err(e) => {
                eprintln!("crash_writer: step on {id}: {e}");
                return ExitCode::from(2);
            }
        }
    }
}
