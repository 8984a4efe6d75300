//! A workspace transaction: one `BEGIN IMMEDIATE` transaction on the writer, which it owns
//! from `begin` until it commits or is dropped (rolled back).
//!
//! The workspace's row (head and position counter) is read once at the start and written
//! back at the commit, as reflexr's session flushes it. Each call that writes more than one
//! row runs under a savepoint, so a call that fails leaves nothing of itself and the
//! transaction usable.

use std::sync::Arc;

use execstore::workspace::{
    DriverTx, Envelope, EvaluationError, RuleProgress, Run, ScopeState, StoredRule, Timestamp, WorkspaceRef,
};
use execstore::{kit::pyjson, Result, StoreError};
use rusqlite::{params, Connection};

use super::sql;
use super::Inner;
use crate::db::error::Db;

/// The workspace row's counters as the transaction moves them.
#[derive(Clone, Copy, Debug)]
struct Head {
    seq: i64,
    ts: Option<Timestamp>,
    last_position: i64,
}

/// An open transaction on one workspace: the SQLite driver's [`DriverTx`].
pub struct SqliteTx {
    inner: Arc<Inner>,
    ws: WorkspaceRef,
    head: Head,
    /// Whether `head` differs from the row.
    dirty: bool,
    /// Whether it still owns the writer (not yet committed or rolled back).
    open: bool,
}

/// Rolls back a transaction left open on the writer (by a panic, or a rollback that failed),
/// so the next one starts clean; an error if it cannot.
pub(crate) fn reset(conn: &Connection) -> Result<()> {
    if conn.is_autocommit() {
        return Ok(());
    }
    rollback(conn);
    if conn.is_autocommit() {
        Ok(())
    } else {
        Err(StoreError::Backend {
            message: "the writer connection is stuck in a transaction that cannot be rolled back".into(),
            retryable: false,
            source: None,
        })
    }
}

/// `ROLLBACK`, and once more after finalizing every cached statement if a statement still
/// running kept it from succeeding.
fn rollback(conn: &Connection) {
    if conn.is_autocommit() {
        return;
    }
    if conn.execute_batch("ROLLBACK").is_err() && !conn.is_autocommit() {
        conn.flush_prepared_statement_cache();
        let _ = conn.execute_batch("ROLLBACK");
    }
}

