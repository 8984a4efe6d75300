//! The transport's behaviour suite against PgTransport on a real PostgreSQL server
//! (`EXECSTORE_PG_URL`): each check on a table prefix of its own, dropped after; a second pool
//! for the second worker; reopened for the durability check.

mod common;

use execstore::conformance::transport::TransportHarness;
use execstore::transport::Transport;
use execstore_postgres::{PgTransport, PgTransportOptions};

struct PgTransportHarness {
    url: String,
    prefix: String,
    transport: Option<PgTransport>,
}

impl PgTransportHarness {
    fn new() -> Option<Self> {
        let url = common::server_url()?;
        let prefix = common::unique_prefix();
        let transport = Some(Self::open(&url, &prefix));
        Some(PgTransportHarness {
            url,
            prefix,
            transport,
        })
    }

    fn open(url: &str, prefix: &str) -> PgTransport {
        PgTransport::open(url, PgTransportOptions::new().prefix(prefix).max_connections(2)).expect("open")
    }
}

impl TransportHarness for PgTransportHarness {
    fn transport(&self) -> &dyn Transport {
        self.transport.as_ref().expect("open")
    }
    fn another(&self) -> Box<dyn Transport> {
        Box::new(Self::open(&self.url, &self.prefix))
    }
    fn reopen(&mut self) -> bool {
        self.transport = None;
        self.transport = Some(Self::open(&self.url, &self.prefix));
        true
    }
}

impl Drop for PgTransportHarness {
    fn drop(&mut self) {
        self.transport = None;
        let _ = execstore_postgres::drop_transport(&self.url, &self.prefix);
    }
}

macro_rules! pg_transport {
    () => {
        match PgTransportHarness::new() {
            Some(h) => h,
            None => return,
        }
    };
}

execstore::transport_conformance_tests!(durable: pg_transport!());

#[test]
fn create_schema_false_needs_the_tables() {
    let Some(url) = common::server_url() else { return };
    let prefix = common::unique_prefix();
    let err = PgTransport::open(
        &url,
        PgTransportOptions::new().prefix(&prefix).create_schema(false),
    )
    .expect_err("no tables yet");
    assert!(matches!(err, execstore::StoreError::NotFound { .. }), "{err:?}");
    drop(PgTransport::open(&url, PgTransportOptions::new().prefix(&prefix)).expect("create"));
    PgTransport::open(
        &url,
        PgTransportOptions::new().prefix(&prefix).create_schema(false),
    )
    .expect("they exist");
    execstore_postgres::drop_transport(&url, &prefix).expect("drop");
}

#[test]
fn a_lapsed_lease_no_longer_acks() {
    // fenced by the claim's token: the first worker's late ack leaves the second's lease alone
    let Some(h) = PgTransportHarness::new() else {
        return;
    };
    let t = h.transport();
    t.publish("G", &execstore::executions::Event::new("e1", "k"), 0)
        .expect("publish");
    t.publish("G", &execstore::executions::Event::new("e2", "k"), 0)
        .expect("publish");
    let t0 = 1_700_000_000.0;
    let first = t.claim("w1", t0, 10.0, 0).expect("claim").expect("e1");
    let second = t
        .claim("w2", t0 + 11.0, 10.0, 0)
        .expect("claim")
        .expect("e1 again");
    assert_eq!(second.lease.seq, first.lease.seq);
    assert_ne!(second.lease.token, first.lease.token);
    t.ack(&first.lease, t0 + 12.0).expect("a stale ack is no error");
    assert_eq!(t.depth().expect("depth"), 2, "the stale ack removed nothing");
    assert!(
        t.claim("w3", t0 + 12.0, 10.0, 0).expect("claim").is_none(),
        "w2 still holds G"
    );
    t.ack(&second.lease, t0 + 12.0).expect("ack");
    assert_eq!(t.depth().expect("depth"), 1);
}
