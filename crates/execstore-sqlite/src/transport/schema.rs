//! harel 0.9's SQLite transport tables, under a prefix: the statements its `SqliteTransport`
//! runs to create them (so `sqlite_master` holds the same text whichever program made the
//! file), and the queries on them.

use execstore::kit::names::check_prefix;
use execstore::Result;

/// The tables' names for one prefix, and the statements on them.
#[derive(Clone, Debug)]
pub(crate) struct Names {
    pub(crate) messages: String,
    pub(crate) groups: String,
    prefix: String,
}

/// The DDL, with `{messages}`, `{groups}` and `{prefix}` to fill: a message row per queued
/// event (`locked_by`/`lock_expiry`: its lease or park), a group row per non-empty queue
/// (`last_claimed_at`: the round-robin key, 0 until first claimed; `priority`).
const SCHEMA: [&str; 4] = [
    "CREATE TABLE IF NOT EXISTS {messages} \
     (seq INTEGER PRIMARY KEY AUTOINCREMENT, group_id TEXT NOT NULL, event TEXT NOT NULL, \
     locked_by TEXT, lock_expiry REAL)",
    "CREATE TABLE IF NOT EXISTS {groups} \
     (group_id TEXT PRIMARY KEY, last_claimed_at REAL NOT NULL DEFAULT 0.0, \
     priority INT NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS {prefix}_transport_groups_by_last_claimed ON {groups} (last_claimed_at)",
    "CREATE INDEX IF NOT EXISTS {prefix}_transport_messages_by_group ON {messages} (group_id, seq)",
];

/// The head of the group that waited longest (round-robin order, then arrival) among those at
/// `?1` priority or above with nothing in flight at `?2`: no message leased or parked beyond
/// `?2`. It walks the groups in that order and stops at the first that qualifies.
const CLAIM: &str = "SELECT head.seq, head.group_id, head.event \
     FROM {groups} AS g \
     JOIN {messages} AS head \
       ON head.seq = (SELECT MIN(first.seq) FROM {messages} AS first WHERE first.group_id = g.group_id) \
     WHERE g.priority >= ?1 \
       AND NOT EXISTS (SELECT 1 FROM {messages} AS busy \
                       WHERE busy.group_id = g.group_id AND busy.locked_by IS NOT NULL \
                         AND busy.lock_expiry >= ?2) \
     ORDER BY g.last_claimed_at, g.rowid \
     LIMIT 1";

impl Names {
    pub(crate) fn new(prefix: &str) -> Result<Self> {
        check_prefix(prefix)?;
        Ok(Names {
            messages: format!("{prefix}_transport_messages"),
            groups: format!("{prefix}_transport_groups"),
            prefix: prefix.to_owned(),
        })
    }

    fn fill(&self, template: &str) -> String {
        template
            .replace("{messages}", &self.messages)
            .replace("{groups}", &self.groups)
            .replace("{prefix}", &self.prefix)
    }

    pub(crate) fn schema(&self) -> Vec<String> {
        SCHEMA.iter().map(|t| self.fill(t)).collect()
    }

    pub(crate) fn claim(&self) -> String {
        self.fill(CLAIM)
    }

    pub(crate) fn insert_message(&self) -> String {
        self.fill("INSERT INTO {messages} (group_id, event) VALUES (?1, ?2)")
    }

    pub(crate) fn insert_group(&self) -> String {
        self.fill("INSERT OR IGNORE INTO {groups} (group_id, priority) VALUES (?1, ?2)")
    }

    pub(crate) fn served(&self) -> String {
        self.fill("UPDATE {groups} SET last_claimed_at = ?1 WHERE group_id = ?2")
    }

    pub(crate) fn lock(&self) -> String {
        self.fill("UPDATE {messages} SET locked_by = ?1, lock_expiry = ?2 WHERE seq = ?3")
    }

    pub(crate) fn unlock(&self) -> String {
        self.fill("UPDATE {messages} SET locked_by = NULL, lock_expiry = NULL WHERE seq = ?1")
    }

    pub(crate) fn delete_message(&self) -> String {
        self.fill("DELETE FROM {messages} WHERE seq = ?1")
    }

    pub(crate) fn drop_drained_group(&self) -> String {
        self.fill(
            "DELETE FROM {groups} WHERE group_id = ?1 \
             AND NOT EXISTS (SELECT 1 FROM {messages} WHERE group_id = ?1)",
        )
    }

    pub(crate) fn depth(&self) -> String {
        self.fill("SELECT COUNT(*) FROM {messages}")
    }
}
