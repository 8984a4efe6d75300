//! The workspace behaviour suite against PgWorkspaceStorage on a real PostgreSQL server
//! (`EXECSTORE_PG_URL`): each check in a schema of its own, on a manual clock.

#[macro_use]
mod common;

execstore::workspace_conformance_tests!(durable: ws_harness!());
