//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use execstore::Status;

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
    /// EXECSTORE_DB, so a stray environment never points --force at a real store).
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
    /// Write a realistic demo store (three statecharts, every status, parents and children,
    /// timers, outbox, spawns and timelines) to a new SQLite file.
    Demo(DemoArgs),
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
    #[arg(long, value_name = "N", default_value_t = execstore::DEFAULT_LIST_LIMIT)]
    pub limit: usize,

    /// Resume after the page that printed this cursor.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,

    /// Follow the cursors to the end and print everything.
    #[arg(long)]
    pub all: bool,
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
          value_parser = clap::value_parser!(u32).range(20..=execstore::validate::MAX_PAGE as i64))]
    pub executions: u32,

    /// Seed of the generator: the same seed writes the same store (apart from the wall clock).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,

    /// Replace the file (and its -wal and -shm companions) if it exists.
    #[arg(long)]
    pub force: bool,
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
