//! The inspector (`zao::inspect`) against the Rust types it stands in for:
//! - bytes → text → bytes is the identity, and text → bytes → text, for
//!   every golden message, for seeded random reference messages, and for a
//!   zoo of types covering every shape kind (recursion, tolerant bodies
//!   from older and newer writers, maps, enums with long tags, floats of
//!   every bit pattern);
//! - it accepts exactly the bytes the Rust decoders accept, with the same
//!   `DecodeError`, on valid encodings, every prefix and seeded mutations;
//! - errors carry the byte offset and the field path;
//! - the protocol JSON reads back to the same schema and refuses a document
//!   that contradicts itself;
//! - a capture written by `CaptureWriter` reads back record for record.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::num::{NonZeroI16, NonZeroU32};
use std::time::{Duration, Instant, SystemTime};

use common::Rng;
use glam::{IVec3, Quat, UVec2};
use zao::inspect::{
    CaptureError, CaptureEvent, CaptureReader, CaptureRecord, CaptureWriter, Flow,
    InspectErrorKind, Inspector, JsonErrorKind, ProtocolSchema, TextError, TextStyle, Value,
};
use zao::proto::{Channel, Direction, Protocol, Role};
use zao::{Decode, DecodeError, Encode, NetMessage};
use zao_messages::{Buttons, GameMessage, samples};

// ---------------------------------------------------------------------------
// A zoo of types: every shape kind at least once.

#[derive(Clone, Debug, PartialEq, Encode, Decode)]
enum Kind {
    #[zao(tag = 0)]
    Plain,
    #[zao(tag = 200)]
    Pair(u32, String),
    #[zao(tag = 1)]
    Nested { x: f32, next: Option<Box<Kind>> },
}

#[derive(Clone, Debug, Default, PartialEq, Encode, Decode)]
struct Tree {
    value: u32,
    children: Vec<Tree>,
}

#[derive(Clone, Debug, Default, PartialEq, Encode, Decode)]
struct Pair(u8, i64);

#[derive(Clone, Debug, Default, PartialEq, Encode, Decode)]
struct Empty;

#[derive(Clone, Debug, Default, PartialEq, Encode, Decode)]
#[zao(tolerant)]
struct SettingsV1 {
    volume: u8,
}

#[derive(Clone, Debug, Default, PartialEq, Encode, Decode)]
#[zao(tolerant)]
struct Settings {
    volume: u8,
    name: String,
    sensitivity: f32,
}

#[derive(Clone, Debug, Default, PartialEq, Encode, Decode)]
#[zao(tolerant)]
struct SettingsV3 {
    volume: u8,
    name: String,
    sensitivity: f32,
    colour: [u8; 3],
}

#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 10)]
struct Everything {
    a: u8,
    b: i8,
    c: u16,
    d: i16,
    e: u32,
    f: i32,
    g: u64,
    h: i64,
    i: u128,
    j: i128,
    k: f32,
    l: f64,
    m: bool,
    n: char,
    o: usize,
    p: isize,
    q: (),
    r: NonZeroU32,
    s: NonZeroI16,
    t: String,
    u: Vec<u8>,
    v: bytes::Bytes,
    w: [u8; 4],
    x: [i16; 3],
    y: Option<u32>,
    z: Option<Option<String>>,
    aa: Box<u64>,
    bb: Box<str>,
    cc: (u8, String, bool),
    dd: (u8,),
    ee: HashMap<u16, Vec<u8>>,
    ff: BTreeMap<String, u8>,
    gg: BTreeMap<(u8, i32), ()>,
    hh: Vec<Vec<u32>>,
    ii: Vec<Kind>,
    jj: Quat,
    kk: IVec3,
    ll: UVec2,
    mm: Pair,
    nn: Empty,
    oo: Settings,
    pp: Tree,
    qq: Buttons,
}

/// The same message as an older and a newer writer send it.
#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 11)]
struct Versioned {
    before: u16,
    settings: Settings,
    after: u16,
}

#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 11)]
struct VersionedOld {
    before: u16,
    settings: SettingsV1,
    after: u16,
}

#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 11)]
struct VersionedNew {
    before: u16,
    settings: SettingsV3,
    after: u16,
}

#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 12)]
struct Position(f32, f32);

#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 13)]
enum Command {
    #[zao(tag = 0)]
    Stop,
    #[zao(tag = 1)]
    Go { to: Position, speed: f64 },
    #[zao(tag = 300)]
    Say(String),
}

