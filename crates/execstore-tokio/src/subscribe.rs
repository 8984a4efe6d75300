//! [`EnvelopeStream`]: a workspace's log as a [`Stream`], replayed and then followed.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use execstore::workspace::{Envelope, Subscription, WorkspaceRef, WorkspaceStorage};
use execstore::Result;
use futures_core::Stream;
use tokio::sync::mpsc;

/// How long the follower waits for an append at a time before it looks whether its stream
/// is still wanted: a dropped stream's follower ends within this.
pub const FOLLOW_WAIT: Duration = Duration::from_millis(200);

/// How many envelopes the follower reads ahead of the stream's consumer.
pub const STREAM_BUFFER: usize = 256;

/// The envelopes of a workspace's log after a seq: first those stored, then each new one as
/// it commits, every one once and in seq order (an [`execstore::workspace::Subscription`]
/// underneath, on the blocking pool).
///
/// A follower on the blocking pool reads ahead (up to [`STREAM_BUFFER`] envelopes) and waits
/// for appends; it holds one blocking-pool thread while the stream lives and ends within
/// [`FOLLOW_WAIT`] of the stream being dropped. An error (bad arguments, a backend failure)
/// is the stream's last item: subscribe again after [`EnvelopeStream::last_seq`] to go on.
#[derive(Debug)]
pub struct EnvelopeStream {
    rx: mpsc::Receiver<Result<Envelope>>,
    last_seq: i64,
}

impl EnvelopeStream {
    pub(crate) fn start(storage: Arc<dyn WorkspaceStorage>, workspace: WorkspaceRef, after_seq: i64) -> Self {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let stream = EnvelopeStream {
            rx,
            last_seq: after_seq,
        };
        let started = Subscription::new(storage, workspace, after_seq).and_then(|sub| {
            let handle = crate::runtime()?;
            let tx = tx.clone();
            // If the runtime is shutting down the follower is dropped unrun and the stream
            // simply ends.
            drop(handle.spawn_blocking(move || follow(sub, tx)));
            Ok(())
        });
        if let Err(e) = started {
            // The channel is empty: this cannot be refused for want of room.
            let _ = tx.try_send(Err(e));
        }
        stream
    }

    /// The next envelope (waiting for one to commit), an error, or `None` after an error.
    pub async fn next(&mut self) -> Option<Result<Envelope>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }

    /// The seq of the last envelope yielded, or the seq the stream started after.
    pub fn last_seq(&self) -> i64 {
        self.last_seq
    }
}

impl Stream for EnvelopeStream {
    type Item = Result<Envelope>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let polled = this.rx.poll_recv(cx);
        if let Poll::Ready(Some(Ok(envelope))) = &polled {
            this.last_seq = envelope.seq;
        }
        polled
    }
}

/// The follower: feeds the channel until its receiver is dropped or a call fails.
fn follow(mut sub: Subscription<Arc<dyn WorkspaceStorage>>, tx: mpsc::Sender<Result<Envelope>>) {
    while !tx.is_closed() {
        match sub.next_timeout(FOLLOW_WAIT) {
            Ok(Some(envelope)) => {
                if tx.blocking_send(Ok(envelope)).is_err() {
                    return;
                }
            }
            Ok(None) => {}
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        }
    }
}
