//! Definition documents: an engine's description of a machine (XState's
//! `machine.definition` as JSON, say), kept once per `(definition_id, definition_fqn)` so
//! that no trace cap and no purge of an execution loses it. The monitor draws a definition's
//! chart from it. A small, additive part of the execution contract: the trait's defaults
//! keep none ([`ExecutionStore::put_definition`](crate::executions::ExecutionStore::put_definition)
//! answers [`unsupported`]), memory, SQLite and PostgreSQL keep them.
//!
//! The first document stored for a key stays: putting an equal one again changes nothing,
//! putting a different one is [`StoreError::AlreadyExists`] (a machine's version string
//! must change when its definition does).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Result, StoreError};
use crate::kit::validate::{check_id, check_time, MAX_DOCUMENT_BYTES};

/// One stored definition document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DefinitionDoc {
    /// The definition's id (an execution's `definition_id`).
    pub definition_id: String,
    /// Its version (an execution's `definition_fqn`).
    pub definition_fqn: String,
    /// The engine's description of the machine, any JSON value.
    pub document: Value,
    /// When it was first stored, epoch seconds, as the caller stamped it (the core reads no
    /// clock); a put of an equal document again keeps the first time.
    pub first_seen: f64,
}

/// Checks a document to put and returns its JSON text: ids as every id, a finite
/// `first_seen`, at most [`MAX_DOCUMENT_BYTES`].
pub fn prepare_definition(doc: &DefinitionDoc) -> Result<String> {
    check_id("definition_id", &doc.definition_id)?;
    check_id("definition_fqn", &doc.definition_fqn)?;
    check_time("first_seen", doc.first_seen)?;
    let text =
        serde_json::to_string(&doc.document).map_err(|e| StoreError::invalid("document", e.to_string()))?;
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(StoreError::invalid(
            "document",
            format!("longer than {MAX_DOCUMENT_BYTES} bytes"),
        ));
    }
    Ok(text)
}

/// What a put of `new` does where `stored` is kept under its key: `Ok(false)` (nothing to
/// write) when the documents are equal JSON values (key order aside), else the typed refusal.
pub fn same_definition(stored: &Value, new: &DefinitionDoc) -> Result<bool> {
    if stored == &new.document {
        Ok(false)
    } else {
        Err(StoreError::AlreadyExists {
            what: "definition (a different document under this id and fqn)",
            key: format!("{} {}", new.definition_id, new.definition_fqn),
        })
    }
}

/// Reads a stored document's text back.
pub fn read_definition(id: &str, fqn: &str, text: &str, first_seen: f64) -> Result<DefinitionDoc> {
    let document = serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
        what: format!("definition {id} {fqn}"),
        reason: e.to_string(),
    })?;
    Ok(DefinitionDoc {
        definition_id: id.to_owned(),
        definition_fqn: fqn.to_owned(),
        document,
        first_seen,
    })
}

/// What a backend that keeps no definition documents answers to a put.
pub fn unsupported() -> StoreError {
    StoreError::Backend {
        message: "this backend keeps no definition documents".into(),
        retryable: false,
        source: None,
    }
}
