//! Raw-SQL helpers shared by the integration tests: a content dump of a SQLite file, its
//! integrity check, and a snapshot of its bytes.
#![allow(dead_code)] // each test crate uses a part of this module

use std::path::{Path, PathBuf};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

/// A read-only raw connection to the file (it never writes the database or its WAL).
pub fn raw_readonly(path: &Path) -> Connection {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap_or_else(|e| panic!("open {} read-only: {e}", path.display()))
}

/// A read-write raw connection, for deliberate damage.
pub fn raw_readwrite(path: &Path) -> Connection {
    Connection::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// `PRAGMA integrity_check`: `"ok"` for a sound file.
pub fn integrity_check(path: &Path) -> String {
    let conn = raw_readonly(path);
    let rows: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .expect("integrity_check");
    rows.join("\n")
}

fn show(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => format!("int:{i}"),
        // The bits too: two REALs that print alike are still told apart.
        ValueRef::Real(f) => format!("real:{f:?}/{:016x}", f.to_bits()),
        ValueRef::Text(t) => format!("text:{:?}", String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => format!("blob:{b:02x?}"),
    }
}

/// Every schema entry and every row of every table (`sqlite_sequence` included), in a fixed
/// order: tables by name, rows by all their columns. Two files with the same dump hold the
/// same data.
pub fn dump(path: &Path) -> Vec<String> {
    let conn = raw_readonly(path);
    let mut out = Vec::new();
    let schema: Vec<(String, String, Option<String>)> = conn
        .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        .and_then(|mut st| {
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .expect("read sqlite_master");
    for (kind, name, sql) in &schema {
        out.push(format!("schema {kind} {name}: {}", sql.as_deref().unwrap_or("-")));
    }
    for (_, table, _) in schema.iter().filter(|(kind, _, _)| kind == "table") {
        let columns = conn
            .prepare(&format!("SELECT * FROM \"{table}\""))
            .expect("select")
            .column_count();
        let order: Vec<String> = (1..=columns).map(|i| i.to_string()).collect();
        let sql = format!("SELECT * FROM \"{table}\" ORDER BY {}", order.join(", "));
        let mut st = conn.prepare(&sql).expect("select ordered");
        let mut rows = st.query([]).expect("query");
        let mut count = 0;
        while let Some(row) = rows.next().expect("row") {
            let cells: Vec<String> = (0..columns)
                .map(|i| show(row.get_ref(i).expect("cell")))
                .collect();
            out.push(format!("{table}: {}", cells.join(" | ")));
            count += 1;
        }
        out.push(format!("{table}: {count} rows"));
    }
    out
}

/// The bytes of the database file and of its `-wal` file (`None` when there is none).
#[derive(PartialEq, Eq)]
pub struct FileBytes {
    /// The main database file.
    pub db: Vec<u8>,
    /// The write-ahead log.
    pub wal: Option<Vec<u8>>,
}

impl FileBytes {
    /// Reads both files now.
    pub fn of(path: &Path) -> FileBytes {
        let mut wal = PathBuf::from(path).into_os_string();
        wal.push("-wal");
        FileBytes {
            db: std::fs::read(path).expect("read db file"),
            wal: std::fs::read(wal).ok(),
        }
    }

    /// Sizes, for messages.
    pub fn describe(&self) -> String {
        format!(
            "db {} bytes, wal {:?} bytes",
            self.db.len(),
            self.wal.as_ref().map(Vec::len)
        )
    }
}

/// The lines in which two dumps differ (up to 20), for a legible failure.
pub fn dump_diff(before: &[String], after: &[String]) -> String {
    let mut lines = Vec::new();
    for l in before.iter().filter(|l| !after.contains(l)).take(10) {
        lines.push(format!("- {l}"));
    }
    for l in after.iter().filter(|l| !before.contains(l)).take(10) {
        lines.push(format!("+ {l}"));
    }
    lines.join("\n")
}
