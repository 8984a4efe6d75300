//! `execstore bench`: benchmark workload W1 exactly as `shared/bench/WORKLOAD.md` specifies
//! it, so that its JSON line sits beside the Python reference peer's (`bench.py`) and harel's
//! own store: the same deterministic rows (`exe0_data_sha256` proves it), the same phases in
//! the same order, the same keys in the same order.
//!
//! Where execstore's contract differs from the reference store's, the closest equivalent is
//! measured, and said so where it happens:
//!
//! * listing cursors are opaque keyset cursors, not base64 offsets: the middle page is
//!   fetched with the cursor the full pass got for it;
//! * `due_timers` and `pending_outbox` are paged (`after`, `limit`): "all due timers" and
//!   "all pending entries" are read page by page;
//! * the outbox drain acks the first half of the entries one by one, as the spec does
//!   (`outbox_drain_acks_per_s`), and the second half a page at a time with `ack_outbox_many`
//!   (`outbox_drain_batch_acks_per_s`, an extra key).
//!
//! `--clients C` (an extension; 1 is W1 as specified) runs phase 1 on C threads, thread c
//! owning the executions i with i mod C = c and running rounds 1..=K over them in index
//! order, its commits gathered into shared transactions by [`GroupCommit`] unless
//! `--group-commit off`. Every other phase is the same as with one client.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use execstore::w1::{exe_id, in_event_id, initial_execution, step, Round};
use execstore::{
    executions::{paging, GroupCommit, ListQuery, Status},
    ExecutionStore,
};
use execstore_any::{Backend, Options, Target, MEMORY, POSTGRES, SQLITE};
use execstore_sqlite::Synchronous;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::args::{BenchBackend, BenchSynchronous};
use crate::error::CliError;

const NOW_FAR_FUTURE: f64 = 1e12;
const LIST_LIMIT: usize = 100;
const DUE_PAGE: usize = 10_000;
const OUTBOX_PAGE: usize = 1000;
const READ_TRACE_EXECS: usize = 100;
/// Small read timings are the median of this many.
const REPEATS: usize = 5;

/// What `execstore bench` runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The store.
    pub backend: BenchBackend,
    /// The SQLite file (must not exist; `None`: a temporary one), or the PostgreSQL URL.
    pub db: Option<PathBuf>,
    /// The table prefix (PostgreSQL: of fresh tables, kept; `None`: a unique one, dropped).
    pub prefix: Option<String>,
    /// N.
    pub executions: usize,
    /// K.
    pub events: u32,
    /// A trace step with every commit.
    pub trace: bool,
    /// `PRAGMA synchronous`, if set.
    pub synchronous: Option<BenchSynchronous>,
    /// S.
    pub seed: u32,
    /// Threads of phase 1.
    pub clients: usize,
    /// Phase 1 commits through [`GroupCommit`].
    pub group_commit: bool,
    /// Phase 1 reads with one `load_for_event` instead of `load` + `is_processed`.
    pub load_for_event: bool,
}

/// The timings and counts of one run of the phases.
#[derive(Debug, Default)]
struct Measured {
    create: Duration,
    commit: Duration,
    list_all: Duration,
    list_rows: usize,
    list_pages: usize,
    list_mid: Duration,
    due: Duration,
    due_rows: usize,
    drain_single: Duration,
    acked_single: usize,
    drain_batch: Duration,
    acked_batch: usize,
    read_trace: Duration,
    trace_rows: usize,
    exe0_sha256: Option<String>,
    /// Items per batch of the group commit, if used.
    mean_batch: Option<f64>,
}

