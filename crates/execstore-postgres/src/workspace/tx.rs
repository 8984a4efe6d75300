//! [`PgWorkspaceTx`]: one transaction on one workspace, owning its pooled connection.
//!
//! The workspace's row is locked from `begin` to the end. Its counters (the log's head and
//! the position given to new rows) are kept here while the transaction runs and written back
//! once, at commit. Each call that writes runs under a savepoint: if it fails, the call is
//! rolled back to it (and the counters restored), so the transaction stays usable with
//! nothing of the call in it.

use std::collections::HashSet;
use std::sync::Arc;

use execstore::kit::pyjson;
use execstore::workspace::{
    DriverTx, Envelope, EvaluationError, RuleProgress, Run, ScopeState, StoredRule, Timestamp, WorkspaceRef,
};
use execstore::Result;
use postgres::types::ToSql;
use postgres::Row;

use super::rows::{bind_time, col, corrupt, limit, opt_time, stored_rule, time};
use super::{finished, payload, sql, Shared};
use crate::db::{literal, Pooled};

/// The savepoint each writing call runs under.
const SAVEPOINT: &str = "SAVEPOINT execstore_call";
/// Ends the previous call's savepoint and starts the next one, in one round trip.
const NEXT_SAVEPOINT: &str = "RELEASE SAVEPOINT execstore_call; SAVEPOINT execstore_call";
const ROLLBACK_CALL: &str = "ROLLBACK TO SAVEPOINT execstore_call";

/// The workspace row's counters.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Counters {
    head_seq: i64,
    head_ts: Option<Timestamp>,
    last_position: i64,
}

/// An open transaction: `BEGIN` ran on `conn`, which holds the workspace row's lock. The
/// PostgreSQL driver's [`DriverTx`].
pub struct PgWorkspaceTx {
    /// `None` once the transaction ended (committed or failed for good).
    conn: Option<Pooled>,
    shared: Arc<Shared>,
    ws: WorkspaceRef,
    counters: Counters,
    /// The counters as locked: written back at commit if they moved.
    locked: Counters,
    /// Whether anything was appended (the commit then announces the new head).
    appended: bool,
    /// Whether the writing calls' savepoint exists.
    savepoint: bool,
    /// Whether a writing call is under way (its failures are rolled back to its savepoint).
    in_call: bool,
    /// Whether a statement failed outside a savepoint: the server aborted the transaction,
    /// which can then only be rolled back.
    failed: bool,
}

impl PgWorkspaceTx {
    /// Begins a transaction on `ws` on `conn`: names the tenant to row-level security (for
    /// this transaction only), creates the workspace's row if it is new and locks it.
    pub(super) fn begin(mut conn: Pooled, shared: Arc<Shared>, ws: &WorkspaceRef) -> Result<Self> {
        let began = conn.batch(&format!(
            "BEGIN; SELECT set_config('lattice.tenant_id', {}, true)",
            literal(&ws.tenant_id)
        ));
        if let Err(e) = began {
            // It may be left inside a transaction: never hand it to anyone else.
            conn.broken = true;
            return Err(e);
        }
        let zero = Counters {
            head_seq: 0,
            head_ts: None,
            last_position: 0,
        };
        // From here a failure rolls back when the transaction is dropped.
        let mut tx = PgWorkspaceTx {
            conn: Some(conn),
            shared,
            ws: ws.clone(),
            counters: zero,
            locked: zero,
            appended: false,
            savepoint: false,
            in_call: false,
            failed: false,
        };
        let row = match tx.query_opt(sql::LOCK, &[])? {
            Some(row) => row,
            None => {
                tx.execute(sql::INSERT_WORKSPACE, &[])?;
                tx.query_opt(sql::LOCK, &[])?
                    .ok_or_else(|| corrupt("workspace row", "not found after it was created"))?
            }
        };
        tx.counters = Counters {
            head_seq: col(&row, 0)?,
            head_ts: opt_time(&row, 1)?,
            last_position: col(&row, 2)?,
        };
        tx.locked = tx.counters;
        Ok(tx)
    }

