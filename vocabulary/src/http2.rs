//! HTTP/2 frames as they pass on a connection (RFC 9113 §4.1), read a
//! chunk at a time: where each frame starts, and what a SETTINGS frame
//! says. The fake server's `hold_streams` stands on it: it tells its
//! client mid-connection that it admits no new stream (gRFC A57: no
//! does-not-exist timer should start on a stream that is not "being
//! sent").
//!
//! Only the framing is read; nothing is decoded (no HPACK, no flow
//! control), so a reader costs a few comparisons per frame.

/// The frame type of SETTINGS (RFC 9113 §6.5).
pub const SETTINGS: u8 = 0x4;
/// The SETTINGS flag of an acknowledgement.
pub const ACK: u8 = 0x1;
/// SETTINGS_MAX_CONCURRENT_STREAMS: how many streams the sender lets its
/// peer open at once (RFC 9113 §6.5.2; unlimited until first said).
pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
/// What a client sends before its first frame (RFC 9113 §3.4).
pub const CLIENT_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The length of a frame header.
pub const HEADER_LEN: usize = 9;

/// A frame's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// The payload's length.
    pub length: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl FrameHeader {
    fn parse(raw: &[u8; HEADER_LEN]) -> Self {
        FrameHeader {
            length: u32::from_be_bytes([0, raw[0], raw[1], raw[2]]),
            kind: raw[3],
            flags: raw[4],
            stream: u32::from_be_bytes([raw[5], raw[6], raw[7], raw[8]]) & 0x7fff_ffff,
        }
    }

    /// A SETTINGS frame acknowledging the peer's.
    pub fn is_settings_ack(&self) -> bool {
        self.kind == SETTINGS && self.flags & ACK != 0
    }

    /// A SETTINGS frame that says something (not an acknowledgement).
    pub fn is_settings(&self) -> bool {
        self.kind == SETTINGS && self.flags & ACK == 0
    }
}

/// What [`Frames::feed`] finds in a chunk, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A whole frame header, with its bytes (held back until whole, so a
    /// reader may drop the frame).
    Header(FrameHeader, [u8; HEADER_LEN]),
    /// Payload bytes of the frame whose header came last.
    Payload(&'a [u8]),
}

/// Follows one direction of a connection's frames (after the client's
/// preface, which the caller passes over).
#[derive(Debug, Default)]
pub struct Frames {
    header: [u8; HEADER_LEN],
    have: usize,
    payload_left: usize,
    /// The SETTINGS payload being read, when the frame is one.
    settings: Option<Vec<u8>>,
    /// The last SETTINGS_MAX_CONCURRENT_STREAMS said (`None`: never).
    max_concurrent_streams: Option<u32>,
}

impl Frames {
    /// Between two frames: nothing of a header or a payload is pending.
    pub fn at_boundary(&self) -> bool {
        self.have == 0 && self.payload_left == 0
    }

    /// The last SETTINGS_MAX_CONCURRENT_STREAMS the frames said, if any.
    pub fn max_concurrent_streams(&self) -> Option<u32> {
        self.max_concurrent_streams
    }

    /// Reads `bytes`, handing each piece to `piece` in order. A header
    /// split between chunks is handed over once whole.
    pub fn feed(&mut self, mut bytes: &[u8], mut piece: impl FnMut(Piece<'_>)) {
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let n = self.payload_left.min(bytes.len());
                let (payload, rest) = bytes.split_at(n);
                self.payload_left -= n;
                if let Some(settings) = &mut self.settings {
                    settings.extend_from_slice(payload);
                }
                piece(Piece::Payload(payload));
                if self.payload_left == 0 {
                    self.end_of_payload();
                }
                bytes = rest;
                continue;
            }
            let n = (HEADER_LEN - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have < HEADER_LEN {
                continue;
            }
            self.have = 0;
            let header = FrameHeader::parse(&self.header);
            self.payload_left = header.length as usize;
            self.settings = header.is_settings().then(Vec::new);
            piece(Piece::Header(header, self.header));
            if self.payload_left == 0 {
                self.end_of_payload();
            }
        }
    }