#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 14)]
struct Ping;

#[derive(Clone, Debug, PartialEq, Encode, Decode, NetMessage)]
#[zao(id = 200)]
struct Tolerant {
    inner: Settings,
}

fn zoo() -> Protocol {
    let mut p = zao_messages::protocol();
    p.add::<Everything>(Channel::RELIABLE, Direction::Both)
        .add::<Versioned>(Channel::RELIABLE, Direction::Both)
        .add::<Position>(Channel::UNRELIABLE, Direction::Both)
        .add::<Command>(Channel::RELIABLE, Direction::Both)
        .add::<Ping>(Channel::RELIABLE, Direction::Both)
        .add::<Tolerant>(Channel::RELIABLE, Direction::Both);
    p
}

/// Decodes a framed zoo message with its Rust type (the heartbeat, id 0
/// with no body, is the transport's own message).
fn rust_decode(bytes: &[u8]) -> Result<(), DecodeError> {
    if bytes == [0] {
        return Ok(());
    }
    let (id, body) = zao::split_message(bytes)?;
    match id {
        10 => Everything::decode(body).map(drop),
        11 => Versioned::decode(body).map(drop),
        12 => Position::decode(body).map(drop),
        13 => Command::decode(body).map(drop),
        14 => Ping::decode(body).map(drop),
        200 => Tolerant::decode(body).map(drop),
        _ => GameMessage::decode(bytes).map(drop),
    }
}

fn framed<M: NetMessage>(m: &M) -> Vec<u8> {
    let mut buf = vec![0u8; zao::message_len(m)];
    zao::encode_message(m, &mut buf).unwrap();
    buf
}

impl Rng {
    fn string_upto(&mut self, max: usize) -> String {
        let n = self.below(max);
        self.string(n)
    }

    fn bytes_upto(&mut self, max: usize) -> Vec<u8> {
        let n = self.below(max);
        self.bytes(n)
    }

    fn kind(&mut self, depth: u32) -> Kind {
        match self.below(if depth > 3 { 2 } else { 3 }) {
            0 => Kind::Plain,
            1 => Kind::Pair(self.u32(), self.string_upto(5)),
            _ => Kind::Nested {
                x: self.f32_bits(),
                next: self.bool().then(|| Box::new(self.kind(depth + 1))),
            },
        }
    }

    fn tree(&mut self, depth: u32) -> Tree {
        let n = if depth > 3 { 0 } else { self.below(3) };
        Tree {
            value: self.u32(),
            children: (0..n).map(|_| self.tree(depth + 1)).collect(),
        }
    }

    fn settings(&mut self) -> Settings {
        Settings {
            volume: self.u8(),
            name: self.string_upto(6),
            sensitivity: self.f32_bits(),
        }
    }

    fn f64_bits(&mut self) -> f64 {
        match self.below(6) {
            0 => f64::from_bits(0x7ff8_0000_0000_0000 | (self.u64() & 0x0007_ffff_ffff_ffff)),
            1 => [f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, f64::NAN][self.below(5)],
            2 => f64::from_bits(self.u64() & 0x000f_ffff_ffff_ffff),
            _ => f64::from_bits(self.u64()),
        }
    }

