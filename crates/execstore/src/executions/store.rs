//! The contract every backend implements.

use std::time::Duration;

use crate::error::Result;
use crate::executions::model::{
    DueTimer, Effects, Event, Execution, ExecutionPage, OutboxEntry, SpawnEntry, TraceStep,
};
use crate::executions::paging::{self, PagedReads};
use crate::executions::query::ListQuery;
use crate::executions::search::SearchAttribute;
use crate::StoreError;

/// How many trace steps a store keeps per execution unless told otherwise (harel's
/// `DEFAULT_TRACE_MAX`).
pub const DEFAULT_TRACE_MAX: u32 = 200;

/// What a backend can do beyond the contract every backend meets; the behaviour suite runs
/// the checks that need a capability only where it is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Committed data survives closing and reopening the store.
    pub durable: bool,
    /// [`ExecutionStore::relay_outbox`], [`ExecutionStore::relay_spawns`] and
    /// [`ExecutionStore::sweep_timers`] hand an entry to one caller at a time, across threads
    /// and processes: several relays and sweepers may share the work.
    pub exclusive_claims: bool,
    /// [`ExecutionStore::wait_for_work`] is woken by commits (of any process) instead of
    /// only sleeping out its timeout.
    pub wakeups: bool,
    /// [`ExecutionStore::put_definition`] keeps definition documents (the default answers
    /// that it keeps none).
    pub definitions: bool,
}

impl Capabilities {
    /// The capabilities of a store that keeps nothing across a restart.
    pub const EPHEMERAL: Capabilities = Capabilities {
        durable: false,
        exclusive_claims: false,
        wakeups: false,
        definitions: false,
    };
    /// The capabilities of a store that keeps what it committed.
    pub const DURABLE: Capabilities = Capabilities {
        durable: true,
        ..Capabilities::EPHEMERAL
    };

    /// These capabilities, with exclusive claims.
    pub const fn with_exclusive_claims(self) -> Self {
        Capabilities {
            exclusive_claims: true,
            ..self
        }
    }

    /// These capabilities, with definition documents kept.
    pub const fn with_definitions(self) -> Self {
        Capabilities {
            definitions: true,
            ..self
        }
    }

    /// These capabilities, with wake-ups.
    pub const fn with_wakeups(self) -> Self {
        Capabilities {
            wakeups: true,
            ..self
        }
    }
}

/// A kind of deferred work that a relay, a spawner or a timer sweep waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Work {
    /// New outbox entries.
    Outbox,
    /// New spawn intents.
    Spawns,
    /// Timers armed or re-armed (the sweep may have to wake sooner).
    Timers,
}

/// The most entries one claim hands out (the page limit of every read).
fn claim_limit(limit: usize) -> Result<usize> {
    crate::kit::validate::check_limit("limit", limit)?;
    Ok(limit)
}

/// One event step of a [`ExecutionStore::commit_batch`]: an execution and its step's effects.
/// On success the execution carries its new version.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchItem {
    /// The execution, at the version it was loaded at.
    pub execution: Execution,
    /// What the step defers.
    pub effects: Effects,
}

impl BatchItem {
    /// An item committing `execution` with `effects`.
    pub fn new(execution: Execution, effects: Effects) -> Self {
        BatchItem { execution, effects }
    }
}

/// The durable execution store: an execution's state and every effect of one event step,
/// written in one all-or-nothing transaction guarded by an optimistic version check, and the
/// reads the relay, the timer sweep and a monitor need.
///
/// Operations are synchronous and take `&self`: a store is shared between threads (a
/// worker and its relay, a monitor's request handlers) and serializes what it must itself.
/// An async facade runs these on a blocking pool; the wasm surface calls them directly.
///
/// Every operation checks its input before touching storage: bad input is
/// [`crate::StoreError::InvalidInput`] and changes nothing.
pub trait ExecutionStore: Send + Sync {
    /// What this backend can do.
    fn capabilities(&self) -> Capabilities;

