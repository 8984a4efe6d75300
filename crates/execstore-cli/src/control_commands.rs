//! The control commands: `suspend`, `resume`, `terminate`, `purge` and `purge-finished`, as
//! harel 0.9's control plane does them ([`execstore::executions::control`]). They open the store for
//! writing (every read command opens it read-only) and take the time from the system clock.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use execstore::executions::control::{self, Command, ControlOutcome, PurgeFinished, PurgeReport, PURGEABLE};
use execstore::{executions::Status, ExecutionStore, StoreError};
use serde_json::{json, Value};

use crate::audited::ReasonArg;
use crate::error::{CliError, Result};
use crate::time;

/// `suspend`, `resume` and `terminate`.
#[derive(Debug, Args)]
pub struct ControlArgs {
    /// The execution id (its region children follow).
    pub id: String,

    /// Act only if the execution is still at this version (else a conflict, nothing
    /// changed): the version you looked at.
    #[arg(long, value_name = "V")]
    pub expected_version: Option<i64>,

    #[command(flatten)]
    pub why: ReasonArg,
}

/// `purge`.
#[derive(Debug, Args)]
pub struct PurgeArgs {
    /// The root execution id: the whole tree goes, with everything keyed by it.
    pub id: String,

    /// Write harel's archive bundle of the tree (JSON) to FILE, a new file, before deleting
    /// anything.
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,

    /// Purge only if the root is still at this version.
    #[arg(long, value_name = "V")]
    pub expected_version: Option<i64>,

    #[command(flatten)]
    pub why: ReasonArg,
}

/// `purge-finished`.
#[derive(Debug, Args)]
pub struct PurgeFinishedArgs {
    /// Purge root trees that finished longer ago than this, e.g. `30d`, `12h`, `90min`, `0s`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub older_than: Duration,

    /// Only roots in these statuses (DONE, CANCELLED; default both): repeat or separate with
    /// commas.
    #[arg(long, value_name = "STATUS", value_delimiter = ',', value_parser = parse_purgeable)]
    pub status: Vec<Status>,

    /// Also purge finished roots that carry no `finished_at` (skipped and counted otherwise).
    #[arg(long)]
    pub include_undated: bool,

    /// At most this many roots.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,

    /// Only report what would be purged (the same whole-tree check), deleting nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Append each purged tree's archive bundle to FILE (a new file), one JSON line each,
    /// written before that tree is deleted.
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,

    #[command(flatten)]
    pub why: ReasonArg,
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    humantime::parse_duration(s.trim()).map_err(|e| format!("{s:?}: {e} (e.g. 30d, 12h, 90min)"))
}

fn parse_purgeable(s: &str) -> std::result::Result<Status, String> {
    let status = Status::from_str(s).map_err(|e| e.to_string())?;
    if PURGEABLE.contains(&status) {
        Ok(status)
    } else {
        Err(format!(
            "{status}: only DONE and CANCELLED executions can be purged"
        ))
    }
}

fn write_json(out: &mut dyn Write, value: &Value) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(CliError::from)?;
    writeln!(out).map_err(CliError::Io)
}

/// `suspend ID`, `resume ID`, `terminate ID`.
pub fn status_command(
    store: &dyn ExecutionStore,
    command: Command,
    args: &ControlArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let outcome: ControlOutcome = control::run(store, command, &args.id, args.expected_version, time::now())?;
    if json {
        return write_json(
            out,
            &json!({"command": command.as_str(), "id": args.id, "changed": outcome.changed}),
        );
    }
    if outcome.changed.is_empty() {
        let status = store
            .load(&args.id)?
            .map(|e| e.status.to_string())
            .unwrap_or_default();
        let needs = match command {
            Command::Suspend => "suspend acts on a RUNNING execution",
            Command::Resume => "resume acts on a SUSPENDED execution",
            Command::Terminate => "it and its regions are finished",
        };
        writeln!(out, "{}: nothing changed ({status}; {needs})", args.id).map_err(CliError::Io)?;
        return Ok(());
    }
    let n = outcome.changed.len();
    writeln!(
        out,
        "{}: {} ({n} execution{})",
        args.id,
        command.as_str(),
        if n == 1 { "" } else { "s" }
    )
    .map_err(CliError::Io)?;
    for c in &outcome.changed {
        writeln!(out, "  {}  {} -> {}  (version {})", c.id, c.from, c.to, c.version).map_err(CliError::Io)?;
    }
    Ok(())
}

