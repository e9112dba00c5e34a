//! `hold_streams` / `release_streams` on the wire: an accepted
//! connection's HTTP/2 frames, followed so that the server can tell its
//! client, mid-connection, that it admits no new stream
//! (SETTINGS_MAX_CONCURRENT_STREAMS 0, RFC 9113 §6.5.2), and later that
//! it admits them again. The connection stays up and READY; a stream the
//! client starts meanwhile waits in the client, unsent.
//!
//! tonic's HTTP/2 server (h2) cannot change its settings on a live
//! connection, so the gate speaks for it: it writes SETTINGS frames of
//! its own between the server's frames, and takes the client's
//! acknowledgements of them out of what the server reads (h2 would read
//! an acknowledgement of settings it never sent as a protocol error).
//! h2 itself still admits any stream it is sent: a client that opens one
//! while told not to, or before it has read the setting (a client may
//! send before it reads the server's first frame, RFC 9113 §3.4), has it
//! admitted, and the timeline shows the stream. So a scenario holds the
//! streams of a connection already set up.
//!
//! A gate follows frames only on a server told to
//! ([`crate::FakeAdsServer::watch_streams`]); elsewhere it passes bytes
//! through untouched.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tonic::transport::server::Connected;
use xds_vocabulary::http2::{self, Frames, Piece};

/// Resolves when the hold signal changes (or its sender is gone).
type Changed = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A connection whose streams the server can hold.
pub struct StreamGate<IO> {
    io: IO,
    /// `None`: bytes pass through, nothing is followed.
    watch: Option<Watch>,
}

struct Watch {
    held: watch::Receiver<bool>,
    changed: Option<Changed>,
    /// What the client was last told: `None`, nothing (the server's own
    /// settings hold); `Some(true)`, no new stream.
    told: Option<bool>,
    /// The server's frames, as written.
    out: Frames,
    /// The server's first SETTINGS frame has gone out: the gate may
    /// speak (the server's preface must come first, RFC 9113 §3.4).
    server_spoke: bool,
    /// A frame of the gate's own, still being written.
    injecting: Option<([u8; http2::HEADER_LEN + 6], usize)>,
    /// Per SETTINGS frame the client has been sent and not acknowledged
    /// yet, in order: whether it is the gate's.
    unacked: VecDeque<bool>,
    /// The client's preface bytes still to come.
    preface_left: usize,
    /// The client's frames, as read.
    client: Frames,
    /// Read from the client and kept, to hand to the server.
    inbound: Vec<u8>,
    inbound_at: usize,
}

impl<IO> StreamGate<IO> {
    /// `held`: the server's hold signal, when this server's streams may
    /// be held; `None` passes bytes through.
    pub(crate) fn new(io: IO, held: Option<watch::Receiver<bool>>) -> Self {
        StreamGate {
            io,
            watch: held.map(|held| Watch {
                held,
                changed: None,
                told: None,
                out: Frames::default(),
                server_spoke: false,
                injecting: None,
                unacked: VecDeque::new(),
                preface_left: http2::CLIENT_PREFACE.len(),
                client: Frames::default(),
                inbound: Vec::new(),
                inbound_at: 0,
            }),
        }
    }
}

