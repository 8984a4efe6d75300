//! Every page of a listing, in one place: [`execution_pages`] follows
//! [`crate::ExecutionStore::list_executions`]'s keyset cursor, [`outbox_pages`] and [`spawn_pages`]
//! follow the seq of the last entry read, [`timer_pages`] the last timer read. Each is an
//! iterator of pages that ends after the last page and refuses a page that does not move past
//! the previous one (a cursor handed back as it was given, an id, seq or timer not beyond the
//! last one read), which would otherwise page forever: that page is a [`PagingStalled`]
//! error, and the iteration ends.
//!
//! ```
//! use execstore::{ExecutionStore, MemoryStore, executions::{paging, ListQuery}};
//!
//! let store = MemoryStore::new();
//! let mut ids = Vec::new();
//! for page in paging::execution_pages(&store, ListQuery::new().limit(100)) {
//!     ids.extend(page?.items.into_iter().map(|s| s.id));
//! }
//! # Ok::<(), execstore::StoreError>(())
//! ```

use std::fmt;

use crate::error::{Result, StoreError};
use crate::executions::model::{DueTimer, ExecutionPage, OutboxEntry, SpawnEntry, TraceStep};
use crate::executions::query::ListQuery;

/// The reads the pagers and the contract's scanning defaults follow: four paged reads and an
/// execution's trace. Every [`ExecutionStore`](crate::ExecutionStore) has them (a blanket
/// implementation beside the contract forwards to `list_executions`, `pending_outbox`,
/// `pending_spawns`, `due_timers` and `read_trace`), so a pager takes any store; the pagers
/// and scans themselves know only this, and the contract's own defaults can page too.
pub trait PagedReads {
    /// One page of a listing (`ExecutionStore::list_executions`).
    fn page_of_executions(&self, query: &ListQuery) -> Result<ExecutionPage>;
    /// Undelivered outbox entries after `after` (`ExecutionStore::pending_outbox`).
    fn page_of_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>>;
    /// Pending spawn intents after `after` (`ExecutionStore::pending_spawns`).
    fn page_of_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>>;
    /// Timers due at `now` after `after` (`ExecutionStore::due_timers`).
    fn page_of_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>>;
    /// An execution's trace, oldest step first (`ExecutionStore::read_trace`).
    fn trace_of(&self, execution_id: &str) -> Result<Vec<TraceStep>>;
}

/// A store answered a page that does not move past the previous one: following it would
/// page forever. It reaches the caller as a [`StoreError::Backend`] (not retryable: the
/// store is broken, not busy) whose [`std::error::Error::source`] is this error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagingStalled {
    /// The read that stalled: `list_executions`, `pending_outbox`, `pending_spawns` or
    /// `due_timers`.
    pub listing: &'static str,
    /// Where it stalled: the cursor, id, seq or timer the page did not move past.
    pub at: String,
}

impl fmt::Display for PagingStalled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: the store answered a page that does not move past {}; paging would never end",
            self.listing, self.at
        )
    }
}

impl std::error::Error for PagingStalled {}

impl From<PagingStalled> for StoreError {
    fn from(stalled: PagingStalled) -> Self {
        StoreError::Backend {
            message: stalled.to_string(),
            retryable: false,
            source: Some(Box::new(stalled)),
        }
    }
}

/// Whether `error` is a [`PagingStalled`] (as the iterators here return it).
pub fn is_stalled(error: &StoreError) -> bool {
    std::error::Error::source(error).is_some_and(|s| s.is::<PagingStalled>())
}

/// The pages of `query` (from its cursor on, `query.limit` a page), in the query's order, until
/// a page without a next cursor. A page whose next cursor is the one it was read with, or whose
/// last summary is not past the previous page's in that order, is a [`PagingStalled`] error.
pub fn execution_pages<S: PagedReads + ?Sized>(store: &S, query: ListQuery) -> ExecutionPages<'_, S> {
    ExecutionPages {
        store,
        query,
        last: None,
        done: false,
    }
}

/// Every page of a listing: see [`execution_pages`].
#[derive(Debug)]
pub struct ExecutionPages<'a, S: PagedReads + ?Sized> {
    store: &'a S,
    query: ListQuery,
    last: Option<crate::executions::model::ExecutionSummary>,
    done: bool,
}

impl<S: PagedReads + ?Sized> ExecutionPages<'_, S> {
    fn stalled(&mut self, at: String) -> Option<Result<ExecutionPage>> {
        self.done = true;
        Some(Err(PagingStalled {
            listing: "list_executions",
            at,
        }
        .into()))
    }
}

