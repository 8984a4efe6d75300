//! A child of the multi-process CAS race: opens the SQLite file, prints `ready`, waits for the
//! go file to appear, then makes `increments` successful increments of `context.counter`,
//! alternating between the race executions and retrying on a conflict (with up to 300 µs of
//! simulated work between each load and its commit). At the end it prints
//! `{"conflicts": C, "increments": M}`. Any other store error is printed and ends it with exit
//! code 3.
//!
//! Usage: `cas_racer <db-path> <go-file> <increments>`

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use execstore_e2e::{increment_counter, RACE_IDS};
use execstore_sqlite::{SqliteOptions, SqliteStore};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(go), Some(increments)) = (
        args.next(),
        args.next(),
        args.next().and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: cas_racer <db-path> <go-file> <increments>");
        return ExitCode::from(64);
    };
    let store = match SqliteStore::open(&path, SqliteOptions::new()) {
        Ok(store) => store,
        Err(e) => {
            println!("error: open {path}: {e}");
            eprintln!("cas_racer: open {path}: {e}");
            return ExitCode::from(3);
        }
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "ready").and_then(|()| out.flush()).is_err() {
        return ExitCode::from(3);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while !Path::new(&go).exists() {
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
        match increment_counter(&store, id, &mut think) {
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
