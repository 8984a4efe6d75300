//! One process owns a store file at a time: the lock file `<file>-lock`.
//!
//! Node has no file locks, so ownership is a file that only one opener can create: the
//! owner's record (`{"pid":..,"start":..,"nonce":..}`) is written to a private temporary
//! file, synced, and hard-linked as `<file>-lock`; `link` fails if the name exists, so of two
//! openers one wins, and the lock file is never seen half written. Closing the store
//! removes it.
//!
//! A lock file whose process is gone (killed with SIGKILL, or ended without closing) is
//! stale: its `pid` no longer exists (`process.kill(pid, 0)` fails with `ESRCH`), or the
//! process now at that pid started at another time than the record says (`/proc/<pid>/stat`,
//! where there is one: a pid reused, as by a container's pid 1). A live process, this one
//! included, keeps its lock: a second opener in the same process gets `LOCKED` too.
//!
//! Taking a stale lock over is safe against other openers doing the same: to remove the
//! lock file holding nonce `N`, an opener must first own the guard `<file>-lock.break-N`
//! (taken the same way, so a guard left by a killed breaker is itself broken the same way,
//! a few levels at most). Only the guard's owner removes a lock file with nonce `N`, and it
//! reads the file again under the guard first: a file with another nonce (someone's new
//! lock) is never removed. Guards and temporary files a killed opener left behind are
//! removed by the next owner.

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::host::{FsError, Host, Open};
use crate::errors::{backend, invalid, WasmError};

/// How deep a guard of a guard of ... a stale lock goes before the opener gives up for now.
const MAX_DEPTH: u32 = 4;

/// What a lock file holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Owner {
    pid: u32,
    /// The process's start time (`/proc/<pid>/stat`'s field 22), where known.
    start: Option<u64>,
    nonce: String,
}

/// A held lock file, removed when dropped.
pub(crate) struct FileLock {
    host: Rc<Host>,
    path: String,
    text: String,
}

/// Who holds a lock this opener did not get.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held {
    /// The holder's pid; `None` while a stale lock is being taken over by another opener.
    pub(crate) pid: Option<u32>,
}

/// The lock file of the store file `db`.
pub(crate) fn lock_path(db: &str) -> String {
    format!("{db}-lock")
}

impl FileLock {
    /// Takes the lock of the store file `db` (an absolute path) if it is free or stale now.
    pub(crate) fn try_take(host: &Rc<Host>, db: &str) -> Result<Result<FileLock, Held>, WasmError> {
        let path = lock_path(db);
        let taken = take(host, &path, 0)?;
        if taken.is_ok() {
            clean_leftovers(host, &path);
        }
        Ok(taken)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        release(&self.host, &self.path, &self.text);
    }
}

fn nonce() -> String {
    let random = (js_sys::Math::random() * 9_007_199_254_740_991.0) as u64;
    let now = js_sys::Date::now() as u64;
    format!("{now:x}{random:x}")
}

