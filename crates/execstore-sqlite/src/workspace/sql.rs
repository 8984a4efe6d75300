//! The workspace log's statements, and the lookups a transaction and a plain read share (each
//! on whichever connection it is given). Every statement is prepared once per connection
//! (`prepare_cached`); the JSON columns hold reflexr's text and are read with the records'
//! `from_json`, date-times are SQLAlchemy's UTC text.

use execstore::kit::pyjson;
use execstore::workspace::{
    Envelope, EvaluationError, Lease, RuleProgress, Run, StoredRule, StoredRuleStatus, Timestamp,
    WorkspaceRef,
};
use execstore::{executions::JsonObject, Result, StoreError};
use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};

use crate::db::error::Db;

pub(crate) const BEGIN_IMMEDIATE: &str = "BEGIN IMMEDIATE";
pub(crate) const COMMIT: &str = "COMMIT";
pub(crate) const SAVEPOINT: &str = "SAVEPOINT execstore_call";
pub(crate) const ROLLBACK_TO: &str = "ROLLBACK TO execstore_call";
pub(crate) const RELEASE: &str = "RELEASE execstore_call";

pub(crate) const ENSURE_WORKSPACE: &str = "INSERT OR IGNORE INTO reflexr_workspaces \
     (tenant_id, workspace_id, head_seq, head_ts, last_position) VALUES (?1, ?2, 0, NULL, 0)";
pub(crate) const WORKSPACE: &str = "SELECT head_seq, head_ts, last_position FROM reflexr_workspaces \
     WHERE tenant_id = ?1 AND workspace_id = ?2";
pub(crate) const UPDATE_WORKSPACE: &str = "UPDATE reflexr_workspaces SET head_seq = ?3, head_ts = ?4, \
     last_position = ?5 WHERE tenant_id = ?1 AND workspace_id = ?2";
pub(crate) const WORKSPACES: &str = "SELECT tenant_id, workspace_id FROM reflexr_workspaces \
     WHERE head_seq > 0 ORDER BY tenant_id, workspace_id";

pub(crate) const INSERT_EVENT: &str = "INSERT INTO reflexr_events \
     (tenant_id, workspace_id, seq, event_id, envelope, event_type, rule) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const ENVELOPE: &str = "SELECT envelope FROM reflexr_events \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND event_id = ?3";
pub(crate) const READ_AFTER: &str = "SELECT envelope FROM reflexr_events \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4";
pub(crate) const RULE_HISTORY: &str = "SELECT envelope FROM reflexr_events \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND rule = ?3 ORDER BY seq";

const RUN: &str = "SELECT body FROM reflexr_runs WHERE tenant_id = ?1 AND workspace_id = ?2 AND id = ?3";
pub(crate) const RUN_EXISTS: &str =
    "SELECT 1 FROM reflexr_runs WHERE tenant_id = ?1 AND workspace_id = ?2 AND id = ?3";
pub(crate) const INSERT_RUN: &str = "INSERT INTO reflexr_runs (tenant_id, workspace_id, id, position, rule, \
     scope_key, status, fired_seq, next_attempt_at, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
pub(crate) const UPDATE_RUN: &str = "UPDATE reflexr_runs SET rule = ?4, scope_key = ?5, status = ?6, \
     fired_seq = ?7, next_attempt_at = ?8, body = ?9 WHERE tenant_id = ?1 AND workspace_id = ?2 AND id = ?3";
pub(crate) const SCOPE_RUNS: &str =
    "SELECT body FROM reflexr_runs WHERE tenant_id = ?1 AND workspace_id = ?2 \
     AND rule = ?3 AND scope_key = ?4 AND status != 'succeeded' ORDER BY fired_seq, position";

const PROGRESS: &str = "SELECT body FROM reflexr_rule_progress \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND rule = ?3";
pub(crate) const PROGRESS_EXISTS: &str = "SELECT 1 FROM reflexr_rule_progress \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND rule = ?3";
pub(crate) const INSERT_PROGRESS: &str = "INSERT INTO reflexr_rule_progress \
     (tenant_id, workspace_id, rule, position, body) VALUES (?1, ?2, ?3, ?4, ?5)";
