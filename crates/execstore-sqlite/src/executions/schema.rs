//! Table names, harel 0.9's tables and execstore's own migrations.

use execstore::{Result, StoreError};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::db::error::Db;

/// The names of everything the store creates, for one prefix (shared by the SQL backends).
pub(crate) use execstore::kit::names::TableNames as Tables;

/// Fills a statement template with the table names.
pub(crate) trait Sql {
    /// `template` with `{executions}`, `{outbox}`, ..., `{pfx}` filled in.
    fn sql(&self, template: &str) -> String;
}

impl Sql for Tables {
    fn sql(&self, template: &str) -> String {
        self.fill(template)
    }
}

/// harel 0.9's SQLite store schema (`harel.engine.schema._SQLITE_STORE`), statement for
/// statement, so either program opens the other's file.
const HAREL_TABLES: [&str; 6] = [
    "CREATE TABLE IF NOT EXISTS {executions} \
     (id TEXT PRIMARY KEY, definition_id TEXT NOT NULL, data TEXT NOT NULL, version INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {outbox} \
     (seq INTEGER PRIMARY KEY AUTOINCREMENT, target_id TEXT, event TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {processed_events} \
     (execution_id TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (execution_id, event_id))",
    "CREATE TABLE IF NOT EXISTS {timers} \
     (execution_id TEXT NOT NULL, path TEXT NOT NULL, fire_at REAL NOT NULL, \
     PRIMARY KEY (execution_id, path))",
    "CREATE TABLE IF NOT EXISTS {spawns} \
     (seq INTEGER PRIMARY KEY AUTOINCREMENT, parent_id TEXT NOT NULL, child_id TEXT NOT NULL, \
     root_path TEXT NOT NULL, context TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {trace} \
     (execution_id TEXT NOT NULL, idx INTEGER NOT NULL, entry TEXT NOT NULL, \
     PRIMARY KEY (execution_id, idx))",
];

/// harel 0.9's six store tables under `t`'s prefix, as harel's own DDL creates them.
pub(crate) fn harel_tables(t: &Tables) -> Vec<String> {
    HAREL_TABLES.iter().map(|stmt| t.sql(stmt)).collect()
}

/// execstore's record of the migrations it applied. `applied_at` is SQLite's clock (UTC).
const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS {migrations} \
     (version INTEGER PRIMARY KEY, description TEXT NOT NULL, checksum TEXT NOT NULL, \
     applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))";

pub(crate) use execstore::kit::migration::Migration;

/// The migration from which the store's writer keeps the counts itself, with its
/// connection's triggers off (`SqliteStore::keep_counts`).
pub(crate) const WRITER_KEEPS_COUNTS: i32 = 12;