impl SqliteTx {
    /// Begins a transaction on `ws`: waits for the writer, `BEGIN IMMEDIATE` (waiting for other
    /// processes' writers up to the busy timeout), creates the workspace's row if it is new
    /// and reads its counters.
    pub(crate) fn begin(inner: &Arc<Inner>, ws: &WorkspaceRef) -> Result<SqliteTx> {
        inner.writable()?;
        inner.take_turn()?;
        let started = (|| {
            let conn = inner.writer();
            reset(&conn)?;
            conn.prepare_cached(sql::BEGIN_IMMEDIATE).db()?.execute([]).db()?;
            let head = (|| {
                inner.began(&conn)?;
                conn.prepare_cached(sql::ENSURE_WORKSPACE)
                    .db()?
                    .execute(params![ws.tenant_id, ws.workspace_id])
                    .db()?;
                let (seq, ts, last_position): (i64, Option<String>, i64) = conn
                    .prepare_cached(sql::WORKSPACE)
                    .db()?
                    .query_row(params![ws.tenant_id, ws.workspace_id], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })
                    .db()?;
                let ts = ts.map(|t| sql::timestamp(&t, "workspace head_ts")).transpose()?;
                Ok(Head {
                    seq,
                    ts,
                    last_position,
                })
            })();
            if head.is_err() {
                rollback(&conn);
            }
            head
        })();
        match started {
            Ok(head) => Ok(SqliteTx {
                inner: inner.clone(),
                ws: ws.clone(),
                head,
                dirty: false,
                open: true,
            }),
            Err(e) => {
                inner.end_turn();
                Err(e)
            }
        }
    }

    /// Runs `f` under a savepoint: if it fails, everything it wrote and every counter it
    /// moved are undone, and the transaction goes on.
    fn atomic<T>(&mut self, f: impl FnOnce(&Connection, &WorkspaceRef, &mut Head) -> Result<T>) -> Result<T> {
        if !self.open {
            return Err(ended());
        }
        let inner = self.inner.clone();
        let conn = inner.writer();
        conn.prepare_cached(sql::SAVEPOINT).db()?.execute([]).db()?;
        let mut head = self.head;
        let outcome = f(&conn, &self.ws, &mut head);
        let ended = match outcome {
            Ok(out) => match conn.prepare_cached(sql::RELEASE).and_then(|mut s| s.execute([])) {
                Ok(_) => {
                    if head.seq != self.head.seq || head.last_position != self.head.last_position {
                        self.dirty = true;
                    }
                    self.head = head;
                    return Ok(out);
                }
                Err(release) => format!("releasing the call's savepoint failed: {release}"),
            },
            Err(e) => {
                let undone = conn
                    .prepare_cached(sql::ROLLBACK_TO)
                    .and_then(|mut s| s.execute([]))
                    .and_then(|_| conn.prepare_cached(sql::RELEASE))
                    .and_then(|mut s| s.execute([]));
                match undone {
                    Ok(_) => return Err(e),
                    Err(undo) => format!("{e}; and undoing it failed: {undo}"),
                }
            }
        };
        // The call may have left something behind: the whole transaction is rolled back, so
        // that nothing of it can be committed.
        rollback(&conn);
        drop(conn);
        self.finish();
        Err(StoreError::Backend {
            message: format!("{ended}; the transaction was rolled back"),
            retryable: true,
            source: None,
        })
    }

    /// Runs a read on the writer (which sees the transaction's own writes).
    fn with_conn<T>(&self, f: impl FnOnce(&Connection, &WorkspaceRef) -> Result<T>) -> Result<T> {
        if !self.open {
            return Err(ended());
        }
        f(&self.inner.writer(), &self.ws)
    }

    /// Ends the transaction's turn on the writer (after its commit or rollback).
    fn finish(&mut self) {
        if self.open {
            self.open = false;
            self.inner.end_turn();
        }
    }
}

fn ended() -> StoreError {
    StoreError::Backend {
        message: "the transaction has ended (a failure rolled it back)".into(),
        retryable: false,
        source: None,
    }
}

/// The next creation position in the workspace, as reflexr's `_next_position`.
fn next_position(head: &mut Head) -> i64 {
    head.last_position += 1;
    head.last_position
}

impl Drop for SqliteTx {
    fn drop(&mut self) {
        if self.open {
            rollback(&self.inner.writer());
            self.finish();
        }
    }
}

impl DriverTx for SqliteTx {
    fn head(&mut self) -> Result<(i64, Option<Timestamp>)> {
        Ok((self.head.seq, self.head.ts))
    }

    fn taken_ids(&mut self, ids: &[&str]) -> Result<Vec<String>> {
        self.with_conn(|conn, ws| {
            let mut taken = Vec::new();
            for id in ids {
                if sql::find_envelope(conn, ws, id)?.is_some() {
                    taken.push((*id).to_owned());
                }
            }
            Ok(taken)
        })
    }

    fn insert_envelopes(&mut self, envelopes: &[Envelope]) -> Result<()> {
        self.atomic(|conn, ws, head| {
            let mut insert = conn.prepare_cached(sql::INSERT_EVENT).db()?;
            for e in envelopes {
                insert
                    .execute(params![
                        ws.tenant_id,
                        ws.workspace_id,
                        e.seq,
                        e.id,
                        e.to_json(),
                        e.event_type(),
                        e.stored_rule()
                    ])
                    .db()?;
            }
            if let Some(last) = envelopes.last() {
                head.seq = last.seq;
                head.ts = Some(last.ts);
            }
            Ok(())
        })
    }

