//! The transport ([`execstore::transport::Transport`]) on harel 0.9's PostgreSQL transport
//! tables (`<prefix>_transport_messages`, `<prefix>_transport_groups`), so harel's own
//! `PostgresTransport` and this one can serve one database at once.
//!
//! As in harel's, a group's row carries its lease: `locked_by` (a fencing token made per
//! claim) and `lock_expiry` (the lease's or park's end, and after an ack the time it was
//! served, which orders the round-robin). A claim leases the first claimable group in that
//! order with `FOR UPDATE SKIP LOCKED`, so concurrent workers lease different groups without
//! waiting for each other, and returns its head message, in one statement. An ack or nack
//! changes the group only while it still holds the claim's token (a lapsed lease another
//! worker took over is left alone). harel's own transport also keeps two functions beside the
//! tables, `<prefix>_claim` and `<prefix>_ack`; it creates them itself when it opens (its
//! default), and this transport does not need them.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use execstore::kit::names::check_prefix;
use execstore::transport::{check_claim, check_release, prepare_publish, Delivery, Lease, Transport};
use execstore::{executions::Event, Result, StoreError};

use crate::db::{self, pool_err, Db, Pool};

/// harel's advisory lock key for schema setup, shared with the store's.
const SCHEMA_LOCK: i64 = crate::executions::SCHEMA_LOCK;

/// How [`PgTransport::open`] connects.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PgTransportOptions {
    /// Names the tables `<prefix>_transport_messages` and `<prefix>_transport_groups`;
    /// `"harel"` (harel's default) unless set.
    pub prefix: String,
    /// Creates the tables if missing (harel's `create_schema`); with `false` they must exist.
    pub create_schema: bool,
    /// The most connections the pool opens.
    pub max_connections: u32,
    /// How long connecting, or waiting for a free connection, may take.
    pub connect_timeout: Duration,
}

impl Default for PgTransportOptions {
    fn default() -> Self {
        PgTransportOptions {
            prefix: "harel".into(),
            create_schema: true,
            max_connections: 8,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

impl PgTransportOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets [`PgTransportOptions::prefix`].
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }
    /// Sets [`PgTransportOptions::create_schema`].
    pub fn create_schema(mut self, create: bool) -> Self {
        self.create_schema = create;
        self
    }
    /// Sets [`PgTransportOptions::max_connections`].
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n;
        self
    }
}

/// The statements, for one prefix.
struct Stmts {
    messages: String,
    groups: String,
    schema: String,
    publish: String,
    claim: String,
    head: String,
    ack: String,
    park: String,
    unlock: String,
    depth: String,
}

