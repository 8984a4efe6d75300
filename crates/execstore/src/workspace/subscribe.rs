//! [`Subscription`]: replay the log after a seq, then follow it as it commits.

use super::model::{Envelope, WorkspaceRef};
use super::storage::{LogQuery, WorkspaceStorage};
use crate::error::Result;
use std::collections::VecDeque;
use std::ops::Deref;
use std::time::Duration;

/// How many envelopes a subscription reads at a time.
pub const SUBSCRIBE_PAGE: usize = 500;

/// Yields the stored envelopes after a seq, then each new one as it commits: never one missed
/// or repeated between catching up and following, because the log is gap-free and every read
/// starts after the last seq yielded.
///
/// Works over any handle to a storage (`&S`, `Arc<S>`, `Arc<dyn WorkspaceStorage>`).
pub struct Subscription<S> {
    storage: S,
    workspace: WorkspaceRef,
    cursor: i64,
    buffer: VecDeque<Envelope>,
}

impl<S> Subscription<S>
where
    S: Deref,
    S::Target: WorkspaceStorage,
{
    /// A subscription to `workspace`'s log after `after_seq`.
    pub fn new(storage: S, workspace: WorkspaceRef, after_seq: i64) -> Result<Self> {
        workspace.check()?;
        LogQuery::new().after(after_seq).check()?;
        Ok(Subscription {
            storage,
            workspace,
            cursor: after_seq,
            buffer: VecDeque::new(),
        })
    }

    /// The seq of the last envelope yielded (or the starting seq).
    pub fn cursor(&self) -> i64 {
        self.cursor
    }

    /// The next envelope, waiting up to `timeout` for one to commit; `None` if none did.
    pub fn next_timeout(&mut self, timeout: Duration) -> Result<Option<Envelope>> {
        if let Some(e) = self.poll()? {
            return Ok(Some(e));
        }
        self.storage
            .wait_for_append(&self.workspace, self.cursor, timeout)?;
        self.poll()
    }

    /// The next envelope already committed, without waiting.
    pub fn poll(&mut self) -> Result<Option<Envelope>> {
        if self.buffer.is_empty() {
            let page = self.storage.read(
                &self.workspace,
                &LogQuery::new().after(self.cursor).limit(SUBSCRIBE_PAGE),
            )?;
            self.buffer.extend(page);
        }
        Ok(self.buffer.pop_front().inspect(|e| self.cursor = e.seq))
    }
}
