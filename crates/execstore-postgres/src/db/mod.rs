//! The private database layer both contracts share: how a URL becomes a connection
//! configuration, the pool and its connections (each with its prepared statements), errors,
//! advisory locks and `LISTEN`.
//!
//! Nothing here knows a table: each contract's module keeps its own statements, schema and
//! version record.

mod error;
pub(crate) mod handle;
mod listen;

use std::collections::HashMap;
use std::time::Duration;

use execstore::{Result, StoreError};
use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement};

pub(crate) use error::{map_err, pool_err, session_lost, Db};
pub(crate) use listen::Listener;

/// How to connect, beyond what the URL says.
#[derive(Clone, Debug)]
pub(crate) struct Connect<'a> {
    /// How long opening a connection, or waiting for a free one, may take.
    pub(crate) timeout: Duration,
    /// Every session `default_transaction_read_only`.
    pub(crate) read_only: bool,
    /// Every session's `search_path`: this schema only (an identifier checked by the caller).
    pub(crate) search_path: Option<&'a str>,
}

/// The connection configuration for `url` (`postgres://...` or `key=value`), with the
/// timeout, `application_name` (unless the URL names one), read-only sessions and search path
/// of `how`.
pub(crate) fn config(url: &str, how: &Connect<'_>) -> Result<postgres::Config> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e: postgres::Error| StoreError::invalid("url", e.to_string()))?;
    // Without a host the driver has nowhere to connect: every open would wait out the pool's
    // timeout and answer a retryable "invalid configuration" for what is bad input.
    if config.get_hosts().is_empty() {
        return Err(StoreError::invalid(
            "url",
            "names no host (postgres://USER@HOST/DATABASE, or host=... as key=value)",
        ));
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(how.timeout);
    }
    if config.get_application_name().is_none() {
        config.application_name("execstore");
    }
    let mut options = config.get_options().unwrap_or_default().to_owned();
    if how.read_only {
        options = format!("{options} -c default_transaction_read_only=on");
    }
    if let Some(schema) = how.search_path {
        options = format!("{options} -c search_path={schema}");
    }
    let options = options.trim_start();
    if !options.is_empty() {
        config.options(options);
    }
    Ok(config)
}

/// One pooled connection and the statements prepared on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) statements: HashMap<String, Statement>,
    /// Set when the session may be left in a state the next user must not inherit (a
    /// transaction whose rollback failed): the pool then closes it instead of reusing it.
    pub(crate) broken: bool,
    /// The tenant this session names to row-level security (`lattice.tenant_id`, set at
    /// session level), if any.
    pub(crate) tenant: Option<String>,
}

impl Conn {
    /// `sql` prepared on this connection, once.
    pub(crate) fn prepare(&mut self, sql: &str) -> Result<Statement> {
        prepared(&mut self.statements, &mut self.client, sql)
    }

    /// Runs a prepared `sql`, returning its rows.
    pub(crate) fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let stmt = self.prepare(sql)?;
        let result = self.client.query(&stmt, params);
        self.checked(result)
    }

    /// Runs a prepared `sql` that returns exactly one row.
    pub(crate) fn query_one(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let stmt = self.prepare(sql)?;
        let result = self.client.query_one(&stmt, params);
        self.checked(result)
    }

    /// Runs a prepared `sql`, returning how many rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let stmt = self.prepare(sql)?;
        let result = self.client.execute(&stmt, params);
        self.checked(result)
    }

    /// `result` as a store result; an error that lost the session marks this connection
    /// broken, so the pool drops it rather than hand it to the next caller (a statement sent
    /// on its own has no transaction whose failed rollback would find that out).
    fn checked<T>(&mut self, result: std::result::Result<T, postgres::Error>) -> Result<T> {
        result.map_err(|e| {
            if session_lost(&e) {
                self.broken = true;
            }
            map_err(e)
        })
    }

    /// Runs statements without parameters in one round trip (the simple query protocol).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<()> {
        self.client.batch_execute(sql).db()
    }
}

/// Makes and checks the pool's connections.
#[derive(Debug)]
pub(crate) struct Manager {
    pub(crate) config: postgres::Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> std::result::Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.config.connect(NoTls)?,
            statements: HashMap::new(),
            broken: false,
            tenant: None,
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> std::result::Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    /// A connection whose socket closed (a server restart, `pg_terminate_backend`), or that
    /// was marked broken, is not returned to the pool.
    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.broken || conn.client.is_closed()
    }
}