pub(crate) const UPDATE_PROGRESS: &str = "UPDATE reflexr_rule_progress SET body = ?4 \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND rule = ?3";
pub(crate) const ALL_PROGRESS: &str = "SELECT rule, body FROM reflexr_rule_progress \
     WHERE tenant_id = ?1 AND workspace_id = ?2 ORDER BY position";

pub(crate) const STATE: &str = "SELECT body FROM reflexr_scope_states \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND rule = ?3 AND scope_key = ?4";
pub(crate) const UPSERT_STATE: &str = "INSERT INTO reflexr_scope_states \
     (tenant_id, workspace_id, rule, scope_key, body) VALUES (?1, ?2, ?3, ?4, ?5) \
     ON CONFLICT (tenant_id, workspace_id, rule, scope_key) DO UPDATE SET body = excluded.body";
pub(crate) const CLEAR_STATES: &str = "DELETE FROM reflexr_scope_states \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND rule = ?3";

pub(crate) const INSERT_DEAD_LETTER: &str = "INSERT INTO reflexr_dead_letters \
     (tenant_id, workspace_id, position, rule, body) VALUES (?1, ?2, ?3, ?4, ?5)";
pub(crate) const DEAD_LETTERS: &str = "SELECT body FROM reflexr_dead_letters \
     WHERE tenant_id = ?1 AND workspace_id = ?2 ORDER BY position";
pub(crate) const RULE_DEAD_LETTERS: &str = "SELECT body FROM reflexr_dead_letters \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND rule = ?3 ORDER BY position";
/// A page of dead letters: a range of the primary key (position).
pub(crate) const DEAD_LETTERS_PAGE: &str = "SELECT position, body FROM reflexr_dead_letters \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND position > ?3 ORDER BY position LIMIT ?4";
/// A page of one rule's dead letters: a range of `ix_reflexr_dead_letters_rule`.
pub(crate) const RULE_DEAD_LETTERS_PAGE: &str = "SELECT position, body FROM reflexr_dead_letters \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND rule = ?3 AND position > ?4 \
     ORDER BY position LIMIT ?5";

pub(crate) const SCHEDULE: &str = "SELECT at FROM reflexr_schedules \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND name = ?3";
pub(crate) const INSERT_SCHEDULE: &str = "INSERT INTO reflexr_schedules \
     (tenant_id, workspace_id, name, position, at) VALUES (?1, ?2, ?3, ?4, ?5)";
pub(crate) const UPDATE_SCHEDULE: &str = "UPDATE reflexr_schedules SET at = ?4 \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND name = ?3";
pub(crate) const SCHEDULES: &str = "SELECT name, at FROM reflexr_schedules \
     WHERE tenant_id = ?1 AND workspace_id = ?2 ORDER BY position";

const RULE_COLUMNS: &str = "rule, version, status, provenance";
pub(crate) const UPSERT_RULE: &str = "INSERT INTO reflexr_rules \
     (tenant_id, workspace_id, name, version, status, rule, provenance) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
     ON CONFLICT (tenant_id, workspace_id, name) DO UPDATE SET version = excluded.version, \
     status = excluded.status, rule = excluded.rule, provenance = excluded.provenance";

pub(crate) const RENEW_LEASE: &str = "UPDATE reflexr_leases SET holder = ?4, expires_at = ?5 \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND \"key\" = ?3 AND (holder = ?4 OR expires_at <= ?6)";
pub(crate) const TAKE_LEASE: &str =
    "INSERT INTO reflexr_leases (tenant_id, workspace_id, \"key\", holder, expires_at) \
     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (tenant_id, workspace_id, \"key\") DO NOTHING";
pub(crate) const RELEASE_LEASE: &str = "DELETE FROM reflexr_leases \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND \"key\" = ?3 AND holder = ?4";
pub(crate) const LEASES: &str = "SELECT \"key\", holder, expires_at FROM reflexr_leases \
     WHERE tenant_id = ?1 AND workspace_id = ?2 ORDER BY \"key\"";

/// One page of leases: a range of the primary key (`sqlite_autoindex_reflexr_leases_1`), in
/// its order (`BINARY`: byte order, as [`LEASES`]).
pub(crate) const LEASES_PAGE: &str = "SELECT \"key\", holder, expires_at FROM reflexr_leases \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND \"key\" > ?3 ORDER BY \"key\" LIMIT ?4";

