//! The behaviour suite on the in-memory store, with harel's default trace ring and with a
//! small one, and with no ring at all.

execstore::conformance_tests!(ephemeral: execstore::MemoryStore::new());

mod small_ring {
    execstore::conformance_tests!(ephemeral: execstore::MemoryStore::with_trace_max(Some(5)));
}

mod unbounded_trace {
    execstore::conformance_tests!(ephemeral: execstore::MemoryStore::with_trace_max(None));
}
