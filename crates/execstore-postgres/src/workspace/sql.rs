//! Every statement of the workspace log. The tables are named bare: every connection's
//! `search_path` is the storage's schema.
//!
//! Times are bound as pydantic's ISO 8601 text (`$n::text::timestamptz`, exact to the
//! microsecond whatever the session's `DateStyle` or `TimeZone`) and read back as UTC text of
//! the same form (`ts!`). JSON columns are `json`, which keeps the text as given: bound as
//! text cast `::json`, read as `col::text`.

/// A `timestamptz` column as UTC text pydantic reads: `2026-01-01T12:00:00.123456Z`.
macro_rules! ts {
    ($col:literal) => {
        concat!(
            "to_char(",
            $col,
            " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        )
    };
}

/// The workspace's row, locked until the transaction ends.
pub(super) const LOCK: &str = concat!(
    "SELECT head_seq, ",
    ts!("head_ts"),
    ", last_position FROM reflexr_workspaces WHERE tenant_id = $1 AND workspace_id = $2 FOR UPDATE"
);
/// A new workspace's row (a concurrent creator's wins; the lock then waits for it).
pub(super) const INSERT_WORKSPACE: &str = "INSERT INTO reflexr_workspaces \
     (tenant_id, workspace_id, head_seq, head_ts, last_position) VALUES ($1, $2, 0, NULL, 0) ON CONFLICT DO NOTHING";
/// The counters a transaction moved, at its commit.
pub(super) const UPDATE_HEAD: &str = "UPDATE reflexr_workspaces SET head_seq = $3, \
     head_ts = $4::text::timestamptz, last_position = $5 WHERE tenant_id = $1 AND workspace_id = $2";
/// The same, announcing the new head on `$6` (delivered when the transaction commits).
pub(super) const UPDATE_HEAD_NOTIFY: &str = "WITH moved AS (UPDATE reflexr_workspaces SET head_seq = $3, \
     head_ts = $4::text::timestamptz, last_position = $5 WHERE tenant_id = $1 AND workspace_id = $2 \
     RETURNING 1) SELECT pg_notify($6, $7) FROM moved";
pub(super) const HEAD: &str =
    "SELECT head_seq FROM reflexr_workspaces WHERE tenant_id = $1 AND workspace_id = $2";
pub(super) const INFO: &str = concat!(
    "SELECT head_seq, ",
    ts!("head_ts"),
    " FROM reflexr_workspaces WHERE tenant_id = $1 AND workspace_id = $2"
);
/// Every listed workspace (as [`WORKSPACES`]) with its head and how many leases and dead
/// letters it has, each table counted in one pass grouped by workspace. (A count per
/// workspace in a subquery was planned from the tables' statistics: with one workspace
/// holding most leases, a sequential scan of the leases per workspace, 173 ms for 1,000.)
pub(super) const SUMMARIES: &str = concat!(
    "SELECT w.tenant_id, w.workspace_id, w.head_seq, ",
    ts!("w.head_ts"),
    ", COALESCE(l.n, 0)::int8, COALESCE(d.n, 0)::int8 FROM reflexr_workspaces w \
     LEFT JOIN (SELECT tenant_id, workspace_id, count(*) AS n FROM reflexr_leases GROUP BY 1, 2) l \
     ON l.tenant_id = w.tenant_id AND l.workspace_id = w.workspace_id \
     LEFT JOIN (SELECT tenant_id, workspace_id, count(*) AS n FROM reflexr_dead_letters GROUP BY 1, 2) d \
     ON d.tenant_id = w.tenant_id AND d.workspace_id = w.workspace_id \
     WHERE w.head_seq > 0 ORDER BY w.tenant_id COLLATE \"C\", w.workspace_id COLLATE \"C\""
);
/// Every cursor of every workspace, by workspace then name.
pub(super) const ALL_CURSORS: &str = "SELECT tenant_id, workspace_id, name, seq FROM reflexr_cursors \
     ORDER BY tenant_id COLLATE \"C\", workspace_id COLLATE \"C\", name COLLATE \"C\"";
/// Workspaces by tenant then workspace, in code-point order.
pub(super) const WORKSPACES: &str = "SELECT tenant_id, workspace_id FROM reflexr_workspaces \
     WHERE head_seq > 0 ORDER BY tenant_id COLLATE \"C\", workspace_id COLLATE \"C\"";

pub(super) const EXISTING_IDS: &str = "SELECT event_id FROM reflexr_events \
     WHERE tenant_id = $1 AND workspace_id = $2 AND event_id = ANY($3)";
pub(super) const INSERT_EVENTS: &str = "INSERT INTO reflexr_events \
     (tenant_id, workspace_id, seq, event_id, envelope, event_type, rule) \
     SELECT $1, $2, e.seq, e.id, e.envelope::json, e.event_type, e.rule \
     FROM unnest($3::int8[], $4::text[], $5::text[], $6::text[], $7::text[]) AS e(seq, id, envelope, event_type, rule)";
pub(super) const ENVELOPE: &str = "SELECT envelope::text FROM reflexr_events \
     WHERE tenant_id = $1 AND workspace_id = $2 AND event_id = $3";
pub(super) const READ_AFTER: &str = "SELECT envelope::text FROM reflexr_events \
     WHERE tenant_id = $1 AND workspace_id = $2 AND seq > $3 ORDER BY seq LIMIT $4";
/// A stored rule's versions, over the partial index `ix_reflexr_events_rule`.
pub(super) const RULE_HISTORY: &str = "SELECT envelope::text FROM reflexr_events \
     WHERE tenant_id = $1 AND workspace_id = $2 AND rule = $3 ORDER BY seq";

pub(super) const PROGRESS: &str = "SELECT body::text FROM reflexr_rule_progress \
     WHERE tenant_id = $1 AND workspace_id = $2 AND rule = $3";
pub(super) const UPDATE_PROGRESS: &str = "UPDATE reflexr_rule_progress SET body = $4::text::json \
     WHERE tenant_id = $1 AND workspace_id = $2 AND rule = $3";
pub(super) const INSERT_PROGRESS: &str = "INSERT INTO reflexr_rule_progress \
     (tenant_id, workspace_id, rule, position, body) VALUES ($1, $2, $3, $4, $5::text::json)";
pub(super) const ALL_PROGRESS: &str = "SELECT rule, body::text FROM reflexr_rule_progress \
     WHERE tenant_id = $1 AND workspace_id = $2 ORDER BY position";

pub(super) const STATES: &str = "SELECT scope_key, body::text FROM reflexr_scope_states \
     WHERE tenant_id = $1 AND workspace_id = $2 AND rule = $3 AND scope_key = ANY($4)";
pub(super) const UPSERT_STATES: &str = "INSERT INTO reflexr_scope_states \
     (tenant_id, workspace_id, rule, scope_key, body) \
     SELECT $1, $2, $3, s.key, s.body::json FROM unnest($4::text[], $5::text[]) AS s(key, body) \
     ON CONFLICT (tenant_id, workspace_id, rule, scope_key) DO UPDATE SET body = EXCLUDED.body";
pub(super) const CLEAR_STATES: &str = "DELETE FROM reflexr_scope_states \
     WHERE tenant_id = $1 AND workspace_id = $2 AND rule = $3";

pub(super) const RUN: &str = "SELECT body::text FROM reflexr_runs \
     WHERE tenant_id = $1 AND workspace_id = $2 AND id = $3";
pub(super) const RUN_IDS: &str = "SELECT id FROM reflexr_runs \
     WHERE tenant_id = $1 AND workspace_id = $2 AND id = ANY($3)";
/// New runs take the positions given; an update keeps its row's (and rewrites every column,
/// as reflexr does).
pub(super) const UPSERT_RUNS: &str = "INSERT INTO reflexr_runs \
     (tenant_id, workspace_id, id, position, rule, scope_key, status, fired_seq, next_attempt_at, body) \
     SELECT $1, $2, r.id, r.position, r.rule, r.scope_key, r.status, r.fired_seq, \
     r.next_attempt_at::timestamptz, r.body::json \
     FROM unnest($3::text[], $4::int8[], $5::text[], $6::text[], $7::text[], $8::int8[], $9::text[], $10::text[]) \
     AS r(id, position, rule, scope_key, status, fired_seq, next_attempt_at, body) \
     ON CONFLICT (tenant_id, workspace_id, id) DO UPDATE SET rule = EXCLUDED.rule, \
     scope_key = EXCLUDED.scope_key, status = EXCLUDED.status, fired_seq = EXCLUDED.fired_seq, \
     next_attempt_at = EXCLUDED.next_attempt_at, body = EXCLUDED.body";
pub(super) const SCOPE_RUNS: &str = "SELECT body::text FROM reflexr_runs \
     WHERE tenant_id = $1 AND workspace_id = $2 AND rule = $3 AND scope_key = $4 AND status <> 'succeeded' \
     ORDER BY fired_seq, position";

pub(super) const INSERT_DEAD_LETTERS: &str = "INSERT INTO reflexr_dead_letters \
     (tenant_id, workspace_id, position, rule, body) \
     SELECT $1, $2, d.position, d.rule, d.body::json FROM unnest($3::int8[], $4::text[], $5::text[]) \
     AS d(position, rule, body)";
pub(super) const DEAD_LETTERS: &str = "SELECT body::text FROM reflexr_dead_letters \
     WHERE tenant_id = $1 AND workspace_id = $2 ORDER BY position";
pub(super) const RULE_DEAD_LETTERS: &str = "SELECT body::text FROM reflexr_dead_letters \
     WHERE tenant_id = $1 AND workspace_id = $2 AND rule = $3 ORDER BY position";
/// A page of dead letters: a range of `pk_reflexr_dead_letters` (position).
pub(super) const DEAD_LETTERS_PAGE: &str = "SELECT position, body::text FROM reflexr_dead_letters \
     WHERE tenant_id = $1 AND workspace_id = $2 AND position > $3 ORDER BY position LIMIT $4";
/// A page of one rule's dead letters: a range of `ix_reflexr_dead_letters_rule`.
pub(super) const RULE_DEAD_LETTERS_PAGE: &str = "SELECT position, body::text FROM reflexr_dead_letters \
     WHERE tenant_id = $1 AND workspace_id = $2 AND rule = $3 AND position > $4 \
     ORDER BY position LIMIT $5";

pub(super) const SCHEDULE: &str = concat!(
    "SELECT ",
    ts!("at"),
    " FROM reflexr_schedules WHERE tenant_id = $1 AND workspace_id = $2 AND name = $3"
);
pub(super) const UPDATE_SCHEDULE: &str = "UPDATE reflexr_schedules SET at = $4::text::timestamptz \
     WHERE tenant_id = $1 AND workspace_id = $2 AND name = $3";
pub(super) const INSERT_SCHEDULE: &str = "INSERT INTO reflexr_schedules \
     (tenant_id, workspace_id, name, position, at) VALUES ($1, $2, $3, $4, $5::text::timestamptz)";
pub(super) const SCHEDULES: &str = concat!(
    "SELECT name, ",
    ts!("at"),
    " FROM reflexr_schedules WHERE tenant_id = $1 AND workspace_id = $2 ORDER BY position"
);

pub(super) const STORED_RULE: &str = "SELECT version::int8, status, rule::text, provenance::text \
     FROM reflexr_rules WHERE tenant_id = $1 AND workspace_id = $2 AND name = $3";
/// Every workspace's active stored rules, by tenant, workspace and name (`COLLATE "C"`).
pub(super) const ALL_STORED_RULES: &str = "SELECT version::int8, status, rule::text, provenance::text, \
     tenant_id, workspace_id FROM reflexr_rules WHERE status = 'active' ORDER BY tenant_id, workspace_id, name";
/// The active stored rules by name: the column is `COLLATE "C"`, so code-point order.
pub(super) const STORED_RULES: &str = "SELECT version::int8, status, rule::text, provenance::text \
     FROM reflexr_rules WHERE tenant_id = $1 AND workspace_id = $2 AND status = 'active' ORDER BY name";
pub(super) const UPSERT_STORED_RULE: &str = "INSERT INTO reflexr_rules \
     (tenant_id, workspace_id, name, version, status, rule, provenance) \
     VALUES ($1, $2, $3, $4::int8, $5, $6::text::json, $7::text::json) \
     ON CONFLICT (tenant_id, workspace_id, name) DO UPDATE SET version = EXCLUDED.version, \
     status = EXCLUDED.status, rule = EXCLUDED.rule, provenance = EXCLUDED.provenance";

/// Takes the lease if it is free, lapsed by `$6` or already the holder's: one statement, so
/// two acquirers never both win.
pub(super) const ACQUIRE_LEASE: &str = "INSERT INTO reflexr_leases \
     (tenant_id, workspace_id, key, holder, expires_at) VALUES ($1, $2, $3, $4, $5::text::timestamptz) \
     ON CONFLICT (tenant_id, workspace_id, key) DO UPDATE SET holder = EXCLUDED.holder, \
     expires_at = EXCLUDED.expires_at \
     WHERE reflexr_leases.holder = EXCLUDED.holder OR reflexr_leases.expires_at <= $6::text::timestamptz";
pub(super) const RELEASE_LEASE: &str = "DELETE FROM reflexr_leases \
     WHERE tenant_id = $1 AND workspace_id = $2 AND key = $3 AND holder = $4";
pub(super) const LEASES: &str = concat!(
    "SELECT key, holder, ",
    ts!("expires_at"),
    " FROM reflexr_leases WHERE tenant_id = $1 AND workspace_id = $2 ORDER BY key COLLATE \"C\""
);

pub(super) const CURSOR: &str = "SELECT seq FROM reflexr_cursors \
     WHERE tenant_id = $1 AND workspace_id = $2 AND name = $3";
/// The row lock of the upsert orders concurrent saves; the furthest stays.
pub(super) const SAVE_CURSOR: &str = "INSERT INTO reflexr_cursors (tenant_id, workspace_id, name, seq) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, workspace_id, name) \
     DO UPDATE SET seq = GREATEST(reflexr_cursors.seq, EXCLUDED.seq)";
pub(super) const LEASES_OF: &str = concat!(
    "SELECT key, holder, ",
    ts!("expires_at"),
    " FROM reflexr_leases WHERE tenant_id = $1 AND workspace_id = $2 AND key = ANY($3) ORDER BY key COLLATE \"C\""
);
/// One page of leases where keys sort as bytes in the column's own collation (a `C` or
/// `POSIX` database, or column): a range of `pk_reflexr_leases`, in its order.
pub(super) const LEASES_PAGE: &str = concat!(
    "SELECT key, holder, ",
    ts!("expires_at"),
    " FROM reflexr_leases WHERE tenant_id = $1 AND workspace_id = $2 AND key > $3 ORDER BY key LIMIT $4"
);
/// One page of leases in any other collation: the same rows and order (bytes), but no index
/// serves `COLLATE "C"`, so the workspace's lease rows are read and the first kept.
pub(super) const LEASES_PAGE_BY_BYTES: &str = concat!(
    "SELECT key, holder, ",
    ts!("expires_at"),
    " FROM reflexr_leases WHERE tenant_id = $1 AND workspace_id = $2 AND key COLLATE \"C\" > $3 \
     ORDER BY key COLLATE \"C\" LIMIT $4"
);
pub(super) const CURSORS: &str = "SELECT name, seq FROM reflexr_cursors \
     WHERE tenant_id = $1 AND workspace_id = $2 ORDER BY name COLLATE \"C\"";

/// Whether an earlier run of the outer run's scope (in firing order) has one of the statuses
/// `{}` lists: reflexr's `_held_back`, a probe of `ix_reflexr_runs_scope_head`.
const HELD_BACK: &str = "EXISTS (SELECT 1 FROM reflexr_runs e WHERE e.tenant_id = r.tenant_id \
     AND e.workspace_id = r.workspace_id AND e.rule = r.rule AND e.scope_key = r.scope_key \
     AND e.status IN ({}) AND (e.fired_seq, e.position) < (r.fired_seq, r.position))";

/// reflexr's `due_runs`: `$1` now, `$2` the limit, `$3` the disabled rules, `$4` the ordered
/// ones, `$5` the ordered ones that do not block, `$6` those that do.
///
/// Three walks of `ix_reflexr_runs_due` (status, next_attempt_at), merged: the pending runs
/// due by now, the retrying ones, and the running ones whose run lease is missing or lapsed
/// (a probe of the lease's primary key per run, so the walk stops after `$2`). Each walk is
/// in the answer's order (the index gives next_attempt_at, an incremental sort the rest) and
/// stops at `$2` rows; held-back and disabled runs are skipped as it goes. One statement
/// over `status IN (...)` with a join to the leases sorted every due run instead (seconds at
/// 1,000,000 runs).
pub(super) fn due_runs() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(due_runs_sql)
}

