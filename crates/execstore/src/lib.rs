//! execstore: the durable execution store for statechart and workflow engines.
//!
//! An engine keeps each running instance (an [`Execution`]) here and commits every event
//! step as one transaction: the CAS write of the new state together with the events it
//! emits (the outbox), the dedupe marker of the event it handled, its timer changes, the
//! children it forks and a timeline step ([`Effects`]). A relay drains the outbox and spawns,
//! a sweep fires due timers, a monitor lists and reads.
//!
//! This crate holds the contract ([`ExecutionStore`]), the stored shapes (field for field
//! those of harel 0.9, so harel's files interoperate), the input checks every backend
//! shares, an in-memory store ([`MemoryStore`]) and, with the `conformance` feature, the
//! behaviour suite every backend runs. It assumes no file system, thread or clock, so it
//! builds for `wasm32-unknown-unknown`.
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
