//! `execstore audit`: the monitor's audit log, read from the store it is kept in.

use std::io::Write;

use execstore::operator::{AuditQuery, OperatorStore, PENDING, PENDING_MEANS};

use crate::args::AuditArgs;
use crate::error::{CliError, Result};
use crate::table::Table;
use crate::time;

/// `execstore audit [--target ID] [--actor NAME] [--limit N] [--cursor C]`.
pub fn audit(store: &dyn OperatorStore, args: &AuditArgs, json: bool, out: &mut dyn Write) -> Result<()> {
    let query = AuditQuery {
        target: args.target.clone(),
        actor: args.actor.clone(),
        before: args.cursor,
        limit: args.limit,
        ..AuditQuery::new()
    };
    let entries = store.list_audit(&query)?;
    if json {
        let text = serde_json::to_string_pretty(&entries).map_err(|e| CliError::Input(e.to_string()))?;
        writeln!(out, "{text}")?;
        return Ok(());
    }
    if entries.is_empty() {
        let mut filters = Vec::new();
        if let Some(t) = &args.target {
            filters.push(format!("on {t:?}"));
        }
        if let Some(a) = &args.actor {
            filters.push(format!("by {a:?}"));
        }
        let filters = if filters.is_empty() {
            String::new()
        } else {
            format!(" {}", filters.join(" "))
        };
        let after = if args.cursor.is_some() {
            " after this cursor"
        } else {
            ""
        };
        writeln!(out, "no audit entries{filters}{after}")?;
        return Ok(());
    }
    let mut table = Table::new(&[
        ("ID", 0),
        ("AT (UTC)", 0),
        ("ACTOR", 24),
        ("ROLE", 0),
        ("ACTION", 0),
        ("TARGET", 32),
        ("OUTCOME", 0),
        ("REASON", 60),
    ]);
    for e in &entries {
        table.row(vec![
            e.id.to_string(),
            time::utc(e.at),
            e.actor.clone(),
            if e.role.is_empty() {
                "-".into()
            } else {
                e.role.clone()
            },
            e.action.clone(),
            if e.target.is_empty() {
                "-".into()
            } else {
                e.target.clone()
            },
            if e.outcome == PENDING {
                PENDING_MEANS.into()
            } else {
                e.outcome.clone()
            },
            e.reason.clone(),
        ]);
    }
    table.write(out)?;
    match entries.last() {
        Some(last) if entries.len() == args.limit => {
            writeln!(out, "{} shown; more with --cursor {}", entries.len(), last.id)?
        }
        _ => writeln!(out, "{} shown", entries.len())?,
    }
    Ok(())
}
