//! The behaviour suite on the in-memory store, with harel's default trace ring and with a
//! small one, and with no ring at all.

execstore::conformance_tests!(ephemeral: execstore::MemoryStore::new());

mod small_ring {
    execstore::conformance_tests!(ephemeral: execstore::MemoryStore::with_trace_max(Some(5)));
}

mod unbounded_trace {
    execstore::conformance_tests!(ephemeral: execstore::MemoryStore::with_trace_max(None));
}

/// Not in the macro: a backend that cannot write an outbox entry alone refuses it.
#[test]
fn send_through_the_outbox() {
    execstore::conformance::executions::send_through_the_outbox(&execstore::MemoryStore::new());
    execstore::conformance::executions::send_through_the_outbox(&execstore::executions::GroupCommit::new(
        execstore::MemoryStore::new(),
    ));
}
