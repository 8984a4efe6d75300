//! The operator's records ([`execstore::operator::OperatorStore`]) in a SQLite file, beside
//! harel's and reflexr's tables: `execstore_audit` (one row per audit entry, `id` an
//! `AUTOINCREMENT` key so ids are never reused) and `execstore_views` (one row per saved
//! view), created by execstore's own recorded migrations (`execstore_operator_migrations`).
//! harel and reflexr never read these tables, so they keep opening the file.
//!
//! A write is one `BEGIN IMMEDIATE` transaction on the [`Db`]'s writer, taking its turn with
//! the execution store and the workspace log built on the same `Db`. On a read-only `Db`
//! nothing is created: a file without the tables lists nothing, and writes are refused.

#[cfg(test)]
mod tests;

use execstore::kit::migration::Migration;
use execstore::operator::{
    check_entry, check_outcome, check_query, check_view, check_view_name, outcome_already_set, parse_params,
    AuditEntry, AuditQuery, OperatorStore, SavedView, PENDING,
};
use execstore::{Result, StoreError};
use rusqlite::{params, types::Value as SqlValue, Connection, TransactionBehavior};

use crate::db::error::Db as _;
use crate::db::{self, Db};

/// The audit table.
pub(crate) const AUDIT_TABLE: &str = "execstore_audit";
/// The record of the operator tables' migrations.
const MIGRATIONS_TABLE: &str = "execstore_operator_migrations";

const CREATE_MIGRATIONS: &str = "CREATE TABLE IF NOT EXISTS execstore_operator_migrations \
     (version INTEGER PRIMARY KEY, description TEXT NOT NULL, checksum TEXT NOT NULL, \
     applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))";

/// Every migration of the operator tables, in order.
const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    description: "the audit log and the saved views",
    statements: &[
        "CREATE TABLE IF NOT EXISTS execstore_audit (id INTEGER PRIMARY KEY AUTOINCREMENT, \
         at REAL NOT NULL, actor TEXT NOT NULL, role TEXT NOT NULL, action TEXT NOT NULL, \
         target TEXT NOT NULL, reason TEXT NOT NULL, outcome TEXT NOT NULL, message TEXT, \
         params TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS execstore_audit_by_target ON execstore_audit (target, id)",
        "CREATE INDEX IF NOT EXISTS execstore_audit_by_actor ON execstore_audit (actor, id)",
        "CREATE TABLE IF NOT EXISTS execstore_views (name TEXT PRIMARY KEY, query TEXT NOT NULL, \
         owner TEXT NOT NULL, updated_at REAL NOT NULL)",
    ],
}];

/// The operator's records on one SQLite [`Db`] (module docs).
#[derive(Debug, Clone)]
pub struct SqliteOperatorStore {
    db: Db,
}

impl SqliteOperatorStore {
    /// The operator's records on `db`: creates and migrates their tables unless `db` is
    /// read-only.
    pub fn on(db: &Db) -> Result<Self> {
        if !db.is_read_only() {
            let mut conn = db.shared.held_writer()?;
            migrate(&mut conn)?;
        }
        Ok(SqliteOperatorStore { db: db.clone() })
    }

    /// The database this store is built on.
    pub fn db(&self) -> &Db {
        &self.db
    }

    fn write<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        if self.db.is_read_only() {
            return Err(StoreError::Backend {
                message: "the store was opened read-only: the audit log and saved views are not written"
                    .into(),
                retryable: false,
                source: None,
            });
        }
        let mut conn = self.db.shared.held_writer()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .db()?;
        let out = f(&tx)?;
        tx.commit().db()?;
        Ok(out)
    }

    /// Runs `f` on the read connection, or answers `empty` when the tables are not there
    /// (a read-only file no writer of this version migrated).
    fn read<T>(&self, empty: T, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.db.shared.read()?;
        if self.db.is_read_only() && !db::has_table(&conn, AUDIT_TABLE)? {
            return Ok(empty);
        }
        f(&conn)
    }
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()?;
    tx.execute_batch(CREATE_MIGRATIONS).db()?;
    for migration in MIGRATIONS {
        let recorded: Option<String> = tx
            .query_row(
                "SELECT checksum FROM execstore_operator_migrations WHERE version = ?1",
                [migration.version],
                |r| r.get(0),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
            .db()?;
        if migration.needs_applying(recorded.as_deref(), MIGRATIONS_TABLE)? {
            for stmt in migration.statements {
                tx.execute_batch(stmt).db()?;
            }
            tx.execute(
                "INSERT INTO execstore_operator_migrations (version, description, checksum) VALUES (?1, ?2, ?3)",
                params![migration.version, migration.description, migration.checksum()],
            )
            .db()?;
        }
    }
    tx.commit().db()
}

