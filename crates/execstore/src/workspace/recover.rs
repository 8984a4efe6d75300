//! Recovery on the workspace contract, over any [`WorkspaceStorage`], each one transaction
//! writing what reflexr 0.1.1 writes for the same operation (see docs/recover.md):
//!
//! * [`retry_run`]: reflexr's `Workspace.retry_run`: a dead, cancelled, skipped, pending or
//!   retrying run becomes `pending`, due now, with a fresh retry budget if it had finished,
//!   and a `reflexr:run_requeued` fact is appended to the log.
//! * [`replay_dead_letter`]: reflexr has no retry of a dead letter (a rule that failed to
//!   evaluate an envelope); its repair is `Workspace.replay_rule`. This replays the dead
//!   letter's rule from just before the envelope that failed, as `replay_rule` writes it
//!   (the progress reset to the next generation, the rule's scope states cleared, a
//!   `reflexr:rule_reset` fact with reason `replayed`), and reflexr's reactor does the
//!   evaluating. [`replay_dead_letters`] does it for every dead-lettered rule of a workspace.
//! * [`release_lapsed_lease`]: removes a lease whose time is up (a live one is refused).
//! * [`set_rule_enabled`]: pauses or resumes a stored rule the way reflexr's `update_rule`
//!   changes one: its next version, `enabled` flipped, a `reflexr:rule_installed` fact; the
//!   rule's progress is kept (`enabled` is not part of its definition, so nothing resets).
//!
//! Time and ids come in as arguments: nothing here reads a clock or makes a random id.

use serde_json::{json, Value};

use super::model::{Entry, EvaluationError, RuleProgress, Run, RunStatus, StoredRuleStatus, WorkspaceRef};
use super::storage::WorkspaceStorage;
use super::time::Timestamp;
use crate::error::{Result, StoreError};
use crate::executions::JsonObject;
use crate::kit::validate::check_id;

/// How a dead letter's rule is replayed (reflexr's `replay_rule` modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayMode {
    /// Recompute the rule's state up to the head of the log without firing, then carry on.
    Rebuild,
    /// Fire again for everything found from the dead letter on (new runs, new ids).
    Refire,
}

impl ReplayMode {
    /// Parses `"rebuild"` or `"refire"`.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "rebuild" => Ok(ReplayMode::Rebuild),
            "refire" => Ok(ReplayMode::Refire),
            other => Err(StoreError::invalid(
                "mode",
                format!("{other:?} is not rebuild or refire"),
            )),
        }
    }
}

/// Who and when: what each command records in the fact it appends.
#[derive(Clone, Debug)]
pub struct Operator {
    /// The actor of the fact (reflexr's `Actor` as JSON).
    pub actor: Value,
    /// The fact's event id (unique in the workspace's log).
    pub event_id: String,
    /// Now.
    pub now: Timestamp,
}

fn fact(op: &Operator, event: Value) -> Entry {
    let Value::Object(event) = event else {
        unreachable!("a fact is built as a JSON object")
    };
    Entry::new(op.event_id.clone(), op.actor.clone(), event)
}

fn not_found(what: &'static str, key: &str) -> StoreError {
    StoreError::NotFound {
        what,
        key: key.to_owned(),
    }
}

