//! Named tokens, the audit log and `execstore audit` end to end: a tokens file (malformed
//! ones refused naming the line), writes through the monitor recorded with the token's name
//! and never the token, `execstore audit` reading them back (and saying so when there are
//! none), and harel and reflexr opening the file after an audited action.

mod common;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{execstore, start_monitor, Monitor};
use serde_json::Value;

/// SHA-256 of `adm1n-pass`.
fn sha256_hex(token: &str) -> String {
    execstore_monitor_api::digest(token)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// A demo store (small) in a fresh directory.
fn demo(dir: &Path) -> PathBuf {
    demo_with(dir, &[])
}

/// A demo store with more arguments (`--prefix harel`).
fn demo_with(dir: &Path, more: &[&str]) -> PathBuf {
    let db = dir.join("demo.db");
    let mut args = vec!["demo", "--db", "demo.db", "--executions", "40", "--no-serve"];
    args.extend_from_slice(more);
    let out = execstore(dir, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    db
}

fn tokens_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.toml");
    let body = format!(
        "# the monitor's tokens\n[[token]]\nname = \"ada\"\nrole = \"admin\"\nsha256 = \"{}\"\n\n\
         [[token]]\nname = \"otto\"\nrole = \"act\"\ntoken = \"act0r-pass\"\n",
        sha256_hex("adm1n-pass")
    );
    std::fs::write(&path, body).unwrap();
    path
}

fn write(m: &Monitor, method: &str, path: &str, token: &str, body: &str) -> (u16, Value) {
    let req = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", m.url))
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .body(body.to_owned())
        .unwrap();
    let mut response = m.agent.run(req).expect("the request went through");
    let status = response.status().as_u16();
    let text = response.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn get(m: &Monitor, path: &str) -> Value {
    let mut response = m.agent.get(format!("{}{path}", m.url)).call().unwrap();
    serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap()
}

fn a_running_execution(m: &Monitor) -> (String, i64) {
    let list = get(m, "api/executions?status=RUNNING&roots_only=true&limit=1");
    let exe = &list["items"][0];
    (
        exe["id"].as_str().expect("a running execution").to_owned(),
        exe["version"].as_i64().expect("a version"),
    )
}

fn audit(dir: &Path, db: &Path, args: &[&str]) -> Output {
    let mut all = vec!["audit", "--db", db.to_str().unwrap()];
    all.extend_from_slice(args);
    execstore(dir, &all)
}

#[test]
fn audit_says_when_there_is_nothing_and_reads_a_file_without_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path());
    let out = audit(dir.path(), &db, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "no audit entries\n");
    let out = audit(dir.path(), &db, &["--target", "order-1", "--actor", "ada"]);
    assert_eq!(text(&out.stdout), "no audit entries on \"order-1\" by \"ada\"\n");
    let out = audit(dir.path(), &db, &["--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        Value::Array(vec![])
    );
    let out = audit(dir.path(), &db, &["--limit", "0"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("limit"), "{}", text(&out.stderr));
    let out = execstore(dir.path(), &["audit", "--db", "nope.db"]);
    assert!(!out.status.success());
    assert!(!dir.path().join("nope.db").exists(), "nothing created");
}

#[test]
fn a_malformed_tokens_file_is_refused_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path());
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[token]]\nname = \"a\"\nrole = \"act\"\ntoken = \"s3cret-one\"\n\n[[token]]\nname = \"b\"\nrole = \"boss\"\ntoken = \"s3cret-two\"\n",
    )
    .unwrap();
    for args in [
        vec![
            "monitor",
            "--db",
            db.to_str().unwrap(),
            "--tokens",
            bad.to_str().unwrap(),
            "--port",
            "0",
        ],
        vec!["monitor", "--db", db.to_str().unwrap(), "--port", "0"],
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_execstore"));
        command
            .args(&args)
            .current_dir(dir.path())
            .env_remove("EXECSTORE_MONITOR_TOKEN");
        if !args.contains(&"--tokens") {
            command.env("EXECSTORE_MONITOR_TOKENS", &bad);
        }
        let out = command.output().unwrap();
        assert!(!out.status.success());
        let err = text(&out.stderr);
        assert!(err.contains("bad.toml: line 6: unknown role \"boss\""), "{err}");
        assert!(!err.contains("s3cret"), "a token in the error: {err}");
    }
    let out = execstore(
        dir.path(),
        &[
            "monitor",
            "--db",
            db.to_str().unwrap(),
            "--tokens",
            "missing.toml",
            "--port",
            "0",
        ],
    );
    assert!(text(&out.stderr).contains("cannot read the tokens file missing.toml"));
    let out = execstore(
        dir.path(),
        &[
            "monitor",
            "--db",
            db.to_str().unwrap(),
            "--tokens",
            bad.to_str().unwrap(),
            "--token",
            "x",
        ],
    );
    assert!(!out.status.success(), "--token and --tokens together are refused");
}

