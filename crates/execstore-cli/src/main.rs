//! `execstore`: list, show, trace, outbox, timers and spawns of a store file, and the demo.

mod args;
mod audited;
mod bench;
mod bench_scale;
mod bench_scale_log;
mod bench_search;
mod bench_w2;
mod commands;
mod control_commands;
mod demo;
mod error;
mod invocation;
mod monitor;
mod operator_commands;
mod search_commands;
mod table;
mod targets;
mod time;
mod workspace_args;
mod workspace_commands;

use std::ffi::OsString;
use std::io::{self, BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};
use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use indicatif::{ProgressBar, ProgressStyle};

use crate::args::{BenchArgs, Cli, Command, DemoArgs, EventRead, OnOff, ServeArgs, DEMO_DB};
use crate::audited::Audited;
use crate::error::CliError;
use serde_json::{Map, Value};

fn main() -> ExitCode {
    // Usage errors exit with 2 and --help / --version with 0, as clap does.
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let db = match &cli.command {
        // The demo writes (and with --force deletes) its file: an EXECSTORE_DB left in the
        // environment must not choose that file, only an explicit --db does.
        Command::Demo(_) if matches.value_source("db") == Some(ValueSource::EnvVariable) => None,
        Command::Demo(_) => cli.db.clone(),
        // Likewise the benchmark's file: only an explicit --db names it (default: a fresh
        // temporary file).
        Command::Bench(_) if matches.value_source("db") == Some(ValueSource::EnvVariable) => None,
        Command::Bench(_) => cli.db.clone(),
        Command::BenchSearch(_) if matches.value_source("db") == Some(ValueSource::EnvVariable) => None,
        Command::BenchSearch(_) => cli.db.clone(),
        _ => match &cli.db {
            Some(db) => Some(db.clone()),
            None => Cli::command()
                .error(
                    clap::error::ErrorKind::MissingRequiredArgument,
                    "no store given: pass --db PATH or set EXECSTORE_DB",
                )
                .exit(),
        },
    };
    match run(&cli, db) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`execstore list | head`): not an error.
        Err(e) if matches!(e.downcast_ref(), Some(CliError::Io(io)) if io.kind() == ErrorKind::BrokenPipe) => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli, db: Option<PathBuf>) -> anyhow::Result<()> {
    let mut out = BufWriter::new(io::stdout().lock());
    let json = cli.json;
    // Without --prefix, a command on an existing store opens the one set of execution
    // tables it holds (harel's harel_*, the bare names, ...); the demo and the benchmarks
    // write their own.
    let resolved = match (&cli.command, &db) {
        (Command::Demo(_) | Command::Bench(_) | Command::BenchSearch(_), _) | (_, None) => cli.prefix.clone(),
        // The workspace commands read no execution table: the prefix only words a hint.
        (command, Some(db)) if is_workspace_command(command) => {
            targets::resolve_prefix(db, cli.prefix.as_deref()).unwrap_or(None)
        }
        // A writing command lets SQLite's recovery run first (a hot journal a read-only
        // probe refuses is rolled back), as its own open would.
        (command, Some(db)) if writes(command) => {
            if targets::is_file(db)? && targets::existing_file(db).is_ok() {
                targets::recover_for_writing(db)?;
            }
            targets::resolve_prefix(db, cli.prefix.as_deref())?
        }
        // The monitor recovers the file itself when it may write: only the choice between
        // several sets stops it here; any other failure is its own open's to say.
        (Command::Monitor(_), Some(db)) => match targets::resolve_prefix(db, cli.prefix.as_deref()) {
            Err(e) if !targets::is_prefix_choice(&e) => cli.prefix.clone(),
            resolved => resolved?,
        },
        (_, Some(db)) => targets::resolve_prefix(db, cli.prefix.as_deref())?,
    };
    let prefix = resolved.as_deref();
    match &cli.command {
        Command::Demo(args) => {
            let db = db.unwrap_or_else(|| PathBuf::from(DEMO_DB));
            run_demo(&db, prefix, args, json, &mut out)?;
        }
        Command::Bench(args) => run_bench(db, prefix, args, &mut out)?,
        Command::Audit(args) => {
            let db = db.context("no store given")?;
            let store = targets::open_operator(&db, true)?;
            operator_commands::audit(&*store, args, json, &mut out)?;
        }
        Command::BenchSearch(args) => bench_search::run(args, db.as_deref(), json, &mut out)?,
        Command::Monitor(args) => {
            let db = db.context("no store given")?;
            run_monitor(&db, prefix, args, &mut out)?;
        }
        command if is_workspace_command(command) => {
            let db = db.context("no store given")?;
            let storage = targets::open_workspaces_to_read(&db, prefix)?;
            run_workspace_command(&cli.command, &*storage, json, &mut out)?;
        }
        Command::Suspend(_)
        | Command::Resume(_)
        | Command::Terminate(_)
        | Command::Purge(_)
        | Command::PurgeFinished(_) => {
            let db = db.context("no store given")?;
            run_control_command(&cli.command, &db, prefix, json, &mut out)?;
        }
        Command::Attributes(args) if args.action.writes() => {
            let db = db.context("no store given")?;
            run_control_command(&cli.command, &db, prefix, json, &mut out)?;
        }
        command => {
            let db = db.context("no store given")?;
            if targets::is_file(&db)? {
                targets::require_executions(&db, prefix)?;
            }
            let store = targets::open_executions(&db, prefix, true)?;
            let store = &*store;
            match command {
                Command::List(args) => commands::list(store, args, prefix.is_some(), json, &mut out)?,
                Command::Show(arg) => commands::show(store, &arg.id, json, &mut out)?,
                Command::Trace(arg) => commands::trace(store, &arg.id, json, &mut out)?,
                Command::Outbox(args) => commands::outbox(store, args, json, &mut out)?,
                Command::Timers(args) => commands::timers(store, args, json, &mut out)?,
                Command::Spawns(args) => commands::spawns(store, args, json, &mut out)?,
                Command::Attributes(args) => {
                    search_commands::attributes(store, &args.action, json, &mut out)?
                }
                _ => unreachable!("handled above"),
            }
        }
    }
    out.flush().map_err(CliError::Io)?;
    Ok(())
}