    fn envelope(&mut self, event_id: &str) -> Result<Option<Envelope>> {
        self.with_conn(|conn, ws| sql::find_envelope(conn, ws, event_id))
    }

    fn read(&mut self, after_seq: i64, limit: usize) -> Result<Vec<Envelope>> {
        self.with_conn(|conn, ws| {
            sql::all(
                conn,
                sql::READ_AFTER,
                params![
                    ws.tenant_id,
                    ws.workspace_id,
                    after_seq,
                    sql::limit_param(Some(limit))
                ],
                sql::envelope,
            )
        })
    }

    fn progress(&mut self, rule: &str) -> Result<Option<RuleProgress>> {
        self.with_conn(|conn, ws| sql::find_progress(conn, ws, rule))
    }

    fn save_progress(&mut self, rule: &str, progress: &RuleProgress) -> Result<()> {
        self.atomic(|conn, ws, head| {
            let key = params![ws.tenant_id, ws.workspace_id, rule];
            if sql::exists(conn, sql::PROGRESS_EXISTS, key)? {
                conn.prepare_cached(sql::UPDATE_PROGRESS)
                    .db()?
                    .execute(params![ws.tenant_id, ws.workspace_id, rule, progress.to_json()])
                    .db()?;
            } else {
                let position = next_position(head);
                conn.prepare_cached(sql::INSERT_PROGRESS)
                    .db()?
                    .execute(params![
                        ws.tenant_id,
                        ws.workspace_id,
                        rule,
                        position,
                        progress.to_json()
                    ])
                    .db()?;
            }
            Ok(())
        })
    }

    fn states(&mut self, rule: &str, keys: &[&str]) -> Result<Vec<(String, ScopeState)>> {
        self.with_conn(|conn, ws| {
            let mut out = Vec::new();
            for &key in keys {
                let body = sql::one_text(
                    conn,
                    sql::STATE,
                    params![ws.tenant_id, ws.workspace_id, rule, key],
                )?;
                if let Some(body) = body {
                    out.push((key.to_owned(), ScopeState::from_json(&body)?));
                }
            }
            Ok(out)
        })
    }

    fn save_states(&mut self, rule: &str, states: &[(&str, &ScopeState)]) -> Result<()> {
        self.atomic(|conn, ws, _| {
            let mut upsert = conn.prepare_cached(sql::UPSERT_STATE).db()?;
            for (key, state) in states {
                upsert
                    .execute(params![ws.tenant_id, ws.workspace_id, rule, key, state.to_json()])
                    .db()?;
            }
            Ok(())
        })
    }

    fn clear_states(&mut self, rule: &str) -> Result<()> {
        self.atomic(|conn, ws, _| {
            conn.prepare_cached(sql::CLEAR_STATES)
                .db()?
                .execute(params![ws.tenant_id, ws.workspace_id, rule])
                .db()?;
            Ok(())
        })
    }

    fn run(&mut self, run_id: &str) -> Result<Option<Run>> {
        self.with_conn(|conn, ws| sql::find_run(conn, ws, run_id))
    }

    fn save_runs(&mut self, runs: &[&Run]) -> Result<()> {
        self.atomic(|conn, ws, head| {
            for run in runs {
                let key = params![ws.tenant_id, ws.workspace_id, run.id()];
                let status = run.status().as_str();
                let next = run.next_attempt_at().to_sqlite_text();
                if sql::exists(conn, sql::RUN_EXISTS, key)? {
                    conn.prepare_cached(sql::UPDATE_RUN)
                        .db()?
                        .execute(params![
                            ws.tenant_id,
                            ws.workspace_id,
                            run.id(),
                            run.rule(),
                            run.scope_key(),
                            status,
                            run.fired_seq(),
                            next,
                            run.to_json()
                        ])
                        .db()?;
                } else {
                    let position = next_position(head);
                    conn.prepare_cached(sql::INSERT_RUN)
                        .db()?
                        .execute(params![
                            ws.tenant_id,
                            ws.workspace_id,
                            run.id(),
                            position,
                            run.rule(),
                            run.scope_key(),
                            status,
                            run.fired_seq(),
                            next,
                            run.to_json()
                        ])
                        .db()?;
                }
            }
            Ok(())
        })
    }

