//! The graph's figures ([`ExecutionStore::graph_figures`]) after every kind of write.

use super::*;
use crate::executions::control;
use crate::executions::graph::{graph_figures_by_scan, GraphFigures};

/// Every trace: the scan reads them all.
const MAX_TRACES_FOR_CHECKS: usize = usize::MAX;

/// The figures a store answers for `definition`, with every trace counted, are the ones a
/// scan of its executions and their traces counts now: after inserts, steps (odd paths,
/// guards, a trace ring that evicts), a batch, a trace appended on its own, a purge, a
/// terminate and a purge of finished executions; and so are they with the traces of the
/// three most recently updated executions only. Only `maintained` may differ.
pub fn graph_figures_follow_every_write(store: &dyn ExecutionStore) {
    let ns = scope("graph");
    let definition = format!("{ns}flow");
    let check = |what: &str| {
        let scanned = graph_figures_by_scan(store, &definition, MAX_TRACES_FOR_CHECKS);
        let kept = store.graph_figures(&definition, MAX_TRACES_FOR_CHECKS);
        match (scanned, kept) {
            (Ok(scanned), Ok(kept)) => {
                let same = |f: &GraphFigures| {
                    (
                        f.executions,
                        f.traces_read,
                        f.now.clone(),
                        f.steps.clone(),
                        f.guards.clone(),
                    )
                };
                assert_eq!(same(&kept), same(&scanned), "{what}");
                // A few traces: the same three most recent, where the executions sit from all.
                let few = (
                    store
                        .graph_figures(&definition, 3)
                        .expect("figures of three traces"),
                    graph_figures_by_scan(store, &definition, 3).expect("a scan of three traces"),
                );
                assert_eq!(same(&few.0), same(&few.1), "{what}: three traces");
                let none = store
                    .graph_figures(&definition, 0)
                    .expect("figures without traces");
                assert!(
                    none.steps.is_empty() && none.guards.is_empty(),
                    "{what}: no trace asked"
                );
                assert_eq!(
                    (none.executions, none.traces_read),
                    (scanned.executions, 0),
                    "{what}"
                );
            }
            (Err(StoreError::NotFound { .. }), Err(StoreError::NotFound { .. })) => {}
            (scanned, kept) => panic!("{what}: scanned {scanned:?}, kept {kept:?}"),
        }
    };
    check("none yet");
    let step = |kind: Value, from: Value, to: Value, guards: Value| {
        obj(json!({"event_kind": kind, "from_path": from, "to_path": to, "guards": guards, "timestamp": 1.0}))
    };
    let mut exes = Vec::new();
    for i in 0..8 {
        let mut exe = Execution::new(format!("{ns}{i:02}"), &definition);
        exe.status = Status::Running;
        if i % 4 == 3 {
            exe.parent_id = Some(format!("{ns}{:02}", i - 1));
        }
        store.save(&mut exe).unwrap();
        exes.push(exe);
    }
    check("created");
    for (i, exe) in exes.iter_mut().enumerate() {
        exe.active_path = Some("cart".into());
        let start = step(json!("Start"), Value::Null, json!("cart"), json!([]));
        store.commit(exe, &Effects::new().trace(start)).unwrap();
        exe.active_path = Some(if i % 2 == 0 { "checkout.pay" } else { "cart" }.into());
        let go = step(
            json!("Go"),
            json!("cart"),
            json!(exe.active_path.clone()),
            json!(["ok", "ok", 7]),
        );
        store.commit(exe, &Effects::new().trace(go)).unwrap();
    }
    check("stepped");
    // Odd steps: a number as a path and an event, no guards array, keys absent, a step with
    // no state after it.
    exes[1].status = Status::Failed;
    exes[1].active_path = None;
    let odd = obj(json!({"event_kind": 5, "from_path": 3, "guards": "x"}));
    store.commit(&mut exes[1], &Effects::new().trace(odd)).unwrap();
    store.append_trace(&exes[2].id, &obj(json!({}))).unwrap();
    store
        .append_trace(
            &exes[2].id,
            &step(
                json!({"k": [1]}),
                json!("checkout.pay"),
                json!(""),
                json!([{"g": 1}]),
            ),
        )
        .unwrap();
    check("odd steps");
    // A ring that evicts: more steps than it keeps.
    let max = store.trace_max().map_or(30, |m| m as usize);
    for n in 0..max + 3 {
        let to = if n % 2 == 0 { "a" } else { "b" };
        exes[4].active_path = Some(to.into());
        let s = step(
            json!("Tick"),
            json!(if n % 2 == 0 { "b" } else { "a" }),
            json!(to),
            json!([format!("g{}", n % 3)]),
        );
        store.commit(&mut exes[4], &Effects::new().trace(s)).unwrap();
    }
    check("ring evicted");
    let mut items: Vec<BatchItem> = exes[5..7]
        .iter()
        .map(|exe| {
            let mut exe = exe.clone();
            exe.status = Status::Done;
            exe.finished_at = Some(1000.0);
            exe.active_path = Some("done".into());
            BatchItem::new(
                exe,
                Effects::new().trace(step(json!("Finish"), json!("cart"), json!("done"), json!([]))),
            )
        })
        .collect();
    for outcome in store.commit_batch(&mut items).unwrap() {
        outcome.unwrap();
    }
    for (k, item) in items.into_iter().enumerate() {
        exes[5 + k] = item.execution;
    }
    check("batch");
    assert!(store.purge(&exes[0].id, exes[0].version).unwrap());
    check("purged");
    control::terminate(store, &exes[2].id, None, 1000.0).unwrap();
    check("terminated (with its child)");
    let mut request = control::PurgeFinished::new(500.0, 2000.0);
    request.statuses = vec![Status::Done];
    control::purge_finished(store, &request, None).unwrap();
    check("purge-finished");
    let kept = store.graph_figures(&definition, MAX_TRACES_FOR_CHECKS).unwrap();
    assert!(kept.executions > 0 && !kept.steps.is_empty() && !kept.guards.is_empty());
    assert!(matches!(
        store.graph_figures("", 1),
        Err(StoreError::InvalidInput { .. })
    ));
}