/// A new file for an archive: an existing one is refused (before anything is deleted).
fn new_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| CliError::Input(format!("cannot create the archive {}: {e}", path.display())))
}

/// Writes one bundle to `file` and syncs it, so it is on disk before the tree is deleted.
fn archive_to(file: &mut File, bundle: &Value, pretty: bool) -> execstore::Result<()> {
    let text = if pretty {
        serde_json::to_string_pretty(bundle)
    } else {
        serde_json::to_string(bundle)
    }
    .map_err(|e| StoreError::invalid("archive", e.to_string()))?;
    writeln!(file, "{text}")
        .and_then(|()| file.sync_all())
        .map_err(|e| StoreError::Backend {
            message: format!("writing the archive: {e}"),
            retryable: false,
            source: Some(Box::new(e)),
        })
}

/// `purge ID [--archive FILE]`.
pub fn purge(store: &dyn ExecutionStore, args: &PurgeArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let mut file = match &args.archive {
        Some(path) => Some((new_file(path)?, path)),
        None => None,
    };
    let result = match file.as_mut() {
        Some((f, _)) => {
            let mut write = |bundle: &Value| archive_to(f, bundle, true);
            control::purge(store, &args.id, args.expected_version, Some(&mut write))
        }
        None => control::purge(store, &args.id, args.expected_version, None),
    };
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) => {
            if let Some((f, path)) = file {
                // nothing was purged: leave no empty or partial archive behind
                drop(f);
                let _ = std::fs::remove_file(path);
            }
            return Err(match e {
                StoreError::InvalidInput { reason, .. } if reason.starts_with("purge refused") => {
                    CliError::Input(reason)
                }
                e => e.into(),
            });
        }
    };
    if json {
        return write_json(
            out,
            &json!({"purged": outcome.root_id, "removed": outcome.removed, "swept": outcome.swept,
                    "archive": args.archive.as_ref().map(|p| p.display().to_string())}),
        );
    }
    let n = outcome.removed.len();
    write!(
        out,
        "purged {}: {n} execution{} removed",
        outcome.root_id,
        if n == 1 { "" } else { "s" }
    )
    .map_err(CliError::Io)?;
    if let Some(path) = &args.archive {
        write!(out, ", archived to {}", path.display()).map_err(CliError::Io)?;
    }
    writeln!(out).map_err(CliError::Io)
}

/// `purge-finished --older-than DURATION [--status S]... [--dry-run]`: prints and returns
/// its report.
pub fn purge_finished(
    store: &dyn ExecutionStore,
    args: &PurgeFinishedArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<PurgeReport> {
    let mut request = PurgeFinished::new(args.older_than.as_secs_f64(), time::now());
    if !args.status.is_empty() {
        request.statuses = args.status.clone();
    }
    request.include_undated = args.include_undated;
    request.limit = args.limit;
    request.dry_run = args.dry_run;
    let mut file = match (&args.archive, args.dry_run) {
        (Some(path), false) => Some(new_file(path)?),
        _ => None,
    };
    let report = match file.as_mut() {
        Some(f) => {
            let mut write = |bundle: &Value| archive_to(f, bundle, false);
            control::purge_finished(store, &request, Some(&mut write))?
        }
        None => control::purge_finished(store, &request, None)?,
    };
    if json {
        write_json(out, &serde_json::to_value(&report).map_err(CliError::from)?)?;
        return Ok(report);
    }
    let verb = if report.dry_run { "would purge" } else { "purged" };
    writeln!(out, "{verb} {} root tree(s)", report.purged.len()).map_err(CliError::Io)?;
    for id in &report.purged {
        writeln!(out, "  {id}").map_err(CliError::Io)?;
    }
    if !report.refused.is_empty() {
        writeln!(out, "refused {}:", report.refused.len()).map_err(CliError::Io)?;
        for (id, why) in &report.refused {
            writeln!(out, "  {id}: {why}").map_err(CliError::Io)?;
        }
    }
    if report.skipped_undated > 0 {
        writeln!(
            out,
            "skipped {} finished root(s) without finished_at (--include-undated purges them)",
            report.skipped_undated
        )
        .map_err(CliError::Io)?;
    }
    Ok(report)
}