    /// The header bytes of a frame cut off by the end of the connection.
    pub fn pending_header(&self) -> &[u8] {
        &self.header[..self.have]
    }

    fn end_of_payload(&mut self) {
        let Some(settings) = self.settings.take() else {
            return;
        };
        for setting in settings.chunks_exact(6) {
            if u16::from_be_bytes([setting[0], setting[1]]) == MAX_CONCURRENT_STREAMS {
                self.max_concurrent_streams = Some(u32::from_be_bytes([
                    setting[2], setting[3], setting[4], setting[5],
                ]));
            }
        }
    }
}

/// A SETTINGS frame saying only SETTINGS_MAX_CONCURRENT_STREAMS.
pub fn max_concurrent_streams_frame(streams: u32) -> [u8; HEADER_LEN + 6] {
    let mut frame = [0u8; HEADER_LEN + 6];
    frame[2] = 6;
    frame[3] = SETTINGS;
    frame[9..11].copy_from_slice(&MAX_CONCURRENT_STREAMS.to_be_bytes());
    frame[11..].copy_from_slice(&streams.to_be_bytes());
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0, 0, payload.len() as u8, kind, flags, 0, 0, 0, 1];
        f.extend_from_slice(payload);
        f
    }

    /// Every piece, with payloads joined per frame.
    fn pieces(frames: &mut Frames, chunks: &[&[u8]]) -> Vec<(FrameHeader, Vec<u8>)> {
        let mut out: Vec<(FrameHeader, Vec<u8>)> = Vec::new();
        for chunk in chunks {
            frames.feed(chunk, |piece| match piece {
                Piece::Header(h, raw) => {
                    assert_eq!(FrameHeader::parse(&raw), h);
                    out.push((h, Vec::new()))
                }
                Piece::Payload(p) => out.last_mut().unwrap().1.extend_from_slice(p),
            });
        }
        out
    }

    #[test]
    fn frames_are_found_whatever_the_chunks() {
        let mut bytes = frame(0x1, 0x4, b"headers");
        bytes.extend(frame(SETTINGS, ACK, b""));
        bytes.extend(max_concurrent_streams_frame(0));
        bytes.extend(frame(0x0, 0x0, b"data!"));
        let whole = pieces(&mut Frames::default(), &[&bytes]);
        assert_eq!(whole.len(), 4);
        assert!(whole[1].0.is_settings_ack());
        assert!(whole[2].0.is_settings());
        assert_eq!(whole[3].1, b"data!");
        // One byte at a time: the same frames, and a boundary after each.
        let mut frames = Frames::default();
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(pieces(&mut frames, &chunks), whole);
        assert!(frames.at_boundary());
        assert_eq!(frames.max_concurrent_streams(), Some(0));
    }

    #[test]
    fn the_last_max_concurrent_streams_said_counts() {
        let mut frames = Frames::default();
        assert_eq!(frames.max_concurrent_streams(), None);
        // Another setting first (INITIAL_WINDOW_SIZE), then the limit.
        let mut payload = vec![0, 4, 0, 0, 0xff, 0xff];
        payload.extend_from_slice(&[0, 3, 0, 0, 0, 100]);
        frames.feed(&frame(SETTINGS, 0, &payload), |_| {});
        assert_eq!(frames.max_concurrent_streams(), Some(100));
        frames.feed(&max_concurrent_streams_frame(0)[..10], |_| {});
        assert!(!frames.at_boundary());
        assert_eq!(frames.max_concurrent_streams(), Some(100));
        frames.feed(&max_concurrent_streams_frame(0)[10..], |_| {});
        assert_eq!(frames.max_concurrent_streams(), Some(0));
        // An acknowledgement says nothing.
        frames.feed(&frame(SETTINGS, ACK, b""), |_| {});
        assert_eq!(frames.max_concurrent_streams(), Some(0));
    }
}
