//! The record of one of execstore's own schema changes, shared by the SQL backends. Each
//! backend keeps its statements (SQL lives in adapters) and records the applied ones, with
//! their checksum, in its migrations table (`TableNames::migrations`).

use crate::error::{Result, StoreError};

/// One schema change of execstore's own, on top of harel's tables. Migrations only add what
/// harel's own writes keep valid (indexes over harel's columns and expressions), never
/// columns, so harel keeps working on a migrated database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// Its number: migrations apply in this order, each once.
    pub version: i32,
    /// What it does, as recorded.
    pub description: &'static str,
    /// Its statements, with `{executions}`-style placeholders (see `TableNames::fill`).
    pub statements: &'static [&'static str],
}

impl Migration {
    /// A fingerprint of the statements as written (before the table names are filled in, so
    /// it does not depend on the prefix): FNV-1a, 64 bits, in hex. A recorded migration whose
    /// checksum differs was changed after it was applied, and a backend refuses to go on.
    pub fn checksum(&self) -> String {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for stmt in self.statements {
            for byte in stmt.bytes().chain([0u8]) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        format!("fnv1a64:{hash:016x}")
    }

    /// Whether this migration still has to be applied, given the checksum recorded for it in
    /// `table` (`None`: not applied yet). A different recorded checksum means the store was
    /// migrated by an incompatible build: a permanent [`StoreError::Backend`].
    pub fn needs_applying(&self, recorded: Option<&str>, table: &str) -> Result<bool> {
        let checksum = self.checksum();
        match recorded {
            None => Ok(true),
            Some(found) if found == checksum => Ok(false),
            Some(found) => Err(StoreError::Backend {
                message: format!(
                    "migration {} in {table} was applied with checksum {found}, but this build's is \
                     {checksum}: the store was migrated by an incompatible build",
                    self.version
                ),
                retryable: false,
                source: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applies_once_and_refuses_a_changed_migration() {
        let m = Migration {
            version: 7,
            description: "x",
            statements: &["CREATE INDEX a ON t (c)"],
        };
        assert!(m.needs_applying(None, "t_migrations").unwrap());
        assert!(!m.needs_applying(Some(&m.checksum()), "t_migrations").unwrap());
        match m.needs_applying(Some("fnv1a64:0000000000000000"), "t_migrations") {
            Err(StoreError::Backend {
                retryable: false,
                message,
                ..
            }) => {
                assert!(message.contains("migration 7 in t_migrations"), "{message}")
            }
            other => panic!("a changed migration: {other:?}"),
        }
    }
}