/// `db` with `suffix` appended to its file name (`-wal`, `-shm`).
fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(db.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

fn file_size(path: &Path) -> anyhow::Result<u64> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(meta.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(CliError::Io(e)).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Runs W1 and returns its JSON line's object, keys in the spec's order.
pub fn run(cfg: &Config) -> anyhow::Result<Value> {
    if cfg.backend == BenchBackend::Memory
        && (cfg.db.is_some() || cfg.prefix.is_some() || cfg.synchronous.is_some())
    {
        return Err(
            CliError::Input("--db, --prefix and --synchronous are for --backend sqlite".into()).into(),
        );
    }
    if cfg.backend == BenchBackend::Postgres && cfg.synchronous.is_some() {
        return Err(CliError::Input("--synchronous is for --backend sqlite".into()).into());
    }
    if let (BenchBackend::Sqlite, Some(db)) = (cfg.backend, &cfg.db) {
        if let Some(existing) = ["", "-wal", "-shm"]
            .iter()
            .map(|sfx| with_suffix(db, sfx))
            .find(|f| f.exists())
        {
            return Err(CliError::Input(format!(
                "{} already exists; the benchmark needs a fresh database file",
                existing.display()
            ))
            .into());
        }
    }
    // The default database: a fresh file in a temporary directory, removed (with its -wal and
    // -shm) when `tmp` drops, after the sizes are read.
    let tmp = match (&cfg.backend, &cfg.db) {
        (BenchBackend::Sqlite, None) => Some(
            tempfile::Builder::new()
                .prefix("execstore-bench-")
                .tempdir()
                .map_err(CliError::Io)
                .context("cannot make a temporary directory")?,
        ),
        _ => None,
    };

    let wall = Instant::now();
    let (m, db_bytes, wal_bytes, sqlite_version) = match cfg.backend {
        BenchBackend::Sqlite => {
            let db = match (&cfg.db, &tmp) {
                (Some(db), _) => db.clone(),
                (None, Some(dir)) => dir.path().join("bench.db"),
                (None, None) => unreachable!("a temporary directory is made when --db is not given"),
            };
            let mut options = Options::new().executions(true).prefix(cfg.prefix.as_deref());
            if let Some(level) = cfg.synchronous {
                options.sqlite.connect.synchronous = match level {
                    BenchSynchronous::Full => Synchronous::Full,
                    BenchSynchronous::Normal => Synchronous::Normal,
                    BenchSynchronous::Off => Synchronous::Off,
                };
            }
            let store = open_store(&SQLITE, &db.to_string_lossy(), &options)
                .with_context(|| format!("cannot create the store {}", db.display()))?;
            // `drive` drops the store: closing its connection (the last one) checkpoints the
            // WAL into the main file and removes it.
            let m = drive(store, cfg)?;
            let db_bytes = file_size(&db)?;
            let wal_bytes = file_size(&with_suffix(&db, "-wal"))?;
            (m, db_bytes, Some(wal_bytes), Some(rusqlite::version()))
        }
        BenchBackend::Memory => {
            let store = open_store(&MEMORY, "memory:", &Options::new().executions(true))?;
            (drive(store, cfg)?, 0, Some(0), None)
        }
        // The server's WAL is not the store's own: no figure.
        BenchBackend::Postgres => {
            let (m, db_bytes) = run_postgres(cfg)?;
            (m, db_bytes, None, None)
        }
    };
    let wall = wall.elapsed();
    drop(tmp);

    let n = cfg.executions;
    let k = cfg.events as usize;
    let mut out = Map::new();
    let mut put = |key: &str, value: Value| {
        out.insert(key.to_owned(), value);
    };
    put(
        "impl",
        Value::from(match cfg.backend {
            BenchBackend::Sqlite => "execstore-sqlite",
            BenchBackend::Memory => "execstore-memory",
            BenchBackend::Postgres => "execstore-postgres",
        }),
    );
    put("executions", Value::from(n));
    put("events", Value::from(k));
    put("commit_events_per_s", rate(n * k, m.commit));
    put("list_all_pages_ms", millis(m.list_all));
    put("list_mid_page_ms", millis(m.list_mid));
    put("due_timers_ms", millis(m.due));
    put("outbox_drain_acks_per_s", rate(m.acked_single, m.drain_single));
    put("read_trace_100_ms", millis(m.read_trace));
    put("db_bytes", Value::from(db_bytes));
    put("python", Value::Null);
    put("sqlite", sqlite_version.map_or(Value::Null, Value::from));
    // Extras: the configuration echo and the cross-checks of WORKLOAD.md, in its order.
    put("trace", Value::from(cfg.trace));
    put(
        "synchronous",
        cfg.synchronous.map_or(Value::Null, |level| {
            Value::from(match level {
                BenchSynchronous::Full => "full",
                BenchSynchronous::Normal => "normal",
                BenchSynchronous::Off => "off",
            })
        }),
    );
    put("seed", Value::from(cfg.seed));
    put("create_saves_per_s", rate(n, m.create));
    put("list_rows", Value::from(m.list_rows));
    put("list_pages", Value::from(m.list_pages));
    put("due_timers_rows", Value::from(m.due_rows));
    put("outbox_acked", Value::from(m.acked_single + m.acked_batch));
    put("read_trace_rows", Value::from(m.trace_rows));
    put(
        "wal_bytes_after_close",
        wal_bytes.map_or(Value::Null, Value::from),
    );
    put("exe0_data_sha256", m.exe0_sha256.map_or(Value::Null, Value::from));
    put("wall_s", round_to(wall.as_secs_f64(), 2));
    // Extras of this peer.
    put("runtime", Value::from(env!("EXECSTORE_RUSTC_VERSION")));
    put("clients", Value::from(cfg.clients));
    put("group_commit", Value::from(cfg.group_commit));
    let event_read = if cfg.load_for_event {
        "load-for-event"
    } else {
        "load-then-check"
    };
    put("event_read", Value::from(event_read));
    put("mean_batch", m.mean_batch.map_or(Value::Null, |b| round_to(b, 2)));
    put(
        "outbox_drain_batch_acks_per_s",
        rate(m.acked_batch, m.drain_batch),
    );
    put(
        "backend",
        Value::from(match cfg.backend {
            BenchBackend::Sqlite => "sqlite",
            BenchBackend::Memory => "memory",
            BenchBackend::Postgres => "postgres",
        }),
    );
    Ok(Value::Object(out))
}

/// Drops the bench's PostgreSQL tables when it goes, unless they are to be kept.
struct PgTables {
    url: String,
    prefix: String,
    keep: bool,
}

impl Drop for PgTables {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        // Best effort: the run's result is already out.
        let _ = execstore_postgres::drop_store(&self.url, Some(&self.prefix));
    }
}

/// W1 on PostgreSQL: the server `--db` names, fresh tables under `--prefix` (kept) or under
/// a unique prefix (dropped at the end, on failure too). Returns the measures and `db_bytes`:
/// the sum of `pg_total_relation_size` (heap, indexes, TOAST) of the store's tables after
/// the run, dead rows not yet vacuumed included.
fn run_postgres(cfg: &Config) -> anyhow::Result<(Measured, u64)> {
    let url = match cfg.db.as_deref().and_then(Path::to_str) {
        Some(url) if Target::parse(url).is_ok_and(|t| std::ptr::eq(t.backend, &POSTGRES)) => url,
        _ => {
            return Err(CliError::Input(
                "--backend postgres needs --db postgres://USER@HOST:PORT/DATABASE".into(),
            )
            .into())
        }
    };
    let (prefix, keep) = match &cfg.prefix {
        Some(prefix) => (prefix.clone(), true),
        None => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            (
                format!("execstore_bench_{:x}_{nanos:x}", std::process::id()),
                false,
            )
        }
    };
    let existing = execstore_postgres::store_exists(url, Some(&prefix))
        .map_err(CliError::Store)
        .with_context(|| format!("cannot connect to {url}"))?;
    if existing {
        return Err(CliError::Input(format!(
            "tables with the prefix {prefix} already exist; the benchmark needs fresh tables \
             (pick another --prefix)"
        ))
        .into());
    }
    let mut options = Options::new().executions(true).prefix(Some(&prefix));
    options.postgres.connect.max_connections = u32::try_from(cfg.clients + 1).unwrap_or(32).clamp(2, 32);
    let store =
        open_store(&POSTGRES, url, &options).with_context(|| format!("cannot create the store on {url}"))?;
    // From here the tables exist (the prefix was valid): drop them at the end unless kept.
    let tables = PgTables {
        url: url.to_owned(),
        prefix,
        keep,
    };
    let m = drive(store, cfg)?;
    let bytes = execstore_postgres::store_bytes(url, Some(&tables.prefix))
        .map_err(CliError::Store)
        .context("measure the store's size")?;
    drop(tables);
    Ok((m, bytes))
}

