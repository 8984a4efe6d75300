//! The execstore behaviour suite against PgStore on a real PostgreSQL server
//! (`EXECSTORE_PG_URL`): under a table prefix of its own, with harel's `harel_` prefix and
//! with bare names (each of those in a schema of its own), opened without `create_schema` on
//! harel's tables alone, and through the group committer.

#[macro_use]
mod common;

execstore::conformance_tests!(durable: pg_harness!(new));

mod harel_prefix {
    execstore::conformance_tests!(durable: pg_harness!(harel));
}

mod bare_names {
    execstore::conformance_tests!(durable: pg_harness!(bare));
}

/// `create_schema` off on harel's own tables: no DDL, and every step as plain statements.
mod harel_schema_only {
    execstore::conformance_tests!(durable: pg_harness!(harel_schema_only));
}

/// Every commit goes through a batch (`commit_batch` in one transaction with a savepoint
/// per item).
mod group_commit {
    use execstore::conformance::executions::Harness;
    use execstore::{executions::GroupCommit, ExecutionStore};
    use execstore_postgres::PgStore;

    use crate::common::PgHarness;

    struct GroupHarness {
        inner: PgHarness,
        store: Option<GroupCommit<PgStore>>,
    }

    impl GroupHarness {
        fn new() -> Option<Self> {
            let mut inner = PgHarness::new()?;
            let store = inner.store.take().map(GroupCommit::new);
            Some(GroupHarness { inner, store })
        }
    }

    impl Harness for GroupHarness {
        fn store(&self) -> &dyn ExecutionStore {
            self.store.as_ref().expect("the store is open")
        }

        fn reopen(&mut self) -> bool {
            self.store = None;
            let store = PgStore::open(&self.inner.url, self.inner.options.clone()).expect("reopen");
            self.store = Some(GroupCommit::new(store));
            true
        }
    }

    execstore::conformance_tests!(durable: match GroupHarness::new() {
        Some(h) => h,
        None => return,
    });
}

/// Not in the macro (a backend that cannot write an outbox entry alone refuses it): under a
/// prefix of its own and on harel's own tables alone (no commit functions).
#[test]
fn send_through_the_outbox() {
    use execstore::conformance::executions::{send_through_the_outbox as check, Harness};
    check(pg_harness!(new).store());
    check(pg_harness!(harel_schema_only).store());
}
