//! The operator's records ([`execstore::operator::OperatorStore`]) in PostgreSQL, beside
//! harel's and reflexr's tables (in the [`Db`]'s schema, if it names one): `execstore_audit`
//! (one row per audit entry, `id` a `BIGSERIAL`) and `execstore_views` (one row per saved
//! view), created by execstore's own recorded migrations (`execstore_operator_migrations`)
//! under an advisory lock of their own. harel and reflexr never read these tables.
//!
//! Each write is one statement (its own transaction). On a read-only `Db` nothing is
//! created: a database without the tables lists nothing, and writes are refused.

use execstore::kit::migration::Migration;
use execstore::operator::{
    check_entry, check_outcome, check_query, check_view, check_view_name, outcome_already_set, parse_params,
    AuditEntry, AuditQuery, OperatorStore, SavedView, PENDING,
};
use execstore::{Result, StoreError};
use postgres::types::ToSql;

use crate::db::handle::Db;
use crate::db::{self, Db as _};

/// The advisory lock key of the operator tables' migrations ("execops").
const SCHEMA_LOCK: i64 = 0x6578_6563_6f70_7300;

const MIGRATIONS_TABLE: &str = "execstore_operator_migrations";

const CREATE_MIGRATIONS: &str = "CREATE TABLE IF NOT EXISTS execstore_operator_migrations \
     (version INT PRIMARY KEY, description TEXT NOT NULL, checksum TEXT NOT NULL, \
     applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";

/// Every migration of the operator tables, in order.
const MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    description: "the audit log and the saved views",
    statements: &[
        "CREATE TABLE IF NOT EXISTS execstore_audit (id BIGSERIAL PRIMARY KEY, \
         at DOUBLE PRECISION NOT NULL, actor TEXT NOT NULL, role TEXT NOT NULL, \
         action TEXT NOT NULL, target TEXT NOT NULL, reason TEXT NOT NULL, outcome TEXT NOT NULL, \
         message TEXT, params TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS execstore_audit_by_target ON execstore_audit (target, id)",
        "CREATE INDEX IF NOT EXISTS execstore_audit_by_actor ON execstore_audit (actor, id)",
        "CREATE TABLE IF NOT EXISTS execstore_views (name TEXT PRIMARY KEY, query TEXT NOT NULL, \
         owner TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL)",
    ],
}];

/// The operator's records on one PostgreSQL [`Db`] (module docs).
#[derive(Debug, Clone)]
pub struct PgOperatorStore {
    db: Db,
}

impl PgOperatorStore {
    /// The operator's records on `db`: creates and migrates their tables (in the `Db`'s
    /// schema, created if missing) unless `db` is read-only.
    pub fn on(db: &Db) -> Result<Self> {
        if !db.is_read_only() {
            db.ensure_schema()?;
            let mut conn = db.conn()?;
            let mut tx = conn.client.transaction().db()?;
            db::advisory_xact_lock(&mut tx, SCHEMA_LOCK)?;
            tx.batch_execute(CREATE_MIGRATIONS).db()?;
            for migration in MIGRATIONS {
                let recorded: Option<String> = tx
                    .query_opt(
                        "SELECT checksum FROM execstore_operator_migrations WHERE version = $1",
                        &[&migration.version],
                    )
                    .db()?
                    .map(|r| r.get(0));
                if migration.needs_applying(recorded.as_deref(), MIGRATIONS_TABLE)? {
                    for stmt in migration.statements {
                        tx.batch_execute(stmt).db()?;
                    }
                    tx.execute(
                        "INSERT INTO execstore_operator_migrations (version, description, checksum) \
                         VALUES ($1, $2, $3)",
                        &[&migration.version, &migration.description, &migration.checksum()],
                    )
                    .db()?;
                }
            }
            tx.commit().db()?;
        }
        Ok(PgOperatorStore { db: db.clone() })
    }

    fn writable(&self) -> Result<()> {
        if self.db.is_read_only() {
            return Err(StoreError::Backend {
                message: "the store was opened read-only: the audit log and saved views are not written"
                    .into(),
                retryable: false,
                source: None,
            });
        }
        Ok(())
    }

    /// Whether the tables are there (a read-only open of a database no writer migrated has
    /// none).
    fn present(&self, conn: &mut db::Conn) -> Result<bool> {
        if !self.db.is_read_only() {
            return Ok(true);
        }
        let row = conn.query_one("SELECT to_regclass('execstore_audit') IS NOT NULL", &[])?;
        Ok(row.get(0))
    }
}