impl<S: PagedReads + ?Sized> Iterator for ExecutionPages<'_, S> {
    type Item = Result<ExecutionPage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let page = match self.store.page_of_executions(&self.query) {
            Ok(page) => page,
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        if let (Some(last), Some(previous)) = (page.items.last(), &self.last) {
            if self.query.order.compare(last, previous) != std::cmp::Ordering::Greater {
                let at = format!("id {:?}", previous.id);
                return self.stalled(at);
            }
        }
        match &page.next_cursor {
            None => self.done = true,
            Some(next) if self.query.cursor.as_ref() == Some(next) => {
                return self.stalled(format!("cursor {next:?}"));
            }
            Some(next) => self.query.cursor = Some(next.clone()),
        }
        if let Some(last) = page.items.last() {
            self.last = Some(last.clone());
        }
        Some(Ok(page))
    }
}

/// The pages of undelivered outbox entries with `seq > after`, oldest first, `limit` a page,
/// until a page shorter than `limit`.
pub fn outbox_pages<S: PagedReads + ?Sized>(
    store: &S,
    after: Option<i64>,
    limit: usize,
) -> KeyedPages<'_, OutboxEntry, i64> {
    KeyedPages::new(
        "pending_outbox",
        after,
        limit,
        Box::new(move |after: Option<&i64>| store.page_of_outbox(after.copied(), limit)),
        |e: &OutboxEntry| e.seq,
        |new, old| new > old,
    )
}

/// The pages of pending spawn intents with `seq > after`, oldest first, `limit` a page,
/// until a page shorter than `limit`.
pub fn spawn_pages<S: PagedReads + ?Sized>(
    store: &S,
    after: Option<i64>,
    limit: usize,
) -> KeyedPages<'_, SpawnEntry, i64> {
    KeyedPages::new(
        "pending_spawns",
        after,
        limit,
        Box::new(move |after: Option<&i64>| store.page_of_spawns(after.copied(), limit)),
        |e: &SpawnEntry| e.seq,
        |new, old| new > old,
    )
}

/// The pages of timers due at `now` (every armed one with [`crate::kit::validate::ALL_TIMERS`]),
/// soonest first, starting after `after`, `limit` a page, until a page shorter than `limit`.
pub fn timer_pages<S: PagedReads + ?Sized>(
    store: &S,
    now: f64,
    after: Option<DueTimer>,
    limit: usize,
) -> KeyedPages<'_, DueTimer, DueTimer> {
    KeyedPages::new(
        "due_timers",
        after,
        limit,
        Box::new(move |after: Option<&DueTimer>| store.page_of_timers(now, after, limit)),
        DueTimer::clone,
        |new, old| {
            let key = |t: &DueTimer| (t.fire_at, t.execution_id.clone(), t.path.clone());
            key(new) > key(old)
        },
    )
}

/// A page read after the key of the last entry of the previous page.
type ReadAfter<'a, T, K> = Box<dyn FnMut(Option<&K>) -> Result<Vec<T>> + 'a>;

/// The pages of a read that resumes after the last entry read (outbox, spawns, timers): see
/// [`outbox_pages`], [`spawn_pages`], [`timer_pages`].
pub struct KeyedPages<'a, T, K> {
    listing: &'static str,
    after: Option<K>,
    limit: usize,
    read: ReadAfter<'a, T, K>,
    key: fn(&T) -> K,
    past: fn(&K, &K) -> bool,
    done: bool,
}

impl<'a, T, K> KeyedPages<'a, T, K> {
    fn new(
        listing: &'static str,
        after: Option<K>,
        limit: usize,
        read: ReadAfter<'a, T, K>,
        key: fn(&T) -> K,
        past: fn(&K, &K) -> bool,
    ) -> Self {
        KeyedPages {
            listing,
            after,
            limit,
            read,
            key,
            past,
            done: false,
        }
    }
}