/// The commands that write to the execution store.
fn writes(command: &Command) -> bool {
    match command {
        Command::Suspend(_)
        | Command::Resume(_)
        | Command::Terminate(_)
        | Command::Purge(_)
        | Command::PurgeFinished(_) => true,
        Command::Attributes(args) => args.action.writes(),
        _ => false,
    }
}

/// The commands that read reflexr's workspace log.
fn is_workspace_command(command: &Command) -> bool {
    matches!(
        command,
        Command::Workspaces
            | Command::Log(_)
            | Command::Runs(_)
            | Command::DueRuns(_)
            | Command::DeadLetters(_)
            | Command::Leases(_)
            | Command::Cursors(_)
            | Command::Progress(_)
            | Command::Schedules(_)
            | Command::Rules(_)
    )
}

/// The control commands: the one place the CLI opens an execution store for writing.
fn run_control_command(
    command: &Command,
    db: &Path,
    prefix: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    use execstore::executions::control::Command as Ctl;
    if targets::is_file(db)? {
        targets::recover_for_writing(db)?;
        targets::require_executions(db, prefix)?;
    }
    let store = targets::open_executions(db, prefix, false)?;
    let store = &*store;
    // Bad input changes nothing, not even the audit log: a path is checked before.
    if let Command::Attributes(args) = command {
        if let Some((_, path, _)) = args.action.audit() {
            execstore::executions::search::attribute_path(path).map_err(CliError::Store)?;
        }
    }
    // Every write is audited: recorded PENDING first (or refused), then its outcome.
    let operator = targets::open_operator(db, false)?;
    let operator = &*operator;
    let version = |v: Option<i64>| -> Map<String, Value> {
        v.map(|v| Map::from_iter([("expected_version".to_owned(), Value::from(v))]))
            .unwrap_or_default()
    };
    match command {
        Command::Suspend(args) | Command::Resume(args) | Command::Terminate(args) => {
            let ctl = match command {
                Command::Suspend(_) => Ctl::Suspend,
                Command::Resume(_) => Ctl::Resume,
                _ => Ctl::Terminate,
            };
            let action = format!("executions.{}", ctl.as_str());
            let audit = Audited::begin(
                operator,
                &action,
                &args.id,
                &args.why,
                version(args.expected_version),
            )?;
            audit.finish(control_commands::status_command(store, ctl, args, json, out))?
        }
        Command::Purge(args) => {
            let mut params = version(args.expected_version);
            if let Some(path) = &args.archive {
                params.insert("archive".into(), Value::from(path.display().to_string()));
            }
            let audit = Audited::begin(operator, "executions.purge", &args.id, &args.why, params)?;
            audit.finish(control_commands::purge(store, args, json, out))?
        }
        Command::PurgeFinished(args) => {
            let params = serde_json::json!({
                "older_than_seconds": args.older_than.as_secs_f64(),
                "status": args.status.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "include_undated": args.include_undated,
                "limit": args.limit,
                "dry_run": args.dry_run,
            });
            let Value::Object(params) = params else {
                unreachable!("a JSON object")
            };
            let audit = Audited::begin(operator, "control.purge-finished", "", &args.why, params)?;
            let result = control_commands::purge_finished(store, args, json, out);
            // One entry per root purged or refused; the first failure to record one is
            // reported after the request's outcome is set.
            let mut targets = Ok(());
            if let Some(report) = result.as_ref().ok().filter(|r| !r.dry_run) {
                let purged = report.purged.iter().map(|id| (id, None));
                let refused =
                    (report.refused.iter()).map(|(id, why)| (id, Some(("REFUSED".to_owned(), why.clone()))));
                for (id, outcome) in purged.chain(refused) {
                    if let Err(e) = audit.target(id, outcome, Map::new()) {
                        targets = targets.and(Err(e));
                    }
                }
            }
            audit.finish(result)?;
            targets?;
        }
        Command::Attributes(args) => {
            let Some((action, path, why)) = args.action.audit() else {
                unreachable!("only writes come here")
            };
            let params = Map::from_iter([("path".to_owned(), Value::from(path))]);
            let audit = Audited::begin(operator, action, "", why, params)?;
            audit.finish(search_commands::attributes(store, &args.action, json, out))?
        }
        _ => unreachable!("only control commands come here"),
    }
    Ok(())
}

