//! Numbers, `bool`, `char`, `NonZero*` and `()` (docs/WIRE.md §3).

use core::num::{
    NonZeroI8, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroU8, NonZeroU16, NonZeroU32, NonZeroU64,
};

use crate::wire::blit;
use crate::wire::schema::{Scalar, Shape};
use crate::wire::{Decode, DecodeError, Encode, Reader, Schema, Sink, varint_len};

/// Fixed-width little-endian numbers: blittable, so runs are one copy.
macro_rules! fixed_number {
    ($($ty:ty => $name:ident),* $(,)?) => {$(
        impl Encode for $ty {
            const FIXED_SIZE: Option<usize> = Some(size_of::<$ty>());

            #[inline(always)]
            fn encoded_len(&self) -> usize {
                size_of::<$ty>()
            }

            #[inline(always)]
            fn encode_to<W: Sink>(&self, w: &mut W) {
                w.put_array(self.to_le_bytes());
            }

            #[inline(always)]
            fn encode_slice<W: Sink>(items: &[Self], w: &mut W) {
                if cfg!(target_endian = "little") {
                    blit::encode_blit_slice(items, w);
                } else {
                    items.iter().for_each(|item| item.encode_to(w));
                }
            }

            #[inline(always)]
            fn encode_run<W: Sink>(items: &[Self], w: &mut W) {
                blit::encode_blit_run(items, w);
            }
        }

        impl<'de> Decode<'de> for $ty {
            const MIN_SIZE: usize = size_of::<$ty>();
            const EXACT_SIZE: bool = true;
            const INFALLIBLE: bool = true;

            #[inline(always)]
            fn decode_plain(r: &mut Reader<'de>) -> Self {
                <$ty>::from_le_bytes(r.take_array().unwrap_or([0; size_of::<$ty>()]))
            }

            #[inline(always)]
            fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
                Ok(<$ty>::from_le_bytes(r.take_array()?))
            }

            #[inline(always)]
            fn decode_slice_in_place(items: &mut [Self], r: &mut Reader<'de>) -> Result<(), DecodeError> {
                if cfg!(target_endian = "little") {
                    blit::decode_blit_slice(items, r)
                } else {
                    items.iter_mut().try_for_each(|item| item.decode_in_place_from(r))
                }
            }

            #[inline(always)]
            fn decode_vec(count: usize, r: &mut Reader<'de>) -> Result<Vec<Self>, DecodeError> {
                if cfg!(target_endian = "little") {
                    blit::decode_blit_vec_owned(count, r)
                } else {
                    let mut vec = Vec::new();
                    Self::decode_vec_in_place(&mut vec, count, r)?;
                    Ok(vec)
                }
            }

            #[inline(always)]
            fn decode_vec_in_place(vec: &mut Vec<Self>, count: usize, r: &mut Reader<'de>) -> Result<(), DecodeError> {
                if cfg!(target_endian = "little") {
                    blit::decode_blit_vec(vec, count, r)
                } else {
                    vec.clear();
                    (0..count).try_for_each(|_| Ok(vec.push(Self::decode_from(r)?)))
                }
            }
        }

        impl Schema for $ty {
            const SHAPE: Shape = Shape::Scalar(Scalar::$name);
            // `&[u8]` decodes as a byte string (docs/WIRE.md §4), not a sequence.
            const SLICE_SHAPE: Shape = if matches!(Scalar::$name, Scalar::U8) {
                Shape::Bytes
            } else {
                Shape::Seq(&Self::SHAPE)
            };
        }
    )*};
}

fixed_number!(
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, u128 => U128,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64, i128 => I128,
    f32 => F32, f64 => F64,
);

// `usize`/`isize` differ in width between platforms, so they travel as
// varints (zigzag for `isize`) and decode with a range check.
impl Encode for usize {
    const MAX_SIZE: Option<usize> = Some(10);

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        varint_len(*self as u64)
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        w.put_varint(*self as u64);
    }
}

impl<'de> Decode<'de> for usize {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        usize::try_from(r.get_varint()?).map_err(|_| DecodeError::VarintOverflow)
    }
}

impl Schema for usize {
    const SHAPE: Shape = Shape::Scalar(Scalar::Usize);
}

#[inline(always)]
fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

#[inline(always)]
fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

impl Encode for isize {
    const MAX_SIZE: Option<usize> = Some(10);

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        varint_len(zigzag(*self as i64))
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        w.put_varint(zigzag(*self as i64));
    }
}

impl<'de> Decode<'de> for isize {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        isize::try_from(unzigzag(r.get_varint()?)).map_err(|_| DecodeError::VarintOverflow)
    }
}

impl Schema for isize {
    const SHAPE: Shape = Shape::Scalar(Scalar::Isize);
}

