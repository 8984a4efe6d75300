//! The record of one of execstore's own schema changes, shared by the SQL backends. Each
//! backend keeps its statements (SQL lives in adapters) and records the applied ones, with
//! their checksum, in its migrations table (`TableNames::migrations`).

use crate::error::{Result, StoreError};

/// One schema change of execstore's own, on top of harel's tables. Migrations only add what
/// harel's own writes keep valid (indexes over harel's columns and expressions, tables and
/// triggers of execstore's own, and on SQLite since migration 13 columns after harel's four
/// that triggers fill from harel's writes), so harel keeps working on a migrated database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Migration {
    /// Its number: migrations apply in this order, each once.
    pub version: i32,
    /// What it does, as recorded.
    pub description: &'static str,
    /// Its statements, with `{executions}`-style placeholders (see `TableNames::fill`).
    pub statements: &'static [&'static str],
}

/// The version of the last of `migrations` (0 for none): a database recording exactly it is
/// at that build's latest schema.
pub fn latest(migrations: &[Migration]) -> i64 {
    migrations.last().map_or(0, |m| i64::from(m.version))
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

/// Checks that every migration of `migrations` released so far still has the checksum
/// recorded for it in `released` (in order), and that none is new: a backend's test calls it
/// with its list, so that a changed statement fails a test rather than making every store it
/// migrated refuse to open. The message names the first difference.
pub fn check_released(migrations: &[Migration], released: &[&str]) -> std::result::Result<(), String> {
    for (m, sum) in migrations.iter().zip(released) {
        if m.checksum() != *sum {
            return Err(format!(
                "migration {} was released with checksum {sum} and now has {}: add a migration instead",
                m.version,
                m.checksum()
            ));
        }
    }
    match migrations.get(released.len()) {
        Some(m) => Err(format!(
            "migration {} is new: add its checksum {} to the released list",
            m.version,
            m.checksum()
        )),
        None if migrations.len() < released.len() => Err("a released migration is gone".into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_is_the_last_version_or_0() {
        let m = |version| Migration {
            version,
            description: "",
            statements: &[],
        };
        assert_eq!(latest(&[]), 0);
        assert_eq!(latest(&[m(1), m(2), m(13)]), 13);
    }

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

    #[test]
    fn released_checksums_are_checked() {
        let a = Migration {
            version: 1,
            description: "a",
            statements: &["CREATE INDEX a ON t (c)"],
        };
        let b = Migration {
            version: 2,
            description: "b",
            statements: &["CREATE INDEX b ON t (d)"],
        };
        let (sa, sb) = (a.checksum(), b.checksum());
        assert_eq!(check_released(&[a, b], &[&sa, &sb]), Ok(()));
        let changed = check_released(&[a, b], &[&sa, "fnv1a64:0000000000000000"]).unwrap_err();
        assert!(changed.contains("migration 2 was released"), "{changed}");
        let new = check_released(&[a, b], &[&sa]).unwrap_err();
        assert!(new.contains("migration 2 is new"), "{new}");
        assert!(check_released(&[a], &[&sa, &sb]).is_err(), "one gone");
    }
}