impl Stmts {
    fn new(prefix: &str) -> Result<Self> {
        check_prefix(prefix)?;
        let m = format!("{prefix}_transport_messages");
        let g = format!("{prefix}_transport_groups");
        let fill = |t: &str| t.replace("{m}", &m).replace("{g}", &g).replace("{p}", prefix);
        Ok(Stmts {
            schema: fill(
                "CREATE TABLE IF NOT EXISTS {m} \
                 (seq BIGSERIAL PRIMARY KEY, group_id TEXT NOT NULL, event TEXT NOT NULL);\
                 CREATE INDEX IF NOT EXISTS {p}_transport_messages_by_group ON {m} (group_id, seq);\
                 CREATE TABLE IF NOT EXISTS {g} \
                 (group_id TEXT PRIMARY KEY, locked_by TEXT, lock_expiry DOUBLE PRECISION, \
                 priority INT NOT NULL DEFAULT 0);\
                 CREATE INDEX IF NOT EXISTS {p}_transport_groups_claim_order ON {g} \
                 ((COALESCE(lock_expiry, 0)), group_id)",
            ),
            // The message and its group in one statement. A new group is ready at once; an
            // existing one keeps its lease and priority, but its row is locked, as an ack locks
            // it: the ack then sees this message and keeps the group (or this insert waits,
            // and makes the group again after it).
            publish: fill(
                "WITH message AS (INSERT INTO {m} (group_id, event) VALUES ($1, $2) RETURNING seq), \
                 grp AS (INSERT INTO {g} (group_id, locked_by, lock_expiry, priority) \
                         VALUES ($1, NULL, NULL, $3) \
                         ON CONFLICT (group_id) DO UPDATE SET priority = {g}.priority) \
                 SELECT seq FROM message",
            ),
            // A claim is two statements in one transaction. The first leases the group; the
            // second reads its head in a snapshot taken after the lease, so it sees every ack
            // that committed before the group could be leased. (As one statement, the head was
            // read in the snapshot the statement began with: a group claimed, acked and freed by
            // another worker between that snapshot and the row lock was leased again with the
            // message just acked still at its head, and handed out twice.)
            claim: fill(
                "WITH picked AS ( \
                   SELECT s.group_id FROM {g} AS s \
                   WHERE (s.locked_by IS NULL OR s.lock_expiry < $1) AND s.priority >= $4 \
                     AND EXISTS (SELECT 1 FROM {m} AS q WHERE q.group_id = s.group_id) \
                   ORDER BY COALESCE(s.lock_expiry, 0), s.group_id \
                   LIMIT 1 FOR UPDATE SKIP LOCKED \
                 ) \
                 UPDATE {g} AS t SET locked_by = $3, lock_expiry = $2 \
                 FROM picked WHERE t.group_id = picked.group_id RETURNING t.group_id",
            ),
            head: fill("SELECT seq, event FROM {m} WHERE group_id = $1 ORDER BY seq LIMIT 1"),
            // One statement, fenced by the token: lock the group's row (as a publish locks
            // it), delete the message, then free the group, served now, if it has more
            // messages, or drop it. Every part reads the statement's snapshot, so "more" looks
            // past the message being deleted.
            ack: fill(
                "WITH held AS (SELECT group_id FROM {g} WHERE group_id = $1 AND locked_by = $2 FOR UPDATE), \
                 gone AS (DELETE FROM {m} AS d USING held WHERE d.seq = $3 RETURNING d.seq), \
                 rest AS (SELECT EXISTS (SELECT 1 FROM {m} AS r WHERE r.group_id = $1 AND r.seq <> $3) AS more \
                          FROM held), \
                 freed AS (UPDATE {g} AS f SET locked_by = NULL, lock_expiry = $4 FROM rest \
                           WHERE f.group_id = $1 AND f.locked_by = $2 AND rest.more RETURNING 1), \
                 dropped AS (DELETE FROM {g} AS x USING rest \
                             WHERE x.group_id = $1 AND x.locked_by = $2 AND NOT rest.more RETURNING 1) \
                 SELECT (SELECT COUNT(*) FROM gone) + (SELECT COUNT(*) FROM freed) + (SELECT COUNT(*) FROM dropped)",
            ),
            park: fill("UPDATE {g} SET lock_expiry = $3 WHERE group_id = $1 AND locked_by = $2"),
            unlock: fill(
                "UPDATE {g} SET locked_by = NULL, lock_expiry = NULL WHERE group_id = $1 AND locked_by = $2",
            ),
            depth: fill("SELECT COUNT(*)::int8 FROM {m}"),
            messages: m,
            groups: g,
        })
    }
}

/// The transport on one PostgreSQL database, through a pool of connections (see the module
/// docs). Share one per process; any number of processes may open the same database.
pub struct PgTransport {
    pool: Pool,
    sql: Stmts,
    tokens: Tokens,
}

impl std::fmt::Debug for PgTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTransport")
            .field("messages", &self.sql.messages)
            .finish_non_exhaustive()
    }
}

/// Makes each claim's fencing token: `<worker>:<32 hex digits>` from a per-process random
/// key, the process id and a counter, so no two claims anywhere share one.
struct Tokens {
    key: RandomState,
    next: AtomicU64,
}

impl Tokens {
    fn new() -> Self {
        Tokens {
            key: RandomState::new(),
            next: AtomicU64::new(0),
        }
    }

    fn make(&self, worker_id: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut h = self.key.build_hasher();
        h.write_u64(n);
        h.write_u32(std::process::id());
        format!("{worker_id}:{:016x}{:08x}{n:08x}", h.finish(), std::process::id())
    }
}

/// Whether the transport's tables under `prefix` exist in the database at `url`.
fn tables_exist(client: &mut postgres::Client, sql: &Stmts) -> Result<bool> {
    let row = client
        .query_one(
            "SELECT COUNT(*)::int8 FROM pg_catalog.pg_class c \
             WHERE c.relname = ANY($1) AND pg_catalog.pg_table_is_visible(c.oid)",
            &[&vec![sql.messages.to_lowercase(), sql.groups.to_lowercase()]],
        )
        .db()?;
    Ok(row.get::<_, i64>(0) == 2)
}

/// Drops the transport's tables under `prefix` (and harel's `<prefix>_claim` and
/// `<prefix>_ack` functions) from the database at `url`. For tests; there is no undo.
pub fn drop_transport(url: &str, prefix: &str) -> Result<()> {
    let sql = Stmts::new(prefix)?;
    let mut client = postgres::Client::connect(url, postgres::NoTls).db()?;
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {}, {}; DROP FUNCTION IF EXISTS {prefix}_claim; \
             DROP FUNCTION IF EXISTS {prefix}_ack",
            sql.messages, sql.groups
        ))
        .db()
}