/// The workspace log's read commands.
fn run_workspace_command(
    command: &Command,
    storage: &dyn execstore::workspace::WorkspaceStorage,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    use workspace_commands as wc;
    match command {
        Command::Workspaces => wc::workspaces(storage, json, out)?,
        Command::Log(args) => wc::log(storage, args, json, out)?,
        Command::Runs(args) => wc::runs(storage, args, json, out)?,
        Command::DueRuns(args) => wc::due_runs(storage, args, json, out)?,
        Command::DeadLetters(args) => wc::dead_letters(storage, args, json, out)?,
        Command::Leases(args) => wc::leases(storage, args, json, out)?,
        Command::Cursors(ws) => wc::cursors(storage, ws, json, out)?,
        Command::Progress(ws) => wc::progress(storage, ws, json, out)?,
        Command::Schedules(ws) => wc::schedules(storage, ws, json, out)?,
        Command::Rules(args) => wc::rules(storage, args, json, out)?,
        _ => unreachable!("only workspace commands come here"),
    }
    Ok(())
}

fn options(prefix: Option<&str>) -> SqliteOptions {
    match prefix {
        Some(prefix) => SqliteOptions::new().prefix(prefix),
        None => SqliteOptions::new(),
    }
}

/// `db` and the `-wal` and `-shm` files SQLite keeps beside it.
fn db_files(db: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut name = OsString::from(db.as_os_str());
        name.push(suffix);
        PathBuf::from(name)
    };
    [db.to_owned(), with("-wal"), with("-shm")]
}

