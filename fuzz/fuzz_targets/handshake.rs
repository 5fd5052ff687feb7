//! Handshake parsing and checking.
//!
//! - The input as raw bytes: `Hello::decode` and `HelloReply::decode` never
//!   panic; a decoded value re-encodes to the input, and a decoded `Hello`
//!   goes through `check_hello` against `zao_messages::protocol()`.
//! - The input as choices: a `Hello` near a valid one (magic, version, hash,
//!   declared channels and the registrations each kept or changed), which
//!   round-trips and is accepted exactly when its magic, version and
//!   protocol all match.

#![no_main]
// Our code only: `fuzz_target!` expands to a `#[no_mangle] extern "C"` entry
// point, but lints do not fire inside another crate's macro expansion.
#![forbid(unsafe_code)]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use zao::proto::{
    Channel, ChannelDef, ChannelKind, Direction, Hello, HelloReply, PROTOCOL_MAGIC, Protocol,
    ProtocolEntry, RefuseReason, check_hello, versions_compatible,
};
use zao::{Decode, Encode};

/// The server's zao version in these checks.
const SERVER_VERSION: &str = "0.1.0";

fuzz_target!(|data: &[u8]| {
    let protocol = zao_messages::protocol();
    raw(data, &protocol);
    let _ = structured(&mut Unstructured::new(data), &protocol);
});

fn raw(data: &[u8], protocol: &Protocol) {
    if let Ok(hello) = Hello::decode(data) {
        assert_eq!(hello.encoded_len(), data.len());
        assert_eq!(hello.to_encoded_vec(), data, "re-encoding of {hello:?}");
        check(&hello, protocol);
    }
    if let Ok(reply) = HelloReply::decode(data) {
        assert_eq!(reply.to_encoded_vec(), data, "re-encoding of {reply:?}");
        if let HelloReply::Refused(reason) = &reply {
            let _ = reason.to_string();
        }
    }
}

fn structured(u: &mut Unstructured<'_>, protocol: &Protocol) -> arbitrary::Result<()> {
    let magic = if u.arbitrary()? {
        PROTOCOL_MAGIC
    } else {
        u.arbitrary()?
    };
    let version = match u.int_in_range(0..=4)? {
        0 => "0.1.0".to_owned(),
        1 => "0.1.77".to_owned(),
        2 => "0.2.0".to_owned(),
        3 => "1.1.0".to_owned(),
        _ => u.arbitrary()?,
    };
    let mut messages = protocol.entries().to_vec();
    for _ in 0..u.int_in_range(0..=4)? {
        let i = u.choose_index(messages.len().max(1))?;
        match (u.int_in_range(0..=6)?, messages.get_mut(i)) {
            (0, Some(_)) => {
                messages.remove(i);
            }
            (1, Some(e)) => e.fingerprint ^= 1 << u.int_in_range(0..=63)?,
            (2, Some(e)) => e.name = u.arbitrary()?,
            (3, Some(e)) => e.channel = channel(u)?,
            (4, Some(e)) => e.direction = direction(u)?,
            (5, Some(e)) => {
                let copy = e.clone();
                messages.push(copy);
            }
            _ => messages.push(ProtocolEntry {
                id: u.arbitrary()?,
                name: u.arbitrary()?,
                fingerprint: u.arbitrary()?,
                channel: channel(u)?,
                direction: direction(u)?,
            }),
        }
    }
    // Order does not count: both sides sort by id.
    if u.arbitrary()? {
        let len = messages.len();
        if len > 1 {
            messages.swap(0, len - 1);
        }
    }
    // The declared channels (none in the reference protocol): kept, or one
    // more of any kind, name and priority.
    let mut channels = declared(protocol);
    if u.ratio(1, 4)? {
        channels.push(ChannelDef {
            name: u.arbitrary()?,
            kind: *u.choose(&[
                ChannelKind::ReliableOrdered,
                ChannelKind::ReliableUnordered,
                ChannelKind::Unreliable,
                ChannelKind::Sequenced,
                ChannelKind::Snapshot,
            ])?,
            priority: u.arbitrary()?,
        });
    }
    let protocol_hash = match u.int_in_range(0..=2)? {
        0 => protocol.hash(),
        1 => theirs(&channels, &messages).hash(),
        _ => u.arbitrary()?,
    };
    let hello = Hello {
        magic,
        version,
        protocol_hash,
        messages,
        channels,
        token: u.arbitrary()?,
    };
    let bytes = hello.to_encoded_vec();
    assert_eq!(bytes.len(), hello.encoded_len());
    assert_eq!(Hello::decode(&bytes).as_ref(), Ok(&hello));
    check(&hello, protocol);

    let reply = match check_hello(&hello, protocol, SERVER_VERSION) {
        Ok(()) => HelloReply::Welcome {
            client_id: u.arbitrary()?,
        },
        Err(reason) => HelloReply::Refused(reason),
    };
    assert_eq!(HelloReply::decode(&reply.to_encoded_vec()), Ok(reply));
    Ok(())
}

/// `check_hello` accepts exactly a hello with the magic, a compatible
/// version and the server's protocol, and names a protocol difference.
fn check(hello: &Hello, protocol: &Protocol) {
    let theirs = theirs(&hello.channels, &hello.messages);
    let matches = hello.magic == PROTOCOL_MAGIC
        && versions_compatible(&hello.version, SERVER_VERSION)
        && hello.protocol_hash == protocol.hash()
        && theirs.hash() == hello.protocol_hash;
    let verdict = check_hello(hello, protocol, SERVER_VERSION);
    assert_eq!(verdict.is_ok(), matches, "{hello:?}: {verdict:?}");
    match verdict {
        Ok(()) => {}
        Err(RefuseReason::ProtocolMismatch { detail }) => assert!(!detail.is_empty()),
        Err(reason) => {
            let _ = reason.to_string();
        }
    }
}

/// The channels `protocol` declares beyond the defaults (as a hello
/// carries them).
fn declared(protocol: &Protocol) -> Vec<ChannelDef> {
    protocol
        .channels()
        .get(Protocol::DEFAULT_CHANNELS..)
        .unwrap_or_default()
        .to_vec()
}

/// The protocol a hello describes: the default channels, its declared
/// ones, its registrations.
fn theirs(declared: &[ChannelDef], messages: &[ProtocolEntry]) -> Protocol {
    let mut channels = Protocol::new().channels().to_vec();
    channels.extend_from_slice(declared);
    Protocol::from_parts(channels, messages.to_vec())
}

fn channel(u: &mut Unstructured<'_>) -> arbitrary::Result<Channel> {
    Ok(*u.choose(&[Channel::RELIABLE, Channel::UNRELIABLE, Channel::SNAPSHOT])?)
}

fn direction(u: &mut Unstructured<'_>) -> arbitrary::Result<Direction> {
    Ok(*u.choose(&[
        Direction::ClientToServer,
        Direction::ServerToClient,
        Direction::Both,
    ])?)
}
