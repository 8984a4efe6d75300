//! Recovery commands beyond harel's lifecycle: [`send`] an event to an execution through the
//! outbox, and [`redrive`] (retry) a dead-lettered (`FAILED`) one, as harel 0.9's
//! `harel.engine.control.redrive` does.
//!
//! Both go through the contract ([`ExecutionStore::enqueue_outbox`], the CAS
//! [`ExecutionStore::commit`]), never SQL; time comes in as `now`.

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::executions::model::{Effects, Event, Status};
use crate::executions::store::ExecutionStore;
use crate::kit::validate::{check_id, check_time};

use super::{load_expected, stamp, ControlOutcome, StatusChange, FINISHED};

/// The event kinds harel's engine treats as its own control signals (`Start`, `Cancel`,
/// `SetState`, `Finished`, `Timeout`, `Reset`: see `harel.engine.core.process`), which
/// [`send`] refuses: the control plane has its own commands for them, and a hand-made one
/// would bypass their checks.
pub const ENGINE_EVENT_KINDS: [&str; 6] = ["Start", "Cancel", "SetState", "Finished", "Timeout", "Reset"];

/// What [`send`] enqueued.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sent {
    /// The outbox entry's seq (its ack key).
    pub seq: i64,
    /// The execution it is addressed to.
    pub target_id: String,
    /// The event's id, the relay's dedupe key.
    pub event_id: String,
}

/// Sends `event` to the execution `id` as an engine would receive it: one outbox entry
/// addressed to `id` ([`ExecutionStore::enqueue_outbox`]), which harel's relay delivers as it
/// delivers any emit (loads the target, skips an event id it already processed, runs the
/// step). The execution itself is not written.
///
/// Refused, changing nothing: an unknown id ([`StoreError::NotFound`]); a stored version other
/// than `expected_version` ([`StoreError::Conflict`]); an execution that is not `RUNNING`
/// ([`StoreError::InvalidInput`] on `status`: harel's engine ignores a domain event while not
/// `RUNNING`, so the relay would consume it for nothing); a kind among
/// [`ENGINE_EVENT_KINDS`], an empty kind or id, or an event too large
/// ([`StoreError::InvalidInput`]).
pub fn send<S: ExecutionStore + ?Sized>(
    store: &S,
    id: &str,
    event: &Event,
    expected_version: Option<i64>,
) -> Result<Sent> {
    check_id("execution_id", id)?;
    crate::kit::validate::prepare_event(event)?;
    if ENGINE_EVENT_KINDS.contains(&event.kind.as_str()) {
        return Err(StoreError::invalid(
            "event.kind",
            format!(
                "{:?} is one of harel's own control events ({}): use the control command instead",
                event.kind,
                ENGINE_EVENT_KINDS.join(", ")
            ),
        ));
    }
    let exe = load_expected(store, id, expected_version)?;
    if exe.status != Status::Running {
        return Err(StoreError::invalid(
            "status",
            format!(
                "{id} is {}: harel's engine takes a domain event only while RUNNING{}",
                exe.status.as_str(),
                match exe.status {
                    Status::Suspended => " (resume it first)",
                    Status::Failed => " (retry it first)",
                    _ => "",
                }
            ),
        ));
    }
    let seq = store.enqueue_outbox(id, event)?;
    Ok(Sent {
        seq,
        target_id: id.to_owned(),
        event_id: event.id.clone(),
    })
}

/// Retries a dead-lettered execution: harel's `redrive`. A `FAILED` execution goes back to
/// `RUNNING` at `target_path`, with its `error` and `history` cleared and its context kept, in
/// one CAS write (the caller's `expected_version`, else the loaded one). Any other status is
/// a silent no-op (empty [`ControlOutcome::changed`]), as in harel. Regions are not touched.
///
/// Refused with [`StoreError::InvalidInput`], changing nothing, as harel refuses: a
/// `target_path` outside the execution's own branch (`root_path` and below), or an
/// execution with a child not yet finished. harel also checks, against the definition, that
/// the target is a leaf not inside an orthogonal state and re-arms the machine's `ttl`:
/// the store holds no definitions, so choosing a valid leaf is the caller's part (the
/// monitor offers only states the execution's own trace shows it resting in) and a `ttl`
/// timer is left as it was.
pub fn redrive<S: ExecutionStore + ?Sized>(
    store: &S,
    id: &str,
    target_path: &str,
    expected_version: Option<i64>,
    now: f64,
) -> Result<ControlOutcome> {
    check_id("execution_id", id)?;
    check_id("target_path", target_path)?;
    check_time("now", now)?;
    let mut exe = load_expected(store, id, expected_version)?;
    if exe.status != Status::Failed {
        return Ok(ControlOutcome::default()); // harel: "No-op if not FAILED"
    }
    let root = exe.root_path.as_str();
    let inside = root.is_empty()
        || target_path == root
        || target_path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('.'));
    if !inside {
        return Err(StoreError::invalid(
            "target_path",
            format!(
                "redrive target {target_path:?} is outside this execution's own branch (rooted at {root:?})"
            ),
        ));
    }
    if exe.children.values().any(|c| !c.finished) {
        return Err(StoreError::invalid(
            "children",
            "redrive refused: execution has unfinished children (cancel/terminate them first)",
        ));
    }
    let from = exe.status;
    exe.status = Status::Running;
    exe.active_path = Some(target_path.to_owned());
    exe.error = None;
    exe.history.clear();
    stamp(&mut exe, now);
    debug_assert!(!FINISHED.contains(&exe.status));
    store.commit(&mut exe, &Effects::new())?;
    Ok(ControlOutcome {
        changed: vec![StatusChange {
            id: exe.id,
            from,
            to: Status::Running,
            version: exe.version,
        }],
    })
}
