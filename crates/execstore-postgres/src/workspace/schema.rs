//! reflexr 0.1.1's PostgreSQL tables, as its migrations `0001`..`0008` leave them, and their
//! version record (`reflexr_alembic_version`, Alembic's table under reflexr's name).
//!
//! The statements build what `reflexr.sql.migrate()` builds, column for column (same order,
//! types, nullability and collation), with the same constraint and index names and the same
//! row-level security policies, so `pg_dump --schema-only` cannot tell the two apart and
//! reflexr's `migrate()` finds nothing to do.

use execstore::{Result, StoreError};
use postgres::Client;

use crate::db::{self, Db};

/// The reflexr schema version this build reads and writes: Alembic revision `0008`.
pub const REFLEXR_SCHEMA_VERSION: &str = "0008";

/// Serializes schema setup across processes (an advisory lock key of its own, apart from
/// harel's, which the execution store takes).
const SCHEMA_LOCK: i64 = 0x7265_666c_6578_7230; // "reflexr0"

/// The version table, as Alembic makes it.
pub(super) const VERSION_TABLE: &str = "reflexr_alembic_version";

/// Every table, in the order reflexr's migration `0007` lists them.
pub(super) const TABLES: [&str; 10] = [
    "reflexr_workspaces",
    "reflexr_events",
    "reflexr_runs",
    "reflexr_rule_progress",
    "reflexr_scope_states",
    "reflexr_dead_letters",
    "reflexr_schedules",
    "reflexr_leases",
    "reflexr_cursors",
    "reflexr_rules",
];

/// The head schema, statement by statement.
const CREATE: &[&str] = &[
    "CREATE TABLE reflexr_workspaces (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     head_seq BIGINT NOT NULL, head_ts TIMESTAMP WITH TIME ZONE, last_position BIGINT NOT NULL, \
     CONSTRAINT pk_reflexr_workspaces PRIMARY KEY (tenant_id, workspace_id))",
    "CREATE TABLE reflexr_events (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     seq BIGINT NOT NULL, event_id VARCHAR NOT NULL, envelope JSON NOT NULL, event_type VARCHAR NOT NULL, \
     rule VARCHAR, CONSTRAINT pk_reflexr_events PRIMARY KEY (tenant_id, workspace_id, seq), \
     CONSTRAINT uq_reflexr_events_id UNIQUE (tenant_id, workspace_id, event_id))",
    "CREATE INDEX ix_reflexr_events_type ON reflexr_events (tenant_id, workspace_id, event_type, seq)",
    "CREATE INDEX ix_reflexr_events_rule ON reflexr_events (tenant_id, workspace_id, rule, seq) \
     WHERE rule IS NOT NULL",
    "CREATE TABLE reflexr_runs (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     id VARCHAR NOT NULL, \"position\" BIGINT NOT NULL, rule VARCHAR NOT NULL, scope_key VARCHAR NOT NULL, \
     status VARCHAR NOT NULL, fired_seq BIGINT NOT NULL, next_attempt_at TIMESTAMP WITH TIME ZONE NOT NULL, \
     body JSON NOT NULL, CONSTRAINT pk_reflexr_runs PRIMARY KEY (tenant_id, workspace_id, id))",
    "CREATE INDEX ix_reflexr_runs_position ON reflexr_runs (tenant_id, workspace_id, \"position\")",
    "CREATE INDEX ix_reflexr_runs_scope ON reflexr_runs (tenant_id, workspace_id, rule, scope_key, fired_seq)",
    "CREATE INDEX ix_reflexr_runs_due ON reflexr_runs (status, next_attempt_at)",
    "CREATE INDEX ix_reflexr_runs_scope_head ON reflexr_runs \
     (tenant_id, workspace_id, rule, scope_key, status, fired_seq, \"position\")",
    "CREATE TABLE reflexr_rule_progress (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     rule VARCHAR NOT NULL, \"position\" BIGINT NOT NULL, body JSON NOT NULL, \
     CONSTRAINT pk_reflexr_rule_progress PRIMARY KEY (tenant_id, workspace_id, rule))",
    "CREATE TABLE reflexr_scope_states (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     rule VARCHAR NOT NULL, scope_key VARCHAR NOT NULL, body JSON NOT NULL, \
     CONSTRAINT pk_reflexr_scope_states PRIMARY KEY (tenant_id, workspace_id, rule, scope_key))",
    "CREATE TABLE reflexr_dead_letters (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     \"position\" BIGINT NOT NULL, rule VARCHAR NOT NULL, body JSON NOT NULL, \
     CONSTRAINT pk_reflexr_dead_letters PRIMARY KEY (tenant_id, workspace_id, \"position\"))",
    "CREATE INDEX ix_reflexr_dead_letters_rule ON reflexr_dead_letters \
     (tenant_id, workspace_id, rule, \"position\")",
    "CREATE TABLE reflexr_schedules (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     name VARCHAR NOT NULL, \"position\" BIGINT NOT NULL, at TIMESTAMP WITH TIME ZONE NOT NULL, \
     CONSTRAINT pk_reflexr_schedules PRIMARY KEY (tenant_id, workspace_id, name))",
    "CREATE TABLE reflexr_leases (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     key VARCHAR NOT NULL, holder VARCHAR NOT NULL, expires_at TIMESTAMP WITH TIME ZONE NOT NULL, \
     CONSTRAINT pk_reflexr_leases PRIMARY KEY (tenant_id, workspace_id, key))",
    "CREATE TABLE reflexr_cursors (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     name VARCHAR NOT NULL, seq BIGINT NOT NULL, \
     CONSTRAINT pk_reflexr_cursors PRIMARY KEY (tenant_id, workspace_id, name))",
    "CREATE TABLE reflexr_rules (tenant_id VARCHAR NOT NULL, workspace_id VARCHAR NOT NULL, \
     name VARCHAR COLLATE \"C\" NOT NULL, version INTEGER NOT NULL, status VARCHAR NOT NULL, \
     rule JSON NOT NULL, provenance JSON NOT NULL, \
     CONSTRAINT pk_reflexr_rules PRIMARY KEY (tenant_id, workspace_id, name))",
    "CREATE TABLE reflexr_alembic_version (version_num VARCHAR(32) NOT NULL, \
     CONSTRAINT reflexr_alembic_version_pkc PRIMARY KEY (version_num))",
];