    fn everything(&mut self) -> Everything {
        let text_chars = [
            'a', 'é', '😀', '\0', '\n', '"', '\\', '\u{7f}', '\u{9c}', '\'',
        ];
        Everything {
            a: self.u8(),
            b: self.u8() as i8,
            c: self.u16(),
            d: self.u16() as i16,
            e: self.u32(),
            f: self.u32() as i32,
            g: self.u64(),
            h: self.u64() as i64,
            i: u128::from(self.u64()) << 64 | u128::from(self.u64()),
            j: (u128::from(self.u64()) << 64 | u128::from(self.u64())) as i128,
            k: self.f32_bits(),
            l: self.f64_bits(),
            m: self.bool(),
            n: text_chars[self.below(text_chars.len())],
            o: self.u64() as usize >> self.below(64),
            p: (self.u64() as i64 >> self.below(64)) as isize,
            q: (),
            r: NonZeroU32::new(self.u32() | 1).unwrap(),
            s: NonZeroI16::new((self.u16() | 4) as i16).unwrap(),
            t: (0..self.below(8))
                .map(|_| text_chars[self.below(text_chars.len())])
                .collect::<String>()
                + &self.string_upto(4),
            u: self.bytes_upto(6),
            v: if self.bool() {
                bytes::Bytes::from_static(b"plain ascii \"quoted\" \\")
            } else {
                bytes::Bytes::from(self.bytes_upto(9))
            },
            w: [self.u8(), self.u8(), self.u8(), self.u8()],
            x: [self.u16() as i16, self.u16() as i16, self.u16() as i16],
            y: self.bool().then(|| self.u32()),
            z: match self.below(3) {
                0 => None,
                1 => Some(None),
                _ => Some(Some(self.string(3))),
            },
            aa: Box::new(self.u64()),
            bb: self.string_upto(4).into_boxed_str(),
            cc: (self.u8(), self.string(2), self.bool()),
            dd: (self.u8(),),
            ee: (0..self.below(4))
                .map(|_| (self.u16(), self.bytes_upto(3)))
                .collect(),
            ff: (0..self.below(4))
                .map(|_| (self.string_upto(4), self.u8()))
                .collect(),
            gg: (0..self.below(4))
                .map(|_| ((self.u8() % 3, self.u32() as i32 % 5), ()))
                .collect(),
            hh: (0..self.below(3))
                .map(|_| (0..self.below(3)).map(|_| self.u32()).collect())
                .collect(),
            ii: (0..self.below(4)).map(|_| self.kind(0)).collect(),
            jj: Quat::from_xyzw(
                self.f32_bits(),
                self.f32_bits(),
                self.f32_bits(),
                self.f32_bits(),
            ),
            kk: IVec3::new(self.u32() as i32, self.u32() as i32, self.u32() as i32),
            ll: UVec2::new(self.u32(), self.u32()),
            mm: Pair(self.u8(), self.u64() as i64),
            nn: Empty,
            oo: self.settings(),
            pp: self.tree(0),
            qq: Buttons::from_bits(self.u16() & Buttons::ALL.bits()).unwrap(),
        }
    }

    /// A framed message of the zoo or the reference protocol.
    fn message(&mut self) -> Vec<u8> {
        match self.below(12) {
            0 => framed(&self.everything()),
            1 => framed(&Versioned {
                before: self.u16(),
                settings: self.settings(),
                after: self.u16(),
            }),
            2 => framed(&VersionedOld {
                before: self.u16(),
                settings: SettingsV1 { volume: self.u8() },
                after: self.u16(),
            }),
            3 => framed(&VersionedNew {
                before: self.u16(),
                settings: SettingsV3 {
                    volume: self.u8(),
                    name: self.string(2),
                    sensitivity: self.f32_bits(),
                    colour: [self.u8(), self.u8(), self.u8()],
                },
                after: self.u16(),
            }),
            4 => framed(&Position(self.f32_bits(), self.f32_bits())),
            5 => framed(&match self.below(3) {
                0 => Command::Stop,
                1 => Command::Go {
                    to: Position(self.f32_bits(), self.f32_bits()),
                    speed: self.f64_bits(),
                },
                _ => Command::Say(self.string_upto(5)),
            }),
            6 => framed(&Ping),
            7 => framed(&self.player_moved(false)),
            8 => framed(&self.player_input(false)),
            9 => framed(&self.spawn_entity(false)),
            10 => framed(&self.world_snapshot(false)),
            _ => framed(&self.inventory()),
        }
    }
}

/// bytes → text → bytes and text → bytes → text, compact and pretty.
fn round_trip(inspector: &Inspector, bytes: &[u8], seed: u64) -> String {
    let text = inspector
        .to_text(bytes)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    let back = inspector
        .from_text(&text)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
    assert_eq!(back, bytes, "seed {seed}: bytes → text → bytes\n{text}");
    assert_eq!(
        inspector.to_text(&back).unwrap(),
        text,
        "seed {seed}: text → bytes → text"
    );
    let pretty = inspector.to_text_styled(bytes, TextStyle::Pretty).unwrap();
    assert_eq!(
        inspector.from_text(&pretty).unwrap(),
        bytes,
        "seed {seed}: pretty text → bytes\n{pretty}"
    );
    // The dynamic value re-encodes to the bytes too.
    let decoded = inspector.decode(bytes).unwrap();
    assert_eq!(
        inspector
            .encode(decoded.message.id, &decoded.value)
            .unwrap(),
        bytes
    );
    text
}