    fn conn(&mut self) -> Result<&mut Pooled> {
        match &mut self.conn {
            Some(conn) if !self.failed => Ok(conn),
            _ => Err(finished()),
        }
    }

    /// `params` after the workspace's tenant and id (`$1`, `$2`).
    fn with_key<'a>(ws: &'a WorkspaceRef, params: &[&'a (dyn ToSql + Sync)]) -> Vec<&'a (dyn ToSql + Sync)> {
        let mut all: Vec<&(dyn ToSql + Sync)> = vec![&ws.tenant_id, &ws.workspace_id];
        all.extend_from_slice(params);
        all
    }

    /// Runs a statement of this workspace; a failure outside a savepoint marks the
    /// transaction failed (the server aborted it).
    fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let ws = self.ws.clone();
        let all = Self::with_key(&ws, params);
        let result = self.conn()?.query(sql, &all);
        if result.is_err() && !self.in_call {
            self.failed = true;
        }
        result
    }

    fn query_opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let mut rows = self.query(sql, params)?;
        if rows.len() > 1 {
            return Err(corrupt("row", "more than one row for a key"));
        }
        Ok(rows.pop())
    }

    fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let ws = self.ws.clone();
        let all = Self::with_key(&ws, params);
        let result = self.conn()?.execute(sql, &all);
        if result.is_err() && !self.in_call {
            self.failed = true;
        }
        result
    }

    /// Runs a writing call `f` under a savepoint: on failure, everything it did is rolled
    /// back (in the server and in the counters) and the transaction stays usable.
    fn write<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let next = if self.savepoint { NEXT_SAVEPOINT } else { SAVEPOINT };
        if let Err(e) = self.conn()?.batch(next) {
            self.failed = true;
            return Err(e);
        }
        self.savepoint = true;
        let (counters, appended) = (self.counters, self.appended);
        self.in_call = true;
        let result = f(self);
        self.in_call = false;
        if result.is_err() {
            self.counters = counters;
            self.appended = appended;
            let rolled_back = self.conn().and_then(|c| c.batch(ROLLBACK_CALL));
            if rolled_back.is_err() {
                self.failed = true;
            }
        }
        result
    }

    fn next_position(&mut self) -> i64 {
        self.counters.last_position += 1;
        self.counters.last_position
    }

    fn envelope_row(row: &Row) -> Result<Envelope> {
        Envelope::from_json(&col::<String>(row, 0)?)
    }
}

impl DriverTx for PgWorkspaceTx {
    fn head(&mut self) -> Result<(i64, Option<Timestamp>)> {
        self.conn()?;
        Ok((self.counters.head_seq, self.counters.head_ts))
    }

    fn taken_ids(&mut self, ids: &[&str]) -> Result<Vec<String>> {
        if ids.is_empty() {
            return self.conn().map(|_| Vec::new());
        }
        self.query(sql::EXISTING_IDS, &[&ids])?
            .iter()
            .map(|row| col(row, 0))
            .collect()
    }

    fn insert_envelopes(&mut self, envelopes: &[Envelope]) -> Result<()> {
        let seqs: Vec<i64> = envelopes.iter().map(|e| e.seq).collect();
        let ids: Vec<&str> = envelopes.iter().map(|e| e.id.as_str()).collect();
        let texts: Vec<String> = envelopes.iter().map(Envelope::to_json).collect();
        let types: Vec<&str> = envelopes.iter().map(Envelope::event_type).collect();
        let rules: Vec<Option<&str>> = envelopes.iter().map(Envelope::stored_rule).collect();
        self.write(|tx| {
            tx.execute(sql::INSERT_EVENTS, &[&seqs, &ids, &texts, &types, &rules])?;
            if let Some(last) = envelopes.last() {
                tx.counters.head_seq = last.seq;
                tx.counters.head_ts = Some(last.ts);
            }
            tx.appended = true;
            Ok(())
        })
    }