impl<T, K: fmt::Debug> fmt::Debug for KeyedPages<'_, T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPages")
            .field("listing", &self.listing)
            .field("after", &self.after)
            .field("limit", &self.limit)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<T, K: fmt::Debug> Iterator for KeyedPages<'_, T, K> {
    type Item = Result<Vec<T>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let page = match (self.read)(self.after.as_ref()) {
            Ok(page) => page,
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        // A short page is the last one (an empty one ends without being yielded).
        self.done = page.len() < self.limit;
        let last = page.last()?;
        let key = (self.key)(last);
        if let Some(after) = &self.after {
            if !(self.past)(&key, after) {
                self.done = true;
                return Some(Err(PagingStalled {
                    listing: self.listing,
                    at: format!("{after:?}"),
                }
                .into()));
            }
        }
        self.after = Some(key);
        Some(Ok(page))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ExecutionStore;
    use crate::{executions::Event, Effects, Execution, MemoryStore};

    fn store(n: usize) -> MemoryStore {
        let store = MemoryStore::new();
        for i in 0..n {
            let mut exe = Execution::new(format!("e{i:02}"), "d");
            let fx = Effects::new()
                .emit(None, Event::new(format!("ev{i}"), "E"))
                .spawn(format!("c{i}"), "r", Default::default())
                .schedule("t", 100.0 + (i % 3) as f64);
            store.commit(&mut exe, &fx).unwrap();
        }
        store
    }

    #[test]
    fn every_page_once_in_order() {
        let s = store(7);
        let pages: Vec<ExecutionPage> = execution_pages(&s, ListQuery::new().limit(3))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(pages.iter().map(|p| p.items.len()).collect::<Vec<_>>(), [3, 3, 1]);
        let outbox: Vec<usize> = outbox_pages(&s, None, 3).map(|p| p.unwrap().len()).collect();
        assert_eq!(outbox, [3, 3, 1]);
        let spawns: Vec<usize> = spawn_pages(&s, Some(4), 2).map(|p| p.unwrap().len()).collect();
        assert_eq!(spawns, [2, 1]);
        // A full last page costs one more read, which comes back empty and is not yielded.
        let timers: Vec<Vec<DueTimer>> = timer_pages(&s, 1e9, None, 7).map(|p| p.unwrap()).collect();
        assert_eq!(timers.len(), 1);
        let fire: Vec<f64> = timers[0].iter().map(|t| t.fire_at).collect();
        assert_eq!(fire, [100.0, 100.0, 100.0, 101.0, 101.0, 102.0, 102.0]);
        assert_eq!(timer_pages(&s, 1e9, None, 2).flatten().flatten().count(), 7);
    }

    /// A store whose listing always answers the first page, and its outbox the first entries.
    struct Stuck(MemoryStore);

    #[test]
    fn a_page_that_does_not_move_on_is_an_error() {
        let stuck = Stuck(store(5));
        let results: Vec<Result<ExecutionPage>> =
            execution_pages(&stuck, ListQuery::new().limit(2)).collect();
        assert_eq!(results.len(), 2, "one page, then the stall, then nothing");
        let e = results[1].as_ref().unwrap_err();
        assert!(is_stalled(e), "{e}");
        assert!(!e.is_retryable());
        assert!(e.to_string().contains("list_executions"), "{e}");

        let results: Vec<Result<Vec<OutboxEntry>>> = outbox_pages(&stuck, None, 2).collect();
        assert_eq!(results.len(), 2);
        assert!(is_stalled(results[1].as_ref().unwrap_err()));
        // a real error is not a stall
        let bad: Vec<Result<Vec<OutboxEntry>>> = outbox_pages(&stuck.0, None, 0).collect();
        assert!(bad.len() == 1 && !is_stalled(bad[0].as_ref().unwrap_err()));
    }

    impl ExecutionStore for Stuck {
        fn capabilities(&self) -> crate::executions::Capabilities {
            self.0.capabilities()
        }
        fn trace_max(&self) -> Option<u32> {
            None
        }
        fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
            self.0.commit(exe, effects)
        }
        fn load(&self, id: &str) -> Result<Option<Execution>> {
            self.0.load(id)
        }
        fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
            self.0.load_for_event(id, event_id)
        }
        fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
            self.0.is_processed(execution_id, event_id)
        }
        fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
            self.0.list_executions(&query.clone().cursor(None))
        }
        fn pending_outbox(&self, _after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
            self.0.pending_outbox(None, limit)
        }
        fn ack_outbox(&self, seq: i64) -> Result<()> {
            self.0.ack_outbox(seq)
        }
        fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
            self.0.pending_spawns(after, limit)
        }
        fn ack_spawn(&self, seq: i64) -> Result<()> {
            self.0.ack_spawn(seq)
        }
        fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
            self.0.due_timers(now, after, limit)
        }
        fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
            self.0.delete_timer(execution_id, path, fire_at)
        }
        fn read_trace(&self, execution_id: &str) -> Result<Vec<crate::executions::TraceStep>> {
            self.0.read_trace(execution_id)
        }
        fn append_trace(&self, execution_id: &str, step: &crate::executions::TraceStep) -> Result<i64> {
            self.0.append_trace(execution_id, step)
        }
        fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
            self.0.ids_with_prefix(prefix)
        }
        fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
            self.0.purge(execution_id, expected_version)
        }
    }
}
