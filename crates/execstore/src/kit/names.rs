//! The names of a store's tables for one prefix, as harel 0.9 names them
//! (`harel.engine.schema.Names`), shared by every SQL backend so that all of them accept the
//! same prefixes and name the same tables.

use crate::error::{Result, StoreError};

/// The tables of a store: harel's six, and execstore's migrations table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableNames {
    /// `""` or `"<prefix>_"`.
    pub pfx: String,
    /// The executions table.
    pub executions: String,
    /// The outbox table.
    pub outbox: String,
    /// The dedupe markers.
    pub processed_events: String,
    /// The timers table.
    pub timers: String,
    /// The spawn intents.
    pub spawns: String,
    /// The trace rings.
    pub trace: String,
    /// execstore's own migration records.
    pub migrations: String,
}

/// Checks a prefix as harel does: `[A-Za-z_][A-Za-z0-9_]{0,29}` (an identifier short enough
/// that every name built from it stays within PostgreSQL's 63 characters).
pub fn check_prefix(prefix: &str) -> Result<()> {
    let b = prefix.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 30
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if ok {
        Ok(())
    } else {
        Err(StoreError::invalid(
            "prefix",
            format!(
                "{prefix:?} is not an identifier (a letter or _, then letters, digits or _; at most 30 \
                 characters)"
            ),
        ))
    }
}

impl TableNames {
    /// The names for `prefix`: `None` gives the bare names (`executions`, ...), `Some("harel")`
    /// harel 0.9's (`harel_executions`, ...).
    pub fn new(prefix: Option<&str>) -> Result<Self> {
        let pfx = match prefix {
            Some(p) => {
                check_prefix(p)?;
                format!("{p}_")
            }
            None => String::new(),
        };
        let name = |t: &str| format!("{pfx}{t}");
        Ok(TableNames {
            executions: name("executions"),
            outbox: name("outbox"),
            processed_events: name("processed_events"),
            timers: name("timers"),
            spawns: name("spawns"),
            trace: name("trace"),
            migrations: name("execstore_migrations"),
            pfx,
        })
    }

    /// `template` with its `{executions}`, `{outbox}`, `{processed_events}`, `{timers}`,
    /// `{spawns}`, `{trace}`, `{migrations}` and `{pfx}` placeholders filled in.
    pub fn fill(&self, template: &str) -> String {
        template
            .replace("{executions}", &self.executions)
            .replace("{outbox}", &self.outbox)
            .replace("{processed_events}", &self.processed_events)
            .replace("{timers}", &self.timers)
            .replace("{spawns}", &self.spawns)
            .replace("{trace}", &self.trace)
            .replace("{migrations}", &self.migrations)
            .replace("{pfx}", &self.pfx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_as_harel_checks_them() {
        for ok in ["harel", "_", "a1", "A_b_9", &"x".repeat(30)] {
            check_prefix(ok).unwrap();
        }
        for bad in ["", "1a", "a-b", "a b", "é", &"x".repeat(31), "a;drop"] {
            assert!(check_prefix(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_with_and_without_prefix() {
        let bare = TableNames::new(None).unwrap();
        assert_eq!(
            (bare.executions.as_str(), bare.migrations.as_str()),
            ("executions", "execstore_migrations")
        );
        let harel = TableNames::new(Some("harel")).unwrap();
        assert_eq!(
            harel.fill("SELECT 1 FROM {executions}, {trace} -- {pfx}x"),
            "SELECT 1 FROM harel_executions, harel_trace -- harel_x"
        );
    }
}
