//! An envelope's detail: its causal chain (correlation and causation) as a tree.

use std::collections::HashMap;

use execstore::workspace::{Envelope, LogQuery, Run};
use serde_json::{json, Value};

use super::ts;
use crate::{decode, ApiError, ApiResult, Call};

/// How many envelopes of a correlation an envelope's detail looks through.
const CHAIN_SCAN_CAP: usize = 20_000;

impl Call<'_> {
    /// An envelope and its causal chain: the envelopes of its correlation, each with the
    /// envelope whose run caused it (`parent_seq`: the run's fired seq), its causes (root
    /// first) and what it caused (its descendants, by seq).
    pub(crate) fn envelope(&self, t: &str, w: &str, raw_id: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let storage = self.ws()?;
        let id = decode(raw_id)?;
        execstore::kit::validate::check_id("id", &id)?;
        let envelope = storage
            .envelope(&ws, &id)?
            .ok_or_else(|| ApiError::not_found(format!("no envelope {id} in this workspace")))?;
        // The correlation's envelopes: from its root (whose id is the correlation id) on.
        let root_seq = storage
            .envelope(&ws, &envelope.correlation_id)?
            .map_or(envelope.seq, |r| r.seq.min(envelope.seq));
        let mut chain: Vec<Envelope> = Vec::new();
        let mut after = root_seq - 1;
        let mut scanned = 0;
        let mut truncated = false;
        loop {
            let page = storage.read(&ws, &LogQuery::new().after(after).limit(1000))?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            scanned += page.len();
            let full = page.len() == 1000;
            chain.extend(
                page.into_iter()
                    .filter(|e| e.correlation_id == envelope.correlation_id),
            );
            if !full {
                break;
            }
            if scanned >= CHAIN_SCAN_CAP {
                truncated = true;
                break;
            }
        }
        // Each envelope's cause: the envelope that fired the run named in its causation.
        let mut runs: HashMap<String, Option<Run>> = HashMap::new();
        let mut nodes = Vec::new();
        let mut parent_of: HashMap<i64, i64> = HashMap::new();
        for e in &chain {
            let run_id = e
                .causation
                .as_ref()
                .and_then(|c| c.get("run_id"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut parent = None;
            let mut rule = None;
            if let Some(run_id) = &run_id {
                if !runs.contains_key(run_id) {
                    let run = match execstore::kit::validate::check_id("run_id", run_id) {
                        Ok(()) => storage.run(&ws, run_id)?,
                        Err(_) => None,
                    };
                    runs.insert(run_id.clone(), run);
                }
                if let Some(run) = &runs[run_id] {
                    rule = Some(run.rule().to_owned());
                    if run.fired_seq() < e.seq {
                        parent = Some(run.fired_seq());
                        parent_of.insert(e.seq, run.fired_seq());
                    }
                }
            }
            nodes.push(json!({
                "seq": e.seq,
                "id": e.id,
                "ts": ts(e.ts),
                "type": e.event_type(),
                "actor": e.actor,
                "causation": e.causation,
                "run_id": run_id,
                "rule": rule,
                "parent_seq": parent,
            }));
        }
        let mut causes = Vec::new();
        let mut at = envelope.seq;
        while let Some(p) = parent_of.get(&at) {
            if causes.contains(p) || causes.len() > chain.len() {
                break;
            }
            causes.push(*p);
            at = *p;
        }
        causes.reverse();
        let mut caused = Vec::new();
        let mut frontier = vec![envelope.seq];
        while let Some(s) = frontier.pop() {
            for (child, parent) in &parent_of {
                if *parent == s && !caused.contains(child) {
                    caused.push(*child);
                    frontier.push(*child);
                }
            }
        }
        caused.sort_unstable();
        Ok(json!({
            "envelope": envelope.to_value(),
            "chain": nodes,
            "causes": causes,
            "caused": caused,
            "truncated": truncated,
        }))
    }
}