impl Encode for bool {
    const FIXED_SIZE: Option<usize> = Some(1);

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        1
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        w.put_u8(u8::from(*self));
    }

    /// A run of `bool`s is its memory image (`false` is 0, `true` 1): one
    /// copy, not a byte-by-byte loop.
    #[inline(always)]
    fn encode_slice<W: Sink>(items: &[Self], w: &mut W) {
        blit::encode_blit_slice(items, w);
    }

    #[inline(always)]
    fn encode_run<W: Sink>(items: &[Self], w: &mut W) {
        blit::encode_blit_run(items, w);
    }
}

impl<'de> Decode<'de> for bool {
    const MIN_SIZE: usize = 1;
    const EXACT_SIZE: bool = true;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        match r.get_u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::InvalidTag),
        }
    }

    /// One branch-free pass that converts and checks together (every byte
    /// 0 or 1, found by or-ing them all), which the compiler vectorizes;
    /// a run too short for vectors is one scalar loop, not two. On an
    /// invalid byte the target is left valid but unspecified.
    #[inline(always)]
    fn decode_slice_in_place(items: &mut [Self], r: &mut Reader<'de>) -> Result<(), DecodeError> {
        let src = r.take(items.len())?;
        let mut seen = 0u8;
        for (item, &byte) in items.iter_mut().zip(src) {
            seen |= byte;
            *item = byte != 0;
        }
        bools_valid(seen)
    }

    /// Built and checked in one exact-size pass, as `decode_slice_in_place`
    /// checks. The default `decode_vec` comes here with an empty `Vec` of
    /// exactly `count` capacity (docs/DECISIONS.md, "A short owned run
    /// allocates exactly its values").
    #[inline(always)]
    fn decode_vec_in_place(
        vec: &mut Vec<Self>,
        count: usize,
        r: &mut Reader<'de>,
    ) -> Result<(), DecodeError> {
        let src = r.take(count)?;
        vec.clear();
        // Exactly `count`: what the budget charged, no amortized slack.
        vec.reserve_exact(count);
        let mut seen = 0u8;
        vec.extend(src.iter().map(|&byte| {
            seen |= byte;
            byte != 0
        }));
        bools_valid(seen)
    }
}

/// `seen`, every byte of a run of bools or-ed together, has no bit above the
/// lowest: each byte was 0 or 1.
#[inline(always)]
fn bools_valid(seen: u8) -> Result<(), DecodeError> {
    if seen > 1 {
        return Err(DecodeError::InvalidTag);
    }
    Ok(())
}

impl Schema for bool {
    const SHAPE: Shape = Shape::Scalar(Scalar::Bool);
}

impl Encode for char {
    const FIXED_SIZE: Option<usize> = Some(4);

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        4
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        w.put_u32_le(u32::from(*self));
    }
}

impl<'de> Decode<'de> for char {
    const MIN_SIZE: usize = 4;
    const EXACT_SIZE: bool = true;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        char::from_u32(r.get_u32_le()?).ok_or(DecodeError::InvalidValue)
    }
}

impl Schema for char {
    const SHAPE: Shape = Shape::Scalar(Scalar::Char);
}

macro_rules! non_zero {
    ($($nz:ty => $inner:ty, $name:ident),* $(,)?) => {$(
        impl Encode for $nz {
            const FIXED_SIZE: Option<usize> = Some(size_of::<$inner>());

            #[inline(always)]
            fn encoded_len(&self) -> usize {
                size_of::<$inner>()
            }

            #[inline(always)]
            fn encode_to<W: Sink>(&self, w: &mut W) {
                self.get().encode_to(w);
            }
        }

        impl<'de> Decode<'de> for $nz {
            const MIN_SIZE: usize = size_of::<$inner>();
            const EXACT_SIZE: bool = true;

            #[inline(always)]
            fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
                <$nz>::new(<$inner>::decode_from(r)?).ok_or(DecodeError::InvalidValue)
            }
        }

        impl Schema for $nz {
            const SHAPE: Shape = Shape::Scalar(Scalar::$name);
        }
    )*};
}

non_zero!(
    NonZeroU8 => u8, NonZeroU8, NonZeroU16 => u16, NonZeroU16,
    NonZeroU32 => u32, NonZeroU32, NonZeroU64 => u64, NonZeroU64,
    NonZeroI8 => i8, NonZeroI8, NonZeroI16 => i16, NonZeroI16,
    NonZeroI32 => i32, NonZeroI32, NonZeroI64 => i64, NonZeroI64,
);

impl Encode for () {
    const FIXED_SIZE: Option<usize> = Some(0);

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        0
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, _: &mut W) {}
}

impl<'de> Decode<'de> for () {
    const EXACT_SIZE: bool = true;

    #[inline(always)]
    fn decode_from(_: &mut Reader<'de>) -> Result<Self, DecodeError> {
        Ok(())
    }
}

impl Schema for () {
    const SHAPE: Shape = Shape::Scalar(Scalar::Unit);
}
