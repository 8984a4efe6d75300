//! Every statement the store runs, with its table names filled in once at open.

use crate::schema::{Sql, Tables};

/// The summary projection of `list_executions`: scalars only, never `data` itself.
const LIST_COLUMNS: &str = "id, definition_id, version::int8, j->>'status', j->>'outcome', \
     j->>'active_path', j->>'parent_id', (j->>'finished_at')::float8, (j->>'updated_at')::float8";

#[derive(Debug)]
pub(crate) struct Stmts {
    pub(crate) update_cas: String,
    pub(crate) select_version: String,
    pub(crate) insert_execution: String,
    pub(crate) insert_outbox: String,
    pub(crate) insert_processed: String,
    pub(crate) insert_spawn: String,
    pub(crate) upsert_timer: String,
    pub(crate) cancel_timer: String,
    pub(crate) insert_trace: String,
    pub(crate) cap_trace: String,
    pub(crate) load: String,
    pub(crate) load_for_event: String,
    pub(crate) is_processed: String,
    pub(crate) lock_execution: String,
    pub(crate) exists: String,
    pub(crate) pending_outbox: String,
    pub(crate) ack_outbox: String,
    pub(crate) ack_outbox_many: String,
    pub(crate) pending_spawns: String,
    pub(crate) ack_spawn: String,
    pub(crate) due_timers: String,
    pub(crate) due_timers_after: String,
    pub(crate) delete_timer: String,
    pub(crate) read_trace: String,
    pub(crate) ids_between: String,
    pub(crate) ids_from: String,
    pub(crate) purge_execution: String,
    pub(crate) purge_companions: [String; 5],
    pub(crate) schema_version: String,
    list_select: String,
    json: String,
}

impl Stmts {
    pub(crate) fn new(t: &Tables) -> Self {
        Stmts {
            // harel's column is INT: the parameters are bigint and cast on assignment.
            update_cas: t.sql(
                "UPDATE {executions} SET data = $1, version = $2::int8 WHERE id = $3 AND version = $4::int8",
            ),
            select_version: t.sql("SELECT version::int8 FROM {executions} WHERE id = $1"),
            // Two writers inserting one new id race on the primary key: the loser inserts
            // nothing (after waiting for the winner) and reports a conflict.
            insert_execution: t.sql(
                "INSERT INTO {executions} (id, definition_id, data, version) VALUES ($1, $2, $3, $4::int8) \
                 ON CONFLICT (id) DO NOTHING",
            ),
            insert_outbox: t.sql("INSERT INTO {outbox} (target_id, event) VALUES ($1, $2) RETURNING seq"),
            insert_processed: t.sql(
                "INSERT INTO {processed_events} (execution_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            ),
            insert_spawn: t.sql(
                "INSERT INTO {spawns} (parent_id, child_id, root_path, context) VALUES ($1, $2, $3, $4)",
            ),
            upsert_timer: t.sql(
                "INSERT INTO {timers} (execution_id, path, fire_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = EXCLUDED.fire_at",
            ),
            cancel_timer: t.sql("DELETE FROM {timers} WHERE execution_id = $1 AND path = $2"),
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
            schema_version: t.sql("SELECT COALESCE(MAX(version), 0)::int8 FROM {migrations}"),
            list_select: t.sql(&format!(
                "SELECT {LIST_COLUMNS} FROM {{executions}}, LATERAL (SELECT {{json}} AS j) AS doc"
            )),
            json: t.sql("{json}"),
        }
    }

    /// The listing statement for one shape of filter. Its parameters, in order: the cursor id
    /// (if `after`), the definition id (if `definition`), the status strings as one `text[]`
    /// (if `statuses`), the limit. The filters spell the migration's indexed expressions
    /// exactly, so PostgreSQL can use them.
    pub(crate) fn list(&self, after: bool, definition: bool, statuses: bool, roots_only: bool) -> String {
        let mut sql = String::with_capacity(self.list_select.len() + 240);
        sql.push_str(&self.list_select);
        let mut n = 0;
        let mut param = || {
            n += 1;
            format!("${n}")
        };
        let mut conditions: Vec<String> = Vec::new();
        if after {
            conditions.push(format!("(id COLLATE \"C\") > {}", param()));
        }
        if definition {
            conditions.push(format!("definition_id = {}", param()));
        }
        if statuses {
            conditions.push(format!("({}->>'status') = ANY({}::text[])", self.json, param()));
        }
        if roots_only {
            conditions.push(format!("({}->>'parent_id') IS NULL", self.json));
        }
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        sql.push_str(&format!(" ORDER BY (id COLLATE \"C\") LIMIT {}::int8", param()));
        sql
    }
}
