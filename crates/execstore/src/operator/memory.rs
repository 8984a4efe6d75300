//! [`MemoryOperatorStore`]: the audit log and the saved views in memory.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{
    check_entry, check_outcome, check_query, check_view, check_view_name, outcome_already_set, AuditEntry,
    AuditQuery, OperatorStore, SavedView, PENDING,
};
use crate::error::Result;

/// The operator's records in memory, private to the process (gone when dropped).
#[derive(Debug, Default)]
pub struct MemoryOperatorStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    audit: Vec<AuditEntry>,
    views: BTreeMap<String, SavedView>,
}

impl MemoryOperatorStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl OperatorStore for MemoryOperatorStore {
    fn record_audit(&self, entry: &AuditEntry) -> Result<i64> {
        check_entry(entry)?;
        let mut inner = self.inner();
        let id = inner.audit.last().map_or(1, |e| e.id + 1);
        inner.audit.push(AuditEntry { id, ..entry.clone() });
        Ok(id)
    }

    fn set_audit_outcome(&self, id: i64, outcome: &str, message: Option<&str>) -> Result<bool> {
        check_outcome(id, outcome, message)?;
        let mut inner = self.inner();
        let Some(entry) = inner.audit.iter_mut().find(|e| e.id == id) else {
            return Ok(false);
        };
        if entry.outcome != PENDING {
            return Err(outcome_already_set(id, &entry.outcome));
        }
        entry.outcome = outcome.to_owned();
        entry.message = message.map(str::to_owned);
        Ok(true)
    }

    fn list_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        check_query(query)?;
        Ok(self
            .inner()
            .audit
            .iter()
            .rev()
            .filter(|e| query.matches(e))
            .take(query.limit)
            .cloned()
            .collect())
    }

    fn list_views(&self) -> Result<Vec<SavedView>> {
        Ok(self.inner().views.values().cloned().collect())
    }

    fn put_view(&self, view: &SavedView) -> Result<()> {
        check_view(view)?;
        self.inner().views.insert(view.name.clone(), view.clone());
        Ok(())
    }

    fn delete_view(&self, name: &str) -> Result<bool> {
        check_view_name(name)?;
        Ok(self.inner().views.remove(name).is_some())
    }
}