#[test]
fn golden_messages_read_as_text_and_back() {
    let inspector = Inspector::from_protocol(&zao_messages::protocol());
    let expected = [
        "PlayerMoved { entity: 7, position: (1.5, -2.0, 3.25) }",
        "PlayerInput { tick: 1000, buttons: FIRE | JUMP, aim: (0.5, -1.0), stance: Crouching }",
        "SpawnEntity { entity: 42, prefab: 3, position: (10.0, 0.0, -4.0), \
         rotation: (0.0, 0.0, 0.0, 1.0), name: \"Goblin\" }",
        "WorldSnapshot { tick: 500, players: [{ entity: 100, position: (0.0, 0.5, -0.0) }, \
         { entity: 101, position: (1.0, 0.5, -1.0) }, { entity: 102, position: (2.0, 0.5, -2.0) }] }",
    ];
    let files = common::golden_files();
    for ((name, bytes), expected) in files.iter().zip(expected) {
        assert_eq!(round_trip(&inspector, bytes, 0), expected, "{name}");
    }
    // The inventory's slot order is its writer's (a HashMap): compare by value.
    let (_, inventory) = &files[4];
    let text = round_trip(&inspector, inventory, 0);
    assert!(text.starts_with("Inventory { owner: 9, slots: {"), "{text}");
    assert!(
        text.contains("1: { item: 1001, count: 2, durability: 99, flags: 1 }"),
        "{text}"
    );
    // A hand-written fixture: any order of fields, comments, trailing commas.
    let fixture = "// a player at the origin\n\
                   PlayerMoved { position: (0, -0.0, 1e-3), entity: 9, }";
    let bytes = inspector.from_text(fixture).unwrap();
    let expected = zao_messages::PlayerMoved {
        entity: 9,
        position: glam::Vec3::new(0.0, -0.0, 1e-3),
    };
    assert_eq!(bytes, framed(&expected));
    assert_eq!(
        inspector.to_text(&bytes).unwrap(),
        "PlayerMoved { entity: 9, position: (0.0, -0.0, 0.001) }"
    );
}

#[test]
fn random_messages_round_trip_through_text() {
    let protocol = zoo();
    let inspector = Inspector::from_protocol(&protocol);
    for seed in 0..400 {
        let mut rng = Rng::new(seed);
        let bytes = rng.message();
        round_trip(&inspector, &bytes, seed);
        assert_eq!(
            inspector.decode(&bytes).is_ok(),
            rust_decode(&bytes).is_ok()
        );
    }
}

#[test]
fn tolerant_bodies_from_older_and_newer_writers_keep_their_bytes() {
    let inspector = Inspector::from_protocol(&zoo());
    let old = framed(&VersionedOld {
        before: 1,
        settings: SettingsV1 { volume: 7 },
        after: 2,
    });
    assert_eq!(
        round_trip(&inspector, &old, 0),
        "Versioned { before: 1, settings: { volume: 7 }, after: 2 }"
    );
    let new = framed(&VersionedNew {
        before: 1,
        settings: SettingsV3 {
            volume: 7,
            name: "ab".into(),
            sensitivity: 0.5,
            colour: [1, 2, 255],
        },
        after: 2,
    });
    assert_eq!(
        round_trip(&inspector, &new, 0),
        "Versioned { before: 1, settings: { volume: 7, name: \"ab\", sensitivity: 0.5, \
         .. x\"0102ff\" }, after: 2 }"
    );
    // A tolerant struct's fields must be a leading run.
    let err = inspector
        .from_text("Versioned { before: 1, settings: { name: \"x\" }, after: 2 }")
        .unwrap_err();
    assert_eq!(err.kind, InspectErrorKind::Text(TextError::NotAPrefix));
}

#[test]
fn top_level_forms_of_tuple_unit_and_enum_messages() {
    let inspector = Inspector::from_protocol(&zoo());
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (framed(&Position(1.0, -0.5)), "Position(1.0, -0.5)"),
        (framed(&Ping), "Ping"),
        (framed(&Command::Stop), "Command::Stop"),
        (
            framed(&Command::Go {
                to: Position(0.0, 2.0),
                speed: f64::NAN,
            }),
            "Command::Go { to: (0.0, 2.0), speed: NaN }",
        ),
        (framed(&Command::Say("hi".into())), "Command::Say(\"hi\")"),
        (vec![0x00], "Heartbeat"),
    ];
    for (bytes, text) in cases {
        assert_eq!(round_trip(&inspector, &bytes, 0), text);
    }
}