/// The order of [`due_runs`], of the runs `{}`.
const DUE_ORDER: &str = "ORDER BY {}next_attempt_at, {}tenant_id COLLATE \"C\", \
     {}workspace_id COLLATE \"C\", {}\"position\"";

fn due_order(alias: &str) -> String {
    DUE_ORDER.replace("{}", &format!("{alias}."))
}

fn due_runs_sql() -> String {
    let holding = HELD_BACK.replace("{}", "'pending', 'retrying', 'running'");
    let blocking = HELD_BACK.replace("{}", "'dead', 'pending', 'retrying', 'running'");
    let columns = "SELECT r.tenant_id, r.workspace_id, r.\"position\", r.next_attempt_at, r.body \
         FROM reflexr_runs r";
    let order = due_order("r");
    let waiting = |status: &str| {
        format!(
            "({columns} WHERE r.status = '{status}' AND r.next_attempt_at <= $1::text::timestamptz \
             AND r.rule <> ALL($3::text[]) AND (r.rule <> ALL($4::text[]) \
             OR (r.rule = ANY($5::text[]) AND NOT {holding}) \
             OR (r.rule = ANY($6::text[]) AND NOT {blocking})) {order} LIMIT $2)"
        )
    };
    let running = format!(
        "({columns} WHERE r.status = 'running' AND r.rule <> ALL($3::text[]) \
         AND COALESCE((SELECT l.expires_at FROM reflexr_leases l WHERE l.tenant_id = r.tenant_id \
         AND l.workspace_id = r.workspace_id AND l.key = 'run:' || r.id), '-infinity') \
         <= $1::text::timestamptz {order} LIMIT $2)"
    );
    format!(
        "SELECT d.tenant_id, d.workspace_id, d.body::text FROM ({} UNION ALL {} UNION ALL {running}) d \
         {} LIMIT $2",
        waiting("pending"),
        waiting("retrying"),
        due_order("d"),
    )
}

