//! [`WorkspaceDriver`] for [`PgWorkspaceDriver`]: transactions, and the reads and
//! single-statement writes outside them.

use std::time::{Duration, Instant};

use execstore::kit::filter::Filter;
#[cfg(doc)]
use execstore::workspace::WorkspaceStorage;
use execstore::workspace::{
    Envelope, EvaluationError, Lease, LogQuery, RuleProgress, Run, RunPolicy, RunQuery, RunRow, StoredRule,
    Timestamp, WorkspaceCapabilities, WorkspaceDriver, WorkspaceInfo, WorkspaceRef, WorkspaceSummary,
};
use execstore::Result;
use postgres::types::ToSql;
use postgres::Row;

use super::rows::{bind_time, col, limit, opt_time, stored_rule, time};
use super::tx::PgWorkspaceTx;
use super::{announces, sql, PgWorkspaceDriver, PgWorkspaceStorage};

impl PgWorkspaceDriver {
    /// Runs a statement of `workspace` (`$1`, `$2`) with `params` after them.
    fn query(&self, ws: &WorkspaceRef, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let mut conn = self.conn_for(ws)?;
        let mut all: Vec<&(dyn ToSql + Sync)> = vec![&ws.tenant_id, &ws.workspace_id];
        all.extend_from_slice(params);
        conn.query(sql, &all)
    }

    fn execute(&self, ws: &WorkspaceRef, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let mut conn = self.conn_for(ws)?;
        let mut all: Vec<&(dyn ToSql + Sync)> = vec![&ws.tenant_id, &ws.workspace_id];
        all.extend_from_slice(params);
        conn.execute(sql, &all)
    }

    fn envelopes(
        &self,
        ws: &WorkspaceRef,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Envelope>> {
        self.query(ws, sql, params)?
            .iter()
            .map(|row| Envelope::from_json(&col::<String>(row, 0)?))
            .collect()
    }
}

/// The statement and parameters of a [`WorkspaceStorage::read`].
struct Window {
    sql: String,
    after: i64,
    before: Option<i64>,
    /// One type is an equality (a range of `ix_reflexr_events_type`, in `seq` order);
    /// several are `= ANY`.
    one_type: Option<String>,
    types: Option<Vec<String>>,
    n: Option<i64>,
}

impl Window {
    /// `query` is [`LogQuery::checked`]'s.
    fn of(query: &LogQuery) -> Self {
        let mut types = query.types.clone();
        let one_type = match types.as_deref() {
            Some([one]) => Some(one.clone()),
            _ => None,
        };
        if one_type.is_some() {
            types = None;
        }
        let shape = if one_type.is_some() {
            sql::Types::One
        } else if types.is_some() {
            sql::Types::Several
        } else {
            sql::Types::All
        };
        Window {
            sql: sql::log_window(
                query.before_seq.is_some(),
                shape,
                query.limit.is_some(),
                query.last.is_some(),
            ),
            after: query.after_seq,
            before: query.before_seq,
            one_type,
            types,
            n: query.last.or(query.limit).map(limit),
        }
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&self.after];
        if let Some(before) = &self.before {
            params.push(before);
        }
        if let Some(one) = &self.one_type {
            params.push(one);
        }
        if let Some(types) = &self.types {
            params.push(types);
        }
        if let Some(n) = &self.n {
            params.push(n);
        }
        params
    }
}

impl PgWorkspaceStorage {
    /// The server's plan (`EXPLAIN`, with `options` such as `ANALYZE, BUFFERS`, or none) for the
    /// statement [`WorkspaceStorage::read`] runs for `query`, with the same parameters: to see
    /// which index a read uses.
    pub fn explain_read(&self, workspace: &WorkspaceRef, query: &LogQuery, options: &str) -> Result<String> {
        let explain = explain(options)?;
        workspace.check()?;
        let Some(query) = query.checked()? else {
            return Ok(String::new());
        };
        let window = Window::of(&query);
        let explain = format!("{explain}{}", window.sql);
        let mut all: Vec<&(dyn ToSql + Sync)> = vec![&workspace.tenant_id, &workspace.workspace_id];
        all.extend(window.params());
        plan_text(&self.0.driver().conn_for(workspace)?.query(&explain, &all)?)
    }
}

impl PgWorkspaceDriver {
    /// The statement of a page of leases: a range of the primary key where the column's
    /// collation orders keys as bytes, else a sort.
    fn leases_page_sql(&self) -> &'static str {
        if self.shared.keys_sort_as_bytes {
            sql::LEASES_PAGE
        } else {
            sql::LEASES_PAGE_BY_BYTES
        }
    }
}

