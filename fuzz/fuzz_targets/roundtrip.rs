//! Structured values of every reference message, built from arbitrary
//! primitives (floats from arbitrary bits: NaN payloads, -0.0, subnormals):
//!
//! - `encoded_len` is what `encode` writes; a buffer one byte short is
//!   `EncodeError { needed, available }` and is left untouched.
//! - `decode(encode(x))` is `x`, floats bit for bit (compared through the
//!   re-encoding; an `Inventory` holds no float and compares with `==`).
//! - Every strict prefix of the encoding fails, bare and framed.
//! - `decode_in_place` into a warmed value gives the same value.

#![no_main]
// Our code only: `fuzz_target!` expands to a `#[no_mangle] extern "C"` entry
// point, but lints do not fire inside another crate's macro expansion.
#![forbid(unsafe_code)]

use core::fmt::Debug;

use arbitrary::Arbitrary;
use glam::{Quat, Vec2, Vec3};
use libfuzzer_sys::fuzz_target;
use zao::{Decode, Encode, EncodeError, NetMessage};
use zao_messages::{
    Buttons, GameMessage, Inventory, ItemStack, PlayerInput, PlayerMoved, PlayerState, SpawnEntity,
    SpawnEntityRef, Stance, WorldSnapshot, samples,
};

#[derive(Arbitrary, Debug)]
enum Case {
    Moved {
        entity: u32,
        position: [u32; 3],
    },
    Input {
        tick: u32,
        buttons: u16,
        aim: [u32; 2],
        stance: u8,
    },
    Spawn {
        entity: u32,
        prefab: u16,
        position: [u32; 3],
        rotation: [u32; 4],
        name: String,
    },
    Snapshot {
        tick: u32,
        players: Vec<(u32, [u32; 3])>,
    },
    Inventory {
        owner: u32,
        slots: Vec<(u32, (u32, u16, u16, u8))>,
    },
}

fuzz_target!(|case: Case| {
    match case {
        Case::Moved { entity, position } => {
            let m = PlayerMoved {
                entity,
                position: vec3(position),
            };
            check(&m, samples::player_moved(), GameMessage::PlayerMoved);
        }
        Case::Input {
            tick,
            buttons,
            aim,
            stance,
        } => {
            let m = PlayerInput {
                tick,
                buttons: Buttons::from_bits(buttons & Buttons::ALL.bits()).unwrap_or_default(),
                aim: Vec2::from_array(aim.map(f32::from_bits)),
                stance: match stance % 3 {
                    0 => Stance::Standing,
                    1 => Stance::Crouching,
                    _ => Stance::Prone,
                },
            };
            check(&m, samples::player_input(), GameMessage::PlayerInput);
        }
        Case::Spawn {
            entity,
            prefab,
            position,
            rotation,
            name,
        } => {
            let m = SpawnEntity {
                entity,
                prefab,
                position: vec3(position),
                rotation: Quat::from_array(rotation.map(f32::from_bits)),
                name,
            };
            check(&m, samples::spawn_entity(), GameMessage::SpawnEntity);
            // The borrowed twin has the same wire form.
            let bytes = m.to_encoded_vec();
            let r = SpawnEntityRef::decode(&bytes).expect("SpawnEntityRef of a SpawnEntity");
            assert_eq!(r.name, m.name);
            assert_eq!(r.to_encoded_vec(), bytes);
        }
        Case::Snapshot { tick, players } => {
            let m = WorldSnapshot {
                tick,
                players: players
                    .into_iter()
                    .map(|(entity, position)| PlayerState {
                        entity,
                        position: vec3(position),
                    })
                    .collect(),
            };
            check(&m, samples::world_snapshot(40), GameMessage::WorldSnapshot);
        }
        Case::Inventory { owner, slots } => {
            let m = Inventory {
                owner,
                slots: slots
                    .into_iter()
                    .map(|(slot, (item, count, durability, flags))| {
                        let stack = ItemStack {
                            item,
                            count,
                            durability,
                            flags,
                        };
                        (slot, stack)
                    })
                    .collect(),
            };
            check(&m, samples::inventory(10), GameMessage::Inventory);
        }
    }
});

