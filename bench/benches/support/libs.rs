//! Every library as a [`Lib`]: how it encodes into a reused destination,
//! into a new buffer, and decodes. Slice writers encode into a 64-byte
//! aligned [`Aligned`] buffer (rkyv too, through its slice writer
//! `Buffer`); libraries that only write to their own growable buffers
//! (bitcode's `Buffer`, prost, rmp-serde, serde_json) clear and reuse one.

use rkyv::api::high::{HighDeserializer, HighSerializer, HighValidator};
use rkyv::rancor;
use rkyv::ser::allocator::{Arena, ArenaHandle};
use rkyv::ser::writer::Buffer;
use rkyv::util::AlignedVec;
use zao::zerocopy::{FromBytes, IntoBytes};
use zao::{Decode, Encode};
use zao_messages as zm;

use super::harness::{Aligned, Lib};
use super::peers;

/// Zao, the subject, on the types every library shares; `Zao<true>` is Zao
/// on its own `zao_messages` types (glam vectors, checked `Buttons`), for
/// information beside them, not a peer.
pub(crate) struct Zao<const GAME_TYPES: bool = false>;
/// bitcode 0.6 with its reusable `Buffer`.
pub(crate) struct Bitcode;
/// wincode 0.6, default config.
pub(crate) struct Wincode;
/// speedy 0.8, little-endian.
pub(crate) struct Speedy;
/// bincode 2, standard config (varint integers).
pub(crate) struct Bincode;
/// postcard 1.
pub(crate) struct Postcard;
/// rkyv 0.8: bytecheck validation, then deserialize.
pub(crate) struct Rkyv;
/// prost 0.14 on protobuf twins.
pub(crate) struct Prost;
/// rmp-serde 1 (MessagePack).
pub(crate) struct Rmp;
/// serde_json 1.
pub(crate) struct Json;

/// Zao's name in the report.
pub(crate) const ZAO: &str = "zao";
/// The name of Zao's rows on its `zao_messages` types.
pub(crate) const ZAO_GAME: &str = "zao, zao_messages types";
/// The physical floor's name in the report.
pub(crate) const RAW: &str = "raw copy";
/// bincode's legacy (fixed-width integer) config: a wire size, not timed.
pub(crate) const BINCODE_FIXINT: &str = "bincode-fixint";

impl<T: Encode + for<'de> Decode<'de>, const GAME_TYPES: bool> Lib<T> for Zao<GAME_TYPES> {
    const NAME: &'static str = if GAME_TYPES { ZAO_GAME } else { ZAO };
    type Dst = Aligned;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Aligned {
        Aligned::zeroed(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut Aligned) -> bool {
        value.encode(dst.as_mut()).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        value.to_encoded_vec()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        T::decode(bytes).ok()
    }
}

impl<T: bitcode::Encode + bitcode::DecodeOwned> Lib<T> for Bitcode {
    const NAME: &'static str = "bitcode";
    type Dst = bitcode::Buffer;
    type Fresh = Vec<u8>;

