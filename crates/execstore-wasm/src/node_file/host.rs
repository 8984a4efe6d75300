//! What the package's Node entry hands in: Node's `fs`, `path` and `process`, called
//! synchronously. The wasm imports none of them itself (the package is built with
//! `wasm-bindgen --target web`, and the browser build must not reference `node:fs`):
//! `npm/node.js` passes them to `installNodeFileSystem` once, at import.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Reflect;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::errors::{backend, describe, WasmError};

#[wasm_bindgen]
extern "C" {
    /// Node's `fs` module (the `*Sync` functions only).
    pub type NodeFs;

    #[wasm_bindgen(method, catch, js_name = openSync)]
    fn open_sync(this: &NodeFs, path: &str, flags: f64, mode: f64) -> Result<f64, JsValue>;
    #[wasm_bindgen(method, catch, js_name = closeSync)]
    fn close_sync(this: &NodeFs, fd: f64) -> Result<(), JsValue>;
    // Slices are passed as views of wasm memory made right before the call: nothing is
    // copied, and nothing in the call allocates in wasm memory (which would move them).
    #[wasm_bindgen(method, catch, js_name = readSync)]
    fn read_sync(
        this: &NodeFs,
        fd: f64,
        buffer: &mut [u8],
        offset: f64,
        length: f64,
        position: f64,
    ) -> Result<f64, JsValue>;
    #[wasm_bindgen(method, catch, js_name = writeSync)]
    fn write_sync(
        this: &NodeFs,
        fd: f64,
        buffer: &[u8],
        offset: f64,
        length: f64,
        position: f64,
    ) -> Result<f64, JsValue>;
    #[wasm_bindgen(method, catch, js_name = fsyncSync)]
    fn fsync_sync(this: &NodeFs, fd: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = fdatasyncSync)]
    fn fdatasync_sync(this: &NodeFs, fd: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = ftruncateSync)]
    fn ftruncate_sync(this: &NodeFs, fd: f64, length: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = fstatSync)]
    fn fstat_sync(this: &NodeFs, fd: f64) -> Result<Stats, JsValue>;
    #[wasm_bindgen(method, catch, js_name = statSync)]
    fn stat_sync(this: &NodeFs, path: &str) -> Result<Stats, JsValue>;
    #[wasm_bindgen(method, catch, js_name = unlinkSync)]
    fn unlink_sync(this: &NodeFs, path: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = linkSync)]
    fn link_sync(this: &NodeFs, existing: &str, new_path: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = readFileSync)]
    fn read_file_sync(this: &NodeFs, path: &str, encoding: &str) -> Result<String, JsValue>;
    #[wasm_bindgen(method, catch, js_name = readdirSync)]
    fn readdir_sync(this: &NodeFs, path: &str) -> Result<js_sys::Array, JsValue>;

    /// `fs.Stats`.
    pub type Stats;
    #[wasm_bindgen(method, getter)]
    fn size(this: &Stats) -> f64;
    #[wasm_bindgen(method, getter)]
    fn mode(this: &Stats) -> f64;
    #[wasm_bindgen(method, js_name = isFile)]
    fn is_file(this: &Stats) -> bool;
    #[wasm_bindgen(method, js_name = isDirectory)]
    fn is_directory(this: &Stats) -> bool;

    /// Node's `path` module.
    pub type NodePath;
    #[wasm_bindgen(method, catch)]
    fn resolve(this: &NodePath, path: &str) -> Result<String, JsValue>;
    #[wasm_bindgen(method)]
    fn dirname(this: &NodePath, path: &str) -> String;
    #[wasm_bindgen(method)]
    fn basename(this: &NodePath, path: &str) -> String;

    /// Node's `process`.
    pub type NodeProcess;
    #[wasm_bindgen(method, getter)]
    fn pid(this: &NodeProcess) -> f64;
    #[wasm_bindgen(method, catch)]
    fn kill(this: &NodeProcess, pid: f64, signal: f64) -> Result<bool, JsValue>;
}

