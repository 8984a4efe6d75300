//! Checkpoints off the committing thread (native files only).
//!
//! Under WAL a commit appends its pages to the `-wal` file; a checkpoint copies them into the
//! database file. SQLite's automatic checkpoint runs inside the commit that crosses
//! `wal_autocheckpoint`, so that commit pays for copying thousands of pages and two syncs.
//! A [`Checkpointer`] is a thread of the store with a connection of its own that runs a
//! `PASSIVE` checkpoint shortly after commits (at most one per [`Pacer::pause`]): it never waits
//! for a writer or a reader and never blocks one, copies only what every reader has moved
//! past, and syncs as the store's `synchronous` says. The writer's own automatic checkpoint
//! stays as the backstop, and finds little left to copy. The `-wal` file starts over only once
//! every frame is copied when a write begins; a writer that keeps finding the thread's
//! checkpoint under way (its own automatic one then gives way) could see it grow well past
//! `checkpoint_pages`, so once it has, the thread finishes the job with a `RESTART`
//! checkpoint, which holds new writes back for the little that is left to copy.
//! Durability is SQLite's either way: the checkpoints are SQLite's own, on the same file.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use execstore::{Result, StoreError};
use rusqlite::Connection;

use crate::db::error::Db;
use crate::db::{self, Synchronous};

/// After a commit wakes it, the thread waits this long before checkpointing, so that the
/// commits of that time share one checkpoint (and its syncs).
const PAUSE: Duration = Duration::from_millis(10);

/// The pause instead of [`PAUSE`] under `NORMAL` and `OFF` once the log holds half of
/// `checkpoint_pages`.
///
/// The log starts over only when every frame is copied as a write begins, which a thread
/// racing a busy writer never sees: the writer's own automatic checkpoint, at
/// `checkpoint_pages`, copies and syncs what came since the thread's last checkpoint began,
/// inline. Checkpointing more often as that point nears keeps the rest small. Measured in W1
/// (`execstore bench --synchronous normal`, 2000 x 20, one writer, alternating runs): with
/// 1 ms throughout, the writer's checkpoint took 5% of its time instead of 8% and commits
/// went up 3-10%, for 3.4 times the syncs and 42% more page writes; with 1 ms over the
/// second half only, the same commit rate within noise (13,218 against 13,259 and 12,844 per
/// second, medians of 6) for 30% more syncs and 5% more page writes. Under `FULL` every
/// commit syncs the WAL too, and a checkpoint's syncs queue with theirs (1 ms throughout cost
/// a tenth of the commit rate with 16 clients and group commit): [`PAUSE`] stays.
const CATCH_UP: Duration = Duration::from_millis(1);

/// How long the thread pauses before each checkpoint: [`PAUSE`], or [`CATCH_UP`] under
/// `NORMAL` and `OFF` while its last checkpoint found the log at least half of `pages`.
#[derive(Debug)]
struct Pacer {
    synchronous: Synchronous,
    pages: i64,
    /// Frames in the log at the last checkpoint (0 before the first).
    log: i64,
}

impl Pacer {
    fn new(synchronous: Synchronous, pages: i64) -> Self {
        Pacer {
            synchronous,
            pages,
            log: 0,
        }
    }

    /// The pause before the next checkpoint.
    fn pause(&self) -> Duration {
        match self.synchronous {
            Synchronous::Normal | Synchronous::Off if self.log >= self.pages / 2 => CATCH_UP,
            _ => PAUSE,
        }
    }

    /// A checkpoint found `frames` frames in the log.
    fn checkpointed(&mut self, frames: i64) {
        self.log = frames;
    }
}

/// How long a `RESTART` checkpoint waits for the writer's transaction to end.
const RESTART_WAIT: Duration = Duration::from_millis(200);

/// The store's checkpointing thread; stopped (and joined) when dropped.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// A commit since the last checkpoint began.
    committed: bool,
    stop: bool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Checkpointer {
    /// Starts the thread, with its own connection to the file at `path` (which the store's
    /// writer already made WAL).
    pub(crate) fn start(path: &Path, synchronous: Synchronous, pages: u32) -> Result<Self> {
        let conn = db::open_file(path)?;
        // Never waits: a checkpoint that cannot start now is left to the next commit.
        db::configure(&conn, Duration::ZERO, false)?;
        db::set_synchronous(&conn, synchronous)?;
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("execstore-checkpoint".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&conn, &shared, i64::from(pages), synchronous)
            })
            .map_err(|e| StoreError::Backend {
                message: format!("cannot start the checkpoint thread: {e}"),
                retryable: false,
                source: None,
            })?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    /// Tells the thread that a commit happened.
    pub(crate) fn committed(&self) {
        let mut state = self.shared.state();
        if !state.committed {
            state.committed = true;
            self.shared.wake.notify_one();
        }
    }
}

/// The thread: a `PASSIVE` checkpoint a [`Pacer::pause`] after commits, and a `RESTART` one
/// when the log has grown past `pages` frames and is not all copied.
fn run(conn: &Connection, shared: &Shared, pages: i64, synchronous: Synchronous) {
    let mut pacer = Pacer::new(synchronous, pages);
    loop {
        {
            let mut state = shared.state();
            while !state.committed && !state.stop {
                state = shared.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            if state.stop {
                return;
            }
            state.committed = false;
        }
        std::thread::sleep(pacer.pause());
        // A busy or failed checkpoint changes nothing; the next commit asks again, and the
        // writer's automatic checkpoint remains.
        if let Ok((log, copied)) = checkpoint(conn, "PASSIVE") {
            pacer.checkpointed(log);
            if log >= pages && copied < log && conn.busy_timeout(RESTART_WAIT).is_ok() {
                let _ = checkpoint(conn, "RESTART");
                let _ = conn.busy_timeout(Duration::ZERO);
            }
        }
    }
}

/// Runs a checkpoint of `mode`: the frames in the log and how many of them are copied.
fn checkpoint(conn: &Connection, mode: &str) -> Result<(i64, i64)> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((row.get(1)?, row.get(2)?))
    })
    .db()
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.state().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_shortens_while_the_log_is_half_full_unless_commits_sync() {
        let pages = 10_000;
        for sync in [Synchronous::Normal, Synchronous::Off] {
            let mut pacer = Pacer::new(sync, pages);
            assert_eq!(pacer.pause(), PAUSE, "{sync:?}, before any checkpoint");
            pacer.checkpointed(pages / 2 - 1);
            assert_eq!(pacer.pause(), PAUSE, "{sync:?}, under half");
            pacer.checkpointed(pages / 2);
            assert_eq!(pacer.pause(), CATCH_UP, "{sync:?}, half");
            pacer.checkpointed(3 * pages);
            assert_eq!(pacer.pause(), CATCH_UP, "{sync:?}, past the limit");
            // The writer's checkpoint copied everything and the log started over.
            pacer.checkpointed(14);
            assert_eq!(pacer.pause(), PAUSE, "{sync:?}, after the log started over");
        }
        for sync in [Synchronous::Full, Synchronous::Extra] {
            let mut pacer = Pacer::new(sync, pages);
            for log in [0, pages / 2, 3 * pages] {
                pacer.checkpointed(log);
                assert_eq!(pacer.pause(), PAUSE, "{sync:?}, log {log}");
            }
        }
        assert!(CATCH_UP < PAUSE);
    }
}