    fn envelope(&mut self, event_id: &str) -> Result<Option<Envelope>> {
        self.query_opt(sql::ENVELOPE, &[&event_id])?
            .map(|row| Self::envelope_row(&row))
            .transpose()
    }

    fn read(&mut self, after_seq: i64, n: usize) -> Result<Vec<Envelope>> {
        self.query(sql::READ_AFTER, &[&after_seq, &limit(n)])?
            .iter()
            .map(Self::envelope_row)
            .collect()
    }

    fn progress(&mut self, rule: &str) -> Result<Option<RuleProgress>> {
        self.query_opt(sql::PROGRESS, &[&rule])?
            .map(|row| RuleProgress::from_json(&col::<String>(&row, 0)?))
            .transpose()
    }

    fn save_progress(&mut self, rule: &str, progress: &RuleProgress) -> Result<()> {
        let body = progress.to_json();
        self.write(|tx| {
            if tx.execute(sql::UPDATE_PROGRESS, &[&rule, &body])? == 0 {
                let position = tx.next_position();
                tx.execute(sql::INSERT_PROGRESS, &[&rule, &position, &body])?;
            }
            Ok(())
        })
    }

    fn states(&mut self, rule: &str, keys: &[&str]) -> Result<Vec<(String, ScopeState)>> {
        // A key PostgreSQL's text cannot hold is never stored.
        let asked: Vec<&str> = keys.iter().copied().filter(|k| !k.contains('\0')).collect();
        self.query(sql::STATES, &[&rule, &asked])?
            .iter()
            .map(|row| Ok((col(row, 0)?, ScopeState::from_json(&col::<String>(row, 1)?)?)))
            .collect()
    }

    fn save_states(&mut self, rule: &str, states: &[(&str, &ScopeState)]) -> Result<()> {
        if states.is_empty() {
            return self.conn().map(|_| ());
        }
        let keys: Vec<&str> = states.iter().map(|(k, _)| *k).collect();
        let bodies: Vec<String> = states.iter().map(|(_, s)| s.to_json()).collect();
        self.write(|tx| {
            tx.execute(sql::UPSERT_STATES, &[&rule, &keys, &bodies])
                .map(|_| ())
        })
    }

    fn clear_states(&mut self, rule: &str) -> Result<()> {
        self.write(|tx| tx.execute(sql::CLEAR_STATES, &[&rule]).map(|_| ()))
    }

    fn run(&mut self, run_id: &str) -> Result<Option<Run>> {
        self.query_opt(sql::RUN, &[&run_id])?
            .map(|row| Run::from_json(&col::<String>(&row, 0)?))
            .transpose()
    }

    fn save_runs(&mut self, latest: &[&Run]) -> Result<()> {
        if latest.is_empty() {
            return self.conn().map(|_| ());
        }
        let ids: Vec<&str> = latest.iter().map(|r| r.id()).collect();
        let stored: HashSet<String> = self
            .query(sql::RUN_IDS, &[&ids])?
            .iter()
            .map(|row| col(row, 0))
            .collect::<Result<_>>()?;
        self.write(|tx| {
            let mut positions = Vec::with_capacity(ids.len());
            for id in &ids {
                positions.push(if stored.contains(*id) {
                    0
                } else {
                    tx.next_position()
                });
            }
            let rules: Vec<&str> = latest.iter().map(|r| r.rule()).collect();
            let scopes: Vec<&str> = latest.iter().map(|r| r.scope_key()).collect();
            let statuses: Vec<&str> = latest.iter().map(|r| r.status().as_str()).collect();
            let fired: Vec<i64> = latest.iter().map(|r| r.fired_seq()).collect();
            let due: Vec<String> = latest.iter().map(|r| bind_time(r.next_attempt_at())).collect();
            let bodies: Vec<String> = latest.iter().map(|r| r.to_json()).collect();
            tx.execute(
                sql::UPSERT_RUNS,
                &[
                    &ids, &positions, &rules, &scopes, &statuses, &fired, &due, &bodies,
                ],
            )
            .map(|_| ())
        })
    }

