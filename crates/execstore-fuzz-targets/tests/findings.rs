//! Findings of the fuzz targets that are not fixed yet, each reproduced directly and
//! ignored with its reason (docs/testing.md, "Fuzzing"). A fixed finding moves to
//! `fuzz/regressions/NAME/` (its input, replayed by `tests/replay.rs`) or to its crate's tests.

use execstore::{executions::ListQuery, Execution, ExecutionStore, MemoryStore};
use execstore_sqlite::{SqliteOptions, SqliteStore};

/// Found by the differential target (calls 20 and 27 of its seed 016 at the time): an update
/// that changes an execution's `definition_id` is stored whole on both backends, but SQLite
/// keeps harel's `definition_id` column as the insert wrote it (harel's own UPDATE sets only
/// `data` and `version`), so its listing filters and reports the old definition while
/// `load` shows the new one; the memory store lists the new one.
#[test]
#[ignore = "open finding: SQLite lists an execution under the definition it was created with after an update changed it (refuse the change on every backend, or keep the column in step)"]
fn a_definition_change_on_update() {
    let memory = MemoryStore::new();
    let sqlite = SqliteStore::open_in_memory(SqliteOptions::new()).expect("SQLite in memory");
    for store in [&memory as &dyn ExecutionStore, &sqlite] {
        let mut exe = Execution::new("a b", "payments");
        store.save(&mut exe).expect("created");
        exe.definition_id = "orders".into();
        store.save(&mut exe).expect("updated");
    }
    let listed = |store: &dyn ExecutionStore| {
        let page = store
            .list_executions(&ListQuery::new().definition("orders"))
            .expect("listed");
        page.items
            .into_iter()
            .map(|s| (s.id, s.definition_id))
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(&sqlite), listed(&memory));
}
