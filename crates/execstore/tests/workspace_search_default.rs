//! The contract's default `search_log` and `search_runs` (what a storage that does not build
//! on the front gets, such as the component host's) pass the suite's search checks: a
//! storage that forwards every other method to the memory storage, and keeps the defaults.

use std::sync::Arc;
use std::time::Duration;

use execstore::conformance::workspace::{
    bad_searches_are_refused, log_search_matches_the_reference, run_search_matches_the_reference,
    SimpleHarness,
};
use execstore::workspace::{
    Envelope, EvaluationError, Lease, LogQuery, MemoryWorkspaceStorage, RuleProgress, Run, RunPolicy,
    RunQuery, StoredRule, Timestamp, WorkspaceCapabilities, WorkspaceInfo, WorkspaceRef, WorkspaceStorage,
    WorkspaceTx,
};
use execstore::Result;

/// Every method but the searches, forwarded.
struct Plain(MemoryWorkspaceStorage);

impl WorkspaceStorage for Plain {
    fn capabilities(&self) -> WorkspaceCapabilities {
        self.0.capabilities()
    }
    fn begin(&self, w: &WorkspaceRef) -> Result<Box<dyn WorkspaceTx>> {
        self.0.begin(w)
    }
    fn head_seq(&self, w: &WorkspaceRef) -> Result<i64> {
        self.0.head_seq(w)
    }
    fn read(&self, w: &WorkspaceRef, q: &LogQuery) -> Result<Vec<Envelope>> {
        self.0.read(w, q)
    }
    fn rule_history(&self, w: &WorkspaceRef, name: &str) -> Result<Vec<Envelope>> {
        self.0.rule_history(w, name)
    }
    fn envelope(&self, w: &WorkspaceRef, id: &str) -> Result<Option<Envelope>> {
        self.0.envelope(w, id)
    }
    fn run(&self, w: &WorkspaceRef, id: &str) -> Result<Option<Run>> {
        self.0.run(w, id)
    }
    fn runs(&self, w: &WorkspaceRef, q: &RunQuery) -> Result<Vec<Run>> {
        self.0.runs(w, q)
    }
    fn dead_letters(&self, w: &WorkspaceRef, rule: Option<&str>) -> Result<Vec<EvaluationError>> {
        self.0.dead_letters(w, rule)
    }
    fn progress(&self, w: &WorkspaceRef) -> Result<Vec<(String, RuleProgress)>> {
        self.0.progress(w)
    }
    fn schedules(&self, w: &WorkspaceRef) -> Result<Vec<(String, Timestamp)>> {
        self.0.schedules(w)
    }
    fn stored_rules(&self, w: &WorkspaceRef) -> Result<Vec<StoredRule>> {
        self.0.stored_rules(w)
    }
    fn workspaces(&self) -> Result<Vec<WorkspaceRef>> {
        self.0.workspaces()
    }
    fn workspace_info(&self, w: &WorkspaceRef) -> Result<Option<WorkspaceInfo>> {
        self.0.workspace_info(w)
    }
    fn due_runs(&self, now: Timestamp, limit: usize, policy: &RunPolicy) -> Result<Vec<(WorkspaceRef, Run)>> {
        self.0.due_runs(now, limit, policy)
    }
    fn acquire_lease(&self, w: &WorkspaceRef, key: &str, holder: &str, ttl: Duration) -> Result<bool> {
        self.0.acquire_lease(w, key, holder, ttl)
    }
    fn release_lease(&self, w: &WorkspaceRef, key: &str, holder: &str) -> Result<()> {
        self.0.release_lease(w, key, holder)
    }
    fn leases(&self, w: &WorkspaceRef) -> Result<Vec<Lease>> {
        self.0.leases(w)
    }
    fn cursor(&self, w: &WorkspaceRef, name: &str) -> Result<i64> {
        self.0.cursor(w, name)
    }
    fn save_cursor(&self, w: &WorkspaceRef, name: &str, seq: i64) -> Result<()> {
        self.0.save_cursor(w, name, seq)
    }
    fn cursors(&self, w: &WorkspaceRef) -> Result<Vec<(String, i64)>> {
        self.0.cursors(w)
    }
    fn wait_for_append(&self, w: &WorkspaceRef, after: i64, timeout: Duration) -> Result<bool> {
        self.0.wait_for_append(w, after, timeout)
    }
}

fn harness() -> SimpleHarness<Plain> {
    SimpleHarness::new(|clock| Plain(MemoryWorkspaceStorage::new(Arc::new(clock))))
}

#[test]
fn default_log_search_matches_the_reference() {
    log_search_matches_the_reference(&harness());
}

#[test]
fn default_run_search_matches_the_reference() {
    run_search_matches_the_reference(&harness());
}

#[test]
fn default_bad_searches_are_refused() {
    bad_searches_are_refused(&harness());
}