fn remove_db_files(db: &Path) -> io::Result<()> {
    for file in db_files(db) {
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

fn run_demo(
    db: &Path,
    prefix: Option<&str>,
    args: &DemoArgs,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if db.is_dir() {
        return Err(CliError::Input(format!("{} is a directory", db.display())).into());
    }
    if db_files(db).iter().any(|f| f.exists()) {
        // Run a second time: a store already there (the first run's) is shown as it is.
        if !args.force && db.is_file() && targets::holds(db, prefix).is_ok_and(|h| h.executions) {
            return show_existing_demo(db, prefix, args, json, out);
        }
        if !args.force {
            return Err(CliError::Input(format!(
                "{} already exists; pass --force to replace it",
                db.display()
            ))
            .into());
        }
        remove_db_files(db)
            .map_err(CliError::Io)
            .with_context(|| format!("cannot remove {}", db.display()))?;
    }
    let started = Instant::now();
    // synchronous=NORMAL: in WAL mode a commit then skips the fsync of every transaction (the
    // WAL is synced at checkpoints), which makes writing thousands of small demo commits
    // fast. A power cut could lose the last commits but never corrupt the file, and a demo
    // can simply be written again.
    let store = SqliteStore::open(db, options(prefix).synchronous(Synchronous::Normal))
        .map_err(CliError::Store)
        .with_context(|| format!("cannot create the store {}", db.display()))?;
    let bar = ProgressBar::new(u64::from(args.executions));
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} writing {pos}/{len} executions {wide_bar} {elapsed}")
    {
        bar.set_style(style);
    }
    let now = time::now();
    let options = demo::Options {
        executions: args.executions,
        seed: args.seed,
        now,
    };
    let written = demo::generate(&store, &options, &mut |n| bar.set_position(n))
        .and_then(|()| demo::summarize(&store, now))
        .and_then(|summary| Ok((summary, write_demo_workspaces(db, args.seed, now)?)));
    bar.finish_and_clear();
    let (summary, workspaces) = match written {
        Ok(summary) => summary,
        Err(e) => {
            // Leave no half-written demo behind.
            drop(store);
            let _ = remove_db_files(db);
            return Err(CliError::Store(e)).context("writing the demo failed");
        }
    };
    let hint = demo_hint(db, prefix);
    if json {
        let mut value = serde_json::json!({
            "db": db.display().to_string(),
            "prefix": prefix,
            "seed": args.seed,
        });
        if let (Some(v), serde_json::Value::Object(counts)) = (value.as_object_mut(), summary.to_json()) {
            v.extend(counts);
        }
        if let Some(v) = value.as_object_mut() {
            v.insert("workspace_log".into(), workspaces.to_json());
        }
        serde_json::to_writer_pretty(&mut *out, &value).map_err(CliError::from)?;
        writeln!(out).map_err(CliError::Io)?;
        if args.no_serve {
            return Ok(());
        }
        let config = monitor_config(&args.serve, db.display().to_string(), "sqlite", prefix)?;
        return serve_monitor(demo_served(store, db)?, &config, out);
    }
    let by_status: Vec<String> = summary
        .by_status
        .iter()
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    let by_definition: Vec<String> = summary
        .by_definition
        .iter()
        .map(|(d, n)| format!("{d} {n}"))
        .collect();
    let text = format!(
        "wrote {db} (seed {seed}) in {secs:.1}s\n\
         \n\
         executions     {total} ({roots} roots, {children} region children)\n\
         by status      {by_status}\n\
         by definition  {by_definition}\n\
         trace steps    {trace}\n\
         outbox         {outbox} undelivered events\n\
         timers         {timers} armed ({due} due, {later} later)\n\
         spawns         {spawns} pending child creations\n\
         \n\
         workspace log  {tenants} tenants, {workspaces} workspaces, {envelopes} envelopes (reflexr's tables)\n\
         runs           {runs}\n\
         and            {dead} dead letters, {leases} leases ({lapsed} lapsed), {cursors} cursors, {rules} stored rules\n\
         \n\
         try: {hint}\n",
        db = db.display(),
        seed = args.seed,
        secs = started.elapsed().as_secs_f64(),
        total = summary.executions,
        roots = summary.roots,
        children = summary.executions - summary.roots,
        by_status = by_status.join("  "),
        by_definition = by_definition.join("  "),
        trace = summary.trace_steps,
        outbox = summary.outbox,
        timers = summary.timers,
        due = summary.timers_due,
        later = summary.timers - summary.timers_due,
        spawns = summary.spawns,
        tenants = workspaces.tenants,
        workspaces = workspaces.workspaces,
        envelopes = workspaces.envelopes,
        runs = workspaces
            .runs_by_status
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join("  "),
        dead = workspaces.dead_letters,
        leases = workspaces.leases,
        lapsed = workspaces.leases_lapsed,
        cursors = workspaces.cursors,
        rules = workspaces.stored_rules,
    );
    out.write_all(text.as_bytes()).map_err(CliError::Io)?;
    if args.no_serve {
        return Ok(());
    }
    let config = monitor_config(&args.serve, db.display().to_string(), "sqlite", prefix)?;
    serve_monitor(demo_served(store, db)?, &config, out)
}

/// `execstore bench`: runs workload W1 and prints its one JSON line (always JSON, in the
/// style of the Python peer's line, so the two read alike).
fn run_bench(
    db: Option<PathBuf>,
    prefix: Option<&str>,
    args: &BenchArgs,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if args.scale {
        let location = match (&args.url, db) {
            (Some(url), _) => Some(url.clone()),
            (None, Some(db)) => Some(db.to_string_lossy().into_owned()),
            (None, None) => None,
        };
        if args.workload == args::Workload::W2 {
            let config = bench_scale_log::Config {
                location,
                sizes: args.log_sizes.clone(),
                workspaces: args.w2.workspaces as usize,
                small_events: args.w2.w2_events as usize,
                out: args.out.clone(),
            };
            bench_scale_log::run(&config, out)?;
            return Ok(());
        }
        let config = bench_scale::Config {
            location,
            sizes: args.sizes.clone(),
            out: args.out.clone(),
        };
        bench_scale::run(&config, out)?;
        return Ok(());
    }
    if args.workload != args::Workload::W1 {
        return bench_w2::run_cli(
            args.backend,
            db,
            prefix,
            args.synchronous,
            args.workload,
            &args.w2,
            out,
        );
    }
    let config = bench::Config {
        backend: args.backend,
        db,
        prefix: prefix.map(str::to_owned),
        executions: args.executions as usize,
        events: args.events,
        trace: args.trace.is_on(),
        synchronous: args.synchronous,
        seed: args.seed,
        clients: args.clients as usize,
        group_commit: args.group_commit.map_or(args.clients > 1, OnOff::is_on),
        load_for_event: args.event_read == EventRead::LoadForEvent,
    };
    let line = bench::run(&config)?;
    writeln!(out, "{}", execstore::kit::pyjson::dumps(&line)).map_err(CliError::Io)?;
    Ok(())
}

/// `s` as one POSIX shell word.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=+,@%".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `execstore monitor`: opens what the target holds (`postgres://...` or a SQLite file that
/// must exist): its executions and its workspace log (each read-only unless writes are
/// allowed: the workspace recovery actions write reflexr's records), or both, and serves the
/// monitor over them.
fn run_monitor(db: &Path, prefix: Option<&str>, args: &ServeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let target = targets::target(db)?;
    let shown = if target.is_file() {
        db.display().to_string()
    } else {
        monitor::redact_url(&target.location)
    };
    let config = monitor_config(args, shown, target.backend.name, prefix)?;
    let writable = !config.tokens.is_empty();
    if writable {
        // It may write: recover what a crashed writer left first, as any writer would.
        targets::recover_for_writing(db)?;
    }
    let found = targets::holds(db, prefix)?;
    let mut served = monitor::Served::default();
    // Neither: the execution store's own open says what is wrong (or, with a token, makes
    // the tables, as before).
    if found.executions || !found.workspaces {
        // Without a token nothing is written: nothing created or migrated, read-only sessions.
        served.executions = Some(targets::open_executions(db, prefix, !writable)?);
    }
    // The audit log and saved views, beside the data (read-only without tokens: no write
    // is made, so none is recorded).
    served.operator = Some(targets::open_operator(db, !writable)?);
    let mut config = config;
    if found.workspaces {
        let (storage, warning) =
            targets::open_workspaces_for_monitor(db, Arc::new(execstore::workspace::SystemClock), writable)?;
        if let Some(warning) = warning {
            eprintln!("warning: {warning}");
            config.warnings.push(warning);
        }
        served.workspaces = Some(storage);
    }
    serve_monitor(served, &config, out)
}

fn monitor_config(
    args: &ServeArgs,
    store_label: String,
    backend: &'static str,
    prefix: Option<&str>,
) -> anyhow::Result<monitor::Config> {
    if args.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(CliError::Input("the monitor's --token must not be empty".into()).into());
    }
    let tokens = match (&args.token, &args.tokens) {
        (Some(token), _) => execstore_monitor_api::Tokens::single(token.trim()),
        (None, Some(file)) => monitor::tokens::load(file)?,
        (None, None) => execstore_monitor_api::Tokens::none(),
    };
    Ok(monitor::Config {
        bind: args.bind,
        port: args.port,
        tokens,
        store_label,
        backend,
        prefix: prefix.map(str::to_owned),
        warnings: Vec::new(),
        metrics: execstore_monitor_api::metrics::MetricsConfig {
            period_seconds: args.metrics_period,
            keep: args.metrics_keep as usize,
            ..Default::default()
        },
        limits: monitor::Limits {
            header_timeout: std::time::Duration::from_secs_f64(args.header_timeout),
            idle_timeout: std::time::Duration::from_secs_f64(args.idle_timeout),
            max_connections: args.max_connections as usize,
        },
    })
}