/// A failed `fs` call: Node's error code (`ENOENT`, `EACCES`...) and its message.
#[derive(Debug, Clone)]
pub(crate) struct FsError {
    pub(crate) code: String,
    pub(crate) message: String,
}

impl FsError {
    fn from_js(error: JsValue) -> FsError {
        let code = Reflect::get(&error, &"code".into())
            .ok()
            .and_then(|c| c.as_string())
            .unwrap_or_default();
        FsError {
            code,
            message: describe(&error),
        }
    }

    pub(crate) fn is(&self, code: &str) -> bool {
        self.code == code
    }
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

type FsResult<T> = Result<T, FsError>;

/// What a file's metadata says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileStat {
    pub(crate) size: u64,
    pub(crate) mode: u32,
    pub(crate) is_file: bool,
    pub(crate) is_directory: bool,
}

impl From<Stats> for FileStat {
    fn from(s: Stats) -> Self {
        FileStat {
            size: s.size() as u64,
            mode: s.mode() as u32,
            is_file: s.is_file(),
            is_directory: s.is_directory(),
        }
    }
}

/// Node's file system, path functions and process, with the open flags of this platform.
pub(crate) struct Host {
    fs: NodeFs,
    path: NodePath,
    process: NodeProcess,
    o_rdonly: f64,
    o_rdwr: f64,
    o_creat: f64,
    o_excl: f64,
}

thread_local! {
    /// The host `npm/node.js` installed; none in a browser.
    static HOST: RefCell<Option<Rc<Host>>> = const { RefCell::new(None) };
}

/// Installs `{fs, path, process}` (Node's modules) as the host of file stores.
pub(crate) fn install(value: &JsValue) -> Result<(), WasmError> {
    let get = |object: &JsValue, key: &str| -> Result<JsValue, WasmError> {
        let value = Reflect::get(object, &key.into()).map_err(|e| backend(describe(&e)))?;
        if value.is_undefined() || value.is_null() {
            return Err(backend(format!("the Node host lacks `{key}`")));
        }
        Ok(value)
    };
    let fs = get(value, "fs")?;
    let constants = get(&fs, "constants")?;
    let flag = |name: &str| -> Result<f64, WasmError> {
        get(&constants, name)?
            .as_f64()
            .ok_or_else(|| backend(format!("fs.constants.{name} is not a number")))
    };
    let host = Host {
        o_rdonly: flag("O_RDONLY")?,
        o_rdwr: flag("O_RDWR")?,
        o_creat: flag("O_CREAT")?,
        o_excl: flag("O_EXCL")?,
        fs: fs.unchecked_into(),
        path: get(value, "path")?.unchecked_into(),
        process: get(value, "process")?.unchecked_into(),
    };
    HOST.with(|h| *h.borrow_mut() = Some(Rc::new(host)));
    Ok(())
}

/// The installed host; `BACKEND` outside Node.
pub(crate) fn host() -> Result<Rc<Host>, WasmError> {
    HOST.with(|h| h.borrow().clone()).ok_or_else(|| {
        backend(
            "file stores need Node.js: import the package in Node (its \"node\" export installs the file system)",
        )
    })
}

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Open {
    /// Read only; the file must exist.
    Read,
    /// Read and write; the file must exist.
    Write,
    /// Read and write, created if missing.
    Create,
    /// Read and write, created; fails if it exists.
    CreateNew,
}

impl Host {
    pub(crate) fn open(&self, path: &str, how: Open) -> FsResult<f64> {
        let flags = match how {
            Open::Read => self.o_rdonly,
            Open::Write => self.o_rdwr,
            Open::Create => self.o_rdwr + self.o_creat,
            Open::CreateNew => self.o_rdwr + self.o_creat + self.o_excl,
        };
        self.fs
            .open_sync(path, flags, f64::from(0o644))
            .map_err(FsError::from_js)
    }

    pub(crate) fn close(&self, fd: f64) -> FsResult<()> {
        self.fs.close_sync(fd).map_err(FsError::from_js)
    }

