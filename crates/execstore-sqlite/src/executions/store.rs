//! [`ExecutionStore`] for [`SqliteStore`]: the contract's operations.

use execstore::executions::graph::add_recent_traces;
use execstore::executions::search::scanned_paths;
use execstore::executions::SearchAttribute;
use execstore::kit::validate::{
    check_id, check_limit, check_seq, check_time, prepare_commit, prepare_trace, PreparedBatch,
};
use execstore::{
    executions::{
        BatchItem, Capabilities, DueTimer, Event, ExecutionPage, ExecutionSummary, GraphFigures, JsonObject,
        ListOrder, ListQuery, OutboxEntry, SpawnEntry, Status, TraceStep, UnreadableRow,
    },
    Effects, Execution, ExecutionStore, Result, StoreError,
};
use rusqlite::{params, OptionalExtension};
use std::sync::atomic::Ordering;

use super::plan;
use super::{corrupt, limit_param, parse_execution, prefix_upper_bound, SqliteStore};
use crate::db::error::Db;

impl ExecutionStore for SqliteStore {
    fn capabilities(&self) -> Capabilities {
        let caps = if self.durable {
            Capabilities::DURABLE
        } else {
            Capabilities::EPHEMERAL
        };
        if self.own_tables {
            caps.with_definitions()
        } else {
            caps
        }
    }

