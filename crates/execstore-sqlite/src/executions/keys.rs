//! Migration 13: the listing's keys as columns of harel's executions table.
//!
//! Until migration 12 every index the listing, the counts and the graph read was an
//! expression over the document (`json_extract(data,'$.status')`, ...). SQLite cannot tell
//! whether such an expression changed, so every step rewrote every one of those indexes,
//! the status's and the creation time's too, though a step rarely changes either
//! (`docs/sqlite-write-cost.md`). Migration 13 adds seven columns to harel's table, each
//! the value of one of those expressions, and builds the indexes over the columns under the
//! same names: a step of this store's writer sets only the columns that moved (the update
//! time and the active path), so the status's, the creation time's and the finished time's
//! indexes are not written at all.
//!
//! harel names its columns in every statement, so its statements run unchanged on a
//! migrated file; for every writer but this store's own, two triggers set the columns from
//! the document it wrote. This store's writer sets them in its own statements and, like
//! the counts' triggers, keeps those two triggers off on its connection
//! (`SqliteStore::keep_counts`).
//!
//! The reads are built with the expressions' spelling (what a file before migration 13
//! has, opened read-only), and [`KEYS`] respells them as the columns on a migrated file
//! ([`respell`]). A column holds exactly what its expression gives, for every writer, so
//! a read means the same under either spelling.

/// Each expression a read may spell, and the column migration 13 keeps it in. Longer
/// spellings first: `... IS NULL` before the bare `parent_id` (which the listing reads as
/// a value, and no column holds).
pub(crate) const KEYS: [(&str, &str); 7] = [
    ("json_extract(data,'$.parent_id') IS NULL", "execstore_root"),
    ("json_extract(data,'$.status')", "execstore_status"),
    ("json_extract(data,'$.created_at')", "execstore_created"),
    ("json_extract(data,'$.updated_at')", "execstore_updated"),
    ("json_extract(data,'$.finished_at')", "execstore_finished"),
    ("json_extract(data,'$.active_path')", "execstore_path"),
    ("data -> '$.active_path'", "execstore_path_json"),
];

/// `sql` with every expression of [`KEYS`] spelled as its column.
pub(crate) fn respell(sql: &str) -> String {
    let mut out = sql.to_owned();
    for (expr, column) in KEYS {
        if out.contains(expr) {
            out = out.replace(expr, column);
        }
    }
    out
}

/// The assignments of every key column from the document `$doc` (a parameter, or a
/// trigger's `new.data`), as `UPDATE ... SET` writes them: [`KEYS`] with `data` as `$doc`.
macro_rules! set_all {
    ($doc:literal) => {
        concat!(
            "execstore_root = json_extract(",
            $doc,
            ",'$.parent_id') IS NULL, ",
            "execstore_status = json_extract(",
            $doc,
            ",'$.status'), ",
            "execstore_created = json_extract(",
            $doc,
            ",'$.created_at'), ",
            "execstore_updated = json_extract(",
            $doc,
            ",'$.updated_at'), ",
            "execstore_finished = json_extract(",
            $doc,
            ",'$.finished_at'), ",
            "execstore_path = json_extract(",
            $doc,
            ",'$.active_path'), ",
            "execstore_path_json = ",
            $doc,
            " -> '$.active_path'"
        )
    };
}

/// Whether any key column of the row `new` differs from its expression over `new.data`:
/// the triggers' `WHEN`, so a write that set the columns itself (this store's writer, when
/// its connection runs the triggers) is not written twice, nor seen twice by a trigger of
/// somebody else's on the table.
macro_rules! any_differs {
    ($r:literal) => {
        concat!(
            $r,
            "execstore_root IS NOT (json_extract(",
            $r,
            "data,'$.parent_id') IS NULL) OR ",
            $r,
            "execstore_status IS NOT json_extract(",
            $r,
            "data,'$.status') OR ",
            $r,
            "execstore_created IS NOT json_extract(",
            $r,
            "data,'$.created_at') OR ",
            $r,
            "execstore_updated IS NOT json_extract(",
            $r,
            "data,'$.updated_at') OR ",
            $r,
            "execstore_finished IS NOT json_extract(",
            $r,
            "data,'$.finished_at') OR ",
            $r,
            "execstore_path IS NOT json_extract(",
            $r,
            "data,'$.active_path') OR ",
            $r,
            "execstore_path_json IS NOT ",
            $r,
            "data -> '$.active_path'"
        )
    };
}

