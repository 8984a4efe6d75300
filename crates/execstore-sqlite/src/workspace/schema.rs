//! reflexr 0.1.1's tables, as its migrations leave a SQLite file at their head (`0008`), and
//! the check that a file holds them.
//!
//! The statements are the very text reflexr's Alembic migrations leave in `sqlite_master`,
//! in the order they leave them (`reflexr_events` was rebuilt by migration 0003's batch mode,
//! hence its quoted name and late place), so a file execstore made and one reflexr made have
//! the same schema, and reflexr's `migrate()` finds its head recorded and leaves the file alone.

use execstore::{Result, StoreError};
use rusqlite::{Connection, TransactionBehavior};

use crate::db::error::Db;
use crate::db::has_table;

/// The schema version this build reads and writes: reflexr 0.1.1's Alembic head.
pub(crate) const SCHEMA_VERSION: &str = "0008";

/// Where reflexr's migrations record their version.
pub(crate) const VERSION_TABLE: &str = "reflexr_alembic_version";

/// Every table of the contract, the version record aside.
pub(crate) const TABLES: [&str; 10] = [
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

/// The schema, statement for statement as `sqlite_master` holds it after reflexr's
/// `migrate()` on a new file.
const DDL: &[&str] = &[
    "CREATE TABLE reflexr_alembic_version (\n\tversion_num VARCHAR(32) NOT NULL, \n\tCONSTRAINT reflexr_alembic_version_pkc PRIMARY KEY (version_num)\n)",
    "CREATE TABLE reflexr_workspaces (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\thead_seq BIGINT NOT NULL, \n\thead_ts DATETIME, \n\tlast_position BIGINT NOT NULL, \n\tCONSTRAINT pk_reflexr_workspaces PRIMARY KEY (tenant_id, workspace_id)\n)",
    "CREATE TABLE reflexr_runs (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\tid VARCHAR NOT NULL, \n\tposition BIGINT NOT NULL, \n\trule VARCHAR NOT NULL, \n\tscope_key VARCHAR NOT NULL, \n\tstatus VARCHAR NOT NULL, \n\tfired_seq BIGINT NOT NULL, \n\tnext_attempt_at DATETIME NOT NULL, \n\tbody JSON NOT NULL, \n\tCONSTRAINT pk_reflexr_runs PRIMARY KEY (tenant_id, workspace_id, id)\n)",
    "CREATE INDEX ix_reflexr_runs_position ON reflexr_runs (tenant_id, workspace_id, position)",
    "CREATE INDEX ix_reflexr_runs_scope ON reflexr_runs (tenant_id, workspace_id, rule, scope_key, fired_seq)",
    "CREATE INDEX ix_reflexr_runs_due ON reflexr_runs (status, next_attempt_at)",
    "CREATE TABLE reflexr_rule_progress (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\trule VARCHAR NOT NULL, \n\tposition BIGINT NOT NULL, \n\tbody JSON NOT NULL, \n\tCONSTRAINT pk_reflexr_rule_progress PRIMARY KEY (tenant_id, workspace_id, rule)\n)",
    "CREATE TABLE reflexr_scope_states (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\trule VARCHAR NOT NULL, \n\tscope_key VARCHAR NOT NULL, \n\tbody JSON NOT NULL, \n\tCONSTRAINT pk_reflexr_scope_states PRIMARY KEY (tenant_id, workspace_id, rule, scope_key)\n)",
    "CREATE TABLE reflexr_dead_letters (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\tposition BIGINT NOT NULL, \n\trule VARCHAR NOT NULL, \n\tbody JSON NOT NULL, \n\tCONSTRAINT pk_reflexr_dead_letters PRIMARY KEY (tenant_id, workspace_id, position)\n)",
    "CREATE INDEX ix_reflexr_dead_letters_rule ON reflexr_dead_letters (tenant_id, workspace_id, rule, position)",
    "CREATE TABLE reflexr_schedules (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tposition BIGINT NOT NULL, \n\tat DATETIME NOT NULL, \n\tCONSTRAINT pk_reflexr_schedules PRIMARY KEY (tenant_id, workspace_id, name)\n)",
    "CREATE TABLE reflexr_leases (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\t\"key\" VARCHAR NOT NULL, \n\tholder VARCHAR NOT NULL, \n\texpires_at DATETIME NOT NULL, \n\tCONSTRAINT pk_reflexr_leases PRIMARY KEY (tenant_id, workspace_id, \"key\")\n)",
    "CREATE INDEX ix_reflexr_runs_scope_head ON reflexr_runs (tenant_id, workspace_id, rule, scope_key, status, fired_seq, position)",
    "CREATE TABLE \"reflexr_events\" (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\tseq BIGINT NOT NULL, \n\tevent_id VARCHAR NOT NULL, \n\tenvelope JSON NOT NULL, \n\tevent_type VARCHAR NOT NULL, rule VARCHAR, \n\tCONSTRAINT pk_reflexr_events PRIMARY KEY (tenant_id, workspace_id, seq), \n\tCONSTRAINT uq_reflexr_events_id UNIQUE (tenant_id, workspace_id, event_id)\n)",
    "CREATE INDEX ix_reflexr_events_type ON reflexr_events (tenant_id, workspace_id, event_type, seq)",
    "CREATE TABLE reflexr_cursors (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tseq BIGINT NOT NULL, \n\tCONSTRAINT pk_reflexr_cursors PRIMARY KEY (tenant_id, workspace_id, name)\n)",
    "CREATE TABLE reflexr_rules (\n\ttenant_id VARCHAR NOT NULL, \n\tworkspace_id VARCHAR NOT NULL, \n\tname VARCHAR NOT NULL, \n\tversion INTEGER NOT NULL, \n\tstatus VARCHAR NOT NULL, \n\trule JSON NOT NULL, \n\tprovenance JSON NOT NULL, \n\tCONSTRAINT pk_reflexr_rules PRIMARY KEY (tenant_id, workspace_id, name)\n)",
    "CREATE INDEX ix_reflexr_events_rule ON reflexr_events (tenant_id, workspace_id, rule, seq) WHERE rule IS NOT NULL",
];

/// The recorded schema version of the database, `None` if it records none.
fn recorded_version(conn: &Connection) -> Result<Option<Vec<String>>> {
    if !has_table(conn, VERSION_TABLE)? {
        return Ok(None);
    }
    let mut stmt = conn
        .prepare("SELECT version_num FROM reflexr_alembic_version ORDER BY version_num")
        .db()?;
    let rows = stmt.query_map([], |row| row.get::<_, String>(0)).db()?;
    Ok(Some(rows.collect::<rusqlite::Result<_>>().db()?))
}

fn version_error(found: &[String]) -> StoreError {
    let found = if found.is_empty() {
        "no version".to_owned()
    } else {
        found.join(", ")
    };
    StoreError::Backend {
        message: format!(
            "{VERSION_TABLE} records reflexr schema version {found}, but execstore reads and writes \
             version {SCHEMA_VERSION} (reflexr 0.1.1): migrate the file with that reflexr, or use a \
             matching execstore"
        ),
        retryable: false,
        source: None,
    }
}

/// Checks that the database holds reflexr's tables at [`SCHEMA_VERSION`], creating nothing.
/// No tables at all is [`StoreError::NotFound`] (`"reflexr tables"`); another version, or
/// tables without a version, a permanent [`StoreError::Backend`] naming both versions, unless
/// `any_version` (then one other recorded version is accepted, its tables checked alike).
pub(crate) fn check(conn: &Connection, any_version: bool) -> Result<()> {
    match recorded_version(conn)? {
        Some(found) if found.len() == 1 && found[0] == SCHEMA_VERSION => {}
        Some(found) if any_version && found.len() == 1 => {}
        Some(found) => return Err(version_error(&found)),
        None if has_table(conn, TABLES[0])? => {
            return Err(StoreError::Backend {
                message: format!(
                    "the reflexr tables record no schema version ({VERSION_TABLE} is missing: made by \
                     reflexr's create_schema?); execstore needs version {SCHEMA_VERSION}"
                ),
                retryable: false,
                source: None,
            })
        }
        None => {
            return Err(StoreError::NotFound {
                what: "reflexr tables",
                key: VERSION_TABLE.to_owned(),
            })
        }
    }
    for table in TABLES {
        if !has_table(conn, table)? {
            return Err(StoreError::Corrupt {
                what: "reflexr schema".to_owned(),
                reason: format!("version {SCHEMA_VERSION} is recorded but table {table} is missing"),
            });
        }
    }
    Ok(())
}

/// Creates reflexr's tables at [`SCHEMA_VERSION`] and records it, unless the file has them
/// already (then only [`check`]s them), in one `BEGIN IMMEDIATE` transaction: several
/// connections opening the same new file at once take turns, and each finds the work of the
/// ones before it done.
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .db()?;
    let mut fresh = true;
    for table in std::iter::once(VERSION_TABLE).chain(TABLES) {
        fresh &= !has_table(&tx, table)?;
    }
    if fresh {
        for stmt in DDL {
            tx.execute_batch(stmt).db()?;
        }
        tx.execute(
            "INSERT INTO reflexr_alembic_version (version_num) VALUES (?1)",
            [SCHEMA_VERSION],
        )
        .db()?;
    } else {
        check(&tx, false)?;
    }
    tx.commit().db()
}
