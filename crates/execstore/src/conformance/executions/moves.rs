//! An execution whose update names another definition (feature `conformance`): it is then
//! that definition's everywhere the store answers by definition, as `load` shows it.

use super::*;
use crate::executions::graph::NowFigure;

/// The definitions the listing, the counts and the graph put `id` under.
fn listed_under<'a>(store: &dyn ExecutionStore, id: &str, definitions: &[&'a str]) -> Vec<&'a str> {
    definitions
        .iter()
        .copied()
        .filter(|d| {
            all_pages(store, ListQuery::new().definition(*d).search(id))
                .iter()
                .any(|s| s.id == id)
        })
        .collect()
}

/// How many executions of `definition` the counts hold, by status (only the non-zero ones).
fn counted(store: &dyn ExecutionStore, definition: &str) -> Vec<(Status, u64)> {
    store
        .count_by_status(&ListQuery::new().definition(definition))
        .expect("counts")
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Where the graph puts `definition`'s executions (`None`: it has none).
fn sitting(store: &dyn ExecutionStore, definition: &str) -> Option<Vec<NowFigure>> {
    match store.graph_figures(definition, 0) {
        Ok(figures) => Some(figures.now),
        Err(StoreError::NotFound { .. }) => None,
        Err(e) => panic!("graph of {definition}: {e}"),
    }
}

/// An update that changes an execution's `definition_id` moves it: the listing filtered by
/// definition, the counts of each definition and the graph's figures of where executions sit
/// follow the stored document, after a `save`, after a `commit` that also changes its status,
/// and after a batch, and the summaries name the new definition. A step that keeps the
/// definition leaves it where it is.
pub fn an_update_moves_the_execution_to_its_new_definition(store: &dyn ExecutionStore) {
    let ns = scope("moves");
    let (a, b, c) = (format!("{ns}A"), format!("{ns}B"), format!("{ns}C"));
    let defs = [a.as_str(), b.as_str(), c.as_str()];
    let id = format!("{ns}e1");
    let mut exe = created(store, &id, &a);
    let stays = created(store, &format!("{ns}e2"), &a);
    let at = |path: &str, status: Status| NowFigure {
        active_path: Some(path.into()),
        status,
        n: 1,
    };
    assert_eq!(listed_under(store, &id, &defs), [a.as_str()]);

    // A save that names B, the status and path unchanged.
    exe.definition_id = b.clone();
    bump(&mut exe);
    store.save(&mut exe).expect("saved under B");
    assert_eq!(
        store.load(&id).expect("load").map(|e| e.definition_id),
        Some(b.clone())
    );
    assert_eq!(listed_under(store, &id, &defs), [b.as_str()], "after a save");
    assert_eq!(counted(store, &a), [(Status::Running, 1)], "A keeps e2 only");
    assert_eq!(counted(store, &b), [(Status::Running, 1)]);
    assert_eq!(sitting(store, &a), Some(vec![at("root.a", Status::Running)]));
    assert_eq!(sitting(store, &b), Some(vec![at("root.a", Status::Running)]));
    let summary = all_pages(store, ListQuery::new().search(&id))
        .into_iter()
        .find(|s| s.id == id)
        .expect("listed");
    assert_eq!(summary.definition_id, b, "the summary names the new definition");

    // A step under B that keeps it there.
    bump(&mut exe);
    exe.active_path = Some("root.b".into());
    store.save(&mut exe).expect("a step under B");
    assert_eq!(listed_under(store, &id, &defs), [b.as_str()], "after a step");
    assert_eq!(sitting(store, &b), Some(vec![at("root.b", Status::Running)]));

    // A commit that moves it to C and finishes it at once.
    exe.definition_id = c.clone();
    exe.status = Status::Done;
    bump(&mut exe);
    store
        .commit(&mut exe, &Effects::default())
        .expect("committed under C");
    assert_eq!(listed_under(store, &id, &defs), [c.as_str()], "after a commit");
    assert_eq!(counted(store, &b), [], "B has none left");
    assert_eq!(counted(store, &c), [(Status::Done, 1)]);
    assert_eq!(sitting(store, &b), None);
    assert_eq!(sitting(store, &c), Some(vec![at("root.b", Status::Done)]));

    // A batch that moves it back to A.
    exe.definition_id = a.clone();
    bump(&mut exe);
    let mut items = [BatchItem::new(exe, Effects::default())];
    let outcomes = store.commit_batch(&mut items).expect("batch");
    assert!(outcomes.iter().all(|o| o.is_ok()), "{outcomes:?}");
    assert_eq!(listed_under(store, &id, &defs), [a.as_str()], "after a batch");
    assert_eq!(counted(store, &a), [(Status::Running, 1), (Status::Done, 1)]);
    assert_eq!(counted(store, &c), []);
    assert_eq!(sitting(store, &c), None);
    let mut both = sitting(store, &a).expect("A has two");
    both.sort_by(|x, y| x.active_path.cmp(&y.active_path));
    assert_eq!(
        both,
        vec![at("root.a", Status::Running), at("root.b", Status::Done)]
    );
    assert_eq!(stays.definition_id, a);
}