    /// How many trace steps are kept per execution (`None`: all of them).
    fn trace_max(&self) -> Option<u32>;

    /// Writes `exe` at `exe.version + 1` iff the stored row is still at `exe.version` (a new
    /// execution is written from version 0). On success `exe.version` is the new version; on
    /// [`crate::StoreError::Conflict`] nothing is written and `exe.version` is unchanged.
    fn save(&self, exe: &mut Execution) -> Result<()> {
        self.commit(exe, &Effects::new()).map(|_| ())
    }

    /// The event step: the CAS write of `exe` and, in the same transaction, the outbox rows of
    /// `effects.emits`, the dedupe marker, the timer changes, the spawn intents and the trace
    /// step. All of it is applied or none of it. Returns the outbox seq of each emit, in order.
    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>>;

    /// Commits many event steps, of one execution or many, as [`ExecutionStore::commit`]
    /// would one by one, but durable together: one transaction and one sync where the backend
    /// can. Each item is CAS-checked and applied on its own: a `Conflict` or `InvalidInput`
    /// fails that item only and leaves no trace of it, and a later item of the same execution
    /// sees the earlier one's write. Returns each item's outbox seqs or error, in order; a
    /// committed item's execution carries its new version.
    ///
    /// An `Err` from the call itself means nothing of the batch was committed. (This default
    /// commits item by item, so it reports a backend failure per item instead.)
    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        Ok(items
            .iter_mut()
            .map(|item| self.commit(&mut item.execution, &item.effects))
            .collect())
    }

    /// The stored execution, or `None`.
    fn load(&self, id: &str) -> Result<Option<Execution>>;

    /// The stored execution and whether it already processed `event_id`, read together
    /// (`(None, false)` when no execution is stored under `id`).
    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)>;

    /// Whether `execution_id` already processed `event_id`.
    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool>;

    /// One page of summaries, in the query's order ([`crate::executions::ListOrder`]: by id
    /// unless it says otherwise).
    fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage>;

    /// Undelivered outbox entries with `seq > after`, oldest first, at most `limit`.
    fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>>;

    /// Enqueues one outbox entry on its own, in its own transaction: `event` for
    /// `target_id`, stored exactly as a step's emit is (harel's relay delivers it like any
    /// other, and its dedupe on `event.id` holds), without writing any execution: no step, no
    /// new version. Returns the entry's seq. A bad `target_id` or event field, or an event
    /// past [`crate::kit::validate::MAX_DOCUMENT_BYTES`], is
    /// [`crate::StoreError::InvalidInput`] and nothing is written. Whether the target exists
    /// is not checked here (an engine's emit to a gone execution is dropped by its relay):
    /// [`crate::executions::control::send`] is the checked call.
    ///
    /// This default, for a backend that cannot write an entry alone, refuses with a
    /// permanent [`crate::StoreError::Backend`] failure and writes nothing; memory, SQLite and
    /// PostgreSQL implement it.
    fn enqueue_outbox(&self, target_id: &str, event: &Event) -> Result<i64> {
        crate::kit::validate::check_id("target_id", target_id)?;
        crate::kit::validate::check_event("event", event)?;
        Err(StoreError::Backend {
            message: "this backend cannot enqueue an outbox entry on its own".into(),
            retryable: false,
            source: None,
        })
    }

    /// Removes the delivered outbox entry `seq` in its own transaction.
    /// [`crate::StoreError::NotFound`] if there is none (already acked, or never made).
    fn ack_outbox(&self, seq: i64) -> Result<()>;

    /// Removes the delivered outbox entries `seqs` in one transaction where the backend can,
    /// and returns how many were removed: a seq already acked (or never made) is skipped, not
    /// an error, so a relay may re-ack a batch after a crash. A seq that cannot be one (below
    /// 1) is [`crate::StoreError::InvalidInput`] and nothing is removed.
    fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        for &seq in seqs {
            crate::kit::validate::check_seq("seqs", seq)?;
        }
        let mut removed = 0;
        for &seq in seqs {
            match self.ack_outbox(seq) {
                Ok(()) => removed += 1,
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(removed)
    }

    /// Pending child creations with `seq > after`, oldest first, at most `limit`.
    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>>;

    /// Removes the done spawn intent `seq`. [`crate::StoreError::NotFound`] if there is none.
    fn ack_spawn(&self, seq: i64) -> Result<()>;

    /// Timers with `fire_at <= now`, soonest first (ties by execution id, then path), at most
    /// `limit`, starting strictly after `after` (the last timer of the previous page).
    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>>;

    /// Removes the timer of `(execution_id, path)` only if it still fires at `fire_at`, so a
    /// timer re-armed after the sweep read it survives. Returns whether a timer was removed.
    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool>;

    /// The execution's kept trace steps, oldest first, each with its `index`.
    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>>;

    /// Appends a trace step outside an event step and returns its index.
    /// [`crate::StoreError::NotFound`] if no execution is stored under `execution_id`.
    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64>;

    /// The ids of every stored execution whose id starts with `prefix`, ordered.
    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>>;

    /// Deletes the execution and everything keyed by it (dedupe markers, trace, timers, outbox
    /// entries addressed to it, spawn intents it issued) iff it is still at
    /// `expected_version`, and returns `true`. Returns `false` and touches nothing if it moved
    /// on. If no execution is stored, leftover rows keyed by the id are removed and `false`
    /// is returned.
    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool>;

    /// The relay's step: claims up to `limit` undelivered outbox entries, oldest first, calls
    /// `deliver` with them, and acks (removes) the seqs `deliver` returns, the claim released
    /// in the same transaction. Seqs `deliver` returns that it was not given are ignored;
    /// entries it does not return stay pending. Returns how many were acked.
    ///
    /// Where [`Capabilities::exclusive_claims`] holds, an entry claimed by one caller is not
    /// handed to another (thread or process) until that claim ends, so several relays can
    /// share the outbox; a relay that dies mid-delivery releases its claim and the entries
    /// are delivered again (at least once, never concurrently). `deliver` must not ack or
    /// purge the entries it was given through the store itself: they are locked by the claim.
    ///
    /// This default reads a page and acks it, with no claim: one relay per store.
    fn relay_outbox(
        &self,
        limit: usize,
        deliver: &mut dyn FnMut(&[OutboxEntry]) -> Vec<i64>,
    ) -> Result<usize> {
        let entries = self.pending_outbox(None, claim_limit(limit)?)?;
        if entries.is_empty() {
            return Ok(0);
        }
        let delivered = offered(&entries, |e| e.seq, deliver(&entries));
        self.ack_outbox_many(&delivered)
    }

    /// The spawner's step, as [`ExecutionStore::relay_outbox`] is the relay's: claims up to
    /// `limit` pending spawn intents, calls `create` with them, and acks the seqs it returns.
    /// Returns how many were acked.
    fn relay_spawns(&self, limit: usize, create: &mut dyn FnMut(&[SpawnEntry]) -> Vec<i64>) -> Result<usize> {
        let entries = self.pending_spawns(None, claim_limit(limit)?)?;
        let mut acked = 0;
        for seq in offered(&entries, |e| e.seq, create(&entries)) {
            match self.ack_spawn(seq) {
                Ok(()) => acked += 1,
                // Acked by someone else meanwhile: not this caller's to count.
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(acked)
    }

    /// The timer sweep's step: claims up to `limit` timers due at `now`, soonest first, and
    /// calls `fire` with them while the claim is held. `fire` fires each timer the engine's
    /// way (an event step that cancels or re-arms it, or [`ExecutionStore::delete_timer`]);
    /// a timer it leaves in place is offered again by a later sweep. Returns how many timers
    /// were offered.
    ///
    /// Where [`Capabilities::exclusive_claims`] holds, a timer claimed by one sweeper is not
    /// offered to another until `fire` returned, and one that `fire` removed is not offered
    /// again. This default reads one page, with no claim: one sweeper per store.
    fn sweep_timers(&self, now: f64, limit: usize, fire: &mut dyn FnMut(&[DueTimer])) -> Result<usize> {
        let timers = self.due_timers(now, None, claim_limit(limit)?)?;
        if !timers.is_empty() {
            fire(&timers);
        }
        Ok(timers.len())
    }

    /// Waits until `work` may be pending or `timeout` passed; returns `true` if woken by a
    /// commit (or by the first wait, which starts listening and returns at once so the caller
    /// looks again before sleeping), `false` on timeout. A relay polls with it:
    /// `loop { if relay_outbox(..)? == 0 { wait_for_work(Work::Outbox, t)?; } }`.
    ///
    /// Where [`Capabilities::wakeups`] does not hold, this sleeps out `timeout` and returns
    /// `false` (this default). On `wasm32`, where a thread cannot block, it returns `false`
    /// at once: the caller's event loop does the waiting.
    fn wait_for_work(&self, work: Work, timeout: Duration) -> Result<bool> {
        let _ = work;
        #[cfg(not(target_arch = "wasm32"))]
        std::thread::sleep(timeout);
        #[cfg(target_arch = "wasm32")]
        let _ = timeout;
        Ok(false)
    }

    /// How many executions have each status among exactly those `query` selects, ignoring
    /// its status filter, cursor, page size and order (see [`ListQuery::count_filter`]):
    /// one entry per status, in [`crate::executions::Status::ALL`] order (zeros included),
    /// so that the counts follow every filter a listing has (definition, roots, time
    /// windows, search, and any filter added to [`ListQuery`] later, since this default
    /// pages through the listing itself). Bad input is
    /// [`crate::StoreError::InvalidInput`], as from the listing. A backend overrides it with
    /// one aggregate query.
    fn count_by_status(&self, query: &ListQuery) -> Result<Vec<(crate::executions::Status, u64)>> {
        use crate::executions::Status;
        let filter = query.count_filter()?;
        let mut counts = [0u64; Status::ALL.len()];
        for page in paging::execution_pages(self, filter.limit(crate::kit::validate::MAX_PAGE)) {
            for summary in &page?.items {
                if let Some(slot) = Status::ALL.iter().position(|s| *s == summary.status) {
                    counts[slot] += 1;
                }
            }
        }
        Ok(Status::ALL.into_iter().zip(counts).collect())
    }

    /// The figures `definition`'s graph is drawn from (see [`crate::executions::graph`]):
    /// where each of its executions sits now, and the steps (and guards) of the traces of the
    /// `max_traces` most recently updated of them
    /// ([`add_recent_traces`](crate::executions::graph::add_recent_traces)); `max_traces` 0
    /// counts no trace. `NotFound` if it has no executions. This default counts where they
    /// sit by reading every execution of it; a backend that keeps that figure up to date in
    /// each write's own transaction answers from it (`maintained` set). The steps are read
    /// from the traces either way.
    fn graph_figures(&self, definition: &str, max_traces: usize) -> Result<crate::executions::GraphFigures> {
        crate::executions::graph::graph_figures_by_scan(self, definition, max_traces)
    }

    /// The executions whose stored document cannot be read (not JSON: a file damaged, or
    /// written by hand), at most `limit`, by id: the rows a listing, the counts and the graphs
    /// skipped instead of failing whole. A backend that skips such rows overrides this; the
    /// default, for one whose rows are always readable, names none.
    fn unreadable_executions(&self, limit: usize) -> Result<Vec<crate::executions::UnreadableRow>> {
        let _ = limit;
        Ok(Vec::new())
    }

    /// The search attributes declared on this store (see [`SearchAttribute`]), by path. This
    /// default, for a backend that keeps none, names none.
    fn attributes(&self) -> Result<Vec<SearchAttribute>> {
        Ok(Vec::new())
    }

    /// Declares the context path `path` (`context.customer_id`) a search attribute: from now
    /// on a `where` filter on it is answered from an index the store builds here (SQL
    /// backends; the memory store scans everything alike). Declaring a declared path again
    /// changes nothing and returns it. A path that is not a context path, or a store already
    /// holding [`crate::executions::search::MAX_ATTRIBUTES`], is
    /// [`crate::StoreError::InvalidInput`]. This default, for a backend that keeps none, is
    /// a permanent [`crate::StoreError::Backend`].
    fn declare_attribute(&self, path: &str) -> Result<SearchAttribute> {
        crate::executions::search::attribute_path(path)?;
        Err(no_attributes())
    }

    /// Drops the search attribute `path` and its index; returns whether there was one. Its
    /// filters keep working, by scan.
    fn drop_attribute(&self, path: &str) -> Result<bool> {
        crate::executions::search::attribute_path(path)?;
        Err(no_attributes())
    }

    /// Keeps `doc` as the definition document of `(definition_id, definition_fqn)` (see
    /// [`crate::executions::definitions`]); returns whether it was stored now (`false`: an
    /// equal document was there, nothing changed). A different document under the same key
    /// is [`StoreError::AlreadyExists`], bad input [`StoreError::InvalidInput`]; neither
    /// changes anything. This default, for a backend that keeps none, is a permanent
    /// [`StoreError::Backend`] (after the input checks).
    fn put_definition(&self, doc: &crate::executions::DefinitionDoc) -> Result<bool> {
        crate::executions::definitions::prepare_definition(doc)?;
        Err(crate::executions::definitions::unsupported())
    }

    /// The definition document kept for `(definition_id, definition_fqn)`, if any. This
    /// default, for a backend that keeps none, has none.
    fn get_definition(
        &self,
        definition_id: &str,
        definition_fqn: &str,
    ) -> Result<Option<crate::executions::DefinitionDoc>> {
        let _ = (definition_id, definition_fqn);
        Ok(None)
    }

    /// A token that changes whenever what the store holds may have changed: a monitor polls
    /// it and reads again only when it moved. Two equal tokens from one store value mean no
    /// execution, outbox entry, timer or spawn intent changed in between; a token may also
    /// move when nothing did (never the reverse). This default hashes every execution's id
    /// and version, the outbox, the spawns and the timers, a scan of the whole store (a trace
    /// step appended outside a commit is not seen); a backend overrides it with something
    /// that costs next to nothing.
    fn change_token(&self) -> Result<String> {
        use std::hash::{Hash, Hasher};
        // Stable within one process, which is all a token promises.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let page = crate::kit::validate::MAX_PAGE;
        for listed in paging::execution_pages(self, ListQuery::new().limit(page)) {
            for s in &listed?.items {
                (&s.id, s.version).hash(&mut hasher);
            }
        }
        0u8.hash(&mut hasher);
        for entries in paging::outbox_pages(self, None, page) {
            for e in &entries? {
                e.seq.hash(&mut hasher);
            }
        }
        1u8.hash(&mut hasher);
        for entries in paging::spawn_pages(self, None, page) {
            for e in &entries? {
                e.seq.hash(&mut hasher);
            }
        }
        2u8.hash(&mut hasher);
        for timers in paging::timer_pages(self, crate::kit::validate::ALL_TIMERS, None, page) {
            for t in &timers? {
                (&t.execution_id, &t.path, t.fire_at.to_bits()).hash(&mut hasher);
            }
        }
        Ok(format!("scan:{:016x}", hasher.finish()))
    }
}

/// What a backend without search attributes answers when asked to keep one.
fn no_attributes() -> StoreError {
    StoreError::Backend {
        message: "this backend keeps no search attributes (filters on context paths still work, by scan)"
            .into(),
        retryable: false,
        source: None,
    }
}

/// `impl ExecutionStore for $wrapper` over any `S: ExecutionStore + ?Sized`, every method
/// forwarded to the store behind it (`**self`), defaults included: a wrapper must keep the
/// store's own claims, wake-ups and cheap monitor reads, never fall back to a default's scan.
/// `missing_trait_methods` makes a method added to the trait later fail clippy here until it
/// is forwarded. Written once for every wrapper, as object_store does.
macro_rules! forward_execution_store {
    ($($wrapper:ty),+ $(,)?) => {$(
        #[deny(clippy::missing_trait_methods)]
        impl<S: ExecutionStore + ?Sized> ExecutionStore for $wrapper {
            fn capabilities(&self) -> Capabilities {
                (**self).capabilities()
            }
            fn trace_max(&self) -> Option<u32> {
                (**self).trace_max()
            }
            fn save(&self, exe: &mut Execution) -> Result<()> {
                (**self).save(exe)
            }
            fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
                (**self).commit(exe, effects)
            }
            fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
                (**self).commit_batch(items)
            }
            fn load(&self, id: &str) -> Result<Option<Execution>> {
                (**self).load(id)
            }
            fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
                (**self).load_for_event(id, event_id)
            }
            fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
                (**self).is_processed(execution_id, event_id)
            }
            fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
                (**self).list_executions(query)
            }
            fn attributes(&self) -> Result<Vec<SearchAttribute>> {
                (**self).attributes()
            }
            fn declare_attribute(&self, path: &str) -> Result<SearchAttribute> {
                (**self).declare_attribute(path)
            }
            fn drop_attribute(&self, path: &str) -> Result<bool> {
                (**self).drop_attribute(path)
            }
            fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
                (**self).pending_outbox(after, limit)
            }
            fn enqueue_outbox(&self, target_id: &str, event: &Event) -> Result<i64> {
                (**self).enqueue_outbox(target_id, event)
            }
            fn ack_outbox(&self, seq: i64) -> Result<()> {
                (**self).ack_outbox(seq)
            }
            fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
                (**self).ack_outbox_many(seqs)
            }
            fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
                (**self).pending_spawns(after, limit)
            }
            fn ack_spawn(&self, seq: i64) -> Result<()> {
                (**self).ack_spawn(seq)
            }
            fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
                (**self).due_timers(now, after, limit)
            }
            fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
                (**self).delete_timer(execution_id, path, fire_at)
            }
            fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
                (**self).read_trace(execution_id)
            }
            fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
                (**self).append_trace(execution_id, step)
            }
            fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
                (**self).ids_with_prefix(prefix)
            }
            fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
                (**self).purge(execution_id, expected_version)
            }
            fn relay_outbox(
                &self,
                limit: usize,
                deliver: &mut dyn FnMut(&[OutboxEntry]) -> Vec<i64>,
            ) -> Result<usize> {
                (**self).relay_outbox(limit, deliver)
            }
            fn relay_spawns(
                &self,
                limit: usize,
                create: &mut dyn FnMut(&[SpawnEntry]) -> Vec<i64>,
            ) -> Result<usize> {
                (**self).relay_spawns(limit, create)
            }
            fn sweep_timers(&self, now: f64, limit: usize, fire: &mut dyn FnMut(&[DueTimer])) -> Result<usize> {
                (**self).sweep_timers(now, limit, fire)
            }
            fn wait_for_work(&self, work: Work, timeout: Duration) -> Result<bool> {
                (**self).wait_for_work(work, timeout)
            }
            fn count_by_status(&self, query: &ListQuery) -> Result<Vec<(crate::executions::Status, u64)>> {
                (**self).count_by_status(query)
            }
            fn graph_figures(&self, definition: &str, max_traces: usize) -> Result<crate::executions::GraphFigures> {
                (**self).graph_figures(definition, max_traces)
            }
            fn change_token(&self) -> Result<String> {
                (**self).change_token()
            }
            fn put_definition(&self, doc: &crate::executions::DefinitionDoc) -> Result<bool> {
                (**self).put_definition(doc)
            }
            fn get_definition(
                &self,
                definition_id: &str,
                definition_fqn: &str,
            ) -> Result<Option<crate::executions::DefinitionDoc>> {
                (**self).get_definition(definition_id, definition_fqn)
            }
            fn unreadable_executions(&self, limit: usize) -> Result<Vec<crate::executions::UnreadableRow>> {
                (**self).unreadable_executions(limit)
            }
        }
    )+};
}

