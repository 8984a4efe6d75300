//! The whole contract in memory: for tests, for ephemeral engines, and as the executable
//! statement of what every other backend must do.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use crate::error::{Result, StoreError};
use crate::executions::definitions::{prepare_definition, same_definition, DefinitionDoc};
use crate::executions::model::{
    DueTimer, Effects, Execution, ExecutionPage, ExecutionSummary, OutboxEntry, SpawnEntry, Status, TimerOp,
    TraceStep,
};
use crate::executions::query::{ListOrder, ListQuery};
use crate::executions::search::{attribute_path, scanned_paths, SearchAttribute, MAX_ATTRIBUTES};
use crate::executions::store::{BatchItem, Capabilities, ExecutionStore, DEFAULT_TRACE_MAX};
use crate::kit::validate::{
    check_id, check_limit, check_seq, check_time, prepare_commit, prepare_trace, PreparedCommit,
};

/// An [`ExecutionStore`] that keeps everything in process memory. A commit applies all of
/// its effects under one lock, so a conflicting commit changes nothing, as in every backend.
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    trace_max: Option<u32>,
}

#[derive(Debug, Default)]
struct Inner {
    executions: BTreeMap<String, Execution>,
    outbox: BTreeMap<i64, OutboxEntry>,
    last_outbox_seq: i64,
    processed: BTreeSet<(String, String)>,
    timers: BTreeMap<(String, String), f64>,
    spawns: BTreeMap<i64, SpawnEntry>,
    last_spawn_seq: i64,
    trace: HashMap<String, VecDeque<(i64, TraceStep)>>,
    attributes: BTreeSet<String>,
    definitions: BTreeMap<(String, String), DefinitionDoc>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store keeping the last [`DEFAULT_TRACE_MAX`] trace steps per execution.
    pub fn new() -> Self {
        Self::with_trace_max(Some(DEFAULT_TRACE_MAX))
    }

    /// An empty store keeping the last `trace_max` trace steps per execution (`None`: all).
    pub fn with_trace_max(trace_max: Option<u32>) -> Self {
        MemoryStore {
            inner: Mutex::new(Inner::default()),
            trace_max: trace_max.filter(|n| *n > 0),
        }
    }

    /// A page in a time order ([`ListOrder::UpdatedDesc`], [`ListOrder::CreatedDesc`]): the
    /// matching summaries past the cursor's key, sorted (a memory store has no index to
    /// walk; the order is the one every backend keeps).
    fn list_by_time(&self, query: &ListQuery) -> Result<ExecutionPage> {
        let after = query.validated_time_after()?;
        let order = query.order;
        let inner = self.lock();
        let mut items: Vec<ExecutionSummary> = inner
            .executions
            .values()
            .filter(|exe| query.matches_execution(exe))
            .filter(|exe| {
                after.as_ref().is_none_or(|key| {
                    order.compare_keys(order.time_of_execution(exe), &exe.id, key.time, &key.id)
                        == std::cmp::Ordering::Greater
                })
            })
            .map(ExecutionSummary::of)
            .collect();
        drop(inner);
        items.sort_unstable_by(|a, b| order.compare(a, b));
        items.truncate(query.limit.saturating_add(1));
        Ok(ExecutionPage::from_overfetch_in(order, items, query.limit))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-applied commit: every commit
        // checks first and mutates only after its checks passed.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    fn declared(&self) -> Vec<SearchAttribute> {
        self.attributes
            .iter()
            .map(|path| SearchAttribute { path: path.clone() })
            .collect()
    }

    fn append_trace(&mut self, id: &str, step: TraceStep, trace_max: Option<u32>) -> i64 {
        let ring = self.trace.entry(id.to_owned()).or_default();
        let idx = ring.back().map_or(0, |(last, _)| last + 1);
        ring.push_back((idx, step));
        if let Some(max) = trace_max {
            while ring.len() > max as usize {
                ring.pop_front();
            }
        }
        idx
    }

