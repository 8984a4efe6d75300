//! The fill: W1's executions committed through the contract.

use execstore::executions::BatchItem;
use execstore::{w1, Effects, ExecutionStore};

use super::{store_err, EVENTS, FILL_BATCH, FILL_SEED};

/// Fills executions `from..to` with W1's 20 events each, [`FILL_BATCH`] executions a batch.
pub(super) fn fill(store: &dyn ExecutionStore, from: usize, to: usize) -> anyhow::Result<()> {
    let rounds: Vec<w1::Round> = (1..=EVENTS).map(|r| w1::Round::new(r, EVENTS)).collect();
    let mut start = from;
    while start < to {
        let end = (start + FILL_BATCH).min(to);
        let mut items = Vec::with_capacity((end - start) * (EVENTS as usize + 1));
        for i in start..end {
            let mut exe = w1::execution(i);
            exe.id = w1::exe_id(FILL_SEED, i);
            if i % 5 == 4 {
                exe.parent_id = Some(w1::exe_id(FILL_SEED, i - 1));
            }
            items.push(BatchItem::new(exe.clone(), Effects::new()));
            exe.version = 1;
            for round in &rounds {
                let mut next = exe.clone();
                let effects = w1::step(&mut next, i, round, w1::in_event_id(round.r, i), true);
                items.push(BatchItem::new(exe, effects));
                next.version += 1;
                exe = next;
            }
        }
        for result in store.commit_batch(&mut items).map_err(store_err)? {
            result.map_err(store_err)?;
        }
        while store
            .relay_outbox(1000, &mut |e| e.iter().map(|e| e.seq).collect())
            .map_err(store_err)?
            > 0
        {}
        while store
            .relay_spawns(1000, &mut |e| e.iter().map(|e| e.seq).collect())
            .map_err(store_err)?
            > 0
        {}
        start = end;
    }
    Ok(())
}