/// This process's start time, where `/proc` tells it.
fn start_of(host: &Host, pid: u32) -> Option<u64> {
    let stat = host.read_text(&format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses; the fields after
    // its last ')' are 3 onwards, and the start time is field 22.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Whether the process that wrote `owner` still runs.
fn alive(host: &Host, owner: &Owner) -> bool {
    match host.signal_zero(owner.pid) {
        Err(e) if e.is("ESRCH") => false,
        // EPERM is a live process (handled by signal_zero); anything else: assume alive.
        Err(_) => true,
        Ok(()) => match (owner.start, start_of(host, owner.pid)) {
            (Some(recorded), Some(now)) => recorded == now,
            _ => true,
        },
    }
}

fn locked_io(path: &str, e: FsError) -> WasmError {
    if e.is("EACCES") || e.is("EPERM") || e.is("EROFS") {
        invalid(
            "path",
            format!("cannot create the lock file {path:?} (the directory is not writable): {e}"),
        )
    } else {
        backend(format!("lock file {path:?}: {e}"))
    }
}

/// Reads a lock file: `Ok(None)` if it is gone.
fn read(host: &Host, path: &str) -> Result<Option<(String, Owner)>, WasmError> {
    let text = match host.read_text(path) {
        Ok(text) => text,
        Err(e) if e.is("ENOENT") => return Ok(None),
        Err(e) => return Err(locked_io(path, e)),
    };
    let owner = serde_json::from_str(&text).map_err(|_| {
        invalid(
            "path",
            format!("{path:?} is not an execstore lock file: remove it if no process has the store open"),
        )
    })?;
    Ok(Some((text, owner)))
}

/// Writes `text` to the new file `path` and puts it on the device.
fn write_new(host: &Host, path: &str, text: &str) -> Result<(), FsError> {
    let fd = host.open(path, Open::CreateNew)?;
    let written = host
        .write_at(fd, text.as_bytes(), 0)
        .and_then(|()| host.fsync(fd, false));
    let closed = host.close(fd);
    if written.is_err() || closed.is_err() {
        let _ = host.unlink(path);
    }
    written.and(closed)
}

/// Takes the lock file `path` (a store's, or a guard at `depth` > 0).
fn take(host: &Rc<Host>, path: &str, depth: u32) -> Result<Result<FileLock, Held>, WasmError> {
    let me = Owner {
        pid: host.pid(),
        start: start_of(host, host.pid()),
        nonce: nonce(),
    };
    let text = serde_json::to_string(&me).map_err(|e| backend(e.to_string()))?;
    let tmp = format!("{path}.tmp-{}", me.nonce);
    let dir = host.dirname(path);
    let mut outcome = Err(Held { pid: None });
    for _ in 0..8 {
        write_new(host, &tmp, &text).map_err(|e| locked_io(&tmp, e))?;
        let linked = host.link(&tmp, path);
        let _ = host.unlink(&tmp);
        match linked {
            Ok(()) => {
                // The new name on the device too, before the store counts as owned.
                host.sync_directory(&dir).map_err(|e| locked_io(&dir, e))?;
                return Ok(Ok(FileLock {
                    host: host.clone(),
                    path: path.to_owned(),
                    text,
                }));
            }
            // Our temporary file was removed by an owner cleaning up: write it again.
            Err(e) if e.is("ENOENT") => continue,
            Err(e) if e.is("EEXIST") => {}
            Err(e) => return Err(locked_io(path, e)),
        }
        let Some((held_text, holder)) = read(host, path)? else {
            continue;
        };
        if alive(host, &holder) {
            return Ok(Err(Held {
                pid: Some(holder.pid),
            }));
        }
        if !break_stale(host, path, &held_text, &holder, depth)? {
            return Ok(outcome);
        }
        outcome = Err(Held { pid: None });
    }
    Ok(outcome)
}

/// Removes the stale lock file `path` if it still holds `stale`, under the guard of its
/// nonce; `false` if another opener is doing it.
fn break_stale(
    host: &Rc<Host>,
    path: &str,
    stale: &str,
    holder: &Owner,
    depth: u32,
) -> Result<bool, WasmError> {
    if depth >= MAX_DEPTH {
        return Ok(false);
    }
    let guard = format!("{path}.break-{}", holder.nonce);
    let Ok(guard) = take(host, &guard, depth + 1)? else {
        return Ok(false);
    };
    // Under the guard no one else removes a file holding this nonce, and the dead holder
    // cannot: if it still holds it, it is the stale lock.
    if let Some((text, _)) = read(host, path)? {
        if text == stale {
            match host.unlink(path) {
                Ok(()) => {}
                Err(e) if e.is("ENOENT") => {}
                Err(e) => return Err(locked_io(path, e)),
            }
        }
    }
    drop(guard);
    Ok(true)
}

/// Removes the lock file `path` if it is still ours.
fn release(host: &Host, path: &str, text: &str) {
    if let Ok(Some((held, _))) = read(host, path) {
        if held == text {
            let _ = host.unlink(path);
        }
    }
}

/// Removes the temporary files and guards of earlier openers of `lock` (a lock is held now,
/// so none of them can matter: a guard is for a lock file that is gone).
fn clean_leftovers(host: &Host, lock: &str) {
    let dir = host.dirname(lock);
    let prefix = format!("{}.", host.basename(lock));
    if let Ok(names) = host.list(&dir) {
        for name in names.iter().filter(|n| n.starts_with(&prefix)) {
            let rest = &name[prefix.len()..];
            if rest.starts_with("tmp-") || rest.starts_with("break-") {
                let _ = host.unlink(&format!("{dir}/{name}"));
            }
        }
    }
}