#[test]
fn floats_survive_text_bit_for_bit() {
    let inspector = Inspector::from_protocol(&zoo());
    let mut rng = Rng::new(7);
    let mut specials32: Vec<u32> = vec![
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_0000,
        0x7f80_0001,
        0x7fbf_ffff,
        1,
        0x007f_ffff,
        0x0080_0000,
        0x7f7f_ffff,
        0x8000_0001,
    ];
    specials32.extend((0..20_000).map(|_| rng.u32()));
    for bits in specials32 {
        let (x, y) = (f32::from_bits(bits), f32::from_bits(bits.rotate_left(7)));
        let bytes = framed(&Position(x, y));
        let text = round_trip(&inspector, &bytes, u64::from(bits));
        let back = inspector.from_text(&text).unwrap();
        assert_eq!(back, bytes, "{bits:#010x}: {text}");
    }
    for i in 0..20_000u64 {
        let bits = match i {
            0 => 0x7ff8_0000_0000_0001,
            1 => 0xfff0_0000_0000_0000,
            2 => 1,
            3 => 0x8000_0000_0000_0000,
            _ => rng.u64(),
        };
        let bytes = framed(&Command::Go {
            to: Position(0.0, 0.0),
            speed: f64::from_bits(bits),
        });
        round_trip(&inspector, &bytes, bits);
    }
    // The notation: NaN payloads and signs are spelled out.
    let bytes = framed(&Position(f32::from_bits(0xffc0_0001), -0.0));
    assert_eq!(
        inspector.to_text(&bytes).unwrap(),
        "Position(NaN(0xffc00001), -0.0)"
    );
    let bytes = framed(&Position(f32::from_bits(1), f32::NEG_INFINITY));
    assert_eq!(inspector.to_text(&bytes).unwrap(), "Position(1e-45, -inf)");
}

/// Every prefix and seeded mutations of valid messages: the inspector and
/// the Rust decoders agree on Ok/Err and on the error.
#[test]
fn accepts_exactly_what_the_rust_decoders_accept() {
    let inspector = Inspector::from_protocol(&zoo());
    let mut agree = 0usize;
    let seeds: u64 = std::env::var("ZAO_SEEDS").map_or(300, |s| s.parse().unwrap());
    for seed in 0..seeds {
        let mut rng = Rng::new(seed + 10_000);
        let bytes = rng.message();
        let mut inputs: Vec<Vec<u8>> = (0..bytes.len().min(80))
            .map(|n| bytes[..n].to_vec())
            .collect();
        for _ in 0..40 {
            let mut m = bytes.clone();
            match rng.below(4) {
                0 => {
                    let i = rng.below(m.len());
                    m[i] = rng.u8();
                }
                1 => {
                    let i = rng.below(m.len());
                    m[i] ^= 1 << rng.below(8);
                }
                2 => {
                    let i = rng.below(m.len() + 1);
                    m.insert(i, rng.u8());
                }
                _ => {
                    let i = rng.below(m.len());
                    m.remove(i);
                }
            }
            inputs.push(m);
        }
        for input in inputs {
            let ours = inspector.decode(&input).map(drop).map_err(|e| e.kind);
            let theirs = rust_decode(&input).map_err(InspectErrorKind::Decode);
            assert_eq!(
                ours,
                theirs,
                "seed {seed}: {input:02x?}\n{}",
                inspector.annotate(&input)
            );
            agree += 1;
            if ours.is_ok() {
                // Whatever decodes prints and parses back to itself.
                round_trip(&inspector, &input, seed);
            }
        }
    }
    assert!(agree > 10_000, "{agree}");
}