pub(crate) const LEASE: &str = "SELECT \"key\", holder, expires_at FROM reflexr_leases \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND \"key\" = ?3";

pub(crate) const CURSOR: &str = "SELECT seq FROM reflexr_cursors \
     WHERE tenant_id = ?1 AND workspace_id = ?2 AND name = ?3";
/// The furthest save wins, in one statement.
pub(crate) const SAVE_CURSOR: &str = "INSERT INTO reflexr_cursors (tenant_id, workspace_id, name, seq) \
     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (tenant_id, workspace_id, name) DO UPDATE SET seq = excluded.seq \
     WHERE excluded.seq > reflexr_cursors.seq";
/// Every listed workspace (as [`WORKSPACES`]) with its head and how many leases and dead
/// letters it has: a probe of each table's primary key per workspace.
pub(crate) const SUMMARIES: &str = "SELECT w.tenant_id, w.workspace_id, w.head_seq, w.head_ts, \
     (SELECT count(*) FROM reflexr_leases l WHERE l.tenant_id = w.tenant_id AND l.workspace_id = w.workspace_id), \
     (SELECT count(*) FROM reflexr_dead_letters d WHERE d.tenant_id = w.tenant_id AND d.workspace_id = w.workspace_id) \
     FROM reflexr_workspaces w WHERE w.head_seq > 0 ORDER BY w.tenant_id, w.workspace_id";
/// Every cursor of every workspace, by workspace then name.
pub(crate) const ALL_CURSORS: &str = "SELECT tenant_id, workspace_id, name, seq FROM reflexr_cursors \
     ORDER BY tenant_id, workspace_id, name";

pub(crate) const CURSORS: &str = "SELECT name, seq FROM reflexr_cursors \
     WHERE tenant_id = ?1 AND workspace_id = ?2 ORDER BY name";

/// Runs a cached query with `params` and reads every row with `read`.
pub(crate) fn all<T>(
    conn: &Connection,
    sql: &str,
    params: &[&dyn ToSql],
    mut read: impl FnMut(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql).db()?;
    let mut rows = stmt.query(params).db()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().db()? {
        out.push(read(row)?);
    }
    Ok(out)
}

/// The one text column of at most one row.
pub(crate) fn one_text(conn: &Connection, sql: &str, params: &[&dyn ToSql]) -> Result<Option<String>> {
    conn.prepare_cached(sql)
        .db()?
        .query_row(params, |row| row.get(0))
        .optional()
        .db()
}

/// Whether a cached query finds a row.
pub(crate) fn exists(conn: &Connection, sql: &str, params: &[&dyn ToSql]) -> Result<bool> {
    conn.prepare_cached(sql).db()?.exists(params).db()
}

/// A stored date-time (SQLAlchemy's UTC text).
pub(crate) fn timestamp(text: &str, what: &str) -> Result<Timestamp> {
    Timestamp::parse_sqlite_text(text).map_err(|e| StoreError::Corrupt {
        what: what.to_owned(),
        reason: e.to_string(),
    })
}

/// An envelope column.
pub(crate) fn envelope(row: &Row<'_>) -> Result<Envelope> {
    Envelope::from_json(&row.get::<_, String>(0).db()?)
}

/// A run's body column.
pub(crate) fn run(row: &Row<'_>) -> Result<Run> {
    Run::from_json(&row.get::<_, String>(0).db()?)
}

/// A dead letter's body column.
pub(crate) fn dead_letter(row: &Row<'_>) -> Result<EvaluationError> {
    EvaluationError::from_json(&row.get::<_, String>(0).db()?)
}

/// A dead letter with its position: position, body.
pub(crate) fn numbered_dead_letter(row: &Row<'_>) -> Result<(i64, EvaluationError)> {
    Ok((
        row.get(0).db()?,
        EvaluationError::from_json(&row.get::<_, String>(1).db()?)?,
    ))
}

/// A lease row: key, holder, expires_at.
pub(crate) fn lease(row: &Row<'_>) -> Result<Lease> {
    let key: String = row.get(0).db()?;
    let expires_at = timestamp(&row.get::<_, String>(2).db()?, "lease expires_at")?;
    Ok(Lease {
        holder: row.get(1).db()?,
        key,
        expires_at,
    })
}

fn json_object(text: &str, what: &str) -> Result<JsonObject> {
    pyjson::loads_object(text).map_err(|e| StoreError::Corrupt {
        what: what.to_owned(),
        reason: e.to_string(),
    })
}

