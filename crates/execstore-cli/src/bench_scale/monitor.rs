//! The monitor's peak RSS: the real `execstore monitor` (this binary) started as a child on
//! the store, every read of [`super::measure::read_targets`] asked of it over HTTP, then its
//! `VmHWM` read from `/proc/PID/status`.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{json, Map, Value};

use super::round;

/// How long the monitor may take to listen.
const START: Duration = Duration::from_secs(120);

/// The child, killed when dropped (an error on the way does not leave it serving).
struct Monitor(Child);

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Serves the store at `location` (a file or a PostgreSQL URL, with `prefix`) with `execstore
/// monitor`, asks it every read of `targets` once, and records its peak RSS (`VmHWM`, MiB)
/// and the time all the reads took over HTTP.
pub(super) fn peak_rss(
    location: &str,
    prefix: Option<&str>,
    targets: &[(&'static str, String)],
    row: &mut Map<String, Value>,
) -> anyhow::Result<()> {
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
    let mut command = Command::new(std::env::current_exe()?);
    command.arg("--db").arg(location);
    if let Some(prefix) = prefix {
        command.arg("--prefix").arg(prefix);
    }
    command
        .args(["monitor", "--port", &port.to_string()])
        .env_remove("EXECSTORE_MONITOR_TOKEN")
        .env_remove("EXECSTORE_MONITOR_TOKENS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut monitor = Monitor(command.spawn().context("cannot start execstore monitor")?);
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let started = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err() {
        if let Some(status) = monitor.0.try_wait()? {
            anyhow::bail!("execstore monitor exited: {status}");
        }
        anyhow::ensure!(started.elapsed() < START, "execstore monitor did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    let t = Instant::now();
    for (name, target) in targets {
        let status = get(addr, target).with_context(|| format!("GET {target}"))?;
        anyhow::ensure!(
            status == 200,
            "the monitor answered {status} to {name} ({target})"
        );
    }
    row.insert(
        "monitor_reads_http_ms".into(),
        json!(round(t.elapsed().as_secs_f64() * 1000.0)),
    );
    let pid = monitor.0.id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in the monitor's status")?;
    row.insert("monitor_peak_rss_mib".into(), json!(round(kib / 1024.0)));
    Ok(())
}

/// One GET over its own connection; the answer's status.
fn get(addr: SocketAddr, target: &str) -> anyhow::Result<u16> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(600)))?;
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let head = String::from_utf8_lossy(&answer[..answer.len().min(64)]).into_owned();
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("not an HTTP answer: {head:?}"))
}
