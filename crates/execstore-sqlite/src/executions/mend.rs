//! What a writer's open mends in a file at this build's latest migration: the triggers,
//! indexes, views and tables the migrations left, where a hand dropped one.
//!
//! The counts and the listing's key columns stay right under harel's writes, and every
//! other writer's, only through the triggers (`graph.rs`, `keys.rs`). A trigger dropped by
//! hand (`DROP TRIGGER` in the `sqlite3` shell, a tool that "cleans up" what it does not
//! know) would leave them wrong after the next write of such a writer, silently and for
//! good. So each writer's open compares the file's schema with what the migrations leave
//! ([`left`]): a missing object is created again by the statement of the migration that
//! last created it; if a trigger or a table was missing or replaced, the key columns are set again
//! where they differ from their documents ([`keys::REFILL`]) and the counts are counted
//! again from the rows ([`graph::NOW_FILL`]), since some writer may have written while it
//! was gone. A missing index only slowed reads: it is built again, nothing else.
//!
//! A read-only open cannot mend: where a trigger is missing it reads as a file before
//! migration 13 is read (the documents' expressions, the counts scanned), which is right
//! whoever wrote ([`triggers_broken`]).
//!
//! An index, view or trigger a hand replaced under the same name (its text in
//! `sqlite_master` is not the migration's) is dropped and made again the same way. One that
//! was dropped and created again by hand, as it was, before an open is not seen.

use std::collections::BTreeMap;

use execstore::Result;
use rusqlite::Connection;

use crate::db::error::Db;

use super::schema::{Sql, Tables, MIGRATIONS};
use super::{graph, keys};

/// What kind of schema object a statement creates or drops, as `sqlite_master.type` names
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `table`
    Table,
    /// `index`
    Index,
    /// `view`
    View,
    /// `trigger`
    Trigger,
}

impl Kind {
    /// `sqlite_master.type`.
    fn as_str(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::Index => "index",
            Kind::View => "view",
            Kind::Trigger => "trigger",
        }
    }
}

/// The object a migration statement creates (`true`) or drops (`false`), with its name (a
/// template), when it is one of those: `CREATE <kind> IF NOT EXISTS <name> ...` or `DROP
/// <kind> IF EXISTS <name>`.
fn object(stmt: &str) -> Option<(bool, Kind, &str)> {
    const KINDS: [(&str, Kind); 4] = [
        ("TABLE", Kind::Table),
        ("INDEX", Kind::Index),
        ("VIEW", Kind::View),
        ("TRIGGER", Kind::Trigger),
    ];
    for (word, kind) in KINDS {
        for (verb, creates, guard) in [("CREATE", true, "IF NOT EXISTS"), ("DROP", false, "IF EXISTS")] {
            let head = format!("{verb} {word} {guard} ");
            if let Some(rest) = stmt.trim_start().strip_prefix(&head) {
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == '(')
                    .unwrap_or(rest.len());
                return Some((creates, kind, &rest[..end]));
            }
        }
    }
    None
}

/// Every object the migrations leave in a file, by name (a template), with its kind and the
/// statement that creates it: the last creation of each name that no later statement
/// drops. The search attributes' indexes, made when declared, are not among them.
pub(crate) fn left() -> BTreeMap<&'static str, (Kind, &'static str)> {
    let mut out = BTreeMap::new();
    for stmt in MIGRATIONS.iter().flat_map(|m| m.statements.iter().copied()) {
        match object(stmt) {
            Some((true, kind, name)) => {
                out.insert(name, (kind, stmt));
            }
            Some((false, _, name)) => {
                out.remove(name);
            }
            None => {}
        }
    }
    out
}

/// How one object of [`left`] is not as its migration left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Broken {
    /// It is not there.
    Missing,
    /// An index, view or trigger of that name is there, made by another statement (a hand
    /// replaced it): it is dropped first. A table's text is not compared (adding a column
    /// changes it).
    Replaced,
}

/// The text SQLite keeps of the object `create` makes: the statement without its `IF NOT
/// EXISTS` (the one normalization SQLite applies to the text of these statements).
fn stored_text(create: &str, kind: Kind) -> String {
    let word = kind.as_str().to_ascii_uppercase();
    create.trim_start().replacen(
        &format!("CREATE {word} IF NOT EXISTS "),
        &format!("CREATE {word} "),
        1,
    )
}

