//! Migration 7: the figures a definition's graph is drawn from
//! ([`ExecutionStore::graph_figures`](execstore::ExecutionStore::graph_figures)), kept up to
//! date by triggers on harel's tables, so that every writer (this store, harel 0.9 itself, a
//! hand-written statement) keeps them right and the graph reads a few rows per definition
//! instead of every execution and trace.
//!
//! - `{pfx}execstore_graph_now`: executions per definition, active path and status;
//! - `{pfx}execstore_graph_steps`: stored trace steps per definition, `from_path`, `to_path`
//!   and `event_kind`;
//! - `{pfx}execstore_graph_guards`: the items of the steps' `guards` arrays per definition,
//!   `from_path`, `to_path` and guard.
//!
//! Values are the documents' JSON text (`->`), `''` when absent, so the reader shows them
//! as a scan does (`execstore::executions::graph`). Each change is an upsert adding +1 or -1
//! (a row falling to 0 stays). A trace step counts under the definition of its execution:
//! written before its execution, it is counted when the execution is inserted; the
//! execution's delete (a purge deletes it before its trace) takes its steps out, and a step
//! deleted after finds no execution and changes nothing. A document that is not JSON is not
//! counted (as the listing skips it); a trace step that is not JSON is read with `NaN`,
//! `Infinity` and `-Infinity` (which Python's `json.dumps` writes) as `null`. Only SQLite
//! 3.40 features: harel's Python may write the file with an old SQLite.
//!
//! Since migration 10 the steps' and guards' tables are gone (the graph reads a bounded
//! number of traces), and since migration 11 `now` holds the counts only: where executions
//! sit is read from the active path's index ([`SITTING_INDEX`]), which every writer keeps.
//! Since migration 12 ([`READ_STATEMENTS`]) the counts count every document SQLite's JSON
//! functions read (JSON5 too), and this store's writer keeps them in its own statements.

use execstore::executions::FiguresTally;
use execstore::Result;
use std::collections::HashMap;

use rusqlite::Connection;

use crate::db::error::Db;

use super::schema::{Sql, Tables};

/// A trace row's `entry` as the triggers read it: as it is when it is JSON (the parse is
/// cached for the `->` that follow), else with `NaN`, `Infinity` and `-Infinity` (which
/// Python's `json.dumps` writes and JSON has not) as `null`, so that every SQLite from 3.40
/// on (harel's Python may bring an old one) takes the same steps as JSON.
macro_rules! entry {
    ($row:literal) => {
        concat!(
            "CASE WHEN json_valid(",
            $row,
            ".entry) THEN ",
            $row,
            ".entry ELSE replace(replace(replace(",
            $row,
            ".entry, '-Infinity', 'null'), 'Infinity', 'null'), 'NaN', 'null') END"
        )
    };
}

/// The upsert of one execution's figure into `now`, from the row `$row` (`new`/`old`), adding
/// `$n`.
macro_rules! now_delta {
    ($row:literal, $n:literal) => {
        concat!(
            "INSERT INTO {pfx}execstore_graph_now (definition_id, active_path, status, n) SELECT ",
            $row,
            ".definition_id, COALESCE(",
            $row,
            ".data -> '$.active_path', ''), COALESCE(json_extract(",
            $row,
            ".data, '$.status'), ''), ",
            $n,
            " WHERE json_valid(",
            $row,
            ".data) ",
            "ON CONFLICT (definition_id, active_path, status) DO UPDATE SET n = n + excluded.n;"
        )
    };
}

/// The upsert of one execution's figure into migration 8's `now`, from the row `$row`
/// (`new`/`old`) at the active path `$path` (an SQL expression), adding `$n`.
macro_rules! rooted_delta {
    ($row:literal, $path:expr, $n:literal) => {
        concat!(
            "INSERT INTO {pfx}execstore_graph_now (definition_id, active_path, status, root, n) SELECT ",
            $row,
            ".definition_id, ",
            $path,
            ", COALESCE(json_extract(",
            $row,
            ".data, '$.status'), ''), json_extract(",
            $row,
            ".data, '$.parent_id') IS NULL, ",
            $n,
            " WHERE json_valid(",
            $row,
            ".data) ",
            "ON CONFLICT (definition_id, active_path, status, root) DO UPDATE SET n = n + excluded.n;"
        )
    };
}