#[test]
fn hostile_bytes_and_text_are_errors_not_panics() {
    let inspector = Inspector::from_protocol(&zoo());
    for seed in 0..2_000 {
        let mut rng = Rng::new(seed + 77);
        let len = rng.below(64);
        let mut bytes = rng.bytes(len);
        if let Some(first) = bytes.first_mut() {
            *first = [1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 200][rng.below(11)];
        }
        let _ = inspector.decode(&bytes);
        let _ = inspector.annotate(&bytes).to_string();
        let text: String = (0..rng.below(80))
            .map(|_| {
                let pieces = [
                    "{",
                    "}",
                    "(",
                    ")",
                    "[",
                    "]",
                    ",",
                    ":",
                    "..",
                    "\"",
                    "'",
                    "b\"",
                    "x\"",
                    "1",
                    "-",
                    "e",
                    "NaN",
                    "inf",
                    " ",
                    "Some",
                    "None",
                    "Everything",
                    "a",
                    "\\u{",
                    "|",
                    "Command",
                    "::",
                    "Go",
                    "0x",
                    "//",
                ];
                pieces[rng.below(pieces.len())]
            })
            .collect();
        let _ = inspector.from_text(&text);
        let _ = ProtocolSchema::from_json(&text);
    }
}

#[test]
fn errors_name_the_byte_offset_and_the_field() {
    let inspector = Inspector::from_protocol(&zoo());
    // A snapshot cut short: its player count claims more than is left.
    let bytes = framed(&samples::world_snapshot(3));
    let err = inspector.decode(&bytes[..30]).unwrap_err();
    assert_eq!(
        (err.kind, err.offset, err.path.as_str()),
        (
            InspectErrorKind::Decode(DecodeError::LengthExceedsRemaining),
            5,
            "players"
        )
    );
    // An inventory with slot 3 twice: the second key, where it starts.
    let stack = [0xe8, 0x03, 0, 0, 1, 0, 100, 0, 0];
    let mut bytes = vec![0x05, 9, 0, 0, 0, 2];
    for _ in 0..2 {
        bytes.extend_from_slice(&[3, 0, 0, 0]);
        bytes.extend_from_slice(&stack);
    }
    let err = inspector.decode(&bytes).unwrap_err();
    assert_eq!(
        err.kind,
        InspectErrorKind::Decode(DecodeError::DuplicateKey)
    );
    assert_eq!((err.offset, err.path.as_str()), (19, "slots[1].key"));
    assert_eq!(
        err.to_string(),
        "at byte 19, slots[1].key: map key repeated or out of order"
    );
    // A stance tag with no variant.
    let mut input = framed(&samples::player_input());
    input[15] = 9;
    let err = inspector.decode(&input).unwrap_err();
    assert_eq!(
        (err.kind, err.offset, err.path.as_str()),
        (
            InspectErrorKind::Decode(DecodeError::InvalidTag),
            15,
            "stance"
        )
    );
    let annotated = inspector.annotate(&input).to_string();
    assert!(annotated.contains("tick: u32 = 1000"), "{annotated}");
    assert!(
        annotated.ends_with("error at byte 15, stance: tag matches no variant\n"),
        "{annotated}"
    );
    // Text errors point into the text.
    let err = inspector
        .from_text("PlayerMoved { entity: 7, position: (1.5, 2.0) }")
        .unwrap_err();
    assert_eq!(err.kind, InspectErrorKind::Text(TextError::WrongLength));
    assert_eq!((err.offset, err.path.as_str()), (35, "position"));
    let err = inspector
        .from_text("PlayerInput { tick: 1, buttons: FIRE | KICK, aim: (0, 0), stance: Prone }")
        .unwrap_err();
    assert_eq!(err.kind, InspectErrorKind::Text(TextError::UnknownName));
    assert_eq!(err.path.as_str(), "buttons");
    let err = inspector
        .from_text("Inventory { owner: 1, slots: { 3: { item: 1, count: 1, durability: 1, flags: 0 }, 3: { item: 2, count: 1, durability: 1, flags: 0 } } }")
        .unwrap_err();
    assert_eq!(err.kind, InspectErrorKind::Text(TextError::DuplicateKey));
    assert_eq!(err.path.as_str(), "slots[1].key");
    let err = inspector.from_text("PlayerMoved { entity: 4294967296, position: (0, 0, 0) }");
    assert_eq!(
        err.unwrap_err().kind,
        InspectErrorKind::Text(TextError::OutOfRange)
    );
    let err = inspector.from_text("Nobody {}").unwrap_err();
    assert_eq!(err.kind, InspectErrorKind::Text(TextError::UnknownName));
    // A value the text can say but the limits refuse: the decode error.
    let huge = format!(
        "SpawnEntity {{ entity: 1, prefab: 1, position: (0, 0, 0), rotation: (0, 0, 0, 1), name: \"{}\" }}",
        "a".repeat(70_000)
    );
    assert_eq!(
        inspector.from_text(&huge).unwrap_err().kind,
        InspectErrorKind::Decode(DecodeError::OverLimit)
    );
}

