//! The table of execstore's backends keyed by URL scheme (after sqlx's `any` driver table):
//! one place that turns a URL or a path into stores of either contract, used by the CLI, the
//! benches, the monitor and the Python package instead of matches of their own.
//!
//! | URL                                      | backend    |
//! |------------------------------------------|------------|
//! | `memory:`                                | [`MEMORY`]: `MemoryStore`, `MemoryWorkspaceStorage` |
//! | `sqlite:PATH`, `sqlite://PATH`, or a plain path (`runs.db`, `/var/x.db`, `:memory:`) | [`SQLITE`] |
//! | `postgres://...`, `postgresql://...`     | [`POSTGRES`] |
//!
//! [`open`] opens the contracts asked for; both on one database handle (one SQLite writer and
//! reader, one PostgreSQL pool) when both are asked. A scheme no row answers (`mysql://x`)
//! is refused with [`UnknownScheme`], which names the known ones; nothing is created.
//!
//! ```no_run
//! use execstore_any::{open, Options};
//!
//! let stores = open("sqlite:runs.db", &Options::new().executions(true).workspaces(true))?;
//! let runs = stores.executions.expect("asked for");
//! let log = stores.workspaces.expect("asked for");
//! # Ok::<(), execstore::StoreError>(())
//! ```
//!
//! A third backend is one more [`Backend`] row in `rows.rs` (listed in [`BACKENDS`]), its
//! crate in this crate's and the workspace's `Cargo.toml`: every surface that takes a URL
//! (the CLI's `--db`, the monitor) then opens it.
#![deny(missing_docs)]

mod rows;

use std::fmt;
use std::sync::Arc;

use execstore::operator::OperatorStore;
use execstore::workspace::{Clock, TimedWorkspace};
use execstore::{executions::DEFAULT_TRACE_MAX, ExecutionStore, Result, StoreError};

pub use rows::{BACKENDS, MEMORY, POSTGRES, SQLITE};

/// One backend: the URL schemes it answers and how it opens and probes a location.
pub struct Backend {
    /// Its name: `"memory"`, `"sqlite"`, `"postgres"`.
    pub name: &'static str,
    /// The URL schemes it answers, as a URL starts with them (`"postgres://"`, `"sqlite:"`).
    pub schemes: &'static [&'static str],
    /// What its rows are handed of a URL.
    pub location: Location,
    /// Opens the contracts `options` asks for at `location` (what follows the scheme for a
    /// file backend, the whole URL for a server).
    pub open: fn(location: &str, options: &Options) -> Result<Stores>,
    /// What `location` holds, creating and changing nothing (`prefix`: the execution tables').
    pub probe: fn(location: &str, prefix: Option<&str>) -> Result<Holds>,
    /// The sets of execution tables `location` holds (each prefix under which all of harel's
    /// tables are there; `None`: the bare names), creating and changing nothing.
    pub prefixes: fn(location: &str) -> Result<Vec<Option<String>>>,
    /// Before a tool writes to what a read-only open refused to touch: lets the backend's own
    /// recovery run (SQLite: a hot journal rolled back), creating nothing; a no-op where there
    /// is none.
    pub recover: fn(location: &str) -> Result<()>,
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backend")
            .field("name", &self.name)
            .field("schemes", &self.schemes)
            .finish_non_exhaustive()
    }
}

/// What a backend is handed of its URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A file's path: what follows the scheme (`sqlite:PATH`, `sqlite://PATH`), or a plain
    /// path.
    Path,
    /// The whole URL (a server's).
    Url,
    /// Nothing (`memory:`).
    Nothing,
}

/// The schemes of [`BACKENDS`], as written in a URL (`memory:`, `sqlite:`, `postgres://`...).
pub fn known_schemes() -> Vec<String> {
    BACKENDS
        .iter()
        .flat_map(|b| b.schemes.iter().map(|s| (*s).to_owned()))
        .collect()
}

/// A URL whose scheme no backend answers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no backend answers the URL scheme {scheme:?}: the known ones are {}, or a plain file path", known.join(" "))]
pub struct UnknownScheme {
    /// The scheme found, without the colon.
    pub scheme: String,
    /// The schemes that are known (see [`known_schemes`]).
    pub known: Vec<String>,
}

impl From<UnknownScheme> for StoreError {
    fn from(e: UnknownScheme) -> StoreError {
        StoreError::invalid("url", e.to_string())
    }
}

/// A URL resolved to its backend: the row and the location it is handed.
#[derive(Clone, Debug)]
pub struct Target {
    /// The backend.
    pub backend: &'static Backend,
    /// What the backend opens: a file's path, or a server's whole URL.
    pub location: String,
}

