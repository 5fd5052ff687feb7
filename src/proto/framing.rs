//! Stream framing: each message on a reliable stream is a varint length,
//! then that many bytes (docs/WIRE.md §12).

use core::fmt;

use bytes::{Buf, Bytes, BytesMut};

use super::Channel;
use crate::DecodeError;
use crate::wire::{MAX_VARINT_LEN, Reader};

/// The varint length prefix of a frame of `len` bytes, and its size.
#[must_use]
pub fn frame_header(len: usize) -> ([u8; MAX_VARINT_LEN], usize) {
    let mut out = [0u8; MAX_VARINT_LEN];
    let mut w = crate::Writer::new(&mut out);
    w.put_len(len);
    let n = w.position();
    (out, n)
}

/// The header a reliable channel's unidirectional stream starts with
/// (docs/WIRE.md §12.5): the channel as one varint (0 for
/// [`Channel::RELIABLE`], the channel's index in the protocol's table),
/// and its size. Frames follow it.
#[must_use]
pub fn stream_header(channel: Channel) -> ([u8; MAX_VARINT_LEN], usize) {
    let mut out = [0u8; MAX_VARINT_LEN];
    let mut w = crate::Writer::new(&mut out);
    w.put_varint(u64::from(channel.0));
    let n = w.position();
    (out, n)
}

/// Why a stream stopped making sense.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A frame's length prefix is over the limit: refused before its body
    /// is buffered.
    TooLarge {
        /// The length the peer claimed.
        claimed: u64,
        /// The limit.
        max: usize,
    },
    /// The length prefix is not a canonical varint.
    BadLength(DecodeError),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { claimed, max } => {
                write!(f, "frame of {claimed} bytes is over the {max}-byte limit")
            }
            Self::BadLength(e) => write!(f, "bad frame length: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Reassembles frames from a byte stream split at arbitrary points.
///
/// Memory is bounded: a frame's length is checked against the limit as soon
/// as its prefix arrives, so the decoder never holds more than one
/// incomplete frame (at most `max_frame` bytes plus its prefix) beyond the
/// chunk just pushed.
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    max_frame: usize,
    /// Length of the frame being assembled, once its prefix is read.
    pending: Option<usize>,
}

impl FrameDecoder {
    /// A decoder that refuses frames longer than `max_frame` bytes.
    #[must_use]
    pub fn new(max_frame: usize) -> Self {
        Self {
            buf: BytesMut::new(),
            max_frame,
            pending: None,
        }
    }

    /// Appends bytes read from the stream.
    pub fn handle_bytes(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes buffered and not yet returned as frames.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Reads a bare varint from the front of the stream (a stream header),
    /// `Ok(None)` if more bytes are needed. Call it only before any frame.
    ///
    /// # Errors
    /// [`FrameError::BadLength`] if the bytes are not a canonical varint.
    pub fn poll_header(&mut self) -> Result<Option<u64>, FrameError> {
        let mut r = Reader::new(&self.buf);
        match r.get_varint() {
            Ok(value) => {
                let used = self.buf.len() - r.remaining();
                self.buf.advance(used);
                Ok(Some(value))
            }
            Err(DecodeError::UnexpectedEnd) if self.buf.len() < MAX_VARINT_LEN => Ok(None),
            Err(e) => Err(FrameError::BadLength(e)),
        }
    }

    /// The next complete frame, `Ok(None)` if more bytes are needed.
    ///
    /// # Errors
    /// [`FrameError`] when the stream breaks the framing rules; the stream
    /// is then unusable and the connection should be closed.
    #[must_use = "a frame or an error must be handled"]
    pub fn poll_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        let len = match self.pending {
            Some(len) => len,
            None => {
                let mut r = Reader::new(&self.buf);
                let claimed = match r.get_varint() {
                    Ok(v) => v,
                    Err(DecodeError::UnexpectedEnd) if self.buf.len() < MAX_VARINT_LEN => {
                        return Ok(None);
                    }
                    Err(e) => return Err(FrameError::BadLength(e)),
                };
                let prefix = self.buf.len() - r.remaining();
                let len = usize::try_from(claimed)
                    .ok()
                    .filter(|&len| len <= self.max_frame)
                    .ok_or(FrameError::TooLarge {
                        claimed,
                        max: self.max_frame,
                    })?;
                self.buf.advance(prefix);
                self.pending = Some(len);
                len
            }
        };
        if self.buf.len() < len {
            // Room for the rest of the frame, in steps: the claim is within
            // the limit, but the limit itself may be huge.
            self.buf.reserve((len - self.buf.len()).min(64 * 1024));
            return Ok(None);
        }
        self.pending = None;
        Ok(Some(self.buf.split_to(len).freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in payloads {
            let (h, n) = frame_header(p.len());
            out.extend_from_slice(&h[..n]);
            out.extend_from_slice(p);
        }
        out
    }

    #[test]
    fn frames_survive_any_split() {
        let big = vec![7u8; 300];
        let payloads: [&[u8]; 4] = [b"a", b"", &big, b"xyz"];
        let stream = framed(&payloads);
        for split in 1..stream.len() {
            let mut d = FrameDecoder::new(1000);
            let mut got = Vec::new();
            for chunk in stream.chunks(split) {
                d.handle_bytes(chunk);
                while let Some(f) = d.poll_frame().unwrap() {
                    got.push(f);
                }
            }
            assert_eq!(got.len(), 4, "split {split}");
            for (g, p) in got.iter().zip(payloads) {
                assert_eq!(&g[..], p);
            }
            assert_eq!(d.buffered(), 0);
        }
    }

    #[test]
    fn a_reliable_stream_is_its_channel_header_then_frames() {
        let (header, n) = stream_header(Channel::RELIABLE);
        assert_eq!(&header[..n], [0x00]);
        let mut d = FrameDecoder::new(1000);
        d.handle_bytes(&header[..n]);
        d.handle_bytes(&crate::proto::HEARTBEAT_FRAME);
        assert_eq!(d.poll_header(), Ok(Some(u64::from(Channel::RELIABLE.0))));
        let beat = d.poll_frame().unwrap().unwrap();
        assert_eq!(&beat[..], [crate::proto::HEARTBEAT_ID as u8]);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn oversize_claims_fail_at_the_prefix() {
        let mut d = FrameDecoder::new(1000);
        // 4 GiB claimed; only the prefix has arrived.
        d.handle_bytes(&[0x80, 0x80, 0x80, 0x80, 0x10]);
        assert_eq!(
            d.poll_frame(),
            Err(FrameError::TooLarge {
                claimed: 1 << 32,
                max: 1000
            })
        );
        let mut d = FrameDecoder::new(1000);
        d.handle_bytes(&[0xe9, 0x07]); // 1001
        assert!(matches!(d.poll_frame(), Err(FrameError::TooLarge { .. })));
        let mut d = FrameDecoder::new(1000);
        d.handle_bytes(&[0x80, 0x00]);
        assert_eq!(
            d.poll_frame(),
            Err(FrameError::BadLength(DecodeError::NonCanonicalVarint))
        );
        let mut d = FrameDecoder::new(usize::MAX);
        d.handle_bytes(&[0xff; 11]);
        assert!(matches!(d.poll_frame(), Err(FrameError::BadLength(_))));
    }
}
