//! The rows of [`BACKENDS`](crate::BACKENDS): one per backend, each opening both contracts on
//! one database handle of its own crate.

use std::sync::Arc;

use execstore::operator::{MemoryOperatorStore, OperatorStore};
use execstore::workspace::{Clock, MemoryWorkspaceStorage, SystemClock, TimedWorkspace};
use execstore::{ExecutionStore, MemoryStore, Result, StoreError};
use execstore_postgres::{PgOperatorStore, PgStore, PgWorkspaceStorage};
use execstore_sqlite::{SqliteOperatorStore, SqliteStore, SqliteWorkspaceStorage};

use crate::{Backend, Holds, Location, Options, Stores};

/// `memory:`: [`MemoryStore`] and [`MemoryWorkspaceStorage`], private to the process.
pub static MEMORY: Backend = Backend {
    name: "memory",
    schemes: &["memory:"],
    location: Location::Nothing,
    open: open_memory,
    recover: |_| Ok(()),
    probe: |_, _| {
        Ok(Holds {
            executions: false,
            workspaces: false,
        })
    },
    prefixes: |_| Ok(Vec::new()),
};

/// `sqlite:PATH`, `sqlite://PATH` or a plain path: execstore-sqlite, both contracts on one
/// [`execstore_sqlite::Db`].
pub static SQLITE: Backend = Backend {
    name: "sqlite",
    schemes: &["sqlite:"],
    location: Location::Path,
    open: open_sqlite,
    recover: |path| execstore_sqlite::recover(path),
    probe: |path, prefix| {
        Ok(Holds {
            executions: execstore_sqlite::has_execution_tables(path, prefix)?,
            workspaces: execstore_sqlite::has_workspace_tables(path)?,
        })
    },
    prefixes: |path| execstore_sqlite::execution_prefixes(path),
};

/// `postgres://...` or `postgresql://...`: execstore-postgres, both contracts on one
/// [`execstore_postgres::Db`] (one pool).
pub static POSTGRES: Backend = Backend {
    name: "postgres",
    schemes: &["postgres://", "postgresql://"],
    location: Location::Url,
    open: open_postgres,
    recover: |_| Ok(()),
    probe: |url, prefix| {
        Ok(Holds {
            executions: execstore_postgres::store_exists(url, prefix)?,
            workspaces: execstore_postgres::has_workspace_tables(url, None)?,
        })
    },
    prefixes: |url| execstore_postgres::execution_prefixes(url),
};

/// Every backend, in the order a URL's scheme is looked up: a new backend adds its row here.
pub static BACKENDS: &[&Backend] = &[&MEMORY, &SQLITE, &POSTGRES];

fn clock(options: &Options) -> Arc<dyn Clock> {
    options.clock.clone().unwrap_or_else(|| Arc::new(SystemClock))
}

/// The prefix is checked before anything is opened (a bad one creates no file).
fn check_prefix(options: &Options) -> Result<()> {
    match (&options.prefix, options.executions) {
        (Some(prefix), true) => execstore::kit::names::check_prefix(prefix),
        _ => Ok(()),
    }
}

fn open_memory(_: &str, options: &Options) -> Result<Stores> {
    if options.read_only {
        return Err(StoreError::invalid(
            "read_only",
            "an in-memory store starts empty: open it read-write",
        ));
    }
    let executions = options
        .executions
        .then(|| Arc::new(MemoryStore::new()) as Arc<dyn ExecutionStore>);
    let workspaces = options
        .workspaces
        .then(|| Arc::new(MemoryWorkspaceStorage::new(clock(options))) as Arc<dyn TimedWorkspace>);
    let operator = options
        .operator
        .then(|| Arc::new(MemoryOperatorStore::new()) as Arc<dyn OperatorStore>);
    Ok(Stores {
        backend: &MEMORY,
        executions,
        workspaces,
        operator,
        workspace_version: None,
    })
}

fn open_sqlite(path: &str, options: &Options) -> Result<Stores> {
    check_prefix(options)?;
    let settings = &options.sqlite;
    let db = execstore_sqlite::Db::open(path, settings.connect.clone().read_only(options.read_only))?;
    let executions = if options.executions {
        let mut store = settings
            .store
            .clone()
            .trace_max(options.trace_max)
            .create_schema(options.create_schema);
        store.prefix = options.prefix.clone();
        Some(Arc::new(SqliteStore::on(&db, store)?) as Arc<dyn ExecutionStore>)
    } else {
        None
    };
    let (workspaces, workspace_version) = if options.workspaces {
        let ws = settings
            .workspace
            .clone()
            .clock(clock(options))
            .any_version(options.any_version);
        let storage = SqliteWorkspaceStorage::on(&db, ws)?;
        let version = if options.any_version {
            Some(storage.schema_version()?).filter(|v| v != execstore_sqlite::WORKSPACE_SCHEMA_VERSION)
        } else {
            None
        };
        (Some(Arc::new(storage) as Arc<dyn TimedWorkspace>), version)
    } else {
        (None, None)
    };
    let operator = if options.operator {
        Some(Arc::new(SqliteOperatorStore::on(&db)?) as Arc<dyn OperatorStore>)
    } else {
        None
    };
    Ok(Stores {
        backend: &SQLITE,
        executions,
        workspaces,
        operator,
        workspace_version,
    })
}

fn open_postgres(url: &str, options: &Options) -> Result<Stores> {
    check_prefix(options)?;
    let settings = &options.postgres;
    let db = execstore_postgres::Db::open(url, settings.connect.clone().read_only(options.read_only))?;
    let executions = if options.executions {
        let mut store = settings
            .store
            .clone()
            .trace_max(options.trace_max)
            .create_schema(options.create_schema);
        store.prefix = options.prefix.clone();
        Some(Arc::new(PgStore::on(&db, store)?) as Arc<dyn ExecutionStore>)
    } else {
        None
    };
    let workspaces = if options.workspaces {
        let ws = settings.workspace.clone().clock(clock(options));
        Some(Arc::new(PgWorkspaceStorage::on(&db, ws)?) as Arc<dyn TimedWorkspace>)
    } else {
        None
    };
    let operator = if options.operator {
        Some(Arc::new(PgOperatorStore::on(&db)?) as Arc<dyn OperatorStore>)
    } else {
        None
    };
    Ok(Stores {
        backend: &POSTGRES,
        executions,
        workspaces,
        operator,
        workspace_version: None,
    })
}
