//! The command line.

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use execstore::executions::{ListOrder, Status};

pub use crate::workspace_args::{
    DeadLettersArgs, DueRunsArgs, LeasesArgs, LogArgs, RulesArgs, RunsArgs, WorkspaceArg,
};

/// Where `execstore demo` writes when `--db` is not given.
pub const DEMO_DB: &str = "execstore-demo.db";

/// Inspect an execstore SQLite store (or one of harel 0.9's, with `--prefix harel`):
/// executions, their timelines, the outbox, timers and pending spawns. `execstore demo`
/// writes a realistic store to try it on.
#[derive(Debug, Parser)]
#[command(name = "execstore", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// The store file. Read commands need it and refuse a path that does not exist rather than
    /// create an empty store; `demo` writes ./execstore-demo.db unless given --db (it ignores
    /// EXECSTORE_DB, so a stray environment never points --force at a real store); `bench`
    /// also ignores EXECSTORE_DB and needs a path that does not exist yet.
    #[arg(long, global = true, env = "EXECSTORE_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// Table-name prefix: `harel` for harel 0.9's files (harel_executions, ...).
    #[arg(long, global = true, value_name = "NAME")]
    pub prefix: Option<String>,

    /// Print JSON (the store's own shapes) instead of tables.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the workspaces with a log (reflexr's tables): head seq, last ts, cursors' lag.
    Workspaces,
    /// Read a workspace's log: a window, some event types, the first or last N.
    Log(LogArgs),
    /// List a workspace's runs, newest first.
    Runs(RunsArgs),
    /// The runs due at a time across every workspace, under a run policy.
    DueRuns(DueRunsArgs),
    /// List a workspace's dead letters, oldest first.
    DeadLetters(DeadLettersArgs),
    /// List a workspace's leases (held and lapsed).
    Leases(LeasesArgs),
    /// List a workspace's consumer cursors and their lag behind the head.
    Cursors(WorkspaceArg),
    /// List each rule's progress in a workspace.
    Progress(WorkspaceArg),
    /// List each schedule's last tick in a workspace.
    Schedules(WorkspaceArg),
    /// List a workspace's active stored rules, or one rule's version history.
    Rules(RulesArgs),
    /// List executions, ordered by id, one page at a time.
    List(ListArgs),
    /// Show one execution: its state, children and context.
    Show(IdArg),
    /// Show an execution's timeline: the steps it took, oldest first.
    Trace(IdArg),
    /// List undelivered outbox events, oldest first.
    Outbox(SeqPageArgs),
    /// List armed timers, soonest first.
    Timers(TimersArgs),
    /// List pending child creations (orthogonal forks), oldest first.
    Spawns(SeqPageArgs),
    /// Suspend a RUNNING execution and its regions (as harel's control plane; opens the
    /// store for writing). A no-op for any other status.
    Suspend(crate::control_commands::ControlArgs),
    /// Resume a SUSPENDED execution and its regions. A no-op for any other status.
    Resume(crate::control_commands::ControlArgs),
    /// Terminate (cancel at once, no hooks) an execution and its unfinished regions.
    Terminate(crate::control_commands::ControlArgs),
    /// Permanently delete a finished root execution's whole tree and everything keyed by it.
    Purge(crate::control_commands::PurgeArgs),
    /// Purge every root tree that finished longer ago than a duration.
    PurgeFinished(crate::control_commands::PurgeFinishedArgs),
    /// Write a realistic demo store (three statecharts, every status, parents and children,
    /// timers, outbox, spawns and timelines) to a new SQLite file, then serve the monitor
    /// over it (unless --no-serve).
    Demo(DemoArgs),
    /// Serve the monitor, a web dashboard of the store (`--db FILE` or `--db
    /// postgres://...`), and print its URL. Read-only unless given a token.
    Monitor(ServeArgs),
    /// List the monitor's audit log, newest first: who made which write, on what, why, and
    /// how it ended.
    Audit(AuditArgs),
    /// Search attributes: the context paths the store keeps indexed for `list --where`
    /// (`declare` and `drop` open the store for writing).
    Attributes(crate::search_commands::AttributesArgs),
    /// Run benchmark workload W1 (shared/bench/WORKLOAD.md) and print one JSON line: the same
    /// deterministic rows, phases and keys as the Python reference peer's bench.py.
    Bench(BenchArgs),
    /// Time finding executions by a context path on a fresh store of N executions: a first
    /// page undeclared (a scan), declaring it (the index build), and first pages declared.
    BenchSearch(crate::bench_search::BenchSearchArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Keep these statuses: repeat the option or separate with commas, any case
    /// (PENDING RUNNING DONE CANCELLED SUSPENDED CANCELLING FAILED).
    #[arg(long, value_name = "STATUS", value_delimiter = ',', value_parser = parse_status)]
    pub status: Vec<Status>,

    /// Keep executions of this definition only.
    #[arg(long, value_name = "ID")]
    pub definition: Option<String>,

    /// Keep root executions only (no parent).
    #[arg(long)]
    pub roots_only: bool,

    /// Page size.
    #[arg(long, value_name = "N", default_value_t = execstore::executions::DEFAULT_LIST_LIMIT)]
    pub limit: usize,

    /// Resume after the page that printed this cursor.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,

    /// Follow the cursors to the end and print everything.
    #[arg(long)]
    pub all: bool,

    /// Keep executions created at or after T: epoch seconds, RFC 3339
    /// (2026-01-01T12:00:00Z) or `now`.
    #[arg(long, value_name = "T", value_parser = parse_when)]
    pub created_after: Option<f64>,

    /// Keep executions created strictly before T.
    #[arg(long, value_name = "T", value_parser = parse_when)]
    pub created_before: Option<f64>,

    /// Keep executions last updated at or after T.
    #[arg(long, value_name = "T", value_parser = parse_when)]
    pub updated_after: Option<f64>,

    /// Keep executions last updated strictly before T.
    #[arg(long, value_name = "T", value_parser = parse_when)]
    pub updated_before: Option<f64>,

    /// Keep executions finished at or after T (unfinished ones never match a finished bound).
    #[arg(long, value_name = "T", value_parser = parse_when)]
    pub finished_after: Option<f64>,

    /// Keep executions finished strictly before T.
    #[arg(long, value_name = "T", value_parser = parse_when)]
    pub finished_before: Option<f64>,

    /// Keep executions whose id starts with S, or that are in state S (active path S or
    /// below it, e.g. `order.checkout` finds `order.checkout.pay`). Case-sensitive.
    #[arg(long, value_name = "S")]
    pub search: Option<String>,

    /// Keep executions this query finds (docs/search.md), e.g.
    /// `context.customer_id = "c-17" and status = running and updated > -1h`.
    /// Combined with every other option.
    #[arg(long = "where", value_name = "QUERY")]
    pub filter: Option<String>,

    /// The order of the pages: `id` (harel's own), `updated` (most recently updated first) or
    /// `created` (newest created first); a cursor is good for the order it was printed in
    /// only.
    #[arg(long, value_name = "ORDER", default_value = "id", value_parser = parse_order)]
    pub order: ListOrder,
}

