//! The table of backends: which row a URL picks, the typed refusal of an unknown scheme, and
//! both contracts opened on one database handle.

use execstore::{Effects, Execution, StoreError};
use execstore_any::{open, probe, Options, Target, UnknownScheme, BACKENDS};

#[test]
fn a_url_picks_its_row() {
    let cases = [
        ("runs.db", "sqlite", "runs.db"),
        ("./dir/x:y.db", "sqlite", "./dir/x:y.db"),
        (":memory:", "sqlite", ":memory:"),
        ("C:\\data\\runs.db", "sqlite", "C:\\data\\runs.db"),
        ("sqlite:runs.db", "sqlite", "runs.db"),
        ("sqlite:///var/runs.db", "sqlite", "/var/runs.db"),
        ("SQLite:runs.db", "sqlite", "runs.db"),
        ("memory:", "memory", ""),
        ("postgres://u@h/db", "postgres", "postgres://u@h/db"),
        ("postgresql://u@h/db?x=1", "postgres", "postgresql://u@h/db?x=1"),
    ];
    for (url, backend, location) in cases {
        let target = Target::parse(url).unwrap();
        assert_eq!(
            (target.backend.name, target.location.as_str()),
            (backend, location),
            "{url}"
        );
    }
    assert!(Target::parse("runs.db").unwrap().is_file());
    assert!(!Target::parse("postgres://h/db").unwrap().is_file());
}