    fn trace_max(&self) -> Option<u32> {
        self.trace_max
    }

    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
        let p = prepare_commit(exe, effects)?;
        let seqs = self.write(|tx, _| self.apply(tx, &p))?;
        exe.version = p.write.version;
        Ok(seqs)
    }

    /// Checks every item first (an invalid one gets its `InvalidInput` and is left out), then
    /// writes the rest in one `BEGIN IMMEDIATE` transaction, each item under a savepoint: a
    /// lost CAS rolls back to it and the batch goes on. One COMMIT (one sync) for them all;
    /// the committed items' versions move only once it succeeded.
    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        let mut batch = PreparedBatch::new(items);
        if batch.has_writes() {
            self.write(|tx, s| {
                for (p, result) in batch.to_write() {
                    tx.prepare_cached(&s.savepoint).db()?.execute([]).db()?;
                    match self.apply(tx, p) {
                        Ok(seqs) => *result = Ok(seqs),
                        Err(conflict @ StoreError::Conflict { .. }) => {
                            tx.prepare_cached(&s.rollback_to_savepoint)
                                .db()?
                                .execute([])
                                .db()?;
                            *result = Err(conflict);
                        }
                        Err(e) => return Err(e),
                    }
                    tx.prepare_cached(&s.release_savepoint).db()?.execute([]).db()?;
                }
                Ok(())
            })?;
        }
        Ok(batch.finish(items))
    }

    fn load(&self, id: &str) -> Result<Option<Execution>> {
        let conn = self.point_read()?;
        let data: Option<String> = conn
            .prepare_cached(&self.sql.load)
            .db()?
            .query_row([id], |row| row.get(0))
            .optional()
            .db()?;
        data.map(|data| parse_execution(id, &data)).transpose()
    }

    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        let conn = self.point_read()?;
        let (data, processed): (Option<String>, bool) = conn
            .prepare_cached(&self.sql.load_for_event)
            .db()?
            .query_row([id, event_id], |row| Ok((row.get(0)?, row.get(1)?)))
            .db()?;
        match data {
            Some(data) => Ok((Some(parse_execution(id, &data)?), processed)),
            None => Ok((None, false)),
        }
    }

    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        let conn = self.point_read()?;
        let processed = conn
            .prepare_cached(&self.sql.is_processed)
            .db()?
            .exists([execution_id, event_id])
            .db()?;
        Ok(processed)
    }

    /// A document that is not JSON takes no listing down: its row is skipped (see
    /// [`ExecutionStore::unreadable_executions`]).
    fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
        let page = self.tolerating_unreadable(|skip| self.list_page(query, skip))?;
        match &query.filter {
            Some(f) if f.paths().iter().any(|p| p.root == "context") => {
                Ok(page.scanned(scanned_paths(f, &self.list_attributes()?)))
            }
            _ => Ok(page),
        }
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
        let conn = self.read()?;
        let mut stmt = conn.prepare_cached(&self.sql.pending_outbox).db()?;
        let mut rows = stmt
            .query(params![after.unwrap_or(i64::MIN), limit_param(limit)])
            .db()?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().db()? {
            let seq: i64 = row.get(0).db()?;
            let event: String = row.get(2).db()?;
            let event: Event =
                serde_json::from_str(&event).map_err(|e| corrupt(format!("outbox entry {seq}"), e))?;
            out.push(OutboxEntry {
                seq,
                target_id: row.get(1).db()?,
                event,
            });
        }
        Ok(out)
    }

    /// The row a step's emit writes, in a transaction of its own.
    fn enqueue_outbox(&self, target_id: &str, event: &Event) -> Result<i64> {
        check_id("target_id", target_id)?;
        let json = execstore::kit::validate::prepare_event(event)?;
        self.write(|tx, s| {
            tx.prepare_cached(&s.insert_outbox)
                .db()?
                .insert(params![target_id, json])
                .db()
        })
    }

    fn ack_outbox(&self, seq: i64) -> Result<()> {
        self.delete_by_seq(seq, "outbox entry", |s| &s.ack_outbox)
    }

    /// One transaction for all of them: one sync for the whole batch of acks.
    fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        for &seq in seqs {
            check_seq("seqs", seq)?;
        }
        if seqs.is_empty() {
            return Ok(0);
        }
        self.write(|tx, s| {
            let mut stmt = tx.prepare_cached(&s.ack_outbox).db()?;
            let mut removed = 0;
            for seq in seqs {
                removed += stmt.execute([seq]).db()?;
            }
            Ok(removed)
        })
    }

    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        check_limit("limit", limit)?;
        let conn = self.read()?;
        let mut stmt = conn.prepare_cached(&self.sql.pending_spawns).db()?;
        let mut rows = stmt
            .query(params![after.unwrap_or(i64::MIN), limit_param(limit)])
            .db()?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().db()? {
            let seq: i64 = row.get(0).db()?;
            let context: String = row.get(4).db()?;
            // Python's json.dumps may have written NaN or Infinity: read them as null.
            let context: JsonObject = execstore::kit::pyjson::loads_object_exact(&context)
                .map_err(|e| corrupt(format!("spawn entry {seq} context"), e))?;
            out.push(SpawnEntry {
                seq,
                parent_id: row.get(1).db()?,
                child_id: row.get(2).db()?,
                root_path: row.get(3).db()?,
                context,
            });
        }
        Ok(out)
    }

    fn ack_spawn(&self, seq: i64) -> Result<()> {
        self.delete_by_seq(seq, "spawn entry", |s| &s.ack_spawn)
    }

    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
        check_time("now", now)?;
        check_limit("limit", limit)?;
        if let Some(after) = after {
            check_time("after.fire_at", after.fire_at)?;
        }
        let conn = self.read()?;
        let row_to_timer = |row: &rusqlite::Row<'_>| {
            Ok(DueTimer {
                execution_id: row.get(0)?,
                path: row.get(1)?,
                fire_at: row.get(2)?,
            })
        };
        let rows = match after {
            None => conn
                .prepare_cached(&self.sql.due_timers)
                .db()?
                .query_map(params![now, limit_param(limit)], row_to_timer)
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>(),
            Some(a) => conn
                .prepare_cached(&self.sql.due_timers_after)
                .db()?
                .query_map(
                    params![now, a.fire_at, a.execution_id, a.path, limit_param(limit)],
                    row_to_timer,
                )
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>(),
        };
        rows.db()
    }

    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        check_time("fire_at", fire_at)?;
        self.write(|tx, s| {
            let n = tx
                .prepare_cached(&s.delete_timer)
                .db()?
                .execute(params![execution_id, path, fire_at])
                .db()?;
            Ok(n > 0)
        })
    }

    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        let conn = self.read()?;
        let mut stmt = conn.prepare_cached(&self.sql.read_trace).db()?;
        let mut rows = stmt.query([execution_id]).db()?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().db()? {
            let idx: i64 = row.get(0).db()?;
            let entry: String = row.get(1).db()?;
            let mut step: TraceStep = execstore::kit::pyjson::loads_object_exact(&entry)
                .map_err(|e| corrupt(format!("trace step {idx} of {execution_id}"), e))?;
            step.insert("index".into(), idx.into());
            out.push(step);
        }
        Ok(out)
    }

    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
        check_id("execution_id", execution_id)?;
        let entry = prepare_trace(step)?;
        self.write(|tx, s| {
            if !tx.prepare_cached(&s.exists).db()?.exists([execution_id]).db()? {
                return Err(StoreError::NotFound {
                    what: "execution",
                    key: execution_id.to_owned(),
                });
            }
            self.append_trace_in(tx, execution_id, &entry)
        })
    }

    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        let conn = self.read()?;
        let upper = prefix_upper_bound(prefix);
        let ids: Vec<String> = match &upper {
            Some(upper) => {
                let mut stmt = conn.prepare_cached(&self.sql.ids_between).db()?;
                let rows = stmt.query_map([prefix, upper], |row| row.get(0)).db()?;
                rows.collect::<rusqlite::Result<_>>().db()?
            }
            None => {
                let mut stmt = conn.prepare_cached(&self.sql.ids_from).db()?;
                let rows = stmt.query_map([prefix], |row| row.get(0)).db()?;
                rows.collect::<rusqlite::Result<_>>().db()?
            }
        };
        // The range is exact; the filter only guards against a collation other than BINARY.
        Ok(ids.into_iter().filter(|id| id.starts_with(prefix)).collect())
    }

    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        check_id("execution_id", execution_id)?;
        self.write(|tx, s| {
            self.uncount(tx, execution_id, expected_version)?;
            let deleted = tx
                .prepare_cached(&s.purge_execution)
                .db()?
                .execute(params![execution_id, expected_version])
                .db()?;
            if deleted == 0 && tx.prepare_cached(&s.exists).db()?.exists([execution_id]).db()? {
                // It moved on: touch nothing (the transaction holds no change to commit).
                return Ok(false);
            }
            for sql in &s.purge_companions {
                tx.prepare_cached(sql).db()?.execute([execution_id]).db()?;
            }
            Ok(deleted > 0)
        })
    }

    /// Rows whose document is not JSON are left out of the counts, as from the listing.
    fn count_by_status(&self, query: &ListQuery) -> Result<Vec<(Status, u64)>> {
        self.tolerating_unreadable(|skip| self.count_filtered(query, skip))
    }

    /// Where executions sit from migration 11's index of the active path (or, on a file
    /// migrated up to 8, 9 or 10 only, the figures their triggers keep; with neither, by
    /// scan), and the steps from the traces of the `max_traces` most recently updated.
    fn graph_figures(&self, definition: &str, max_traces: usize) -> Result<GraphFigures> {
        check_id("definition", definition)?;
        if !self.sql.has_graph.load(Ordering::Relaxed) {
            return execstore::executions::graph::graph_figures_by_scan(self, definition, max_traces);
        }
        let mut tally = {
            let conn = self.read()?;
            let indexed = self.sql.has_sitting_index.load(Ordering::Relaxed);
            let keyed = self.sql.has_columns.load(Ordering::Relaxed);
            self.sql.graph.now(&conn, definition, indexed, keyed)?
        };
        let traces_read = add_recent_traces(self, definition, max_traces, &mut tally)?;
        tally.maintained_figures(definition, traces_read)
    }

    fn unreadable_executions(&self, limit: usize) -> Result<Vec<UnreadableRow>> {
        if !self.sql.skip_unreadable.load(Ordering::Relaxed) {
            return Ok(Vec::new());
        }
        let conn = self.read()?;
        let mut stmt = conn.prepare_cached(&self.sql.unreadable).db()?;
        let rows = stmt
            .query_map([limit_param(limit)], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, Option<i64>>(1)?))
            })
            .db()?;
        let mut out = Vec::new();
        for row in rows {
            let (id, at) = row.db()?;
            let message = match at {
                Some(at) if at > 0 => format!("not JSON (first error at character {at})"),
                _ => "not JSON".to_owned(),
            };
            out.push(UnreadableRow {
                id,
                field: "data".into(),
                message,
            });
        }
        Ok(out)
    }

    /// `PRAGMA data_version` of the reading connection moves with every commit of any other
    /// connection (this store's writer included, or another process), and its
    /// `total_changes` with the writes of a store that has only one connection.
    fn change_token(&self) -> Result<String> {
        let conn = self.read()?;
        let data_version: i64 = conn.query_row("PRAGMA data_version", [], |row| row.get(0)).db()?;
        Ok(format!("sqlite:{data_version}:{}", conn.total_changes()))
    }
}

