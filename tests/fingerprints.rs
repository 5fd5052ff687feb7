//! Fingerprint values pinned from before shapes existed (commit 4d3337a,
//! when `Schema::FINGERPRINT` was mixed by hand in each impl): computing
//! them from `Schema::SHAPE` must not change a single one, or every peer
//! built before would be refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::num::{NonZeroI64, NonZeroU8, NonZeroU32};

use glam::{IVec3, Quat, UVec2, Vec2, Vec3, Vec4};
use zao::proto::{Channel, Direction, Hello, HelloReply, ProtocolEntry, RefuseReason};
use zao::{Decode, Encode, Schema};
use zao_messages::{
    Buttons, Inventory, ItemStack, PlayerInput, PlayerMoved, PlayerState, SpawnEntity,
    SpawnEntityRef, Stance, WorldSnapshot,
};

#[derive(Encode, Decode)]
struct Node {
    value: u32,
    children: Vec<Node>,
}

#[derive(Encode, Decode)]
struct Linked {
    value: u8,
    next: Option<Box<Self>>,
}

#[derive(Encode, Decode)]
struct Pair(u32, String);

#[derive(Encode, Decode)]
struct Empty;

#[derive(Encode, Decode, Default)]
#[zao(tolerant)]
struct Settings {
    volume: u8,
    name: String,
}

#[derive(Encode, Decode)]
struct Generic<T> {
    inner: T,
    list: Vec<T>,
}

#[derive(Encode, Decode)]
enum Shape {
    #[zao(tag = 300)]
    Circle { radius: f32 },
    #[zao(tag = 1)]
    Square(f64),
    #[zao(tag = 0)]
    Nothing,
}

macro_rules! list {
    ($($ty:ty),* $(,)?) => {
        vec![$((stringify!($ty), <$ty as Schema>::FINGERPRINT)),*]
    };
}

fn all() -> Vec<(&'static str, u64)> {
    list![
        u8, u16, u32, u64, u128, i8, i16, i32, i64, i128, f32, f64, bool, char, usize, isize, (),
        NonZeroU8, NonZeroU32, NonZeroI64,
        str, String, &str, Cow<'static, str>, Box<str>,
        Vec<u8>, &[u8], bytes::Bytes, [u16], Vec<String>, [u32; 4], [Vec3; 2],
        Option<u32>, Option<Option<String>>, Box<u64>, &u32,
        (u8,), (u8, String), (u8, u16, u32, u64, i8, i16, i32, i64),
        HashMap<u32, String>, BTreeMap<String, Vec<u8>>,
        Vec2, Vec3, Vec4, Quat, IVec3, UVec2,
        PlayerMoved, PlayerInput, SpawnEntity, SpawnEntityRef<'static>, WorldSnapshot, Inventory,
        PlayerState, ItemStack, Stance, Buttons,
        Hello, HelloReply, RefuseReason, ProtocolEntry, Channel, Direction,
        Node, Linked, Pair, Empty, Settings, Generic<u32>, Generic<String>, Shape,
    ]
}

