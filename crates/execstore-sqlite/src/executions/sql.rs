//! Every statement the store runs, with its table names filled in once at open.

use super::schema::{Sql, Tables};
use crate::db::error::Db as _;

/// The summary projection of `list_executions`: scalars only, never `data` itself.
const LIST_COLUMNS: &str = "id, definition_id, version, json_extract(data,'$.status'), \
     json_extract(data,'$.outcome'), json_extract(data,'$.active_path'), \
     json_extract(data,'$.parent_id'), json_extract(data,'$.finished_at'), \
     json_extract(data,'$.updated_at'), json_extract(data,'$.created_at')";

/// The statements that write an execution's row, for one file ([`Stmts::writes`]).
pub(crate) struct Writes<'a> {
    /// [`Stmts::update_cas`], or its keyed twin.
    pub(crate) update_cas: &'a str,
    /// [`Stmts::update_cas_moved`], or its keyed twin.
    pub(crate) update_cas_moved: &'a str,
    /// [`Stmts::insert_execution`], or its keyed twin.
    pub(crate) insert_execution: &'a str,
}

#[derive(Debug)]
pub(crate) struct Stmts {
    /// The CAS write of an execution that stays in its definition (`?5`, harel's column).
    pub(crate) update_cas: String,
    /// The CAS write of an execution whose document names another definition: harel's
    /// column follows it (`?5`), so the listing, the counts and the graph do.
    pub(crate) update_cas_moved: String,
    /// Adds `?4` to the count of definition `?1`, status `?2` and root-ness `?3`.
    pub(crate) counts_add: String,
    /// Where the execution `?1` at version `?2` is counted (definition, status, root-ness),
    /// if it is and its document is JSON (JSON5 included, as the counts' triggers read it).
    pub(crate) counted_as: String,
    /// The names of the counts' triggers (migration 12's), which the store's writer keeps
    /// in its own statements (`SqliteStore::keep_counts`).
    pub(crate) counts_triggers: [String; 3],
    /// The names of migration 13's triggers, which set the key columns for every other
    /// writer: the store's writer sets them in its own statements ([`Stmts::keyed`]).
    pub(crate) key_triggers: [String; 2],
    /// The writes of a file migration 13 migrated, setting the key columns too.
    pub(crate) keyed: super::keys::KeyedWrites,
    /// Whether the executions table has migration 13's key columns: the writes set them and
    /// the reads are respelled to read them ([`Stmts::respelled`]).
    pub(crate) has_columns: std::sync::atomic::AtomicBool,
    pub(crate) select_version: String,
    pub(crate) insert_execution: String,
    pub(crate) insert_outbox: String,
    pub(crate) insert_processed: String,
    pub(crate) insert_spawn: String,
    pub(crate) upsert_timer: String,
    pub(crate) cancel_timer: String,
    pub(crate) insert_trace: String,
    pub(crate) insert_trace_returning: String,
    pub(crate) cap_trace: String,
    pub(crate) load: String,
    pub(crate) load_for_event: String,
    pub(crate) is_processed: String,
    pub(crate) exists: String,
    pub(crate) pending_outbox: String,
    pub(crate) ack_outbox: String,
    pub(crate) pending_spawns: String,
    pub(crate) ack_spawn: String,
    pub(crate) due_timers: String,
    pub(crate) due_timers_after: String,
    pub(crate) delete_timer: String,
    pub(crate) read_trace: String,
    pub(crate) ids_between: String,
    pub(crate) ids_from: String,
    pub(crate) purge_execution: String,
    pub(crate) purge_companions: [String; 5],
    pub(crate) schema_version: String,
    pub(crate) begin_immediate: String,
    pub(crate) commit: String,
    pub(crate) savepoint: String,
    pub(crate) rollback_to_savepoint: String,
    pub(crate) release_savepoint: String,
    /// `SELECT <summary columns> FROM <executions>`.
    pub(crate) list_select: String,
    /// The executions table's name.
    pub(crate) executions: String,
    /// The prefix of execstore's own names (`""` or `"<prefix>_"`).
    pub(crate) pfx: String,
    pub(crate) status_counts_select: String,
    /// The counts kept by migration 5's triggers (see `schema.rs`), the table's name; since
    /// migration 8 a view of the same name and columns over the graph's `now`.
    pub(crate) counts_table: String,
    /// Whether that table is there (applied at open, or by another writer before a read-only
    /// open): the counts without a time window, search or `where` are read from it.
    pub(crate) has_counts: std::sync::atomic::AtomicBool,
    /// The graph figures kept by migration 7's triggers (see `graph.rs`).
    pub(crate) graph: super::graph::GraphSql,
    /// Whether their tables are there (as `has_counts`): else the graph is scanned.
    pub(crate) has_graph: std::sync::atomic::AtomicBool,
    /// Whether migration 11's (or 12's) index of the active path is there: where executions sit is
    /// read from it (else from `now`, as migrations 8 to 10 kept it).
    pub(crate) has_sitting_index: std::sync::atomic::AtomicBool,
    /// Migration 2's index of the active path (`plan.rs`: a pinned state drives with it),
    /// widened by migration 11 for the graph (`graph.rs`).
    pub(crate) state_index: String,
    /// Whether it is there (a file no writer of this version opened may lack it: a pinned
    /// state is then not counted, which would read every row).
    pub(crate) has_state_index: std::sync::atomic::AtomicBool,
    /// Migration 9's covering index of the `updated` order (its `created` twin comes in the
    /// same transaction).
    pub(crate) listing_index: String,
    /// Whether it is there (a file no writer of this version opened has migration 2's and 6's
    /// indexes instead, which hold no filter: a walk of them reads every row it passes, so
    /// `plan.rs` weighs a walk step as a sort's).
    pub(crate) has_listing_index: std::sync::atomic::AtomicBool,
    /// Set once a listing or the counts met a document that is not JSON (see
    /// [`Stmts::skipping_unreadable`]): from then on they skip such rows.
    pub(crate) skip_unreadable: std::sync::atomic::AtomicBool,
    /// The ids of the executions whose document is not JSON, at most `?1`.
    pub(crate) unreadable: String,
}