    /// The CAS write of `exe` (already checked as `prepared`) and every effect, or a
    /// `Conflict` that changed nothing.
    fn apply(
        &mut self,
        exe: &Execution,
        effects: &Effects,
        prepared: &PreparedCommit,
        trace_max: Option<u32>,
    ) -> Result<Vec<i64>> {
        let found = self.executions.get(&exe.id).map(|stored| stored.version);
        let expected = prepared.write.expected;
        if found != Some(expected) && !(found.is_none() && expected == 0) {
            return Err(StoreError::Conflict {
                id: exe.id.clone(),
                expected,
                found,
            });
        }
        let mut stored = exe.clone();
        stored.version = prepared.write.version;
        self.executions.insert(exe.id.clone(), stored);
        let mut seqs = Vec::with_capacity(effects.emits.len());
        for emit in &effects.emits {
            self.last_outbox_seq += 1;
            let seq = self.last_outbox_seq;
            let entry = OutboxEntry {
                seq,
                target_id: emit.target_id.clone(),
                event: emit.event.clone(),
            };
            self.outbox.insert(seq, entry);
            seqs.push(seq);
        }
        if let Some(event_id) = &effects.processed_event_id {
            self.processed.insert((exe.id.clone(), event_id.clone()));
        }
        for spawn in &effects.spawns {
            self.last_spawn_seq += 1;
            let seq = self.last_spawn_seq;
            let entry = SpawnEntry {
                seq,
                parent_id: exe.id.clone(),
                child_id: spawn.child_id.clone(),
                root_path: spawn.root_path.clone(),
                context: spawn.context.clone(),
            };
            self.spawns.insert(seq, entry);
        }
        for op in &effects.timers {
            match op {
                TimerOp::Schedule { path, fire_at } => {
                    self.timers.insert((exe.id.clone(), path.clone()), *fire_at);
                }
                TimerOp::Cancel { path } => {
                    self.timers.remove(&(exe.id.clone(), path.clone()));
                }
            }
        }
        if let Some(step) = &effects.trace {
            self.append_trace(&exe.id, step.clone(), trace_max);
        }
        Ok(seqs)
    }
}

impl ExecutionStore for MemoryStore {
    fn capabilities(&self) -> Capabilities {
        Capabilities::EPHEMERAL.with_definitions()
    }

