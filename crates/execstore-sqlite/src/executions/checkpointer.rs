//! Checkpoints off the committing thread (native files only).
//!
//! Under WAL a commit appends its pages to the `-wal` file; a checkpoint copies them into the
//! database file. SQLite's automatic checkpoint runs inside the commit that crosses
//! `wal_autocheckpoint`, so that commit pays for copying thousands of pages and two syncs.
//! A [`Checkpointer`] is a thread of the store with a connection of its own that runs a
//! `PASSIVE` checkpoint shortly after commits (at most one per [`pause`]): it never waits
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
///
/// Under `FULL` (and `EXTRA`) every commit syncs the WAL as well, and a checkpoint's syncs
/// queue with theirs: 10 ms. Measured in W1 with 16 clients and group commit, 1 ms there
/// cost a tenth of the commit rate.
///
/// Under `NORMAL` (and `OFF`) the checkpoints' syncs are the only ones, and the pause sets
/// how much the writer's own automatic checkpoint finds left to copy (and sync) once the
/// log passes `checkpoint_pages`: everything committed since the thread's last checkpoint
/// began. 1 ms. In W1 with one writer, that took the writer's checkpoint from 8% of its time
/// to 5%, and the commit rate up by 8-10% (`execstore bench --synchronous normal`, 2000 x 20,
/// alternating).
pub(crate) fn pause(synchronous: Synchronous) -> Duration {
    match synchronous {
        Synchronous::Full | Synchronous::Extra => Duration::from_millis(10),
        Synchronous::Normal | Synchronous::Off => Duration::from_millis(1),
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
        let conn = db::open_file(path, false)?;
        // Never waits: a checkpoint that cannot start now is left to the next commit.
        db::configure(&conn, Duration::ZERO, false)?;
        db::set_synchronous(&conn, synchronous)?;
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("execstore-checkpoint".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&conn, &shared, i64::from(pages), pause(synchronous))
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

/// The thread: a `PASSIVE` checkpoint `pause` after commits, and a `RESTART` one when the
/// log has grown past `pages` frames and is not all copied.
fn run(conn: &Connection, shared: &Shared, pages: i64, pause: Duration) {
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
        std::thread::sleep(pause);
        // A busy or failed checkpoint changes nothing; the next commit asks again, and the
        // writer's automatic checkpoint remains.
        if let Ok((log, copied)) = checkpoint(conn, "PASSIVE") {
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