#[test]
fn writes_are_recorded_with_the_token_name_and_read_back_by_execstore_audit() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path());
    let tokens = tokens_file(dir.path());
    let mut m = start_monitor(
        &[
            "monitor",
            "--db",
            db.to_str().unwrap(),
            "--tokens",
            tokens.to_str().unwrap(),
        ],
        &[],
    );
    let info = {
        let mut r = m
            .agent
            .get(format!("{}api/info", m.url))
            .header("Authorization", "Bearer act0r-pass")
            .call()
            .unwrap();
        serde_json::from_str::<Value>(&r.body_mut().read_to_string().unwrap()).unwrap()
    };
    assert_eq!(info["caller"]["name"], "otto");
    let (id, version) = a_running_execution(&m);
    let (status, body) = write(
        &m,
        "POST",
        &format!("api/executions/{id}/suspend?expected_version={version}"),
        "act0r-pass",
        r#"{"reason": "customer on hold"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (status, _) = write(
        &m,
        "POST",
        &format!("api/executions/{id}/purge"),
        "act0r-pass",
        r#"{"reason": "tidy"}"#,
    );
    assert_eq!(status, 403, "act may not purge");
    let (status, _) = write(
        &m,
        "POST",
        &format!("api/executions/{id}/resume"),
        "wrong-pass",
        r#"{"reason": "x"}"#,
    );
    assert_eq!(status, 401);
    let (status, _) = write(
        &m,
        "POST",
        &format!("api/executions/{id}/resume"),
        "adm1n-pass",
        "{}",
    );
    assert_eq!(status, 400, "no reason");
    let (status, body) = write(
        &m,
        "PUT",
        "api/views/On%20hold",
        "adm1n-pass",
        r#"{"query": "status=SUSPENDED", "reason": "team view"}"#,
    );
    assert_eq!(status, 200, "{body}");
    let stderr = m.child.stderr.take();
    let _ = m.child.kill();
    let _ = m.child.wait();
    let mut logged = String::new();
    if let Some(mut s) = stderr {
        let _ = s.read_to_string(&mut logged);
    }

    let out = audit(dir.path(), &db, &["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let entries: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let summary: Vec<(&str, &str, &str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
                e["target"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("ada", "views.put", "On hold", "ok"),
            ("anonymous", "executions.resume", id.as_str(), "UNAUTHORIZED"),
            ("otto", "executions.purge", id.as_str(), "FORBIDDEN"),
            ("otto", "executions.suspend", id.as_str(), "ok"),
        ]
    );
    assert_eq!(entries[3]["reason"], "customer on hold");
    assert_eq!(entries[3]["params"]["expected_version"], version);
    let table = audit(dir.path(), &db, &["--actor", "otto"]);
    let table = text(&table.stdout);
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains("customer on hold") && table.contains("FORBIDDEN"),
        "{table}"
    );
    assert!(table.ends_with("2 shown\n"), "{table}");
    let page = text(&audit(dir.path(), &db, &["--limit", "1"]).stdout);
    assert!(page.contains("more with --cursor"), "{page}");
    for secret in ["adm1n-pass", "act0r-pass", "wrong-pass"] {
        assert!(!text(&out.stdout).contains(secret), "{secret} in the audit");
        assert!(
            !logged.contains(secret),
            "{secret} in the monitor's output: {logged}"
        );
    }
}

/// After an audited action, harel's own SqliteStore and reflexr's migrate still open the
/// file (the audit tables are beside theirs, never in their way).
#[test]
fn harel_and_reflexr_open_the_file_after_an_audited_action() {
    let harel = std::env::var("EXECSTORE_HAREL_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    let reflexr = std::env::var("EXECSTORE_REFLEXR_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    if harel.is_none() && reflexr.is_none() {
        skip("neither EXECSTORE_HAREL_PYTHON nor EXECSTORE_REFLEXR_PYTHON is set (scripts/test sets them)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // harel names its tables under a prefix (harel_executions, ...).
    let db = demo_with(dir.path(), &["--prefix", "harel"]);
    let tokens = tokens_file(dir.path());
    let m = start_monitor(
        &[
            "monitor",
            "--db",
            db.to_str().unwrap(),
            "--prefix",
            "harel",
            "--tokens",
            tokens.to_str().unwrap(),
        ],
        &[],
    );
    let (id, _) = a_running_execution(&m);
    let (status, body) = write(
        &m,
        "POST",
        &format!("api/executions/{id}/terminate"),
        "adm1n-pass",
        r#"{"reason": "interop"}"#,
    );
    assert_eq!(status, 200, "{body}");
    drop(m);
    let out = audit(dir.path(), &db, &["--target", &id]);
    assert!(text(&out.stdout).contains("interop"), "{}", text(&out.stdout));
    match harel {
        None => skip("EXECSTORE_HAREL_PYTHON is not set: harel's half not run"),
        Some(python) => {
            // harel loads the execution the monitor terminated and saves it again.
            let script = "import sys\nfrom harel.engine.store import SqliteStore\n\
                          s = SqliteStore(sys.argv[1])\ne = s.load(sys.argv[2])\n\
                          print(e.status.value if hasattr(e.status, 'value') else e.status)\n\
                          s.save(e)\nprint(len(s.list_executions().items))\n";
            let out = Command::new(python)
                .args(["-c", script])
                .arg(&db)
                .arg(&id)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
            let printed = text(&out.stdout);
            assert!(printed.starts_with("CANCELLED\n"), "{printed}");
        }
    }
    match reflexr {
        None => skip("EXECSTORE_REFLEXR_PYTHON is not set: reflexr's half not run"),
        Some(python) => {
            let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reflexr");
            let script = "import asyncio, sys, json\nimport rx\nfrom reflexr.sql import SqlStorage\n\
                          async def main():\n    eng = rx.engine(sys.argv[1])\n    m = await rx.migrate_checked(eng)\n\
                          \x20   s = SqlStorage(eng)\n    ws = await s.workspaces()\n\
                          \x20   print(json.dumps({'same': m['schema_before'] == m['schema_after'], 'workspaces': len(ws)}))\n\
                          \x20   await eng.dispose()\nasyncio.run(main())\n";
            let out = Command::new(python)
                .current_dir(&scripts)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .args(["-c", script])
                .arg(&db)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
            let v: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
            assert_eq!(v["same"], true, "reflexr's migrate changed nothing: {v}");
            assert!(v["workspaces"].as_u64().unwrap() > 0, "{v}");
        }
    }
}
