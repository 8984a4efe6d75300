//! One place that opens a store from a `--db` target (a SQLite file path, `sqlite:PATH`, a
//! `postgres://` URL: any URL of execstore-any's table of backends), for either contract.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use execstore::operator::OperatorStore;
use execstore::workspace::{Clock, SystemClock, WorkspaceStorage};
use execstore::ExecutionStore;
use execstore_any::{Holds, Options, Target};

use crate::error::CliError;

/// The backend row and location of a target; a scheme no backend answers is refused, naming
/// the known ones.
pub fn target(db: &Path) -> anyhow::Result<Target> {
    let url = db
        .to_str()
        .ok_or_else(|| CliError::Input(format!("{} is not valid UTF-8", db.display())))?;
    Ok(Target::parse(url).map_err(|e| CliError::Input(e.to_string()))?)
}

/// Whether a target names a file on this machine (not a server).
pub fn is_file(db: &Path) -> anyhow::Result<bool> {
    Ok(target(db)?.is_file())
}

/// How a target is named in messages: a file's path, a server's URL without its password.
fn shown(db: &Path, target: &Target) -> String {
    if target.is_file() {
        db.display().to_string()
    } else {
        crate::monitor::redact_url(&db.to_string_lossy())
    }
}

/// Refuses a file target that does not exist or is a directory (opening it would create an
/// empty store and hide a typo).
pub fn existing_file(db: &Path) -> anyhow::Result<()> {
    let target = target(db)?;
    if !target.is_file() {
        return Ok(());
    }
    let path = Path::new(&target.location);
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            Err(CliError::Input(format!("{} is a directory, not a store file", db.display())).into())
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(CliError::Input(format!(
            "no store at {}: the file does not exist (`execstore demo --db {0}` writes one)",
            db.display()
        ))
        .into()),
        Err(e) => Err(CliError::Io(e)).with_context(|| format!("cannot read {}", db.display())),
    }
}

/// Before a command that writes a file target: opens it read-write once, so that SQLite's
/// recovery runs (a hot journal a read-only open refuses is rolled back), creating nothing.
/// A server needs nothing.
pub fn recover_for_writing(db: &Path) -> anyhow::Result<()> {
    let target = target(db)?;
    if !target.is_file() {
        return Ok(());
    }
    existing_file(db)?;
    target
        .recover()
        .map_err(CliError::Store)
        .with_context(|| format!("cannot open {} for writing", db.display()))
}

/// The execution tables' prefix a command opens: `--prefix` when given; otherwise the one set
/// of execution tables the target holds (`harel_*`, the bare names, or another prefix whose
/// tables are all there), the bare names when it holds none, and an error listing them when
/// it holds several. Creates and changes nothing.
pub fn resolve_prefix(db: &Path, given: Option<&str>) -> anyhow::Result<Option<String>> {
    let target = target(db)?;
    if given.is_none() && target.is_file() {
        // A typo or a directory is said plainly by the command's own checks.
        if existing_file(db).is_err() {
            return Ok(None);
        }
    }
    target
        .resolve_prefix(given, "pass --prefix NAME")
        .map_err(CliError::Store)
        .with_context(|| format!("cannot open the store {}", shown(db, &target)))
}

/// Whether `error` is [`resolve_prefix`]'s refusal to choose between several sets of
/// execution tables.
pub fn is_prefix_choice(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<CliError>(),
        Some(CliError::Store(execstore::StoreError::InvalidInput { field, .. })) if field == "prefix"
    )
}

/// Probes a target: what it holds (execution tables under `prefix`, reflexr's tables).
/// Probing creates and changes nothing.
pub fn holds(db: &Path, prefix: Option<&str>) -> anyhow::Result<Holds> {
    existing_file(db)?;
    Ok(target(db)?.probe(prefix).map_err(CliError::Store)?)
}