impl Stmts {
    /// Reads which of the latest migrations' figures and indexes the database of `conn`
    /// has (all of them once this build migrated it; a read-only open may find an older
    /// file's): the counts, the graph's figures, the active path's and the listing's indexes.
    pub(crate) fn detect_migrated(
        &self,
        conn: &rusqlite::Connection,
        tables: &super::schema::Tables,
        read_only: bool,
    ) -> execstore::Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        let has_counts = crate::db::has_table(conn, &self.counts_table)?;
        self.has_counts.store(has_counts, Relaxed);
        let has_graph = crate::db::has_table(conn, &self.graph.table)?;
        self.has_graph.store(has_graph, Relaxed);
        let has_sitting_index = self.graph.has_sitting_index(conn, &self.state_index)?;
        self.has_sitting_index.store(has_sitting_index, Relaxed);
        let has_state_index = crate::db::has_index(conn, &self.state_index)?;
        self.has_state_index.store(has_state_index, Relaxed);
        let has_listing_index = crate::db::has_index(conn, &self.listing_index)?;
        self.has_listing_index.store(has_listing_index, Relaxed);
        let has_columns: bool = conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = 'execstore_path_json'",
                [&self.executions],
                |row| row.get(0),
            )
            .db()?;
        self.has_columns.store(has_columns, Relaxed);
        // A migrated file that lacks one of the triggers (a hand dropped it; a writer's open
        // makes it again) may hold counts and key columns some writer left stale: a read-only
        // open reads it as a file before them, scanning and reading the documents
        // (`mend.rs`). A writer that does not migrate keeps setting the columns itself.
        if read_only
            && has_columns
            && super::schema::at_latest(conn, tables)?
            && super::mend::triggers_broken(conn, tables)?
        {
            for flag in [&self.has_counts, &self.has_graph, &self.has_columns] {
                flag.store(false, Relaxed);
            }
        }
        Ok(())
    }

    /// A read (built with the document's expressions, as a file before migration 13 has its
    /// indexes) as this file's indexes spell it: the key columns where it has them.
    pub(crate) fn respelled(&self, sql: String) -> String {
        if self.has_columns.load(std::sync::atomic::Ordering::Relaxed) {
            super::keys::respell(&sql)
        } else {
            sql
        }
    }

    /// The execution writes for this file: [`Stmts::keyed`]'s where it has the key columns.
    pub(crate) fn writes(&self) -> Writes<'_> {
        if self.has_columns.load(std::sync::atomic::Ordering::Relaxed) {
            let k = &self.keyed;
            Writes {
                update_cas: &k.update_cas,
                update_cas_moved: &k.update_cas_moved,
                insert_execution: &k.insert_execution,
            }
        } else {
            Writes {
                update_cas: &self.update_cas,
                update_cas_moved: &self.update_cas_moved,
                insert_execution: &self.insert_execution,
            }
        }
    }

    pub(crate) fn new(t: &Tables) -> Self {
        // One row by VALUES, not `INSERT ... SELECT`: SQLite treats an INSERT from a SELECT
        // as a statement that may write many rows, and inside the step's transaction gives it
        // a statement journal (a 64 KiB buffer, allocated and freed with every commit, which
        // made glibc grow and trim the heap each time: a sixth of a W1 step natively).
        let state_index = t.sql("{pfx}execstore_executions_by_active_path");
        let trace_insert = "INSERT INTO {trace} (execution_id, idx, entry) \
             VALUES (?1, COALESCE((SELECT MAX(idx) FROM {trace} WHERE execution_id = ?1), -1) + 1, ?2)";
        Stmts {
            update_cas: t.sql(
                "UPDATE {executions} SET data = ?1, version = ?2 WHERE id = ?3 AND version = ?4 \
                 AND definition_id IS ?5",
            ),
            update_cas_moved: t.sql(
                "UPDATE {executions} SET data = ?1, version = ?2, definition_id = ?5 WHERE id = ?3 AND version = ?4",
            ),
            counts_add: t.sql(
                "INSERT INTO {pfx}execstore_graph_now (definition_id, active_path, status, root, n) \
                 VALUES (?1, '', ?2, ?3, ?4) \
                 ON CONFLICT (definition_id, active_path, status, root) DO UPDATE SET n = n + excluded.n",
            ),
            counted_as: t.sql(
                "SELECT definition_id, COALESCE(json_extract(data, '$.status'), ''), \
                 json_extract(data, '$.parent_id') IS NULL FROM {executions} \
                 WHERE id = ?1 AND version = ?2 AND json_valid(data, 2)",
            ),
            counts_triggers: ["insert", "update", "delete"]
                .map(|op| t.sql(&format!("{{pfx}}execstore_graph_executions_{op}"))),
            key_triggers: super::keys::trigger_names(&t.pfx),
            keyed: super::keys::KeyedWrites::new(&t.sql("{executions}")),
            has_columns: std::sync::atomic::AtomicBool::new(false),
            select_version: t.sql("SELECT version FROM {executions} WHERE id = ?1"),
            insert_execution: t
                .sql("INSERT INTO {executions} (id, definition_id, data, version) VALUES (?1, ?2, ?3, ?4)"),
            insert_outbox: t.sql("INSERT INTO {outbox} (target_id, event) VALUES (?1, ?2)"),
            insert_processed: t
                .sql("INSERT OR IGNORE INTO {processed_events} (execution_id, event_id) VALUES (?1, ?2)"),
            insert_spawn: t.sql(
                "INSERT INTO {spawns} (parent_id, child_id, root_path, context) VALUES (?1, ?2, ?3, ?4)",
            ),
            upsert_timer: t.sql(
                "INSERT INTO {timers} (execution_id, path, fire_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(execution_id, path) DO UPDATE SET fire_at = excluded.fire_at",
            ),
            cancel_timer: t.sql("DELETE FROM {timers} WHERE execution_id = ?1 AND path = ?2"),
            insert_trace: t.sql(trace_insert),
            insert_trace_returning: t.sql(&format!("{trace_insert} RETURNING idx")),
            cap_trace: t.sql(
                "DELETE FROM {trace} WHERE execution_id = ?1 AND idx <= \
                 (SELECT MAX(idx) FROM {trace} WHERE execution_id = ?1) - ?2",
            ),
            load: t.sql("SELECT data FROM {executions} WHERE id = ?1"),
            load_for_event: t.sql(
                "SELECT (SELECT data FROM {executions} WHERE id = ?1), \
                 EXISTS(SELECT 1 FROM {processed_events} WHERE execution_id = ?1 AND event_id = ?2)",
            ),
            is_processed: t.sql("SELECT 1 FROM {processed_events} WHERE execution_id = ?1 AND event_id = ?2"),
            exists: t.sql("SELECT 1 FROM {executions} WHERE id = ?1"),
            pending_outbox: t
                .sql("SELECT seq, target_id, event FROM {outbox} WHERE seq > ?1 ORDER BY seq LIMIT ?2"),
            ack_outbox: t.sql("DELETE FROM {outbox} WHERE seq = ?1"),
            pending_spawns: t.sql(
                "SELECT seq, parent_id, child_id, root_path, context FROM {spawns} \
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            ),
            ack_spawn: t.sql("DELETE FROM {spawns} WHERE seq = ?1"),
            due_timers: t.sql(
                "SELECT execution_id, path, fire_at FROM {timers} WHERE fire_at <= ?1 \
                 ORDER BY fire_at, execution_id, path LIMIT ?2",
            ),
            due_timers_after: t.sql(
                "SELECT execution_id, path, fire_at FROM {timers} WHERE fire_at <= ?1 \
                 AND (fire_at, execution_id, path) > (?2, ?3, ?4) \
                 ORDER BY fire_at, execution_id, path LIMIT ?5",
            ),
            delete_timer: t
                .sql("DELETE FROM {timers} WHERE execution_id = ?1 AND path = ?2 AND fire_at = ?3"),
            read_trace: t.sql("SELECT idx, entry FROM {trace} WHERE execution_id = ?1 ORDER BY idx"),
            ids_between: t.sql("SELECT id FROM {executions} WHERE id >= ?1 AND id < ?2 ORDER BY id"),
            ids_from: t.sql("SELECT id FROM {executions} WHERE id >= ?1 ORDER BY id"),
            purge_execution: t.sql("DELETE FROM {executions} WHERE id = ?1 AND version = ?2"),
            // harel's `_PURGE_COMPANIONS_SQL`, in its order.
            purge_companions: [
                t.sql("DELETE FROM {processed_events} WHERE execution_id = ?1"),
                t.sql("DELETE FROM {trace} WHERE execution_id = ?1"),
                t.sql("DELETE FROM {timers} WHERE execution_id = ?1"),
                t.sql("DELETE FROM {outbox} WHERE target_id = ?1"),
                t.sql("DELETE FROM {spawns} WHERE parent_id = ?1"),
            ],
            schema_version: t.sql(super::schema::SCHEMA_VERSION),
            begin_immediate: "BEGIN IMMEDIATE".into(),
            commit: "COMMIT".into(),
            // Around each item of a batch.
            savepoint: "SAVEPOINT execstore_item".into(),
            rollback_to_savepoint: "ROLLBACK TO execstore_item".into(),
            release_savepoint: "RELEASE execstore_item".into(),
            list_select: t.sql(&format!("SELECT {LIST_COLUMNS} FROM {{executions}}")),
            executions: t.sql("{executions}"),
            pfx: t.pfx.clone(),
            status_counts_select: t.sql("SELECT json_extract(data,'$.status'), COUNT(*) FROM {executions}"),
            counts_table: t.sql("{pfx}execstore_counts"),
            has_counts: std::sync::atomic::AtomicBool::new(false),
            graph: super::graph::GraphSql::new(t, &state_index),
            has_graph: std::sync::atomic::AtomicBool::new(false),
            has_sitting_index: std::sync::atomic::AtomicBool::new(false),
            state_index,
            has_state_index: std::sync::atomic::AtomicBool::new(false),
            listing_index: t.sql("{pfx}execstore_executions_listing_updated"),
            has_listing_index: std::sync::atomic::AtomicBool::new(false),
            skip_unreadable: std::sync::atomic::AtomicBool::new(false),
            unreadable: t.sql(
                "SELECT id, json_error_position(data) FROM {executions} WHERE NOT json_valid(data) ORDER BY id LIMIT ?1",
            ),
        }
    }

    /// `sql` (a listing or the counts) over the rows whose document is JSON only, its
    /// `json_extract`s guarded too (SQLite may order the terms as it likes). Such a statement
    /// matches no expression index, but a file with a document that is not JSON has none:
    /// building one over that row fails, as does writing the row where one exists.
    pub(crate) fn skipping_unreadable(&self, sql: &str) -> String {
        let t = &self.executions;
        sql.replace(
            &format!(" FROM {t}"),
            &format!(" FROM (SELECT * FROM {t} WHERE json_valid(data)) AS {t}"),
        )
        .replace(
            "json_extract(data,",
            "json_extract(CASE WHEN json_valid(data) THEN data END,",
        )
    }

    /// The listing statement for one shape of filter. Its parameters, in order: the cursor id
    /// (if `after`), the definition id (if `definition`), `statuses` status strings, the limit.
    /// The filter expressions are spelled exactly as the migration's indexes are, so SQLite
    /// uses them.
    pub(crate) fn list(&self, after: bool, definition: bool, statuses: usize, roots_only: bool) -> String {
        let mut sql = String::with_capacity(self.list_select.len() + 160);
        sql.push_str(&self.list_select);
        let mut sep = " WHERE ";
        if after {
            sql.push_str(sep);
            sql.push_str("id > ?");
            sep = " AND ";
        }
        if definition {
            sql.push_str(sep);
            sql.push_str("definition_id = ?");
            sep = " AND ";
        }
        if statuses > 0 {
            sql.push_str(sep);
            sql.push_str("json_extract(data,'$.status') IN (?");
            for _ in 1..statuses {
                sql.push_str(", ?");
            }
            sql.push(')');
            sep = " AND ";
        }
        if roots_only {
            sql.push_str(sep);
            sql.push_str("json_extract(data,'$.parent_id') IS NULL");
        }
        sql.push_str(" ORDER BY id LIMIT ?");
        sql
    }
}