    /// Reads at `position` until `buffer` is full or the file ends; the bytes read.
    pub(crate) fn read_at(&self, fd: f64, buffer: &mut [u8], position: u64) -> FsResult<usize> {
        let mut done = 0;
        while done < buffer.len() {
            let rest = &mut buffer[done..];
            let len = rest.len() as f64;
            let n = self
                .fs
                .read_sync(fd, rest, 0.0, len, (position + done as u64) as f64)
                .map_err(FsError::from_js)? as usize;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    /// Writes all of `bytes` at `position`.
    pub(crate) fn write_at(&self, fd: f64, bytes: &[u8], position: u64) -> FsResult<()> {
        let mut done = 0;
        while done < bytes.len() {
            let rest = &bytes[done..];
            let n = self
                .fs
                .write_sync(fd, rest, 0.0, rest.len() as f64, (position + done as u64) as f64)
                .map_err(FsError::from_js)? as usize;
            if n == 0 {
                return Err(FsError {
                    code: "EIO".into(),
                    message: "write wrote nothing".into(),
                });
            }
            done += n;
        }
        Ok(())
    }

    pub(crate) fn fsync(&self, fd: f64, data_only: bool) -> FsResult<()> {
        if data_only {
            self.fs.fdatasync_sync(fd).map_err(FsError::from_js)
        } else {
            self.fs.fsync_sync(fd).map_err(FsError::from_js)
        }
    }

    pub(crate) fn truncate(&self, fd: f64, size: u64) -> FsResult<()> {
        self.fs.ftruncate_sync(fd, size as f64).map_err(FsError::from_js)
    }

    pub(crate) fn fstat(&self, fd: f64) -> FsResult<FileStat> {
        self.fs
            .fstat_sync(fd)
            .map(FileStat::from)
            .map_err(FsError::from_js)
    }

    /// The file's metadata; `None` if it does not exist.
    pub(crate) fn stat(&self, path: &str) -> FsResult<Option<FileStat>> {
        match self.fs.stat_sync(path).map_err(FsError::from_js) {
            Ok(s) => Ok(Some(s.into())),
            Err(e) if e.is("ENOENT") => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(crate) fn unlink(&self, path: &str) -> FsResult<()> {
        self.fs.unlink_sync(path).map_err(FsError::from_js)
    }

    pub(crate) fn link(&self, existing: &str, new_path: &str) -> FsResult<()> {
        self.fs.link_sync(existing, new_path).map_err(FsError::from_js)
    }

    pub(crate) fn read_text(&self, path: &str) -> FsResult<String> {
        self.fs.read_file_sync(path, "utf8").map_err(FsError::from_js)
    }

    /// The names in the directory `path`.
    pub(crate) fn list(&self, path: &str) -> FsResult<Vec<String>> {
        let names = self.fs.readdir_sync(path).map_err(FsError::from_js)?;
        Ok(names.iter().filter_map(|n| n.as_string()).collect())
    }

    /// Puts the directory's entries (a file created or removed in it) on the device.
    pub(crate) fn sync_directory(&self, dir: &str) -> FsResult<()> {
        let fd = self.open(dir, Open::Read)?;
        let synced = self.fsync(fd, false);
        let closed = self.close(fd);
        synced.and(closed)
    }

    /// `path` made absolute against the working directory, normalized.
    pub(crate) fn resolve(&self, path: &str) -> FsResult<String> {
        self.path.resolve(path).map_err(FsError::from_js)
    }

    pub(crate) fn dirname(&self, path: &str) -> String {
        self.path.dirname(path)
    }

    pub(crate) fn basename(&self, path: &str) -> String {
        self.path.basename(path)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.process.pid() as u32
    }

    /// `process.kill(pid, 0)`: `Ok` if a process `pid` exists (`EPERM`: it exists, another
    /// user's), else Node's error.
    pub(crate) fn signal_zero(&self, pid: u32) -> FsResult<()> {
        match self.process.kill(f64::from(pid), 0.0).map_err(FsError::from_js) {
            Ok(_) => Ok(()),
            Err(e) if e.is("EPERM") => Ok(()),
            Err(e) => Err(e),
        }
    }
}
