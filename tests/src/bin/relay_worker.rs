//! A child of the multi-worker relay tests: opens the store its arguments name and works
//! one kind of deferred work the way a relay, a spawner or a timer sweep would.
//!
//! Usage: `relay_worker <store args> <mode> <kind> [ms]` where `<store args>` are as for
//! [`open_store_args`], `<kind>` is `outbox`, `spawns` or `timers`, and `<mode>`:
//! - `drain`: prints `ready` once the store is open, and waits for a line on stdin (the
//!   parent's barrier: it releases every worker at once; end of input releases too). Then
//!   claims batches of 10 until a claim comes back empty, printing `got <key>` for each entry
//!   handed to it (a timer's key is `<execution_id>/<path>`) and holding each batch for `ms`
//!   milliseconds (simulated delivery) before acking it (a timer: deleting it); after each
//!   batch `held <from> <to>`, the microseconds (since the epoch) between which it held it;
//!   then `done`.
//! - `stall`: claims one batch of 10, prints `claimed <key>` for each and `holding`, then
//!   sleeps until it is killed.
//! - `wait`: primes a wait for `<kind>`, prints `listening`, waits up to `ms` milliseconds and
//!   prints `woken <true|false> <elapsed ms>`.
//!
//! A store error is printed to stderr and ends it with exit code 3.
//!
//! With `EXECSTORE_RELAY_UNLOCKED_CLAIMS=1` (and a PostgreSQL store) the store is opened with
//! the test-only `PgOptions::unlocked_claims`: claims take no lock, so concurrent workers are
//! handed the same entries, which the relay tests must notice. A retryable error (two workers
//! acking the same rows may deadlock) is then retried rather than fatal.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use execstore::{
    executions::{DueTimer, Work},
    ExecutionStore,
};
use execstore_e2e::{open_store_args, OpenedStore};
use execstore_postgres::{PgOptions, PgStore};

const USAGE: &str =
    "usage: relay_worker <db-path | --pg URL --prefix P> <drain|stall|wait> <outbox|spawns|timers> [ms]";
/// Every timer the tests arm is due by then.
const FAR_FUTURE: f64 = 1e12;
const BATCH: usize = 10;
/// The environment variable that selects claims without locks (see the module's docs).
const UNLOCKED: &str = "EXECSTORE_RELAY_UNLOCKED_CLAIMS";
/// How many retryable errors an unlocked drain gets past.
const RETRIES: u32 = 50;

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

fn unlocked() -> bool {
    std::env::var(UNLOCKED).as_deref() == Ok("1")
}

/// The store `args` name, opened as [`open_store_args`] does, but with claims that take no
/// lock when [`UNLOCKED`] asks for them.
fn open(args: &[String]) -> Option<OpenedStore<'_>> {
    match args {
        [flag, url, pflag, prefix, rest @ ..] if unlocked() && flag == "--pg" && pflag == "--prefix" => {
            let options = PgOptions::new()
                .prefix(prefix.clone())
                .trace_max(Some(execstore::executions::DEFAULT_TRACE_MAX))
                .max_connections(4)
                .unlocked_claims(true);
            let store = PgStore::open(url, options).map(|s| Box::new(s) as Box<dyn ExecutionStore>);
            Some((store, format!("{url} (prefix {prefix}, unlocked claims)"), rest))
        }
        _ if unlocked() => None,
        _ => open_store_args(args, Some(execstore::executions::DEFAULT_TRACE_MAX), 4),
    }
}

fn timer_key(t: &DueTimer) -> String {
    format!("{}/{}", t.execution_id, t.path)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // The parent reads lines as they come: a lost pipe means it is gone, so are we.
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
        std::process::exit(3);
    }
}

/// One claim of `kind`: `handle` sees the keys handed out and says whether to ack them.
fn claim(
    store: &dyn ExecutionStore,
    kind: Work,
    handle: &mut dyn FnMut(&[String]) -> bool,
) -> execstore::Result<usize> {
    match kind {
        Work::Outbox => store.relay_outbox(BATCH, &mut |entries| {
            let keys: Vec<String> = entries.iter().map(|e| e.seq.to_string()).collect();
            if handle(&keys) {
                entries.iter().map(|e| e.seq).collect()
            } else {
                Vec::new()
            }
        }),
        Work::Spawns => store.relay_spawns(BATCH, &mut |entries| {
            let keys: Vec<String> = entries.iter().map(|e| e.child_id.clone()).collect();
            if handle(&keys) {
                entries.iter().map(|e| e.seq).collect()
            } else {
                Vec::new()
            }
        }),
        Work::Timers => {
            let mut failed = None;
            let offered = store.sweep_timers(FAR_FUTURE, BATCH, &mut |timers| {
                let keys: Vec<String> = timers.iter().map(timer_key).collect();
                if handle(&keys) {
                    for t in timers {
                        if let Err(e) = store.delete_timer(&t.execution_id, &t.path, t.fire_at) {
                            failed = Some(e);
                        }
                    }
                }
            })?;
            match failed {
                Some(e) => Err(e),
                None => Ok(offered),
            }
        }
    }
}

fn run(store: &dyn ExecutionStore, mode: &str, kind: Work, ms: u64) -> execstore::Result<()> {
    match mode {
        "drain" => {
            say("ready");
            let mut go = String::new();
            // The barrier: a line, or the end of input.
            let _ = std::io::stdin().lock().read_line(&mut go);
            let mut retries = 0;
            loop {
                let mut handed = 0;
                let claimed = claim(store, kind, &mut |keys| {
                    let from = now_us();
                    handed = keys.len();
                    for key in keys {
                        say(&format!("got {key}"));
                    }
                    std::thread::sleep(Duration::from_millis(ms));
                    say(&format!("held {from} {}", now_us()));
                    true
                });
                match claimed {
                    Err(e) if unlocked() && e.is_retryable() && retries < RETRIES => {
                        retries += 1;
                        eprintln!("relay_worker: retrying after {e}");
                        continue;
                    }
                    other => other?,
                };
                if handed == 0 {
                    say("done");
                    return Ok(());
                }
            }
        }
        "stall" => {
            claim(store, kind, &mut |keys| {
                for key in keys {
                    say(&format!("claimed {key}"));
                }
                say("holding");
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            })?;
            Ok(())
        }
        "wait" => {
            let timeout = Duration::from_millis(ms);
            store.wait_for_work(kind, timeout)?;
            say("listening");
            let start = Instant::now();
            let woken = store.wait_for_work(kind, timeout)?;
            say(&format!("woken {woken} {}", start.elapsed().as_millis()));
            Ok(())
        }
        _ => Err(execstore::StoreError::invalid("mode", USAGE)),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((store, what, rest)) = open(&args) else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let kind = match rest.get(1).map(String::as_str) {
        Some("outbox") => Work::Outbox,
        Some("spawns") => Work::Spawns,
        Some("timers") => Work::Timers,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(64);
        }
    };
    let (Some(mode), Ok(ms)) = (rest.first(), rest.get(2).map_or(Ok(0), |ms| ms.parse::<u64>())) else {
        eprintln!("{USAGE}");
        return ExitCode::from(64);
    };
    let store = match store {
        Ok(store) => store,
        Err(e) => {
            eprintln!("relay_worker: open {what}: {e}");
            return ExitCode::from(3);
        }
    };
    match run(store.as_ref(), mode, kind, ms) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("relay_worker: {mode} {kind:?}: {e}");
            ExitCode::from(3)
        }
    }
}
