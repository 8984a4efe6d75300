//! `due_runs` as reflexr 0.1.1 defines it, answered by walking indexes in due order and
//! stopping at the limit, rather than evaluating the policy for every run as reflexr's one
//! query does.
//!
//! Three streams, each ordered by (next_attempt_at, tenant, workspace, position) over
//! `ix_reflexr_runs_due (status, next_attempt_at)`: pending runs due by `now`, retrying runs
//! due by `now`, and running runs whose run lease is missing or lapsed (any due time). They
//! are merged in that order; a waiting run of an ordered rule is kept only if no earlier run
//! of its scope holds it (one probe of `ix_reflexr_runs_scope_head`), and once a scope has
//! given its one run the rest of its backlog is passed over without a probe. Reading stops
//! as soon as `limit` runs are kept, so a call costs about `limit` rows plus the backlog it
//! steps over, not the whole table. Dates compare as SQLAlchemy's fixed-width UTC text,
//! which sorts as the instants do.

use std::collections::HashSet;

use execstore::workspace::{Run, RunPolicy, Timestamp, WorkspaceRef};
use execstore::Result;
use rusqlite::{Connection, Rows, ToSql};

use crate::db::error::Db;

const COLUMNS: &str = "r.next_attempt_at, r.tenant_id, r.workspace_id, r.position, r.rule, r.scope_key, \
     r.fired_seq, r.body";
const ORDER: &str = "ORDER BY r.next_attempt_at, r.tenant_id, r.workspace_id, r.position";

/// `?, ?, ...` for `n` parameters, numbered from `first`.
fn marks(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One candidate: its sort key and what the policy needs.
struct Candidate {
    next_attempt_at: String,
    tenant: String,
    workspace: String,
    position: i64,
    rule: String,
    scope_key: String,
    fired_seq: i64,
    body: String,
    waiting: bool,
}

impl Candidate {
    fn key(&self) -> (&str, &str, &str, i64) {
        (
            &self.next_attempt_at,
            &self.tenant,
            &self.workspace,
            self.position,
        )
    }
}

/// One ordered stream of candidates, read a row at a time.
struct Stream<'s> {
    rows: Rows<'s>,
    head: Option<Candidate>,
    waiting: bool,
}

impl<'s> Stream<'s> {
    fn new(rows: Rows<'s>, waiting: bool) -> Result<Self> {
        let mut s = Stream {
            rows,
            head: None,
            waiting,
        };
        s.advance()?;
        Ok(s)
    }

    fn advance(&mut self) -> Result<()> {
        self.head = match self.rows.next().db()? {
            None => None,
            Some(row) => Some(Candidate {
                next_attempt_at: row.get(0).db()?,
                tenant: row.get(1).db()?,
                workspace: row.get(2).db()?,
                position: row.get(3).db()?,
                rule: row.get(4).db()?,
                scope_key: row.get(5).db()?,
                fired_seq: row.get(6).db()?,
                body: row.get(7).db()?,
                waiting: self.waiting,
            }),
        };
        Ok(())
    }
}

/// The due runs at `now` under `policy`, at most `limit`, by due time, tenant, workspace and
/// creation.
pub(crate) fn due_runs(
    conn: &Connection,
    now: Timestamp,
    limit: usize,
    policy: &RunPolicy,
) -> Result<Vec<(WorkspaceRef, Run)>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let now = now.to_sqlite_text();
    let disabled: Vec<&String> = policy.disabled.iter().collect();
    let not_disabled = if disabled.is_empty() {
        String::new()
    } else {
        format!(" AND r.rule NOT IN ({})", marks(2, disabled.len()))
    };
    let mut params: Vec<&dyn ToSql> = vec![&now];
    params.extend(disabled.iter().map(|r| *r as &dyn ToSql));

    let waiting_sql = |status: &str| {
        format!(
            "SELECT {COLUMNS} FROM reflexr_runs AS r INDEXED BY ix_reflexr_runs_due \
             WHERE r.status = '{status}' AND r.next_attempt_at <= ?1{not_disabled} {ORDER}"
        )
    };
    let running_sql = format!(
        "SELECT {COLUMNS} FROM reflexr_runs AS r INDEXED BY ix_reflexr_runs_due \
         WHERE r.status = 'running'{not_disabled} AND NOT EXISTS (SELECT 1 FROM reflexr_leases AS l \
         WHERE l.tenant_id = r.tenant_id AND l.workspace_id = r.workspace_id \
         AND l.\"key\" = 'run:' || r.id AND l.expires_at > ?1) {ORDER}"
    );
    let mut pending = conn.prepare_cached(&waiting_sql("pending")).db()?;
    let mut retrying = conn.prepare_cached(&waiting_sql("retrying")).db()?;
    let mut running = conn.prepare_cached(&running_sql).db()?;
    let mut streams = [
        Stream::new(pending.query(params.as_slice()).db()?, true)?,
        Stream::new(retrying.query(params.as_slice()).db()?, true)?,
        Stream::new(running.query(params.as_slice()).db()?, false)?,
    ];

    // Scopes of ordered rules that already gave their one run.
    let mut served: HashSet<(String, String, String, String)> = HashSet::new();
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(next) = streams
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.head.as_ref().map(|c| (i, c.key())))
            .min_by(|a, b| a.1.cmp(&b.1))
            .map(|(i, _)| i)
        else {
            break;
        };
        let Some(c) = streams[next].head.take() else { break };
        streams[next].advance()?;
        if c.waiting && policy.ordered.contains(&c.rule) {
            let scope = (
                c.tenant.clone(),
                c.workspace.clone(),
                c.rule.clone(),
                c.scope_key.clone(),
            );
            if served.contains(&scope) || held_back(conn, &c, policy.blocking.contains(&c.rule))? {
                continue;
            }
            served.insert(scope);
        }
        out.push((WorkspaceRef::new(c.tenant, c.workspace), Run::from_json(&c.body)?));
    }
    Ok(out)
}

