//! Every statement the store runs, with its table names filled in once at open.

use super::schema::{Sql, Tables};

/// The summary projection of `list_executions`: scalars only, never `data` itself.
const LIST_COLUMNS: &str = "e.id, e.definition_id, e.version::int8, doc.status, doc.outcome, \
     doc.active_path, doc.parent_id, doc.finished_at, doc.updated_at, doc.created_at";

/// The summary's fields, read in one pass over the document: each `->>` on `json` re-parses
/// the text from its start, and the timestamps come after the context, so six of them cost
/// over three times this.
const LIST_FIELDS: &str = "status text, outcome text, active_path text, parent_id text, \
     finished_at float8, updated_at float8, created_at float8";

/// The listing keys of a database without the keys table (one that no execstore of this
/// version migrated, opened read-only): the same columns, read from each row's document
/// with the spelling of the indexes of migrations 1, 2 and 5, so that a database at
/// migration 5 still has them indexed.
const KEYS_OF_DATA: &str = "(SELECT (id COLLATE \"C\") AS id, ({json}->>'status') AS status, \
     (({json}->>'parent_id') IS NULL) AS root, (({json}->>'created_at')::float8) AS created_at, \
     (({json}->>'updated_at')::float8) AS updated_at, (({json}->>'finished_at')::float8) AS finished_at, \
     (({json}->>'active_path') COLLATE \"C\") AS active_path FROM {executions})";

/// The most deltas a reader folds before a read of the kept counts or graph figures (about a
/// tenth of a second's work): what is left is summed by the read, and folded by later ones.
pub(crate) const FOLD_MAX: i32 = 100_000;

/// How an execution `e` meets its keys `k`: one clause that both the keys' primary key (in
/// the `"C"` collation) and the executions' `"C"`-collated id index can answer, so either side
/// may drive the join.
pub(crate) const KEYS_JOIN: &str = "k.id = (e.id COLLATE \"C\")";

/// Tries the advisory lock of one timer (in `claim_timers`, whose `$4` is the lock space):
/// the two-`int4` key space, apart from harel's one-`int8` schema lock. A hash collision only
/// makes a sweeper skip a timer that a later sweep offers.
const TIMER_LOCK_TRY: &str = "pg_try_advisory_lock(hashtext($4), hashtext(execution_id || chr(31) || path))";

/// The claims' locks (`FOR UPDATE SKIP LOCKED` on the outbox and spawn rows, the advisory
/// lock of each timer), or, for [`PgOptions::unlocked_claims`](super::PgOptions), none: the
/// test-only claim that the relay tests show handing entries out twice.
fn claim_locks(unlocked: bool) -> (&'static str, &'static str) {
    if unlocked {
        // `$4` still typed, so the statement takes the same parameters.
        ("", "$4::text IS NOT NULL")
    } else {
        (" FOR UPDATE SKIP LOCKED", TIMER_LOCK_TRY)
    }
}

/// The NOTIFY channel of each kind of deferred work, named after the tables so that stores
/// with different prefixes in one database wake only their own waiters. The commit functions
/// of migration 4 notify the same names (`{pfx}execstore_outbox`, ...).
#[derive(Debug)]
pub(crate) struct Channels {
    pub(crate) outbox: String,
    pub(crate) spawns: String,
    pub(crate) timers: String,
}