/// Every migration this build knows, in order.
///
/// The listing and sweep queries spell the indexed expressions exactly as written here
/// (`json_extract(data,'$.status')`, ...); SQLite matches expression indexes textually.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        // Only indexes whose reads need them: every index costs each commit a page write. Roots
        // are most executions (walking ids finds a page of them fast), and purge is rare while a
        // relay keeps the outbox and spawns short, so those have none.
        description: "indexes for listing by status and definition, and the timer sweep",
        statements: &[
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_status \
         ON {executions} (json_extract(data,'$.status'), id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_definition \
         ON {executions} (definition_id, id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_timers_by_fire_at \
         ON {timers} (fire_at, execution_id, path)",
        ],
    },
    Migration {
        version: 2,
        // The listing's time windows and search (`ListQuery::created` ... `search`). Each costs a
        // commit an index entry; `created_at` and `finished_at` rarely change, so theirs rarely
        // move. harel's own writes keep them valid (expressions over `data` only).
        description: "indexes for listing by created, updated and finished time and by active path",
        statements: &[
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_created \
         ON {executions} (json_extract(data,'$.created_at'), id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_updated \
         ON {executions} (json_extract(data,'$.updated_at'), id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_finished \
         ON {executions} (json_extract(data,'$.finished_at'), id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_active_path \
         ON {executions} (json_extract(data,'$.active_path'), id)",
        ],
    },
    Migration {
        version: 3,
        // An execution that has not finished has no entry: a step of one writes no page of this
        // index (each index an update touches is a page written). A window on `finished_at`
        // (`>=`, `<`) implies the condition, so the listing still walks the index.
        description: "the finished-time index holds finished executions only",
        statements: &[
            "DROP INDEX IF EXISTS {pfx}execstore_executions_by_finished",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_finished \
         ON {executions} (json_extract(data,'$.finished_at'), id) \
         WHERE json_extract(data,'$.finished_at') IS NOT NULL",
        ],
    },
    Migration {
        version: 4,
        // Search attributes (`ExecutionStore::declare_attribute`): the declared context paths,
        // each with the expression index built for it (see `executions/attributes.rs`).
        description: "the table of search attributes",
        statements: &["CREATE TABLE IF NOT EXISTS {pfx}execstore_attributes \
         (path TEXT PRIMARY KEY, index_name TEXT NOT NULL, \
         declared_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))"],
    },
    Migration {
        version: 5,
        // The counts by definition, status and root-ness kept up to date by triggers on harel's
        // table, so that every writer (this store, harel 0.9 itself, a hand-written UPDATE)
        // keeps them right and `count_by_status` reads a few rows instead of every execution.
        // An update that changes none of the three (most steps) runs no statement: its WHEN
        // is false. Built from the rows present when applied (once, in this transaction).
        description: "execution counts by definition and status, kept by triggers",
        statements: COUNTS_STATEMENTS,
    },
    Migration {
        version: 6,
        // The time orders' first page under a status, definition or roots-only filter
        // (`order.rs`, `plan.rs`): each filter's executions in the order's own key, so the
        // listing walks one range of one index instead of sorting every match. A step moves
        // an execution's entry in the `updated_at` ones (its status's, its definition's and,
        // for a root, the roots'); `created_at` never changes, so theirs move only with the
        // status. Roots are a partial index: a child execution has no entry. Migration 9
        // drops all six (and migration 2's time-order two).
        description: "indexes for the time orders under a status, definition or roots filter",
        statements: &[
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_status_updated \
         ON {executions} (json_extract(data,'$.status'), json_extract(data,'$.updated_at'), id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_status_created \
         ON {executions} (json_extract(data,'$.status'), json_extract(data,'$.created_at'), id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_definition_updated \
         ON {executions} (definition_id, json_extract(data,'$.updated_at'), id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_definition_created \
         ON {executions} (definition_id, json_extract(data,'$.created_at'), id)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_roots_by_updated \
         ON {executions} (json_extract(data,'$.updated_at'), id) \
         WHERE json_extract(data,'$.parent_id') IS NULL",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_roots_by_created \
         ON {executions} (json_extract(data,'$.created_at'), id) \
         WHERE json_extract(data,'$.parent_id') IS NULL",
        ],
    },
    Migration {
        version: 7,
        // The per-definition graph's figures: executions per active path and status, trace
        // steps per transition and event, guards per transition, kept by triggers on harel's
        // executions and trace tables (see `executions/graph.rs`).
        description: "graph figures by definition, kept by triggers",
        statements: super::graph::GRAPH_STATEMENTS,
    },
    Migration {
        version: 8,
        // Migration 5's counts kept in migration 7's `now` (keyed by root-ness too), so that
        // a new execution or a change of status writes one figure, not two; the counts table
        // becomes a view of the same name and columns (see `executions/graph.rs`).
        description: "execution counts folded into the graph's figures by active path",
        statements: super::graph::ROOTED_NOW_STATEMENTS,
    },
    Migration {
        version: 9,
        // Migration 6's six indexes and migration 2's two time indexes replaced by one per
        // time order that holds every key the listing filters on: a walk in the order's time
        // checks the status, definition and root-ness in the index, never reading a
        // document, and a new execution writes two entries, not eight (`plan.rs`). A filter
        // with few executions sorts its matches from migration 1's status or definition index.
        description: "one covering index per time order in place of eight",
        statements: &[
            "DROP INDEX IF EXISTS {pfx}execstore_executions_by_status_updated",
            "DROP INDEX IF EXISTS {pfx}execstore_executions_by_status_created",
            "DROP INDEX IF EXISTS {pfx}execstore_executions_by_definition_updated",
            "DROP INDEX IF EXISTS {pfx}execstore_executions_by_definition_created",
            "DROP INDEX IF EXISTS {pfx}execstore_executions_roots_by_updated",
            "DROP INDEX IF EXISTS {pfx}execstore_executions_roots_by_created",
            "DROP INDEX IF EXISTS {pfx}execstore_executions_by_updated",
            "DROP INDEX IF EXISTS {pfx}execstore_executions_by_created",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_listing_updated \
         ON {executions} (json_extract(data,'$.updated_at'), id, json_extract(data,'$.status'), \
         definition_id, json_extract(data,'$.parent_id') IS NULL)",
            "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_listing_created \
         ON {executions} (json_extract(data,'$.created_at'), id, json_extract(data,'$.status'), \
         definition_id, json_extract(data,'$.parent_id') IS NULL)",
        ],
    },
    Migration {
        version: 10,
        // The steps' and guards' figures are no longer kept: the graph reads them from a
        // bounded number of traces (see `executions/graph.rs`). Where executions sit, and the
        // counts, stay kept.
        description: "the graph's steps read from the traces, no longer kept by triggers",
        statements: super::graph::UNKEPT_STEPS_STATEMENTS,
    },
    Migration {
        version: 11,
        // Where executions sit read from migration 2's index of the active path, widened to
        // hold it, instead of kept by triggers at every step that moves the path; the
        // triggers keep the counts only (see `executions/graph.rs`).
        description: "where executions sit read from the active path's index, no longer kept by triggers",
        statements: super::graph::SITTING_STATEMENTS,
    },
    Migration {
        version: 12,
        // The counts count what the listing does (JSON5 too: Python's `NaN`), the triggers
        // without `json_valid`'s second parse of each document, and this store's writer keeps
        // the counts itself with its connection's triggers off (see `executions/graph.rs`
        // and `SqliteStore::keep_counts`).
        description:
            "the counts count every document SQLite reads as JSON, kept by the writer of this store itself",
        statements: super::graph::READ_STATEMENTS,
    },
    Migration {
        version: 13,
        // The listing's keys as columns of harel's table, set by this store's writer and by
        // triggers for every other writer, and the indexes over the document's expressions
        // built again over them: a step writes the indexes of the keys it moves only (see
        // `executions/keys.rs`).
        description: "the listing's keys as columns of the executions table, indexed in place of the document's expressions",
        statements: super::keys::STATEMENTS,
    },
];

/// Migration 5: the counts table, its triggers and its first fill. `status` is the
/// document's status as stored (`''` when it has none, which reads as PENDING); `root` is 1
/// for an execution without a parent. A row whose count falls to 0 stays (a handful per
/// definition). A document that is not JSON (a damaged file, a hand-written row) is not
/// counted, as the listing and the scanned counts skip it; writing or mending one keeps the
/// counts right (each side is guarded by `json_valid`).
const COUNTS_STATEMENTS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS {pfx}execstore_counts \
     (definition_id TEXT NOT NULL, status TEXT NOT NULL, root INTEGER NOT NULL, n INTEGER NOT NULL, \
     PRIMARY KEY (definition_id, status, root)) WITHOUT ROWID",
    "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_counts_insert AFTER INSERT ON {executions} \
     WHEN json_valid(new.data) BEGIN \
     INSERT INTO {pfx}execstore_counts (definition_id, status, root, n) VALUES (new.definition_id, \
     COALESCE(json_extract(new.data,'$.status'), ''), json_extract(new.data,'$.parent_id') IS NULL, 1) \
     ON CONFLICT (definition_id, status, root) DO UPDATE SET n = n + 1; END",
    "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_counts_delete AFTER DELETE ON {executions} \
     WHEN json_valid(old.data) BEGIN \
     UPDATE {pfx}execstore_counts SET n = n - 1 WHERE definition_id = old.definition_id \
     AND status = COALESCE(json_extract(old.data,'$.status'), '') \
     AND root = (json_extract(old.data,'$.parent_id') IS NULL); END",
    "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_counts_update AFTER UPDATE OF definition_id, data \
     ON {executions} WHEN NOT json_valid(old.data) OR NOT json_valid(new.data) \
     OR old.definition_id IS NOT new.definition_id \
     OR json_extract(old.data,'$.status') IS NOT json_extract(new.data,'$.status') \
     OR (json_extract(old.data,'$.parent_id') IS NULL) IS NOT (json_extract(new.data,'$.parent_id') IS NULL) \
     BEGIN \
     UPDATE {pfx}execstore_counts SET n = n - 1 WHERE json_valid(old.data) AND definition_id = old.definition_id \
     AND status = COALESCE(json_extract(old.data,'$.status'), '') \
     AND root = (json_extract(old.data,'$.parent_id') IS NULL); \
     INSERT INTO {pfx}execstore_counts (definition_id, status, root, n) SELECT new.definition_id, \
     COALESCE(json_extract(new.data,'$.status'), ''), json_extract(new.data,'$.parent_id') IS NULL, 1 \
     WHERE json_valid(new.data) \
     ON CONFLICT (definition_id, status, root) DO UPDATE SET n = n + 1; END",
    "DELETE FROM {pfx}execstore_counts",
    "INSERT INTO {pfx}execstore_counts (definition_id, status, root, n) \
     SELECT definition_id, COALESCE(json_extract(data,'$.status'), ''), \
     json_extract(data,'$.parent_id') IS NULL, COUNT(*) FROM {executions} WHERE json_valid(data) GROUP BY 1, 2, 3",
];

/// Creates harel's tables and applies every migration not yet recorded, in one
/// `BEGIN IMMEDIATE` transaction: several connections opening the same fresh file at once
/// serialize on the write lock, and each finds the work of the ones before it done.
///
/// A migration that builds an index over `data` fails on a row whose document is not JSON (a
/// file harel wrote, then damaged or edited by hand): it is rolled back whole (a savepoint),
/// and it and the ones after it wait for an open after that row is mended or purged. The
/// store works without their indexes (its listing skips such rows).
///
/// On a file at this build's latest migration, what a hand dropped of what the migrations
/// left is created again, and the figures its triggers keep are set again (`mend.rs`).
pub(crate) fn migrate(conn: &mut Connection, tables: &Tables) -> Result<()> {
    let mut tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()?;
    for stmt in HAREL_TABLES.iter().chain([&MIGRATIONS_TABLE]) {
        tx.execute_batch(&tables.sql(stmt)).db()?;
    }
    let select = tables.sql("SELECT checksum FROM {migrations} WHERE version = ?1");
    let insert = tables.sql("INSERT INTO {migrations} (version, description, checksum) VALUES (?1, ?2, ?3)");
    for migration in MIGRATIONS {
        let checksum = migration.checksum();
        let applied: Option<String> = tx
            .query_row(&select, [migration.version], |row| row.get(0))
            .optional()
            .db()?;
        if migration.needs_applying(applied.as_deref(), &tables.migrations)? {
            let sp = tx.savepoint().db()?;
            let applied = migration
                .statements
                .iter()
                .try_for_each(|stmt| sp.execute_batch(&tables.sql(stmt)).db())
                .and_then(|()| {
                    sp.execute(
                        &insert,
                        params![migration.version, migration.description, checksum],
                    )
                    .db()
                });
            match applied {
                Ok(_) => sp.commit().db()?,
                Err(StoreError::Corrupt { reason, .. }) if reason.contains("malformed JSON") => {
                    drop(sp);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    if at_latest(&tx, tables)? {
        super::mend::mend(&tx, tables)?;
    }
    tx.commit().db()
}

/// The highest migration a database records (a template: `Stmts::schema_version`).
pub(crate) const SCHEMA_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM {migrations}";

/// Whether the database of `conn` records exactly this build's latest migration (not an
/// earlier one, nor a newer build's); false without a migrations table.
pub(crate) fn at_latest(conn: &Connection, tables: &Tables) -> Result<bool> {
    if !crate::db::has_table(conn, &tables.migrations)? {
        return Ok(false);
    }
    let version: i64 = conn
        .query_row(&tables.sql(SCHEMA_VERSION), [], |row| row.get(0))
        .db()?;
    Ok(version == execstore::kit::migration::latest(MIGRATIONS))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A released migration's statements never change (a file migrated by an earlier build
    /// refuses to open with a build whose checksum differs): add a migration instead.
    #[test]
    fn released_migrations_keep_their_checksums() {
        let released = [
            "fnv1a64:7489680900a288f3",
            "fnv1a64:8c31926da90f4bc5",
            "fnv1a64:be05ad154ecc5a2a",
            "fnv1a64:48149dd0e202f135",
            "fnv1a64:c8d84ee92685d902",
            "fnv1a64:39066ed74a420137",
            "fnv1a64:aec96e877b520cea",
            "fnv1a64:0bd7a3e40d0edbaf",
            "fnv1a64:f21f2a3c21976631",
            "fnv1a64:ddf881a09143bad2",
            "fnv1a64:99eb4623d6036937",
            "fnv1a64:53f5bbeaa60b52b8",
            "fnv1a64:7857ec2fa210e038",
        ];
        execstore::kit::migration::check_released(MIGRATIONS, &released).unwrap();
    }

    #[test]
    fn checksum_is_stable_and_prefix_independent() {
        let c = MIGRATIONS[0].checksum();
        assert!(c.starts_with("fnv1a64:") && c.len() == 8 + 16);
        assert_eq!(c, MIGRATIONS[0].checksum());
    }
}
