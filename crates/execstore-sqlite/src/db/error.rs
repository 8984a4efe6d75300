//! rusqlite's errors as [`StoreError`]s.

use execstore::StoreError;
use rusqlite::ErrorCode;

/// Maps a rusqlite error: a lock held too long (`SQLITE_BUSY`, `SQLITE_LOCKED`) is a
/// retryable backend failure; a damaged file (`SQLITE_CORRUPT`, `SQLITE_NOTADB`), a stored
/// value of the wrong type, or a `data` that is not JSON where SQL reaches into it, is
/// [`StoreError::Corrupt`]; anything else is a permanent backend failure. The rusqlite error
/// stays reachable as the source of a backend failure.
pub(crate) fn map_err(err: rusqlite::Error) -> StoreError {
    match &err {
        rusqlite::Error::SqliteFailure(e, msg) => {
            if matches!(e.code, ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) {
                return StoreError::Corrupt {
                    what: "database file".into(),
                    reason: err.to_string(),
                };
            }
            let retryable = matches!(e.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked);
            if e.code == ErrorCode::Unknown && msg.as_deref().is_some_and(|m| m.contains("malformed JSON")) {
                return StoreError::Corrupt {
                    what: "row".into(),
                    reason: err.to_string(),
                };
            }
            StoreError::backend(err, retryable)
        }
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..) => StoreError::Corrupt {
            what: "row".into(),
            reason: err.to_string(),
        },
        _ => StoreError::backend(err, false),
    }
}

/// `.db()?` on a rusqlite result.
pub(crate) trait Db<T> {
    fn db(self) -> execstore::Result<T>;
}

impl<T> Db<T> for rusqlite::Result<T> {
    #[inline]
    fn db(self) -> execstore::Result<T> {
        self.map_err(map_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(code: i32, msg: &str) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some(msg.into()))
    }

    #[test]
    fn busy_and_locked_are_retryable() {
        let busy = map_err(failure(rusqlite::ffi::SQLITE_BUSY, "database is locked"));
        assert!(busy.is_retryable(), "{busy}");
        let locked = map_err(failure(rusqlite::ffi::SQLITE_LOCKED, "database table is locked"));
        assert!(locked.is_retryable(), "{locked}");
        let full = map_err(failure(rusqlite::ffi::SQLITE_FULL, "database or disk is full"));
        assert!(!full.is_retryable());
        assert!(matches!(full, StoreError::Backend { source: Some(_), .. }));
        let snapshot = map_err(failure(rusqlite::ffi::SQLITE_BUSY_SNAPSHOT, "busy snapshot"));
        assert!(snapshot.is_retryable());
    }

    #[test]
    fn a_damaged_file_is_corrupt() {
        let e = map_err(failure(
            rusqlite::ffi::SQLITE_CORRUPT,
            "database disk image is malformed",
        ));
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert_eq!(e.code(), "CORRUPT");
        let e = map_err(failure(rusqlite::ffi::SQLITE_NOTADB, "file is not a database"));
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(!e.is_retryable());
    }

    #[test]
    fn malformed_json_is_corrupt() {
        let e = map_err(failure(rusqlite::ffi::SQLITE_ERROR, "malformed JSON"));
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
    }
}
