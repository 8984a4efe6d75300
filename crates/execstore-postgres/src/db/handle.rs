//! [`Db`]: one PostgreSQL database opened once, its pool and its connection settings, which
//! both contracts' stores are built on ([`PgStore::on`](crate::PgStore::on),
//! [`PgWorkspaceStorage::on`](crate::PgWorkspaceStorage::on)), after sqlx's `ConnectOptions`:
//! the settings of a connection live here once, each contract keeps only its own options, and
//! both share one pool.

use std::time::Duration;

use execstore::Result;

use super::{check_schema_name, config, pool, pool_err, Connect, Pool, Pooled};

/// How [`Db::open`] connects: the settings of every pooled connection, whichever contract
/// uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// The most connections the pool holds open at once. Every open workspace transaction
    /// holds one; so does every operation of either contract while it runs.
    pub max_connections: u32,
    /// How long opening a connection, or waiting for a free one, may take before the
    /// operation fails with a retryable [`StoreError::Backend`](execstore::StoreError::Backend).
    pub connect_timeout: Duration,
    /// Opens for reading only (a monitor, a report): no table is created and no migration
    /// applied (tables that are missing are an error), and every session is
    /// `default_transaction_read_only`, so any write fails in the server.
    pub read_only: bool,
    /// The PostgreSQL schema made every connection's `search_path` (so both contracts'
    /// tables live there; the workspace log creates it if missing, unless read-only). `None`
    /// (the default) uses the connection's own search path, `public` unless the URL or the
    /// role says otherwise. A lowercase letter or `_`, then lowercase letters, digits or `_`.
    pub schema: Option<String>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            max_connections: 8,
            connect_timeout: Duration::from_secs(10),
            read_only: false,
            schema: None,
        }
    }
}

impl ConnectOptions {
    /// The defaults: 8 connections, a 10 s connect timeout, writable, the connection's own
    /// schema.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The builders of the connection settings, written once for every options type that carries
/// a [`ConnectOptions`]: the handle's own and each contract's (whose `open` makes a [`Db`]
/// with them). `connect_builders!(Type)` for [`ConnectOptions`] itself,
/// `connect_builders!(Type, field)` for a type that keeps them in `field`.
macro_rules! connect_builders {
    ($ty:ty $(, $field:ident)?) => {
        impl $ty {
            /// Sets the pool size (at least 1; a connection setting: see [`ConnectOptions`]).
            pub fn max_connections(mut self, max_connections: u32) -> Self {
                self$(.$field)?.max_connections = max_connections;
                self
            }

            /// Sets the connect (and pool wait) timeout (a connection setting).
            pub fn connect_timeout(mut self, connect_timeout: std::time::Duration) -> Self {
                self$(.$field)?.connect_timeout = connect_timeout;
                self
            }

            /// Opens for reading only (see [`ConnectOptions::read_only`]).
            pub fn read_only(mut self, read_only: bool) -> Self {
                self$(.$field)?.read_only = read_only;
                self
            }

            /// Makes `schema` every connection's search path, where the tables live (see
            /// [`ConnectOptions::schema`]).
            pub fn schema(mut self, schema: impl Into<String>) -> Self {
                self$(.$field)?.schema = Some(schema.into());
                self
            }
        }
    };
}
pub(crate) use connect_builders;

connect_builders!(ConnectOptions);

/// One PostgreSQL database: the pool of connections (each with its prepared statements) and
/// the settings they were made with. Cheap to clone (the clones share the pool); build each
/// contract's store on it with its `on` constructor, and both draw from the one pool:
///
/// ```no_run
/// use execstore_postgres::{ConnectOptions, Db, PgOptions, PgStore};
/// use execstore_postgres::{PgWorkspaceOptions, PgWorkspaceStorage};
///
/// let db = Db::open("postgres://app@db.internal/app", ConnectOptions::new())?;
/// let runs = PgStore::on(&db, PgOptions::new().prefix("harel"))?;
/// let log = PgWorkspaceStorage::on(&db, PgWorkspaceOptions::new())?;
/// # Ok::<(), execstore::StoreError>(())
/// ```
#[derive(Clone)]
pub struct Db {
    pub(crate) pool: Pool,
    /// What every connection (the pool's, and the `LISTEN` ones) is made with.
    pub(crate) config: postgres::Config,
    options: ConnectOptions,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("pool", &self.pool.state())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Connects to the database at `url` (`postgres://user@host:port/db?...`, or the
    /// `key=value` form): a pool of at most [`ConnectOptions::max_connections`], whose first
    /// connection is made now, so a server that cannot be reached fails here. Nothing is
    /// created: each contract's `on` creates its own tables.
    pub fn open(url: &str, options: ConnectOptions) -> Result<Db> {
        if let Some(schema) = &options.schema {
            check_schema_name(schema)?;
        }
        let config = config(
            url,
            &Connect {
                timeout: options.connect_timeout,
                read_only: options.read_only,
                search_path: options.schema.as_deref(),
            },
        )?;
        let pool = pool(&config, options.max_connections, options.connect_timeout)?;
        Ok(Db {
            pool,
            config,
            options,
        })
    }

    /// The settings the database was opened with.
    pub fn options(&self) -> &ConnectOptions {
        &self.options
    }

    /// Whether the database was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.options.read_only
    }

    /// How many connections the pool holds open now (idle or in use).
    pub fn connections(&self) -> u32 {
        self.pool.state().connections
    }

    /// A pooled connection.
    pub(crate) fn conn(&self) -> Result<Pooled> {
        self.pool.get().map_err(pool_err)
    }

    /// Creates [`ConnectOptions::schema`] if it is missing (unless read-only), so that a
    /// contract's tables have somewhere to go whichever contract opens first. Only when
    /// missing: `CREATE SCHEMA IF NOT EXISTS` asks for the right to create one even where it
    /// exists, which a role that only uses the tables may not have (`IF NOT EXISTS` then only
    /// covers another process creating it at the same time).
    pub(crate) fn ensure_schema(&self) -> Result<()> {
        let Some(schema) = self.options.schema.as_deref().filter(|_| !self.options.read_only) else {
            return Ok(());
        };
        let mut conn = self.conn()?;
        let exists = !conn
            .query(
                "SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1",
                &[&schema],
            )?
            .is_empty();
        if !exists {
            // A plain identifier (checked by `Db::open`).
            conn.batch(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))?;
        }
        Ok(())
    }
}
