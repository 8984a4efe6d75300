//! What the CLI's integration tests share: running the `execstore` binary, and a monitor it
//! serves on a free port (killed when dropped). Each test crate uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// Runs `execstore args` in `dir` without any EXECSTORE_DB from the caller's environment.
pub fn execstore(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(args)
        .current_dir(dir)
        .env_remove("EXECSTORE_DB")
        .output()
        .expect("run execstore")
}

/// A running monitor: killed when dropped. Each test crate adds the requests it needs in an
/// `impl Monitor` of its own.
pub struct Monitor {
    pub child: Child,
    /// `http://127.0.0.1:PORT/`, as the monitor printed it.
    pub url: String,
    /// An agent that answers every status (a 4xx is an answer, not an error).
    pub agent: ureq::Agent,
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `execstore args --port 0` (with `env` set, and neither EXECSTORE_DB nor a token
/// from the caller's environment) and waits for the URL it prints; panics with its stderr if
/// it prints none.
pub fn start_monitor(args: &[&str], env: &[(&str, &str)]) -> Monitor {
    let mut command = Command::new(env!("CARGO_BIN_EXE_execstore"));
    command
        .args(args)
        .args(["--port", "0"])
        .env_remove("EXECSTORE_DB")
        .env_remove("EXECSTORE_MONITOR_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("run execstore");
    let stdout = child.stdout.take().expect("stdout is piped");
    let url = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.strip_prefix("monitor: ")
                .and_then(|rest| rest.split_whitespace().next())
                .map(str::to_owned)
        });
    let Some(url) = url else {
        let out = child.wait_with_output().expect("wait for execstore");
        panic!(
            "{args:?} printed no URL: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    Monitor { child, url, agent }
}