/// [`now_delta!`] for migration 8's `now`, which also keys each figure by root-ness (1 for an
/// execution without a parent), so that it holds the counts by definition and status too.
macro_rules! rooted_now_delta {
    ($row:literal, $n:literal) => {
        rooted_delta!(
            $row,
            concat!("COALESCE(", $row, ".data -> '$.active_path', '')"),
            $n
        )
    };
}

/// The upserts of one trace row's step and guards (the row `$row`, `new`/`old`), under its
/// execution's definition, adding `$n`.
macro_rules! step_delta {
    ($row:literal, $n:literal) => {
        concat!(
            "INSERT INTO {pfx}execstore_graph_steps (definition_id, from_path, to_path, event, n) \
             SELECT definition_id, COALESCE(",
            entry!($row),
            " -> '$.from_path', ''), COALESCE(",
            entry!($row),
            " -> '$.to_path', ''), COALESCE(",
            entry!($row),
            " -> '$.event_kind', ''), ",
            $n,
            " FROM {executions} WHERE id = ",
            $row,
            ".execution_id \
             ON CONFLICT (definition_id, from_path, to_path, event) DO UPDATE SET n = n + excluded.n; \
             INSERT INTO {pfx}execstore_graph_guards (definition_id, from_path, to_path, guard, n) \
             SELECT e.definition_id, COALESCE(",
            entry!($row),
            " -> '$.from_path', ''), COALESCE(",
            entry!($row),
            " -> '$.to_path', ''), ",
            entry!($row),
            " -> g.fullkey, ",
            $n,
            " FROM {executions} AS e, json_each(",
            entry!($row),
            ", '$.guards') AS g \
             WHERE e.id = ",
            $row,
            ".execution_id AND json_type(",
            entry!($row),
            ", '$.guards') = 'array' \
             ON CONFLICT (definition_id, from_path, to_path, guard) DO UPDATE SET n = n + excluded.n;"
        )
    };
}

/// The upserts of every stored step and guard of execution `$row.id` under the definition
/// `$row.definition_id` (`$row`: `new`/`old`), adding `$n` for each.
macro_rules! trace_delta {
    ($row:literal, $n:literal) => {
        concat!(
            "INSERT INTO {pfx}execstore_graph_steps (definition_id, from_path, to_path, event, n) \
             SELECT ",
            $row,
            ".definition_id, COALESCE(",
            entry!("t"),
            " -> '$.from_path', ''), \
             COALESCE(",
            entry!("t"),
            " -> '$.to_path', ''), COALESCE(",
            entry!("t"),
            " -> '$.event_kind', ''), ",
            $n,
            " FROM {trace} AS t WHERE t.execution_id = ",
            $row,
            ".id AND json_valid(",
            entry!("t"),
            ") \
             ON CONFLICT (definition_id, from_path, to_path, event) DO UPDATE SET n = n + excluded.n; \
             INSERT INTO {pfx}execstore_graph_guards (definition_id, from_path, to_path, guard, n) \
             SELECT ",
            $row,
            ".definition_id, COALESCE(",
            entry!("t"),
            " -> '$.from_path', ''), \
             COALESCE(",
            entry!("t"),
            " -> '$.to_path', ''), ",
            entry!("t"),
            " -> g.fullkey, ",
            $n,
            " FROM {trace} AS t, json_each(",
            entry!("t"),
            ", '$.guards') AS g WHERE t.execution_id = ",
            $row,
            ".id AND json_valid(",
            entry!("t"),
            ") AND json_type(",
            entry!("t"),
            ", '$.guards') = 'array' \
             ON CONFLICT (definition_id, from_path, to_path, guard) DO UPDATE SET n = n + excluded.n;"
        )
    };
}