/// Sets the key columns of every row where one differs from its expression: what the two
/// triggers leave after any write, so a writer's open runs it after a hand dropped one of
/// them and some writer may have written without it (`mend.rs`). A document SQLite cannot
/// read (not even as JSON5) keeps its columns: no read uses them.
pub(crate) const REFILL: &str = concat!(
    "UPDATE {executions} SET ",
    set_all!("data"),
    " WHERE json_valid(data, 2) AND (",
    any_differs!(""),
    ")"
);

/// The columns a step that keeps its counts may move, set from the document `?1`.
const SET_MOVING: &str = "execstore_updated = json_extract(?1,'$.updated_at'), \
     execstore_path = json_extract(?1,'$.active_path'), execstore_path_json = ?1 -> '$.active_path'";

/// The statements of this store's writer on a file migration 13 migrated, each setting the
/// key columns from the document `?1` (`?3` for the insert) as the triggers would.
#[derive(Debug)]
pub(crate) struct KeyedWrites {
    /// [`Stmts::update_cas`](super::sql::Stmts), setting every key column.
    pub(crate) update_cas: String,
    /// [`Stmts::update_cas_moved`](super::sql::Stmts), setting every key column.
    pub(crate) update_cas_moved: String,
    /// [`Stmts::update_cas_same_counts`](super::sql::Stmts) when the status, root-ness,
    /// creation and finished times stay (read from the columns, not the stored document):
    /// sets only the update time and the active path, so the other keys' indexes are not
    /// written. Else it writes nothing, and the writer moves the counts and writes with
    /// [`KeyedWrites::update_cas_moved`].
    pub(crate) update_cas_same_counts: String,
    /// [`Stmts::insert_execution`](super::sql::Stmts) with every key column.
    pub(crate) insert_execution: String,
}

impl KeyedWrites {
    /// The statements on `executions` (its name).
    pub(crate) fn new(executions: &str) -> Self {
        let all = set_all!("?1");
        let columns: Vec<&str> = KEYS.iter().map(|(_, column)| *column).collect();
        KeyedWrites {
            update_cas: format!(
                "UPDATE {executions} SET data = ?1, version = ?2, {all} WHERE id = ?3 AND version = ?4 \
                 AND definition_id IS ?5"
            ),
            update_cas_moved: format!(
                "UPDATE {executions} SET data = ?1, version = ?2, definition_id = ?5, {all} \
                 WHERE id = ?3 AND version = ?4"
            ),
            update_cas_same_counts: format!(
                "UPDATE {executions} SET data = ?1, version = ?2, {SET_MOVING} WHERE id = ?3 AND version = ?4 \
                 AND definition_id IS ?5 AND execstore_status IS ?6 AND execstore_root = ?7 \
                 AND execstore_created IS json_extract(?1,'$.created_at') \
                 AND execstore_finished IS json_extract(?1,'$.finished_at')"
            ),
            // The values in `KEYS`' order, as `columns` names them.
            insert_execution: format!(
                "INSERT INTO {executions} (id, definition_id, data, version, {}) VALUES (?1, ?2, ?3, ?4, \
                 json_extract(?3,'$.parent_id') IS NULL, json_extract(?3,'$.status'), \
                 json_extract(?3,'$.created_at'), json_extract(?3,'$.updated_at'), \
                 json_extract(?3,'$.finished_at'), json_extract(?3,'$.active_path'), ?3 -> '$.active_path')",
                columns.join(", ")
            ),
        }
    }
}

/// The names of migration 13's triggers, under the prefix `pfx`: this store's writer sets
/// the columns itself and keeps them off (see the module).
pub(crate) fn trigger_names(pfx: &str) -> [String; 2] {
    ["insert", "update"].map(|op| format!("{pfx}execstore_keys_{op}"))
}

