//! API answers as bodies sent chunk by chunk, and shared between identical requests.
//!
//! An answer is serialized once into [`CHUNK`]-sized pieces (no buffer grown by doubling to
//! twice its size), and hyper takes a piece only once the previous ones are on their way, so a
//! client that reads slowly holds a few pieces in hyper's buffer, not a copy of the answer.
//! Requests for the same read of the same state of the store (same path and query, same change
//! token) while one of them is still being computed or sent get the very same pieces: a
//! hundred slow readers of an 8 MB execution cost one copy of it, not a hundred.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::OnceCell;

/// The size of the pieces an answer is sent in.
const CHUNK: usize = 64 * 1024;

/// A JSON answer, serialized in pieces.
pub(crate) struct Encoded {
    status: u16,
    chunks: Vec<Bytes>,
}

impl Encoded {
    /// `body` serialized, with `status`.
    pub(crate) fn of(status: u16, body: &serde_json::Value) -> Encoded {
        let mut out = Chunks::default();
        // Writing to memory cannot fail, and a `Value` always serializes.
        let _ = serde_json::to_writer(&mut out, body);
        out.finish();
        Encoded {
            status,
            chunks: out.done,
        }
    }

    fn len(&self) -> u64 {
        self.chunks.iter().map(|c| c.len() as u64).sum()
    }
}

/// A writer that cuts what it is given into pieces of about [`CHUNK`] bytes.
#[derive(Default)]
struct Chunks {
    done: Vec<Bytes>,
    current: Vec<u8>,
}

impl Chunks {
    fn finish(&mut self) {
        if !self.current.is_empty() {
            self.done.push(Bytes::from(std::mem::take(&mut self.current)));
        }
    }
}

impl io::Write for Chunks {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.current.capacity() == 0 {
            self.current.reserve_exact(CHUNK.max(buf.len()));
        }
        self.current.extend_from_slice(buf);
        if self.current.len() >= CHUNK {
            self.finish();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One answer being computed or sent, shared by the requests that ask for it meanwhile.
pub(crate) type Cell = Arc<OnceCell<Arc<Encoded>>>;

/// The answers being computed or sent, by request and change token.
#[derive(Default)]
pub(crate) struct Answers {
    live: Mutex<HashMap<String, Weak<OnceCell<Arc<Encoded>>>>>,
}

impl Answers {
    /// The answer of `key` that another request is computing or still sending, or a new,
    /// empty one.
    pub(crate) fn cell(&self, key: String) -> Cell {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cell) = live.get(&key).and_then(Weak::upgrade) {
            return cell;
        }
        // Forget the answers nobody sends any more (at most one per open connection remain).
        live.retain(|_, cell| cell.strong_count() > 0);
        let cell = Arc::new(OnceCell::new());
        live.insert(key, Arc::downgrade(&cell));
        cell
    }
}

/// The body of one answer: its pieces, one at a time.
struct ChunkBody {
    encoded: Arc<Encoded>,
    next: usize,
    left: u64,
    /// Keeps the answer findable by identical requests while this one sends it.
    _shared: Option<Cell>,
}

impl http_body::Body for ChunkBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        match this.encoded.chunks.get(this.next) {
            Some(chunk) => {
                this.next += 1;
                this.left -= chunk.len() as u64;
                Poll::Ready(Some(Ok(Frame::data(chunk.clone()))))
            }
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.next >= self.encoded.chunks.len()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

/// The HTTP answer of `encoded`, sent piece by piece; `shared`: the cell it came from.
pub(crate) fn response(encoded: Arc<Encoded>, shared: Option<Cell>) -> Response {
    let status = StatusCode::from_u16(encoded.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let left = encoded.len();
    let body = ChunkBody {
        encoded,
        next: 0,
        left,
        _shared: shared,
    };
    let mut response = Response::new(Body::new(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_join_to_the_json_and_are_bounded() {
        let big: Vec<String> = (0..20_000).map(|i| format!("item {i}")).collect();
        let value = serde_json::json!({ "items": big });
        let encoded = Encoded::of(200, &value);
        assert!(encoded.chunks.len() > 2, "{}", encoded.chunks.len());
        assert!(encoded.chunks.iter().all(|c| c.len() < 2 * CHUNK));
        let joined: Vec<u8> = encoded.chunks.iter().flat_map(|c| c.iter().copied()).collect();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&joined).unwrap(),
            value
        );
        assert_eq!(encoded.len(), joined.len() as u64);
    }

    #[test]
    fn identical_requests_share_one_answer_while_it_is_held() {
        let answers = Answers::default();
        let a = answers.cell("k".into());
        let b = answers.cell("k".into());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &answers.cell("other".into())));
        drop((a, b));
        let c = answers.cell("k".into());
        assert!(c.get().is_none(), "a fresh cell once nobody held the old one");
    }
}
