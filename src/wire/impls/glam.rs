//! glam vectors and quaternions: their components as little-endian numbers,
//! which is their memory image, so runs of them are one copy
//! (docs/WIRE.md §7).

use glam::{IVec2, IVec3, IVec4, Quat, UVec2, UVec3, UVec4, Vec2, Vec3, Vec4};

use crate::wire::blit;
use crate::wire::schema::{Scalar, Shape};
use crate::wire::{Decode, DecodeError, Encode, Reader, Schema, Sink};

macro_rules! glam_blit {
    ($($ty:ty => $scalar:ty, $tag:ident, $n:literal, $name:literal;)*) => {$(
        impl Encode for $ty {
            const FIXED_SIZE: Option<usize> = Some(size_of::<$scalar>() * $n);

            #[inline(always)]
            fn encoded_len(&self) -> usize {
                size_of::<$scalar>() * $n
            }

            #[inline(always)]
            fn encode_to<W: Sink>(&self, w: &mut W) {
                if cfg!(target_endian = "little") {
                    blit::encode_blit(self, w);
                } else {
                    self.to_array().iter().for_each(|c| c.encode_to(w));
                }
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
            const MIN_SIZE: usize = size_of::<$scalar>() * $n;
            const EXACT_SIZE: bool = true;

            #[inline(always)]
            fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
                if cfg!(target_endian = "little") {
                    blit::decode_blit(r)
                } else {
                    <[$scalar; $n]>::decode_from(r).map(|c| <$ty>::from_array(c))
                }
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
            const SHAPE: Shape = Shape::Vector {
                name: $name,
                scalar: Scalar::$tag,
                len: $n,
            };
        }
    )*};
}

glam_blit! {
    Vec2 => f32, F32, 2, "vec2";
    Vec3 => f32, F32, 3, "vec3";
    Vec4 => f32, F32, 4, "vec4";
    Quat => f32, F32, 4, "quat";
    IVec2 => i32, I32, 2, "vec2";
    IVec3 => i32, I32, 3, "vec3";
    IVec4 => i32, I32, 4, "vec4";
    UVec2 => u32, U32, 2, "vec2";
    UVec3 => u32, U32, 3, "vec3";
    UVec4 => u32, U32, 4, "vec4";
}