    fn scope_runs(&mut self, rule: &str, scope_key: &str) -> Result<Vec<Run>> {
        self.query(sql::SCOPE_RUNS, &[&rule, &scope_key])?
            .iter()
            .map(|row| Run::from_json(&col::<String>(row, 0)?))
            .collect()
    }

    fn dead_letter(&mut self, errors: &[EvaluationError]) -> Result<()> {
        if errors.is_empty() {
            return self.conn().map(|_| ());
        }
        let rules: Vec<&str> = errors.iter().map(EvaluationError::rule).collect();
        let bodies: Vec<String> = errors.iter().map(EvaluationError::to_json).collect();
        self.write(|tx| {
            let positions: Vec<i64> = errors.iter().map(|_| tx.next_position()).collect();
            tx.execute(sql::INSERT_DEAD_LETTERS, &[&positions, &rules, &bodies])
                .map(|_| ())
        })
    }

    fn schedule(&mut self, name: &str) -> Result<Option<Timestamp>> {
        match self.query_opt(sql::SCHEDULE, &[&name])? {
            Some(row) => Ok(Some(time(&col::<String>(&row, 0)?)?)),
            None => Ok(None),
        }
    }

    fn save_schedule(&mut self, name: &str, at: Timestamp) -> Result<()> {
        let at = bind_time(at);
        self.write(|tx| {
            if tx.execute(sql::UPDATE_SCHEDULE, &[&name, &at])? == 0 {
                let position = tx.next_position();
                tx.execute(sql::INSERT_SCHEDULE, &[&name, &position, &at])?;
            }
            Ok(())
        })
    }

    fn stored_rule(&mut self, name: &str) -> Result<Option<StoredRule>> {
        self.query_opt(sql::STORED_RULE, &[&name])?
            .map(|row| stored_rule(&row))
            .transpose()
    }

    fn stored_rules(&mut self) -> Result<Vec<StoredRule>> {
        self.query(sql::STORED_RULES, &[])?
            .iter()
            .map(stored_rule)
            .collect()
    }

    fn save_stored_rule(&mut self, stored: &StoredRule) -> Result<()> {
        let name = stored.name();
        let rule = pyjson::dumps(&stored.rule);
        let provenance = pyjson::dumps(&stored.provenance);
        let status = stored.status.as_str();
        self.write(|tx| {
            tx.execute(
                sql::UPSERT_STORED_RULE,
                &[&name, &stored.version, &status, &rule, &provenance],
            )
            .map(|_| ())
        })
    }

    fn commit(mut self) -> Result<()> {
        let counters = self.counters;
        if counters != self.locked {
            let ts = counters.head_ts.map(bind_time);
            if self.appended {
                let channel = self.shared.channel.clone();
                let note = payload(&self.ws, counters.head_seq);
                self.query(
                    sql::UPDATE_HEAD_NOTIFY,
                    &[&counters.head_seq, &ts, &counters.last_position, &channel, &note],
                )?;
            } else {
                self.execute(
                    sql::UPDATE_HEAD,
                    &[&counters.head_seq, &ts, &counters.last_position],
                )?;
            }
        }
        let conn = self.conn()?;
        let done = conn.batch("COMMIT");
        // Committed, or (the connection lost mid-way) nothing is left to roll back here: the
        // server ends the transaction with the session.
        if done.is_err() {
            conn.broken = true;
        }
        self.conn = None;
        done
    }
}

impl Drop for PgWorkspaceTx {
    /// Rolls back a transaction that did not commit. A connection whose rollback fails is
    /// closed rather than returned to the pool.
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            if conn.batch("ROLLBACK").is_err() {
                conn.broken = true;
            }
        }
    }
}
