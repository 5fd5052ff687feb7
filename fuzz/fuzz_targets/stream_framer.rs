//! `FrameDecoder` against a reference model, fed a stream cut at arbitrary
//! points.
//!
//! The stream is built from well-formed frames, bare length prefixes (any
//! `u64`, so oversize claims) and raw bytes. The model parses the whole
//! stream at once with its own LEB128 reader (docs/WIRE.md §2); the decoder
//! sees it in chunks of arbitrary sizes (empty ones included). Then:
//!
//! - the frames come back exactly, in order, whatever the cuts;
//! - a claim over `max_frame` is `TooLarge { claimed, max }` as soon as its
//!   prefix is complete, a broken prefix is `BadLength`, and nothing else is
//!   an error;
//! - memory stays bounded: `buffered()` never exceeds `max_frame + 10` plus
//!   the chunk just pushed.

#![no_main]
// Our code only: `fuzz_target!` expands to a `#[no_mangle] extern "C"` entry
// point, but lints do not fire inside another crate's macro expansion.
#![forbid(unsafe_code)]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use zao::proto::{FrameDecoder, FrameError, frame_header};

/// A varint is at most 10 bytes (docs/WIRE.md §2).
const MAX_VARINT_LEN: usize = 10;

#[derive(Arbitrary, Debug)]
struct Input {
    max_frame: u16,
    parts: Vec<Part>,
    /// Chunk sizes, used in turn.
    cuts: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
enum Part {
    /// A length prefix and that many bytes.
    Frame(Vec<u8>),
    /// A bare length prefix.
    Claim(u64),
    /// Bytes as they come.
    Raw(Vec<u8>),
}

#[derive(Debug, PartialEq)]
enum End {
    /// Every byte consumed or waiting for more: no error.
    Open,
    TooLarge(u64),
    BadLength,
}

fuzz_target!(|input: Input| {
    // Limits from 0 to 4 KiB, so frames of libFuzzer's default 4 KiB inputs
    // land on both sides of it.
    let max_frame = usize::from(input.max_frame) % 4097;
    let stream = build(&input.parts);
    let (want_frames, want_end) = model(&stream, max_frame);

    let mut d = FrameDecoder::new(max_frame);
    assert_eq!(d.poll_frame(), Ok(None));
    let mut got = Vec::new();
    let mut end = End::Open;
    let mut rest = &stream[..];
    let mut cuts = input.cuts.iter().cycle();
    let cycle_len: usize = input.cuts.iter().map(|&c| usize::from(c)).sum();
    // One pass even for an empty stream; a cycle of cuts that adds up to
    // nothing would never progress, so it means "all at once".
    'feed: loop {
        let size = match cuts.next() {
            Some(&c) if cycle_len > 0 => usize::from(c).min(rest.len()),
            _ => rest.len(),
        };
        let (chunk, after) = rest.split_at(size);
        rest = after;
        d.handle_bytes(chunk);
        assert!(
            d.buffered() <= max_frame + MAX_VARINT_LEN + chunk.len(),
            "buffered {} after a chunk of {} (max_frame {max_frame})",
            d.buffered(),
            chunk.len()
        );
        loop {
            match d.poll_frame() {
                Ok(Some(frame)) => got.push(frame),
                Ok(None) => break,
                Err(FrameError::TooLarge { claimed, max }) => {
                    assert_eq!(max, max_frame);
                    end = End::TooLarge(claimed);
                    break 'feed;
                }
                Err(FrameError::BadLength(_)) => {
                    end = End::BadLength;
                    break 'feed;
                }
            }
        }
        assert!(
            d.buffered() <= max_frame + MAX_VARINT_LEN,
            "buffered {} once drained (max_frame {max_frame})",
            d.buffered()
        );
        if rest.is_empty() {
            break;
        }
    }

    assert_eq!(end, want_end, "stream {stream:02x?}");
    assert_eq!(got.len(), want_frames.len(), "frames of {stream:02x?}");
    for (g, w) in got.iter().zip(&want_frames) {
        assert_eq!(&g[..], *w);
    }
    if end == End::Open {
        let consumed: usize = want_frames
            .iter()
            .map(|f| varint(f.len() as u64).len() + f.len())
            .sum();
        assert!(d.buffered() <= stream.len() - consumed);
        if consumed == stream.len() {
            assert_eq!(d.buffered(), 0);
        }
    }
});

fn build(parts: &[Part]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in parts {
        match part {
            Part::Frame(payload) => {
                let (header, n) = frame_header(payload.len());
                let header = &header[..n];
                assert_eq!(header, &varint(payload.len() as u64)[..]);
                out.extend_from_slice(header);
                out.extend_from_slice(payload);
            }
            Part::Claim(len) => out.extend_from_slice(&varint(*len)),
            Part::Raw(bytes) => out.extend_from_slice(bytes),
        }
    }
    out
}

/// Canonical LEB128.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

enum Prefix {
    Value(u64, usize),
    Incomplete,
    Bad,
}

/// docs/WIRE.md §2, written out independently of zao's reader.
fn read_varint(bytes: &[u8]) -> Prefix {
    let mut value = 0u64;
    for i in 0..MAX_VARINT_LEN {
        let Some(&byte) = bytes.get(i) else {
            return Prefix::Incomplete;
        };
        let group = u64::from(byte & 0x7f);
        if i == MAX_VARINT_LEN - 1 && (byte & 0x80 != 0 || group > 1) {
            return Prefix::Bad;
        }
        value |= group << (7 * i);
        if byte & 0x80 == 0 {
            if i > 0 && byte == 0 {
                return Prefix::Bad;
            }
            return Prefix::Value(value, i + 1);
        }
    }
    unreachable!("the 10th byte returns")
}

/// The frames in `stream` and how it ends, parsed in one piece.
fn model(stream: &[u8], max_frame: usize) -> (Vec<&[u8]>, End) {
    let mut frames = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        match read_varint(rest) {
            Prefix::Incomplete => break,
            Prefix::Bad => return (frames, End::BadLength),
            Prefix::Value(len, _) if len > max_frame as u64 => {
                return (frames, End::TooLarge(len));
            }
            Prefix::Value(len, n) => {
                let len = len as usize;
                let Some(frame) = rest.get(n..n + len) else {
                    break;
                };
                frames.push(frame);
                rest = &rest[n + len..];
            }
        }
    }
    (frames, End::Open)
}
