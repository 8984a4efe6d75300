//! The core's behaviour suite (`execstore::conformance::executions`), run through the component
//! boundary: every call goes from this host into the wasm32-wasip2 component and back.
//!
//! Not run here: `reopen_sees_everything_committed`, which needs a durable backend; both
//! backends inside the component are in memory (the component is granted no file system),
//! so a reopened store starts empty by design.
//! `cas_race` runs: the threads race on a store that takes one call at a time, but a
//! load and the commit after it are two calls, so a lost CAS is still possible and checked.

/// Through the component, over the core's in-memory store.
mod memory {
    execstore::conformance_tests!(ephemeral: crate::support::Harness::new(
        execstore_component_host::Backend::Memory
    ));
}

/// Through the component, over the SQLite adapter on an in-memory database, compiled into
/// the component (EXECSTORE_COMPONENT_FEATURES=sqlite).
#[cfg(execstore_component_sqlite)]
mod sqlite_memory {
    execstore::conformance_tests!(ephemeral: crate::support::Harness::new(
        execstore_component_host::Backend::SqliteMemory
    ));
}

#[cfg(not(execstore_component_sqlite))]
#[test]
#[ignore = "EXECSTORE_COMPONENT_FEATURES does not name sqlite: the component has no SQLite to test"]
fn sqlite_memory_conformance() {}

/// Not in the macro (a backend that cannot write an outbox entry alone refuses it): the
/// component hosts `enqueue-outbox`, so the core's `send` runs through it.
#[test]
fn send_through_the_outbox() {
    use execstore::conformance::executions::{send_through_the_outbox as check, Harness};
    check(crate::support::Harness::new(execstore_component_host::Backend::Memory).store());
    if crate::support::has_sqlite() {
        check(crate::support::Harness::new(execstore_component_host::Backend::SqliteMemory).store());
    }
}