    fn trace_max(&self) -> Option<u32> {
        self.trace_max
    }

    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
        let prepared = prepare_commit(exe, effects)?;
        let seqs = self.lock().apply(exe, effects, &prepared, self.trace_max)?;
        exe.version = prepared.write.version;
        Ok(seqs)
    }

    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        // Check every item before taking the lock, then apply them all under it: the batch
        // is one step for every reader, as one transaction is in a SQL backend.
        let prepared: Vec<Result<PreparedCommit>> = items
            .iter_mut()
            .map(|item| prepare_commit(&mut item.execution, &item.effects))
            .collect();
        let mut inner = self.lock();
        Ok(items
            .iter_mut()
            .zip(prepared)
            .map(|(item, prepared)| {
                let prepared = prepared?;
                let seqs = inner.apply(&item.execution, &item.effects, &prepared, self.trace_max)?;
                item.execution.version = prepared.write.version;
                Ok(seqs)
            })
            .collect())
    }

    fn load(&self, id: &str) -> Result<Option<Execution>> {
        Ok(self.lock().executions.get(id).cloned())
    }

    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        let inner = self.lock();
        match inner.executions.get(id) {
            Some(exe) => {
                let done = inner.processed.contains(&(id.to_owned(), event_id.to_owned()));
                Ok((Some(exe.clone()), done))
            }
            None => Ok((None, false)),
        }
    }

    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        let key = (execution_id.to_owned(), event_id.to_owned());
        Ok(self.lock().processed.contains(&key))
    }

    fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
        if query.order != ListOrder::Id {
            let page = self.list_by_time(query)?;
            let scan = match &query.filter {
                Some(f) => scanned_paths(f, &self.lock().declared()),
                None => Vec::new(),
            };
            return Ok(page.scanned(scan));
        }
        let after = query.validated_after()?;
        let inner = self.lock();
        let start = match &after {
            Some(id) => Bound::Excluded(id.clone()),
            None => Bound::Unbounded,
        };
        let items: Vec<ExecutionSummary> = inner
            .executions
            .range((start, Bound::Unbounded))
            .map(|(_, exe)| exe)
            .filter(|exe| query.matches_execution(exe))
            .take(query.limit + 1)
            .map(ExecutionSummary::of)
            .collect();
        let scan = match &query.filter {
            Some(f) => scanned_paths(f, &inner.declared()),
            None => Vec::new(),
        };
        Ok(ExecutionPage::from_overfetch(items, query.limit).scanned(scan))
    }

    fn attributes(&self) -> Result<Vec<SearchAttribute>> {
        Ok(self.lock().declared())
    }

    /// Memory scans every filter alike: an attribute here is a record, so a filter's
    /// `scan` says what it says on every backend.
    fn declare_attribute(&self, path: &str) -> Result<SearchAttribute> {
        let path = attribute_path(path)?.to_string();
        let mut inner = self.lock();
        if !inner.attributes.contains(&path) && inner.attributes.len() >= MAX_ATTRIBUTES {
            return Err(StoreError::invalid(
                "path",
                format!("the store already keeps {MAX_ATTRIBUTES} search attributes"),
            ));
        }
        inner.attributes.insert(path.clone());
        Ok(SearchAttribute { path })
    }

    fn drop_attribute(&self, path: &str) -> Result<bool> {
        let path = attribute_path(path)?.to_string();
        Ok(self.lock().attributes.remove(&path))
    }

    fn put_definition(&self, doc: &DefinitionDoc) -> Result<bool> {
        prepare_definition(doc)?;
        let mut inner = self.lock();
        let key = (doc.definition_id.clone(), doc.definition_fqn.clone());
        if let Some(stored) = inner.definitions.get(&key) {
            return same_definition(&stored.document, doc);
        }
        inner.definitions.insert(key, doc.clone());
        Ok(true)
    }

    fn get_definition(&self, definition_id: &str, definition_fqn: &str) -> Result<Option<DefinitionDoc>> {
        let key = (definition_id.to_owned(), definition_fqn.to_owned());
        Ok(self.lock().definitions.get(&key).cloned())
    }

    fn count_by_status(&self, query: &ListQuery) -> Result<Vec<(Status, u64)>> {
        let filter = query.count_filter()?;
        let mut counts = [0u64; Status::ALL.len()];
        for exe in self
            .lock()
            .executions
            .values()
            .filter(|exe| filter.matches_execution(exe))
        {
            if let Some(slot) = Status::ALL.iter().position(|s| *s == exe.status) {
                counts[slot] += 1;
            }
        }
        Ok(Status::ALL.into_iter().zip(counts).collect())
    }

    fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
        check_limit("limit", limit)?;
        let inner = self.lock();
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(inner
            .outbox
            .range((from, Bound::Unbounded))
            .take(limit)
            .map(|(_, e)| e.clone())
            .collect())
    }

    fn enqueue_outbox(&self, target_id: &str, event: &crate::executions::Event) -> Result<i64> {
        check_id("target_id", target_id)?;
        crate::kit::validate::prepare_event(event)?;
        let mut inner = self.lock();
        inner.last_outbox_seq += 1;
        let seq = inner.last_outbox_seq;
        let entry = OutboxEntry {
            seq,
            target_id: Some(target_id.to_owned()),
            event: event.clone(),
        };
        inner.outbox.insert(seq, entry);
        Ok(seq)
    }

    fn ack_outbox(&self, seq: i64) -> Result<()> {
        check_seq("seq", seq)?;
        match self.lock().outbox.remove(&seq) {
            Some(_) => Ok(()),
            None => Err(StoreError::NotFound {
                what: "outbox entry",
                key: seq.to_string(),
            }),
        }
    }

    fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        for &seq in seqs {
            check_seq("seqs", seq)?;
        }
        let mut inner = self.lock();
        Ok(seqs
            .iter()
            .filter(|seq| inner.outbox.remove(seq).is_some())
            .count())
    }

    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        check_limit("limit", limit)?;
        let inner = self.lock();
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(inner
            .spawns
            .range((from, Bound::Unbounded))
            .take(limit)
            .map(|(_, e)| e.clone())
            .collect())
    }

    fn ack_spawn(&self, seq: i64) -> Result<()> {
        check_seq("seq", seq)?;
        match self.lock().spawns.remove(&seq) {
            Some(_) => Ok(()),
            None => Err(StoreError::NotFound {
                what: "spawn entry",
                key: seq.to_string(),
            }),
        }
    }

    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
        check_time("now", now)?;
        check_limit("limit", limit)?;
        if let Some(after) = after {
            check_time("after.fire_at", after.fire_at)?;
        }
        let inner = self.lock();
        let mut due: Vec<DueTimer> = inner
            .timers
            .iter()
            .filter(|(_, fire_at)| **fire_at <= now)
            .map(|((execution_id, path), fire_at)| DueTimer {
                execution_id: execution_id.clone(),
                path: path.clone(),
                fire_at: *fire_at,
            })
            .collect();
        // Soonest first; ties in key order (the sort is stable), as the SQL backends' index
        // gives them.
        due.sort_by(|a, b| a.fire_at.total_cmp(&b.fire_at));
        if let Some(after) = after {
            let key = |t: &DueTimer| (t.fire_at, t.execution_id.clone(), t.path.clone());
            let after = key(after);
            due.retain(|t| key(t).partial_cmp(&after) == Some(std::cmp::Ordering::Greater));
        }
        due.truncate(limit);
        Ok(due)
    }

    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        check_time("fire_at", fire_at)?;
        let mut inner = self.lock();
        let key = (execution_id.to_owned(), path.to_owned());
        if inner.timers.get(&key) == Some(&fire_at) {
            inner.timers.remove(&key);
            return Ok(true);
        }
        Ok(false)
    }

    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        let inner = self.lock();
        let Some(ring) = inner.trace.get(execution_id) else {
            return Ok(Vec::new());
        };
        Ok(ring
            .iter()
            .map(|(idx, step)| {
                let mut step = step.clone();
                step.insert("index".into(), (*idx).into());
                step
            })
            .collect())
    }

    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
        check_id("execution_id", execution_id)?;
        prepare_trace(step)?;
        let mut inner = self.lock();
        if !inner.executions.contains_key(execution_id) {
            return Err(StoreError::NotFound {
                what: "execution",
                key: execution_id.to_owned(),
            });
        }
        Ok(inner.append_trace(execution_id, step.clone(), self.trace_max))
    }

    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        let inner = self.lock();
        Ok(inner
            .executions
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .map(|(id, _)| id)
            .take_while(|id| id.starts_with(prefix))
            .cloned()
            .collect())
    }

    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        check_id("execution_id", execution_id)?;
        let mut inner = self.lock();
        let deleted = match inner.executions.get(execution_id) {
            Some(exe) if exe.version != expected_version => return Ok(false),
            Some(_) => inner.executions.remove(execution_id).is_some(),
            None => false,
        };
        inner.processed.retain(|(id, _)| id != execution_id);
        inner.trace.remove(execution_id);
        inner.timers.retain(|(id, _), _| id != execution_id);
        inner
            .outbox
            .retain(|_, e| e.target_id.as_deref() != Some(execution_id));
        inner.spawns.retain(|_, s| s.parent_id != execution_id);
        Ok(deleted)
    }
}
