//! `due_runs` in SQL, as reflexr 0.1.1's `SqlStorage` asks it: one query across workspaces,
//! the policy in the query (so the limit counts only runs that can start), over
//! `ix_reflexr_runs_due` and, for ordered rules, a `NOT EXISTS` probe of
//! `ix_reflexr_runs_scope_head` per run.

use execstore::workspace::{Run, RunPolicy, Timestamp, WorkspaceRef};
use execstore::Result;
use rusqlite::{Connection, ToSql};

use super::sql;
use crate::db::error::Db;

/// The statuses in which a run holds back the later runs of its ordered scope.
static HOLDING: [&str; 3] = ["pending", "retrying", "running"];

/// `?, ?, ...` for `n` parameters.
fn marks(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// Whether an earlier run of the outer run's scope, in firing order (fired seq, then creation),
/// is in one of `statuses`.
fn held_back(statuses: usize) -> String {
    format!(
        "EXISTS (SELECT 1 FROM reflexr_runs AS e WHERE e.tenant_id = r.tenant_id \
         AND e.workspace_id = r.workspace_id AND e.rule = r.rule AND e.scope_key = r.scope_key \
         AND e.status IN ({}) AND (e.fired_seq, e.position) < (r.fired_seq, r.position))",
        marks(statuses)
    )
}

/// The due runs at `now` under `policy`, at most `limit`, by due time, tenant, workspace and
/// creation. Dates compare as SQLAlchemy's fixed-width UTC text, which sorts as the instants.
pub(crate) fn due_runs(
    conn: &Connection,
    now: Timestamp,
    limit: usize,
    policy: &RunPolicy,
) -> Result<Vec<(WorkspaceRef, Run)>> {
    let now = now.to_sqlite_text();
    let limit = sql::limit_param(Some(limit));
    // The lists are the policy's sets (sorted, as reflexr binds them).
    let blocking: Vec<&String> = policy.ordered.intersection(&policy.blocking).collect();
    let plain: Vec<&String> = policy.ordered.difference(&policy.blocking).collect();
    let mut args: Vec<&dyn ToSql> = vec![&now];
    let mut waiting = String::from("r.status IN ('pending', 'retrying') AND r.next_attempt_at <= ?");
    if !policy.ordered.is_empty() {
        let mut first = format!("r.rule NOT IN ({})", marks(policy.ordered.len()));
        args.extend(policy.ordered.iter().map(|r| r as &dyn ToSql));
        for (rules, dead) in [(&plain, false), (&blocking, true)] {
            if rules.is_empty() {
                continue;
            }
            let statuses = HOLDING.len() + usize::from(dead);
            first.push_str(&format!(
                " OR (r.rule IN ({}) AND NOT {})",
                marks(rules.len()),
                held_back(statuses)
            ));
            args.extend(rules.iter().map(|r| *r as &dyn ToSql));
            args.extend(HOLDING.iter().map(|s| s as &dyn ToSql));
            if dead {
                args.push(&"dead");
            }
        }
        waiting = format!("{waiting} AND ({first})");
    }
    let mut due =
        format!("(({waiting}) OR (r.status = 'running' AND (l.\"key\" IS NULL OR l.expires_at <= ?)))");
    args.push(&now);
    if !policy.disabled.is_empty() {
        due.push_str(&format!(" AND r.rule NOT IN ({})", marks(policy.disabled.len())));
        args.extend(policy.disabled.iter().map(|r| r as &dyn ToSql));
    }
    args.push(&limit);
    let text = format!(
        "SELECT r.tenant_id, r.workspace_id, r.body FROM reflexr_runs AS r \
         LEFT OUTER JOIN reflexr_leases AS l ON l.tenant_id = r.tenant_id \
         AND l.workspace_id = r.workspace_id AND l.\"key\" = 'run:' || r.id \
         WHERE {due} ORDER BY r.next_attempt_at, r.tenant_id, r.workspace_id, r.position LIMIT ?"
    );
    sql::all(conn, &text, &args, |row| {
        let ws = WorkspaceRef::new(row.get::<_, String>(0).db()?, row.get::<_, String>(1).db()?);
        let run = Run::from_json(&row.get::<_, String>(2).db()?)?;
        Ok((ws, run))
    })
}