/// Serves until Ctrl-C, printing the URL (flushed, so a script reading it sees it at once).
fn serve_monitor(
    store: monitor::Served,
    config: &monitor::Config,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let mode = match config.tokens.len() {
        0 => "read-only".to_owned(),
        1 => "writes allowed with the token".to_owned(),
        n => format!("writes allowed with {n} named tokens"),
    };
    let mut printed = Ok(());
    monitor::serve(store, config, &mut |url| {
        printed = writeln!(out, "monitor: {url}  ({mode}; Ctrl-C stops it)").and_then(|()| out.flush());
    })?;
    printed.map_err(CliError::Io)?;
    Ok(())
}

/// Writes the demo's workspace story (reflexr's tables) into the demo file, beside the
/// executions, on a clock that the story moves.
fn write_demo_workspaces(db: &Path, seed: u64, now: f64) -> execstore::Result<demo::WorkspaceSummary> {
    use execstore::workspace::{ManualClock, Timestamp};
    use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs_f64(now)?));
    let storage = SqliteWorkspaceStorage::open(
        db,
        SqliteWorkspaceOptions::new()
            .synchronous(Synchronous::Normal)
            .clock(clock.clone()),
    )?;
    demo::generate_workspaces(&storage, &clock, seed, now)
}

/// What the demo serves: the store it wrote, and its workspace log (read-only, on the
/// system clock).
/// The demo's "try:" command: what runs where the user is (`execstore` on PATH, `cargo run
/// ... --` after cargo run, or the binary's path).
fn demo_hint(db: &Path, prefix: Option<&str>) -> String {
    format!(
        "{} list --db {}{}",
        invocation::invocation(),
        shell_word(&db.display().to_string()),
        prefix
            .map(|p| format!(" --prefix {}", shell_word(p)))
            .unwrap_or_default()
    )
}

