//! What a command can fail with.

use std::fmt;
use std::io;

use execstore::StoreError;

/// A command's failure. Every kind exits with status 1; clap's usage errors exit with 2.
#[derive(Debug)]
pub enum CliError {
    /// The store refused or failed.
    Store(StoreError),
    /// Writing the output or touching a file failed.
    Io(io::Error),
    /// The arguments name something that cannot be used (a missing store file, ...).
    Input(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Store(StoreError::NotFound { what: "table", key }) => write!(
                f,
                "the file has no table {key}: is the --prefix right? (harel 0.9 writes harel_executions: --prefix harel)"
            ),
            CliError::Store(StoreError::NotFound { what, key }) => write!(f, "{what} {key} not found"),
            CliError::Store(e) => write!(f, "{e}"),
            CliError::Io(e) => write!(f, "{e}"),
            CliError::Input(msg) => f.write_str(msg),
        }
    }
}

/// The message says it all (a store error's own message included), so no `source` is
/// reported: printing the chain would repeat it.
impl std::error::Error for CliError {}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> Self {
        CliError::Store(e)
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        CliError::Io(e)
    }
}

impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        CliError::Io(e.into())
    }
}

/// The result of a command.
pub type Result<T, E = CliError> = std::result::Result<T, E>;