const AUDIT_COLUMNS: &str = "id, at, actor, role, action, target, reason, outcome, message, params";

fn audit_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(AuditEntry, String)> {
    Ok((
        AuditEntry {
            id: r.get(0)?,
            at: r.get(1)?,
            actor: r.get(2)?,
            role: r.get(3)?,
            action: r.get(4)?,
            target: r.get(5)?,
            reason: r.get(6)?,
            outcome: r.get(7)?,
            message: r.get(8)?,
            params: serde_json::Map::new(),
        },
        r.get(9)?,
    ))
}

impl OperatorStore for SqliteOperatorStore {
    fn record_audit(&self, entry: &AuditEntry) -> Result<i64> {
        let params_json = check_entry(entry)?;
        self.write(|conn| {
            conn.prepare_cached(
                "INSERT INTO execstore_audit (at, actor, role, action, target, reason, outcome, message, params) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .db()?
            .execute(params![
                entry.at,
                entry.actor,
                entry.role,
                entry.action,
                entry.target,
                entry.reason,
                entry.outcome,
                entry.message,
                params_json
            ])
            .db()?;
            Ok(conn.last_insert_rowid())
        })
    }

    fn set_audit_outcome(&self, id: i64, outcome: &str, message: Option<&str>) -> Result<bool> {
        check_outcome(id, outcome, message)?;
        self.write(|conn| {
            let n = conn
                .prepare_cached(
                    "UPDATE execstore_audit SET outcome = ?2, message = ?3 WHERE id = ?1 AND outcome = ?4",
                )
                .db()?
                .execute(params![id, outcome, message, PENDING])
                .db()?;
            if n > 0 {
                return Ok(true);
            }
            let now: Option<String> = conn
                .prepare_cached("SELECT outcome FROM execstore_audit WHERE id = ?1")
                .db()?
                .query_row([id], |r| r.get(0))
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })
                .db()?;
            match now {
                None => Ok(false),
                Some(set) => Err(outcome_already_set(id, &set)),
            }
        })
    }

    fn list_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        check_query(query)?;
        self.read(Vec::new(), |conn| {
            let mut sql = format!("SELECT {AUDIT_COLUMNS} FROM execstore_audit WHERE 1 = 1");
            let mut args: Vec<SqlValue> = Vec::new();
            let mut push = |clause: &str, v: SqlValue| {
                args.push(v);
                sql.push_str(&format!(" AND {clause} ?{}", args.len()));
            };
            if let Some(t) = &query.target {
                push("target =", SqlValue::Text(t.clone()));
            }
            if let Some(a) = &query.actor {
                push("actor =", SqlValue::Text(a.clone()));
            }
            if let Some(s) = query.since {
                push("at >=", SqlValue::Real(s));
            }
            if let Some(u) = query.until {
                push("at <", SqlValue::Real(u));
            }
            if let Some(b) = query.before {
                push("id <", SqlValue::Integer(b));
            }
            args.push(SqlValue::Integer(query.limit as i64));
            sql.push_str(&format!(" ORDER BY id DESC LIMIT ?{}", args.len()));
            let mut stmt = conn.prepare_cached(&sql).db()?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(args), audit_row)
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            rows.into_iter()
                .map(|(mut e, params)| {
                    e.params = parse_params(e.id, &params)?;
                    Ok(e)
                })
                .collect()
        })
    }

    fn list_views(&self) -> Result<Vec<SavedView>> {
        self.read(Vec::new(), |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT name, query, owner, updated_at FROM execstore_views ORDER BY name")
                .db()?;
            let views = stmt
                .query_map([], |r| {
                    Ok(SavedView {
                        name: r.get(0)?,
                        query: r.get(1)?,
                        owner: r.get(2)?,
                        updated_at: r.get(3)?,
                    })
                })
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            Ok(views)
        })
    }

    fn put_view(&self, view: &SavedView) -> Result<()> {
        check_view(view)?;
        self.write(|conn| {
            conn.prepare_cached(
                "INSERT INTO execstore_views (name, query, owner, updated_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (name) DO UPDATE SET query = excluded.query, owner = excluded.owner, \
                 updated_at = excluded.updated_at",
            )
            .db()?
            .execute(params![view.name, view.query, view.owner, view.updated_at])
            .db()?;
            Ok(())
        })
    }

    fn delete_view(&self, name: &str) -> Result<bool> {
        check_view_name(name)?;
        self.write(|conn| {
            let n = conn
                .prepare_cached("DELETE FROM execstore_views WHERE name = ?1")
                .db()?
                .execute([name])
                .db()?;
            Ok(n > 0)
        })
    }
}