/// `demo` on a store that is already there (without --force): says so, changes nothing, and
/// serves the monitor over it (unless --no-serve), so that the first command can be run
/// twice.
fn show_existing_demo(
    db: &Path,
    prefix: Option<&str>,
    args: &DemoArgs,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if json {
        let value = serde_json::json!({
            "db": db.display().to_string(),
            "prefix": prefix,
            "existing": true,
        });
        serde_json::to_writer_pretty(&mut *out, &value).map_err(CliError::from)?;
        writeln!(out).map_err(CliError::Io)?;
    } else {
        writeln!(
            out,
            "{} already exists: showing it as it is (--force writes a fresh demo)\n\ntry: {}",
            db.display(),
            demo_hint(db, prefix)
        )
        .map_err(CliError::Io)?;
    }
    out.flush().map_err(CliError::Io)?;
    if args.no_serve {
        return Ok(());
    }
    run_monitor(db, prefix, &args.serve, out)
}

fn demo_served(store: SqliteStore, db: &Path) -> anyhow::Result<monitor::Served> {
    let workspaces = targets::open_workspaces(db, true, Arc::new(execstore::workspace::SystemClock))?;
    let operator = targets::open_operator(db, false)?;
    Ok(monitor::Served {
        executions: Some(Arc::new(store)),
        workspaces: Some(workspaces),
        operator: Some(operator),
    })
}