#[test]
fn an_unknown_scheme_is_refused_naming_the_known_ones() {
    let err = Target::parse("mysql://u@h/db").unwrap_err();
    let known: Vec<String> = BACKENDS
        .iter()
        .flat_map(|b| b.schemes.iter().map(|s| s.to_string()))
        .collect();
    assert_eq!(
        err,
        UnknownScheme {
            scheme: "mysql".into(),
            known: known.clone(),
        }
    );
    for scheme in ["memory:", "sqlite:", "postgres://", "postgresql://"] {
        assert!(known.iter().any(|k| k == scheme), "{scheme}");
        assert!(err.to_string().contains(scheme), "{err}");
    }
    // Through `open` and `probe`: a typed invalid input, and nothing created.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("mysql://{}", dir.path().join("x.db").display());
    let opened = open(&url, &Options::new().executions(true));
    match opened {
        Err(StoreError::InvalidInput { field, reason }) => {
            assert_eq!(field, "url");
            assert!(reason.contains("postgres://"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(probe(&url, None), Err(StoreError::InvalidInput { .. })));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn sqlite_opens_both_contracts_and_only_those_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("both.db");
    let url = format!("sqlite:{}", path.display());
    let only = open(&url, &Options::new().executions(true).prefix(Some("harel"))).unwrap();
    assert!(only.workspaces.is_none());
    only.executions
        .as_ref()
        .unwrap()
        .commit(&mut Execution::new("e1", "d"), &Effects::new())
        .unwrap();
    drop(only);
    let holds = probe(&url, Some("harel")).unwrap();
    assert!(holds.executions && !holds.workspaces, "{holds:?}");

    let both = open(
        path.to_str().unwrap(),
        &Options::new()
            .executions(true)
            .workspaces(true)
            .prefix(Some("harel")),
    )
    .unwrap();
    assert_eq!(both.backend.name, "sqlite");
    assert!(both.workspaces.is_some());
    drop(both);
    assert!(probe(&url, Some("harel")).unwrap().workspaces);

    // Read-only: opens what is there, refuses to write.
    let ro = open(
        &url,
        &Options::new()
            .executions(true)
            .read_only(true)
            .prefix(Some("harel")),
    )
    .unwrap();
    let store = ro.executions.unwrap();
    assert!(store.load("e1").unwrap().is_some());
    assert!(store
        .commit(&mut Execution::new("e2", "d"), &Effects::new())
        .is_err());
    // A bad prefix creates no file.
    let fresh = dir.path().join("fresh.db");
    assert!(matches!(
        open(
            fresh.to_str().unwrap(),
            &Options::new().executions(true).prefix(Some("1x"))
        ),
        Err(StoreError::InvalidInput { .. })
    ));
    assert!(!fresh.exists());
}

#[test]
fn memory_opens_both_and_refuses_read_only() {
    let stores = open("memory:", &Options::new().executions(true).workspaces(true)).unwrap();
    assert_eq!(stores.backend.name, "memory");
    let store = stores.executions.unwrap();
    store
        .commit(&mut Execution::new("e1", "d"), &Effects::new())
        .unwrap();
    assert!(stores.workspaces.is_some());
    assert!(matches!(
        open("memory:", &Options::new().executions(true).read_only(true)),
        Err(StoreError::InvalidInput { .. })
    ));
}

/// `postgres://` with both contracts: one pool (the server sees one session of a pool of one
/// connection). Needs `EXECSTORE_PG_URL`; skipped, and said so, without it when
/// `EXECSTORE_PG_OPTIONAL=1`.
#[test]
fn postgres_opens_both_contracts_on_one_pool() {
    let url = match std::env::var("EXECSTORE_PG_URL") {
        Ok(url) if !url.is_empty() => url,
        _ if std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1") => {
            eprintln!(
                "SKIPPED: postgres_opens_both_contracts_on_one_pool: EXECSTORE_PG_URL is not set \
                 (EXECSTORE_PG_OPTIONAL=1)"
            );
            return;
        }
        _ => panic!("EXECSTORE_PG_URL is not set (or EXECSTORE_PG_OPTIONAL=1 to skip)"),
    };
    let tag = format!(
        "any_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    );
    let sep = if url.contains('?') { '&' } else { '?' };
    let named = format!("{url}{sep}application_name={tag}");
    let mut options = Options::new()
        .executions(true)
        .workspaces(true)
        .prefix(Some(&tag));
    options.postgres.connect = options
        .postgres
        .connect
        .clone()
        .max_connections(1)
        .schema(format!("s_{tag}"));
    let stores = open(&named, &options).unwrap();
    assert_eq!(stores.backend.name, "postgres");
    stores
        .executions
        .as_ref()
        .unwrap()
        .commit(&mut Execution::new("e1", "d"), &Effects::new())
        .unwrap();
    assert!(stores
        .workspaces
        .as_ref()
        .unwrap()
        .workspaces()
        .unwrap()
        .is_empty());
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let sessions: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&tag],
        )
        .unwrap()
        .get(0);
    assert_eq!(sessions, 1, "both contracts on one pool of one connection");
    drop(stores);
    client
        .batch_execute(&format!("DROP SCHEMA s_{tag} CASCADE"))
        .unwrap();
}

/// A prefix not given is found: the one set of execution tables a database holds, none when
/// it holds none (the bare names), and several are an INVALID_INPUT on `prefix` naming each.
fn check_prefix_resolution(url: &str, make: &dyn Fn(Option<&str>)) {
    assert_eq!(execstore_any::resolve_prefix(url, None, "pass P").unwrap(), None);
    make(Some("alpha"));
    assert_eq!(
        execstore_any::resolve_prefix(url, None, "pass P").unwrap(),
        Some("alpha".to_owned())
    );
    assert_eq!(
        execstore_any::resolve_prefix(url, Some("given"), "pass P").unwrap(),
        Some("given".to_owned())
    );
    make(None);
    match execstore_any::resolve_prefix(url, None, "pass P") {
        Err(StoreError::InvalidInput { field, reason }) => {
            assert_eq!(field, "prefix");
            for needle in ["alpha (alpha_executions", "none (executions", "pass P"] {
                assert!(reason.contains(needle), "{needle} in {reason}");
            }
        }
        other => panic!("two sets: {other:?}"),
    }
}

#[test]
fn a_missing_prefix_is_found_in_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sets.db");
    let url = path.to_str().unwrap().to_owned();
    // A file that does not exist holds no set.
    assert_eq!(execstore_any::resolve_prefix(&url, None, "pass P").unwrap(), None);
    assert!(!path.exists(), "resolving created the file");
    check_prefix_resolution(&url, &|prefix| {
        let options = Options::new().executions(true).prefix(prefix);
        drop(execstore_any::open(&url, &options).unwrap());
    });
}

#[test]
fn a_missing_prefix_is_found_in_a_postgres_schema() {
    let url = match std::env::var("EXECSTORE_PG_URL") {
        Ok(url) if !url.is_empty() => url,
        _ if std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1") => {
            eprintln!(
                "SKIPPED: a_missing_prefix_is_found_in_a_postgres_schema: EXECSTORE_PG_URL is not set \
                 (EXECSTORE_PG_OPTIONAL=1)"
            );
            return;
        }
        _ => panic!("EXECSTORE_PG_URL is not set (or EXECSTORE_PG_OPTIONAL=1 to skip)"),
    };
    let schema = format!("sets_{}", std::process::id());
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{sep}options=-csearch_path%3D{schema}");
    check_prefix_resolution(&scoped, &|prefix| {
        let options = Options::new().executions(true).prefix(prefix);
        drop(execstore_any::open(&scoped, &options).unwrap());
    });
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}