/// The listing and the counts, with or without the rows whose document is not JSON.
impl SqliteStore {
    /// Runs `read` as is until a document that is not JSON makes it fail; then, and from then
    /// on, over the other rows only.
    fn tolerating_unreadable<T>(&self, read: impl Fn(bool) -> Result<T>) -> Result<T> {
        if self.sql.skip_unreadable.load(Ordering::Relaxed) {
            return read(true);
        }
        match read(false) {
            Err(StoreError::Corrupt { reason, .. }) if reason.contains("malformed JSON") => {
                self.sql.skip_unreadable.store(true, Ordering::Relaxed);
                read(true)
            }
            other => other,
        }
    }

    /// A listing or count statement as this file reads it: its keys respelled as migration
    /// 13's columns where the file has them, over the readable rows only when `skip`.
    fn read_sql(&self, sql: String, skip: bool) -> String {
        let sql = self.sql.respelled(sql);
        if skip {
            self.sql.skipping_unreadable(&sql)
        } else {
            sql
        }
    }

    fn list_page(&self, query: &ListQuery, skip: bool) -> Result<ExecutionPage> {
        if query.order != ListOrder::Id {
            return self.list_page_by_time(query, skip);
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
        let limit = limit_param(query.limit.saturating_add(1));
        let conn = self.read()?;
        let mut stmt;
        let mut rows = if query.has_time_or_search() {
            let filtered = self.sql.list_filtered(query, after.as_deref(), &statuses, limit);
            stmt = conn.prepare_cached(&self.read_sql(filtered.sql, skip)).db()?;
            stmt.query(rusqlite::params_from_iter(filtered.args)).db()?
        } else {
            let sql = self.sql.list(
                after.is_some(),
                query.definition_id.is_some(),
                statuses.len(),
                query.roots_only,
            );
            let mut args: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(statuses.len() + 3);
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
            stmt = conn.prepare_cached(&self.read_sql(sql, skip)).db()?;
            stmt.query(args.as_slice()).db()?
        };
        let items = read_summaries(&mut rows)?;
        Ok(ExecutionPage::from_overfetch(items, query.limit))
    }

    /// A page in a time order ([`ListOrder::UpdatedDesc`], [`ListOrder::CreatedDesc`]; see
    /// `order.rs`).
    fn list_page_by_time(&self, query: &ListQuery, skip: bool) -> Result<ExecutionPage> {
        let after = query.validated_time_after()?;
        let statuses = match status_strings(query) {
            Some(statuses) => statuses,
            None => return Ok(ExecutionPage::default()),
        };
        let limit = limit_param(query.limit.saturating_add(1));
        let conn = self.read()?;
        let window = self.driving_window(&conn, query, skip)?;
        let drivers = self.drivers(&conn, query, &statuses, window, limit, skip)?;
        let ordered = self
            .sql
            .list_by_time(query, after.as_ref(), &statuses, &drivers, window, limit);
        let mut stmt = conn.prepare_cached(&self.read_sql(ordered.sql, skip)).db()?;
        let mut rows = stmt.query(rusqlite::params_from_iter(ordered.args)).db()?;
        let items = read_summaries(&mut rows)?;
        Ok(ExecutionPage::from_overfetch_in(query.order, items, query.limit))
    }

    /// The range that drives `query`'s walk instead of its order's index (`plan.rs`): the
    /// smallest of the windows on another time field than the order's, and of the active
    /// path its `where` pins (`state = X`), if it holds at most [`plan::WINDOW_SORT_CAP`]
    /// executions; `None`: the order's index.
    pub(crate) fn driving_window(
        &self,
        conn: &rusqlite::Connection,
        query: &ListQuery,
        skip: bool,
    ) -> Result<Option<&'static str>> {
        let mut best: Option<(&'static str, i64)> = None;
        if skip {
            return Ok(None);
        }
        for (field, range) in plan::other_windows(query) {
            let counted = self.sql.window_count(field, range);
            let n: i64 = conn
                .prepare_cached(&self.sql.respelled(counted.sql))
                .db()?
                .query_row(rusqlite::params_from_iter(counted.args), |row| row.get(0))
                .db()?;
            if n <= plan::WINDOW_SORT_CAP && best.is_none_or(|(_, m)| n < m) {
                best = Some((field, n));
            }
        }
        let pinned = query
            .filter
            .as_ref()
            .and_then(execstore::executions::search::pinned_state);
        if let Some(state) = pinned.filter(|_| self.sql.has_state_index.load(Ordering::Relaxed)) {
            let counted = self.sql.respelled(self.sql.state_count());
            let n: i64 = conn
                .prepare_cached(&counted)
                .db()?
                .query_row(
                    rusqlite::params![
                        state,
                        format!("{state}."),
                        format!("{state}/"),
                        plan::WINDOW_SORT_CAP + 1
                    ],
                    |row| row.get(0),
                )
                .db()?;
            if n <= plan::WINDOW_SORT_CAP && best.is_none_or(|(_, m)| n < m) {
                best = Some(("active_path", n));
            }
        }
        Ok(best.map(|(field, _)| field))
    }

    /// The index each status of `query`'s time-ordered listing reads (one for every status
    /// when `statuses` is empty; `plan.rs`): a `window`'s, or the walk or a sort as
    /// [`plan::choose`] decides from the kept counts, probing the walk
    /// ([`Stmts::walk_probe`](super::sql::Stmts)) when it asks to.
    pub(crate) fn drivers(
        &self,
        conn: &rusqlite::Connection,
        query: &ListQuery,
        statuses: &[&str],
        window: Option<&str>,
        fetch: i64,
        skip: bool,
    ) -> Result<Vec<plan::Driver>> {
        let slots: Vec<Option<&str>> = if statuses.is_empty() {
            vec![None]
        } else {
            statuses.iter().copied().map(Some).collect()
        };
        if window.is_some() {
            return Ok(vec![plan::Driver::Window; slots.len()]);
        }
        let sizes = self.driver_sizes(conn, query, statuses, skip)?;
        let pages = u64::try_from(fetch).unwrap_or(0);
        let sort_cost = if self.sql.has_listing_index.load(Ordering::Relaxed) {
            plan::SORT_COST
        } else {
            plan::SORT_COST_WITHOUT_LISTING_INDEX
        };
        let mut drivers = Vec::with_capacity(slots.len());
        for status in slots {
            drivers.push(
                match plan::choose(query, status, sizes.as_ref(), pages, sort_cost) {
                    plan::Choice::Read(driver) => driver,
                    plan::Choice::Probe { budget, sort } => {
                        let probe = self.sql.walk_probe(query, status, budget, fetch);
                        let found: i64 = conn
                            .prepare_cached(&self.sql.respelled(probe.sql))
                            .db()?
                            .query_row(rusqlite::params_from_iter(probe.args), |row| row.get(0))
                            .db()?;
                        if found >= fetch {
                            plan::Driver::Walk
                        } else {
                            sort
                        }
                    }
                },
            );
        }
        Ok(drivers)
    }

    /// The kept counts the choice of a time-ordered listing's index reads (`plan.rs`), when
    /// `query` (with its distinct `statuses`) has a filter the listing index holds.
    pub(crate) fn driver_sizes(
        &self,
        conn: &rusqlite::Connection,
        query: &ListQuery,
        statuses: &[&str],
        skip: bool,
    ) -> Result<Option<plan::Sizes>> {
        if !plan::indexed_filters(query, statuses) || skip || !self.sql.has_counts.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let definition = query.definition_id.as_deref().unwrap_or_default();
        let mut stmt = conn.prepare_cached(&self.sql.driver_sizes()).db()?;
        let rows = stmt
            .query_map([definition], |row| {
                let n = |i| row.get::<_, i64>(i).map(|n| u64::try_from(n).unwrap_or(0));
                Ok((row.get::<_, String>(0)?, [n(1)?, n(2)?, n(3)?, n(4)?]))
            })
            .db()?;
        let rows = rows.collect::<rusqlite::Result<Vec<_>>>().db()?;
        Ok(Some(plan::Sizes::from_rows(rows)))
    }

    /// The counts by status of what `query`'s listing selects (see `order.rs`).
    fn count_filtered(&self, query: &ListQuery, skip: bool) -> Result<Vec<(Status, u64)>> {
        let filter = query.count_filter()?;
        let counted = if !skip && !filter.has_time_or_search() && self.sql.has_counts.load(Ordering::Relaxed)
        {
            self.sql.maintained_counts(&filter)
        } else {
            self.sql.count_by_status(&filter)
        };
        let conn = self.read()?;
        let mut stmt = conn.prepare_cached(&self.read_sql(counted.sql, skip)).db()?;
        let mut rows = stmt.query(rusqlite::params_from_iter(counted.args)).db()?;
        tally_statuses(&mut rows)
    }
}

/// The distinct status strings of the query's status filter (none: every status), or `None`
/// when the filter keeps no status at all.
fn status_strings(query: &ListQuery) -> Option<Vec<&'static str>> {
    let mut statuses: Vec<&'static str> = Vec::new();
    if let Some(set) = &query.status {
        if set.is_empty() {
            return None;
        }
        statuses = set.iter().map(|s| s.as_str()).collect();
        statuses.sort_unstable();
        statuses.dedup();
    }
    Some(statuses)
}

