//! The monitor's connections: accepted under a cap, each served by hyper's HTTP/1 with a
//! header-read timeout and a stall timeout on writes, and all of them closed within
//! [`SHUTDOWN_GRACE`] of the shutdown signal, finished or not.
//!
//! axum's own `serve` has none of these: a client that sends half a request line holds its
//! connection forever, any number of them may be open, and its graceful shutdown waits for the
//! last client however slowly it reads.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio_io_timeout::TimeoutStream;

/// How long connections get to finish their answers once the shutdown signal came; past that
/// they are dropped mid-answer. With the runtime's own [`RUNTIME_GRACE`] the process is gone
/// within 2 s of Ctrl-C.
pub(super) const SHUTDOWN_GRACE: Duration = Duration::from_millis(1200);
/// How long the runtime waits for its tasks (a store call still running on the blocking pool
/// is left behind: the process exits anyway).
pub(super) const RUNTIME_GRACE: Duration = Duration::from_millis(300);

/// The header timeout of a connection accepted while more than half the cap is in use: a real
/// client sends its request line and headers at once, so under a flood of connections that
/// send nothing the slots free up within this, not within the full header timeout.
pub(super) const BUSY_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// The limits every connection is held to (`execstore monitor --help` documents them).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// How long a client may take to send a request's line and headers, counted from the
    /// first read of the request, and how long a kept-alive connection may wait idle for its
    /// next request.
    pub header_timeout: Duration,
    /// How long an answer may wait for the client to take any of it (a client that stops
    /// reading), and how long a request body may take to arrive.
    pub idle_timeout: Duration,
    /// How many connections are served at once; past that new ones wait in the listen
    /// backlog until one closes. While more than half are in use, a new connection gets
    /// [`BUSY_HEADER_TIMEOUT`] (if shorter) to send its request's head.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 512,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, asks every
/// connection to close after its current answer, and drops those still open after
/// [`SHUTDOWN_GRACE`].
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (close, closing) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        // A permit first: past the cap, clients wait in the kernel's backlog, not in memory.
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors, or the client gave up before its accept: wait a
                // little rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        while connections.try_join_next().is_some() {}
        let busy = permits.available_permits() < limits.max_connections / 2;
        let header_timeout = if busy {
            limits.header_timeout.min(BUSY_HEADER_TIMEOUT)
        } else {
            limits.header_timeout
        };
        let _ = stream.set_nodelay(true);
        let mut io = TimeoutStream::new(stream);
        io.set_write_timeout(Some(limits.idle_timeout));
        let io = TokioIo::new(Box::pin(io));
        let service = TowerToHyperService::new(app.clone());
        let mut closing = closing.clone();
        connections.spawn(async move {
            let _permit = permit;
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = builder.serve_connection(io, service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = closing.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    drop(listener);
    let _ = close.send(true);
    let drained = async { while connections.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, drained).await;
    // Dropping the set aborts whatever is still open.
    connections.abort_all();
}
