//! The execution contract: harel 0.9's `ExecutionStore`.
//!
//! An engine keeps each running instance (an [`Execution`]) here and commits every event
//! step as one transaction: the CAS write of the new state together with the events it
//! emits (the outbox), the dedupe marker of the event it handled, its timer changes, the
//! children it forks and a timeline step ([`Effects`]). A relay drains the outbox and spawns,
//! a sweep fires due timers, a monitor lists and reads.
//!
//! - `store.rs`: the contract ([`ExecutionStore`]), its [`Capabilities`] and batch commits;
//! - `model.rs`: the stored shapes, field for field those of harel 0.9;
//! - `query.rs`: listing ([`ListQuery`]); [`search`]: the `where` filter over executions and
//!   search attributes; `cursor.rs`: its opaque cursors; [`paging`]: iterators over pages;
//! - [`definitions`]: a machine's definition document, kept per id and fqn;
//! - [`graph`]: the figures a definition's graph is drawn from;
//! - `memory.rs`: the in-memory backend ([`MemoryStore`]); `group/`: group commit over any
//!   backend ([`GroupCommit`]); [`control`]: an operator's actions (suspend, resume,
//!   terminate, purge).
//!
//! The behaviour suite is `crate::conformance::executions` (feature `conformance`).

pub mod control;
mod cursor;
pub mod definitions;
pub mod graph;
pub(crate) mod group;
pub(crate) mod memory;
pub(crate) mod model;
pub mod paging;
pub(crate) mod query;
pub mod search;
pub(crate) mod store;

pub use cursor::{decode_cursor, encode_created_cursor, encode_cursor, encode_updated_cursor};
pub use definitions::DefinitionDoc;
pub use graph::{FiguresTally, GraphFigures, GuardFigure, NowFigure, StepFigure};
pub use group::{GroupCommit, GroupCommitStats, DEFAULT_MAX_BATCH};
pub use memory::MemoryStore;
pub use model::{
    ChildState, DueTimer, Effects, Emit, Event, Execution, ExecutionPage, ExecutionSummary, JsonObject,
    OutboxEntry, Spawn, SpawnEntry, Status, TimerOp, TraceStep, UnreadableRow,
};
pub use query::{
    search_matches, ListOrder, ListQuery, TimeKey, TimeRange, DEFAULT_LIST_LIMIT, MAX_SEARCH_BYTES,
};
pub use search::{parse_where, SearchAttribute};
pub use store::{BatchItem, Capabilities, ExecutionStore, Work, DEFAULT_TRACE_MAX};
