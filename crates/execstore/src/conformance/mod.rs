//! The behaviour suites every backend runs (feature `conformance`), one folder per contract:
//! [`executions`] for [`crate::ExecutionStore`], [`workspace`] for
//! [`crate::workspace::WorkspaceStorage`] and [`transport`] for [`crate::transport::Transport`].
//!
//! Each suite is plain functions over the contract, in the manner of object_store's
//! `integration.rs`, plus a macro that generates one `#[test]` per check for a backend's test
//! crate: [`conformance_tests!`](crate::conformance_tests),
//! [`workspace_conformance_tests!`](crate::workspace_conformance_tests) and
//! [`transport_conformance_tests!`](crate::transport_conformance_tests). Capabilities are
//! parameters: a check that needs durability is generated only for a durable backend.

pub mod executions;
pub mod operator;
pub mod transport;
pub mod workspace;
