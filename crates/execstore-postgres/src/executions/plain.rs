//! Event steps as plain statements, for a database without execstore's commit functions:
//! one opened with [`PgOptions::create_schema`](super::PgOptions::create_schema) off on
//! tables that only harel's own schema (a migration tool, say) made. Nothing is created
//! there, so the functions of migrations 4 and 6 are missing; a step is then its statements
//! in one transaction (one round trip each, as harel's own store does), writing the rows the
//! functions write, byte for byte.

use execstore::kit::validate::PreparedCommit;
use execstore::{executions::TimerOp, Result, StoreError};

use super::rows::col;
use super::schema::{Sql as _, Tables};
use super::sql::Channels;
use super::{PgStore, Tx};

/// The statements of a step without the commit functions.
#[derive(Debug)]
pub(crate) struct PlainStmts {
    update: String,
    insert: String,
    version: String,
    outbox: String,
    processed: String,
    spawn: String,
    schedule: String,
    cancel: String,
    notify: String,
}

impl PlainStmts {
    pub(crate) fn new(t: &Tables) -> Self {
        PlainStmts {
            // harel's `version` is an INT: the parameters are cast, the assignment narrows.
            update: t.sql(
                "UPDATE {executions} SET data = $1, version = $2::int8, definition_id = $5 \
                 WHERE id = $3 AND version = $4::int8",
            ),
            insert: t.sql(
                "INSERT INTO {executions} (id, definition_id, data, version) VALUES ($1, $2, $3, $4::int8) \
                 ON CONFLICT (id) DO NOTHING",
            ),
            version: t.sql("SELECT version::int8 FROM {executions} WHERE id = $1"),
            outbox: t.sql("INSERT INTO {outbox} (target_id, event) VALUES ($1, $2) RETURNING seq::int8"),
            processed: t.sql(
                "INSERT INTO {processed_events} (execution_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            ),
            spawn: t.sql("INSERT INTO {spawns} (parent_id, child_id, root_path, context) VALUES ($1, $2, $3, $4)"),
            schedule: t.sql(
                "INSERT INTO {timers} (execution_id, path, fire_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = EXCLUDED.fire_at",
            ),
            cancel: t.sql("DELETE FROM {timers} WHERE execution_id = $1 AND path = $2"),
            notify: "SELECT pg_notify($1, '')".to_owned(),
        }
    }
}

/// Which kinds of work a transaction added, to wake their waiters.
#[derive(Default)]
struct Added {
    outbox: bool,
    spawns: bool,
    timers: bool,
}

impl PgStore {
    /// `steps` in one transaction, as plain statements: each step's outcome, in order (a lost
    /// CAS writes nothing of its step); an `Err` means nothing was committed.
    pub(super) fn commit_plain(
        &self,
        plain: &PlainStmts,
        steps: &[&PreparedCommit],
    ) -> Result<Vec<Result<Vec<i64>>>> {
        self.check_writable()?;
        self.write(|tx, sql| {
            let mut added = Added::default();
            let mut outcomes = Vec::with_capacity(steps.len());
            for p in steps {
                outcomes.push(self.plain_step(tx, plain, p, &mut added)?);
            }
            let Channels {
                outbox,
                spawns,
                timers,
            } = &sql.channels;
            for (wake, channel) in [
                (added.outbox, outbox),
                (added.spawns, spawns),
                (added.timers, timers),
            ] {
                if wake {
                    tx.query(&plain.notify, &[channel])?;
                }
            }
            Ok(outcomes)
        })
    }

    fn plain_step(
        &self,
        tx: &mut Tx<'_>,
        s: &PlainStmts,
        p: &PreparedCommit,
        added: &mut Added,
    ) -> Result<Result<Vec<i64>>> {
        let w = &p.write;
        let mut written = tx.execute(
            &s.update,
            &[&w.data, &w.version, &w.id, &w.expected, &w.definition_id],
        )?;
        if written == 0 && w.expected == 0 {
            written = tx.execute(&s.insert, &[&w.id, &w.definition_id, &w.data, &w.version])?;
        }
        if written == 0 {
            let found = match tx.query_opt(&s.version, &[&w.id])? {
                Some(row) => Some(col::<i64>(&row, 0)?),
                None => None,
            };
            return Ok(Err(StoreError::Conflict {
                id: w.id.clone(),
                expected: w.expected,
                found,
            }));
        }
        let mut seqs = Vec::with_capacity(p.emits.len());
        for (target, event) in &p.emits {
            seqs.push(col::<i64>(&tx.query_one(&s.outbox, &[target, event])?, 0)?);
            added.outbox = true;
        }
        if let Some(event_id) = &p.processed_event_id {
            tx.execute(&s.processed, &[&w.id, event_id])?;
        }
        for spawn in &p.spawns {
            tx.execute(
                &s.spawn,
                &[&w.id, &spawn.child_id, &spawn.root_path, &spawn.context],
            )?;
            added.spawns = true;
        }
        for op in &p.timers {
            match op {
                TimerOp::Schedule { path, fire_at } => {
                    tx.execute(&s.schedule, &[&w.id, path, fire_at])?;
                    added.timers = true;
                }
                TimerOp::Cancel { path } => {
                    tx.execute(&s.cancel, &[&w.id, path])?;
                }
            }
        }
        if let Some(trace) = &p.trace {
            self.append_trace_in(tx, &w.id, trace)?;
        }
        Ok(Ok(seqs))
    }
}