impl PgWorkspaceStorage {
    /// The server's plan (`EXPLAIN`, with `options` as [`PgWorkspaceStorage::explain_read`]
    /// takes them) for the statement [`WorkspaceStorage::leases_page`] runs, with the same
    /// parameters: to see that it walks `pk_reflexr_leases` (where keys sort as bytes).
    pub fn explain_leases_page(
        &self,
        workspace: &WorkspaceRef,
        after_key: Option<&str>,
        n: usize,
        options: &str,
    ) -> Result<String> {
        let explain = explain(options)?;
        workspace.check()?;
        execstore::workspace::check_leases_page(after_key, n)?;
        let driver = self.0.driver();
        let explain = format!("{explain}{}", driver.leases_page_sql());
        plan_text(&driver.query(workspace, &explain, &[&after_key.unwrap_or(""), &limit(n)])?)
    }
}

impl PgWorkspaceStorage {
    /// The server's plan (`EXPLAIN`, with `options` as [`PgWorkspaceStorage::explain_read`]
    /// takes them) for the statement [`WorkspaceStorage::due_runs`] runs, with the same
    /// parameters: to see that it walks `ix_reflexr_runs_due` rather than sorting every due run.
    pub fn explain_due_runs(
        &self,
        now: Timestamp,
        n: usize,
        policy: &RunPolicy,
        options: &str,
    ) -> Result<String> {
        let explain = explain(options)?;
        let explain = format!("{explain}{}", sql::due_runs());
        let (disabled, ordered, plain, blocking) = due_policy(policy);
        let now = bind_time(now);
        plan_text(&self.0.driver().conn(None)?.query(
            &explain,
            &[&now, &limit(n), &disabled, &ordered, &plain, &blocking],
        )?)
    }
}

/// `EXPLAIN` with `options` (`ANALYZE, BUFFERS`; empty: none), which must be words and
/// commas, to put before a statement.
fn explain(options: &str) -> Result<String> {
    if !options
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || b == b',' || b == b' ')
    {
        return Err(execstore::StoreError::invalid(
            "options",
            "EXPLAIN options are words and commas",
        ));
    }
    Ok(if options.trim().is_empty() {
        "EXPLAIN ".to_owned()
    } else {
        format!("EXPLAIN ({options}) ")
    })
}

/// An `EXPLAIN`'s rows, a line each.
fn plan_text(rows: &[postgres::Row]) -> Result<String> {
    let lines: Vec<String> = rows.iter().map(|r| col(r, 0)).collect::<Result<_>>()?;
    Ok(lines.join("\n"))
}

/// A lease row: key, holder, expiry.
fn lease(row: &postgres::Row) -> Result<Lease> {
    Ok(Lease {
        key: col(row, 0)?,
        holder: col(row, 1)?,
        expires_at: time(&col::<String>(row, 2)?)?,
    })
}

/// `due_runs`' rule lists: the disabled, the ordered, the ordered that do not block, those
/// that do.
type DuePolicy<'a> = (Vec<&'a str>, Vec<&'a str>, Vec<&'a str>, Vec<&'a str>);

fn due_policy(policy: &RunPolicy) -> DuePolicy<'_> {
    let disabled: Vec<&str> = policy.disabled.iter().map(String::as_str).collect();
    let ordered: Vec<&str> = policy.ordered.iter().map(String::as_str).collect();
    let (blocking, plain): (Vec<&str>, Vec<&str>) = ordered.iter().partition(|r| policy.blocks(r));
    (disabled, ordered, plain, blocking)
}

impl WorkspaceDriver for PgWorkspaceDriver {
    type Tx = PgWorkspaceTx;

    fn capabilities(&self) -> WorkspaceCapabilities {
        WorkspaceCapabilities::new(true, true)
    }

    fn begin(&self, workspace: &WorkspaceRef) -> Result<PgWorkspaceTx> {
        let conn = self.pool.get().map_err(crate::db::pool_err)?;
        PgWorkspaceTx::begin(conn, self.shared.clone(), workspace)
    }

    fn head_seq(&self, workspace: &WorkspaceRef) -> Result<i64> {
        match self.query(workspace, sql::HEAD, &[])?.first() {
            Some(row) => col(row, 0),
            None => Ok(0),
        }
    }

    fn read(&self, workspace: &WorkspaceRef, query: &LogQuery) -> Result<Vec<Envelope>> {
        let window = Window::of(query);
        let mut found = self.envelopes(workspace, &window.sql, &window.params())?;
        if query.last.is_some() {
            found.reverse();
        }
        Ok(found)
    }

    fn rule_history(&self, workspace: &WorkspaceRef, name: &str) -> Result<Vec<Envelope>> {
        self.envelopes(workspace, sql::RULE_HISTORY, &[&name])
    }

    fn envelope(&self, workspace: &WorkspaceRef, event_id: &str) -> Result<Option<Envelope>> {
        Ok(self.envelopes(workspace, sql::ENVELOPE, &[&event_id])?.pop())
    }

