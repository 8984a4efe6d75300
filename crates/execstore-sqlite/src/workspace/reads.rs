//! [`WorkspaceDriver`] for [`SqliteWorkspaceDriver`]: reads outside transactions on the
//! `query_only` reader (they never wait for a transaction), and lease and cursor writes, each
//! its own short transaction on the writer.

use std::time::Duration;

use execstore::kit::filter::Filter;
use execstore::workspace::{
    Envelope, EvaluationError, Lease, LogQuery, RuleProgress, Run, RunPolicy, RunQuery, RunRow, StoredRule,
    Timestamp, WorkspaceCapabilities, WorkspaceDriver, WorkspaceInfo, WorkspaceRef, WorkspaceSummary,
};
use execstore::{Result, StoreError};
use rusqlite::{params, OptionalExtension, ToSql};

use super::tx::SqliteTx;
use super::{due, search, sql, SqliteWorkspaceDriver};
use crate::db::error::Db;

/// The statement of a window of the log: its filters in the query, newest first for `last`
/// (over the primary key, or `ix_reflexr_events_type` when it names `types` types, as
/// reflexr's does).
pub(crate) fn log_query(before: bool, types: usize, last: bool) -> String {
    // With types, the type index: one range per type (SQLite would otherwise walk the whole
    // workspace's range of the primary key to spare itself the sort of several ranges).
    let mut sql = String::from(if types > 0 {
        "SELECT envelope FROM reflexr_events INDEXED BY ix_reflexr_events_type \
         WHERE tenant_id = ? AND workspace_id = ? AND seq > ?"
    } else {
        "SELECT envelope FROM reflexr_events WHERE tenant_id = ? AND workspace_id = ? AND seq > ?"
    });
    if before {
        sql.push_str(" AND seq < ?");
    }
    if types > 0 {
        sql.push_str(" AND event_type IN (?");
        for _ in 1..types {
            sql.push_str(", ?");
        }
        sql.push(')');
    }
    sql.push_str(if last {
        " ORDER BY seq DESC LIMIT ?"
    } else {
        " ORDER BY seq LIMIT ?"
    });
    sql
}

/// The statement listing runs newest first, with the filters on `columns`.
fn runs_query(columns: impl Iterator<Item = &'static str>) -> String {
    let mut sql = String::from("SELECT body FROM reflexr_runs WHERE tenant_id = ? AND workspace_id = ?");
    for column in columns {
        sql.push_str(&format!(" AND {column} = ?"));
    }
    sql.push_str(" ORDER BY position DESC LIMIT ?");
    sql
}

impl WorkspaceDriver for SqliteWorkspaceDriver {
    type Tx = SqliteTx;

    fn capabilities(&self) -> WorkspaceCapabilities {
        WorkspaceCapabilities::new(true, false)
    }

    fn begin(&self, workspace: &WorkspaceRef) -> Result<SqliteTx> {
        SqliteTx::begin(&self.inner, workspace)
    }

    fn head_seq(&self, workspace: &WorkspaceRef) -> Result<i64> {
        Ok(self.workspace_info(workspace)?.map_or(0, |info| info.head_seq))
    }

    fn read(&self, workspace: &WorkspaceRef, query: &LogQuery) -> Result<Vec<Envelope>> {
        let types: Vec<&str> = query.types.iter().flatten().map(String::as_str).collect();
        let last = query.last.is_some();
        let limit = sql::limit_param(query.last.or(query.limit));
        let mut args: Vec<&dyn ToSql> = vec![&workspace.tenant_id, &workspace.workspace_id, &query.after_seq];
        if let Some(before) = &query.before_seq {
            args.push(before);
        }
        for t in &types {
            args.push(t);
        }
        args.push(&limit);
        let text = log_query(query.before_seq.is_some(), types.len(), last);
        let mut found = sql::all(&*self.inner.reader()?, &text, &args, sql::envelope)?;
        if last {
            found.reverse();
        }
        Ok(found)
    }

