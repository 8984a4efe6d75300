//! `execstore attributes declare|list|drop`, and the note `list --where` prints when it
//! scanned (see docs/search.md).

use std::io::Write;

use clap::{Args, Subcommand};
use execstore::ExecutionStore;
use serde_json::json;

use crate::audited::ReasonArg;
use crate::error::Result;

#[derive(Debug, Args)]
pub struct AttributesArgs {
    #[command(subcommand)]
    pub action: AttributesAction,
}

#[derive(Debug, Subcommand)]
pub enum AttributesAction {
    /// The declared search attributes.
    List,
    /// Declare a context path searchable (`context.customer_id`): builds its index now.
    Declare {
        /// The path, `context.<key>[.<key>...]`; quote odd keys: `context."odd key"`.
        path: String,

        #[command(flatten)]
        why: ReasonArg,
    },
    /// Drop a search attribute and its index (its filters keep working, by scan).
    Drop {
        /// The path, as declared.
        path: String,

        #[command(flatten)]
        why: ReasonArg,
    },
}

impl AttributesAction {
    /// Whether the action writes (the store is opened for writing).
    pub fn writes(&self) -> bool {
        !matches!(self, AttributesAction::List)
    }

    /// A write's audit: its action (as the monitor names it), its path and its reason.
    pub fn audit(&self) -> Option<(&'static str, &str, &ReasonArg)> {
        match self {
            AttributesAction::List => None,
            AttributesAction::Declare { path, why } => Some(("attributes", path, why)),
            AttributesAction::Drop { path, why } => Some(("attributes.drop", path, why)),
        }
    }
}

/// Runs `action` on `store`.
pub fn attributes(
    store: &dyn ExecutionStore,
    action: &AttributesAction,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    match action {
        AttributesAction::List => {
            let all = store.attributes()?;
            if json {
                serde_json::to_writer_pretty(&mut *out, &all)?;
                writeln!(out)?;
            } else if all.is_empty() {
                writeln!(
                    out,
                    "no search attributes (declare one: execstore attributes declare context.KEY)"
                )?;
            } else {
                for a in &all {
                    writeln!(out, "{}", a.path)?;
                }
            }
        }
        AttributesAction::Declare { path, .. } => {
            let started = std::time::Instant::now();
            let a = store.declare_attribute(path)?;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            if json {
                writeln!(out, "{}", json!({"declared": a.path, "ms": ms}))?;
            } else {
                writeln!(out, "declared {} (index built in {ms:.1} ms)", a.path)?;
            }
        }
        AttributesAction::Drop { path, .. } => {
            let dropped = store.drop_attribute(path)?;
            if json {
                writeln!(out, "{}", json!({"dropped": dropped, "path": path}))?;
            } else if dropped {
                writeln!(out, "dropped {path}")?;
            } else {
                writeln!(out, "{path} was not declared")?;
            }
        }
    }
    Ok(())
}

/// After a listing: which paths of its `where` were answered by a scan (none: nothing).
pub fn scan_note(scan: &[String], out: &mut dyn Write) -> Result<()> {
    if !scan.is_empty() {
        writeln!(
            out,
            "scan: {} not a search attribute (execstore attributes declare PATH indexes it)",
            scan.join(", ")
        )?;
    }
    Ok(())
}