    fn dst(_: usize) -> bitcode::Buffer {
        bitcode::Buffer::new()
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut bitcode::Buffer) -> bool {
        !dst.encode(value).is_empty()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        bitcode::encode(value)
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        bitcode::decode(bytes).ok()
    }
}

impl<T> Lib<T> for Wincode
where
    T: wincode::SchemaWrite<wincode::config::DefaultConfig, Src = T>
        + for<'de> wincode::SchemaRead<'de, wincode::config::DefaultConfig, Dst = T>,
{
    const NAME: &'static str = "wincode";
    type Dst = Aligned;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Aligned {
        Aligned::zeroed(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut Aligned) -> bool {
        let out: &mut [u8] = dst.as_mut();
        wincode::serialize_into(out, value).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        wincode::serialize(value).unwrap_or_default()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        wincode::deserialize(bytes).ok()
    }
}

impl<T> Lib<T> for Speedy
where
    T: speedy::Writable<speedy::LittleEndian> + for<'a> speedy::Readable<'a, speedy::LittleEndian>,
{
    const NAME: &'static str = "speedy";
    type Dst = Aligned;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Aligned {
        Aligned::zeroed(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut Aligned) -> bool {
        value.write_to_buffer(dst.as_mut()).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        value.write_to_vec().unwrap_or_default()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        T::read_from_buffer(bytes).ok()
    }
}

impl<T: bincode::Encode + bincode::Decode<()>> Lib<T> for Bincode {
    const NAME: &'static str = "bincode";
    type Dst = Aligned;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Aligned {
        Aligned::zeroed(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut Aligned) -> bool {
        bincode::encode_into_slice(value, dst.as_mut(), bincode::config::standard()).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        bincode::encode_to_vec(value, bincode::config::standard()).unwrap_or_default()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        bincode::decode_from_slice(bytes, bincode::config::standard())
            .ok()
            .map(|(v, _)| v)
    }
}

impl<T: serde::Serialize + serde::de::DeserializeOwned> Lib<T> for Postcard {
    const NAME: &'static str = "postcard";
    type Dst = Aligned;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Aligned {
        Aligned::zeroed(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut Aligned) -> bool {
        postcard::to_slice(value, dst.as_mut()).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        postcard::to_allocvec(value).unwrap_or_default()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        postcard::from_bytes(bytes).ok()
    }
}

impl<T> Lib<T> for Rkyv
where
    T: rkyv::Archive
        + for<'a> rkyv::Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>
        + for<'a, 'b> rkyv::Serialize<HighSerializer<Buffer<'b>, ArenaHandle<'a>, rancor::Error>>,
    T::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<T, HighDeserializer<rancor::Error>>,
{
    const NAME: &'static str = "rkyv";
    /// The slice every slice writer gets, written through rkyv's `Buffer`,
    /// and a reused scratch arena. (Its own `AlignedVec` lies wherever the
    /// heap puts it, and where a 16 KiB run lands against its source moves
    /// the copy by 12 % on a Zen 2 core: docs/DECISIONS.md, "rkyv encodes
    /// into the same placed slice".)
    type Dst = (Aligned, Arena);
    type Fresh = AlignedVec;

    fn dst(wire: usize) -> Self::Dst {
        (Aligned::zeroed(wire), Arena::new())
    }
    #[inline(always)]
    fn encode_reuse(value: &T, (out, arena): &mut Self::Dst) -> bool {
        rkyv::api::high::to_bytes_in_with_alloc::<_, _, rancor::Error>(
            value,
            Buffer::from(out.as_mut()),
            arena.acquire(),
        )
        .is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> AlignedVec {
        rkyv::to_bytes::<rancor::Error>(value).unwrap_or_default()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        rkyv::from_bytes::<T, rancor::Error>(bytes).ok()
    }
}

/// rkyv's validated access: a row of its own, beside its decode.
pub(crate) fn rkyv_access<T>(bytes: &[u8]) -> bool
where
    T: rkyv::Archive,
    T::Archived: for<'a> rkyv::bytecheck::CheckBytes<HighValidator<'a, rancor::Error>>,
{
    rkyv::access::<T::Archived, rancor::Error>(bytes).is_ok()
}

impl<T: prost::Message + Default> Lib<T> for Prost {
    const NAME: &'static str = "prost";
    type Dst = Vec<u8>;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Vec<u8> {
        Vec::with_capacity(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut Vec<u8>) -> bool {
        dst.clear();
        value.encode(dst).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        value.encode_to_vec()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        T::decode(bytes).ok()
    }
}

impl<T: serde::Serialize + serde::de::DeserializeOwned> Lib<T> for Rmp {
    const NAME: &'static str = "rmp-serde";
    type Dst = Vec<u8>;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Vec<u8> {
        Vec::with_capacity(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut Vec<u8>) -> bool {
        dst.clear();
        rmp_serde::encode::write(dst, value).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        rmp_serde::to_vec(value).unwrap_or_default()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        rmp_serde::from_slice(bytes).ok()
    }
}

impl<T: serde::Serialize + serde::de::DeserializeOwned> Lib<T> for Json {
    const NAME: &'static str = "serde_json";
    type Dst = Vec<u8>;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Vec<u8> {
        Vec::with_capacity(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &T, dst: &mut Vec<u8>) -> bool {
        dst.clear();
        serde_json::to_writer(&mut *dst, value).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &T) -> Vec<u8> {
        serde_json::to_vec(value).unwrap_or_default()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<T> {
        serde_json::from_slice(bytes).ok()
    }
}

/// The wire size of bincode's fixed-width (legacy) config, for target (e).
pub(crate) fn bincode_fixint_len<T: bincode::Encode>(value: &T) -> usize {
    bincode::encode_to_vec(value, bincode::config::legacy()).map_or(0, |v| v.len())
}

/// The physical floor: the memory image copied with zerocopy, no format.
/// Lengths are checked, nothing else is.
pub(crate) struct Raw;

impl Lib<zm::PlayerMoved> for Raw {
    const NAME: &'static str = RAW;
    type Dst = Aligned;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Aligned {
        Aligned::zeroed(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &zm::PlayerMoved, dst: &mut Aligned) -> bool {
        value.write_to_prefix(dst.as_mut()).is_ok()
    }
    #[inline(always)]
    fn encode_fresh(value: &zm::PlayerMoved) -> Vec<u8> {
        value.as_bytes().to_vec()
    }
    /// The image as two words, transmuted (zerocopy): the value stays in
    /// registers. `read_from_bytes` staged it in a stack slot and took
    /// twice as long as speedy's decode, no floor at all.
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<zm::PlayerMoved> {
        let (low, high) = <&[u8; 16]>::try_from(bytes).ok()?.split_at(8);
        let words = [low, high].map(|w| u64::from_ne_bytes(w.try_into().unwrap_or_default()));
        Some(zao::zerocopy::transmute!(words))
    }
}

/// `WorldSnapshot` as tick and count (`u32`s), then the players' memory
/// image; decoding casts the run in place (it lands 4-aligned) and copies it
/// out with one `to_encoded_vec`.
impl Lib<zm::WorldSnapshot> for Raw {
    const NAME: &'static str = RAW;
    type Dst = Aligned;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Aligned {
        Aligned::zeroed(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &zm::WorldSnapshot, dst: &mut Aligned) -> bool {
        let players = value.players.as_bytes();
        let Some((head, rest)) = dst.as_mut().split_first_chunk_mut::<8>() else {
            return false;
        };
        let Some(run) = rest.get_mut(..players.len()) else {
            return false;
        };
        head[..4].copy_from_slice(&value.tick.to_le_bytes());
        head[4..].copy_from_slice(&(value.players.len() as u32).to_le_bytes());
        run.copy_from_slice(players);
        true
    }
    #[inline(always)]
    fn encode_fresh(value: &zm::WorldSnapshot) -> Vec<u8> {
        let players = value.players.as_bytes();
        let mut out = Vec::with_capacity(8 + players.len());
        out.extend_from_slice(&value.tick.to_le_bytes());
        out.extend_from_slice(&(value.players.len() as u32).to_le_bytes());
        out.extend_from_slice(players);
        out
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<zm::WorldSnapshot> {
        let (tick, players) = raw_split(bytes)?;
        Some(zm::WorldSnapshot {
            tick,
            players: players.to_vec(),
        })
    }
}

/// `PlayerInput`, whose memory image is no wire form (an enum, a padding
/// byte), as a hand-written encoder lays it out: its fields' bytes at fixed
/// offsets, tick, buttons, aim, then the stance's byte (15 bytes, Zao's
/// layout too), one store per field; decoding checks the length and the
/// stance's byte, nothing else. Every codec has these loads and stores to
/// do; this is the floor under them.
impl Lib<peers::PlayerInput> for Raw {
    const NAME: &'static str = RAW;
    type Dst = Aligned;
    type Fresh = Vec<u8>;

    fn dst(wire: usize) -> Aligned {
        Aligned::zeroed(wire)
    }
    #[inline(always)]
    fn encode_reuse(value: &peers::PlayerInput, dst: &mut Aligned) -> bool {
        let Some(out) = dst.as_mut().first_chunk_mut::<PLAYER_INPUT>() else {
            // As a codec marks its error path: the stores fall through.
            std::hint::cold_path();
            return false;
        };
        put_player_input(value, out);
        true
    }
    #[inline(always)]
    fn encode_fresh(value: &peers::PlayerInput) -> Vec<u8> {
        let mut out = [0; PLAYER_INPUT];
        put_player_input(value, &mut out);
        out.to_encoded_vec()
    }
    #[inline(always)]
    fn decode(bytes: &[u8]) -> Option<peers::PlayerInput> {
        let bytes = <&[u8; PLAYER_INPUT]>::try_from(bytes).ok()?;
        let (tick, rest) = bytes.split_first_chunk::<4>()?;
        let (buttons, rest) = rest.split_first_chunk::<2>()?;
        let (x, rest) = rest.split_first_chunk::<4>()?;
        let (y, rest) = rest.split_first_chunk::<4>()?;
        let stance = match rest.first()? {
            0 => peers::Stance::Standing,
            1 => peers::Stance::Crouching,
            2 => peers::Stance::Prone,
            _ => return None,
        };
        Some(peers::PlayerInput {
            tick: u32::from_le_bytes(*tick),
            buttons: u16::from_le_bytes(*buttons),
            aim: [f32::from_le_bytes(*x), f32::from_le_bytes(*y)],
            stance,
        })
    }
}

/// `Inventory`, as a hand-written encoder lays a map out: the owner and the
/// slot count (`u32`s), then each slot's key and stack's fields at fixed
/// offsets (13 bytes, Zao's layout of a slot), the slots in the map's own
/// order. Encoding checks the destination's length once, then stores each
/// field; decoding checks the length against the count, then reads each
/// slot and inserts it, in wire order, into a map made with room for all of
/// them (with std's randomly seeded hasher no order of the slots meets the
/// new map's buckets in order). Every codec has this iteration, these
/// stores and these inserts to make; this is the floor under them. No
/// one-call encoder: a hand-written one was slower than the peers'
/// (docs/DECISIONS.md, "The inventory has a floor").
#[inline(always)]
pub(crate) fn raw_inventory_encode<S>(
    owner: u32,
    slots: &std::collections::HashMap<u32, peers::ItemStack, S>,
    dst: &mut Aligned,
) -> bool {
    let Some((head, rest)) = dst.as_mut().split_first_chunk_mut::<8>() else {
        std::hint::cold_path();
        return false;
    };
    let Some(run) = rest.get_mut(..slots.len() * SLOT) else {
        std::hint::cold_path();
        return false;
    };
    head[..4].copy_from_slice(&owner.to_le_bytes());
    head[4..].copy_from_slice(&(slots.len() as u32).to_le_bytes());
    // Slots in groups of eight, cut at constant offsets from one check per
    // group, the map's entries pulled as the slots come: the fastest safe
    // loop known for this (the shape of Zao's `Writer::put_run`, written
    // out here so that the floor runs none of the codec it judges; a `zip`
    // of the slots and the entries took 218 ns against Zao's 166).
    let mut entries = slots.iter();
    let mut put = |out: &mut [u8; SLOT]| {
        let Some((key, stack)) = entries.next() else {
            return false;
        };
        out[..4].copy_from_slice(&key.to_le_bytes());
        out[4..8].copy_from_slice(&stack.item.to_le_bytes());
        out[8..10].copy_from_slice(&stack.count.to_le_bytes());
        out[10..12].copy_from_slice(&stack.durability.to_le_bytes());
        out[12] = stack.flags;
        true
    };
    let (groups, rest) = run.as_chunks_mut::<{ SLOT * 8 }>();
    for group in groups {
        if !group.as_chunks_mut::<SLOT>().0.iter_mut().all(&mut put) {
            return false;
        }
    }
    rest.as_chunks_mut::<SLOT>().0.iter_mut().all(put)
}

/// Decodes the raw `Inventory` form; see [`raw_inventory_encode`].
#[inline(always)]
pub(crate) fn raw_inventory_decode<S: std::hash::BuildHasher + Default>(
    bytes: &[u8],
) -> Option<(u32, std::collections::HashMap<u32, peers::ItemStack, S>)> {
    let (&[o0, o1, o2, o3, n0, n1, n2, n3], rest) = bytes.split_first_chunk::<8>()?;
    let count = u32::from_le_bytes([n0, n1, n2, n3]) as usize;
    let (run, []) = rest.as_chunks::<SLOT>() else {
        return None;
    };
    if run.len() != count {
        return None;
    }
    let mut slots = std::collections::HashMap::with_capacity_and_hasher(count, S::default());
    for &[k0, k1, k2, k3, i0, i1, i2, i3, c0, c1, d0, d1, flags] in run {
        let stack = peers::ItemStack {
            item: u32::from_le_bytes([i0, i1, i2, i3]),
            count: u16::from_le_bytes([c0, c1]),
            durability: u16::from_le_bytes([d0, d1]),
            flags,
        };
        slots.insert(u32::from_le_bytes([k0, k1, k2, k3]), stack);
    }
    Some((u32::from_le_bytes([o0, o1, o2, o3]), slots))
}

/// The raw `Inventory` form's length for `slots` slots.
pub(crate) fn raw_inventory_len(slots: usize) -> usize {
    8 + slots * SLOT
}

/// The raw `Inventory` form's bytes per slot.
const SLOT: usize = 13;

/// The raw `PlayerInput` form's size.
const PLAYER_INPUT: usize = 15;

/// Writes `value`'s fields at their offsets in `out`.
#[inline(always)]
fn put_player_input(value: &peers::PlayerInput, out: &mut [u8; PLAYER_INPUT]) {
    out[..4].copy_from_slice(&value.tick.to_le_bytes());
    out[4..6].copy_from_slice(&value.buttons.to_le_bytes());
    out[6..10].copy_from_slice(&value.aim[0].to_le_bytes());
    out[10..14].copy_from_slice(&value.aim[1].to_le_bytes());
    out[14] = value.stance as u8;
}

/// The raw `WorldSnapshot` form's tick and player run, borrowed.
pub(crate) fn raw_split(bytes: &[u8]) -> Option<(u32, &[zm::PlayerState])> {
    let (tick, rest) = u32::read_from_prefix(bytes).ok()?;
    let (count, rest) = u32::read_from_prefix(rest).ok()?;
    let players = <[zm::PlayerState]>::ref_from_bytes(rest).ok()?;
    (players.len() == count as usize).then_some((tick, players))
}
