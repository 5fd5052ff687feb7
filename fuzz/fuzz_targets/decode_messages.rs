//! Arbitrary bytes decoded as every reference message, framed
//! (`GameMessage::decode`) and bare (each body type's `Decode::decode`).
//!
//! - Never a panic.
//! - Canonical: if a decode is `Ok`, re-encoding gives the input back, except
//!   an `Inventory` with two or more slots, whose `HashMap` is written in its
//!   own iteration order (docs/WIRE.md §6): its re-encoding has the input's
//!   length and decodes to the same value.
//! - `decode_in_place` into a warmed value (a sample, a default, and the
//!   value its own previous decode left behind) succeeds exactly when
//!   `decode` does, with the same value.
//!
//! Values holding floats are compared through their encodings, so NaN
//! payloads and the sign of zero count and NaN != NaN does not.

#![no_main]
// Our code only: `fuzz_target!` expands to a `#[no_mangle] extern "C"` entry
// point, but lints do not fire inside another crate's macro expansion.
#![forbid(unsafe_code)]

use core::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use zao::{Decode, DecodeError, Encode};
use zao_messages::{GameMessage, Inventory, SpawnEntity, SpawnEntityRef, samples};

fuzz_target!(|data: &[u8]| {
    framed(data);
    canonical_body(data, samples::player_moved());
    canonical_body(data, samples::player_input());
    canonical_body(data, samples::spawn_entity());
    canonical_body(data, samples::world_snapshot(40));
    inventory(data);
    spawn_entity_ref(data);
});

/// `GameMessage::decode`: `id + body`.
fn framed(data: &[u8]) {
    let Ok(msg) = GameMessage::decode(data) else {
        return;
    };
    let len = msg.encoded_len();
    assert_eq!(len, data.len(), "encoded_len of {msg:?}");
    let mut buf = vec![0u8; len];
    assert_eq!(msg.encode(&mut buf), Ok(len), "{msg:?}");
    match &msg {
        GameMessage::Inventory(inv) if inv.slots.len() >= 2 => {
            assert_eq!(GameMessage::decode(&buf), Ok(msg.clone()));
        }
        _ => assert_eq!(buf, data, "re-encoding of {msg:?}"),
    }
}

/// A body type whose encoding is a function of the value.
fn canonical_body<T>(data: &[u8], warm: T)
where
    T: for<'de> Decode<'de> + Encode + Default + Debug,
{
    let decoded = T::decode(data);
    if let Ok(value) = &decoded {
        assert_eq!(value.encoded_len(), data.len(), "encoded_len of {value:?}");
        assert_eq!(value.to_encoded_vec(), data, "re-encoding of {value:?}");
    }
    let same = |a: &T, b: &T| a.to_encoded_vec() == b.to_encoded_vec();
    in_place(data, &decoded, warm, same);
    in_place(data, &decoded, T::default(), same);
}

fn inventory(data: &[u8]) {
    let decoded = Inventory::decode(data);
    if let Ok(inv) = &decoded {
        let bytes = inv.to_encoded_vec();
        assert_eq!(inv.encoded_len(), data.len(), "encoded_len of {inv:?}");
        assert_eq!(bytes.len(), data.len());
        if inv.slots.len() < 2 {
            assert_eq!(bytes, data, "re-encoding of {inv:?}");
        } else {
            // Another order of the same entries: same value (§6).
            assert_eq!(bytes.get(..4), data.get(..4), "owner");
            assert_eq!(Inventory::decode(&bytes).as_ref(), Ok(inv));
        }
    }
    let same = |a: &Inventory, b: &Inventory| a == b;
    in_place(data, &decoded, samples::inventory(10), same);
    in_place(data, &decoded, Inventory::default(), same);
}

/// The borrowed twin accepts exactly what `SpawnEntity` accepts, with the
/// same value.
fn spawn_entity_ref(data: &[u8]) {
    let borrowed = SpawnEntityRef::decode(data);
    let owned = SpawnEntity::decode(data);
    match (&borrowed, &owned) {
        (Ok(b), Ok(o)) => {
            assert_eq!(b.to_encoded_vec(), data, "re-encoding of {b:?}");
            assert_eq!(b.to_owned().to_encoded_vec(), o.to_encoded_vec());
        }
        (Err(_), Err(_)) => {}
        _ => panic!("SpawnEntityRef::decode {borrowed:?} but SpawnEntity::decode {owned:?}"),
    }
    let warm = SpawnEntityRef {
        entity: 1,
        prefab: 2,
        position: glam::Vec3::ONE,
        rotation: glam::Quat::IDENTITY,
        name: "warm",
    };
    in_place(data, &borrowed, warm, |a, b| a.to_encoded_vec() == b.to_encoded_vec());
}

/// `decode_in_place` into `warm`, then again into what that left behind.
fn in_place<'de, T>(
    data: &'de [u8],
    decoded: &Result<T, DecodeError>,
    mut warm: T,
    same: impl Fn(&T, &T) -> bool,
) where
    T: Decode<'de> + Debug,
{
    for round in 0..2 {
        let got = warm.decode_in_place(data);
        match (decoded, got) {
            (Ok(value), Ok(())) => {
                assert!(
                    same(value, &warm),
                    "round {round}: decode {value:?}, decode_in_place {warm:?}"
                );
            }
            (Err(_), Err(_)) => {}
            (d, g) => panic!("round {round}: decode {d:?} but decode_in_place {g:?}"),
        }
    }
}
