//! Definition documents in `{pfx}execstore_definitions`, execstore's own table beside
//! harel's, created by the first put (harel never reads it; a file without it has none). A
//! store that creates no table of execstore's (`create_schema` off, read-only) keeps none:
//! its put is the contract's "unsupported", its get reads the table if another open made it.

use execstore::executions::definitions::{prepare_definition, read_definition, same_definition, unsupported};
use execstore::executions::DefinitionDoc;
use execstore::Result;
use rusqlite::{params, Connection, OptionalExtension};

use super::sql::Stmts;
use super::SqliteStore;
use crate::db::error::Db;

impl Stmts {
    fn definitions_table(&self) -> String {
        format!("{}execstore_definitions", self.pfx)
    }

    /// The stored text and first-seen time of a key, `None` without one (or without the table).
    fn stored_definition(&self, conn: &Connection, id: &str, fqn: &str) -> Result<Option<(String, f64)>> {
        let table = self.definitions_table();
        let present: Option<i64> = conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [&table],
                |r| r.get(0),
            )
            .optional()
            .db()?;
        if present.is_none() {
            return Ok(None);
        }
        conn.prepare_cached(&format!(
            "SELECT document, first_seen FROM {table} WHERE definition_id = ?1 AND definition_fqn = ?2"
        ))
        .db()?
        .query_row(params![id, fqn], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .db()
    }
}

impl SqliteStore {
    pub(crate) fn put_definition_doc(&self, doc: &DefinitionDoc) -> Result<bool> {
        let text = prepare_definition(doc)?;
        if !self.own_tables {
            return Err(unsupported());
        }
        self.write(|tx, s| {
            if let Some((stored, first_seen)) =
                s.stored_definition(tx, &doc.definition_id, &doc.definition_fqn)?
            {
                let stored = read_definition(&doc.definition_id, &doc.definition_fqn, &stored, first_seen)?;
                return same_definition(&stored.document, doc);
            }
            let table = s.definitions_table();
            tx.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {table} (definition_id TEXT NOT NULL, \
                 definition_fqn TEXT NOT NULL, document TEXT NOT NULL, first_seen REAL NOT NULL, \
                 PRIMARY KEY (definition_id, definition_fqn))"
            ))
            .db()?;
            tx.execute(
                &format!(
                    "INSERT INTO {table} (definition_id, definition_fqn, document, first_seen) \
                     VALUES (?1, ?2, ?3, ?4)"
                ),
                params![doc.definition_id, doc.definition_fqn, text, doc.first_seen],
            )
            .db()?;
            Ok(true)
        })
    }

    pub(crate) fn get_definition_doc(&self, id: &str, fqn: &str) -> Result<Option<DefinitionDoc>> {
        let conn = self.read()?;
        match self.sql.stored_definition(&conn, id, fqn)? {
            Some((text, first_seen)) => read_definition(id, fqn, &text, first_seen).map(Some),
            None => Ok(None),
        }
    }
}
