//! How to type `execstore` where the user is, for the commands the CLI prints (the demo's
//! "try:" line): `execstore` when that name on `PATH` is this binary; the `cargo run` form
//! when cargo ran it (`cargo run` sets `CARGO` and the binary sits in cargo's
//! `target/<profile>/`); otherwise the binary's own path.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The words that run this binary, shell-quoted, for this process.
pub fn invocation() -> String {
    let exe = std::env::current_exe().ok();
    let path = std::env::var_os("PATH");
    let cargo = std::env::var_os("CARGO");
    invocation_for(exe.as_deref(), path.as_deref(), cargo.as_deref())
}

/// [`invocation`] for a binary at `exe`, a `PATH` and cargo's `CARGO` variable.
pub fn invocation_for(exe: Option<&Path>, path: Option<&OsStr>, cargo: Option<&OsStr>) -> String {
    let Some(exe) = exe else {
        return "execstore".to_owned();
    };
    if on_path(exe, path) {
        return "execstore".to_owned();
    }
    if cargo.is_some() {
        if let Some(profile) = cargo_profile(exe) {
            return match profile.as_str() {
                "debug" => "cargo run -p execstore-cli --".to_owned(),
                "release" => "cargo run --release -p execstore-cli --".to_owned(),
                other => format!(
                    "cargo run --profile {} -p execstore-cli --",
                    crate::shell_word(other)
                ),
            };
        }
    }
    crate::shell_word(&exe.display().to_string())
}

/// Whether `execstore` on `path` is the binary `exe`.
fn on_path(exe: &Path, path: Option<&OsStr>) -> bool {
    let Some(path) = path else {
        return false;
    };
    let exe = canonical(exe);
    std::env::split_paths(path)
        .map(|dir| dir.join(format!("execstore{}", std::env::consts::EXE_SUFFIX)))
        .find(|candidate| candidate.is_file())
        .is_some_and(|found| canonical(&found) == exe)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned())
}

/// The profile of a binary cargo built: `target/<profile>/execstore` (or
/// `target/<triple>/<profile>/execstore`), the folder above holding cargo's `CACHEDIR.TAG`
/// or being named `target`.
fn cargo_profile(exe: &Path) -> Option<String> {
    let profile_dir = exe.parent()?;
    let profile = profile_dir.file_name()?.to_str()?.to_owned();
    let above = profile_dir.parent()?;
    let in_target =
        |dir: &Path| dir.join("CACHEDIR.TAG").is_file() || dir.file_name() == Some(OsStr::new("target"));
    (in_target(above) || above.parent().is_some_and(in_target)).then_some(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let exe = dir.join(format!("execstore{}", std::env::consts::EXE_SUFFIX));
        std::fs::write(&exe, b"").unwrap();
        exe
    }

    #[test]
    fn cargo_run_prints_the_cargo_form_with_its_profile() {
        let tmp = tempfile::tempdir().unwrap();
        let cargo = Some(OsStr::new("cargo"));
        let release = bin(&tmp.path().join("target/release"));
        assert_eq!(
            invocation_for(Some(&release), None, cargo),
            "cargo run --release -p execstore-cli --"
        );
        let debug = bin(&tmp.path().join("target/debug"));
        assert_eq!(
            invocation_for(Some(&debug), None, cargo),
            "cargo run -p execstore-cli --"
        );
        // Not run by cargo: the binary's path, which runs from anywhere.
        assert_eq!(
            invocation_for(Some(&release), None, None),
            release.display().to_string()
        );
    }

    #[test]
    fn on_path_it_is_execstore_and_elsewhere_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        let installed = bin(&tmp.path().join("bin"));
        let path = std::env::join_paths([tmp.path().join("nothing"), tmp.path().join("bin")]).unwrap();
        assert_eq!(invocation_for(Some(&installed), Some(&path), None), "execstore");
        // Another `execstore` first on PATH is not this one.
        let other = bin(&tmp.path().join("opt dir"));
        assert_eq!(
            invocation_for(Some(&other), Some(&path), Some(OsStr::new("cargo"))),
            format!("'{}'", other.display())
        );
    }
}
