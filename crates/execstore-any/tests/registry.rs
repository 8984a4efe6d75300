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