/// The tenant a transaction names (`SELECT set_config('lattice.tenant_id', ...)`), in SQL.
const CURRENT_TENANT: &str = "current_setting('lattice.tenant_id', true)";

/// reflexr's migration `0007`'s statements for one table: row-level security enabled (not
/// forced: the owner is not held) and a policy keeping rows to the transaction's tenant.
fn policy(table: &str) -> String {
    format!(
        "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; CREATE POLICY {table}_tenant ON {table} \
         USING (tenant_id = {CURRENT_TENANT}) WITH CHECK (tenant_id = {CURRENT_TENANT})"
    )
}

/// What [`open`] found.
pub(super) struct Found {
    /// `current_schema()`: where the tables are.
    pub(super) schema: String,
}

/// Creates reflexr's tables (and `schema`, if given) unless they are there, or, read-only,
/// checks that they are; either way the version must be [`REFLEXR_SCHEMA_VERSION`]. Runs in
/// one transaction under an advisory lock, so concurrent opens of one fresh database are
/// safe: the first creates, the others find its work.
pub(super) fn open(client: &mut Client, schema: Option<&str>, read_only: bool) -> Result<Found> {
    if read_only {
        let found = current_schema(client).map_err(|e| match e {
            StoreError::NotFound { .. } => StoreError::NotFound {
                what: "reflexr tables",
                key: format!("{}.{}", schema.unwrap_or("?"), TABLES[0]),
            },
            other => other,
        })?;
        check(client, &found, true)?;
        return Ok(Found { schema: found });
    }
    let mut tx = client.transaction().db()?;
    db::advisory_xact_lock(&mut tx, SCHEMA_LOCK)?;
    if let Some(schema) = schema {
        // Only if missing: `CREATE SCHEMA IF NOT EXISTS` asks for the right to create one
        // even where it exists, which a role that only uses the tables may not have.
        let exists = tx
            .query_opt(
                "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1",
                &[&schema],
            )
            .db()?
            .is_some();
        if !exists {
            tx.batch_execute(&format!("CREATE SCHEMA {schema}")).db()?;
        }
    }
    let found = current_schema(&mut tx)?;
    if !check(&mut tx, &found, false)? {
        for stmt in CREATE {
            tx.batch_execute(stmt).db()?;
        }
        tx.execute(
            "INSERT INTO reflexr_alembic_version (version_num) VALUES ($1)",
            &[&REFLEXR_SCHEMA_VERSION],
        )
        .db()?;
        for table in TABLES {
            tx.batch_execute(&policy(table)).db()?;
        }
    }
    tx.commit().db()?;
    Ok(Found { schema: found })
}