    fn run(&self, workspace: &WorkspaceRef, run_id: &str) -> Result<Option<Run>> {
        match self.query(workspace, sql::RUN, &[&run_id])?.first() {
            Some(row) => Ok(Some(Run::from_json(&col::<String>(row, 0)?)?)),
            None => Ok(None),
        }
    }

    fn runs(&self, workspace: &WorkspaceRef, query: &RunQuery) -> Result<Vec<Run>> {
        let filters = query.filters();
        let n = query.limit.map(limit);
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        params.extend(filters.iter().map(|(_, value)| value as &(dyn ToSql + Sync)));
        if let Some(n) = &n {
            params.push(n);
        }
        let sql = sql::runs(filters.iter().map(|(column, _)| *column), n.is_some());
        self.query(workspace, &sql, &params)?
            .iter()
            .map(|row| Run::from_json(&col::<String>(row, 0)?))
            .collect()
    }

    fn dead_letters(&self, workspace: &WorkspaceRef, rule: Option<&str>) -> Result<Vec<EvaluationError>> {
        let rows = match rule {
            Some(rule) => self.query(workspace, sql::RULE_DEAD_LETTERS, &[&rule])?,
            None => self.query(workspace, sql::DEAD_LETTERS, &[])?,
        };
        rows.iter()
            .map(|row| EvaluationError::from_json(&col::<String>(row, 0)?))
            .collect()
    }

    fn dead_letters_page(
        &self,
        workspace: &WorkspaceRef,
        rule: Option<&str>,
        after: i64,
        n: usize,
    ) -> Result<Vec<(i64, EvaluationError)>> {
        let rows = match rule {
            Some(rule) => self.query(
                workspace,
                sql::RULE_DEAD_LETTERS_PAGE,
                &[&rule, &after, &limit(n)],
            )?,
            None => self.query(workspace, sql::DEAD_LETTERS_PAGE, &[&after, &limit(n)])?,
        };
        rows.iter()
            .map(|row| Ok((col(row, 0)?, EvaluationError::from_json(&col::<String>(row, 1)?)?)))
            .collect()
    }

    fn progress(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, RuleProgress)>> {
        self.query(workspace, sql::ALL_PROGRESS, &[])?
            .iter()
            .map(|row| Ok((col(row, 0)?, RuleProgress::from_json(&col::<String>(row, 1)?)?)))
            .collect()
    }

    fn schedules(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, Timestamp)>> {
        self.query(workspace, sql::SCHEDULES, &[])?
            .iter()
            .map(|row| Ok((col(row, 0)?, time(&col::<String>(row, 1)?)?)))
            .collect()
    }

    fn stored_rules(&self, workspace: &WorkspaceRef) -> Result<Vec<StoredRule>> {
        self.query(workspace, sql::STORED_RULES, &[])?
            .iter()
            .map(stored_rule)
            .collect()
    }

    fn workspaces(&self) -> Result<Vec<WorkspaceRef>> {
        self.conn(None)?
            .query(sql::WORKSPACES, &[])?
            .iter()
            .map(|row| Ok(WorkspaceRef::new(col::<String>(row, 0)?, col::<String>(row, 1)?)))
            .collect()
    }

    fn workspace_info(&self, workspace: &WorkspaceRef) -> Result<Option<WorkspaceInfo>> {
        match self.query(workspace, sql::INFO, &[])?.first() {
            Some(row) => Ok(Some(WorkspaceInfo {
                workspace: workspace.clone(),
                head_seq: col(row, 0)?,
                head_ts: opt_time(row, 1)?,
            })),
            None => Ok(None),
        }
    }