    fn rule_history(&self, workspace: &WorkspaceRef, name: &str) -> Result<Vec<Envelope>> {
        sql::all(
            &*self.inner.reader()?,
            sql::RULE_HISTORY,
            params![workspace.tenant_id, workspace.workspace_id, name],
            sql::envelope,
        )
    }

    fn envelope(&self, workspace: &WorkspaceRef, event_id: &str) -> Result<Option<Envelope>> {
        sql::find_envelope(&*self.inner.reader()?, workspace, event_id)
    }

    fn run(&self, workspace: &WorkspaceRef, run_id: &str) -> Result<Option<Run>> {
        sql::find_run(&*self.inner.reader()?, workspace, run_id)
    }

    fn runs(&self, workspace: &WorkspaceRef, query: &RunQuery) -> Result<Vec<Run>> {
        let filters = query.filters();
        let limit = sql::limit_param(query.limit);
        let mut args: Vec<&dyn ToSql> = vec![&workspace.tenant_id, &workspace.workspace_id];
        args.extend(filters.iter().map(|(_, value)| value as &dyn ToSql));
        args.push(&limit);
        let text = runs_query(filters.iter().map(|(column, _)| *column));
        sql::all(&*self.inner.reader()?, &text, &args, sql::run)
    }

    fn dead_letters_page(
        &self,
        workspace: &WorkspaceRef,
        rule: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, EvaluationError)>> {
        let conn = self.inner.reader()?;
        let limit = i64::try_from(limit).map_err(|_| StoreError::invalid("limit", "out of range"))?;
        let (t, w) = (&workspace.tenant_id, &workspace.workspace_id);
        match rule {
            Some(rule) => sql::all(
                &conn,
                sql::RULE_DEAD_LETTERS_PAGE,
                params![t, w, rule, after, limit],
                sql::numbered_dead_letter,
            ),
            None => sql::all(
                &conn,
                sql::DEAD_LETTERS_PAGE,
                params![t, w, after, limit],
                sql::numbered_dead_letter,
            ),
        }
    }

    fn dead_letters(&self, workspace: &WorkspaceRef, rule: Option<&str>) -> Result<Vec<EvaluationError>> {
        let conn = self.inner.reader()?;
        match rule {
            Some(rule) => sql::all(
                &conn,
                sql::RULE_DEAD_LETTERS,
                params![workspace.tenant_id, workspace.workspace_id, rule],
                sql::dead_letter,
            ),
            None => sql::all(
                &conn,
                sql::DEAD_LETTERS,
                params![workspace.tenant_id, workspace.workspace_id],
                sql::dead_letter,
            ),
        }
    }

    fn progress(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, RuleProgress)>> {
        sql::all(
            &*self.inner.reader()?,
            sql::ALL_PROGRESS,
            params![workspace.tenant_id, workspace.workspace_id],
            |row| {
                let rule: String = row.get(0).db()?;
                let body: String = row.get(1).db()?;
                Ok((rule, RuleProgress::from_json(&body)?))
            },
        )
    }

    fn schedules(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, Timestamp)>> {
        sql::all(
            &*self.inner.reader()?,
            sql::SCHEDULES,
            params![workspace.tenant_id, workspace.workspace_id],
            |row| {
                let name: String = row.get(0).db()?;
                let at: String = row.get(1).db()?;
                Ok((name, sql::timestamp(&at, "schedule at")?))
            },
        )
    }

    fn stored_rules(&self, workspace: &WorkspaceRef) -> Result<Vec<StoredRule>> {
        sql::active_rules(&*self.inner.reader()?, workspace)
    }

    fn workspaces(&self) -> Result<Vec<WorkspaceRef>> {
        sql::workspaces(&*self.inner.reader()?)
    }