#[test]
fn deep_recursion_stops_at_the_depth_limit() {
    let inspector = Inspector::from_protocol(&zoo());
    // Kind::Nested { x, next: Some(..) } nested 40 deep: past max_depth 32.
    let mut kind = Kind::Plain;
    for _ in 0..40 {
        kind = Kind::Nested {
            x: 1.0,
            next: Some(Box::new(kind)),
        };
    }
    let mut everything = Rng::new(1).everything();
    everything.ii = vec![kind];
    let bytes = framed(&everything);
    let err = inspector.decode(&bytes).unwrap_err();
    assert_eq!(
        InspectErrorKind::Decode(rust_decode(&bytes).unwrap_err()),
        err.kind
    );
    assert_eq!(
        err.kind,
        InspectErrorKind::Decode(DecodeError::DepthExceeded)
    );
}

#[test]
fn protocol_json_reads_back_and_refuses_contradictions() {
    let protocol = zoo();
    let json = protocol.to_json();
    let schema = ProtocolSchema::from_json(&json).unwrap();
    assert_eq!(schema, ProtocolSchema::from_protocol(&protocol));
    assert_eq!(schema.hash(), protocol.hash());
    for m in schema.messages() {
        assert_eq!(
            m.shape.as_ref().unwrap().fingerprint(),
            m.fingerprint,
            "{}",
            m.name
        );
    }
    // An inspector from the JSON reads what one from the Rust types reads.
    let from_json = Inspector::new(schema);
    let from_rust = Inspector::from_protocol(&protocol);
    let mut rng = Rng::new(3);
    for _ in 0..50 {
        let bytes = rng.message();
        assert_eq!(
            from_json.to_text(&bytes).unwrap(),
            from_rust.to_text(&bytes).unwrap()
        );
    }
    // Edits that contradict the document are refused with what and where.
    let retyped = json.replacen(
        r#"{"name": "entity", "shape": {"kind": "u32"}}"#,
        r#"{"name": "entity", "shape": {"kind": "u64"}}"#,
        1,
    );
    assert_ne!(retyped, json);
    let err = ProtocolSchema::from_json(&retyped).unwrap_err();
    assert_eq!(err.kind, JsonErrorKind::FingerprintMismatch(1));
    let rehashed = json.replacen("\"hash\": \"0x", "\"hash\": \"0x1", 1);
    assert!(ProtocolSchema::from_json(&rehashed).is_err());
    let err = ProtocolSchema::from_json(&json.replacen(
        "\"channel\": \"unreliable\"",
        "\"channel\": \"reliable\"",
        1,
    ))
    .unwrap_err();
    assert_eq!(err.kind, JsonErrorKind::HashMismatch);
    let deep = "[".repeat(10_000);
    assert_eq!(
        ProtocolSchema::from_json(&deep).unwrap_err().kind,
        JsonErrorKind::TooDeep
    );
    assert!(matches!(
        ProtocolSchema::from_json("{\"format\": \"zao-protocol\"}")
            .unwrap_err()
            .kind,
        JsonErrorKind::Missing("version")
    ));
}