impl Target {
    /// The backend of `url`: `scheme://...` or `scheme:...` with a scheme of [`BACKENDS`]; a
    /// `word://...` whose scheme no backend answers is [`UnknownScheme`]; anything else is a
    /// plain SQLite path (`runs.db`, `./x:y.db`, `:memory:`).
    pub fn parse(url: &str) -> std::result::Result<Target, UnknownScheme> {
        let Some((scheme, rest)) = split_scheme(url) else {
            return Ok(Target {
                backend: &SQLITE,
                location: url.to_owned(),
            });
        };
        let row = BACKENDS.iter().find(|b| {
            b.schemes.iter().any(|s| {
                s.split(':')
                    .next()
                    .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
            })
        });
        match row {
            Some(backend) => Ok(Target {
                backend,
                location: match backend.location {
                    // `sqlite://PATH` and `sqlite:PATH` both name PATH.
                    Location::Path => rest.strip_prefix("//").unwrap_or(rest).to_owned(),
                    Location::Url => url.to_owned(),
                    Location::Nothing => String::new(),
                },
            }),
            None if rest.starts_with("//") => Err(UnknownScheme {
                scheme: scheme.to_owned(),
                known: known_schemes(),
            }),
            None => Ok(Target {
                backend: &SQLITE,
                location: url.to_owned(),
            }),
        }
    }

    /// Whether the location is a file on this machine.
    pub fn is_file(&self) -> bool {
        self.backend.location == Location::Path
    }

    /// Opens the contracts `options` asks for (see [`open`]).
    pub fn open(&self, options: &Options) -> Result<Stores> {
        (self.backend.open)(&self.location, options)
    }

    /// Lets the backend's recovery run before a write (see [`Backend::recover`]).
    pub fn recover(&self) -> Result<()> {
        (self.backend.recover)(&self.location)
    }

    /// What the location holds (see [`probe`]).
    pub fn probe(&self, prefix: Option<&str>) -> Result<Holds> {
        (self.backend.probe)(&self.location, prefix)
    }

    /// The sets of execution tables the location holds (see [`Backend::prefixes`]); a file
    /// that does not exist holds none.
    pub fn prefixes(&self) -> Result<Vec<Option<String>>> {
        match (self.backend.prefixes)(&self.location) {
            Err(StoreError::NotFound { .. }) if self.is_file() => Ok(Vec::new()),
            found => found,
        }
    }

    /// The execution tables' prefix to open: `given` when there is one; otherwise found in
    /// the location ([`resolve_prefix`]).
    pub fn resolve_prefix(&self, given: Option<&str>, how: &str) -> Result<Option<String>> {
        match given {
            Some(prefix) => Ok(Some(prefix.to_owned())),
            None => execstore::kit::names::pick_prefix(&self.prefixes()?, how),
        }
    }
}

/// `scheme` and what follows its colon, if `url` starts with an RFC 3986 scheme of two or
/// more characters (one letter is a Windows drive, `C:\x.db`).
fn split_scheme(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let ok = scheme.len() >= 2
        && first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some((scheme, rest))
}

/// What to open, and how. The fields every backend reads come first; then each backend's own
/// settings, which the others ignore.
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    /// Opens the execution store.
    pub executions: bool,
    /// Opens the workspace log.
    pub workspaces: bool,
    /// Opens the operator's records (the audit log and saved views, `execstore::operator`).
    pub operator: bool,
    /// Reads only: nothing is created, migrated or written (see each backend's `read_only`).
    /// The memory backend refuses it (it starts empty).
    pub read_only: bool,
    /// The execution tables' prefix (`None`: the bare names).
    pub prefix: Option<String>,
    /// How many trace steps are kept per execution (`None`: all).
    pub trace_max: Option<u32>,
    /// Whether opening creates the execution tables and applies execstore's migrations.
    pub create_schema: bool,
    /// The workspace log's clock (`None`: the system clock).
    pub clock: Option<Arc<dyn Clock>>,
    /// Read-only workspace tables recorded at another reflexr schema version are opened all
    /// the same (SQLite; see `SqliteWorkspaceOptions::any_version`): [`Stores::workspace_version`]
    /// says which.
    pub any_version: bool,
    /// SQLite's settings (its connection settings, and any option of its two contracts not
    /// set above).
    pub sqlite: SqliteSettings,
    /// PostgreSQL's settings (likewise).
    pub postgres: PostgresSettings,
}

/// SQLite's own settings in [`Options`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct SqliteSettings {
    /// The connection settings (`read_only` is [`Options::read_only`]'s).
    pub connect: execstore_sqlite::ConnectOptions,
    /// The execution store's options (prefix, trace steps and schema are [`Options`]').
    pub store: execstore_sqlite::SqliteOptions,
    /// The workspace log's options (clock and `any_version` are [`Options`]').
    pub workspace: execstore_sqlite::SqliteWorkspaceOptions,
}

