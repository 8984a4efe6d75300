//! [`ExecutionStore`] for [`PgStore`].

use std::time::Duration;

use execstore::executions::SearchAttribute;
use execstore::kit::validate::{
    check_id, check_limit, check_seq, check_time, prepare_commit, prepare_trace, PreparedBatch,
    PreparedCommit, MAX_PAGE,
};
use execstore::{
    executions::{
        BatchItem, Capabilities, DueTimer, ExecutionPage, ListOrder, ListQuery, OutboxEntry, SpawnEntry,
        Status, TraceStep, Work,
    },
    Effects, Execution, ExecutionStore, Result, StoreError,
};

use postgres::types::ToSql;

use super::rows::{
    col, corrupt, due_timer, limit_param, outbox_entry, parse_execution, prefix_upper_bound, spawn_entry,
};
use super::{PgStore, TimerClaims};

impl ExecutionStore for PgStore {
    fn capabilities(&self) -> Capabilities {
        let caps = Capabilities::DURABLE.with_exclusive_claims().with_wakeups();
        if self.own_tables && !self.read_only {
            caps.with_definitions()
        } else {
            caps
        }
    }

    fn trace_max(&self) -> Option<u32> {
        self.trace_max
    }

    /// One round trip (see [`PgStore`]'s commit function).
    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
        let p = prepare_commit(exe, effects)?;
        let seqs = self.commit_step(&p)?;
        exe.version = p.write.version;
        Ok(seqs)
    }

    /// Checks every item first (an invalid one gets its `InvalidInput` and is left out), then
    /// writes the rest in one statement, one transaction: a lost CAS writes nothing of its
    /// item and the batch goes on. The committed items' versions move only once it
    /// succeeded. Any other failure fails the whole batch.
    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        let mut batch = PreparedBatch::new(items);
        if batch.has_writes() {
            let outcomes = {
                let steps: Vec<&PreparedCommit> = batch.to_write().map(|(p, _)| p).collect();
                self.commit_steps(&steps)?
            };
            for ((_, result), outcome) in batch.to_write().zip(outcomes) {
                *result = outcome;
            }
        }
        Ok(batch.finish(items))
    }

    fn load(&self, id: &str) -> Result<Option<Execution>> {
        let rows = self.query(&self.sql.load, &[&id])?;
        match rows.first() {
            Some(row) => Ok(Some(parse_execution(id, &col::<String>(row, 0)?)?)),
            None => Ok(None),
        }
    }

    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        let row = self.query_one(&self.sql.load_for_event, &[&id, &event_id])?;
        let data: Option<String> = col(&row, 0)?;
        match data {
            Some(data) => Ok((Some(parse_execution(id, &data)?), col(&row, 1)?)),
            None => Ok((None, false)),
        }
    }

    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        let row = self.query_one(&self.sql.is_processed, &[&execution_id, &event_id])?;
        col(&row, 0)
    }

    fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
        let scanned = self.scanned_paths(query)?;
        if query.order != ListOrder::Id {
            return Ok(self.list_page_by_time(query, &scanned)?.scanned(scanned));
        }
        let after = query.validated_after()?;
        let mut statuses: Vec<&'static str> = Vec::new();
        if let Some(set) = &query.status {
            if set.is_empty() {
                return Ok(ExecutionPage::default());
            }
            statuses = set.iter().map(|s| s.as_str()).collect();
            statuses.sort_unstable();
            statuses.dedup();
        }
        let sql = self.sql.list(
            after.is_some(),
            query.definition_id.is_some(),
            statuses.len(),
            query.roots_only,
        );
        let limit = limit_param(query.limit.saturating_add(1));
        let mut args: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(3 + statuses.len());
        if let Some(after) = &after {
            args.push(after);
        }
        if let Some(definition_id) = &query.definition_id {
            args.push(definition_id);
        }
        for status in &statuses {
            args.push(status);
        }
        args.push(&limit);

        let rows = if query.has_time_or_search() {
            let filtered = self.sql.list_filtered(query, after.as_deref(), &statuses, limit);
            let args: Vec<&(dyn ToSql + Sync)> = filtered.args.iter().map(|a| a.as_sql()).collect();
            self.query(&filtered.sql, &args)?
        } else {
            self.query(&sql, &args)?
        };
        Ok(ExecutionPage::from_overfetch(super::order::summaries(&rows)?, query.limit).scanned(scanned))
    }

    fn attributes(&self) -> Result<Vec<SearchAttribute>> {
        self.list_attributes()
    }

    fn declare_attribute(&self, path: &str) -> Result<SearchAttribute> {
        self.declare(path)
    }

    fn drop_attribute(&self, path: &str) -> Result<bool> {
        self.undeclare(path)
    }

    fn put_definition(&self, doc: &execstore::executions::DefinitionDoc) -> Result<bool> {
        self.put_definition_doc(doc)
    }

    fn get_definition(&self, id: &str, fqn: &str) -> Result<Option<execstore::executions::DefinitionDoc>> {
        self.get_definition_doc(id, fqn)
    }

    fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
        check_limit("limit", limit)?;
        let rows = self.query(
            &self.sql.pending_outbox,
            &[&after.unwrap_or(i64::MIN), &limit_param(limit)],
        )?;
        rows.iter().map(outbox_entry).collect()
    }

    /// The row a step's emit writes, and the outbox's NOTIFY, in a transaction of its own.
    fn enqueue_outbox(&self, target_id: &str, event: &execstore::executions::Event) -> Result<i64> {
        check_id("target_id", target_id)?;
        let json = execstore::kit::validate::prepare_event(event)?;
        self.check_writable()?;
        self.write(|tx, s| {
            let row = tx.query_one(&s.enqueue_outbox, &[&target_id, &json])?;
            tx.query(&s.notify, &[&s.channels.outbox])?;
            col::<i64>(&row, 0)
        })
    }

    fn ack_outbox(&self, seq: i64) -> Result<()> {
        self.delete_by_seq(seq, "outbox entry", &self.sql.ack_outbox)
    }

    /// One statement, in its own transaction, for the whole batch of acks.
    fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        for &seq in seqs {
            check_seq("seqs", seq)?;
        }
        if seqs.is_empty() {
            return Ok(0);
        }
        let seqs = seqs.to_vec();
        let removed = self.write(|tx, s| tx.execute(&s.ack_outbox_many, &[&seqs]))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }

    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        check_limit("limit", limit)?;
        let rows = self.query(
            &self.sql.pending_spawns,
            &[&after.unwrap_or(i64::MIN), &limit_param(limit)],
        )?;
        rows.iter().map(spawn_entry).collect()
    }

    fn ack_spawn(&self, seq: i64) -> Result<()> {
        self.delete_by_seq(seq, "spawn entry", &self.sql.ack_spawn)
    }

    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
        check_time("now", now)?;
        check_limit("limit", limit)?;
        if let Some(after) = after {
            check_time("after.fire_at", after.fire_at)?;
        }
        let limit = limit_param(limit);
        let rows = match after {
            None => self.query(&self.sql.due_timers, &[&now, &limit])?,
            Some(a) => self.query(
                &self.sql.due_timers_after,
                &[&now, &a.fire_at, &a.execution_id, &a.path, &limit],
            )?,
        };
        rows.iter().map(due_timer).collect()
    }

    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        check_time("fire_at", fire_at)?;
        self.write(|tx, s| Ok(tx.execute(&s.delete_timer, &[&execution_id, &path, &fire_at])? > 0))
    }

    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        let rows = self.query(&self.sql.read_trace, &[&execution_id])?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(trace_step(execution_id, col(row, 0)?, &col::<String>(row, 1)?)?);
        }
        Ok(out)
    }

    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
        check_id("execution_id", execution_id)?;
        let entry = prepare_trace(step)?;
        self.write(|tx, s| {
            if tx.query_opt(&s.lock_execution, &[&execution_id])?.is_none() {
                return Err(StoreError::NotFound {
                    what: "execution",
                    key: execution_id.to_owned(),
                });
            }
            self.append_trace_in(tx, execution_id, &entry)
        })
    }

    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        let rows = match prefix_upper_bound(prefix) {
            Some(upper) => self.query(&self.sql.ids_between, &[&prefix, &upper])?,
            None => self.query(&self.sql.ids_from, &[&prefix])?,
        };
        let mut ids = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = col(row, 0)?;
            // The range is exact in the "C" collation; the filter is a second guard.
            if id.starts_with(prefix) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        check_id("execution_id", execution_id)?;
        self.write(|tx, s| {
            let deleted = tx.execute(&s.purge_execution, &[&execution_id, &expected_version])?;
            if deleted == 0 && tx.query_opt(&s.exists, &[&execution_id])?.is_some() {
                // It moved on: touch nothing (the transaction holds no change to commit).
                return Ok(false);
            }
            for sql in &s.purge_companions {
                tx.execute(sql, &[&execution_id])?;
            }
            Ok(deleted > 0)
        })
    }

    /// `FOR UPDATE SKIP LOCKED` on the outbox rows: other relays skip them until this
    /// transaction, which also deletes what was delivered, ends.
    fn relay_outbox(
        &self,
        limit: usize,
        deliver: &mut dyn FnMut(&[OutboxEntry]) -> Vec<i64>,
    ) -> Result<usize> {
        let s = &self.sql;
        self.relay(
            limit,
            &s.claim_outbox,
            &s.ack_outbox_many,
            outbox_entry,
            |e| e.seq,
            deliver,
        )
    }

    fn relay_spawns(&self, limit: usize, create: &mut dyn FnMut(&[SpawnEntry]) -> Vec<i64>) -> Result<usize> {
        let s = &self.sql;
        self.relay(
            limit,
            &s.claim_spawns,
            &s.ack_spawns_many,
            spawn_entry,
            |e| e.seq,
            create,
        )
    }

    /// Session advisory locks, one per timer, held on one pooled connection while `fire`
    /// runs; then a fresh read drops the timers another sweeper fired meanwhile.
    fn sweep_timers(&self, now: f64, limit: usize, fire: &mut dyn FnMut(&[DueTimer])) -> Result<usize> {
        check_time("now", now)?;
        check_limit("limit", limit)?;
        let s = &self.sql;
        let mut claims = TimerClaims {
            conn: self.conn()?,
            unlock_sql: &s.unlock_claims,
        };
        // Look past timers other sweepers hold, up to a bound.
        let candidates = limit_param(limit.saturating_mul(4).clamp(1, MAX_PAGE));
        let locked = claims.query(
            &s.claim_timers,
            &[&now, &limit_param(limit), &candidates, &s.timer_lock_space],
        )?;
        if locked.is_empty() {
            return Ok(0);
        }
        let locked = locked.iter().map(due_timer).collect::<Result<Vec<_>>>()?;
        let ids: Vec<&str> = locked.iter().map(|t| t.execution_id.as_str()).collect();
        let paths: Vec<&str> = locked.iter().map(|t| t.path.as_str()).collect();
        let fire_ats: Vec<f64> = locked.iter().map(|t| t.fire_at).collect();
        let mut due = claims
            .query(&s.timers_still_due, &[&ids, &paths, &fire_ats])?
            .iter()
            .map(due_timer)
            .collect::<Result<Vec<_>>>()?;
        due.sort_by(|a, b| {
            a.fire_at
                .total_cmp(&b.fire_at)
                .then_with(|| a.execution_id.cmp(&b.execution_id))
                .then_with(|| a.path.cmp(&b.path))
        });
        if !due.is_empty() {
            fire(&due);
        }
        drop(claims);
        Ok(due.len())
    }

    /// The first call for a kind only starts listening and returns `true` (what was committed
    /// before was not announced: the caller looks before it waits); later calls wait for a
    /// commit's `NOTIFY` on the kind's channel. Commits that came together wake a caller once.
    fn wait_for_work(&self, work: Work, timeout: Duration) -> Result<bool> {
        let listener = self.listener(work);
        let (started, mark) = listener.start()?;
        if started {
            return Ok(true);
        }
        listener.wait(mark, timeout, |_| true)
    }

    fn count_by_status(&self, query: &ListQuery) -> Result<Vec<(Status, u64)>> {
        self.count_filtered(query)
    }

    /// Where executions sit from the figures migration 9's triggers keep, after folding the
    /// deltas in where this store may write (as the counts; else by scan), and the steps from
    /// the traces of the `max_traces` most recently updated.
    fn graph_figures(
        &self,
        definition: &str,
        max_traces: usize,
    ) -> Result<execstore::executions::GraphFigures> {
        check_id("definition", definition)?;
        if !self.graphed {
            return execstore::executions::graph::graph_figures_by_scan(self, definition, max_traces);
        }
        let graph = &self.sql.graph;
        let rows = if self.read_only {
            self.query(&graph.read, &[&definition])?
        } else {
            let mut conn = self.conn()?;
            let _ = conn.execute(&graph.fold, &[]);
            conn.query(&graph.read, &[&definition])?
        };
        let mut tally = super::graph::GraphSql::now(&rows)?;
        // The traces of several executions in one statement.
        let traces_read = execstore::executions::graph::add_recent_traces_by(
            self,
            definition,
            max_traces,
            &mut tally,
            &mut |ids| self.traces_of(ids),
        )?;
        tally.maintained_figures(definition, traces_read)
    }

    /// The server's transaction snapshot (`xmin:xmax:in-progress`): every transaction that
    /// writes takes an id below the next `xmax` or leaves the in-progress list when it
    /// commits, so a commit to these tables always moves it. Writes elsewhere on the server
    /// move it too (a harmless extra re-read).
    fn change_token(&self) -> Result<String> {
        let row = self.query_one("SELECT txid_current_snapshot()::text", &[])?;
        Ok(format!("pg:{}", col::<String>(&row, 0)?))
    }
}

impl PgStore {
    /// The steps of the traces of `ids`, read in one statement and parsed as
    /// [`ExecutionStore::read_trace`] parses them (the graph's sample of traces).
    fn traces_of(&self, ids: &[String]) -> Result<Vec<TraceStep>> {
        let rows = self.query(&self.sql.read_traces, &[&ids])?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            out.push(trace_step(
                &col::<String>(row, 0)?,
                col(row, 1)?,
                &col::<String>(row, 2)?,
            )?);
        }
        Ok(out)
    }
}

/// A stored trace step `idx` of `execution_id` (its `entry`), with its index.
fn trace_step(execution_id: &str, idx: i64, entry: &str) -> Result<TraceStep> {
    let mut step: TraceStep = execstore::kit::pyjson::loads_object_exact(entry)
        .map_err(|e| corrupt(format!("trace step {idx} of {execution_id}"), e))?;
    step.insert("index".into(), idx.into());
    Ok(step)
}