/// The rows of `(status, count)`, one entry per status in [`Status::ALL`] order.
fn tally_statuses(rows: &mut rusqlite::Rows<'_>) -> Result<Vec<(Status, u64)>> {
    let mut counts = [0u64; Status::ALL.len()];
    while let Some(row) = rows.next().db()? {
        // A row without a status reads as PENDING, as in the listing.
        let status = match row.get::<_, Option<String>>(0).db()? {
            Some(s) => s
                .parse::<Status>()
                .map_err(|e| corrupt("an execution's status".to_owned(), e))?,
            None => Status::Pending,
        };
        let n: i64 = row.get(1).db()?;
        if let Some(slot) = Status::ALL.iter().position(|s| *s == status) {
            counts[slot] += u64::try_from(n).unwrap_or(0);
        }
    }
    Ok(Status::ALL.into_iter().zip(counts).collect())
}

/// The summaries of a listing's rows (the columns of `LIST_COLUMNS`).
fn read_summaries(rows: &mut rusqlite::Rows<'_>) -> Result<Vec<ExecutionSummary>> {
    let mut items = Vec::new();
    while let Some(row) = rows.next().db()? {
        let id: String = row.get(0).db()?;
        let status = match row.get::<_, Option<String>>(3).db()? {
            Some(s) => s
                .parse::<Status>()
                .map_err(|e| corrupt(format!("execution {id} status"), e))?,
            None => Status::Pending,
        };
        items.push(ExecutionSummary {
            definition_id: row.get(1).db()?,
            version: row.get(2).db()?,
            status,
            outcome: row.get(4).db()?,
            active_path: row.get(5).db()?,
            parent_id: row.get(6).db()?,
            finished_at: row.get(7).db()?,
            updated_at: row.get(8).db()?,
            created_at: row.get(9).db()?,
            id,
        });
    }
    Ok(items)
}