/// A stored rule's row (`rule, version, status, provenance`).
fn stored_rule(row: &Row<'_>) -> Result<StoredRule> {
    let rule = json_object(&row.get::<_, String>(0).db()?, "stored rule")?;
    let status: String = row.get(2).db()?;
    Ok(StoredRule {
        rule,
        version: row.get(1).db()?,
        status: StoredRuleStatus::parse(&status).map_err(|e| StoreError::Corrupt {
            what: "stored rule status".to_owned(),
            reason: e.to_string(),
        })?,
        provenance: json_object(&row.get::<_, String>(3).db()?, "stored rule provenance")?,
    })
}

/// The envelope of an event id in `ws`'s log, or `None`.
pub(crate) fn find_envelope(
    conn: &Connection,
    ws: &WorkspaceRef,
    event_id: &str,
) -> Result<Option<Envelope>> {
    one_text(conn, ENVELOPE, params![ws.tenant_id, ws.workspace_id, event_id])?
        .map(|text| Envelope::from_json(&text))
        .transpose()
}

/// A run of `ws`, or `None`.
pub(crate) fn find_run(conn: &Connection, ws: &WorkspaceRef, run_id: &str) -> Result<Option<Run>> {
    one_text(conn, RUN, params![ws.tenant_id, ws.workspace_id, run_id])?
        .map(|text| Run::from_json(&text))
        .transpose()
}

/// A rule's progress in `ws`, or `None`.
pub(crate) fn find_progress(
    conn: &Connection,
    ws: &WorkspaceRef,
    rule: &str,
) -> Result<Option<RuleProgress>> {
    one_text(conn, PROGRESS, params![ws.tenant_id, ws.workspace_id, rule])?
        .map(|text| RuleProgress::from_json(&text))
        .transpose()
}

/// A stored rule of `ws`, active or archived, or `None`.
pub(crate) fn find_stored_rule(
    conn: &Connection,
    ws: &WorkspaceRef,
    name: &str,
) -> Result<Option<StoredRule>> {
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM reflexr_rules WHERE tenant_id = ?1 AND workspace_id = ?2 AND name = ?3"
    );
    let mut stmt = conn.prepare_cached(&sql).db()?;
    let mut rows = stmt.query(params![ws.tenant_id, ws.workspace_id, name]).db()?;
    match rows.next().db()? {
        Some(row) => Ok(Some(stored_rule(row)?)),
        None => Ok(None),
    }
}

/// The active stored rules of `ws`, by name in code-point order (SQLite's `BINARY` order of
/// UTF-8 text).
pub(crate) fn active_rules(conn: &Connection, ws: &WorkspaceRef) -> Result<Vec<StoredRule>> {
    let sql = format!(
        "SELECT {RULE_COLUMNS} FROM reflexr_rules WHERE tenant_id = ?1 AND workspace_id = ?2 \
         AND status = 'active' ORDER BY name"
    );
    all(conn, &sql, params![ws.tenant_id, ws.workspace_id], stored_rule)
}

/// Every workspace with a log, by tenant then workspace.
pub(crate) fn workspaces(conn: &Connection) -> Result<Vec<WorkspaceRef>> {
    all(conn, WORKSPACES, &[], |row| {
        Ok(WorkspaceRef::new(
            row.get::<_, String>(0).db()?,
            row.get::<_, String>(1).db()?,
        ))
    })
}

/// Every workspace's active stored rules, by tenant, workspace and name (one walk of the
/// rules table's primary key).
pub(crate) fn all_active_rules(conn: &Connection) -> Result<Vec<(WorkspaceRef, StoredRule)>> {
    let sql = format!(
        "SELECT {RULE_COLUMNS}, tenant_id, workspace_id FROM reflexr_rules WHERE status = 'active' \
         ORDER BY tenant_id, workspace_id, name"
    );
    all(conn, &sql, &[], |row| {
        let ws = WorkspaceRef::new(row.get::<_, String>(4).db()?, row.get::<_, String>(5).db()?);
        Ok((ws, stored_rule(row)?))
    })
}

/// A count or limit as SQLite's integer (`LIMIT -1` is no limit).
pub(crate) fn limit_param(limit: Option<usize>) -> i64 {
    limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX))
}
