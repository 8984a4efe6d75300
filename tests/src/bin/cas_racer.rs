//! A child of the multi-process CAS race: opens the store (a SQLite file, or tables on a
//! PostgreSQL server), prints `ready`, waits for the go file to appear, then makes `increments` successful increments of `context.counter`,
//! alternating between the race executions and retrying on a conflict (with up to 300 µs of
//! simulated work between each load and its commit). At the end it prints
//! `{"conflicts": C, "increments": M}`. Any other store error is printed and ends it with exit
//! code 3.
//!
//! Usage: `cas_racer <db-path> <go-file> <increments>` (a SQLite file), or
//! `cas_racer --pg <url> --prefix <prefix> <go-file> <increments>` (a PostgreSQL server, the
//! tables under `prefix`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use execstore_e2e::{increment_counter, open_store_args, RACE_IDS};

const USAGE: &str = "usage: cas_racer <db-path> <go-file> <increments>\n       \
                     cas_racer --pg <url> --prefix <prefix> <go-file> <increments>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((store, what, rest)) = open_store_args(&args, Some(execstore::executions::DEFAULT_TRACE_MAX), 2)
    else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let (Some(go), Some(increments), None) = (
        rest.first(),
        rest.get(1).and_then(|s| s.parse::<usize>().ok()),
        rest.get(2),
    ) else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let store = match store {
        Ok(store) => store,
        Err(e) => {
            println!("error: open {what}: {e}");
            eprintln!("cas_racer: open {what}: {e}");
            return ExitCode::from(3);
        }
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "ready").and_then(|()| out.flush()).is_err() {
        return ExitCode::from(3);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !Path::new(go).exists() {
        if Instant::now() > deadline {
            eprintln!("cas_racer: no go file after 60 s");
            return ExitCode::from(3);
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    // Up to 300 µs of "work" between load and commit widens the window in which another
    // process can commit first, so conflicts happen even when commits are fast.
    let mut rng = fastrand::Rng::new();
    let mut think = || std::thread::sleep(Duration::from_micros(rng.u64(0..=300)));
    let mut conflicts = 0;
    for i in 0..increments {
        let id = RACE_IDS[i % RACE_IDS.len()];
        match increment_counter(store.as_ref(), id, &mut think) {
            Ok(c) => conflicts += c,
            Err(e) => {
                let _ = writeln!(out, "error: increment {i} of {id}: {e:?}");
                eprintln!("cas_racer: increment {i} of {id}: {e}");
                return ExitCode::from(3);
            }
        }
    }
    let _ = writeln!(
        out,
        "{}",
        serde_json::json!({ "conflicts": conflicts, "increments": increments })
    );
    let _ = out.flush();
    ExitCode::SUCCESS
}