/// Every value as it was before `Schema::SHAPE` existed.
const PINNED: &[(&str, u64)] = &[
    ("u8", 0x9c88c3d328cbe24a),
    ("u16", 0x2aebfdd28e1360ba),
    ("u32", 0x2af301d28e198634),
    ("u64", 0x2b03fdd28e27f29b),
    ("u128", 0xf235ececa3f41aa5),
    ("i8", 0x9c7b3bd328c070d6),
    ("i16", 0x06ffc9d2795e2916),
    ("i32", 0x0706d5d279645c28),
    ("i64", 0x06fc49d2795b19bf),
    ("i128", 0x495d9c8760853539),
    ("f32", 0x866570d230e6ffe1),
    ("f64", 0x866fe4d230f01982),
    ("bool", 0x654e6e5cb0df2a01),
    ("char", 0x508afd55cbf45999),
    ("usize", 0xfb566655e51db046),
    ("isize", 0x56b79e94b2494bea),
    ("()", 0xf2a939eb82123e3b),
    ("NonZeroU8", 0x7d96df2f823c1360),
    ("NonZeroU32", 0x799af461996cd61a),
    ("NonZeroI64", 0x9d981861ae3065c1),
    ("str", 0x3c34fdd297db1a89),
    ("String", 0x3c34fdd297db1a89),
    ("&str", 0x3c34fdd297db1a89),
    ("Cow<'static, str>", 0x3c34fdd297db1a89),
    ("Box<str>", 0x3c34fdd297db1a89),
    ("Vec<u8>", 0x9e6d4490b5a94278),
    ("&[u8]", 0x9e6d4490b5a94278),
    ("bytes::Bytes", 0x9e6d4490b5a94278),
    ("[u16]", 0x36faf4d25e3c348e),
    ("Vec<String>", 0x1c424f4e132b6e15),
    ("[u32; 4]", 0xa82057bb73033fe8),
    ("[Vec3; 2]", 0x838b52ded6f05442),
    ("Option<u32>", 0x3f97feeaa5ceb0b3),
    ("Option<Option<String>>", 0x55c489f4a78b0cdf),
    ("Box<u64>", 0x2b03fdd28e27f29b),
    ("&u32", 0x2af301d28e198634),
    ("(u8,)", 0x797016988d616093),
    ("(u8, String)", 0x51ad3dfa50d731eb),
    ("(u8, u16, u32, u64, i8, i16, i32, i64)", 0xa89156daf6ab0f53),
    ("HashMap<u32, String>", 0xc96bf1bf34fe8a09),
    ("BTreeMap<String, Vec<u8>>", 0x6315b36a818bf964),
    ("Vec2", 0x1f5fff2bbc200056),
    ("Vec3", 0x72209f4e1aaa4f19),
    ("Vec4", 0xe85dfbcfbc72b3bc),
    ("Quat", 0xc4cf401fd1d970d5),
    ("IVec3", 0x3d58d3161d41786b),
    ("UVec2", 0xd726cb4d8f94a300),
    ("PlayerMoved", 0x17f43c4427b2d450),
    ("PlayerInput", 0x73bf220f3eb60602),
    ("SpawnEntity", 0x17253e58ade539c1),
    ("SpawnEntityRef<'static>", 0x17253e58ade539c1),
    ("WorldSnapshot", 0xc174223d1073dc29),
    ("Inventory", 0xd952fef0cf6b432f),
    ("PlayerState", 0x17f43c4427b2d450),
    ("ItemStack", 0x5414091bf0cee15a),
    ("Stance", 0x1011ba2a67277b93),
    ("Buttons", 0xa017b38d1955be44),
    ("Hello", 0xb3cf59b18f6826ed),
    // RefuseReason gained DatagramsTooSmall, AlreadyConnected and
    // AuthUnavailable (the session refactor), then TooManyFromAddress,
    // Draining, Busy and AddressValidationFailed (shared addresses): these
    // two changed on purpose.
    ("HelloReply", 0xf59360b5bbaa6f11),
    ("RefuseReason", 0x1da92d28fa6310e0),
    ("ProtocolEntry", 0xe74a377000e117dd),
    ("Channel", 0x6a3e7ea82007cc94),
    ("Direction", 0x09e4068676d2feb8),
    ("Node", 0x77ac2b07b39ccfe1),
    ("Linked", 0xd48f8fd88b649298),
    ("Pair", 0x556aeb2a1f0c93c0),
    ("Empty", 0x3e56da384ccf6c0a),
    ("Settings", 0x67d0aa9fb9d0e9a0),
    ("Generic<u32>", 0x311948cdb0fa66fb),
    ("Generic<String>", 0x791907bf26b18435),
    ("Shape", 0xd51d2cff52f7bd3f),
];

#[test]
fn fingerprints_are_unchanged() {
    let all = all();
    assert_eq!(all.len(), PINNED.len());
    for ((name, now), (pinned_name, pinned)) in all.iter().zip(PINNED) {
        assert_eq!(name, pinned_name);
        assert_eq!(now, pinned, "{name}: 0x{now:016x}, pinned 0x{pinned:016x}");
    }
}
