//! `execstore bench --workload w2`: workload W2 of the workspace log (`bench/W2.md`), on any
//! [`WorkspaceStorage`], printed as one JSON line beside `bench/reflexr_w2.py`'s for reflexr's
//! own `SqlStorage`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use execstore::executions::JsonObject;
use execstore::workspace::{
    run_lease, Clock, Entry, LogQuery, NewRun, Run, RunPolicy, Subscription, Timestamp, WorkspaceRef,
    WorkspaceStorage,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// W2's parameters.
#[derive(Clone, Debug)]
pub struct W2Config {
    /// Workspaces (W).
    pub workspaces: usize,
    /// Envelopes per workspace (E).
    pub events: usize,
    /// Envelopes per append transaction (B).
    pub batch: usize,
    /// Runs in total (R).
    pub runs: usize,
    /// Tail reads of each kind (Q).
    pub reads: usize,
    /// `due_runs` calls (D).
    pub due_calls: usize,
    /// Envelopes appended while a subscriber follows (S).
    pub subscribe_events: usize,
}

/// W2's clock: `T0`, then 1 ms more at every call.
pub struct CountingClock {
    calls: AtomicI64,
}

impl CountingClock {
    /// A clock at `T0`.
    pub fn new() -> Self {
        CountingClock {
            calls: AtomicI64::new(0),
        }
    }
}

impl Default for CountingClock {
    fn default() -> Self {
        CountingClock::new()
    }
}

impl Clock for CountingClock {
    fn now(&self) -> Timestamp {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        t0().plus_micros(n * 1000).unwrap_or_else(|_| t0())
    }
}

/// 2026-01-01T00:00:00Z.
pub fn t0() -> Timestamp {
    Timestamp::from_micros(1_767_225_600_000_000).unwrap_or_else(|_| unreachable!("in range"))
}

pub(crate) fn workspace(w: usize) -> WorkspaceRef {
    WorkspaceRef::new(format!("t{}", w % 2), format!("w{w}"))
}

const KINDS: [&str; 4] = ["error", "deploy", "heartbeat", "metric"];
pub(crate) const STATUSES: [&str; 10] = [
    "pending",
    "pending",
    "pending",
    "pending",
    "retrying",
    "running",
    "succeeded",
    "succeeded",
    "succeeded",
    "dead",
];

pub(crate) fn entry(id: String, i: usize) -> Entry {
    let mut event = JsonObject::new();
    event.insert("type".into(), format!("bench:{}", KINDS[i % 4]).into());
    event.insert("service".into(), format!("svc-{}", i % 17).into());
    event.insert("severity".into(), (i % 10).into());
    event.insert("n".into(), i.into());
    Entry::new(id, json!({"kind": "source", "name": "bench"}), event)
}

pub(crate) fn bench_run(w: usize, j: usize) -> anyhow::Result<Run> {
    let id = format!("w{w}-r{j:07}");
    let scope_key = format!("s{}", (j / 10) % 100);
    let mut scope = JsonObject::new();
    scope.insert("s".into(), scope_key.clone().into());
    let run = Run::pending(NewRun {
        id: id.clone(),
        rule: format!("bench:r{}", j % 10),
        scope_key,
        scope,
        fired_seq: j as i64 + 1,
        matched: vec![j as i64 + 1],
        correlation_id: id,
        depth: 0,
        now: t0(),
    })?;
    let mut changes = JsonObject::new();
    changes.insert("status".into(), STATUSES[(j / 7) % 10].into());
    changes.insert(
        "next_attempt_at".into(),
        t0().plus_micros((j % 3600) as i64 * 1_000_000)?
            .to_json_text()
            .into(),
    );
    Ok(run.with(changes)?)
}

fn ms(t: Duration, n: usize) -> Value {
    json!((t.as_secs_f64() * 1000.0 / n.max(1) as f64 * 1000.0).round() / 1000.0)
}

fn per_s(n: usize, t: Duration) -> Value {
    json!((n as f64 / t.as_secs_f64().max(1e-9)).round())
}

fn percentile(mut v: Vec<u64>, p: f64) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_unstable();
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    json!(v[i])
}

fn wall_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// How the cross-process phase starts its follower: the arguments that make
/// `execstore bench --workload w2-follow` open the same storage, or `None` to skip it.
pub type FollowerArgs = Option<Vec<String>>;

