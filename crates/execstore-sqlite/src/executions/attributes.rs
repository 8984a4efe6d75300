//! Search attributes: declared context paths, each with an expression index over the
//! executions' documents, `json_extract(data,'$.context.<keys>')` with the id, partial
//! (`IS NOT NULL`: an execution without the path costs its commits nothing), recorded in
//! `{pfx}execstore_attributes` (migration 4). harel's own writes keep such an index valid
//! (an expression over `data` only, as migration 2's), so harel keeps reading and writing
//! the file. The `where` listing (filters.rs) spells the expression exactly as here, which
//! is how SQLite matches an expression index.

use execstore::executions::search::{attribute_path, MAX_ATTRIBUTES};
use execstore::executions::SearchAttribute;
use execstore::kit::filter::Path;
use execstore::{Result, StoreError};
use rusqlite::{params, Connection, OptionalExtension};

use super::sql::Stmts;
use super::SqliteStore;
use crate::db::error::Db;

/// The SQL of the value at a context path: `json_extract(data,'$.context.a."odd key"')`.
/// Keys are checked (no quote, backslash, apostrophe or control character: see
/// `execstore::executions::search`), so the literal needs no escaping.
pub(crate) fn json_path(path: &Path) -> String {
    let mut out = format!("$.{}", path.root);
    for key in &path.keys {
        if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.push('.');
            out.push_str(key);
        } else {
            out.push_str(&format!(".\"{key}\""));
        }
    }
    out
}

/// `json_extract(data,'<path>')`, as the index and the listing spell it.
pub(crate) fn extract(path: &Path) -> String {
    format!("json_extract(data,'{}')", json_path(path))
}

/// The index of an attribute: execstore's prefix and a hash of the path (FNV-1a, 64 bits).
fn index_name(pfx: &str, path: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in path.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{pfx}execstore_attr_{hash:016x}")
}

impl Stmts {
    fn attributes_table(&self) -> String {
        format!("{}execstore_attributes", self.pfx)
    }

    /// The declared attributes, by path.
    /// A store whose schema predates migration 4 (opened without `create_schema`, or
    /// read-only) has none.
    pub(crate) fn read_attributes(&self, conn: &Connection) -> Result<Vec<SearchAttribute>> {
        let present: Option<i64> = conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [self.attributes_table()],
                |r| r.get(0),
            )
            .optional()
            .db()?;
        if present.is_none() {
            return Ok(Vec::new());
        }
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT path FROM {} ORDER BY path",
                self.attributes_table()
            ))
            .db()?;
        let rows = stmt.query_map([], |row| row.get::<_, String>(0)).db()?;
        rows.map(|path| path.db().map(|path| SearchAttribute { path }))
            .collect()
    }
}

impl SqliteStore {
    pub(crate) fn list_attributes(&self) -> Result<Vec<SearchAttribute>> {
        let conn = self.read()?;
        self.sql.read_attributes(&conn)
    }

    /// Records the path and builds its index in one transaction (the build reads every
    /// execution: the time it takes is docs/search.md's "declare" figure).
    pub(crate) fn declare(&self, text: &str) -> Result<SearchAttribute> {
        let path = attribute_path(text)?;
        let canonical = path.to_string();
        let index = index_name(&self.sql.pfx, &canonical);
        self.write(|tx, s| {
            let table = s.attributes_table();
            let known: Option<String> = tx
                .query_row(
                    &format!("SELECT index_name FROM {table} WHERE path = ?1"),
                    [&canonical],
                    |r| r.get(0),
                )
                .optional()
                .db()?;
            if known.is_none() {
                let count: i64 = tx
                    .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
                    .db()?;
                if count >= MAX_ATTRIBUTES as i64 {
                    return Err(StoreError::invalid(
                        "path",
                        format!("the store already keeps {MAX_ATTRIBUTES} search attributes"),
                    ));
                }
                tx.execute(
                    &format!("INSERT INTO {table} (path, index_name) VALUES (?1, ?2)"),
                    params![canonical, index],
                )
                .db()?;
            }
            let expr = extract(&path);
            tx.execute_batch(&format!(
                "CREATE INDEX IF NOT EXISTS {index} ON {executions} ({expr}, id) WHERE {expr} IS NOT NULL",
                executions = s.executions,
            ))
            .db()?;
            Ok(SearchAttribute { path: canonical })
        })
    }

    /// Forgets the path and drops its index; whether there was one.
    pub(crate) fn undeclare(&self, text: &str) -> Result<bool> {
        let canonical = attribute_path(text)?.to_string();
        let index = index_name(&self.sql.pfx, &canonical);
        self.write(|tx, s| {
            let table = s.attributes_table();
            let known: Option<String> = tx
                .query_row(
                    &format!("SELECT path FROM {table} WHERE path = ?1"),
                    [&canonical],
                    |r| r.get(0),
                )
                .optional()
                .db()?;
            if known.is_none() {
                return Ok(false);
            }
            tx.execute(&format!("DELETE FROM {table} WHERE path = ?1"), [&canonical])
                .db()?;
            tx.execute_batch(&format!("DROP INDEX IF EXISTS {index}")).db()?;
            Ok(true)
        })
    }
}
