//! execstore: the durable execution store for statechart and workflow engines, and the
//! workspace log for rule engines.
//!
//! This crate is the core: two sibling contracts, the records they store, the checks every
//! backend shares, an in-memory backend of each and, with the `conformance` feature, the
//! behaviour suite of each. It assumes no file system, thread or clock, so it builds for
//! `wasm32-unknown-unknown`. Backends live in crates of their own (`execstore-sqlite`,
//! `execstore-postgres`) and surfaces (the CLI, the monitor, Python, npm, the WIT component)
//! call the contracts, never storage: data flows surface → contract → backend.
//!
//! # The execution contract: [`ExecutionStore`]
//!
//! An engine keeps each running instance (an [`Execution`]) here and commits every event
//! step as one transaction: the CAS write of the new state together with the events it
//! emits (the outbox), the dedupe marker of the event it handled, its timer changes, the
//! children it forks and a timeline step ([`Effects`]). A relay drains the outbox and spawns,
//! a sweep fires due timers, a monitor lists and reads ([`ListQuery`], [`paging`]). The
//! stored shapes are field for field those of harel 0.9, so harel's files interoperate.
//! [`MemoryStore`] is the in-memory backend; [`GroupCommit`] wraps any store and gathers
//! concurrent commits into one batch; [`control`] is harel's control plane (suspend, resume,
//! terminate, purge) over any store.
//!
//! # The workspace log: [`workspace::WorkspaceStorage`]
//!
//! reflexr 0.1.1's `Storage` protocol: a tenant's workspace holds a gap-free event log, rule
//! progress and scope states, runs with a run policy, dead letters, schedule ticks, leases,
//! consumer cursors and versioned stored rules. Every write happens in a
//! [`workspace::WorkspaceTx`] that holds its workspace from `begin` to `commit`.
//! [`workspace::MemoryWorkspaceStorage`] is the in-memory backend, and
//! [`workspace::Subscription`] follows a log on any backend.
//!
//! # Layout
//!
//! - The execution contract: `store.rs` ([`ExecutionStore`], [`Capabilities`]), `model.rs`
//!   (the records), `query.rs` ([`ListQuery`] and cursors), [`paging`], `memory.rs`
//!   ([`MemoryStore`]), `group/` ([`GroupCommit`]), [`control`].
//! - The workspace log: [`workspace`] (its contract, records, [`workspace::Timestamp`] and
//!   [`workspace::Clock`], [`workspace::RunPolicy`] and the reference `due_runs`, the memory
//!   backend, subscriptions).
//! - harel's transport: [`transport`] (a queue per group, one message of a group in flight).
//! - What backends share: `error.rs` ([`StoreError`], one enum for every contract),
//!   [`validate`] (input checks and the exact serialization of a step), [`pyjson`] (Python's
//!   JSON text), [`names`] (table names under a prefix), [`migration`] (recorded schema
//!   changes).
//! - The behaviour suites (feature `conformance`): `conformance` (with `conformance_control`
//!   and `conformance_list_filters`) for executions, `workspace_conformance` for the workspace
//!   log, `transport_conformance` for the transport; each runs from a backend's tests through
//!   one macro (`conformance_tests!`, `workspace_conformance_tests!`,
//!   `transport_conformance_tests!`). docs/backends.md in the repository walks through them.
//! - Beside them: [`graph`] (a statechart drawn from traces, for the monitor) and [`w1`]
//!   (workload W1's data, for the benchmarks).
#![deny(missing_docs)]

pub mod control;
mod error;
pub mod graph;
mod group;
mod memory;
pub mod migration;
mod model;
pub mod names;
pub mod paging;
pub mod pyjson;
mod query;
mod store;
pub mod transport;
pub mod validate;
pub mod w1;
pub mod workspace;

#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "conformance")]
pub mod conformance_control;
#[cfg(feature = "conformance")]
pub mod conformance_list_filters;
#[cfg(feature = "conformance")]
pub mod transport_conformance;
#[cfg(feature = "conformance")]
pub mod workspace_conformance;

pub use error::{Result, StoreError};
pub use group::{GroupCommit, GroupCommitStats, DEFAULT_MAX_BATCH};
pub use memory::MemoryStore;
pub use model::{
    ChildState, DueTimer, Effects, Emit, Event, Execution, ExecutionPage, ExecutionSummary, JsonObject,
    OutboxEntry, Spawn, SpawnEntry, Status, TimerOp, TraceStep, UnreadableRow,
};
pub use query::{
    decode_cursor, encode_cursor, search_matches, ListQuery, TimeRange, DEFAULT_LIST_LIMIT, MAX_SEARCH_BYTES,
};
pub use store::{BatchItem, Capabilities, ExecutionStore, Work, DEFAULT_TRACE_MAX};