impl Channels {
    pub(crate) fn of(&self, work: execstore::executions::Work) -> &str {
        match work {
            execstore::executions::Work::Outbox => &self.outbox,
            execstore::executions::Work::Spawns => &self.spawns,
            execstore::executions::Work::Timers => &self.timers,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Stmts {
    /// One event step and its listing keys: `{pfx}execstore_step` (migration 6), one round
    /// trip.
    pub(crate) commit: String,
    /// Many event steps: `{pfx}execstore_commit_batch`, one round trip.
    pub(crate) commit_batch: String,
    pub(crate) insert_trace: String,
    pub(crate) cap_trace: String,
    pub(crate) load: String,
    pub(crate) load_for_event: String,
    pub(crate) is_processed: String,
    pub(crate) lock_execution: String,
    pub(crate) exists: String,
    pub(crate) pending_outbox: String,
    pub(crate) ack_outbox: String,
    /// One outbox row alone ([`execstore::ExecutionStore::enqueue_outbox`]).
    pub(crate) enqueue_outbox: String,
    /// `pg_notify($1, '')`.
    pub(crate) notify: String,
    pub(crate) ack_outbox_many: String,
    pub(crate) pending_spawns: String,
    pub(crate) ack_spawn: String,
    pub(crate) due_timers: String,
    pub(crate) due_timers_after: String,
    pub(crate) delete_timer: String,
    pub(crate) read_trace: String,
    /// The traces of many executions (`$1`, an array of ids): id, idx, entry.
    pub(crate) read_traces: String,
    pub(crate) ids_between: String,
    pub(crate) ids_from: String,
    pub(crate) purge_execution: String,
    pub(crate) purge_companions: [String; 5],
    pub(crate) schema_version: String,
    pub(crate) claim_outbox: String,
    pub(crate) claim_spawns: String,
    pub(crate) ack_spawns_many: String,
    pub(crate) claim_timers: String,
    pub(crate) timers_still_due: String,
    pub(crate) unlock_claims: String,
    /// The table name that keys the timers' advisory locks (their first `int4`).
    pub(crate) timer_lock_space: String,
    /// The NOTIFY channels of new outbox entries, spawn intents and armed timers.
    pub(crate) channels: Channels,
    /// `SELECT <summary columns> FROM <executions> e, LATERAL <its document>`.
    pub(crate) list_select: String,
    /// The same, joined to the listing keys `k`.
    list_select_keyed: String,
    /// The listing keys as a `FROM` item: `{pfx}execstore_keys` (migration 6), or, in a
    /// database without them, the same columns read from each document.
    pub(crate) keys: String,
    /// The executions table's name.
    pub(crate) executions: String,
    /// The prefix of execstore's own names (`""` or `"<prefix>_"`).
    pub(crate) pfx: String,
    /// The kept counts of migration 8 and their deltas (see `schema.rs`, `COUNTS`).
    pub(crate) counts_table: String,
    pub(crate) count_deltas_table: String,
    /// Folds the deltas into the counts (a no-op while another folds): every delta, or at
    /// most [`FOLD_MAX`] of them once migration 11 is there ([`Stmts::bound_folds`]).
    pub(crate) fold_counts: String,
    /// The graph figures kept by migration 9 (see `graph.rs`).
    pub(crate) graph: super::graph::GraphSql,
}

impl Stmts {
    /// The statements of the tables `t`; `unlocked_claims`: see [`claim_locks`].
    /// `keyed`: whether the database has the listing keys of migration 6.
    pub(crate) fn new(t: &Tables, unlocked_claims: bool, keyed: bool) -> Self {
        let (row_lock, timer_lock) = claim_locks(unlocked_claims);
        let keys = if keyed {
            t.sql("{pfx}execstore_keys")
        } else {
            t.sql(KEYS_OF_DATA)
        };
        let list_from = |from: &str| {
            t.sql(&format!(
                "SELECT {LIST_COLUMNS} FROM {from}, LATERAL json_to_record({{json}}) AS doc({LIST_FIELDS})"
            ))
        };
        Stmts {
            // Every parameter typed, so that the call names the one function whatever else
            // the search path holds.
            commit: t.sql(
                "SELECT o_ok, o_found, o_seqs FROM {pfx}execstore_step($1::text, $2::text, $3::text, \
                 $4::int8, $5::int8, $6::text[], $7::text[], $8::text, $9::text[], $10::text[], $11::text[], \
                 $12::text[], $13::float8[], $14::text, $15::int8, $16::text, $17::bool, $18::float8, \
                 $19::float8, $20::float8, $21::text)",
            ),
            commit_batch: t.sql(
                "SELECT o_ok, o_found, o_seqs FROM {pfx}execstore_commit_batch($1::text[], $2::text[], \
                 $3::text[], $4::int8[], $5::int8[], $6::int4[], $7::text[], $8::text[], $9::text[], \
                 $10::int4[], $11::text[], $12::text[], $13::text[], $14::int4[], $15::text[], \
                 $16::float8[], $17::text[], $18::int8)",
            ),
            insert_trace: t.sql(
                "INSERT INTO {trace} (execution_id, idx, entry) \
                 SELECT $1, COALESCE((SELECT MAX(idx) FROM {trace} WHERE execution_id = $1), -1) + 1, $2 \
                 RETURNING idx::int8",
            ),
            cap_trace: t.sql(
                "DELETE FROM {trace} WHERE execution_id = $1 AND idx <= \
                 (SELECT MAX(idx) FROM {trace} WHERE execution_id = $1) - $2::int8",
            ),
            load: t.sql("SELECT data FROM {executions} WHERE id = $1"),
            load_for_event: t.sql(
                "SELECT (SELECT data FROM {executions} WHERE id = $1), \
                 EXISTS(SELECT 1 FROM {processed_events} WHERE execution_id = $1 AND event_id = $2)",
            ),
            is_processed: t.sql(
                "SELECT EXISTS(SELECT 1 FROM {processed_events} WHERE execution_id = $1 AND event_id = $2)",
            ),
            // append_trace outside a commit: the row lock a commit's UPDATE takes, so trace
            // indexes of one execution are assigned one writer at a time.
            lock_execution: t.sql("SELECT 1 FROM {executions} WHERE id = $1 FOR NO KEY UPDATE"),
            exists: t.sql("SELECT 1 FROM {executions} WHERE id = $1"),
            pending_outbox: t
                .sql("SELECT seq, target_id, event FROM {outbox} WHERE seq > $1 ORDER BY seq LIMIT $2"),
            ack_outbox: t.sql("DELETE FROM {outbox} WHERE seq = $1"),
            enqueue_outbox: t
                .sql("INSERT INTO {outbox} (target_id, event) VALUES ($1, $2) RETURNING seq::int8"),
            notify: "SELECT pg_notify($1, '')".to_owned(),
            ack_outbox_many: t.sql("DELETE FROM {outbox} WHERE seq = ANY($1)"),
            pending_spawns: t.sql(
                "SELECT seq, parent_id, child_id, root_path, context FROM {spawns} \
                 WHERE seq > $1 ORDER BY seq LIMIT $2",
            ),
            ack_spawn: t.sql("DELETE FROM {spawns} WHERE seq = $1"),
            due_timers: t.sql(
                "SELECT execution_id, path, fire_at FROM {timers} WHERE fire_at <= $1 \
                 ORDER BY fire_at, (execution_id COLLATE \"C\"), (path COLLATE \"C\") LIMIT $2",
            ),
            due_timers_after: t.sql(
                "SELECT execution_id, path, fire_at FROM {timers} WHERE fire_at <= $1 \
                 AND (fire_at, (execution_id COLLATE \"C\"), (path COLLATE \"C\")) > ($2, $3, $4) \
                 ORDER BY fire_at, (execution_id COLLATE \"C\"), (path COLLATE \"C\") LIMIT $5",
            ),
            delete_timer: t
                .sql("DELETE FROM {timers} WHERE execution_id = $1 AND path = $2 AND fire_at = $3"),
            read_trace: t.sql("SELECT idx::int8, entry FROM {trace} WHERE execution_id = $1 ORDER BY idx"),
            read_traces: t.sql(
                "SELECT execution_id, idx::int8, entry FROM {trace} WHERE execution_id = ANY($1) \
                 ORDER BY execution_id, idx",
            ),
            ids_between: t.sql(
                "SELECT id FROM {executions} WHERE (id COLLATE \"C\") >= $1 AND (id COLLATE \"C\") < $2 \
                 ORDER BY (id COLLATE \"C\")",
            ),
            ids_from: t.sql(
                "SELECT id FROM {executions} WHERE (id COLLATE \"C\") >= $1 ORDER BY (id COLLATE \"C\")",
            ),
            purge_execution: t.sql("DELETE FROM {executions} WHERE id = $1 AND version = $2::int8"),
            // harel's `_PURGE_COMPANIONS_SQL`, in its order.
            purge_companions: [
                t.sql("DELETE FROM {processed_events} WHERE execution_id = $1"),
                t.sql("DELETE FROM {trace} WHERE execution_id = $1"),
                t.sql("DELETE FROM {timers} WHERE execution_id = $1"),
                t.sql("DELETE FROM {outbox} WHERE target_id = $1"),
                t.sql("DELETE FROM {spawns} WHERE parent_id = $1"),
            ],
            schema_version: t.sql(super::schema::SCHEMA_VERSION),
            // Row locks held until the claiming transaction ends, which also acks: a relay
            // that dies releases them with its connection.
            claim_outbox: t.sql(&format!(
                "SELECT seq, target_id, event FROM {{outbox}} ORDER BY seq LIMIT $1{row_lock}"
            )),
            claim_spawns: t.sql(&format!(
                "SELECT seq, parent_id, child_id, root_path, context FROM {{spawns}} \
                 ORDER BY seq LIMIT $1{row_lock}"
            )),
            ack_spawns_many: t.sql("DELETE FROM {spawns} WHERE seq = ANY($1)"),
            // Timers are claimed with session advisory locks, not row locks: firing a timer
            // is an event step that cancels or re-arms that very row, from another
            // connection, while the claim is held. The candidates are materialized first so
            // that the lock function runs on them only, and the outer LIMIT stops taking
            // locks once it has enough (the scan keeps the candidates' order).
            claim_timers: t.sql(&format!(
                "WITH due AS MATERIALIZED (SELECT execution_id, path, fire_at FROM {{timers}} \
                 WHERE fire_at <= $1 ORDER BY fire_at, (execution_id COLLATE \"C\"), (path COLLATE \"C\") \
                 LIMIT $3) \
                 SELECT execution_id, path, fire_at FROM due WHERE {timer_lock} LIMIT $2"
            )),
            // A fresh snapshot after locking: a timer fired (removed or re-armed) by another
            // sweeper between our read and our lock is not offered again.
            timers_still_due: t.sql(
                "SELECT t.execution_id, t.path, t.fire_at FROM {timers} t \
                 JOIN unnest($1::text[], $2::text[], $3::float8[]) AS c(execution_id, path, fire_at) \
                 ON t.execution_id = c.execution_id AND t.path = c.path AND t.fire_at = c.fire_at",
            ),
            unlock_claims: "SELECT pg_advisory_unlock_all()".to_owned(),
            timer_lock_space: t.sql("{timers}"),
            channels: Channels {
                outbox: t.sql("{pfx}execstore_outbox"),
                spawns: t.sql("{pfx}execstore_spawns"),
                timers: t.sql("{pfx}execstore_timers"),
            },
            list_select: list_from("{executions} e"),
            list_select_keyed: list_from(&format!("{{executions}} e JOIN {keys} k ON {KEYS_JOIN}")),
            keys,
            executions: t.sql("{executions}"),
            pfx: t.pfx.clone(),
            counts_table: t.sql("{pfx}execstore_counts"),
            count_deltas_table: t.sql("{pfx}execstore_count_deltas"),
            fold_counts: t.sql("SELECT {pfx}execstore_fold_counts()"),
            graph: super::graph::GraphSql::new(t),
        }
    }

    /// Migration 11's folds, of at most [`FOLD_MAX`] deltas each.
    pub(crate) fn bound_folds(&mut self, t: &Tables) {
        self.fold_counts = t.sql(&format!("SELECT {{pfx}}execstore_fold_counts({FOLD_MAX})"));
        self.graph.fold = t.sql(&format!("SELECT {{pfx}}execstore_fold_graph({FOLD_MAX})"));
    }

    /// The listing statement for one shape of filter. Its parameters, in order: the cursor id
    /// (if `after`), the definition id (if `definition`), one text per status (`statuses` of
    /// them), the limit. The filters spell the migration's indexed expressions exactly.
    ///
    /// A status filter is written as a range of the `(status, id)` index, ordered by it: with
    /// `status = $s` PostgreSQL knows the status is constant, may walk the id index instead
    /// and parse every document to filter it (it rates that parse as nearly free), which the
    /// status-index test caught on a plain table. Several statuses are one range each,
    /// merged by id.
    pub(crate) fn list(&self, after: bool, definition: bool, statuses: usize, roots_only: bool) -> String {
        let mut n = 0;
        let mut param = || {
            n += 1;
            format!("${n}")
        };
        let after = after.then(&mut param);
        let mut common: Vec<String> = Vec::new();
        if definition {
            common.push(format!("e.definition_id = {}", param()));
        }
        if roots_only {
            common.push("k.root".to_owned());
        }
        let status_params: Vec<String> = (0..statuses).map(|_| param()).collect();
        let limit = format!("{}::int8", param());
        let by_id = format!(" ORDER BY (id COLLATE \"C\") LIMIT {limit}");
        let select = |status_param: Option<&String>| {
            let mut conditions = common.clone();
            match (status_param, &after) {
                (Some(s), Some(a)) => {
                    conditions.push(format!("(k.status, k.id) > ({s}, {a})"));
                    conditions.push(format!("k.status <= {s}"));
                }
                (Some(s), None) => {
                    conditions.push(format!("k.status >= {s}"));
                    conditions.push(format!("k.status <= {s}"));
                }
                (None, Some(a)) => conditions.push(format!("(e.id COLLATE \"C\") > {a}")),
                (None, None) => {}
            }
            let mut sql = if status_param.is_some() || roots_only {
                self.list_select_keyed.clone()
            } else {
                self.list_select.clone()
            };
            if !conditions.is_empty() {
                sql.push_str(" WHERE ");
                sql.push_str(&conditions.join(" AND "));
            }
            match status_param {
                Some(_) => sql.push_str(&format!(" ORDER BY k.status, k.id LIMIT {limit}")),
                None => sql.push_str(&format!(" ORDER BY (e.id COLLATE \"C\") LIMIT {limit}")),
            }
            sql
        };
        match status_params.as_slice() {
            [] => select(None),
            [one] => select(Some(one)),
            several => {
                let parts: Vec<String> = several.iter().map(|p| format!("({})", select(Some(p)))).collect();
                format!(
                    "SELECT * FROM ({}) AS by_status{by_id}",
                    parts.join(" UNION ALL ")
                )
            }
        }
    }
}