/// Migration 7's statements: the tables, their triggers and their first fill.
pub(crate) const GRAPH_STATEMENTS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS {pfx}execstore_graph_now \
     (definition_id TEXT NOT NULL, active_path TEXT NOT NULL, status TEXT NOT NULL, n INTEGER NOT NULL, \
     PRIMARY KEY (definition_id, active_path, status)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS {pfx}execstore_graph_steps \
     (definition_id TEXT NOT NULL, from_path TEXT NOT NULL, to_path TEXT NOT NULL, event TEXT NOT NULL, \
     n INTEGER NOT NULL, PRIMARY KEY (definition_id, from_path, to_path, event)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS {pfx}execstore_graph_guards \
     (definition_id TEXT NOT NULL, from_path TEXT NOT NULL, to_path TEXT NOT NULL, guard TEXT NOT NULL, \
     n INTEGER NOT NULL, PRIMARY KEY (definition_id, from_path, to_path, guard)) WITHOUT ROWID",
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_insert AFTER INSERT ON {executions} BEGIN ",
        now_delta!("new", "1"),
        trace_delta!("new", "1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_delete AFTER DELETE ON {executions} BEGIN ",
        now_delta!("old", "-1"),
        trace_delta!("old", "-1"),
        " END"
    ),
    // Most steps move the active path, some the status; a step that moves neither runs none
    // of it (its WHEN is false).
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_update AFTER UPDATE OF definition_id, data \
         ON {executions} WHEN NOT json_valid(old.data) OR NOT json_valid(new.data) \
         OR old.definition_id IS NOT new.definition_id \
         OR json_extract(old.data, '$.status') IS NOT json_extract(new.data, '$.status') \
         OR (old.data -> '$.active_path') IS NOT (new.data -> '$.active_path') BEGIN ",
        now_delta!("old", "-1"),
        now_delta!("new", "1"),
        " END"
    ),
    // An execution moved to another definition (by hand) takes its steps along.
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_moved AFTER UPDATE OF id, definition_id \
         ON {executions} WHEN old.id IS NOT new.id OR old.definition_id IS NOT new.definition_id BEGIN ",
        trace_delta!("old", "-1"),
        trace_delta!("new", "1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_trace_insert AFTER INSERT ON {trace} \
         WHEN json_valid(", entry!("new"), ") BEGIN ",
        step_delta!("new", "1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_trace_delete AFTER DELETE ON {trace} \
         WHEN json_valid(", entry!("old"), ") BEGIN ",
        step_delta!("old", "-1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_trace_update_old AFTER UPDATE OF execution_id, entry \
         ON {trace} WHEN json_valid(", entry!("old"), ") BEGIN ",
        step_delta!("old", "-1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_trace_update_new AFTER UPDATE OF execution_id, entry \
         ON {trace} WHEN json_valid(", entry!("new"), ") BEGIN ",
        step_delta!("new", "1"),
        " END"
    ),
    "DELETE FROM {pfx}execstore_graph_now",
    "DELETE FROM {pfx}execstore_graph_steps",
    "DELETE FROM {pfx}execstore_graph_guards",
    "INSERT INTO {pfx}execstore_graph_now (definition_id, active_path, status, n) \
     SELECT definition_id, COALESCE(data -> '$.active_path', ''), COALESCE(json_extract(data, '$.status'), ''), \
     COUNT(*) FROM {executions} WHERE json_valid(data) GROUP BY 1, 2, 3",
    concat!(
    "INSERT INTO {pfx}execstore_graph_steps (definition_id, from_path, to_path, event, n) \
     SELECT e.definition_id, COALESCE(", entry!("t"), " -> '$.from_path', ''), COALESCE(", entry!("t"), " -> '$.to_path', ''), \
     COALESCE(", entry!("t"), " -> '$.event_kind', ''), COUNT(*) FROM {trace} AS t JOIN {executions} AS e \
     ON e.id = t.execution_id WHERE json_valid(", entry!("t"), ") GROUP BY 1, 2, 3, 4"
    ),
    concat!(
    "INSERT INTO {pfx}execstore_graph_guards (definition_id, from_path, to_path, guard, n) \
     SELECT e.definition_id, COALESCE(", entry!("t"), " -> '$.from_path', ''), COALESCE(", entry!("t"), " -> '$.to_path', ''), \
     ", entry!("t"), " -> g.fullkey, COUNT(*) FROM {trace} AS t JOIN {executions} AS e ON e.id = t.execution_id, \
     json_each(", entry!("t"), ", '$.guards') AS g \
     WHERE json_valid(", entry!("t"), ") AND json_type(", entry!("t"), ", '$.guards') = 'array' GROUP BY 1, 2, 3, 4"
    ),
];

/// Migration 8's statements: the counts by definition, status and root-ness (migration 5's
/// table and its three triggers) folded into `now`, which gains a `root` key: one upsert per
/// changed figure where there were two (a new execution wrote both tables). The counts are
/// then a view summing `now` over the active paths (a few rows per definition), read by the
/// same statements as the table was. The executions' three triggers on `now` are created
/// again for the new key (the update's also fires when the parent changes); the steps'
/// and guards' are unchanged. `now` is filled again from the rows present, in this
/// transaction.
pub(crate) const ROOTED_NOW_STATEMENTS: &[&str] = &[
    "DROP TRIGGER IF EXISTS {pfx}execstore_counts_insert",
    "DROP TRIGGER IF EXISTS {pfx}execstore_counts_update",
    "DROP TRIGGER IF EXISTS {pfx}execstore_counts_delete",
    "DROP TABLE IF EXISTS {pfx}execstore_counts",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_insert",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_delete",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_update",
    "DROP TABLE IF EXISTS {pfx}execstore_graph_now",
    "CREATE TABLE IF NOT EXISTS {pfx}execstore_graph_now \
     (definition_id TEXT NOT NULL, active_path TEXT NOT NULL, status TEXT NOT NULL, root INTEGER NOT NULL, \
     n INTEGER NOT NULL, PRIMARY KEY (definition_id, active_path, status, root)) WITHOUT ROWID",
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_insert AFTER INSERT ON {executions} BEGIN ",
        rooted_now_delta!("new", "1"),
        trace_delta!("new", "1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_delete AFTER DELETE ON {executions} BEGIN ",
        rooted_now_delta!("old", "-1"),
        trace_delta!("old", "-1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_update AFTER UPDATE OF definition_id, data \
         ON {executions} WHEN NOT json_valid(old.data) OR NOT json_valid(new.data) \
         OR old.definition_id IS NOT new.definition_id \
         OR json_extract(old.data, '$.status') IS NOT json_extract(new.data, '$.status') \
         OR (old.data -> '$.active_path') IS NOT (new.data -> '$.active_path') \
         OR (json_extract(old.data, '$.parent_id') IS NULL) IS NOT (json_extract(new.data, '$.parent_id') IS NULL) BEGIN ",
        rooted_now_delta!("old", "-1"),
        rooted_now_delta!("new", "1"),
        " END"
    ),
    "INSERT INTO {pfx}execstore_graph_now (definition_id, active_path, status, root, n) \
     SELECT definition_id, COALESCE(data -> '$.active_path', ''), COALESCE(json_extract(data, '$.status'), ''), \
     json_extract(data, '$.parent_id') IS NULL, COUNT(*) FROM {executions} WHERE json_valid(data) GROUP BY 1, 2, 3, 4",
    "CREATE VIEW IF NOT EXISTS {pfx}execstore_counts AS SELECT definition_id, status, root, SUM(n) AS n \
     FROM {pfx}execstore_graph_now GROUP BY definition_id, status, root",
];

/// Migration 10's statements: the steps' and guards' figures are no longer kept. Their five
/// triggers (a trace row's insert, delete and update, an execution moved to another
/// definition) and their two tables go, and the executions' insert and delete triggers are
/// created again with `now`'s upsert alone. The graph reads the steps from the traces of a
/// bounded number of executions instead
/// ([`execstore::executions::graph::add_recent_traces`]), as on every backend; where
/// executions sit, and with it the counts, stays kept (docs/scale.md, "The steps no longer
/// kept").
pub(crate) const UNKEPT_STEPS_STATEMENTS: &[&str] = &[
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_insert",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_delete",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_update_old",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_update_new",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_moved",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_insert",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_delete",
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_insert AFTER INSERT ON {executions} BEGIN ",
        rooted_now_delta!("new", "1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_delete AFTER DELETE ON {executions} BEGIN ",
        rooted_now_delta!("old", "-1"),
        " END"
    ),
    "DROP TABLE IF EXISTS {pfx}execstore_graph_steps",
    "DROP TABLE IF EXISTS {pfx}execstore_graph_guards",
];

/// [`rooted_now_delta!`] with every execution at the active path `''`: migration 11's `now`
/// keeps the counts by definition, status and root-ness only.
macro_rules! counts_delta {
    ($row:literal, $n:literal) => {
        rooted_delta!($row, "''", $n)
    };
}

/// Migration 11's index: migration 2's index of the active path (the state filter's), with
/// what the graph reads of where executions sit after the id: the definition, the status,
/// the active path's JSON text and whether the document is JSON. The graph reads it without
/// a document ([`GraphSql::sitting`]); a step rewrites this entry anyway (its path, and the
/// document, change), so keeping where executions sit costs no statement of its own.
pub(crate) const SITTING_INDEX: &str = "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_active_path \
     ON {executions} (json_extract(data,'$.active_path'), id, definition_id, json_extract(data,'$.status'), \
     data -> '$.active_path', json_valid(data))";

/// Migration 11's statements: where executions sit is no longer kept by triggers but read
/// from [`SITTING_INDEX`]; `now` keeps the counts only (every row at the active path
/// `''`), so a step that moves the active path and keeps its status runs no trigger
/// statement (the update trigger's `WHEN` is false). `now` is filled again from the rows
/// present, in this transaction.
pub(crate) const SITTING_STATEMENTS: &[&str] = &[
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_insert",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_delete",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_update",
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_insert AFTER INSERT ON {executions} BEGIN ",
        counts_delta!("new", "1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_delete AFTER DELETE ON {executions} BEGIN ",
        counts_delta!("old", "-1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_update AFTER UPDATE OF definition_id, data \
         ON {executions} WHEN NOT json_valid(old.data) OR NOT json_valid(new.data) \
         OR old.definition_id IS NOT new.definition_id \
         OR json_extract(old.data, '$.status') IS NOT json_extract(new.data, '$.status') \
         OR (json_extract(old.data, '$.parent_id') IS NULL) IS NOT (json_extract(new.data, '$.parent_id') IS NULL) BEGIN ",
        counts_delta!("old", "-1"),
        counts_delta!("new", "1"),
        " END"
    ),
    "DELETE FROM {pfx}execstore_graph_now",
    "INSERT INTO {pfx}execstore_graph_now (definition_id, active_path, status, root, n) \
     SELECT definition_id, '', COALESCE(json_extract(data, '$.status'), ''), \
     json_extract(data, '$.parent_id') IS NULL, COUNT(*) FROM {executions} WHERE json_valid(data) GROUP BY 1, 3, 4",
    "DROP INDEX IF EXISTS {pfx}execstore_executions_by_active_path",
    SITTING_INDEX,
];

/// [`counts_delta!`] without its `json_valid` guard (migration 12): one row by `VALUES`.
macro_rules! read_delta {
    ($row:literal, $n:literal) => {
        concat!(
            "INSERT INTO {pfx}execstore_graph_now (definition_id, active_path, status, root, n) VALUES (",
            $row,
            ".definition_id, '', COALESCE(json_extract(",
            $row,
            ".data, '$.status'), ''), json_extract(",
            $row,
            ".data, '$.parent_id') IS NULL, ",
            $n,
            ") ON CONFLICT (definition_id, active_path, status, root) DO UPDATE SET n = n + excluded.n;"
        )
    };
}

/// Migration 12's index: [`SITTING_INDEX`] without `json_valid(data)`.
pub(crate) const READ_INDEX: &str = "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_active_path \
     ON {executions} (json_extract(data,'$.active_path'), id, definition_id, json_extract(data,'$.status'), \
     data -> '$.active_path')";

/// Migration 12's emptying of `now`, before [`NOW_FILL`].
pub(crate) const NOW_CLEAR: &str = "DELETE FROM {pfx}execstore_graph_now";

/// Migration 12's fill of `now` from the rows present: the counts of every document SQLite
/// reads as JSON (JSON5 too). A writer's open runs both again when a hand dropped one of
/// the counts' triggers (`mend.rs`).
pub(crate) const NOW_FILL: &str = "INSERT INTO {pfx}execstore_graph_now (definition_id, active_path, status, root, n) \
     SELECT definition_id, '', COALESCE(json_extract(data, '$.status'), ''), \
     json_extract(data, '$.parent_id') IS NULL, COUNT(*) FROM {executions} WHERE json_valid(data, 2) GROUP BY 1, 3, 4";

/// Migration 12's statements. The counts and where executions sit count every document
/// SQLite's JSON functions read, as the listing and a scan do: JSON5 too, so a document with
/// Python's `NaN` (migration 11 left it out: `json_valid` is RFC 8259 only). The triggers
/// read each document without a guard, as the expression indexes do, so a document that is
/// not even JSON5 is refused by their write (the indexes refuse it already) and a step runs
/// no uncached parse (`json_valid` parses the document again at each call). They stay for
/// every writer but this store's own, which keeps the same counts in its statements with
/// its triggers off (`SqliteStore::keep_counts`). `now` is filled again from the rows
/// present, and the active path's index built again without its `json_valid` column.
pub(crate) const READ_STATEMENTS: &[&str] = &[
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_insert",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_delete",
    "DROP TRIGGER IF EXISTS {pfx}execstore_graph_executions_update",
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_insert AFTER INSERT ON {executions} BEGIN ",
        read_delta!("new", "1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_delete AFTER DELETE ON {executions} BEGIN ",
        read_delta!("old", "-1"),
        " END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_graph_executions_update AFTER UPDATE OF definition_id, data \
         ON {executions} WHEN old.definition_id IS NOT new.definition_id \
         OR json_extract(old.data, '$.status') IS NOT json_extract(new.data, '$.status') \
         OR (json_extract(old.data, '$.parent_id') IS NULL) IS NOT (json_extract(new.data, '$.parent_id') IS NULL) BEGIN ",
        read_delta!("old", "-1"),
        read_delta!("new", "1"),
        " END"
    ),
    NOW_CLEAR,
    NOW_FILL,
    "DROP INDEX IF EXISTS {pfx}execstore_executions_by_active_path",
    READ_INDEX,
];

/// The reads of where one definition's executions sit (`?1`): from migration 11's index
/// ([`SITTING_INDEX`]), or as migrations 8 to 10's `now` kept it (a file this build did not
/// migrate, opened read-only).
#[derive(Debug)]
pub(crate) struct GraphSql {
    /// The table whose presence says migration 7 was applied.
    pub(crate) table: String,
    /// Migration 8's read of `now`: active path, status and how many.
    pub(crate) read: String,
    /// Whether the active path's index holds what the graph reads (`?1`: its name): five key
    /// columns (migration 12) or six (migration 11), not migration 2's two.
    pub(crate) widened: String,
    /// Migration 11's read: each of the definition's executions' active path (its JSON
    /// text) and status, from the index alone (migration 12's, or 11's on a file this build
    /// opened read-only before any writer: it then counts a document with `NaN` that 11's
    /// counts left out) (each expression spelled as the index has it,
    /// so SQLite reads no document). Summed here, not by `GROUP BY`: SQLite's grouping
    /// sorts the expressions it evaluates from the document.
    pub(crate) sitting: String,
    /// [`GraphSql::sitting`] respelled for a file with migration 13's key columns.
    pub(crate) sitting_keyed: String,
}

impl GraphSql {
    /// The statements, `index` being the active path's index (the state filter's too).
    pub(crate) fn new(t: &Tables, index: &str) -> Self {
        let sitting = format!(
            "SELECT data -> '$.active_path', json_extract(data,'$.status') FROM {} INDEXED BY {index} \
             WHERE definition_id = ?1",
            t.sql("{executions}")
        );
        GraphSql {
            table: t.sql("{pfx}execstore_graph_now"),
            read: t.sql(
                "SELECT active_path, status, SUM(n) FROM {pfx}execstore_graph_now \
                 WHERE definition_id = ?1 GROUP BY active_path, status HAVING SUM(n) <> 0",
            ),
            widened: "SELECT COUNT(*) >= 5 FROM pragma_index_info(?1)".to_owned(),
            sitting_keyed: super::keys::respell(&sitting),
            sitting,
        }
    }

    /// Whether the database of `conn` has migration 11's index (`index`: its name).
    pub(crate) fn has_sitting_index(&self, conn: &Connection, index: &str) -> Result<bool> {
        conn.query_row(&self.widened, [index], |row| row.get(0)).db()
    }

    /// Where the executions of `definition` sit (no step added yet): from migration 11's
    /// index when `indexed` (its key columns when `keyed`), else as `now` kept it.
    pub(crate) fn now(
        &self,
        conn: &Connection,
        definition: &str,
        indexed: bool,
        keyed: bool,
    ) -> Result<FiguresTally> {
        let mut tally = FiguresTally::new();
        if indexed {
            let mut sums: HashMap<String, HashMap<String, i64>> = HashMap::new();
            let sitting = if keyed { &self.sitting_keyed } else { &self.sitting };
            let mut stmt = conn.prepare_cached(sitting).db()?;
            let mut rows = stmt.query([definition]).db()?;
            while let Some(row) = rows.next().db()? {
                let path = text_or_empty(row, 0)?;
                let status = text_or_empty(row, 1)?;
                let by_status = match sums.get_mut(path) {
                    Some(by_status) => by_status,
                    None => sums.entry(path.to_owned()).or_default(),
                };
                match by_status.get_mut(status) {
                    Some(n) => *n += 1,
                    None => {
                        by_status.insert(status.to_owned(), 1);
                    }
                }
            }
            for (path, by_status) in &sums {
                for (status, n) in by_status {
                    tally.add_stored_now(path, status, *n)?;
                }
            }
            return Ok(tally);
        }
        let mut stmt = conn.prepare_cached(&self.read).db()?;
        let mut rows = stmt.query([definition]).db()?;
        while let Some(row) = rows.next().db()? {
            let (a, b): (String, String) = (row.get(0).db()?, row.get(1).db()?);
            tally.add_stored_now(&a, &b, row.get(2).db()?)?;
        }
        Ok(tally)
    }
}

/// Column `i` of `row` as text, `""` when `NULL`; anything else is a damaged index.
fn text_or_empty<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> Result<&'r str> {
    row.get_ref(i)
        .db()?
        .as_str_or_null()
        .map(Option::unwrap_or_default)
        .map_err(|e| execstore::StoreError::Corrupt {
            what: "the active-path index".into(),
            reason: e.to_string(),
        })
}