    fn scope_runs(&mut self, rule: &str, scope_key: &str) -> Result<Vec<Run>> {
        self.with_conn(|conn, ws| {
            sql::all(
                conn,
                sql::SCOPE_RUNS,
                params![ws.tenant_id, ws.workspace_id, rule, scope_key],
                sql::run,
            )
        })
    }

    fn dead_letter(&mut self, errors: &[EvaluationError]) -> Result<()> {
        self.atomic(|conn, ws, head| {
            let mut insert = conn.prepare_cached(sql::INSERT_DEAD_LETTER).db()?;
            for error in errors {
                let position = next_position(head);
                insert
                    .execute(params![
                        ws.tenant_id,
                        ws.workspace_id,
                        position,
                        error.rule(),
                        error.to_json()
                    ])
                    .db()?;
            }
            Ok(())
        })
    }

    fn schedule(&mut self, name: &str) -> Result<Option<Timestamp>> {
        self.with_conn(|conn, ws| {
            sql::one_text(conn, sql::SCHEDULE, params![ws.tenant_id, ws.workspace_id, name])?
                .map(|at| sql::timestamp(&at, "schedule at"))
                .transpose()
        })
    }

    fn save_schedule(&mut self, name: &str, at: Timestamp) -> Result<()> {
        let at = at.to_sqlite_text();
        self.atomic(|conn, ws, head| {
            let updated = conn
                .prepare_cached(sql::UPDATE_SCHEDULE)
                .db()?
                .execute(params![ws.tenant_id, ws.workspace_id, name, at])
                .db()?;
            if updated == 0 {
                let position = next_position(head);
                conn.prepare_cached(sql::INSERT_SCHEDULE)
                    .db()?
                    .execute(params![ws.tenant_id, ws.workspace_id, name, position, at])
                    .db()?;
            }
            Ok(())
        })
    }

    fn stored_rule(&mut self, name: &str) -> Result<Option<StoredRule>> {
        self.with_conn(|conn, ws| sql::find_stored_rule(conn, ws, name))
    }

    fn stored_rules(&mut self) -> Result<Vec<StoredRule>> {
        self.with_conn(sql::active_rules)
    }

    fn save_stored_rule(&mut self, stored: &StoredRule) -> Result<()> {
        let name = stored.name();
        self.atomic(|conn, ws, _| {
            conn.prepare_cached(sql::UPSERT_RULE)
                .db()?
                .execute(params![
                    ws.tenant_id,
                    ws.workspace_id,
                    name,
                    stored.version,
                    stored.status.as_str(),
                    pyjson::dumps(&stored.rule),
                    pyjson::dumps(&stored.provenance)
                ])
                .db()?;
            Ok(())
        })
    }

    fn commit(mut self) -> Result<()> {
        if !self.open {
            return Err(ended());
        }
        {
            let conn = self.inner.writer();
            if self.dirty {
                let ts = self.head.ts.map(|t| t.to_sqlite_text());
                conn.prepare_cached(sql::UPDATE_WORKSPACE)
                    .db()?
                    .execute(params![
                        self.ws.tenant_id,
                        self.ws.workspace_id,
                        self.head.seq,
                        ts,
                        self.head.last_position
                    ])
                    .db()?;
            }
            // On an error the drop rolls back.
            conn.prepare_cached(sql::COMMIT).db()?.execute([]).db()?;
        }
        self.finish();
        self.inner.notify_commit();
        Ok(())
    }
}