/// Which types a window of the log reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Types {
    /// Every type.
    All,
    /// One type: `event_type = $n`, a range of `ix_reflexr_events_type` in `seq` order.
    One,
    /// Several: `event_type = ANY($n)`.
    Several,
}

/// A window of the log: `$1`, `$2` the workspace, `$3` after; then, as asked, before, the
/// types and the limit. The last `n` are read newest first (a backward scan from the tail)
/// and reversed by the caller.
pub(super) fn log_window(before: bool, types: Types, limit: bool, last: bool) -> String {
    let mut sql = String::from(
        "SELECT envelope::text FROM reflexr_events WHERE tenant_id = $1 AND workspace_id = $2 AND seq > $3",
    );
    let mut n = 3;
    if before {
        n += 1;
        sql.push_str(&format!(" AND seq < ${n}"));
    }
    match types {
        Types::All => {}
        Types::One => {
            n += 1;
            sql.push_str(&format!(" AND event_type = ${n}"));
        }
        Types::Several => {
            n += 1;
            sql.push_str(&format!(" AND event_type = ANY(${n})"));
        }
    }
    sql.push_str(if last {
        " ORDER BY seq DESC"
    } else {
        " ORDER BY seq"
    });
    if limit || last {
        n += 1;
        sql.push_str(&format!(" LIMIT ${n}"));
    }
    sql
}

