//! The CLI's writes, audited as the monitor's are (docs/operators.md "The CLI's writes"): an
//! entry is recorded `PENDING` before the command changes anything (if it cannot be, the
//! command is refused and nothing changes), then its outcome is set. The actor is
//! `cli (<OS user>)`, the role `admin`, the action and target named as the monitor names them.

use clap::Args;
use execstore::operator::{AuditEntry, OperatorStore, MAX_REASON_CHARS, OK, PENDING};
use serde_json::{Map, Value};

use crate::error::{CliError, Result};
use crate::time;

/// The `--reason` every writing command takes.
#[derive(Debug, Args, Clone, Default)]
pub struct ReasonArg {
    /// Why, recorded in the audit log with the command (optional on the command line: the
    /// entry's reason is then empty).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

/// The actor of the CLI's entries: `cli (<user>)` from `$USER` or `$LOGNAME`, else `cli`.
pub fn actor() -> String {
    let user = ["USER", "LOGNAME"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .map(|u| {
            u.trim()
                .chars()
                .filter(|c| !c.is_control())
                .take(64)
                .collect::<String>()
        })
        .find(|u| !u.is_empty());
    match user {
        Some(u) => format!("cli ({u})"),
        None => "cli".into(),
    }
}

/// One write being made: its entry, recorded `PENDING`.
pub struct Audited<'a> {
    store: &'a dyn OperatorStore,
    entry: AuditEntry,
    id: i64,
}

/// The outcome recorded for an error: its code, and its message.
pub fn outcome_of(e: &CliError) -> (String, String) {
    let code = match e {
        CliError::Store(e) => e.code(),
        CliError::Io(_) => "IO",
        CliError::Input(_) => "INVALID_INPUT",
    };
    (code.to_owned(), e.to_string())
}

impl<'a> Audited<'a> {
    /// Records the entry of `action` on `target` (`PENDING`) before the command acts; an
    /// entry that cannot be recorded refuses the command.
    pub fn begin(
        store: &'a dyn OperatorStore,
        action: &str,
        target: &str,
        reason: &ReasonArg,
        params: Map<String, Value>,
    ) -> Result<Self> {
        let reason = reason.reason.clone().unwrap_or_default();
        if reason.chars().count() > MAX_REASON_CHARS {
            return Err(CliError::Input(format!(
                "--reason: {} characters is more than {MAX_REASON_CHARS}",
                reason.chars().count()
            )));
        }
        let entry = AuditEntry {
            id: 0,
            at: time::now(),
            actor: actor(),
            role: "admin".into(),
            action: action.into(),
            target: target.into(),
            reason,
            outcome: PENDING.into(),
            message: None,
            params,
        };
        let id = store.record_audit(&entry).map_err(|e| {
            CliError::Input(format!(
                "refused: nothing was changed, as the audit entry could not be recorded first ({e})"
            ))
        })?;
        Ok(Audited { store, entry, id })
    }

    /// Records one target of a bulk command (its own entry, with `"bulk": true`).
    pub fn target(
        &self,
        target: &str,
        outcome: Option<(String, String)>,
        extra: Map<String, Value>,
    ) -> Result<()> {
        let (outcome, message) = match outcome {
            None => (OK.to_owned(), None),
            Some((code, message)) => (code, Some(message)),
        };
        let mut params = extra;
        params.insert("bulk".into(), Value::Bool(true));
        let one = AuditEntry {
            target: target.into(),
            outcome,
            message,
            params,
            ..self.entry.clone()
        };
        self.store.record_audit(&one)?;
        Ok(())
    }

    /// Sets the outcome of the command from its `result`, which it returns; if the outcome
    /// cannot be recorded after a success, that is the command's error (its change is made
    /// and its entry stays `PENDING`).
    pub fn finish<T>(self, result: Result<T>) -> Result<T> {
        let set = match &result {
            Ok(_) => self.store.set_audit_outcome(self.id, OK, None),
            Err(e) => {
                let (code, message) = outcome_of(e);
                self.store.set_audit_outcome(self.id, &code, Some(&message))
            }
        };
        match (result, set) {
            (Ok(_), Err(e)) => Err(CliError::Input(format!(
                "the command's change is made, but its audit outcome could not be recorded \
                 (entry {} stays PENDING): {e}",
                self.id
            ))),
            (result, _) => result,
        }
    }
}