/// The objects of [`left`] (their names and statements filled in) that the database of
/// `conn` lacks, or holds as another statement made them.
fn broken(conn: &Connection, tables: &Tables) -> Result<Vec<(Kind, String, String, Broken)>> {
    let mut stmt = conn
        .prepare(
            "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'index', 'view', 'trigger')",
        )
        .db()?;
    let present: BTreeMap<(String, String), Option<String>> = stmt
        .query_map([], |row| Ok(((row.get(0)?, row.get(1)?), row.get(2)?)))
        .db()?
        .collect::<rusqlite::Result<_>>()
        .db()?;
    let mut out = Vec::new();
    for (name, (kind, create)) in left() {
        let (name, create) = (tables.sql(name), tables.sql(create));
        match present.get(&(kind.as_str().to_owned(), name.clone())) {
            None => out.push((kind, name, create, Broken::Missing)),
            Some(text) if kind != Kind::Table && text.as_deref() != Some(&stored_text(&create, kind)) => {
                out.push((kind, name, create, Broken::Replaced))
            }
            Some(_) => {}
        }
    }
    Ok(out)
}

/// Whether the database of `conn` lacks a trigger the migrations left, or holds one a hand
/// replaced: its counts and key columns may then be stale (see the module).
pub(crate) fn triggers_broken(conn: &Connection, tables: &Tables) -> Result<bool> {
    Ok(broken(conn, tables)?
        .iter()
        .any(|(kind, _, _, _)| *kind == Kind::Trigger))
}

/// Creates again what [`left`] names and the database of `conn` lacks or holds replaced
/// (dropping the replacement first), inside the writer's migration transaction, on a file
/// at this build's latest migration; sets the key columns and counts again if a trigger or
/// a table was among them. Returns the names made again.
pub(crate) fn mend(conn: &Connection, tables: &Tables) -> Result<Vec<String>> {
    let broken = broken(conn, tables)?;
    for (kind, name, create, how) in &broken {
        if *how == Broken::Replaced {
            let word = kind.as_str().to_ascii_uppercase();
            conn.execute_batch(&format!("DROP {word} \"{}\"", name.replace('"', "\"\"")))
                .db()?;
        }
        conn.execute_batch(create).db()?;
    }
    if broken
        .iter()
        .any(|(kind, _, _, _)| matches!(kind, Kind::Trigger | Kind::Table))
    {
        for stmt in [keys::REFILL, graph::NOW_CLEAR, graph::NOW_FILL] {
            conn.execute_batch(&tables.sql(stmt)).db()?;
        }
    }
    Ok(broken.into_iter().map(|(_, name, _, _)| name).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`left`] names exactly what a fresh file holds beside harel's tables and the
    /// migrations' record (under two prefixes): the statements' parse misses nothing and
    /// keeps nothing a later migration dropped.
    #[test]
    fn left_is_what_a_fresh_file_holds() {
        for prefix in [None, Some("harel")] {
            let tables = Tables::new(prefix).unwrap();
            let mut conn = Connection::open_in_memory().unwrap();
            super::super::schema::migrate(&mut conn, &tables).unwrap();
            let mut stmt = conn
                .prepare(
                    "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' \
                     AND type IN ('table', 'index', 'view', 'trigger') ORDER BY 2",
                )
                .unwrap();
            let mut found: Vec<(String, String)> = stmt
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            let mut harel: Vec<&str> = tables.harel().to_vec();
            harel.push(&tables.migrations);
            found.retain(|(kind, name)| !(kind == "table" && harel.contains(&name.as_str())));
            let mut expected: Vec<(String, String)> = left()
                .into_iter()
                .map(|(name, (kind, _))| (kind.as_str().to_owned(), tables.sql(name)))
                .collect();
            expected.sort_by(|a, b| a.1.cmp(&b.1));
            assert_eq!(found, expected, "prefix {prefix:?}");
            assert!(!triggers_broken(&conn, &tables).unwrap());
            assert_eq!(mend(&conn, &tables).unwrap(), Vec::<String>::new());
        }
    }

    #[test]
    fn statements_parse_as_objects() {
        assert_eq!(
            object("CREATE INDEX IF NOT EXISTS {pfx}x ON t (a)"),
            Some((true, Kind::Index, "{pfx}x"))
        );
        assert_eq!(
            object("CREATE TABLE IF NOT EXISTS {pfx}t(a)"),
            Some((true, Kind::Table, "{pfx}t"))
        );
        assert_eq!(
            object("DROP TRIGGER IF EXISTS {pfx}tr"),
            Some((false, Kind::Trigger, "{pfx}tr"))
        );
        assert_eq!(object("ALTER TABLE t ADD COLUMN c"), None);
        assert_eq!(object("DELETE FROM t"), None);
    }
}