#[test]
fn a_capture_reads_back_record_for_record() {
    let protocol = zoo();
    let start = Instant::now();
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut writer =
        CaptureWriter::with_start(Vec::new(), &protocol, Role::Server, start, wall).unwrap();
    let mut rng = Rng::new(11);
    let messages: Vec<Vec<u8>> = (0..50).map(|_| rng.message()).collect();
    writer
        .connected(start + Duration::from_millis(1), 1, "127.0.0.1:5000")
        .unwrap();
    for (i, m) in messages.iter().enumerate() {
        let flow = if i % 2 == 0 {
            Flow::ClientToServer
        } else {
            Flow::ServerToClient
        };
        let channel = [Channel::RELIABLE, Channel::UNRELIABLE, Channel::SNAPSHOT][i % 3];
        let at = start + Duration::from_micros(1_000 * i as u64 + 7);
        writer
            .message(at, 1 + (i % 3) as u64, flow, channel, m)
            .unwrap();
    }
    writer
        .disconnected(start + Duration::from_secs(2), 1, "client closed")
        .unwrap();
    let file = writer.into_inner().unwrap();

    let mut reader = CaptureReader::new(file.as_slice()).unwrap();
    let header = reader.header().clone();
    assert_eq!(header.side, Role::Server);
    assert_eq!(header.zao_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(header.start_unix_micros, 1_700_000_000_000_000);
    assert_eq!(header.protocol_hash, protocol.hash());
    let schema = header.schema.unwrap();
    assert_eq!(schema, ProtocolSchema::from_protocol(&protocol));
    let inspector = Inspector::new(schema);

    let first = reader.next_record().unwrap().unwrap();
    assert_eq!(
        first,
        CaptureRecord {
            time: Duration::from_millis(1),
            connection: 1,
            event: CaptureEvent::Connected {
                peer: "127.0.0.1:5000"
            },
        }
    );
    for (i, m) in messages.iter().enumerate() {
        let record = reader.next_record().unwrap().unwrap();
        assert_eq!(record.time, Duration::from_micros(1_000 * i as u64 + 7));
        assert_eq!(record.connection, 1 + (i % 3) as u64);
        let CaptureEvent::Message {
            flow,
            channel,
            framed,
        } = record.event
        else {
            panic!("record {i} is not a message");
        };
        assert_eq!(flow == Flow::ClientToServer, i % 2 == 0);
        assert_eq!(usize::from(channel.0), i % 3);
        assert_eq!(framed, m.as_slice());
        inspector.to_text(framed).unwrap();
    }
    let last = reader.next_record().unwrap().unwrap();
    assert_eq!(
        last.event,
        CaptureEvent::Disconnected {
            reason: "client closed"
        }
    );
    assert!(reader.next_record().unwrap().is_none());

    // A writer that stopped mid-record: every whole record reads, then
    // the cut one is reported where it starts.
    let cut = &file[..file.len() - 5];
    let mut reader = CaptureReader::new(cut).unwrap();
    let mut whole = 0;
    let err = loop {
        match reader.next_record() {
            Ok(Some(_)) => whole += 1,
            Ok(None) => panic!("the cut record read"),
            Err(e) => break e,
        }
    };
    assert_eq!(whole, 51);
    assert!(matches!(err, CaptureError::Truncated { .. }), "{err}");
    assert!(matches!(
        CaptureReader::new(&b"PK\x03\x04 not a capture"[..]).unwrap_err(),
        CaptureError::NotACapture
    ));
    // `create` writes the same header to a file.
    let path = std::env::temp_dir().join(format!("zao-capture-{}.zcap", std::process::id()));
    let mut writer = CaptureWriter::create(&path, &protocol, Role::Client).unwrap();
    writer
        .message(
            Instant::now(),
            0,
            Flow::ClientToServer,
            Channel::RELIABLE,
            &messages[0],
        )
        .unwrap();
    drop(writer.into_inner().unwrap());
    let on_disk = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut reader = CaptureReader::new(on_disk.as_slice()).unwrap();
    assert_eq!(reader.header().side, Role::Client);
    assert!(reader.next_record().unwrap().is_some());
    assert!(reader.next_record().unwrap().is_none());
    // Every prefix of the header is an error, never a panic.
    for n in 0..file.len().min(4_000) {
        let _ =
            CaptureReader::new(&file[..n]).map(|mut r| while let Ok(Some(_)) = r.next_record() {});
    }
}

#[test]
fn a_value_built_by_hand_encodes_or_says_why_not() {
    let inspector = Inspector::from_protocol(&zao_messages::protocol());
    let value = Value::Struct {
        fields: vec![
            Value::Uint(7),
            Value::List(vec![Value::F32(1.5), Value::F32(-2.0), Value::F32(3.25)]),
        ],
        extra: Vec::new(),
    };
    assert_eq!(
        inspector.encode(1, &value).unwrap(),
        framed(&samples::player_moved())
    );
    let wrong = Value::Struct {
        fields: vec![Value::Str("seven".into()), Value::Unit],
        extra: Vec::new(),
    };
    let err = inspector.encode(1, &wrong).unwrap_err();
    assert_eq!(err.kind, InspectErrorKind::Mismatch);
    assert_eq!(err.path.as_str(), "entity");
    assert_eq!(
        inspector.encode(99, &value).unwrap_err().kind,
        InspectErrorKind::Decode(DecodeError::UnknownMessage(99))
    );
}