/// PostgreSQL's own settings in [`Options`].
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct PostgresSettings {
    /// The connection settings (`read_only` is [`Options::read_only`]'s).
    pub connect: execstore_postgres::ConnectOptions,
    /// The execution store's options (prefix, trace steps and schema are [`Options`]').
    pub store: execstore_postgres::PgOptions,
    /// The workspace log's options (the clock is [`Options`]').
    pub workspace: execstore_postgres::PgWorkspaceOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            executions: false,
            workspaces: false,
            operator: false,
            read_only: false,
            prefix: None,
            trace_max: Some(DEFAULT_TRACE_MAX),
            create_schema: true,
            clock: None,
            any_version: false,
            sqlite: SqliteSettings::default(),
            postgres: PostgresSettings::default(),
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("executions", &self.executions)
            .field("workspaces", &self.workspaces)
            .field("operator", &self.operator)
            .field("read_only", &self.read_only)
            .field("prefix", &self.prefix)
            .field("trace_max", &self.trace_max)
            .field("create_schema", &self.create_schema)
            .field("clock", &self.clock.as_ref().map_or("system", |_| "injected"))
            .field("any_version", &self.any_version)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Nothing to open yet, read-write, no prefix, 200 trace steps, the schema created, the
    /// system clock, each backend's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens the execution store (or not).
    pub fn executions(mut self, yes: bool) -> Self {
        self.executions = yes;
        self
    }

    /// Opens the workspace log (or not).
    pub fn workspaces(mut self, yes: bool) -> Self {
        self.workspaces = yes;
        self
    }

    /// Opens the operator's records (or not).
    pub fn operator(mut self, yes: bool) -> Self {
        self.operator = yes;
        self
    }

    /// Reads only.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// The execution tables' prefix (`None`: bare names).
    pub fn prefix(mut self, prefix: Option<&str>) -> Self {
        self.prefix = prefix.map(str::to_owned);
        self
    }

    /// How many trace steps are kept per execution (`None`: all).
    pub fn trace_max(mut self, trace_max: Option<u32>) -> Self {
        self.trace_max = trace_max;
        self
    }

    /// Whether the execution tables are created and migrated.
    pub fn create_schema(mut self, create_schema: bool) -> Self {
        self.create_schema = create_schema;
        self
    }

    /// The workspace log's clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Opens read-only workspace tables at another schema version too.
    pub fn any_version(mut self, any_version: bool) -> Self {
        self.any_version = any_version;
        self
    }

    /// SQLite's settings.
    pub fn sqlite(mut self, sqlite: SqliteSettings) -> Self {
        self.sqlite = sqlite;
        self
    }

    /// PostgreSQL's settings.
    pub fn postgres(mut self, postgres: PostgresSettings) -> Self {
        self.postgres = postgres;
        self
    }
}

/// What [`open`] opened.
#[non_exhaustive]
pub struct Stores {
    /// The backend that opened them.
    pub backend: &'static Backend,
    /// The execution store, if asked for.
    pub executions: Option<Arc<dyn ExecutionStore>>,
    /// The workspace log, if asked for.
    pub workspaces: Option<Arc<dyn TimedWorkspace>>,
    /// The operator's records (audit log, saved views), if asked for.
    pub operator: Option<Arc<dyn OperatorStore>>,
    /// The reflexr schema version the workspace tables record, where the backend knows it
    /// and it differs from the one this build reads (only with [`Options::any_version`]).
    pub workspace_version: Option<String>,
}

impl fmt::Debug for Stores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stores")
            .field("backend", &self.backend.name)
            .field("executions", &self.executions.is_some())
            .field("workspaces", &self.workspaces.is_some())
            .field("operator", &self.operator.is_some())
            .field("workspace_version", &self.workspace_version)
            .finish()
    }
}

/// What a location holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holds {
    /// Execution tables under the prefix.
    pub executions: bool,
    /// reflexr's `reflexr_*` tables.
    pub workspaces: bool,
}

/// Opens the contracts `options` asks for at `url` (see the crate's table of URLs). A scheme
/// no backend answers is [`StoreError::InvalidInput`] (`url`) naming the known ones.
pub fn open(url: &str, options: &Options) -> Result<Stores> {
    Target::parse(url)?.open(options)
}

/// The execution tables' prefix to open at `url` when the caller gave `given`: `given` when
/// it is `Some`; otherwise the one set of execution tables the location holds (`harel_*`,
/// the bare names, or any other prefix whose tables are all there), `None` (the bare names,
/// the default a writable open creates) when it holds none, and when it holds several an
/// [`StoreError::InvalidInput`] on `prefix` listing them (`how`: the surface's words for
/// picking one, `"pass --prefix NAME"`). Creates and changes nothing.
pub fn resolve_prefix(url: &str, given: Option<&str>, how: &str) -> Result<Option<String>> {
    Target::parse(url)?.resolve_prefix(given, how)
}

/// What `url` holds, creating and changing nothing.
pub fn probe(url: &str, prefix: Option<&str>) -> Result<Holds> {
    Target::parse(url)?.probe(prefix)
}

/// The crate's README (its crates.io page): its examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
