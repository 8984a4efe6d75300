//! Read means untouched, even after a crash: every read command of the CLI, and the monitor
//! without a token, leave a file a crashed writer left (a `-wal` from a SIGKILLed writer, a
//! hot `-journal`, a `-wal` with a damaged frame) byte for byte as it was: the file, its
//! `-wal` and its `-journal` keep their sha256, no file is removed, and none is added but a
//! `-shm` (the one file a read may write). And a store on read-only media, in a directory
//! its reader cannot write, or a 0444 file is read, or refused plainly, with nothing left
//! behind.
//!
//! The crash states are made for real: a child process (this test binary, run again as
//! `child_writer`) commits steps to the store and is SIGKILLed mid-write; another, in
//! rollback-journal mode, is SIGKILLed inside a transaction whose pages reached the file.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use execstore::{executions::Event, Effects, Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tempfile::TempDir;

/// Set to a store path: `child_writer` writes to it until killed.
const WRITER_ENV: &str = "EXECSTORE_TEST_WAL_WRITER";
/// Set to a store path: `child_writer` leaves a transaction open in rollback-journal mode.
const JOURNAL_ENV: &str = "EXECSTORE_TEST_JOURNAL_WRITER";
/// How many steps the WAL writer commits before it says it is ready to be killed.
const READY_AFTER: usize = 120;

/// The file and its sidecars: name -> sha256, for every file of the directory.
fn fingerprint(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let bytes = std::fs::read(entry.path()).unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                format!("{:x}", Sha256::digest(&bytes)),
            )
        })
        .collect()
}

/// Asserts that `dir` holds the files of `before`, byte for byte, and no other, except a
/// `-shm` (which may have been added or changed).
fn assert_untouched(dir: &Path, before: &BTreeMap<String, String>, what: &str) {
    let after = fingerprint(dir);
    let keep = |files: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        files
            .iter()
            .filter(|(name, _)| !name.ends_with("-shm"))
            .map(|(n, h)| (n.clone(), h.clone()))
            .collect()
    };
    assert_eq!(
        keep(&after),
        keep(before),
        "{what}: the files changed (before {before:?}, after {after:?})"
    );
    for name in before.keys().filter(|n| n.ends_with("-shm")) {
        assert!(after.contains_key(name), "{what}: {name} was removed");
    }
}

/// A demo store (executions and a workspace log) in a fresh directory, closed cleanly.
fn demo() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    let out = common::execstore(
        dir.path(),
        &[
            "demo",
            "--no-serve",
            "--db",
            db.to_str().unwrap(),
            "--executions",
            "40",
            "--seed",
            "7",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        fingerprint(dir.path()).len(),
        1,
        "the demo closed its file cleanly"
    );
    (dir, db)
}

/// Runs this test binary again as `child_writer` with `env` set, waits for its `READY`, and
/// SIGKILLs it (a short moment later, so it is in the middle of its next writes).
fn kill_writer_when_ready(env: (&str, &Path)) {
    /// Kills the child however this function ends (a failed assertion included).
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Killed(
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_writer", "--nocapture", "--test-threads", "1"])
            .env(env.0, env.1)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let child = &mut child.0;
    let stdout = child.stdout.take().unwrap();
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.ends_with("READY"));
    assert!(ready, "the writer child never got ready");
    std::thread::sleep(Duration::from_millis(30));
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the writer was killed, not finished: {status:?}"
    );
}

/// Not a test of its own: the writer a test runs as a child process (it returns at once when
/// run by the harness).
#[test]
fn child_writer() {
    if let Some(path) = std::env::var_os(WRITER_ENV) {
        wal_writer(Path::new(&path));
    }
    if let Some(path) = std::env::var_os(JOURNAL_ENV) {
        journal_writer(Path::new(&path));
    }
}