impl OperatorStore for PgOperatorStore {
    fn record_audit(&self, entry: &AuditEntry) -> Result<i64> {
        let params_json = check_entry(entry)?;
        self.writable()?;
        let mut conn = self.db.conn()?;
        let row = conn.query_one(
            "INSERT INTO execstore_audit (at, actor, role, action, target, reason, outcome, message, params) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
            &[
                &entry.at,
                &entry.actor,
                &entry.role,
                &entry.action,
                &entry.target,
                &entry.reason,
                &entry.outcome,
                &entry.message,
                &params_json,
            ],
        )?;
        Ok(row.get(0))
    }

    fn set_audit_outcome(&self, id: i64, outcome: &str, message: Option<&str>) -> Result<bool> {
        check_outcome(id, outcome, message)?;
        self.writable()?;
        let mut conn = self.db.conn()?;
        // One statement: the update of a PENDING entry, or else the entry's outcome as it is.
        let row = conn.query_one(
            "WITH done AS (UPDATE execstore_audit SET outcome = $2, message = $3 \
               WHERE id = $1 AND outcome = $4 RETURNING id) \
             SELECT (SELECT count(*) FROM done) > 0, \
               (SELECT outcome FROM execstore_audit WHERE id = $1)",
            &[&id, &outcome, &message, &PENDING],
        )?;
        match (row.get::<_, bool>(0), row.get::<_, Option<String>>(1)) {
            (true, _) => Ok(true),
            (false, Some(set)) => Err(outcome_already_set(id, &set)),
            (false, None) => Ok(false),
        }
    }

    fn list_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        check_query(query)?;
        let mut conn = self.db.conn()?;
        if !self.present(&mut conn)? {
            return Ok(Vec::new());
        }
        let limit = query.limit as i64;
        // One statement for every combination: a filter that is NULL selects everything.
        let args: [&(dyn ToSql + Sync); 6] = [
            &query.target,
            &query.actor,
            &query.since,
            &query.until,
            &query.before,
            &limit,
        ];
        let rows = conn.query(
            "SELECT id, at, actor, role, action, target, reason, outcome, message, params \
             FROM execstore_audit \
             WHERE ($1::text IS NULL OR target = $1) AND ($2::text IS NULL OR actor = $2) \
               AND ($3::float8 IS NULL OR at >= $3) AND ($4::float8 IS NULL OR at < $4) \
               AND ($5::int8 IS NULL OR id < $5) \
             ORDER BY id DESC LIMIT $6",
            &args,
        )?;
        rows.into_iter()
            .map(|r| {
                let id: i64 = r.get(0);
                let params: String = r.get(9);
                Ok(AuditEntry {
                    id,
                    at: r.get(1),
                    actor: r.get(2),
                    role: r.get(3),
                    action: r.get(4),
                    target: r.get(5),
                    reason: r.get(6),
                    outcome: r.get(7),
                    message: r.get(8),
                    params: parse_params(id, &params)?,
                })
            })
            .collect()
    }

    fn list_views(&self) -> Result<Vec<SavedView>> {
        let mut conn = self.db.conn()?;
        if !self.present(&mut conn)? {
            return Ok(Vec::new());
        }
        let rows = conn.query(
            "SELECT name, query, owner, updated_at FROM execstore_views ORDER BY name COLLATE \"C\"",
            &[],
        )?;
        Ok(rows
            .into_iter()
            .map(|r| SavedView {
                name: r.get(0),
                query: r.get(1),
                owner: r.get(2),
                updated_at: r.get(3),
            })
            .collect())
    }

    fn put_view(&self, view: &SavedView) -> Result<()> {
        check_view(view)?;
        self.writable()?;
        self.db.conn()?.execute(
            "INSERT INTO execstore_views (name, query, owner, updated_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (name) DO UPDATE SET query = excluded.query, owner = excluded.owner, \
             updated_at = excluded.updated_at",
            &[&view.name, &view.query, &view.owner, &view.updated_at],
        )?;
        Ok(())
    }

    fn delete_view(&self, name: &str) -> Result<bool> {
        check_view_name(name)?;
        self.writable()?;
        let n = self
            .db
            .conn()?
            .execute("DELETE FROM execstore_views WHERE name = $1", &[&name])?;
        Ok(n > 0)
    }
}
