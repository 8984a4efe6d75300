//! [`Listener`]: one `LISTEN`ing connection on a channel, shared by any number of waiters.
//!
//! PostgreSQL delivers a `NOTIFY` to every session listening on its channel when the
//! notifying transaction commits (and drops it on rollback). A waiter first makes sure the
//! listening connection is there and takes a mark, then looks at the database, then waits for
//! a notification received after the mark: a commit after its look is announced to it, and
//! one before was seen by the look. No notification is lost between looking and waiting.
//!
//! No background thread: the first waiter to find nobody reading the connection reads it,
//! records every payload it receives for the others (waking them) and hands the connection
//! back when its own wait ends; another waiter then takes over.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use execstore::{Result, StoreError};
use postgres::fallible_iterator::FallibleIterator;
use postgres::{Client, NoTls};

use super::Db;

/// How many received payloads are kept for waiters that have not looked at them yet; a waiter
/// that falls further behind is woken (it looks again, which is always safe).
const KEEP: usize = 4096;

#[derive(Default)]
struct State {
    /// The listening connection while nobody reads it.
    client: Option<Client>,
    /// Whether a listening connection exists (here, or with the waiter reading it).
    listening: bool,
    /// Whether a waiter is reading the connection now.
    reading: bool,
    /// How many notifications have been received in all.
    received: u64,
    /// The payloads of the last ones received, the newest last.
    recent: VecDeque<String>,
}

/// A `LISTEN`ing connection on one channel, made on first use.
pub(crate) struct Listener {
    config: postgres::Config,
    channel: String,
    state: Mutex<State>,
    changed: Condvar,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// A listener on `channel`, connecting with `config` when first needed.
    pub(crate) fn new(config: postgres::Config, channel: String) -> Self {
        Listener {
            config,
            channel,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A waiter that panicked left at worst a connection with queued notifications.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn connect(&self, state: &mut State) -> Result<()> {
        let mut client = self.config.connect(NoTls).db()?;
        client
            .batch_execute(&format!("LISTEN \"{}\"", self.channel.replace('"', "\"\"")))
            .db()?;
        state.client = Some(client);
        state.listening = true;
        Ok(())
    }

    /// Makes sure the connection listens, and returns whether it only started now (so
    /// whatever was committed before was not announced: the caller looks) and the mark to
    /// wait from.
    pub(crate) fn start(&self) -> Result<(bool, u64)> {
        let mut state = self.state();
        if state.listening {
            return Ok((false, state.received));
        }
        self.connect(&mut state)?;
        Ok((true, state.received))
    }

    /// Waits until a notification received after `mark` has a payload `wanted` accepts, or
    /// `timeout` passes: `true` if one came. Also `true`, at once, when notifications may have
    /// been missed (the connection was lost and made again, or the waiter fell behind): the
    /// caller looks again either way.
    pub(crate) fn wait(&self, mark: u64, timeout: Duration, wanted: impl Fn(&str) -> bool) -> Result<bool> {
        let deadline = Instant::now() + timeout;
        let mut state = self.state();
        loop {
            if came(&state, mark, &wanted) {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            if state.reading {
                state = self
                    .changed
                    .wait_timeout(state, deadline - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                continue;
            }
            let Some(mut client) = state.client.take() else {
                // The connection was lost: listen again; what came meanwhile was missed.
                self.connect(&mut state)?;
                return Ok(true);
            };
            state.reading = true;
            drop(state);
            let (payloads, failure) = read(&mut client, deadline - now);
            state = self.state();
            state.reading = false;
            state.received += payloads.len() as u64;
            state.recent.extend(payloads);
            while state.recent.len() > KEEP {
                state.recent.pop_front();
            }
            let lost = failure.is_some() || client.is_closed();
            if lost {
                state.listening = false;
            } else {
                state.client = Some(client);
            }
            self.changed.notify_all();
            if lost {
                return match failure {
                    _ if came(&state, mark, &wanted) => Ok(true),
                    Some(e) => Err(e),
                    None => Err(StoreError::Backend {
                        message: "the listening connection closed".into(),
                        retryable: true,
                        source: None,
                    }),
                };
            }
        }
    }
}

/// Whether a notification after `mark` that `wanted` accepts was received, or some after it
/// are no longer kept (the waiter fell behind).
fn came(state: &State, mark: u64, wanted: &impl Fn(&str) -> bool) -> bool {
    let kept_from = state.received - state.recent.len() as u64;
    if mark < kept_from {
        return true;
    }
    let skip = usize::try_from(mark - kept_from).unwrap_or(usize::MAX);
    state.recent.iter().skip(skip).any(|p| wanted(p))
}

/// Reads the notifications that arrive within `timeout` (at least the first one, then every
/// one already queued): commits that came together are read at once.
fn read(client: &mut Client, timeout: Duration) -> (Vec<String>, Option<StoreError>) {
    let mut payloads = Vec::new();
    match client.notifications().timeout_iter(timeout).next().db() {
        Ok(Some(n)) => payloads.push(n.payload().to_owned()),
        Ok(None) => return (payloads, None),
        Err(e) => return (payloads, Some(e)),
    }
    let mut notifications = client.notifications();
    let mut queued = notifications.iter();
    loop {
        match queued.next().db() {
            Ok(Some(n)) => payloads.push(n.payload().to_owned()),
            Ok(None) => return (payloads, None),
            Err(e) => return (payloads, Some(e)),
        }
    }
}
