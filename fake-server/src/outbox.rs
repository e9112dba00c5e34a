//! What a stream has sent and its client has not yet taken, bounded in
//! bytes.
//!
//! The server never waits on a stream's transport (a store change reaches
//! every stream in one synchronous call, see `egress`), so what a client
//! does not read piles up here: HTTP/2 flow control stops tonic from
//! taking more once the client's window is full. A real control plane
//! must bound that, and so does this one: past [`MAX_BACKLOG`] bytes the
//! stream is aborted, its queue dropped, and the server ends it with
//! RESOURCE_EXHAUSTED. A first response is always queued, whatever its
//! size: the bound is on what waits behind it.
//!
//! A channel of its own rather than tokio's: aborting must free what is
//! queued at once, from the sending side, and tonic holds the receiver.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use prost::Message;
use tokio_stream::Stream;
use tonic::Status;

/// Bytes of encoded responses a stream may have waiting for its client.
pub const MAX_BACKLOG: usize = 16 << 20;

/// Why a response was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The client side is gone.
    Gone,
    /// The client has not taken this many bytes yet, and the response
    /// would take the backlog past [`MAX_BACKLOG`].
    Backlog(usize),
}

/// The server's end: queues responses.
pub(crate) struct Outbox<T> {
    shared: Arc<Mutex<Queue<T>>>,
}

/// The transport's end: tonic takes responses from it.
pub struct Taken<T> {
    shared: Arc<Mutex<Queue<T>>>,
}

struct Queue<T> {
    items: VecDeque<(Result<T, Status>, usize)>,
    /// Encoded bytes of the responses in `items`.
    bytes: usize,
    waker: Option<Waker>,
    sender_gone: bool,
    receiver_gone: bool,
}

/// A new outbox and the stream its responses come out of.
pub(crate) fn outbox<T>() -> (Outbox<T>, Taken<T>) {
    let shared = Arc::new(Mutex::new(Queue {
        items: VecDeque::new(),
        bytes: 0,
        waker: None,
        sender_gone: false,
        receiver_gone: false,
    }));
    (
        Outbox {
            shared: shared.clone(),
        },
        Taken { shared },
    )
}

fn lock<T>(shared: &Mutex<Queue<T>>) -> MutexGuard<'_, Queue<T>> {
    // Nothing panics while holding it; a poisoned queue is still whole.
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T> Queue<T> {
    fn push(&mut self, item: Result<T, Status>, bytes: usize) {
        self.items.push_back((item, bytes));
        self.bytes += bytes;
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

impl<T: Message> Outbox<T> {
    /// Queues `response` for the client.
    pub fn send(&self, response: T) -> Result<(), Refused> {
        let bytes = response.encoded_len();
        let mut queue = lock(&self.shared);
        if queue.receiver_gone {
            return Err(Refused::Gone);
        }
        if queue.bytes > 0 && queue.bytes + bytes > MAX_BACKLOG {
            return Err(Refused::Backlog(queue.bytes));
        }
        queue.push(Ok(response), bytes);
        Ok(())
    }
}

impl<T> Outbox<T> {
    /// Ends the stream with `status` once what is queued has been taken.
    pub fn end(&self, status: Status) {
        lock(&self.shared).push(Err(status), 0);
    }

    /// Drops everything queued and ends the stream with `status` next.
    pub fn abort(&self, status: Status) {
        let mut queue = lock(&self.shared);
        queue.items.clear();
        queue.bytes = 0;
        queue.push(Err(status), 0);
    }

    /// Whether the client side is gone.
    pub fn is_closed(&self) -> bool {
        lock(&self.shared).receiver_gone
    }

    /// Encoded bytes waiting for the client.
    #[cfg(test)]
    pub fn backlog(&self) -> usize {
        lock(&self.shared).bytes
    }
}

impl<T> Drop for Outbox<T> {
    fn drop(&mut self) {
        let mut queue = lock(&self.shared);
        queue.sender_gone = true;
        if let Some(waker) = queue.waker.take() {
            waker.wake();
        }
    }
}

impl<T> Taken<T> {
    /// The next response if one is queued, without waiting.
    pub fn try_take(&mut self) -> Option<Result<T, Status>> {
        let mut queue = lock(&self.shared);
        let (item, bytes) = queue.items.pop_front()?;
        queue.bytes -= bytes;
        Some(item)
    }
}

impl<T> Stream for Taken<T> {
    type Item = Result<T, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut queue = lock(&self.shared);
        if let Some((item, bytes)) = queue.items.pop_front() {
            queue.bytes -= bytes;
            return Poll::Ready(Some(item));
        }
        if queue.sender_gone {
            return Poll::Ready(None);
        }
        queue.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl<T> Drop for Taken<T> {
    fn drop(&mut self) {
        let mut queue = lock(&self.shared);
        queue.receiver_gone = true;
        queue.items.clear();
        queue.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse;
    use tokio_stream::StreamExt;

    fn response(bytes: usize) -> DiscoveryResponse {
        DiscoveryResponse {
            version_info: "v".repeat(bytes),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_backlog_is_bounded_in_bytes_and_an_abort_frees_it() {
        let (outbox, mut taken) = outbox();
        // A first response larger than the bound still goes.
        outbox.send(response(MAX_BACKLOG + 10)).expect("first");
        let first = outbox.backlog();
        assert!(first > MAX_BACKLOG);
        assert!(matches!(
            outbox.send(response(1)),
            Err(Refused::Backlog(b)) if b == first
        ));
        // Taken: the backlog is empty again, and fills to the bound.
        assert!(taken.next().await.is_some_and(|r| r.is_ok()));
        assert_eq!(outbox.backlog(), 0);
        let mut sent = 0;
        while outbox.send(response(1 << 20)).is_ok() {
            sent += 1;
        }
        assert!((10..=16).contains(&sent), "{sent}");
        assert!(outbox.backlog() <= MAX_BACKLOG);
        // An abort drops the queue at once; the status comes next.
        outbox.abort(Status::resource_exhausted("not reading"));
        assert_eq!(outbox.backlog(), 0);
        let next = taken.next().await.expect("the status");
        assert_eq!(
            next.err().map(|s| s.code()),
            Some(tonic::Code::ResourceExhausted)
        );
        drop(outbox);
        assert!(taken.next().await.is_none(), "ends when the server is done");
    }

    #[tokio::test]
    async fn a_gone_client_refuses_and_drops_what_was_queued() {
        let (outbox, taken) = outbox();
        outbox.send(response(100)).expect("queued");
        drop(taken);
        assert!(outbox.is_closed());
        assert_eq!(outbox.backlog(), 0);
        assert_eq!(outbox.send(response(1)), Err(Refused::Gone));
    }
}