fn current_schema(client: &mut impl postgres::GenericClient) -> Result<String> {
    let schema: Option<String> = client.query_one("SELECT current_schema()", &[]).db()?.get(0);
    schema.ok_or_else(|| StoreError::NotFound {
        what: "schema (none of the search path exists)",
        key: String::new(),
    })
}

/// Whether reflexr's tables are there at the version this build knows: `Ok(false)` if none
/// is (and `missing_is_error` is off), an error if some are missing or the version differs.
/// A complete set without a version record (reflexr's `create_schema`, for tests) is used as
/// it is.
fn check(client: &mut impl postgres::GenericClient, schema: &str, missing_is_error: bool) -> Result<bool> {
    let names: Vec<&str> = TABLES.iter().copied().chain([VERSION_TABLE]).collect();
    let present: Vec<String> = client
        .query(
            "SELECT c.relname::text FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND c.relname = ANY($1) AND c.relkind IN ('r', 'p')",
            &[&names],
        )
        .db()?
        .iter()
        .map(|row| row.get(0))
        .collect();
    if present.is_empty() && !missing_is_error {
        return Ok(false);
    }
    if present.iter().any(|t| t == VERSION_TABLE) {
        let versions: Vec<String> = client
            .query("SELECT version_num::text FROM reflexr_alembic_version", &[])
            .db()?
            .iter()
            .map(|row| row.get(0))
            .collect();
        if versions != [REFLEXR_SCHEMA_VERSION] {
            return Err(StoreError::Backend {
                message: format!(
                    "the reflexr tables in schema {schema} are at version {versions:?} \
                     (reflexr_alembic_version); this build reads and writes version \
                     {REFLEXR_SCHEMA_VERSION} only: upgrade them with reflexr's migrate() or use a \
                     matching build"
                ),
                retryable: false,
                source: None,
            });
        }
    }
    if let Some(missing) = TABLES.iter().find(|t| !present.iter().any(|p| p == *t)) {
        return Err(StoreError::NotFound {
            what: "reflexr tables",
            key: format!("{schema}.{missing}"),
        });
    }
    Ok(true)
}

/// Whether the role of this session is held by the row-level security policies: it is no
/// superuser, has no `BYPASSRLS` and does not own the tables (or the policies are forced).
/// Such a role must name its tenant before every read.
pub(super) fn held_by_policies(client: &mut Client) -> Result<bool> {
    let row = client
        .query_one(
            "SELECT NOT (r.rolsuper OR r.rolbypassrls OR \
             (pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE') AND NOT c.relforcerowsecurity)) \
             FROM pg_catalog.pg_roles r, pg_catalog.pg_class c \
             WHERE r.rolname = current_user AND c.oid = 'reflexr_workspaces'::regclass",
            &[],
        )
        .db()?;
    Ok(row.get(0))
}

/// Whether `reflexr_leases.key` sorts as bytes in its own collation (the database's, as
/// reflexr declares no other): a libc `C` or `POSIX` collation. Then the primary key serves
/// keys in byte order, the order every backend lists them in; otherwise only a sort does.
pub(super) fn keys_sort_as_bytes(client: &mut Client) -> Result<bool> {
    let row = client
        .query_one(
            "SELECT CASE WHEN c.collname IN ('C', 'POSIX') THEN true \
             WHEN c.collname = 'default' THEN (SELECT d.datcollate IN ('C', 'POSIX') \
               AND coalesce(to_jsonb(d) ->> 'datlocprovider', 'c') = 'c' \
               FROM pg_catalog.pg_database d WHERE d.datname = current_database()) \
             ELSE false END \
             FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation \
             WHERE a.attrelid = 'reflexr_leases'::regclass AND a.attname = 'key'",
            &[],
        )
        .db()?;
    Ok(row.get::<_, Option<bool>>(0).unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_created_with_a_policy() {
        for table in TABLES {
            assert!(
                CREATE
                    .iter()
                    .any(|s| s.starts_with(&format!("CREATE TABLE {table} ("))),
                "{table}"
            );
            assert!(policy(table).contains(&format!("CREATE POLICY {table}_tenant ON {table}")));
        }
        assert!(CREATE.iter().any(|s| s.contains(VERSION_TABLE)));
    }
}
