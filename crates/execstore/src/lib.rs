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
//! a sweep fires due timers, a monitor lists and reads ([`executions::ListQuery`],
//! [`executions::paging`]). The stored shapes are field for field those of harel 0.9, so
//! harel's files interoperate. [`MemoryStore`] is the in-memory backend;
//! [`executions::GroupCommit`] wraps any store and gathers concurrent commits into one batch;
//! [`executions::control`] is harel's control plane (suspend, resume, terminate, purge) over
//! any store.
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
//! - [`executions`]: the execution contract. `store.rs` ([`ExecutionStore`],
//!   [`executions::Capabilities`]), `model.rs` (the records), `query.rs`
//!   ([`executions::ListQuery`]) and `cursor.rs` (its cursors), [`executions::paging`],
//!   `memory.rs` ([`MemoryStore`]), `group/` ([`executions::GroupCommit`]),
//!   [`executions::control`].
//! - [`workspace`]: the workspace log (its contract, records, [`workspace::Timestamp`] and
//!   [`workspace::Clock`], [`workspace::RunPolicy`] and the reference `due_runs`, the memory
//!   backend, subscriptions).
//! - [`operator`]: the operator's records beside the data: the audit log and saved views
//!   ([`operator::OperatorStore`], [`operator::MemoryOperatorStore`]).
//! - [`transport`]: harel's transport (a queue per group, one message of a group in flight).
//! - What backends share: `error.rs` ([`StoreError`], one enum for every contract) and
//!   [`kit`], the backend author's kit: [`kit::validate`] (input checks and the exact
//!   serialization of a step), [`kit::pyjson`] (Python's JSON text), [`kit::names`] (table
//!   names under a prefix), [`kit::migration`] (recorded schema changes).
//! - `conformance` (feature `conformance`): the behaviour suites, one folder per contract
//!   (`conformance::executions`, `conformance::workspace`, `conformance::transport`); each
//!   runs from a backend's tests through one macro (`conformance_tests!`,
//!   `workspace_conformance_tests!`, `transport_conformance_tests!`). docs/backends.md in the
//!   repository walks through them.
//! - `w1` (feature `w1`): workload W1's data, for the benchmarks.
//!
//! The root re-exports what an engine's code needs most: the execution contract
//! ([`ExecutionStore`], [`Execution`], [`Effects`], [`MemoryStore`]) and the error
//! ([`StoreError`], [`Result`]); everything else is named by its contract's module.
#![deny(missing_docs)]

mod error;
pub mod executions;
pub mod kit;
pub mod operator;
pub mod transport;
#[cfg(feature = "w1")]
pub mod w1;
pub mod workspace;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use error::{Result, StoreError};
pub use executions::{Effects, Execution, ExecutionStore, MemoryStore};

/// The crate's README (its crates.io page): its examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