fn parse_order(s: &str) -> Result<ListOrder, String> {
    s.parse::<ListOrder>().map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
pub struct IdArg {
    /// The execution id.
    pub id: String,
}

#[derive(Debug, Args)]
pub struct SeqPageArgs {
    /// At most this many entries.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub limit: usize,

    /// Only entries after this sequence number.
    #[arg(long, value_name = "SEQ")]
    pub after: Option<i64>,
}

#[derive(Debug, Args)]
pub struct TimersArgs {
    /// Only timers firing at or before T: epoch seconds, or `now` for the due ones
    /// (default: every armed timer).
    #[arg(long, value_name = "T", value_parser = parse_time)]
    pub due_before: Option<f64>,

    /// At most this many timers.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub limit: usize,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How many executions to write, root executions and their region children together
    /// (at least 20, so that every status and fork stage appears).
    #[arg(long, value_name = "N", default_value_t = 300,
          value_parser = clap::value_parser!(u32).range(20..=execstore::kit::validate::MAX_PAGE as i64))]
    pub executions: u32,

    /// Seed of the generator: the same seed writes the same store (apart from the wall clock).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,

    /// Replace the file (and its -wal and -shm companions) if it exists.
    #[arg(long)]
    pub force: bool,

    /// Only write the store: do not serve the monitor afterwards.
    #[arg(long)]
    pub no_serve: bool,

    #[command(flatten)]
    pub serve: ServeArgs,
}