/// Commits new executions with outbox entries and timers, never checkpointing (so every
/// commit stays in the `-wal`), until killed.
fn wal_writer(path: &Path) {
    let store = SqliteStore::open(path, SqliteOptions::new().checkpoint_pages(0)).unwrap();
    // Stops by itself (after a minute or 5,000 commits, some 60 MB of WAL), should its parent
    // be gone before killing it.
    let until = Instant::now() + Duration::from_secs(60);
    for i in (1..=5_000).take_while(|_| Instant::now() < until) {
        let mut exe = Execution::new(format!("w-{i:05}"), "written");
        let effects = Effects::new()
            .emit(None, Event::new(format!("w-ev-{i}"), "Ping"))
            .schedule("w.t", 1_900_000_000.0 + i as f64);
        store.commit(&mut exe, &effects).unwrap();
        if i == READY_AFTER {
            println!("READY");
            std::io::stdout().flush().unwrap();
        }
    }
}

/// Switches the file to a rollback journal, then changes every page of a transaction big
/// enough to spill to the file, and waits to be killed with the transaction open.
fn journal_writer(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
        .unwrap();
    conn.execute_batch("PRAGMA cache_size = 2; BEGIN; UPDATE executions SET data = data || ' ';")
        .unwrap();
    conn.cache_flush().unwrap();
    println!("READY");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

/// The store a killed WAL writer left: its `-wal` and `-shm`.
fn wal_crash() -> (TempDir, PathBuf) {
    let (dir, db) = demo();
    kill_writer_when_ready((WRITER_ENV, &db));
    let files = fingerprint(dir.path());
    assert!(
        files.contains_key("store.db-wal") && files.contains_key("store.db-shm"),
        "the killed writer left a -wal and a -shm: {files:?}"
    );
    (dir, db)
}

/// Every read command of the CLI, with arguments that read something of the demo store
/// (`id`: an execution to show and trace).
fn read_commands(db: &Path, id: &str) -> Vec<Vec<String>> {
    let ws = ["--tenant", "acme", "--workspace", "prod"];
    let mut commands: Vec<Vec<&str>> = vec![
        vec!["list", "--all"],
        vec!["list", "--status", "RUNNING"],
        vec!["show", id],
        vec!["trace", id],
        vec!["outbox"],
        vec!["timers"],
        vec!["spawns"],
        vec!["workspaces"],
        vec!["due-runs", "--now", "2030-01-01T00:00:00Z"],
    ];
    for command in [
        "log",
        "runs",
        "dead-letters",
        "leases",
        "cursors",
        "progress",
        "schedules",
        "rules",
    ] {
        commands.push([&[command][..], &ws[..]].concat());
    }
    commands
        .into_iter()
        .map(|args| {
            let mut full = vec!["--db".to_owned(), db.to_str().unwrap().to_owned()];
            full.extend(args.into_iter().map(str::to_owned));
            full
        })
        .collect()
}

/// Runs `execstore args`, killing it after `limit` (a read that wrongly serves or hangs).
fn run_for_at_most(dir: &Path, args: &[String], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(args)
        .current_dir(dir)
        .env_remove("EXECSTORE_DB")
        .env_remove("EXECSTORE_MONITOR_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn run(dir: &Path, args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::execstore(dir, &args)
}

/// Runs every read command (showing and tracing `id`); each must succeed.
fn run_every_read(dir: &Path, db: &Path, id: &str) {
    for args in read_commands(db, id) {
        let out = run(dir, &args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if args.iter().any(|a| a == "show") {
            assert!(String::from_utf8_lossy(&out.stdout).contains(id), "{args:?}");
        }
    }
}

/// Serves the monitor without a token, asks it a few questions, and stops it with Ctrl-C
/// (SIGINT: it closes the store as it exits).
fn ask_the_monitor(db: &Path, id: &str) {
    let mut m = common::start_monitor(&["monitor", "--db", db.to_str().unwrap()], &[]);
    let one = format!("api/executions/{id}");
    for path in ["api/info", "api/executions?limit=5", &one, "api/workspaces"] {
        let answer = m.agent.get(format!("{}{path}", m.url)).call().unwrap();
        assert_eq!(answer.status(), 200, "{path}");
    }
    let pid = m.child.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while m.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the monitor did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `list --all --json` ids of a store that start with `w-` (the killed writer's).
fn written_ids(dir: &Path, db: &Path) -> Vec<String> {
    let out = common::execstore(dir, &["--db", db.to_str().unwrap(), "--json", "list", "--all"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut ids: Vec<String> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["id"].as_str().map(str::to_owned))
        .filter(|id| id.starts_with("w-"))
        .collect();
    ids.sort();
    ids
}

#[test]
fn reads_leave_a_killed_writers_wal_untouched() {
    let (dir, db) = wal_crash();
    let before = fingerprint(dir.path());
    run_every_read(dir.path(), &db, "w-00001");
    assert_untouched(dir.path(), &before, "the read commands");
    ask_the_monitor(&db, "w-00001");
    assert_untouched(dir.path(), &before, "the monitor without a token");
    // And the killed writer's commits are all there to recover, for a writer.
    assert!(written_ids(dir.path(), &db).len() >= READY_AFTER);
}

#[test]
fn reads_leave_a_wal_without_its_shm_untouched() {
    let (dir, db) = wal_crash();
    std::fs::remove_file(dir.path().join("store.db-shm")).unwrap();
    let before = fingerprint(dir.path());
    run_every_read(dir.path(), &db, "w-00001");
    ask_the_monitor(&db, "w-00001");
    assert_untouched(dir.path(), &before, "reads of a -wal without -shm");
}

#[test]
fn reads_see_the_valid_prefix_of_a_damaged_wal_and_leave_it_whole() {
    let (dir, db) = wal_crash();
    // A copy of the file and its -wal (no -shm, so a read must scan the log), with bytes of
    // a frame in the middle flipped.
    let copy = tempfile::tempdir().unwrap();
    let damaged = copy.path().join("store.db");
    std::fs::copy(&db, &damaged).unwrap();
    let mut wal = std::fs::read(dir.path().join("store.db-wal")).unwrap();
    let full = written_ids(dir.path(), &db);
    let frame = 24 + 4096;
    let frames = (wal.len() - 32) / frame;
    let middle = 32 + (frames / 2) * frame + 24 + 1000;
    for byte in &mut wal[middle..middle + 8] {
        *byte ^= 0xa5;
    }
    std::fs::write(copy.path().join("store.db-wal"), &wal).unwrap();
    let before = fingerprint(copy.path());

    let seen = written_ids(copy.path(), &damaged);
    assert!(
        !seen.is_empty() && seen.len() < full.len() && full[..seen.len()] == seen[..],
        "a read sees the commits before the damaged frame, and only them: {} of {}",
        seen.len(),
        full.len()
    );
    run_every_read(copy.path(), &damaged, "w-00001");
    ask_the_monitor(&damaged, "w-00001");
    assert_untouched(copy.path(), &before, "reads of a damaged -wal");
    assert_eq!(
        written_ids(copy.path(), &damaged),
        seen,
        "the frames after the damage are still unread, not lost"
    );
}

#[test]
fn reads_refuse_a_hot_journal_and_leave_it_to_roll_back() {
    let (dir, db) = demo();
    kill_writer_when_ready((JOURNAL_ENV, &db));
    let before = fingerprint(dir.path());
    assert!(before.contains_key("store.db-journal"), "{before:?}");
    let refusal = "hot rollback journal";
    let mut every = read_commands(&db, "w-00001");
    every.push(vec![
        "--db".into(),
        db.to_str().unwrap().into(),
        "monitor".into(),
        "--port".into(),
        "0".into(),
    ]);
    for args in every {
        let out = run_for_at_most(dir.path(), &args, Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} read a file with a hot journal");
        assert!(
            stderr.contains(refusal) && stderr.contains("read-write"),
            "{args:?}: {stderr}"
        );
    }
    assert_untouched(dir.path(), &before, "reads of a file with a hot journal");
    // A write command rolls it back first (and then says what it says of an unknown id).
    let out = common::execstore(
        dir.path(),
        &["--db", db.to_str().unwrap(), "suspend", "no-such-execution"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(refusal), "{stderr}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM executions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 40, "a read-write open rolled the transaction back");
    drop(conn);
    assert!(!dir.path().join("store.db-journal").exists());
}

/// Runs `sh -c script` in a private mount namespace (`unshare -m`), or `None` when this
/// machine cannot make one (not root, or no such right in a container).
fn in_mount_namespace(script: &str) -> Option<Output> {
    let probe = Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs none /mnt 2>/dev/null || exit 3"])
        .output()
        .ok()?;
    if !probe.status.success() {
        return None;
    }
    Some(
        Command::new("unshare")
            .args(["-m", "sh", "-c", script])
            .output()
            .unwrap(),
    )
}

/// Runs every read command on `src` (a directory with `store.db`) mounted read-only, in a
/// private mount namespace; returns the outputs (`None`: cannot simulate).
fn reads_on_read_only_media(src: &Path, id: &str) -> Option<Vec<(Vec<String>, Output)>> {
    let mnt = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for args in read_commands(&mnt.path().join("store.db"), id) {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
        let script = format!(
            "mount --bind '{src}' '{mnt}' && mount -o remount,bind,ro '{mnt}' && \
             touch '{mnt}/probe' 2>/dev/null && {{ echo 'the mount is writable' >&2; exit 97; }}; \
             cd / && exec env -u EXECSTORE_DB '{bin}' {args}",
            src = src.display(),
            mnt = mnt.path().display(),
            bin = env!("CARGO_BIN_EXE_execstore"),
            args = quoted.join(" "),
        );
        let out = in_mount_namespace(&script)?;
        assert_ne!(out.status.code(), Some(97), "the read-only mount was writable");
        outputs.push((args, out));
    }
    Some(outputs)
}

#[test]
fn reads_work_on_read_only_media_and_leave_nothing_behind() {
    // A clean file (no sidecars) and a killed writer's file with its -wal and -shm are read;
    // a -wal without a -shm, which cannot be made there, is refused plainly.
    let (clean_dir, clean) = demo();
    let clean_id = first_id(clean_dir.path(), &clean);
    let (wal_dir, _) = wal_crash();
    let (no_shm_dir, _) = wal_crash();
    std::fs::remove_file(no_shm_dir.path().join("store.db-shm")).unwrap();
    for (dir, id, expect) in [
        (&clean_dir, clean_id.as_str(), Ok(())),
        (&wal_dir, "w-00001", Ok(())),
        (&no_shm_dir, "w-00001", Err(())),
    ] {
        let before = fingerprint(dir.path());
        let Some(outputs) = reads_on_read_only_media(dir.path(), id) else {
            execstore_skip("no private mount namespace here (unshare -m needs root)");
            return;
        };
        for (args, out) in outputs {
            let stderr = String::from_utf8_lossy(&out.stderr);
            match expect {
                Ok(()) => assert!(out.status.success(), "{args:?}: {stderr}"),
                Err(_) => {
                    assert!(!out.status.success(), "{args:?}");
                    assert!(
                        stderr.contains("-shm index") && stderr.contains("copy"),
                        "{args:?}: {stderr}"
                    );
                }
            }
        }
        assert_eq!(
            fingerprint(dir.path()),
            before,
            "read-only media: nothing changed"
        );
    }
}

/// Runs `execstore args` as the unprivileged user `nobody` (`setpriv`), or `None` when this
/// process cannot switch users.
fn as_nobody(dir: &Path, args: &[String]) -> Option<Output> {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_execstore"))
        .args(args)
        .current_dir(dir)
        .env_remove("EXECSTORE_DB")
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("setpriv:") {
        return None;
    }
    Some(out)
}

#[test]
fn a_0444_file_in_a_directory_its_reader_cannot_write_is_read() {
    use std::os::unix::fs::PermissionsExt as _;
    let (clean_dir, clean) = demo();
    let clean_id = first_id(clean_dir.path(), &clean);
    let (wal_dir, wal) = wal_crash();
    for (dir, db, id) in [
        (&clean_dir, &clean, clean_id.as_str()),
        (&wal_dir, &wal, "w-00001"),
    ] {
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
        // nobody may enter the directory and read the files, not write either.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
        let before = fingerprint(dir.path());
        for args in read_commands(db, id) {
            let Some(out) = as_nobody(dir.path(), &args) else {
                execstore_skip("cannot run as nobody here (setpriv needs root)");
                return;
            };
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(
            fingerprint(dir.path()),
            before,
            "an unwritable directory: nothing changed"
        );
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The first execution id `list` prints.
fn first_id(dir: &Path, db: &Path) -> String {
    let out = common::execstore(
        dir,
        &["--db", db.to_str().unwrap(), "--json", "list", "--limit", "1"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    page["items"][0]["id"].as_str().unwrap().to_owned()
}

#[test]
fn reading_a_clean_file_creates_no_sidecar_and_then_follows_a_writer() {
    let (dir, db) = demo();
    let id = first_id(dir.path(), &db);
    let before = fingerprint(dir.path());
    run_every_read(dir.path(), &db, &id);
    assert_eq!(
        fingerprint(dir.path()),
        before,
        "a read of a clean file created no -wal or -shm"
    );

    // The monitor reads the file as it is, then follows a writer that opens it.
    let m = common::start_monitor(&["monitor", "--db", db.to_str().unwrap()], &[]);
    let get = |path: &str| m.agent.get(format!("{}{path}", m.url)).call().unwrap().status();
    assert_eq!(get("api/executions/late-1"), 404);
    assert_eq!(fingerprint(dir.path()), before, "the monitor created no sidecar");
    let writer = SqliteStore::open(&db, SqliteOptions::new()).unwrap();
    writer
        .commit(&mut Execution::new("late-1", "late"), &Effects::new())
        .unwrap();
    assert_eq!(
        get("api/executions/late-1"),
        200,
        "the monitor follows the writer"
    );
    writer
        .commit(&mut Execution::new("late-2", "late"), &Effects::new())
        .unwrap();
    assert_eq!(get("api/executions/late-2"), 200);
}

/// A skip, counted as such: the line the test suite's summary counts.
fn execstore_skip(reason: &str) {
    let thread = std::thread::current();
    eprintln!("SKIPPED: {}: {reason}", thread.name().unwrap_or("?"));
}

/// A file whose trigger a hand dropped (which a writer's open makes again, `mend.rs`) is
/// read, by every read command and the monitor without a token, byte for byte untouched:
/// the mending is a writer's. A command that writes then makes the trigger again.
#[test]
fn reads_leave_a_file_missing_a_trigger_untouched_and_a_writer_mends_it() {
    let (dir, db) = demo();
    let id = first_id(dir.path(), &db);
    let count_trigger = || -> i64 {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'execstore_keys_update'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("DROP TRIGGER execstore_keys_update")
        .unwrap();
    let before = fingerprint(dir.path());
    run_every_read(dir.path(), &db, &id);
    assert_untouched(dir.path(), &before, "reads of a file missing a trigger");
    ask_the_monitor(&db, &id);
    assert_untouched(dir.path(), &before, "the monitor on a file missing a trigger");
    assert_eq!(count_trigger(), 0);
    // `resume` opens the store for writing (and then finds no such execution).
    let out = common::execstore(
        dir.path(),
        &["--db", db.to_str().unwrap(), "resume", "no-such-id"],
    );
    assert!(!out.status.success());
    assert_eq!(count_trigger(), 1, "the writer's open made the trigger again");
}
