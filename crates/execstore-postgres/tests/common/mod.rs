//! The server the tests run against, and a harness on a table prefix of its own.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use execstore::conformance::executions::Harness;
use execstore::ExecutionStore;
use execstore_postgres::{PgOptions, PgStore};

/// The server's URL from `EXECSTORE_PG_URL`. Without it the test fails, unless
/// `EXECSTORE_PG_OPTIONAL=1`: then it prints SKIPPED and `None` is returned.
pub fn server_url() -> Option<String> {
    match std::env::var("EXECSTORE_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1") => {
            // One line per skipped test, straight to stderr past the harness's capture, so
            // scripts/test counts it as skipped rather than passed.
            use std::io::Write as _;
            let thread = std::thread::current();
            let line = format!(
                "SKIPPED: {}: EXECSTORE_PG_URL is not set (EXECSTORE_PG_OPTIONAL=1)\n",
                thread.name().unwrap_or("?")
            );
            let _ = std::io::stderr().write_all(line.as_bytes());
            None
        }
        _ => panic!(
            "EXECSTORE_PG_URL is not set: these tests need a PostgreSQL server, e.g. \
             `source scripts/lib/postgres.sh && pg_start && trap pg_stop EXIT` (or set \
             EXECSTORE_PG_OPTIONAL=1 to skip them)"
        ),
    }
}

/// A table prefix no other test (of any process) uses: `t<pid><time><counter>`.
pub fn unique_prefix() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "t{:x}_{nanos:x}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Drops every table and index made under `prefix` (`None`: the bare names).
pub fn drop_tables(url: &str, prefix: Option<&str>) {
    // Best effort: a test that failed may have left the server unreachable.
    let _ = execstore_postgres::drop_store(url, prefix);
}

/// A store on the test server under a table prefix of its own (or the given one, in a schema
/// of its own); `reopen` drops it and opens it again. The tables are dropped at the end.
pub struct PgHarness {
    pub url: String,
    pub options: PgOptions,
    pub store: Option<PgStore>,
    /// The prefix to drop at the end.
    cleanup: Option<String>,
}

impl PgHarness {
    /// Bare-named tables are shared by every user of the server, so the "no prefix" store
    /// of the tests is still namespaced: it runs in a schema of its own (see
    /// [`PgHarness::in_schema`]). This one uses a unique prefix.
    pub fn new() -> Option<Self> {
        let prefix = unique_prefix();
        Self::with_options(PgOptions::new().prefix(prefix.clone()), Some(prefix))
    }

    /// A store with harel's `harel_` prefix, in a schema of its own so that it does not
    /// collide with another test run's `harel_` tables.
    pub fn harel() -> Option<Self> {
        Self::in_schema(PgOptions::new().prefix("harel"))
    }

    /// A store with bare table names, in a schema of its own.
    pub fn bare() -> Option<Self> {
        Self::in_schema(PgOptions::new())
    }

    /// A store opened without `create_schema` on harel's tables only (made by harel's DDL,
    /// as a migration tool would), in a schema of its own: no function, index or table of
    /// execstore's, so every step is plain statements.
    pub fn harel_schema_only() -> Option<Self> {
        Self::in_schema_with(PgOptions::new().prefix("harel").create_schema(false), |client| {
            for stmt in execstore_postgres::harel_schema(Some("harel")).expect("harel's schema") {
                client.batch_execute(&stmt).expect("harel's DDL");
            }
        })
    }

    fn in_schema(options: PgOptions) -> Option<Self> {
        Self::in_schema_with(options, |_| {})
    }

    fn in_schema_with(options: PgOptions, setup: impl FnOnce(&mut postgres::Client)) -> Option<Self> {
        let url = server_url()?;
        let schema = unique_prefix();
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        client
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .expect("create schema");
        let sep = if url.contains('?') { '&' } else { '?' };
        let url = format!("{url}{sep}options=-csearch_path%3D{schema}");
        setup(&mut postgres::Client::connect(&url, postgres::NoTls).expect("connect"));
        let store = PgStore::open(&url, options.clone()).expect("open");
        Some(PgHarness {
            url,
            options,
            store: Some(store),
            cleanup: Some(format!("schema:{schema}")),
        })
    }

    pub fn with_options(options: PgOptions, cleanup: Option<String>) -> Option<Self> {
        let url = server_url()?;
        let store = PgStore::open(&url, options.clone()).expect("open");
        Some(PgHarness {
            url,
            options,
            store: Some(store),
            cleanup,
        })
    }

    pub fn pg(&self) -> &PgStore {
        self.store.as_ref().expect("the store is open")
    }
}

