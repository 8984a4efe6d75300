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

/// harel 0.9's six store tables, without their prefix: a set of execution tables is all six
/// under one prefix.
pub const HAREL_TABLE_SUFFIXES: [&str; 6] = [
    "executions",
    "outbox",
    "processed_events",
    "timers",
    "spawns",
    "trace",
];

/// The sets of execution tables among a database's table names: each prefix (`None`: the
/// bare names) under which all six of harel's tables are present, bare names first, then the
/// prefixes in order. Only valid prefixes count (`check_prefix`); names are compared as the
/// database spells them.
pub fn execution_prefixes<'a>(tables: impl IntoIterator<Item = &'a str>) -> Vec<Option<String>> {
    let tables: std::collections::BTreeSet<&str> = tables.into_iter().collect();
    let mut found: Vec<Option<String>> = Vec::new();
    for name in &tables {
        let Some(head) = name.strip_suffix("executions") else {
            continue;
        };
        let prefix = match head {
            "" => None,
            _ => match head.strip_suffix('_') {
                Some(p) if check_prefix(p).is_ok() => Some(p.to_owned()),
                _ => continue,
            },
        };
        let pfx = head;
        if HAREL_TABLE_SUFFIXES
            .iter()
            .all(|t| tables.contains(format!("{pfx}{t}").as_str()))
        {
            found.push(prefix);
        }
    }
    found.sort();
    found
}

/// How a prefix is named in messages: `harel`, or `none (bare names: executions, ...)`.
pub fn shown_prefix(prefix: Option<&str>) -> String {
    match prefix {
        Some(p) => format!("{p} ({p}_executions, ...)"),
        None => "none (executions, ...)".to_owned(),
    }
}

/// The prefix to open when none was given, from the sets a database holds
/// ([`execution_prefixes`]): the one set when there is exactly one, `None` (the bare names, the
/// default a writable open creates) when there is none, and when there are several an
/// [`StoreError::InvalidInput`] on `prefix` listing them and saying how to pick one (`how`:
/// the surface's own words, `"pass --prefix NAME"`).
pub fn pick_prefix(found: &[Option<String>], how: &str) -> Result<Option<String>> {
    match found {
        [] => Ok(None),
        [one] => Ok(one.clone()),
        several => Err(StoreError::invalid(
            "prefix",
            format!(
                "the database holds {} sets of execution tables, with prefix {}: {how} to pick one",
                several.len(),
                several
                    .iter()
                    .map(|p| shown_prefix(p.as_deref()))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        )),
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

    /// harel 0.9's six store tables, in [`HAREL_TABLE_SUFFIXES`]' order.
    pub fn harel(&self) -> [&str; 6] {
        [
            &self.executions,
            &self.outbox,
            &self.processed_events,
            &self.timers,
            &self.spawns,
            &self.trace,
        ]
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
    fn harel_names_the_six_tables_under_the_prefix() {
        let t = TableNames::new(Some("harel")).unwrap();
        let expected: Vec<String> = HAREL_TABLE_SUFFIXES
            .iter()
            .map(|s| format!("harel_{s}"))
            .collect();
        assert_eq!(t.harel().to_vec(), expected);
        assert_eq!(TableNames::new(None).unwrap().harel(), HAREL_TABLE_SUFFIXES);
    }

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

    #[test]
    fn execution_prefixes_are_the_complete_sets() {
        let mut names: Vec<String> = Vec::new();
        for pfx in ["", "harel_", "other_"] {
            names.extend(HAREL_TABLE_SUFFIXES.iter().map(|t| format!("{pfx}{t}")));
        }
        // Incomplete (no trace), invalid prefix, unrelated tables: not sets.
        names.extend(["half_executions", "half_outbox", "9x_executions", "reflexr_runs"].map(String::from));
        names.push("execstore_migrations".into());
        let found = execution_prefixes(names.iter().map(String::as_str));
        assert_eq!(found, vec![None, Some("harel".into()), Some("other".into())]);
        assert_eq!(
            execution_prefixes(["executions", "outbox"]),
            Vec::<Option<String>>::new()
        );
    }

    #[test]
    fn pick_prefix_takes_the_one_set_and_lists_several() {
        assert_eq!(pick_prefix(&[], "pass --prefix NAME").unwrap(), None);
        assert_eq!(
            pick_prefix(&[Some("harel".into())], "pass --prefix NAME").unwrap(),
            Some("harel".into())
        );
        match pick_prefix(&[None, Some("harel".into())], "pass --prefix NAME") {
            Err(StoreError::InvalidInput { field, reason }) => {
                assert_eq!(field, "prefix");
                assert!(reason.contains("harel (harel_executions"), "{reason}");
                assert!(reason.contains("none (executions"), "{reason}");
                assert!(reason.contains("pass --prefix NAME"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}
