//! Checkpoints off the committing thread (native files only).
//!
//! Under WAL a commit appends its pages to the `-wal` file; a checkpoint copies them into the
//! database file. SQLite's automatic checkpoint runs inside the commit that crosses
//! `wal_autocheckpoint`, so that commit pays for copying thousands of pages and two syncs.
//! A [`Checkpointer`] is a thread of the store with a connection of its own that runs a
//! `PASSIVE` checkpoint shortly after commits (at most one per [`PAUSE`]): it never waits
//! for a writer or a reader and never blocks one, copies only what every reader has moved
//! past, and syncs as the store's `synchronous` says. The writer's own automatic checkpoint
//! stays as the backstop, and finds little left to copy. Durability is SQLite's either way:
//! the checkpoint is SQLite's own, on the same file.

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
pub(crate) const PAUSE: Duration = Duration::from_millis(10);

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
    pub(crate) fn start(path: &Path, synchronous: Synchronous) -> Result<Self> {
        let conn = db::open_file(path, false)?;
        // Never waits: a checkpoint that cannot start now is left to the next commit.
        db::configure(&conn, Duration::ZERO, false)?;
        db::set_synchronous(&conn, synchronous)?;
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("execstore-checkpoint".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&conn, &shared)
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

fn run(conn: &Connection, shared: &Shared) {
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
        std::thread::sleep(PAUSE);
        // A busy or failed checkpoint changes nothing; the next commit asks again, and the
        // writer's automatic checkpoint remains.
        let _ = conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .db();
    }
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