    fn workspace_info(&self, workspace: &WorkspaceRef) -> Result<Option<WorkspaceInfo>> {
        let conn = self.inner.reader()?;
        let row: Option<(i64, Option<String>)> = conn
            .prepare_cached(sql::WORKSPACE)
            .db()?
            .query_row(params![workspace.tenant_id, workspace.workspace_id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .db()?;
        row.map(|(head_seq, head_ts)| {
            Ok(WorkspaceInfo {
                workspace: workspace.clone(),
                head_seq,
                head_ts: head_ts
                    .map(|t| sql::timestamp(&t, "workspace head_ts"))
                    .transpose()?,
            })
        })
        .transpose()
    }

    fn workspace_summaries(&self) -> Result<Option<Vec<WorkspaceSummary>>> {
        let conn = self.inner.reader()?;
        let mut summaries = sql::all(&conn, sql::SUMMARIES, &[], |row| {
            let head_ts: Option<String> = row.get(3).db()?;
            Ok(WorkspaceSummary {
                info: WorkspaceInfo {
                    workspace: WorkspaceRef::new(
                        row.get::<_, String>(0).db()?,
                        row.get::<_, String>(1).db()?,
                    ),
                    head_seq: row.get(2).db()?,
                    head_ts: head_ts
                        .map(|t| sql::timestamp(&t, "workspace head_ts"))
                        .transpose()?,
                },
                cursors: Vec::new(),
                leases: row.get::<_, i64>(4).db()?.try_into().unwrap_or(0),
                dead_letters: row.get::<_, i64>(5).db()?.try_into().unwrap_or(0),
            })
        })?;
        let cursors = sql::all(&conn, sql::ALL_CURSORS, &[], |row| {
            Ok((
                (row.get::<_, String>(0).db()?, row.get::<_, String>(1).db()?),
                (row.get::<_, String>(2).db()?, row.get::<_, i64>(3).db()?),
            ))
        })?;
        attach_cursors(&mut summaries, cursors);
        Ok(Some(summaries))
    }

    fn all_stored_rules(&self) -> Result<Option<Vec<(WorkspaceRef, StoredRule)>>> {
        // One connection for both reads (a store of one connection has no other to take).
        let conn = self.inner.reader()?;
        let workspaces = sql::workspaces(&conn)?;
        Ok(Some(execstore::workspace::rules_of(
            &workspaces,
            sql::all_active_rules(&conn)?,
        )))
    }

    fn due_runs(&self, now: Timestamp, limit: usize, policy: &RunPolicy) -> Result<Vec<(WorkspaceRef, Run)>> {
        due::due_runs(&*self.inner.reader()?, now, limit, policy)
    }

    fn acquire_lease(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<bool> {
        let expires_at = expires_at.to_sqlite_text();
        let now = now.to_sqlite_text();
        self.inner.write(|conn| {
            let (t, w) = (&workspace.tenant_id, &workspace.workspace_id);
            let renewed = conn
                .prepare_cached(sql::RENEW_LEASE)
                .db()?
                .execute(params![t, w, key, holder, expires_at, now])
                .db()?;
            if renewed > 0 {
                return Ok(true);
            }
            // Another holder has it unexpired, or nobody: the insert tells which.
            let taken = conn
                .prepare_cached(sql::TAKE_LEASE)
                .db()?
                .execute(params![t, w, key, holder, expires_at])
                .db()?;
            Ok(taken > 0)
        })
    }

    fn release_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str) -> Result<()> {
        self.inner.write(|conn| {
            conn.prepare_cached(sql::RELEASE_LEASE)
                .db()?
                .execute(params![workspace.tenant_id, workspace.workspace_id, key, holder])
                .db()?;
            Ok(())
        })
    }

    fn leases(&self, workspace: &WorkspaceRef) -> Result<Vec<Lease>> {
        sql::all(
            &*self.inner.reader()?,
            sql::LEASES,
            params![workspace.tenant_id, workspace.workspace_id],
            sql::lease,
        )
    }

    fn leases_of(&self, workspace: &WorkspaceRef, keys: &[String]) -> Result<Vec<Lease>> {
        let conn = self.inner.reader()?;
        let mut keys: Vec<&String> = keys.iter().collect();
        keys.sort_unstable();
        keys.dedup();
        let mut out = Vec::new();
        for key in keys {
            out.extend(sql::all(
                &conn,
                sql::LEASE,
                params![workspace.tenant_id, workspace.workspace_id, key],
                sql::lease,
            )?);
        }
        Ok(out)
    }

    fn leases_page(
        &self,
        workspace: &WorkspaceRef,
        after_key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Lease>> {
        // Every key is above the empty text (keys are never empty).
        let limit = i64::try_from(limit).map_err(|_| StoreError::invalid("limit", "out of range"))?;
        sql::all(
            &*self.inner.reader()?,
            sql::LEASES_PAGE,
            params![
                workspace.tenant_id,
                workspace.workspace_id,
                after_key.unwrap_or(""),
                limit
            ],
            sql::lease,
        )
    }

    fn cursor(&self, workspace: &WorkspaceRef, name: &str) -> Result<i64> {
        let seq: Option<i64> = self
            .inner
            .reader()?
            .prepare_cached(sql::CURSOR)
            .db()?
            .query_row(
                params![workspace.tenant_id, workspace.workspace_id, name],
                |row| row.get(0),
            )
            .optional()
            .db()?;
        Ok(seq.unwrap_or(0))
    }

    fn save_cursor(&self, workspace: &WorkspaceRef, name: &str, seq: i64) -> Result<()> {
        self.inner.write(|conn| {
            conn.prepare_cached(sql::SAVE_CURSOR)
                .db()?
                .execute(params![workspace.tenant_id, workspace.workspace_id, name, seq])
                .db()?;
            Ok(())
        })
    }

    fn cursors(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, i64)>> {
        sql::all(
            &*self.inner.reader()?,
            sql::CURSORS,
            params![workspace.tenant_id, workspace.workspace_id],
            |row| Ok((row.get(0).db()?, row.get(1).db()?)),
        )
    }

    fn wait_for_append(&self, workspace: &WorkspaceRef, after_seq: i64, timeout: Duration) -> Result<bool> {
        self.inner
            .wait_for_commit(timeout, || Ok(self.head_seq(workspace)? > after_seq))
    }

    fn log_candidates(
        &self,
        workspace: &WorkspaceRef,
        filter: &Filter,
        after: i64,
        upto: i64,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<Envelope>> {
        let conn = self.inner.reader()?;
        search::log_candidates(&conn, workspace, filter, (after, upto), newest_first, limit)
    }

    fn run_rows(
        &self,
        workspace: &WorkspaceRef,
        filter: &Filter,
        before: Option<i64>,
        scan: usize,
        with_event: bool,
    ) -> Result<Vec<RunRow>> {
        let conn = self.inner.reader()?;
        search::run_rows(&conn, workspace, filter, before, scan, with_event)
    }
}

/// Puts each `((tenant, workspace), cursor)` on its workspace's summary (cursors of
/// workspaces not listed are left out, as the per-workspace calls would leave them).
pub(crate) fn attach_cursors(
    summaries: &mut [WorkspaceSummary],
    cursors: Vec<((String, String), (String, i64))>,
) {
    let at: std::collections::HashMap<(&str, &str), usize> = summaries
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                (
                    s.info.workspace.tenant_id.as_str(),
                    s.info.workspace.workspace_id.as_str(),
                ),
                i,
            )
        })
        .collect();
    let places: Vec<Option<usize>> = cursors
        .iter()
        .map(|((t, w), _)| at.get(&(t.as_str(), w.as_str())).copied())
        .collect();
    for (place, (_, cursor)) in places.into_iter().zip(cursors) {
        if let Some(i) = place {
            summaries[i].cursors.push(cursor);
        }
    }
}