/// How the monitor is served.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on. The default, loopback, keeps the store on this machine: the
    /// monitor has no login, only a write token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub bind: IpAddr,

    /// The port; 0 takes any free port [default: 8421, or a free port if that is taken].
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,

    /// Allow writes (ack an outbox entry or a spawn intent, remove a timer) to requests that
    /// carry `Authorization: Bearer TOKEN`. Without it the monitor is read-only (and opens a
    /// SQLite file read-only).
    #[arg(
        long,
        env = "EXECSTORE_MONITOR_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,

    /// A TOML file of tokens, each with a name and a role (`read`, `act`, `admin`; see
    /// docs/operators.md): writes are allowed to what each token's role allows, and the audit
    /// log records the token's name. Keep each token as its SHA-256 (`sha256 = "..."`).
    #[arg(
        long,
        env = "EXECSTORE_MONITOR_TOKENS",
        value_name = "FILE",
        conflicts_with = "token"
    )]
    pub tokens: Option<PathBuf>,

    /// Seconds a client may take to send a request's line and headers (counted from its
    /// first byte), and a kept-alive connection may stay idle before its next request; a
    /// client that stalls is disconnected.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = parse_secs)]
    pub header_timeout: f64,

    /// Seconds an answer may wait for the client to take any of it (one that stops reading
    /// is disconnected), and a request body may take to arrive.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = parse_secs)]
    pub idle_timeout: f64,

    /// How many connections are served at once; past that new ones wait until one closes.
    /// While more than half are open, a new connection gets at most 1 s to send its request's
    /// head, so a flood of silent connections drains fast.
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// Seconds between two samples of the metrics (the Metrics view's charts, `/api/metrics`),
    /// taken while the monitor runs and kept in memory only.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, value_parser = parse_metrics_period)]
    pub metrics_period: f64,

    /// How many metrics samples are kept, the oldest dropped first (360 every 10 s: the last
    /// hour).
    #[arg(long, value_name = "N", default_value_t = 360, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    pub metrics_keep: u32,
}

/// A metrics period in seconds: 1 to a day.
fn parse_metrics_period(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (1.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a number of seconds in [1, 86400]")),
    }
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only the entries on this target (an execution id, a workspace path, a view's name).
    #[arg(long, value_name = "ID")]
    pub target: Option<String>,

    /// Only the entries of this actor (a token's name, or `anonymous`).
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,

    /// Page size.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,

    /// Resume after the page that printed this cursor.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<i64>,
}

/// A timeout in seconds: positive and at most a day.
fn parse_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number of seconds in (0, 86400]")),
    }
}

/// The store `execstore bench` drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchBackend {
    /// execstore-sqlite on a fresh file.
    Sqlite,
    /// execstore's MemoryStore.
    Memory,
    /// execstore-postgres on the server `--db postgres://...` names, in fresh tables: under
    /// `--prefix` (which must not name existing tables; they are kept after the run), or
    /// under a unique prefix whose tables are dropped after the run.
    Postgres,
}

/// A switch of `execstore bench`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

impl OnOff {
    /// Whether it is on.
    pub fn is_on(self) -> bool {
        self == OnOff::On
    }
}

/// `PRAGMA synchronous` for `execstore bench`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchSynchronous {
    /// Every commit syncs the WAL.
    Full,
    /// The WAL is synced at checkpoints only.
    Normal,
    /// No syncing.
    Off,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The store to drive (`--db PATH` picks the SQLite file, which must not exist yet, nor
    /// its -wal and -shm; default: a fresh temporary file, deleted after the run). `postgres`
    /// needs `--db postgres://...`.
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BenchBackend::Sqlite)]
    pub backend: BenchBackend,

    /// Number of executions (N).
    #[arg(long, value_name = "N", default_value_t = 2000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub executions: u32,

    /// Number of rounds, one event per execution each (K).
    #[arg(long, value_name = "K", default_value_t = 20)]
    pub events: u32,

    /// Pass a trace step to every commit.
    #[arg(long, value_enum, value_name = "on|off", default_value_t = OnOff::On)]
    pub trace: OnOff,

    /// PRAGMA synchronous (default: not set, which is the store's default, FULL). SQLite only.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub synchronous: Option<BenchSynchronous>,

    /// Seed of the execution ids (0 to 2^32-1).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u32,

    /// Concurrent clients: thread c runs the rounds over the executions i with
    /// i mod C = c. 1 is W1 as specified.
    #[arg(long, value_name = "C", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub clients: u32,

    /// Gather concurrent commits into one transaction and one sync (default: on when
    /// --clients is more than 1).
    #[arg(long, value_enum, value_name = "on|off")]
    pub group_commit: Option<OnOff>,

    /// How phase 1 reads before each step: `load-then-check` is W1 as specified (`load`,
    /// then `is_processed`: two reads, on PostgreSQL two round trips); `load-for-event` is
    /// the one call the store offers an engine for an event step (`load_for_event`: the
    /// execution and whether the event is processed, in one read).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = EventRead::LoadThenCheck)]
    pub event_read: EventRead,

    /// The workload: W1 (executions, shared/bench/WORKLOAD.md) or W2 (the workspace log,
    /// bench/W2.md).
    #[arg(long, value_enum, value_name = "W", default_value_t = Workload::W1)]
    pub workload: Workload,

    #[command(flatten)]
    pub w2: W2Args,

    /// The scale curve instead (issue 27, docs/scale.md): one store filled to
    /// each of --sizes executions, measured at each; prints a table and writes
    /// scale-BACKEND.json and scale-BACKEND.svg into --out. SQLite on a fresh file (--db, or a
    /// temporary one), or PostgreSQL with --url.
    #[arg(long)]
    pub scale: bool,

    /// --scale: the sizes, comma-separated, ascending.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', default_values_t = [10_000usize, 100_000, 1_000_000],
          value_parser = clap::value_parser!(usize))]
    pub sizes: Vec<usize>,

    /// --scale: the PostgreSQL server to fill (`postgres://...`; fresh tables under a bench
    /// prefix, dropped at the end).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// --scale --workload w2: the log sizes of one workspace, comma-separated (a run for
    /// every ten envelopes; --workspaces - 1 others of --w2-events each, for the list).
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', default_values_t = [10_000usize, 100_000, 1_000_000],
          value_parser = clap::value_parser!(usize))]
    pub log_sizes: Vec<usize>,

    /// --scale: where the JSON and the SVG go.
    #[arg(long, value_name = "DIR", default_value = "bench/scale")]
    pub out: PathBuf,
}