/// Runs newest first: `$1`, `$2` the workspace; then a value for each of `columns` (as
/// [`RunQuery::filters`](execstore::workspace::RunQuery::filters) gives them), and the limit.
pub(super) fn runs(columns: impl Iterator<Item = &'static str>, limit: bool) -> String {
    let mut sql =
        String::from("SELECT body::text FROM reflexr_runs WHERE tenant_id = $1 AND workspace_id = $2");
    let mut n = 2;
    for column in columns {
        n += 1;
        sql.push_str(&format!(" AND {column} = ${n}"));
    }
    sql.push_str(" ORDER BY position DESC");
    if limit {
        n += 1;
        sql.push_str(&format!(" LIMIT ${n}"));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(
            log_window(true, Types::Several, false, true),
            "SELECT envelope::text FROM reflexr_events WHERE tenant_id = $1 AND workspace_id = $2 \
             AND seq > $3 AND seq < $4 AND event_type = ANY($5) ORDER BY seq DESC LIMIT $6"
        );
        assert!(log_window(false, Types::All, true, false).ends_with("seq > $3 ORDER BY seq LIMIT $4"));
        assert!(log_window(false, Types::One, false, false).ends_with("AND event_type = $4 ORDER BY seq"));
        assert!(runs(["status", "scope_key"].into_iter(), true)
            .ends_with("status = $3 AND scope_key = $4 ORDER BY position DESC LIMIT $5"));
        assert!(LOCK.contains("to_char(head_ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"));
        assert_eq!(due_runs().matches("EXISTS").count(), 4);
        assert_eq!(due_runs().matches("LIMIT $2").count(), 4);
        assert!(!due_runs().contains("JOIN"), "the leases are probed, not joined");
    }
}
