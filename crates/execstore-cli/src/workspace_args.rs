//! The command line of the workspace log's read commands (reflexr's `reflexr_*` tables).

use clap::Args;
use execstore::workspace::{RunStatus, Timestamp, WorkspaceRef};

/// `--tenant T --workspace W`.
#[derive(Debug, Args)]
pub struct WorkspaceArg {
    /// The tenant.
    #[arg(long, value_name = "T")]
    pub tenant: String,
    /// The workspace within the tenant.
    #[arg(long, value_name = "W")]
    pub workspace: String,
}

impl WorkspaceArg {
    /// The reference the storage takes.
    pub fn reference(&self) -> WorkspaceRef {
        WorkspaceRef::new(self.tenant.clone(), self.workspace.clone())
    }
}

/// `execstore log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    #[command(flatten)]
    pub ws: WorkspaceArg,
    /// Only envelopes after this seq.
    #[arg(long, value_name = "SEQ", default_value_t = 0, value_parser = clap::value_parser!(i64).range(0..))]
    pub after: i64,
    /// Only envelopes before this seq.
    #[arg(long, value_name = "SEQ", value_parser = clap::value_parser!(i64).range(0..))]
    pub before: Option<i64>,
    /// Only envelopes of this event type (repeat for several).
    #[arg(long = "type", value_name = "TYPE")]
    pub types: Vec<String>,
    /// The first N that match (default: the whole window, as reflexr's `read`).
    #[arg(long, value_name = "N", conflicts_with = "last")]
    pub limit: Option<usize>,
    /// The last N that match, oldest first (the tail).
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// Only envelopes matching this query (docs/search.md: `event.service = auth`,
    /// `event.amount > 10`, `type = shop:paid`, `at > -1h`). One page examines at most
    /// --scan envelopes (from --after, or down from --before with --last) and says where
    /// to go on.
    #[arg(long = "where", value_name = "QUERY")]
    pub filter: Option<String>,
    /// With --where: how many envelopes one page examines at most (default 10000).
    #[arg(long, value_name = "N", requires = "filter")]
    pub scan: Option<usize>,
}

/// `execstore runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub ws: WorkspaceArg,
    /// Only this rule's runs.
    #[arg(long, value_name = "RULE")]
    pub rule: Option<String>,
    /// Only runs in this status (pending running retrying succeeded dead cancelled skipped).
    #[arg(long, value_name = "STATUS", value_parser = parse_run_status)]
    pub status: Option<RunStatus>,
    /// Only this scope's runs.
    #[arg(long, value_name = "KEY")]
    pub scope: Option<String>,
    /// At most N, newest first.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Only runs matching this query (docs/search.md: `scope.customer = c-17`,
    /// `status = dead`, `rule exists`, `event.service = auth` for the event that fired
    /// it). One page examines at most --scan runs and says where to go on (--cursor).
    #[arg(long = "where", value_name = "QUERY")]
    pub filter: Option<String>,
    /// With --where: how many runs one page examines at most (default 10000).
    #[arg(long, value_name = "N", requires = "filter")]
    pub scan: Option<usize>,
    /// With --where: go on from where a page stopped (the cursor it printed).
    #[arg(long, value_name = "CURSOR", requires = "filter")]
    pub cursor: Option<i64>,
}

/// `execstore due-runs`.
#[derive(Debug, Args)]
pub struct DueRunsArgs {
    /// The time to find due runs at: RFC 3339 (`2026-01-01T12:00:00Z`) or `now`.
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    pub now: Timestamp,
    /// At most N runs.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub limit: usize,
    /// A disabled rule (repeat for several).
    #[arg(long, value_name = "RULE")]
    pub disabled: Vec<String>,
    /// A rule ordered by scope (repeat for several).
    #[arg(long, value_name = "RULE")]
    pub ordered: Vec<String>,
    /// An ordered rule whose dead-lettered runs block their scope (repeat for several).
    #[arg(long, value_name = "RULE")]
    pub blocking: Vec<String>,
}

/// `execstore dead-letters`.
#[derive(Debug, Args)]
pub struct DeadLettersArgs {
    #[command(flatten)]
    pub ws: WorkspaceArg,
    /// Only this rule's.
    #[arg(long, value_name = "RULE")]
    pub rule: Option<String>,
    /// Only those recorded after this position (the `--after` a page with --limit printed).
    #[arg(long, value_name = "POS", default_value_t = 0, value_parser = clap::value_parser!(i64).range(0..))]
    pub after: i64,
    /// At most N (default: every one, read a page at a time).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
}

/// `execstore leases`.
#[derive(Debug, Args)]
pub struct LeasesArgs {
    #[command(flatten)]
    pub ws: WorkspaceArg,
    /// Only the leases whose key sorts after this one (the `--after` a page with --limit
    /// printed).
    #[arg(long, value_name = "KEY")]
    pub after: Option<String>,
    /// At most N (default: every one, read a page at a time).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
}

/// `execstore rules`.
#[derive(Debug, Args)]
pub struct RulesArgs {
    #[command(flatten)]
    pub ws: WorkspaceArg,
    /// Show this stored rule's version history (its facts in the log) instead.
    #[arg(long, value_name = "NAME")]
    pub history: Option<String>,
}

fn parse_run_status(s: &str) -> Result<RunStatus, String> {
    RunStatus::parse(&s.trim().to_ascii_lowercase()).map_err(|_| {
        let all: Vec<&str> = RunStatus::ALL.iter().map(|s| s.as_str()).collect();
        format!("expected one of {}", all.join(", "))
    })
}

fn parse_instant(s: &str) -> Result<Timestamp, String> {
    if s.eq_ignore_ascii_case("now") {
        return Timestamp::from_secs_f64(crate::time::now()).map_err(|e| e.to_string());
    }
    Timestamp::parse_json_text(s)
        .map_err(|_| "expected an RFC 3339 time with an offset (2026-01-01T12:00:00Z) or `now`".into())
}
