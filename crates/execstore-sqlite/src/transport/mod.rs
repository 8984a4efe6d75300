//! The transport ([`execstore::transport::Transport`]) on harel 0.9's SQLite transport tables
//! (`<prefix>_transport_messages`, `<prefix>_transport_groups`), so harel's own
//! `SqliteTransport` and this one can serve one file, in different processes, at once.
//!
//! Every write is one `BEGIN IMMEDIATE` transaction on one connection: a claim's pick and its
//! lease, an ack's delete and the drained group's removal, and (unlike harel's, which runs two
//! autocommit statements) a publish's message and group, so a crash never leaves a message
//! without its group. SQLite's write lock serializes claims across processes, which keeps a
//! group's messages one at a time in flight.

mod schema;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use execstore::transport::{check_claim, check_release, prepare_publish, Delivery, Lease, Transport, PARKED};
use execstore::{executions::Event, Result, StoreError};
use rusqlite::{params, Connection, OptionalExtension};

use crate::db::{self, error::Db, OpenTransaction, Synchronous};
use schema::Names;

/// How [`SqliteTransport::open`] opens a database.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SqliteTransportOptions {
    /// Names the tables `<prefix>_transport_messages` and `<prefix>_transport_groups`;
    /// `"harel"` (harel's default) unless set.
    pub prefix: String,
    /// Creates the tables if missing (harel's `create_schema`); with `false` they must exist.
    pub create_schema: bool,
    /// `PRAGMA synchronous`; `Full` (every transaction synced, as harel's connection does) by
    /// default.
    pub synchronous: Synchronous,
    /// How long a write waits for another connection's write lock (5 s, as harel's).
    pub busy_timeout: Duration,
}

impl Default for SqliteTransportOptions {
    fn default() -> Self {
        SqliteTransportOptions {
            prefix: "harel".into(),
            create_schema: true,
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

impl SqliteTransportOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`SqliteTransportOptions::prefix`].
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
    /// Sets [`SqliteTransportOptions::create_schema`].
    pub fn create_schema(mut self, create: bool) -> Self {
        self.create_schema = create;
        self
    }
    /// Sets [`SqliteTransportOptions::synchronous`].
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }
    /// Sets [`SqliteTransportOptions::busy_timeout`].
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }
}

/// The transport on one SQLite file (or a private in-memory database). One connection, shared
/// by the threads that call it; open one per process (several processes may share the file).
pub struct SqliteTransport {
    conn: Mutex<Connection>,
    names: Names,
}

impl std::fmt::Debug for SqliteTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteTransport")
            .field("messages", &self.names.messages)
            .finish_non_exhaustive()
    }
}

impl SqliteTransport {
    /// Opens (creating if needed) the database at `path` in WAL mode, `":memory:"` for a
    /// private in-memory one, with harel's transport tables under the options' prefix.
    pub fn open(path: impl AsRef<Path>, options: SqliteTransportOptions) -> Result<Self> {
        let names = Names::new(&options.prefix)?;
        let path = path.as_ref();
        let conn = if path.as_os_str() == ":memory:" {
            Connection::open_in_memory().db()?
        } else {
            let conn = db::open_file(path)?;
            db::configure(&conn, options.busy_timeout, false)?;
            db::make_writer(&conn, options.busy_timeout, options.synchronous)?;
            conn
        };
        if path.as_os_str() == ":memory:" {
            db::configure(&conn, options.busy_timeout, false)?;
        }
        if options.create_schema {
            for sql in names.schema() {
                conn.execute_batch(&sql).db()?;
            }
        } else {
            for table in [&names.messages, &names.groups] {
                if !db::has_table(&conn, table)? {
                    return Err(StoreError::NotFound {
                        what: "transport table",
                        key: table.clone(),
                    });
                }
            }
        }
        Ok(SqliteTransport {
            conn: Mutex::new(conn),
            names,
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        db::take_over(&self.conn)
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction, committed if it returns `Ok`.
    fn write<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.conn();
        conn.execute_batch("BEGIN IMMEDIATE").db()?;
        let open = OpenTransaction(&conn);
        let out = f(&conn)?;
        conn.execute_batch("COMMIT").db()?;
        drop(open);
        Ok(out)
    }
}

fn corrupt(seq: i64, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: "transport message".into(),
        reason: format!("message {seq}: {reason}"),
    }
}

impl Transport for SqliteTransport {
    fn publish(&self, group_id: &str, event: &Event, priority: i64) -> Result<i64> {
        let json = prepare_publish(group_id, event, priority)?;
        self.write(|conn| {
            conn.prepare_cached(&self.names.insert_message())
                .db()?
                .execute(params![group_id, json])
                .db()?;
            let seq = conn.last_insert_rowid();
            conn.prepare_cached(&self.names.insert_group())
                .db()?
                .execute(params![group_id, priority])
                .db()?;
            Ok(seq)
        })
    }

    fn claim(
        &self,
        worker_id: &str,
        now: f64,
        visibility: f64,
        min_priority: i64,
    ) -> Result<Option<Delivery>> {
        check_claim(worker_id, now, visibility, min_priority)?;
        let found = self.write(|conn| {
            let head: Option<(i64, String, String)> = conn
                .prepare_cached(&self.names.claim())
                .db()?
                .query_row(params![min_priority, now], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()
                .db()?;
            let Some((seq, group_id, event)) = head else {
                return Ok(None);
            };
            conn.prepare_cached(&self.names.served())
                .db()?
                .execute(params![now, group_id])
                .db()?;
            conn.prepare_cached(&self.names.lock())
                .db()?
                .execute(params![worker_id, now + visibility, seq])
                .db()?;
            Ok(Some((seq, group_id, event)))
        })?;
        let Some((seq, group_id, event)) = found else {
            return Ok(None);
        };
        let event = serde_json::from_str(&event).map_err(|e| corrupt(seq, e))?;
        Ok(Some(Delivery {
            lease: Lease {
                seq,
                group_id,
                token: String::new(),
            },
            event,
        }))
    }

    fn ack(&self, lease: &Lease, now: f64) -> Result<()> {
        check_release(lease, now, 0.0)?;
        self.write(|conn| {
            conn.prepare_cached(&self.names.delete_message())
                .db()?
                .execute(params![lease.seq])
                .db()?;
            conn.prepare_cached(&self.names.drop_drained_group())
                .db()?
                .execute(params![lease.group_id])
                .db()?;
            Ok(())
        })
    }

    fn nack(&self, lease: &Lease, now: f64, delay: f64) -> Result<()> {
        check_release(lease, now, delay)?;
        self.write(|conn| {
            if delay > 0.0 {
                conn.prepare_cached(&self.names.lock())
                    .db()?
                    .execute(params![PARKED, now + delay, lease.seq])
                    .db()?;
            } else {
                conn.prepare_cached(&self.names.unlock())
                    .db()?
                    .execute(params![lease.seq])
                    .db()?;
            }
            Ok(())
        })
    }

    fn depth(&self) -> Result<u64> {
        let conn = self.conn();
        let n: i64 = conn
            .prepare_cached(&self.names.depth())
            .db()?
            .query_row([], |r| r.get(0))
            .db()?;
        Ok(n.max(0) as u64)
    }
}