forward_execution_store!(&S, Box<S>, std::sync::Arc<S>);

/// The seqs in `returned` that are among `entries`, in the order returned, without repeats.
pub(crate) fn offered<T>(entries: &[T], seq_of: impl Fn(&T) -> i64, returned: Vec<i64>) -> Vec<i64> {
    let given: std::collections::HashSet<i64> = entries.iter().map(seq_of).collect();
    let mut seen = std::collections::HashSet::with_capacity(returned.len());
    returned
        .into_iter()
        .filter(|seq| given.contains(seq) && seen.insert(*seq))
        .collect()
}

/// Every store can be paged ([`paging`]'s iterators read through this).
impl<S: ExecutionStore + ?Sized> PagedReads for S {
    fn page_of_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
        self.list_executions(query)
    }
    fn page_of_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
        self.pending_outbox(after, limit)
    }
    fn page_of_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        self.pending_spawns(after, limit)
    }
    fn page_of_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
        self.due_timers(now, after, limit)
    }
    fn trace_of(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        self.read_trace(execution_id)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::MemoryStore;

    /// A store with its own change token and counts, which a wrapper must not replace by the
    /// defaults' scans.
    struct Own(MemoryStore);

    impl ExecutionStore for Own {
        fn capabilities(&self) -> Capabilities {
            Capabilities::EPHEMERAL.with_wakeups()
        }
        fn trace_max(&self) -> Option<u32> {
            Some(7)
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
            self.0.list_executions(query)
        }
        fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
            self.0.pending_outbox(after, limit)
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
        fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
            self.0.read_trace(execution_id)
        }
        fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
            self.0.append_trace(execution_id, step)
        }
        fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
            self.0.ids_with_prefix(prefix)
        }
        fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
            self.0.purge(execution_id, expected_version)
        }
        fn count_by_status(&self, _: &ListQuery) -> Result<Vec<(crate::executions::Status, u64)>> {
            Ok(vec![(crate::executions::Status::Running, 42)])
        }
        fn change_token(&self) -> Result<String> {
            Ok("own".into())
        }
    }

    fn check(store: &dyn ExecutionStore, what: &str) {
        assert_eq!(store.change_token().unwrap(), "own", "{what}");
        assert_eq!(
            store.count_by_status(&ListQuery::new()).unwrap(),
            [(crate::executions::Status::Running, 42)],
            "{what}"
        );
        assert_eq!(
            (store.capabilities(), store.trace_max()),
            (Capabilities::EPHEMERAL.with_wakeups(), Some(7)),
            "{what}"
        );
        let mut exe = Execution::new(format!("{what}-1"), "d");
        store.save(&mut exe).unwrap();
        assert_eq!(store.load(&exe.id).unwrap().unwrap().version, 1, "{what}");
    }

    #[test]
    fn wrappers_forward_to_the_store_behind_them() {
        let own = Own(MemoryStore::new());
        check(&&own, "&S");
        check(&Box::new(Own(MemoryStore::new())), "Box<S>");
        check(&Arc::new(Own(MemoryStore::new())), "Arc<S>");
        let shared: Arc<dyn ExecutionStore> = Arc::new(Own(MemoryStore::new()));
        check(&shared, "Arc<dyn ExecutionStore>");
        let boxed: Box<dyn ExecutionStore> = Box::new(Own(MemoryStore::new()));
        check(&boxed, "Box<dyn ExecutionStore>");
        check(
            &crate::executions::GroupCommit::new(Arc::new(Own(MemoryStore::new()))),
            "GroupCommit<Arc<S>>",
        );
    }
}