impl PgTransport {
    /// Connects to the database at `url` and creates harel's transport tables if missing
    /// (with [`PgTransportOptions::create_schema`]; otherwise they must exist).
    pub fn open(url: &str, options: PgTransportOptions) -> Result<Self> {
        let sql = Stmts::new(&options.prefix)?;
        let config = db::config(
            url,
            &db::Connect {
                timeout: options.connect_timeout,
                read_only: false,
                search_path: None,
            },
        )?;
        let pool = db::pool(&config, options.max_connections, options.connect_timeout)?;
        {
            let mut conn = pool.get().map_err(pool_err)?;
            if options.create_schema {
                let mut tx = conn.client.transaction().db()?;
                db::advisory_xact_lock(&mut tx, SCHEMA_LOCK)?;
                tx.batch_execute(&sql.schema).db()?;
                tx.commit().db()?;
            } else if !tables_exist(&mut conn.client, &sql)? {
                return Err(StoreError::NotFound {
                    what: "transport table",
                    key: sql.messages.clone(),
                });
            }
        }
        Ok(PgTransport {
            pool,
            sql,
            tokens: Tokens::new(),
        })
    }
}

fn priority_i32(priority: i64) -> i32 {
    // checked to 0..=4 by the core
    i32::try_from(priority).unwrap_or(0)
}

impl Transport for PgTransport {
    fn publish(&self, group_id: &str, event: &Event, priority: i64) -> Result<i64> {
        let json = prepare_publish(group_id, event, priority)?;
        let priority = priority_i32(priority);
        let mut conn = self.pool.get().map_err(pool_err)?;
        let row = conn.query_one(&self.sql.publish, &[&group_id, &json, &priority])?;
        Ok(row.get(0))
    }

    fn claim(
        &self,
        worker_id: &str,
        now: f64,
        visibility: f64,
        min_priority: i64,
    ) -> Result<Option<Delivery>> {
        check_claim(worker_id, now, visibility, min_priority)?;
        let token = self.tokens.make(worker_id);
        let until = now + visibility;
        let min_priority = priority_i32(min_priority);
        let mut conn = self.pool.get().map_err(pool_err)?;
        conn.batch("BEGIN")?;
        let claimed = (|| {
            let rows = conn.query(&self.sql.claim, &[&now, &until, &token, &min_priority])?;
            let Some(row) = rows.first() else {
                return Ok(None);
            };
            let group_id: String = row.get(0);
            let head = conn.query(&self.sql.head, &[&group_id])?;
            // The group is ours: nobody else can take its head, so an empty one (impossible
            // while an ack drops a group it empties) is only freed again.
            let Some(head) = head.first() else {
                conn.execute(&self.sql.unlock, &[&group_id, &token])?;
                return Ok(None);
            };
            Ok(Some((group_id, head.get::<_, i64>(0), head.get::<_, String>(1))))
        })();
        let claimed = match claimed {
            Ok(claimed) => {
                conn.batch("COMMIT")?;
                claimed
            }
            Err(e) => {
                let _ = conn.batch("ROLLBACK");
                return Err(e);
            }
        };
        let Some((group_id, seq, event)) = claimed else {
            return Ok(None);
        };
        let event = serde_json::from_str(&event).map_err(|e| StoreError::Corrupt {
            what: "transport message".into(),
            reason: format!("message {seq}: {e}"),
        })?;
        Ok(Some(Delivery {
            lease: Lease { seq, group_id, token },
            event,
        }))
    }

    fn ack(&self, lease: &Lease, now: f64) -> Result<()> {
        check_release(lease, now, 0.0)?;
        // A lease that lapsed, and that another worker took over, holds nothing: no change.
        let mut conn = self.pool.get().map_err(pool_err)?;
        conn.query_one(&self.sql.ack, &[&lease.group_id, &lease.token, &lease.seq, &now])?;
        Ok(())
    }

    fn nack(&self, lease: &Lease, now: f64, delay: f64) -> Result<()> {
        check_release(lease, now, delay)?;
        let mut conn = self.pool.get().map_err(pool_err)?;
        if delay > 0.0 {
            conn.execute(&self.sql.park, &[&lease.group_id, &lease.token, &(now + delay)])?;
        } else {
            conn.execute(&self.sql.unlock, &[&lease.group_id, &lease.token])?;
        }
        Ok(())
    }

    fn depth(&self) -> Result<u64> {
        let mut conn = self.pool.get().map_err(pool_err)?;
        let row = conn.query_one(&self.sql.depth, &[])?;
        Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    }
}