/// Runs W2 on `storage` and returns its JSON line (without `impl`/`backend`, which the caller adds).
pub fn run(
    storage: &dyn WorkspaceStorage,
    cfg: &W2Config,
    follower: FollowerArgs,
) -> anyhow::Result<JsonObject> {
    if cfg.batch == 0
        || !cfg.events.is_multiple_of(cfg.batch)
        || cfg.workspaces == 0
        || !cfg.runs.is_multiple_of(cfg.workspaces)
    {
        bail!("W2 needs events to be a multiple of batch, and runs a multiple of workspaces");
    }
    let mut out = JsonObject::new();
    // Phase 1: append.
    let started = Instant::now();
    for r in 0..cfg.events / cfg.batch {
        for w in 0..cfg.workspaces {
            let entries: Vec<Entry> = (r * cfg.batch..(r + 1) * cfg.batch)
                .map(|i| entry(format!("w{w}-e{i:08}"), i))
                .collect();
            let mut tx = storage.begin(&workspace(w))?;
            tx.append(&entries)?;
            tx.commit()?;
        }
    }
    let t = started.elapsed();
    out.insert("appends_per_s".into(), per_s(cfg.workspaces * cfg.events, t));
    out.insert(
        "append_tx_per_s".into(),
        per_s(cfg.workspaces * cfg.events / cfg.batch, t),
    );
    let mut hash = Sha256::new();
    for e in storage.read(&workspace(0), &LogQuery::new())? {
        hash.update(e.to_json().as_bytes());
        hash.update(b"\n");
    }
    out.insert("w0_log_sha256".into(), format!("{:x}", hash.finalize()).into());
    let heads = (0..cfg.workspaces)
        .map(|w| storage.head_seq(&workspace(w)))
        .collect::<Result<Vec<_>, _>>()?;

    // Phase 2: reads.
    let mut times = [Duration::ZERO; 3];
    for q in 0..cfg.reads {
        let ws = workspace(q % cfg.workspaces);
        let queries = [
            (LogQuery::new().last(100), 100),
            (LogQuery::new().types(["bench:deploy"]).last(50), 50),
            (LogQuery::new().after((cfg.events / 2) as i64).limit(100), 100),
        ];
        for (k, (query, want)) in queries.into_iter().enumerate() {
            let started = Instant::now();
            let got = storage.read(&ws, &query)?;
            times[k] += started.elapsed();
            if got.len() != want.min(cfg.events) {
                bail!("read {k} returned {} envelopes, not {want}", got.len());
            }
        }
    }
    out.insert("tail_read_ms".into(), ms(times[0], cfg.reads));
    out.insert("typed_tail_read_ms".into(), ms(times[1], cfg.reads));
    out.insert("window_read_ms".into(), ms(times[2], cfg.reads));

    // Phase 3: runs.
    let per_ws = cfg.runs / cfg.workspaces;
    let started = Instant::now();
    for w in 0..cfg.workspaces {
        for chunk in (0..per_ws).collect::<Vec<_>>().chunks(1000) {
            let runs = chunk
                .iter()
                .map(|&j| bench_run(w, j))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let mut tx = storage.begin(&workspace(w))?;
            tx.save_runs(&runs)?;
            tx.commit()?;
        }
        for j in (0..per_ws).filter(|j| STATUSES[(j / 7) % 10] == "running" && j % 2 == 0) {
            storage.acquire_lease(
                &workspace(w),
                &run_lease(&format!("w{w}-r{j:07}")),
                "bench",
                Duration::from_secs(3600),
            )?;
        }
    }
    out.insert("runs_saved_per_s".into(), per_s(cfg.runs, started.elapsed()));

    // Phase 4: due_runs.
    let set = |names: &[usize]| names.iter().map(|i| format!("bench:r{i}")).collect();
    let policy = RunPolicy {
        ordered: set(&[0, 1, 2, 3, 4]),
        blocking: set(&[0, 1]),
        disabled: set(&[9]),
    };
    let now = t0().plus_micros(1800 * 1_000_000)?;
    let mut due_rows = 0;
    let started = Instant::now();
    for d in 0..cfg.due_calls {
        let due = storage.due_runs(now, 100, &policy)?;
        if d == 0 {
            due_rows = due.len();
        }
    }
    out.insert("due_runs_ms".into(), ms(started.elapsed(), cfg.due_calls));
    out.insert("due_rows".into(), due_rows.into());

    // Phase 5: subscribe in process.
    let ws0 = workspace(0);
    let head = storage.head_seq(&ws0)?;
    let (sent, received) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let follower = scope.spawn(|| -> anyhow::Result<Vec<Instant>> {
            let mut sub = Subscription::new(storage, ws0.clone(), head)?;
            let mut got = Vec::with_capacity(cfg.subscribe_events);
            let deadline = Instant::now() + Duration::from_secs(120);
            while got.len() < cfg.subscribe_events && Instant::now() < deadline {
                if sub.next_timeout(Duration::from_millis(200))?.is_some() {
                    got.push(Instant::now());
                }
            }
            Ok(got)
        });
        let mut sent = Vec::with_capacity(cfg.subscribe_events);
        for k in 0..cfg.subscribe_events {
            let mut tx = storage.begin(&ws0)?;
            tx.append(&[entry(format!("sub-{k:06}"), k)])?;
            tx.commit()?;
            sent.push(Instant::now());
            std::thread::sleep(Duration::from_millis(2));
        }
        let received = follower
            .join()
            .map_err(|_| anyhow::anyhow!("the subscriber panicked"))??;
        Ok((sent, received))
    })?;
    if received.len() != sent.len() {
        bail!(
            "the subscriber got {} of {} envelopes",
            received.len(),
            sent.len()
        );
    }
    let lat: Vec<u64> = sent
        .iter()
        .zip(&received)
        .map(|(s, r)| r.saturating_duration_since(*s).as_micros() as u64)
        .collect();
    out.insert("subscribe_p50_us".into(), percentile(lat.clone(), 0.5));
    out.insert("subscribe_p99_us".into(), percentile(lat, 0.99));

    // Phase 6: subscribe across processes.
    let xproc = match follower {
        Some(args) => Some(cross_process(storage, &ws0, cfg.subscribe_events.min(50), args)?),
        None => None,
    };
    out.insert(
        "subscribe_xproc_p50_us".into(),
        xproc.map_or(Value::Null, |v| percentile(v, 0.5)),
    );
    out.insert("head_seqs".into(), json!(heads));
    Ok(out)
}

