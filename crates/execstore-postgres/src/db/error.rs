//! PostgreSQL and pool errors as [`StoreError`]s.

use execstore::StoreError;
use postgres::error::SqlState;

/// Whether a server error of this SQLSTATE may go away if the same call is tried again: a
/// serialization failure or deadlock (the transaction lost a race), a connection that broke
/// or a server going down or not yet up, too many connections, a lock or statement timeout,
/// and a unique violation (only a race between writers can cause one: every insert of a
/// key the caller chooses is `ON CONFLICT`-guarded).
pub(crate) fn retryable_state(code: &SqlState) -> bool {
    let c = code.code();
    c.starts_with("08") // connection exception
        || c.starts_with("40") // transaction rollback: serialization failure, deadlock, ...
        || (c.starts_with("53") && *code != SqlState::DISK_FULL) // too many connections, out of memory
        || matches!(
            *code,
            SqlState::ADMIN_SHUTDOWN
                | SqlState::CRASH_SHUTDOWN
                | SqlState::CANNOT_CONNECT_NOW
                | SqlState::IDLE_SESSION_TIMEOUT
                | SqlState::QUERY_CANCELED
                | SqlState::LOCK_NOT_AVAILABLE
                | SqlState::UNIQUE_VIOLATION
        )
}

/// Maps a `postgres` error: see [`retryable_state`]; stored text that is not JSON where SQL
/// reads into it is [`StoreError::Corrupt`]; an error without a server code is a broken
/// connection (retryable) unless it is a conversion of a value (permanent). The original
/// error stays reachable as the source.
pub(crate) fn map_err(err: postgres::Error) -> StoreError {
    if let Some(code) = err.code().cloned() {
        // `postgres::Error` displays only "db error": say what the server said.
        let message = match err.as_db_error() {
            Some(db) => format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), code.code()),
            None => err.to_string(),
        };
        if matches!(
            code,
            SqlState::INVALID_TEXT_REPRESENTATION | SqlState::UNTRANSLATABLE_CHARACTER
        ) {
            return StoreError::Corrupt {
                what: "row".into(),
                reason: message,
            };
        }
        let retryable = retryable_state(&code);
        return StoreError::Backend {
            message,
            retryable,
            source: Some(Box::new(err)),
        };
    }
    let io = std::error::Error::source(&err).is_some_and(|s| s.is::<std::io::Error>());
    let retryable = err.is_closed() || io || err.to_string().contains("connection");
    StoreError::backend(err, retryable)
}

/// Whether `err` means the session is gone or going (its server process terminated or shut
/// down, the connection broken): the connection must not go back to the pool, where its
/// next user would fail on it.
pub(crate) fn session_lost(err: &postgres::Error) -> bool {
    match err.code() {
        Some(code) => {
            code.code().starts_with("08")
                || matches!(
                    *code,
                    SqlState::ADMIN_SHUTDOWN | SqlState::CRASH_SHUTDOWN | SqlState::CANNOT_CONNECT_NOW
                )
        }
        None => err.is_closed() || std::error::Error::source(err).is_some_and(|s| s.is::<std::io::Error>()),
    }
}

/// A connection could not be had from the pool in time: retryable.
pub(crate) fn pool_err(err: r2d2::Error) -> StoreError {
    StoreError::backend(err, true)
}

/// `.db()?` on a `postgres` result.
pub(crate) trait Db<T> {
    fn db(self) -> execstore::Result<T>;
}

impl<T> Db<T> for Result<T, postgres::Error> {
    #[inline]
    fn db(self) -> execstore::Result<T> {
        self.map_err(map_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn races_and_outages_are_retryable() {
        for code in [
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::CONNECTION_FAILURE,
            SqlState::ADMIN_SHUTDOWN,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::UNIQUE_VIOLATION,
        ] {
            assert!(retryable_state(&code), "{code:?}");
        }
        for code in [
            SqlState::SYNTAX_ERROR,
            SqlState::UNDEFINED_TABLE,
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            SqlState::DISK_FULL,
            SqlState::INSUFFICIENT_PRIVILEGE,
        ] {
            assert!(!retryable_state(&code), "{code:?}");
        }
    }
}