/// reflexr's `retry` of run `run_id` (see the module's documentation). Refused, changing
/// nothing: an unknown run ([`StoreError::NotFound`]); a `running` or `succeeded` one
/// ([`StoreError::InvalidInput`] on `status`, reflexr's `InvalidState`).
pub fn retry_run(
    storage: &dyn WorkspaceStorage,
    workspace: &WorkspaceRef,
    run_id: &str,
    op: &Operator,
) -> Result<Run> {
    check_id("run_id", run_id)?;
    check_id("event_id", &op.event_id)?;
    let mut tx = storage.begin(workspace)?;
    let run = tx.run(run_id)?.ok_or_else(|| not_found("run", run_id))?;
    let status = run.status();
    if matches!(status, RunStatus::Running | RunStatus::Succeeded) {
        return Err(StoreError::invalid(
            "status",
            format!("cannot retry run {run_id}, which is {status}"),
        ));
    }
    let finished = matches!(
        status,
        RunStatus::Dead | RunStatus::Cancelled | RunStatus::Skipped
    );
    let now = Value::from(op.now.to_json_text());
    let mut changes = JsonObject::new();
    changes.insert("status".into(), "pending".into());
    if finished {
        changes.insert("attempts".into(), 0.into());
    }
    changes.insert("next_attempt_at".into(), now.clone());
    changes.insert("updated_at".into(), now);
    let retried = run.with(changes)?;
    tx.save_runs(std::slice::from_ref(&retried))?;
    let depth = run.doc().get("depth").and_then(Value::as_i64).unwrap_or(0);
    let mut entry = fact(
        op,
        json!({"type": "reflexr:run_requeued", "run_id": run_id, "rule": run.rule()}),
    );
    entry.causation = Some(json!({"firing_id": run_id, "run_id": run_id, "depth": depth + 1}));
    entry.correlation_id = run
        .doc()
        .get("correlation_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    tx.append(&[entry])?;
    tx.commit()?;
    Ok(retried)
}

/// What a replay wrote: the rule, its new progress and the seq of its `rule_reset` fact.
#[derive(Clone, Debug, PartialEq)]
pub struct Replayed {
    /// The rule replayed.
    pub rule: String,
    /// The envelope it evaluates again after (`from_seq`).
    pub from_seq: i64,
    /// Its new generation.
    pub generation: i64,
    /// The `reflexr:rule_reset` fact's seq.
    pub seq: i64,
}

/// Replays `rule` from just before the envelope `seq` its dead letter names (see the module's
/// documentation). Refused, changing nothing: no dead letter of `rule` at `seq`, or a rule
/// with no progress ([`StoreError::NotFound`]).
pub fn replay_dead_letter(
    storage: &dyn WorkspaceStorage,
    workspace: &WorkspaceRef,
    rule: &str,
    seq: i64,
    mode: ReplayMode,
    op: &Operator,
) -> Result<Replayed> {
    check_id("rule", rule)?;
    check_id("event_id", &op.event_id)?;
    let letters = storage.dead_letters(workspace, Some(rule))?;
    if !letters.iter().any(|l| letter_seq(l) == Some(seq)) {
        return Err(not_found("dead letter", &format!("{rule}@{seq}")));
    }
    replay(storage, workspace, rule, seq - 1, mode, op)
}

/// Replays every rule of `workspace` that has a dead letter, each from just before its
/// earliest one, each with its own fact (ids: `op.event_id` with `-1`, `-2`... appended).
pub fn replay_dead_letters(
    storage: &dyn WorkspaceStorage,
    workspace: &WorkspaceRef,
    mode: ReplayMode,
    op: &Operator,
) -> Result<Vec<Replayed>> {
    check_id("event_id", &op.event_id)?;
    let mut earliest: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    for letter in storage.dead_letters(workspace, None)? {
        if let Some(seq) = letter_seq(&letter) {
            let slot = earliest.entry(letter.rule().to_owned()).or_insert(seq);
            *slot = (*slot).min(seq);
        }
    }
    let mut out = Vec::new();
    for (i, (rule, seq)) in earliest.into_iter().enumerate() {
        let one = Operator {
            event_id: format!("{}-{}", op.event_id, i + 1),
            ..op.clone()
        };
        out.push(replay(storage, workspace, &rule, seq - 1, mode, &one)?);
    }
    Ok(out)
}

fn letter_seq(letter: &EvaluationError) -> Option<i64> {
    letter.doc().get("seq").and_then(Value::as_i64)
}

/// reflexr's `replay_rule(rule, from_seq, mode)` for a rule whose definition is unchanged:
/// the progress keeps its `definition`.
fn replay(
    storage: &dyn WorkspaceStorage,
    workspace: &WorkspaceRef,
    rule: &str,
    from_seq: i64,
    mode: ReplayMode,
    op: &Operator,
) -> Result<Replayed> {
    let mut tx = storage.begin(workspace)?;
    let head = tx.head_seq()?;
    let from_seq = from_seq.clamp(0, head);
    let progress = tx
        .progress(rule)?
        .ok_or_else(|| not_found("rule progress", rule))?;
    let generation = progress
        .doc()
        .get("generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        + 1;
    let definition = progress
        .doc()
        .get("definition")
        .cloned()
        .unwrap_or_else(|| "".into());
    let silent_through = match mode {
        ReplayMode::Rebuild => head,
        ReplayMode::Refire => 0,
    };
    let mut doc = JsonObject::new();
    doc.insert("cursor".into(), from_seq.into());
    doc.insert("generation".into(), generation.into());
    doc.insert("definition".into(), definition);
    doc.insert("deadlines".into(), json!({}));
    doc.insert("silent_through".into(), silent_through.into());
    tx.clear_states(rule)?;
    tx.save_progress(rule, &RuleProgress::from_doc(doc))?;
    let event = json!({
        "type": "reflexr:rule_reset", "rule": rule, "generation": generation,
        "reason": "replayed", "from_seq": from_seq, "silent_through": silent_through,
    });
    let [envelope] = <[_; 1]>::try_from(tx.append(&[fact(op, event)])?)
        .map_err(|_| StoreError::invalid("append", "one entry appended, not one envelope back"))?;
    tx.commit()?;
    Ok(Replayed {
        rule: rule.to_owned(),
        from_seq,
        generation,
        seq: envelope.seq,
    })
}

/// Releases the lease `key` of `workspace` if it lapsed by `now`. Refused, changing nothing:
/// no such lease ([`StoreError::NotFound`]); a lease still held ([`StoreError::InvalidInput`]
/// on `expires_at`: its holder may be working). Returns the lease released.
pub fn release_lapsed_lease(
    storage: &dyn WorkspaceStorage,
    workspace: &WorkspaceRef,
    key: &str,
    now: Timestamp,
) -> Result<super::model::Lease> {
    check_id("key", key)?;
    let lease = storage
        .leases(workspace)?
        .into_iter()
        .find(|l| l.key == key)
        .ok_or_else(|| not_found("lease", key))?;
    if lease.expires_at > now {
        return Err(StoreError::invalid(
            "expires_at",
            format!(
                "the lease {key} is held by {} until {}: only a lapsed lease is released",
                lease.holder,
                lease.expires_at.to_json_text()
            ),
        ));
    }
    storage.release_lease(workspace, key, &lease.holder)?;
    Ok(lease)
}

/// Pauses (`enabled: false`) or resumes (`true`) the stored rule `name` as reflexr's
/// `update_rule` changes it (see the module's documentation); `expected_version` as there.
/// Already so: nothing is written and the current version comes back. Refused, changing
/// nothing: no stored rule `name` ([`StoreError::NotFound`]; a rule registered in code is
/// paused in code); an archived one, or one with no progress yet ([`StoreError::InvalidInput`]);
/// a version other than `expected_version` ([`StoreError::Conflict`]).
pub fn set_rule_enabled(
    storage: &dyn WorkspaceStorage,
    workspace: &WorkspaceRef,
    name: &str,
    enabled: bool,
    expected_version: Option<i64>,
    op: &Operator,
) -> Result<super::model::StoredRule> {
    check_id("rule", name)?;
    check_id("event_id", &op.event_id)?;
    let mut tx = storage.begin(workspace)?;
    let current = tx
        .stored_rule(name)?
        .ok_or_else(|| not_found("stored rule", name))?;
    if current.status == StoredRuleStatus::Archived {
        return Err(StoreError::invalid(
            "status",
            format!("rule {name} is archived: install it again"),
        ));
    }
    let is_enabled = current
        .rule
        .get("enabled")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if is_enabled == enabled {
        return Ok(current);
    }
    if let Some(v) = expected_version {
        if v != current.version {
            return Err(StoreError::Conflict {
                id: name.to_owned(),
                expected: v,
                found: Some(current.version),
            });
        }
    }
    if tx.progress(name)?.is_none() {
        return Err(StoreError::invalid(
            "rule",
            format!("rule {name} has no progress yet: change it through reflexr"),
        ));
    }
    let mut updated = current.clone();
    updated.rule.insert("enabled".into(), Value::Bool(enabled));
    updated.version = current.version + 1;
    updated.provenance = match json!({"via": "execstore", "change": if enabled { "resumed" } else { "paused" }})
    {
        Value::Object(p) => p,
        _ => JsonObject::new(),
    };
    tx.save_stored_rule(&updated)?;
    let event = json!({
        "type": super::model::RULE_INSTALLED, "rule": name, "version": updated.version,
        "spec": updated.rule, "provenance": updated.provenance,
    });
    tx.append(&[fact(op, event)])?;
    tx.commit()?;
    Ok(updated)
}