/// The pool both stores use.
pub(crate) type Pool = r2d2::Pool<Manager>;

/// A connection taken from a [`Pool`].
pub(crate) type Pooled = r2d2::PooledConnection<Manager>;

/// A pool of at most `max_connections` connections made with `config`; waiting for one
/// longer than `timeout` is a retryable error. The first connection is made now, so a
/// server that cannot be reached fails here.
pub(crate) fn pool(config: &postgres::Config, max_connections: u32, timeout: Duration) -> Result<Pool> {
    if max_connections == 0 {
        return Err(StoreError::invalid("max_connections", "must be at least 1"));
    }
    r2d2::Pool::builder()
        .max_size(max_connections)
        .min_idle(Some(1))
        // A broken connection is found when it fails (and is dropped then); testing each
        // one on checkout would cost every operation a round trip.
        .test_on_check_out(false)
        .connection_timeout(timeout)
        .error_handler(Box::new(r2d2::NopErrorHandler))
        .build(Manager {
            config: config.clone(),
        })
        .map_err(pool_err)
}

/// `sql` prepared on this connection, once.
pub(crate) fn prepared(
    statements: &mut HashMap<String, Statement>,
    client: &mut impl postgres::GenericClient,
    sql: &str,
) -> Result<Statement> {
    if let Some(stmt) = statements.get(sql) {
        return Ok(stmt.clone());
    }
    let stmt = client.prepare(sql).db()?;
    statements.insert(sql.to_owned(), stmt.clone());
    Ok(stmt)
}

/// Takes a transaction-scoped advisory lock (released at commit or rollback) on `key`, in the
/// open transaction of `client`: schema setup that several processes may run at once takes
/// one, so they serialize and each finds the work of the ones before it done.
pub(crate) fn advisory_xact_lock(client: &mut impl postgres::GenericClient, key: i64) -> Result<()> {
    client
        .execute("SELECT pg_advisory_xact_lock($1)", &[&key])
        .db()
        .map(|_| ())
}

/// Whether the table (or other relation) `name` is there, as the search path finds it.
pub(crate) fn has_table(client: &mut impl postgres::GenericClient, name: &str) -> Result<bool> {
    let row = client
        .query_one("SELECT to_regclass($1::text) IS NOT NULL", &[&name])
        .db()?;
    Ok(row.get(0))
}

/// `text` as an SQL string literal that means exactly `text` whatever
/// `standard_conforming_strings` says (an `E''` literal, backslashes and quotes doubled), for
/// the few statements sent in the simple protocol. `text` must hold no NUL (ids are checked).
pub(crate) fn literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// Whether `name` may be a schema name given unquoted (in `search_path` and DDL): a lowercase
/// letter or `_`, then lowercase letters, digits or `_`, at most 63 bytes.
pub(crate) fn check_schema_name(name: &str) -> Result<()> {
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && (b[0].is_ascii_lowercase() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::invalid(
            "schema",
            format!(
                "{name:?} is not a plain schema name (a lowercase letter or _, then lowercase letters, \
                 digits or _; at most 63 bytes)"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_schema_names() {
        assert_eq!(literal(r"a'b\c"), r"E'a''b\\c'");
        for ok in ["public", "_x", "t1_2"] {
            check_schema_name(ok).unwrap();
        }
        for bad in ["", "Public", "1x", "a-b", "a b", &"x".repeat(64)] {
            assert!(check_schema_name(bad).is_err(), "{bad}");
        }
        let how = Connect {
            timeout: Duration::from_secs(3),
            read_only: true,
            search_path: Some("s1"),
        };
        let c = config("postgres://u@h/db?options=-c%20statement_timeout%3D5000", &how).unwrap();
        assert_eq!(
            c.get_options(),
            Some("-c statement_timeout=5000 -c default_transaction_read_only=on -c search_path=s1")
        );
        assert!(config("not a url ===", &how).is_err());
        for no_host in ["postgres://", "postgresql:///db", "user=u dbname=d"] {
            match config(no_host, &how) {
                Err(StoreError::InvalidInput { field, .. }) => assert_eq!(field, "url", "{no_host}"),
                other => panic!("{no_host}: {other:?}"),
            }
        }
        assert!(config("host=/var/run/postgresql dbname=d", &how).is_ok());
    }
}