/// Whether an earlier run of the candidate's scope, in firing order (fired seq, then
/// creation), holds it: pending, retrying or running, or dead under a blocking rule.
fn held_back(conn: &Connection, c: &Candidate, blocking: bool) -> Result<bool> {
    let statuses = if blocking {
        "('pending', 'retrying', 'running', 'dead')"
    } else {
        "('pending', 'retrying', 'running')"
    };
    let sql = format!(
        "SELECT 1 FROM reflexr_runs AS e INDEXED BY ix_reflexr_runs_scope_head \
         WHERE e.tenant_id = ?1 AND e.workspace_id = ?2 AND e.rule = ?3 AND e.scope_key = ?4 \
         AND e.status IN {statuses} AND (e.fired_seq < ?5 OR (e.fired_seq = ?5 AND e.position < ?6)) LIMIT 1"
    );
    conn.prepare_cached(&sql)
        .db()?
        .exists(rusqlite::params![
            c.tenant,
            c.workspace,
            c.rule,
            c.scope_key,
            c.fired_seq,
            c.position
        ])
        .db()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(conn: &Connection, sql: &str) -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt.query_map([], |r| r.get::<_, String>(3)).unwrap();
        rows.map(|r| r.unwrap()).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn the_streams_and_probes_walk_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("w.db");
        let storage = crate::SqliteWorkspaceStorage::open(
            &db,
            crate::SqliteWorkspaceOptions::new().clock(std::sync::Arc::new(
                execstore::workspace::ManualClock::new(Timestamp::from_micros(0).unwrap()),
            )),
        )
        .unwrap();
        drop(storage);
        let conn = Connection::open(&db).unwrap();
        let stream = plan(
            &conn,
            &format!("SELECT {COLUMNS} FROM reflexr_runs AS r INDEXED BY ix_reflexr_runs_due WHERE r.status = 'pending' AND r.next_attempt_at <= '2026' {ORDER}"),
        );
        // A range of the due index (not a walk of all of it, which INDEXED BY would also
        // allow), in `next_attempt_at` order: at most the runs due at one same instant are
        // sorted by the rest of the key (SQLite's partial sort, "LAST 3 TERMS"), never the
        // whole range, so the merge still stops at the limit.
        assert!(
            stream.contains("SEARCH r USING INDEX ix_reflexr_runs_due (status=? AND next_attempt_at<?)"),
            "{stream}"
        );
        assert!(!stream.contains("SCAN r"), "{stream}");
        assert!(
            !stream.contains("TEMP B-TREE FOR ORDER BY") && !stream.contains("TEMP B-TREE FOR RIGHT"),
            "a sort of the whole range: {stream}"
        );
        let probe = plan(
            &conn,
            "SELECT 1 FROM reflexr_runs AS e INDEXED BY ix_reflexr_runs_scope_head WHERE e.tenant_id = 't' \
             AND e.workspace_id = 'w' AND e.rule = 'r' AND e.scope_key = 'k' AND e.status IN ('pending', 'running') \
             AND (e.fired_seq < 3 OR (e.fired_seq = 3 AND e.position < 2)) LIMIT 1",
        );
        assert!(
            probe.contains("SEARCH e USING COVERING INDEX ix_reflexr_runs_scope_head"),
            "{probe}"
        );
    }
}
