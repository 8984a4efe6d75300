//! Whether the writer's connection runs SQLite's triggers.
//!
//! A store may keep in its own statements what some of its triggers keep for every other
//! writer (the execution counts: `SqliteStore::keep_counts`). Its writer then turns the
//! connection's triggers off (`SQLITE_DBCONFIG_ENABLE_TRIGGER`), so SQLite builds no trigger
//! program into its writes. That switch is per connection, not per trigger: it would also
//! silence a trigger somebody else added to these tables (an audit, a test's fault). So the
//! triggers are off only while every trigger in the schema is one the stores on this
//! connection said they keep themselves; the check runs at the start of each write
//! transaction, again only when the schema changed (`PRAGMA schema_version`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use execstore::Result;
use rusqlite::config::DbConfig;
use rusqlite::Connection;

use super::error::Db as _;

/// `PRAGMA schema_version` as a statement (cached on the connection).
const SCHEMA_VERSION: &str = "PRAGMA schema_version";
/// The names of every trigger in the main schema.
const TRIGGERS: &str = "SELECT name FROM sqlite_master WHERE type = 'trigger'";

/// The writer connection's trigger switch (see the module).
#[derive(Debug, Default)]
pub(crate) struct TriggerSwitch {
    /// The triggers a store on this connection keeps in its own statements.
    kept: Mutex<BTreeSet<String>>,
    /// The schema version the last check saw; -1 before the first, or after `keep`.
    checked: AtomicI64,
    /// Whether the connection's triggers are off: the stores then keep what `kept` would.
    off: AtomicBool,
}

impl TriggerSwitch {
    /// A switch that leaves the triggers on until a store says it keeps some.
    pub(crate) fn new() -> Self {
        TriggerSwitch {
            checked: AtomicI64::new(-1),
            ..Default::default()
        }
    }

    /// Says a store keeps in its own statements what the triggers `names` keep; checked at the
    /// next write transaction's start.
    pub(crate) fn keep(&self, names: impl IntoIterator<Item = String>) {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(names);
        self.checked.store(-1, Ordering::Relaxed);
    }

    /// Whether the triggers are off, so that the stores keep what they would (read inside a
    /// write transaction, after [`TriggerSwitch::began`]).
    pub(crate) fn off(&self) -> bool {
        self.off.load(Ordering::Relaxed)
    }

    /// At the start of a write transaction on the writer `conn`: if the schema changed since
    /// the last check, turns the triggers off when every trigger is one a store keeps, else
    /// on. Statements cached before a change run the triggers they were built with, so the
    /// cache is emptied whenever the switch moves.
    pub(crate) fn began(&self, conn: &Connection) -> Result<()> {
        let kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.is_empty() {
            return Ok(());
        }
        let version: i64 = conn
            .prepare_cached(SCHEMA_VERSION)
            .db()?
            .query_row([], |row| row.get(0))
            .db()?;
        if version == self.checked.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut others = false;
        {
            let mut stmt = conn.prepare_cached(TRIGGERS).db()?;
            let mut rows = stmt.query([]).db()?;
            while let Some(row) = rows.next().db()? {
                let name: String = row.get(0).db()?;
                others |= !kept.contains(&name);
            }
        }
        let off = !others;
        if off != self.off.load(Ordering::Relaxed) {
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, !off)
                .db()?;
            conn.flush_prepared_statement_cache();
            self.off.store(off, Ordering::Relaxed);
        }
        self.checked.store(version, Ordering::Relaxed);
        Ok(())
    }
}