    fn workspace_summaries(&self) -> Result<Option<Vec<WorkspaceSummary>>> {
        let mut conn = self.conn(None)?;
        let mut summaries = conn
            .query(sql::SUMMARIES, &[])?
            .iter()
            .map(|row| {
                Ok(WorkspaceSummary {
                    info: WorkspaceInfo {
                        workspace: WorkspaceRef::new(col::<String>(row, 0)?, col::<String>(row, 1)?),
                        head_seq: col(row, 2)?,
                        head_ts: opt_time(row, 3)?,
                    },
                    cursors: Vec::new(),
                    leases: col::<i64>(row, 4)?.try_into().unwrap_or(0),
                    dead_letters: col::<i64>(row, 5)?.try_into().unwrap_or(0),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut at = std::collections::HashMap::new();
        for (i, s) in summaries.iter().enumerate() {
            at.insert(
                (
                    s.info.workspace.tenant_id.clone(),
                    s.info.workspace.workspace_id.clone(),
                ),
                i,
            );
        }
        for row in conn.query(sql::ALL_CURSORS, &[])? {
            let key = (col::<String>(&row, 0)?, col::<String>(&row, 1)?);
            // Cursors of workspaces not listed are left out, as the calls would leave them.
            if let Some(&i) = at.get(&key) {
                summaries[i].cursors.push((col(&row, 2)?, col(&row, 3)?));
            }
        }
        Ok(Some(summaries))
    }

    fn all_stored_rules(&self) -> Result<Option<Vec<(WorkspaceRef, StoredRule)>>> {
        let workspaces = self.workspaces()?;
        let rules = self
            .conn(None)?
            .query(sql::ALL_STORED_RULES, &[])?
            .iter()
            .map(|row| {
                let ws = WorkspaceRef::new(col::<String>(row, 4)?, col::<String>(row, 5)?);
                Ok((ws, stored_rule(row)?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(execstore::workspace::rules_of(&workspaces, rules)))
    }

    fn due_runs(&self, now: Timestamp, n: usize, policy: &RunPolicy) -> Result<Vec<(WorkspaceRef, Run)>> {
        let (disabled, ordered, plain, blocking) = due_policy(policy);
        let now = bind_time(now);
        let rows = self.conn(None)?.query(
            sql::due_runs(),
            &[&now, &limit(n), &disabled, &ordered, &plain, &blocking],
        )?;
        rows.iter()
            .map(|row| {
                let ws = WorkspaceRef::new(col::<String>(row, 0)?, col::<String>(row, 1)?);
                Ok((ws, Run::from_json(&col::<String>(row, 2)?)?))
            })
            .collect()
    }

    fn acquire_lease(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<bool> {
        let expires_at = bind_time(expires_at);
        let now = bind_time(now);
        Ok(self.execute(workspace, sql::ACQUIRE_LEASE, &[&key, &holder, &expires_at, &now])? == 1)
    }

    fn release_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str) -> Result<()> {
        self.execute(workspace, sql::RELEASE_LEASE, &[&key, &holder])
            .map(|_| ())
    }

    fn leases_of(&self, workspace: &WorkspaceRef, keys: &[String]) -> Result<Vec<Lease>> {
        // A key PostgreSQL's text cannot hold is never stored.
        let keys: Vec<&str> = keys
            .iter()
            .map(String::as_str)
            .filter(|k| !k.contains('\0'))
            .collect();
        self.query(workspace, sql::LEASES_OF, &[&keys])?
            .iter()
            .map(lease)
            .collect()
    }

    fn leases_page(&self, workspace: &WorkspaceRef, after_key: Option<&str>, n: usize) -> Result<Vec<Lease>> {
        // Every key is above the empty text (keys are never empty).
        self.query(
            workspace,
            self.leases_page_sql(),
            &[&after_key.unwrap_or(""), &limit(n)],
        )?
        .iter()
        .map(lease)
        .collect()
    }

    fn leases(&self, workspace: &WorkspaceRef) -> Result<Vec<Lease>> {
        self.query(workspace, sql::LEASES, &[])?
            .iter()
            .map(lease)
            .collect()
    }

    fn cursor(&self, workspace: &WorkspaceRef, name: &str) -> Result<i64> {
        match self.query(workspace, sql::CURSOR, &[&name])?.first() {
            Some(row) => col(row, 0),
            None => Ok(0),
        }
    }

    fn save_cursor(&self, workspace: &WorkspaceRef, name: &str, seq: i64) -> Result<()> {
        self.execute(workspace, sql::SAVE_CURSOR, &[&name, &seq])
            .map(|_| ())
    }

    fn cursors(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, i64)>> {
        self.query(workspace, sql::CURSORS, &[])?
            .iter()
            .map(|row| Ok((col(row, 0)?, col(row, 1)?)))
            .collect()
    }

    /// Listens first, then looks at the head, then waits for a `NOTIFY` of this workspace's
    /// head past `after_seq`: a commit after the look is announced to the listener, one
    /// before it was seen by the look.
    fn wait_for_append(&self, workspace: &WorkspaceRef, after_seq: i64, timeout: Duration) -> Result<bool> {
        let deadline = Instant::now() + timeout;
        let (_, mark) = self.listener.start()?;
        if self.head_seq(workspace)? > after_seq {
            return Ok(true);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        self.listener
            .wait(mark, left, |payload| announces(payload, workspace, after_seq))
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
        self.search_candidates(workspace, filter, (after, upto), newest_first, limit)
    }

    fn run_rows(
        &self,
        workspace: &WorkspaceRef,
        filter: &Filter,
        before: Option<i64>,
        scan: usize,
        with_event: bool,
    ) -> Result<Vec<RunRow>> {
        self.search_run_rows(workspace, filter, before, scan, with_event)
    }
}