/// How `execstore bench` reads an execution before each step of phase 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EventRead {
    /// `load`, then `is_processed`: W1 as specified.
    LoadThenCheck,
    /// `load_for_event`: both in one read.
    LoadForEvent,
}

/// Which benchmark workload `execstore bench` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Executions (harel's store).
    W1,
    /// The workspace log (reflexr's storage).
    W2,
    /// W2's cross-process subscriber (started by W2 itself).
    #[value(hide = true)]
    W2Follow,
}

/// W2's parameters (bench/W2.md).
#[derive(Debug, Args)]
pub struct W2Args {
    /// W2: workspaces.
    #[arg(long, value_name = "W", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub workspaces: u32,
    /// W2: envelopes appended per workspace.
    #[arg(long, value_name = "E", default_value_t = 20_000)]
    pub w2_events: u32,
    /// W2: envelopes per append transaction.
    #[arg(long, value_name = "B", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch: u32,
    /// W2: runs in total.
    #[arg(long, value_name = "R", default_value_t = 100_000)]
    pub runs: u32,
    /// W2: tail reads of each kind.
    #[arg(long, value_name = "Q", default_value_t = 200)]
    pub reads: u32,
    /// W2: due_runs calls.
    #[arg(long, value_name = "D", default_value_t = 50)]
    pub due_calls: u32,
    /// W2: envelopes appended while a subscriber follows.
    #[arg(long, value_name = "S", default_value_t = 200)]
    pub subscribe_events: u32,
    /// W2's follower: the tenant.
    #[arg(long, hide = true, default_value = "")]
    pub tenant: String,
    /// W2's follower: the workspace.
    #[arg(long, hide = true, default_value = "")]
    pub workspace: String,
    /// W2's follower: the seq to follow after.
    #[arg(long, hide = true, default_value_t = 0)]
    pub after: i64,
    /// W2's follower: how many envelopes to wait for.
    #[arg(long, hide = true, default_value_t = 0)]
    pub count: usize,
}

fn parse_status(s: &str) -> Result<Status, String> {
    s.trim().parse::<Status>().map_err(|_| {
        let all: Vec<&str> = Status::ALL.iter().map(|st| st.as_str()).collect();
        format!("expected one of {}", all.join(", "))
    })
}

fn parse_time(s: &str) -> Result<f64, String> {
    if s.eq_ignore_ascii_case("now") {
        return Ok(crate::time::now());
    }
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        _ => Err("expected epoch seconds (e.g. 1735689600) or `now`".into()),
    }
}

/// A moment for the list's time filters: epoch seconds, an RFC 3339 date-time with an
/// offset, or `now`.
fn parse_when(s: &str) -> Result<f64, String> {
    if let Ok(t) = parse_time(s) {
        return Ok(t);
    }
    match execstore::workspace::Timestamp::parse_json_text(s) {
        Ok(ts) if ts.secs_f64() >= 0.0 => Ok(ts.secs_f64()),
        _ => Err(
            "expected epoch seconds (e.g. 1735689600), an RFC 3339 time with an offset \
             (2026-01-01T12:00:00Z) or `now`"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn statuses_repeat_and_split_on_commas_in_any_case() {
        let cli = Cli::try_parse_from([
            "execstore",
            "list",
            "--status",
            "running,Done",
            "--status",
            "failed",
        ])
        .unwrap();
        let Command::List(args) = cli.command else {
            panic!("not list")
        };
        assert_eq!(args.status, [Status::Running, Status::Done, Status::Failed]);
        assert!(Cli::try_parse_from(["execstore", "list", "--status", "sleeping"]).is_err());
    }
}