/// The execution store of the row `backend` at `location` (the bench names its backend with
/// `--backend`, and `--db` is that backend's location as it is: a file's path, a server's URL).
fn open_store(
    backend: &'static Backend,
    location: &str,
    options: &Options,
) -> anyhow::Result<std::sync::Arc<dyn ExecutionStore>> {
    let target = Target {
        backend,
        location: location.to_owned(),
    };
    let stores = target.open(options).map_err(CliError::Store)?;
    stores.executions.context("the backend opened no execution store")
}

fn round_to(x: f64, places: i32) -> Value {
    let scale = 10f64.powi(places);
    Value::from((x * scale).round() / scale)
}

/// `count` per second over `t`, to 1 decimal (`null` for no time at all).
fn rate(count: usize, t: Duration) -> Value {
    let secs = t.as_secs_f64();
    if secs > 0.0 {
        round_to(count as f64 / secs, 1)
    } else {
        Value::Null
    }
}

/// `t` in milliseconds, to 3 decimals.
fn millis(t: Duration) -> Value {
    round_to(t.as_secs_f64() * 1000.0, 3)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// Runs the phases on `store` and closes it (drops it) before returning.
fn drive<S: ExecutionStore + 'static>(store: S, cfg: &Config) -> anyhow::Result<Measured> {
    if cfg.group_commit {
        let grouped = GroupCommit::new(store);
        let mut m = phases(grouped.inner(), &grouped, cfg)?;
        let stats = grouped.stats();
        m.mean_batch = (stats.batches > 0).then(|| stats.mean_batch_size());
        drop(grouped);
        Ok(m)
    } else {
        let m = phases(&store, &store, cfg)?;
        drop(store);
        Ok(m)
    }
}

