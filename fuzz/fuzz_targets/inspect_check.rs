//! The inspector on arbitrary input, shared by the `inspect` fuzz target and
//! the stable-Rust corpus replay in `tests/fuzz_inspect.rs`.
//!
//! The first byte picks what the rest is (modulo 4):
//! 0. a framed message against the reference protocol and a zoo of every
//!    shape kind: decoding never panics and agrees with the Rust decoders
//!    on Ok/Err and the error; what decodes prints to text that reads back
//!    to the same bytes (compact and pretty), and that text is canonical;
//! 1. text: whatever `from_text` accepts decodes, and prints to text that
//!    reads back to the same bytes;
//! 2. protocol JSON: whatever loads writes back to JSON that loads to the
//!    same schema;
//! 3. a capture: the reader never panics, every message it yields prints or
//!    fails with an error.
//!
//! Any broken property panics, which is what a fuzzer reports.

use std::collections::{BTreeMap, HashMap};

use zao::inspect::{
    CaptureEvent, CaptureReader, InspectErrorKind, Inspector, ProtocolSchema, TextStyle,
};
use zao::proto::{Channel, Direction, Protocol};
use zao::{Decode, DecodeError, Encode, NetMessage};

/// A tolerant struct (older and newer writers' bodies reach it).
#[derive(Debug, Default, PartialEq, Encode, Decode)]
#[zao(tolerant)]
pub(crate) struct Settings {
    pub(crate) volume: u8,
    pub(crate) name: String,
}

/// An enum with a two-byte tag and a self-reference.
#[derive(Debug, PartialEq, Encode, Decode)]
pub(crate) enum Node {
    #[zao(tag = 0)]
    Leaf(i16),
    #[zao(tag = 300)]
    Branch {
        left: Option<Box<Node>>,
        right: Vec<Node>,
    },
}

/// Every other shape kind at least once.
#[derive(Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 10)]
pub(crate) struct Zoo {
    pub(crate) small: (u8, i64, bool, char),
    pub(crate) wide: (u128, i128, usize, isize),
    pub(crate) floats: (f32, f64),
    pub(crate) nz: core::num::NonZeroU16,
    pub(crate) text: Option<String>,
    pub(crate) raw: Vec<u8>,
    pub(crate) fixed: [u8; 3],
    pub(crate) pairs: [i16; 2],
    pub(crate) boxed: Box<u32>,
    pub(crate) map: HashMap<u16, Option<u8>>,
    pub(crate) sorted: BTreeMap<String, ()>,
    pub(crate) nested: Vec<Vec<Settings>>,
    pub(crate) node: Node,
    pub(crate) settings: Settings,
}

/// The protocol the fuzzer reads against.
pub(crate) fn protocol() -> Protocol {
    let mut p = zao_messages::protocol();
    p.add::<Zoo>(Channel::RELIABLE, Direction::Both);
    p
}

/// The Rust decoders' verdict on a framed message of `protocol()`.
pub(crate) fn rust_decode(bytes: &[u8]) -> Result<(), DecodeError> {
    if bytes == [0] {
        return Ok(()); // the heartbeat
    }
    let (id, body) = zao::split_message(bytes)?;
    if id == Zoo::ID {
        return Zoo::decode(body).map(drop);
    }
    zao_messages::GameMessage::decode(bytes).map(drop)
}

/// Runs one input; panics if a property breaks.
pub(crate) fn check(inspector: &Inspector, data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => bytes(inspector, rest),
        1 => {
            if let Ok(text) = core::str::from_utf8(rest) {
                text_in(inspector, text);
            }
        }
        2 => {
            if let Ok(text) = core::str::from_utf8(rest) {
                json(text);
            }
        }
        _ => capture(inspector, rest),
    }
}

fn bytes(inspector: &Inspector, input: &[u8]) {
    let ours = inspector.decode(input).map(drop).map_err(|e| e.kind);
    let theirs = rust_decode(input).map_err(InspectErrorKind::Decode);
    assert_eq!(
        ours, theirs,
        "inspector and Rust decoders disagree on {input:02x?}"
    );
    let _ = inspector.annotate(input).to_string();
    if ours.is_err() {
        return;
    }
    let text = inspector.to_text(input).unwrap_or_default();
    assert_eq!(
        inspector.from_text(&text).ok().as_deref(),
        Some(input),
        "bytes -> text -> bytes: {text}"
    );
    let pretty = inspector
        .to_text_styled(input, TextStyle::Pretty)
        .unwrap_or_default();
    assert_eq!(
        inspector.from_text(&pretty).ok().as_deref(),
        Some(input),
        "pretty text -> bytes: {pretty}"
    );
}

fn text_in(inspector: &Inspector, text: &str) {
    let Ok(bytes) = inspector.from_text(text) else {
        return;
    };
    let decoded = inspector.to_text(&bytes);
    let canonical = match decoded {
        Ok(canonical) => canonical,
        Err(e) => panic!("from_text gave bytes that do not decode ({e}): {text:?}"),
    };
    assert_eq!(
        inspector.from_text(&canonical).ok(),
        Some(bytes),
        "text -> bytes -> text -> bytes: {canonical}"
    );
}

fn json(text: &str) {
    let Ok(schema) = ProtocolSchema::from_json(text) else {
        return;
    };
    let again = ProtocolSchema::from_json(&schema.to_json());
    assert_eq!(again.ok(), Some(schema), "JSON -> schema -> JSON -> schema");
}

fn capture(inspector: &Inspector, input: &[u8]) {
    let Ok(mut reader) = CaptureReader::with_max_record(input, 1 << 16) else {
        return;
    };
    let embedded = reader.header().schema.clone().map(Inspector::new);
    let inspector = embedded.as_ref().unwrap_or(inspector);
    let mut n = 0;
    while let Ok(Some(record)) = reader.next_record() {
        if let CaptureEvent::Message { framed, .. } = record.event {
            let _ = inspector.to_text(framed);
        }
        n += 1;
        if n > 10_000 {
            break;
        }
    }
}