impl Watch {
    /// Arms the wake-up for the next change of the hold signal.
    fn poll_changed(&mut self, cx: &mut Context<'_>) {
        loop {
            let changed = self.changed.get_or_insert_with(|| {
                let mut held = self.held.clone();
                Box::pin(async move {
                    if held.changed().await.is_err() {
                        // The server is gone: nothing will change again.
                        std::future::pending::<()>().await;
                    }
                })
            });
            match changed.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    // Seen: `due` reads the new value; watch for the next.
                    self.changed = None;
                    self.held.borrow_and_update();
                }
                Poll::Pending => return,
            }
        }
    }

    /// A frame the client should be sent now: the hold changed from what
    /// it was last told, and the gate may speak between two frames.
    fn due(&mut self) -> Option<[u8; http2::HEADER_LEN + 6]> {
        if self.injecting.is_some() || !self.server_spoke || !self.out.at_boundary() {
            return None;
        }
        let held = *self.held.borrow();
        if self.told.unwrap_or(false) == held {
            return None;
        }
        self.told = Some(held);
        self.unacked.push_back(true);
        // Released: what the server itself said, or no limit.
        let streams = if held {
            0
        } else {
            self.out.max_concurrent_streams().unwrap_or(u32::MAX)
        };
        Some(http2::max_concurrent_streams_frame(streams))
    }

    /// Follows bytes the server wrote.
    fn wrote(&mut self, bytes: &[u8]) {
        let (unacked, server_spoke) = (&mut self.unacked, &mut self.server_spoke);
        self.out.feed(bytes, |piece| {
            if let Piece::Header(header, _) = piece
                && header.is_settings()
            {
                unacked.push_back(false);
                *server_spoke = true;
            }
        });
    }

    /// Takes what the client sent, less the acknowledgements of the
    /// gate's own settings, into `inbound`.
    fn read(&mut self, mut bytes: &[u8]) {
        if self.preface_left > 0 {
            let n = self.preface_left.min(bytes.len());
            self.inbound.extend_from_slice(&bytes[..n]);
            self.preface_left -= n;
            bytes = &bytes[n..];
        }
        let (unacked, inbound) = (&mut self.unacked, &mut self.inbound);
        self.client.feed(bytes, |piece| match piece {
            Piece::Header(header, raw) => {
                let ours = header.is_settings_ack() && unacked.pop_front() == Some(true);
                if !ours {
                    inbound.extend_from_slice(&raw);
                }
            }
            Piece::Payload(payload) => inbound.extend_from_slice(payload),
        });
    }
}

impl<IO: AsyncWrite + Unpin> StreamGate<IO> {
    /// Writes the gate's own frame when one is due; `Pending` while one
    /// is still on its way.
    fn poll_speak(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(watch) = &mut self.watch else {
            return Poll::Ready(Ok(()));
        };
        watch.poll_changed(cx);
        if watch.injecting.is_none() {
            match watch.due() {
                Some(frame) => watch.injecting = Some((frame, 0)),
                None => return Poll::Ready(Ok(())),
            }
        }
        while let Some((frame, at)) = &mut watch.injecting {
            let n = std::task::ready!(Pin::new(&mut self.io).poll_write(cx, &frame[*at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *at += n;
            if *at == frame.len() {
                watch.injecting = None;
            }
        }
        // Nothing else may be written for a while (an idle connection),
        // and TLS keeps what it is given until flushed.
        let _ = Pin::new(&mut self.io).poll_flush(cx)?;
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for StreamGate<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.watch.is_none() {
            return Pin::new(&mut this.io).poll_read(cx, buf);
        }
        // The server reads all the time: a change is told from here when
        // the server writes nothing (an idle connection).
        if let Poll::Ready(Err(e)) = this.poll_speak(cx) {
            return Poll::Ready(Err(e));
        }
        loop {
            let watch = this.watch.as_mut().expect("watched");
            if watch.inbound_at < watch.inbound.len() {
                let n = buf.remaining().min(watch.inbound.len() - watch.inbound_at);
                buf.put_slice(&watch.inbound[watch.inbound_at..watch.inbound_at + n]);
                watch.inbound_at += n;
                if watch.inbound_at == watch.inbound.len() {
                    watch.inbound.clear();
                    watch.inbound_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut scratch = [0u8; 8192];
            let mut chunk = ReadBuf::new(&mut scratch);
            std::task::ready!(Pin::new(&mut this.io).poll_read(cx, &mut chunk))?;
            if chunk.filled().is_empty() {
                // The end: hand over what a cut-off header held back.
                let pending = watch.client.pending_header().to_vec();
                watch.client = Frames::default();
                if pending.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                watch.inbound.extend_from_slice(&pending);
                continue;
            }
            watch.read(chunk.filled());
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for StreamGate<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.watch.is_none() {
            return Pin::new(&mut this.io).poll_write(cx, buf);
        }
        std::task::ready!(this.poll_speak(cx))?;
        let n = std::task::ready!(Pin::new(&mut this.io).poll_write(cx, buf))?;
        if let Some(watch) = &mut this.watch {
            watch.wrote(&buf[..n]);
        }
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.watch.is_none() {
            return Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        }
        // Followed, what is written goes one slice at a time.
        let buf = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &**b);
        self.poll_write(cx, buf)
    }

    fn is_write_vectored(&self) -> bool {
        self.watch.is_none() && self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<IO: Connected> Connected for StreamGate<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}