/// Opens the workspace log of a target: read-only for the read commands (nothing created,
/// migrated or changed), or writable.
pub fn open_workspaces(
    db: &Path,
    read_only: bool,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<Arc<dyn WorkspaceStorage>> {
    let target = target(db)?;
    let options = Options::new().workspaces(true).read_only(read_only).clock(clock);
    let stores = target
        .open(&options)
        .map_err(CliError::Store)
        .with_context(|| format!("cannot open the workspace tables of {}", shown(db, &target)))?;
    let storage: Arc<dyn WorkspaceStorage> =
        stores.workspaces.context("the backend opened no workspace log")?;
    Ok(storage)
}

/// The workspace log of `db` for the monitor: writable when the monitor takes writes
/// (`writable`: its recovery actions, docs/recover.md) and the tables are at the schema
/// version this build knows; otherwise read-only, and where the tables record a reflexr
/// schema version this build does not know (SQLite), opened all the same with a warning to
/// show (what it reads may be misread; no workspace action is allowed on it).
pub fn open_workspaces_for_monitor(
    db: &Path,
    clock: Arc<dyn Clock>,
    writable: bool,
) -> anyhow::Result<(Arc<dyn WorkspaceStorage>, Option<String>)> {
    if writable {
        if let Ok(storage) = open_workspaces(db, false, clock.clone()) {
            return Ok((storage, None));
        }
    }
    let target = target(db)?;
    let options = Options::new()
        .workspaces(true)
        .read_only(true)
        .any_version(true)
        .clock(clock);
    let stores = target
        .open(&options)
        .map_err(CliError::Store)
        .with_context(|| format!("cannot open the workspace tables of {}", shown(db, &target)))?;
    let warning = stores.workspace_version.as_ref().map(|version| {
        format!(
            "reflexr_alembic_version records reflexr schema version {version}, but this execstore              knows version {}: the workspace log is shown read-only and may be misread",
            execstore_sqlite::WORKSPACE_SCHEMA_VERSION
        )
    });
    let storage = stores.workspaces.context("the backend opened no workspace log")?;
    Ok((storage, warning))
}

/// [`open_workspaces`] read-only on the system clock, after checking the target holds
/// reflexr's tables (and saying plainly when it does not).
pub fn open_workspaces_to_read(db: &Path, prefix: Option<&str>) -> anyhow::Result<Arc<dyn WorkspaceStorage>> {
    let found = holds(db, prefix)?;
    if !found.workspaces {
        let also = if found.executions {
            " It holds executions: try `execstore list`."
        } else {
            ""
        };
        return Err(CliError::Input(format!(
            "{} holds no workspace log (reflexr's reflexr_* tables).{also}",
            db.display()
        ))
        .into());
    }
    open_workspaces(db, true, Arc::new(SystemClock))
}

/// Says plainly that a target holds no executions, when it does not.
pub fn require_executions(db: &Path, prefix: Option<&str>) -> anyhow::Result<()> {
    let found = holds(db, prefix)?;
    if found.executions {
        return Ok(());
    }
    let tables = match prefix {
        Some(p) => format!("{p}_executions"),
        None => "executions".to_owned(),
    };
    let sets = target(db)?.prefixes().unwrap_or_default();
    let prefix_hint = if sets.is_empty() {
        " Is the --prefix right? (harel 0.9 writes harel_executions: --prefix harel; without --prefix: executions)"
            .to_owned()
    } else {
        let listed: Vec<String> = sets
            .iter()
            .map(|p| match p {
                Some(p) => format!("--prefix {p}"),
                None => "no --prefix".to_owned(),
            })
            .collect();
        format!(" It holds execution tables for {}.", listed.join(", "))
    };
    let hint = if found.workspaces {
        format!("{prefix_hint} It also holds a workspace log (reflexr's tables): try `execstore workspaces`.")
    } else {
        prefix_hint
    };
    Err(CliError::Input(format!(
        "{} holds no executions (no table {tables}).{hint}",
        db.display()
    ))
    .into())
}

/// Opens the execution store of a target: a file that must exist, or a server. Read-only
/// opens create, migrate and change nothing (SQLite: a read-only connection,
/// `SQLITE_OPEN_READONLY`, which never runs SQLite's recovery: the file, its `-wal` and
/// `-journal` stay byte for byte; PostgreSQL: no table created, every session
/// `default_transaction_read_only`, so the server refuses any write).
pub fn open_executions(
    db: &Path,
    prefix: Option<&str>,
    read_only: bool,
) -> anyhow::Result<Arc<dyn ExecutionStore>> {
    existing_file(db)?;
    let target = target(db)?;
    let options = Options::new()
        .executions(true)
        .read_only(read_only)
        .prefix(prefix);
    let stores = target
        .open(&options)
        .map_err(CliError::Store)
        .with_context(|| format!("cannot open the store {}", shown(db, &target)))?;
    stores.executions.context("the backend opened no execution store")
}

/// Opens the audit log and saved views of a target (`execstore_audit`, `execstore_views`):
/// read-only creates and changes nothing (a store without them lists nothing).
pub fn open_operator(db: &Path, read_only: bool) -> anyhow::Result<Arc<dyn OperatorStore>> {
    existing_file(db)?;
    let target = target(db)?;
    let options = Options::new().operator(true).read_only(read_only);
    let stores = target
        .open(&options)
        .map_err(CliError::Store)
        .with_context(|| format!("cannot open the audit log of {}", shown(db, &target)))?;
    stores.operator.context("the backend opened no audit log")
}

#[cfg(test)]
mod tests {
    use super::*;
    use execstore::workspace::WorkspaceRef;
    use execstore::{executions::Event, Effects, Execution, StoreError};

    /// The read commands' PostgreSQL opens run every transaction read-only, and it is the
    /// server that refuses a write through them (SQLSTATE 25006, "cannot execute ... in a
    /// read-only transaction"), not only the store's own checks.
    #[test]
    fn postgres_reads_are_read_only_transactions_the_server_enforces() {
        let url = match std::env::var("EXECSTORE_PG_URL") {
            Ok(url) if !url.is_empty() => url,
            _ if std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1") => {
                eprintln!(
                    "SKIPPED: postgres_reads_are_read_only_transactions_the_server_enforces: \
                     EXECSTORE_PG_URL is not set (EXECSTORE_PG_OPTIONAL=1)"
                );
                return;
            }
            _ => panic!(
                "EXECSTORE_PG_URL is not set: this test needs a PostgreSQL server (`source \
                 scripts/lib/postgres.sh && pg_start`), or EXECSTORE_PG_OPTIONAL=1 to skip it"
            ),
        };
        let db = Path::new(&url);
        let prefix = format!("ro_cli_{}", std::process::id());
        let writer = open_executions(db, Some(&prefix), false).unwrap();
        let effects = Effects::new().emit(None, Event::new("ro-ev", "Ping"));
        let seqs = writer.commit(&mut Execution::new("ro-1", "d"), &effects).unwrap();
        let reader = open_executions(db, Some(&prefix), true).unwrap();
        assert_eq!(reader.pending_outbox(None, 10).unwrap().len(), 1, "it reads");
        // An ack is a DELETE sent to the server as is (a commit would be refused before it).
        match reader.ack_outbox(seqs[0]) {
            Err(StoreError::Backend { message, .. }) => {
                assert!(message.contains("read-only transaction"), "{message}")
            }
            other => panic!("a write through the read path: {other:?}"),
        }
        assert_eq!(
            writer.pending_outbox(None, 10).unwrap().len(),
            1,
            "nothing deleted"
        );

        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        drop(open_workspaces(db, false, clock.clone()).unwrap());
        let reader = open_workspaces(db, true, clock).unwrap();
        let ws = WorkspaceRef::new("ro-cli", &prefix);
        match reader.save_cursor(&ws, "m", 0) {
            Err(StoreError::Backend { message, .. }) => {
                assert!(message.contains("read-only transaction"), "{message}")
            }
            other => panic!("a workspace write through the read path: {other:?}"),
        }
    }
}