impl Drop for PgHarness {
    fn drop(&mut self) {
        self.store = None;
        if std::thread::panicking() {
            return; // keep the tables for a look
        }
        match self.cleanup.as_deref() {
            Some(c) if c.starts_with("schema:") => {
                if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
                    let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", &c[7..]));
                }
            }
            Some(prefix) => drop_tables(&self.url, Some(prefix)),
            None => {}
        }
    }
}

impl Harness for PgHarness {
    fn store(&self) -> &dyn ExecutionStore {
        self.pg()
    }

    fn reopen(&mut self) -> bool {
        self.store = None;
        self.store = Some(PgStore::open(&self.url, self.options.clone()).expect("reopen"));
        true
    }
}

/// `PgHarness::$ctor()`, or returns from the test (after printing SKIPPED) when there is no
/// server and it is optional.
#[allow(unused_macros)]
macro_rules! pg_harness {
    ($ctor:ident) => {
        match $crate::common::PgHarness::$ctor() {
            Some(h) => h,
            None => return,
        }
    };
}

/// A workspace storage on the test server in a schema of its own (dropped at the end unless
/// the test failed), on a [`ManualClock`]; `reopen` closes it and opens it again.
pub struct WsHarness {
    pub url: String,
    pub schema: String,
    pub clock: execstore::workspace::ManualClock,
    pub storage: Option<execstore_postgres::PgWorkspaceStorage>,
}

impl WsHarness {
    /// `None` (after printing SKIPPED) when there is no server and it is optional.
    pub fn new() -> Option<Self> {
        let url = server_url()?;
        let schema = unique_prefix();
        let clock = execstore::workspace::ManualClock::new(execstore::conformance::workspace::t0());
        let mut h = WsHarness {
            url,
            schema,
            clock,
            storage: None,
        };
        h.storage = Some(h.open(h.options()).expect("open"));
        Some(h)
    }

    /// The options of this harness's storage: its schema and clock.
    pub fn options(&self) -> execstore_postgres::PgWorkspaceOptions {
        execstore_postgres::PgWorkspaceOptions::new()
            .schema(self.schema.clone())
            .clock(std::sync::Arc::new(self.clock.clone()))
    }

    pub fn open(
        &self,
        options: execstore_postgres::PgWorkspaceOptions,
    ) -> execstore::Result<execstore_postgres::PgWorkspaceStorage> {
        execstore_postgres::PgWorkspaceStorage::open(&self.url, options)
    }

    pub fn pg(&self) -> &execstore_postgres::PgWorkspaceStorage {
        self.storage.as_ref().expect("the storage is open")
    }

    /// A raw connection whose search path is the harness's schema.
    pub fn client(&self) -> postgres::Client {
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).expect("connect");
        client
            .batch_execute(&format!("SET search_path = {}", self.schema))
            .expect("search_path");
        client
    }
}

impl Drop for WsHarness {
    fn drop(&mut self) {
        self.storage = None;
        if std::thread::panicking() {
            eprintln!("kept schema {} for a look", self.schema);
            return;
        }
        let _ = execstore_postgres::drop_workspace_schema(&self.url, &self.schema);
    }
}

impl execstore::conformance::workspace::WorkspaceHarness for WsHarness {
    /// The workspace's row is locked `FOR UPDATE`: other workspaces' transactions proceed.
    fn parallel_workspaces(&self) -> bool {
        true
    }
    fn storage(&self) -> &dyn execstore::workspace::WorkspaceStorage {
        self.pg()
    }

    fn clock(&self) -> &execstore::workspace::ManualClock {
        &self.clock
    }

    fn reopen(&mut self) -> bool {
        self.storage = None;
        self.storage = Some(self.open(self.options()).expect("reopen"));
        true
    }
}

/// `WsHarness::new()`, or returns from the test (after printing SKIPPED) when there is no
/// server and it is optional.
#[allow(unused_macros)]
macro_rules! ws_harness {
    () => {
        match $crate::common::WsHarness::new() {
            Some(h) => h,
            None => return,
        }
    };
}

/// The workspace `t`/`w`.
pub fn ws(t: &str, w: &str) -> execstore::workspace::WorkspaceRef {
    execstore::workspace::WorkspaceRef::new(t, w)
}

/// Appends `entries` to `w` in a transaction of their own.
pub fn commit_append(
    s: &dyn execstore::workspace::WorkspaceStorage,
    w: &execstore::workspace::WorkspaceRef,
    entries: &[execstore::workspace::Entry],
) {
    let mut tx = s.begin(w).unwrap();
    tx.append(entries).unwrap();
    tx.commit().unwrap();
}