/// Migration 13's statements (templates: `{executions}`, `{pfx}`): the seven columns, filled
/// from the rows present; the triggers that fill them for every other writer; and the
/// indexes over the document's expressions built again over the columns, under the same
/// names and with the same keys: migration 1's of the status, 3's of the finished time
/// (finished executions only), 9's two covering ones of the time orders, and 12's of the
/// active path (with what the graph reads of where executions sit). A document SQLite
/// cannot read as JSON fails the fill as it fails those indexes (no such file reaches this
/// migration: see `schema::migrate`).
pub(crate) const STATEMENTS: &[&str] = &[
    "ALTER TABLE {executions} ADD COLUMN execstore_root",
    "ALTER TABLE {executions} ADD COLUMN execstore_status",
    "ALTER TABLE {executions} ADD COLUMN execstore_created",
    "ALTER TABLE {executions} ADD COLUMN execstore_updated",
    "ALTER TABLE {executions} ADD COLUMN execstore_finished",
    "ALTER TABLE {executions} ADD COLUMN execstore_path",
    "ALTER TABLE {executions} ADD COLUMN execstore_path_json",
    concat!("UPDATE {executions} SET ", set_all!("data")),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_keys_insert AFTER INSERT ON {executions} WHEN ",
        any_differs!("new."),
        " BEGIN ",
        "UPDATE {executions} SET ",
        set_all!("new.data"),
        " WHERE rowid = new.rowid; END"
    ),
    concat!(
        "CREATE TRIGGER IF NOT EXISTS {pfx}execstore_keys_update AFTER UPDATE OF data ON {executions} WHEN ",
        any_differs!("new."),
        " BEGIN ",
        "UPDATE {executions} SET ",
        set_all!("new.data"),
        " WHERE rowid = new.rowid; END"
    ),
    "DROP INDEX IF EXISTS {pfx}execstore_executions_by_status",
    "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_status ON {executions} (execstore_status, id)",
    "DROP INDEX IF EXISTS {pfx}execstore_executions_by_finished",
    "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_finished ON {executions} (execstore_finished, id) \
     WHERE execstore_finished IS NOT NULL",
    "DROP INDEX IF EXISTS {pfx}execstore_executions_listing_updated",
    "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_listing_updated ON {executions} \
     (execstore_updated, id, execstore_status, definition_id, execstore_root)",
    "DROP INDEX IF EXISTS {pfx}execstore_executions_listing_created",
    "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_listing_created ON {executions} \
     (execstore_created, id, execstore_status, definition_id, execstore_root)",
    "DROP INDEX IF EXISTS {pfx}execstore_executions_by_active_path",
    "CREATE INDEX IF NOT EXISTS {pfx}execstore_executions_by_active_path ON {executions} \
     (execstore_path, id, definition_id, execstore_status, execstore_path_json)",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Each index is the expressions' index of the same name, respelled: a read that used
    /// one before the migration uses it after.
    #[test]
    fn the_indexes_are_the_expressions_indexes_respelled() {
        use super::super::schema::{Sql, Tables, MIGRATIONS};
        let t = Tables::new(None).unwrap();
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let before: Vec<String> = MIGRATIONS
            .iter()
            .filter(|m| m.version < 13)
            .flat_map(|m| m.statements.iter().map(|s| flat(&t.sql(s))))
            .collect();
        let creates: Vec<String> = STATEMENTS
            .iter()
            .filter(|s| s.starts_with("CREATE INDEX"))
            .map(|s| flat(&t.sql(s)))
            .collect();
        assert_eq!(creates.len(), 5);
        for index in creates {
            let name = index.split_whitespace().nth(5).unwrap();
            let last = before
                .iter()
                .rfind(|s| s.starts_with(&format!("CREATE INDEX IF NOT EXISTS {name} ")))
                .unwrap();
            assert_eq!(respell(last), index);
        }
    }

    /// The writes' and the triggers' assignments set each column to its expression.
    #[test]
    fn every_assignment_is_its_expression() {
        let expected: Vec<String> = KEYS
            .iter()
            .map(|(expr, column)| format!("{column} = {}", expr.replace("data", "new.data")))
            .collect();
        assert_eq!(set_all!("new.data"), expected.join(", "));
        let differs: Vec<String> = KEYS
            .iter()
            .map(|(expr, column)| {
                let expr = expr.replace("data", "new.data");
                let expr = if expr.ends_with("IS NULL") {
                    format!("({expr})")
                } else {
                    expr
                };
                format!("new.{column} IS NOT {expr}")
            })
            .collect();
        assert_eq!(any_differs!("new."), differs.join(" OR "));
        let moving: Vec<&str> = SET_MOVING.split(", ").map(str::trim).collect();
        for assignment in moving {
            assert!(set_all!("?1").contains(assignment), "{assignment}");
        }
        let insert = KeyedWrites::new("executions").insert_execution;
        let values = insert.split("VALUES (?1, ?2, ?3, ?4, ").nth(1).unwrap();
        let expected: Vec<String> = KEYS.iter().map(|(expr, _)| expr.replace("data", "?3")).collect();
        assert_eq!(
            values.split_whitespace().collect::<Vec<_>>().join(" "),
            format!("{})", expected.join(", "))
        );
    }

    #[test]
    fn respelling_leaves_other_fields_alone() {
        let sql = "SELECT json_extract(data,'$.parent_id'), json_extract(data,'$.outcome') \
                   WHERE json_extract(data,'$.parent_id') IS NULL AND json_extract(data,'$.context.status') = ?";
        assert_eq!(
            respell(sql),
            "SELECT json_extract(data,'$.parent_id'), json_extract(data,'$.outcome') \
             WHERE execstore_root AND json_extract(data,'$.context.status') = ?"
        );
    }
}