fn progress(len: usize, what: &str) -> ProgressBar {
    // Draws on stderr, and only when stderr is a terminal.
    let bar = ProgressBar::new(len as u64);
    let template =
        format!("{{spinner}} {what} {{human_pos}}/{{human_len}} {{wide_bar}} {{elapsed}} (eta {{eta}})");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

fn store_err(e: execstore::StoreError) -> anyhow::Error {
    CliError::Store(e).into()
}

/// Phase 1 for one client: rounds 1..=K over the executions `first, first + C, ...`.
/// Stops early (without an error of its own) when another client failed.
fn client<W: ExecutionStore>(
    store: &W,
    ids: &[String],
    rounds: &[Round],
    first: usize,
    cfg: &Config,
    bar: &ProgressBar,
    failed: &AtomicBool,
) -> anyhow::Result<()> {
    let (stride, trace, load_for_event) = (cfg.clients.max(1), cfg.trace, cfg.load_for_event);
    for round in rounds {
        for i in (first..ids.len()).step_by(stride) {
            if failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            let id = &ids[i];
            let in_id = in_event_id(round.r, i);
            let (exe, processed) = if load_for_event {
                store.load_for_event(id, &in_id).map_err(store_err)?
            } else {
                let exe = store.load(id).map_err(store_err)?;
                (exe, store.is_processed(id, &in_id).map_err(store_err)?)
            };
            let mut exe = exe.with_context(|| format!("execution {i} ({id}) is not stored"))?;
            if processed {
                bail!("event {in_id} of execution {i} is unexpectedly already processed");
            }
            let effects = step(&mut exe, i, round, in_id, trace);
            store
                .commit(&mut exe, &effects)
                .map_err(store_err)
                .with_context(|| format!("round {} of execution {i}", round.r))?;
            bar.inc(1);
        }
    }
    Ok(())
}

/// Every phase of W1. `base` is the store itself; phase 1 runs on `writer` (the store, or a
/// group commit over it).
fn phases<B: ExecutionStore, W: ExecutionStore>(
    base: &B,
    writer: &W,
    cfg: &Config,
) -> anyhow::Result<Measured> {
    let n = cfg.executions;
    let k = cfg.events;
    let mut m = Measured::default();
    let ids: Vec<String> = (0..n).map(|i| exe_id(cfg.seed, i)).collect();

    // Phase 0: create N executions, one save (one transaction) each, in index order. With
    // several clients too: the clients only share phase 1.
    let bar = progress(n, "create");
    let t0 = Instant::now();
    for i in 0..n {
        let mut exe = initial_execution(&ids, i);
        base.save(&mut exe)
            .map_err(store_err)
            .with_context(|| format!("saving execution {i}"))?;
        bar.inc(1);
    }
    m.create = t0.elapsed();
    bar.finish_and_clear();

    // Phase 1: K rounds of load + is_processed + mutate + commit.
    let bar = progress(n * k as usize, "commit");
    let failed = AtomicBool::new(false);
    let t0 = Instant::now();
    let rounds: Vec<Round> = (1..=k).map(|r| Round::new(r, k)).collect();
    if cfg.clients <= 1 {
        client(writer, &ids, &rounds, 0, cfg, &bar, &failed)?;
    } else {
        let results: Vec<anyhow::Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..cfg.clients)
                .map(|c| {
                    let (ids, rounds, bar, failed) = (&ids, &rounds, &bar, &failed);
                    scope.spawn(move || {
                        let result = client(writer, ids, rounds, c, cfg, bar, failed);
                        if result.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        result
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked")))
                })
                .collect()
        });
        for result in results {
            result?;
        }
    }
    m.commit = t0.elapsed();
    bar.finish_and_clear();

    // list_all_pages_ms: RUNNING roots, 100 a page, until there is no next cursor.
    let mut query = ListQuery::new()
        .status([Status::Running])
        .roots_only(true)
        .limit(LIST_LIMIT);
    // The cursor each page was read with: the first page's none, then each next cursor.
    let mut cursors: Vec<Option<String>> = vec![None];
    let t0 = Instant::now();
    for page in paging::execution_pages(base, query.clone()) {
        let page = page.map_err(store_err)?;
        m.list_rows += page.items.len();
        if let Some(next) = page.next_cursor {
            cursors.push(Some(next));
        }
    }
    m.list_all = t0.elapsed();
    m.list_pages = cursors.len();

    // list_mid_page_ms: page P div 2. The reference store's cursors are base64 offsets, so it
    // makes the cursor of offset (P div 2) * 100; ours are opaque keyset cursors (the id to
    // resume after), so the cursor the full pass was given for that page is used: it fetches
    // the very same page.
    query.cursor = cursors[m.list_pages / 2].clone();
    let mut samples = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let t0 = Instant::now();
        base.list_executions(&query).map_err(store_err)?;
        samples.push(t0.elapsed());
    }
    m.list_mid = median(samples);

    // due_timers_ms: every timer due at 1e12. Our due_timers is paged: read pages of 10000
    // after the last timer read, until a page comes back short (empty included), which
    // means no more are due.
    let mut samples = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let t0 = Instant::now();
        let mut rows = 0;
        for page in paging::timer_pages(base, NOW_FAR_FUTURE, None, DUE_PAGE) {
            rows += page.map_err(store_err)?.len();
        }
        samples.push(t0.elapsed());
        m.due_rows = rows;
    }
    m.due = median(samples);

    // outbox_drain_acks_per_s: the spec's drain, pending entries oldest first and an ack
    // (one transaction) for each, over the first half of the N*K entries by seq; the second
    // half is drained a page at a time with ack_outbox_many (outbox_drain_batch_acks_per_s).
    // Each rate includes its reads.
    let half = n * k as usize / 2;
    let mut after = None;
    let t0 = Instant::now();
    while m.acked_single < half {
        let page = base
            .pending_outbox(after, OUTBOX_PAGE.min(half - m.acked_single))
            .map_err(store_err)?;
        let Some(last) = page.last() else { break };
        after = Some(last.seq);
        for entry in &page {
            base.ack_outbox(entry.seq).map_err(store_err)?;
        }
        m.acked_single += page.len();
    }
    m.drain_single = t0.elapsed();
    let t0 = Instant::now();
    let mut seqs = Vec::with_capacity(OUTBOX_PAGE);
    for page in paging::outbox_pages(base, after, OUTBOX_PAGE) {
        seqs.clear();
        seqs.extend(page.map_err(store_err)?.iter().map(|entry| entry.seq));
        m.acked_batch += base.ack_outbox_many(&seqs).map_err(store_err)?;
    }
    m.drain_batch = t0.elapsed();

    // read_trace_100_ms: the traces of the first 100 executions, median of 5 passes.
    let mut samples = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let t0 = Instant::now();
        let mut rows = 0;
        for id in ids.iter().take(READ_TRACE_EXECS) {
            rows += base.read_trace(id).map_err(store_err)?.len();
        }
        samples.push(t0.elapsed());
        m.trace_rows = rows;
    }
    m.read_trace = median(samples);

    // The cross-check, outside all timings: the stored data of execution 0. Every backend
    // stores exactly `to_json()` of the execution at its new version, and loading parses it
    // back to the same value, so this is the stored text byte for byte (the spec's hashes
    // confirm it).
    m.exe0_sha256 = base
        .load(&ids[0])
        .map_err(store_err)?
        .map(|exe| format!("{:x}", Sha256::digest(exe.to_json().as_bytes())));
    Ok(m)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use execstore::{
        executions::{Capabilities, DueTimer, ExecutionPage, OutboxEntry, SpawnEntry, TraceStep},
        Effects, Execution, MemoryStore,
    };

    use super::*;

    /// A memory store that counts the reads phase 1 makes before each step.
    #[derive(Default)]
    struct Reads {
        store: MemoryStore,
        load: AtomicUsize,
        is_processed: AtomicUsize,
        load_for_event: AtomicUsize,
    }

    impl ExecutionStore for Reads {
        fn capabilities(&self) -> Capabilities {
            self.store.capabilities()
        }
        fn trace_max(&self) -> Option<u32> {
            self.store.trace_max()
        }
        fn commit(&self, exe: &mut Execution, effects: &Effects) -> execstore::Result<Vec<i64>> {
            self.store.commit(exe, effects)
        }
        fn load(&self, id: &str) -> execstore::Result<Option<Execution>> {
            self.load.fetch_add(1, Ordering::Relaxed);
            self.store.load(id)
        }
        fn load_for_event(&self, id: &str, event_id: &str) -> execstore::Result<(Option<Execution>, bool)> {
            self.load_for_event.fetch_add(1, Ordering::Relaxed);
            self.store.load_for_event(id, event_id)
        }
        fn is_processed(&self, execution_id: &str, event_id: &str) -> execstore::Result<bool> {
            self.is_processed.fetch_add(1, Ordering::Relaxed);
            self.store.is_processed(execution_id, event_id)
        }
        fn list_executions(&self, query: &ListQuery) -> execstore::Result<ExecutionPage> {
            self.store.list_executions(query)
        }
        fn pending_outbox(&self, after: Option<i64>, limit: usize) -> execstore::Result<Vec<OutboxEntry>> {
            self.store.pending_outbox(after, limit)
        }
        fn ack_outbox(&self, seq: i64) -> execstore::Result<()> {
            self.store.ack_outbox(seq)
        }
        fn pending_spawns(&self, after: Option<i64>, limit: usize) -> execstore::Result<Vec<SpawnEntry>> {
            self.store.pending_spawns(after, limit)
        }
        fn ack_spawn(&self, seq: i64) -> execstore::Result<()> {
            self.store.ack_spawn(seq)
        }
        fn due_timers(
            &self,
            now: f64,
            after: Option<&DueTimer>,
            limit: usize,
        ) -> execstore::Result<Vec<DueTimer>> {
            self.store.due_timers(now, after, limit)
        }
        fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> execstore::Result<bool> {
            self.store.delete_timer(execution_id, path, fire_at)
        }
        fn read_trace(&self, execution_id: &str) -> execstore::Result<Vec<TraceStep>> {
            self.store.read_trace(execution_id)
        }
        fn append_trace(&self, execution_id: &str, step: &TraceStep) -> execstore::Result<i64> {
            self.store.append_trace(execution_id, step)
        }
        fn ids_with_prefix(&self, prefix: &str) -> execstore::Result<Vec<String>> {
            self.store.ids_with_prefix(prefix)
        }
        fn purge(&self, execution_id: &str, expected_version: i64) -> execstore::Result<bool> {
            self.store.purge(execution_id, expected_version)
        }
    }

    /// `--event-read` decides which reads phase 1 makes: W1's two per step, or one.
    #[test]
    fn event_read_picks_the_reads_of_phase_1() {
        for load_for_event in [false, true] {
            let cfg = Config {
                backend: BenchBackend::Memory,
                db: None,
                prefix: None,
                executions: 6,
                events: 3,
                trace: true,
                synchronous: None,
                seed: 1,
                clients: 1,
                group_commit: false,
                load_for_event,
            };
            let store = Reads::default();
            let ids: Vec<String> = (0..cfg.executions).map(|i| exe_id(cfg.seed, i)).collect();
            for i in 0..cfg.executions {
                store.save(&mut initial_execution(&ids, i)).unwrap();
            }
            let rounds: Vec<Round> = (1..=cfg.events).map(|r| Round::new(r, cfg.events)).collect();
            let failed = AtomicBool::new(false);
            client(&store, &ids, &rounds, 0, &cfg, &ProgressBar::hidden(), &failed).unwrap();
            let steps = cfg.executions * cfg.events as usize;
            let counts = (
                store.load.load(Ordering::Relaxed),
                store.is_processed.load(Ordering::Relaxed),
                store.load_for_event.load(Ordering::Relaxed),
            );
            let want = if load_for_event {
                (0, 0, steps)
            } else {
                (steps, steps, 0)
            };
            assert_eq!(counts, want, "load_for_event = {load_for_event}");
        }
    }
}
