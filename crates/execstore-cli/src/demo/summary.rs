//! What is in a store, read back through the trait.

use super::*;

/// Counts of what a store holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Every execution.
    pub executions: usize,
    /// Executions without a parent.
    pub roots: usize,
    /// Per status, in [`Status::ALL`] order.
    pub by_status: Vec<(Status, usize)>,
    /// Per definition, by name.
    pub by_definition: BTreeMap<String, usize>,
    /// Trace steps kept.
    pub trace_steps: usize,
    /// Undelivered outbox events.
    pub outbox: usize,
    /// Armed timers.
    pub timers: usize,
    /// Armed timers already due at `now`.
    pub timers_due: usize,
    /// Pending spawn intents.
    pub spawns: usize,
}

/// Reads the counts back from `store`.
pub fn summarize(store: &dyn ExecutionStore, now: f64) -> Result<Summary> {
    let mut summary = Summary::default();
    let mut by_status: BTreeMap<Status, usize> = BTreeMap::new();
    for page in paging::execution_pages(store, ListQuery::new().limit(MAX_PAGE)) {
        for item in &page?.items {
            summary.executions += 1;
            summary.roots += usize::from(item.parent_id.is_none());
            *by_status.entry(item.status).or_default() += 1;
            *summary
                .by_definition
                .entry(item.definition_id.clone())
                .or_default() += 1;
            summary.trace_steps += store.read_trace(&item.id)?.len();
        }
    }
    summary.by_status = Status::ALL
        .iter()
        .map(|s| (*s, by_status.get(s).copied().unwrap_or(0)))
        .collect();
    for page in paging::outbox_pages(store, None, MAX_PAGE) {
        summary.outbox += page?.len();
    }
    for page in paging::spawn_pages(store, None, MAX_PAGE) {
        summary.spawns += page?.len();
    }
    for page in paging::timer_pages(store, ALL_TIMERS, None, MAX_PAGE) {
        let page = page?;
        summary.timers += page.len();
        summary.timers_due += page.iter().filter(|t| t.fire_at <= now).count();
    }
    Ok(summary)
}

impl Summary {
    /// The counts as JSON.
    pub fn to_json(&self) -> Value {
        let by_status: Map<String, Value> = self
            .by_status
            .iter()
            .map(|(s, n)| (s.as_str().to_owned(), json!(n)))
            .collect();
        json!({
            "executions": self.executions,
            "roots": self.roots,
            "children": self.executions - self.roots,
            "by_status": by_status,
            "by_definition": self.by_definition,
            "trace_steps": self.trace_steps,
            "outbox": self.outbox,
            "timers": self.timers,
            "timers_due": self.timers_due,
            "spawns": self.spawns,
        })
    }
}