fn cross_process(
    storage: &dyn WorkspaceStorage,
    ws: &WorkspaceRef,
    n: usize,
    args: Vec<String>,
) -> anyhow::Result<Vec<u64>> {
    let head = storage.head_seq(ws)?;
    let exe = std::env::current_exe().context("cannot find the execstore binary")?;
    let mut child = Command::new(exe)
        .args(&args)
        .args(["--tenant", &ws.tenant_id, "--workspace", &ws.workspace_id])
        .args(["--after", &head.to_string(), "--count", &n.to_string()])
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .context("cannot start the follower process")?;
    let stdout = child.stdout.take().context("no follower stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    // The follower says "ready" once it has read up to the head.
    match lines.next() {
        Some(Ok(l)) if l == "ready" => {}
        other => bail!("the follower did not start: {other:?}"),
    }
    let mut sent = Vec::with_capacity(n);
    for k in 0..n {
        let mut tx = storage.begin(ws)?;
        tx.append(&[entry(format!("xproc-{k:06}"), k)])?;
        tx.commit()?;
        sent.push(wall_micros());
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut lat = Vec::with_capacity(n);
    for (k, line) in lines.take(n).enumerate() {
        let line = line?;
        let received: i64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .context("bad follower line")?;
        lat.push((received - sent[k]).max(0) as u64);
    }
    let _ = child.wait();
    if lat.len() != n {
        bail!("the follower reported {} of {n} envelopes", lat.len());
    }
    Ok(lat)
}

/// The follower process of phase 6: prints `ready`, then `<seq> <wall micros>` per envelope.
pub fn follow(
    storage: &dyn WorkspaceStorage,
    ws: WorkspaceRef,
    after: i64,
    count: usize,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mut sub = Subscription::new(storage, ws, after)?;
    writeln!(out, "ready")?;
    out.flush()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = 0;
    while seen < count && Instant::now() < deadline {
        if let Some(e) = sub.next_timeout(Duration::from_millis(100))? {
            writeln!(out, "{} {}", e.seq, wall_micros())?;
            out.flush()?;
            seen += 1;
        }
    }
    Ok(())
}

/// A shared counting clock, for the storage and the caller.
pub fn clock() -> Arc<CountingClock> {
    Arc::new(CountingClock::new())
}

/// `execstore bench --workload w2|w2-follow`: opens the backend and runs W2 (or its follower).
pub fn run_cli(
    backend: crate::args::BenchBackend,
    db: Option<std::path::PathBuf>,
    schema: Option<&str>,
    synchronous: Option<crate::args::BenchSynchronous>,
    workload: crate::args::Workload,
    args: &crate::args::W2Args,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    use crate::args::{BenchBackend, BenchSynchronous, Workload};
    use execstore_any::{Backend, Options, Target, MEMORY, POSTGRES, SQLITE};
    use execstore_sqlite::Synchronous;

    let cfg = W2Config {
        workspaces: args.workspaces as usize,
        events: args.w2_events as usize,
        batch: args.batch as usize,
        runs: args.runs as usize,
        reads: args.reads as usize,
        due_calls: args.due_calls as usize,
        subscribe_events: args.subscribe_events as usize,
    };
    let clock: Arc<dyn Clock> = clock();
    let sync = synchronous.map(|s| match s {
        BenchSynchronous::Full => Synchronous::Full,
        BenchSynchronous::Normal => Synchronous::Normal,
        BenchSynchronous::Off => Synchronous::Off,
    });
    let mut options = Options::new().workspaces(true).clock(clock.clone());
    if let Some(s) = sync {
        options.sqlite.connect.synchronous = s;
    }
    if let Some(s) = schema {
        options.postgres.connect.schema = Some(s.to_owned());
    }
    // The workspace log of the row `backend` at `location` (`--db` as it is: a file's path,
    // a server's URL).
    let open = |backend: &'static Backend, location: &str, read_only: bool| {
        let target = Target {
            backend,
            location: location.to_owned(),
        };
        let stores = target.open(&options.clone().read_only(read_only))?;
        stores.workspaces.context("the backend opened no workspace log")
    };
    if workload == Workload::W2Follow {
        let db = db.context("the follower needs --db")?;
        let row = match backend {
            BenchBackend::Postgres => &POSTGRES,
            _ => &SQLITE,
        };
        let storage = open(row, &db.to_string_lossy(), true)?;
        let ws = WorkspaceRef::new(args.tenant.clone(), args.workspace.clone());
        return follow(&*storage, ws, args.after, args.count, out);
    }
    let exe_args = |backend: &str, db: &str| -> Vec<String> {
        let mut v: Vec<String> = [
            "bench",
            "--workload",
            "w2-follow",
            "--backend",
            backend,
            "--db",
            db,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(s) = schema {
            v.extend(["--prefix".to_string(), s.to_string()]);
        }
        v
    };
    let (mut line, backend_name) = match backend {
        BenchBackend::Memory => {
            let storage = open(&MEMORY, "", false)?;
            (run(&*storage, &cfg, None)?, "memory")
        }
        BenchBackend::Sqlite => {
            let dir;
            let path = match db {
                Some(p) => {
                    if p.exists() {
                        bail!("{} exists: W2 needs a fresh file", p.display());
                    }
                    p
                }
                None => {
                    dir = tempfile::tempdir()?;
                    dir.path().join("w2.db")
                }
            };
            let storage = open(&SQLITE, &path.to_string_lossy(), false)?;
            let follower = exe_args("sqlite", &path.to_string_lossy());
            (run(&*storage, &cfg, Some(follower))?, "sqlite")
        }
        BenchBackend::Postgres => {
            let url = db
                .context("--backend postgres needs --db postgres://...")?
                .to_string_lossy()
                .into_owned();
            schema.context("--backend postgres with W2 needs --prefix SCHEMA (a fresh schema)")?;
            let storage = open(&POSTGRES, &url, false)?;
            (
                run(&*storage, &cfg, Some(exe_args("postgres", &url)))?,
                "postgres",
            )
        }
    };
    let mut full = JsonObject::new();
    full.insert("impl".into(), "execstore".into());
    full.insert("backend".into(), backend_name.into());
    full.insert("workspaces".into(), cfg.workspaces.into());
    full.insert("events".into(), cfg.events.into());
    full.insert("batch".into(), cfg.batch.into());
    full.insert("runs".into(), cfg.runs.into());
    full.append(&mut line);
    writeln!(out, "{}", execstore::kit::pyjson::dumps(&full))?;
    Ok(())
}