fn vec3(bits: [u32; 3]) -> Vec3 {
    Vec3::from_array(bits.map(f32::from_bits))
}

fn check<M>(msg: &M, mut warm: M, wrap: fn(M) -> GameMessage)
where
    M: NetMessage + for<'de> Decode<'de> + Clone + PartialEq + Debug,
{
    // Encode: the size is exact, the too-small buffer is refused untouched.
    let len = msg.encoded_len();
    let mut buf = vec![0xa5u8; len + 8];
    assert_eq!(msg.encode(&mut buf), Ok(len), "encode of {msg:?}");
    assert!(buf.get(len..).is_some_and(|t| t.iter().all(|&b| b == 0xa5)));
    buf.truncate(len);
    assert_eq!(msg.to_encoded_vec(), buf, "to_vec of {msg:?}");
    if let Some(short) = len.checked_sub(1) {
        let mut small = vec![0xa5u8; short];
        assert_eq!(
            msg.encode(&mut small),
            Err(EncodeError {
                needed: len,
                available: short
            })
        );
        assert!(small.iter().all(|&b| b == 0xa5), "a failed encode wrote");
    }

    // Decode: the same value, floats bit for bit.
    let decoded = M::decode(&buf).unwrap_or_else(|e| panic!("decode of {msg:?}: {e:?}"));
    assert_same(msg, &decoded, &buf);
    warm.decode_in_place(&buf)
        .unwrap_or_else(|e| panic!("decode_in_place of {msg:?}: {e:?}"));
    assert_same(msg, &warm, &buf);
    for k in prefixes(len) {
        let r = M::decode(buf.get(..k).unwrap_or_default());
        assert!(r.is_err(), "prefix {k}/{len} of {msg:?} decoded: {r:?}");
    }

    // Framed: id + body, through the dispatcher.
    let framed_len = zao::message_len(msg);
    let mut framed = vec![0u8; framed_len];
    assert_eq!(zao::encode_message(msg, &mut framed), Ok(framed_len));
    assert_eq!(framed.get(framed_len - len..), Some(&buf[..]));
    let game = wrap(msg.clone());
    assert_eq!(game.encoded_len(), framed_len);
    let back = GameMessage::decode(&framed).unwrap_or_else(|e| panic!("{msg:?}: {e:?}"));
    let mut again = vec![0u8; framed_len];
    assert_eq!(back.encode(&mut again), Ok(framed_len));
    if matches!(back, GameMessage::Inventory(_)) {
        assert_eq!(back, game);
    } else {
        assert_eq!(again, framed, "framed re-encoding of {msg:?}");
    }
    let direct = zao::decode_message::<M>(&framed).unwrap_or_else(|e| panic!("{msg:?}: {e:?}"));
    assert_same(msg, &direct, &buf);
    for k in prefixes(framed_len) {
        let r = GameMessage::decode(framed.get(..k).unwrap_or_default());
        assert!(
            r.is_err(),
            "framed prefix {k}/{framed_len} of {msg:?}: {r:?}"
        );
    }
}

/// `decoded` is `msg`: equal encodings, except `Inventory` (a `HashMap`,
/// encoded in its own order, §6), which holds no float and compares by value.
fn assert_same<M: NetMessage + PartialEq + Debug>(msg: &M, decoded: &M, bytes: &[u8]) {
    if M::ID == Inventory::ID {
        assert_eq!(decoded, msg);
        assert_eq!(decoded.encoded_len(), bytes.len());
    } else {
        assert_eq!(decoded.to_encoded_vec(), bytes, "{msg:?} came back as {decoded:?}");
    }
}

/// Strict prefix lengths to try: all of them for up to 512 bytes; beyond
/// that the first and last 128 and a stride between, to keep an input's cost
/// linear rather than quadratic in its size.
fn prefixes(len: usize) -> impl Iterator<Item = usize> {
    let all = len <= 512;
    let stride = (len / 64).max(1);
    (0..len).filter(move |&k| all || k < 128 || k + 128 >= len || k % stride == 0)
}
