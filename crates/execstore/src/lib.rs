//! execstore: the durable store for statechart, workflow and rule engines.
//!
//! Two contracts, siblings over a small shared base, each the storage of a real engine:
//!
//! - [`executions`]: harel 0.9's execution store ([`ExecutionStore`]). Each running instance
//!   is an [`Execution`]; every event step commits as one transaction ([`Effects`]: the CAS
//!   write with its outbox, dedupe marker, timers, spawns and timeline step). A relay drains
//!   the outbox and spawns, a sweep fires due timers, a monitor lists and reads.
//! - [`workspace`]: reflexr 0.1.1's storage ([`workspace::WorkspaceStorage`]): a tenant's
//!   gap-free log, rule progress and scope states, runs due by a run policy, dead letters,
//!   schedules, leases, cursors and versioned stored rules.
//!
//! Beside them, [`transport`] is the queue harel's distributed runner uses. The shared base
//! is [`StoreError`] (one error type, with a stable code per kind) and [`kit`], what a backend
//! author needs (input checks, table names, schema versions, Python-exact JSON). Each contract
//! has an in-memory backend here ([`MemoryStore`], [`workspace::MemoryWorkspaceStorage`]);
//! `execstore-sqlite` and `execstore-postgres` keep the engines' own tables. With the
//! `conformance` feature, [`conformance`] holds one behaviour suite per contract, which every
//! backend and surface runs. With `w1`, `w1` is benchmark workload W1's data.
//!
//! The crate assumes no file system, thread or clock, so it builds for
//! `wasm32-unknown-unknown`.
#![deny(missing_docs)]

mod error;
pub mod executions;
pub mod kit;
pub mod transport;
#[cfg(feature = "w1")]
pub mod w1;
pub mod workspace;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use error::{Result, StoreError};
pub use executions::{Effects, Execution, ExecutionStore, MemoryStore};
