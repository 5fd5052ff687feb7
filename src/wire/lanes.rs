//! Values as lanes: bounded unsigned integers that delta snapshots compare,
//! subtract and bit-pack (docs/WIRE.md §12.10). Every field of a snapshot
//! item is a run of lanes: an integer is one lane, a `Vec3` three, a
//! quantized vector three small ones.

use super::DecodeError;
use super::bits::bits_for;

/// One lane of a value: an unsigned integer from 0 to `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lane {
    /// The largest value the lane takes; a decoder refuses anything above.
    pub max: u32,
    /// Whether the lane wraps around (an angle, a two's-complement integer):
    /// then the difference between two values is taken modulo 2^bits, so a
    /// step across the wrap is a small change. `max` is then 2^bits − 1.
    pub wrapping: bool,
}

impl Lane {
    /// A lane of `bits` bits (1 to 32) taking every value.
    #[must_use]
    pub const fn bits(bits: u32) -> Self {
        let max = if bits >= 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        Self {
            max,
            wrapping: false,
        }
    }

    /// A lane from 0 to `max`.
    #[must_use]
    pub const fn upto(max: u32) -> Self {
        Self {
            max,
            wrapping: false,
        }
    }

    /// A lane of `bits` bits whose values wrap around.
    #[must_use]
    pub const fn wrapping(bits: u32) -> Self {
        Self {
            wrapping: true,
            ..Self::bits(bits)
        }
    }

    /// Bits a value of the lane takes written in full.
    #[must_use]
    pub const fn width(self) -> u32 {
        bits_for(self.max as u64)
    }

    /// The signed change from `base` to `value` (both ≤ `max`): their
    /// difference, taken modulo 2^width and centred on zero for a wrapping
    /// lane.
    #[inline]
    #[must_use]
    pub fn diff(self, base: u32, value: u32) -> i64 {
        let d = i64::from(value) - i64::from(base);
        if !self.wrapping {
            return d;
        }
        let span = 1i64 << self.width();
        let d = d.rem_euclid(span);
        if d >= span / 2 { d - span } else { d }
    }

    /// `base` changed by `diff`, if the result is a value of the lane.
    #[inline]
    #[must_use]
    pub fn apply(self, base: u32, diff: i64) -> Option<u32> {
        let v = i64::from(base).checked_add(diff)?;
        let v = if self.wrapping {
            v.rem_euclid(1i64 << self.width())
        } else {
            v
        };
        u32::try_from(v).ok().filter(|v| *v <= self.max)
    }
}

/// A value that travels in delta snapshots as a fixed number of [`Lane`]s.
/// Implemented for integers, `bool`, floats (their bits), glam vectors and
/// the quantized types; `#[derive(SnapshotItem)]` joins the lanes of an
/// item's fields.
///
/// A hand-written impl keeps `write_lanes` and `read_lanes` inverse: for any
/// value `v`, `read_lanes` of what `write_lanes(v)` wrote is `v`, and every
/// lane written is at most its [`Lane::max`].
pub trait Lanes: Sized {
    /// How many lanes a value takes.
    const LANES: usize;

    /// The lane at `index` (below [`LANES`](Self::LANES)).
    fn lane(index: usize) -> Lane;

    /// Writes the value's lanes into `out`, which holds [`LANES`](Self::LANES)
    /// of them.
    fn write_lanes(&self, out: &mut [u32]);

    /// The value of these lanes, each already checked against its
    /// [`Lane::max`].
    ///
    /// # Errors
    /// [`DecodeError::InvalidValue`] if the lanes break an invariant that
    /// spans several of them (a quaternion that is not a unit).
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError>;
}

/// Lane `index` of `lanes`, or 0 past the end (callers pass exact lengths;
/// the fallback keeps a short slice from panicking).
#[inline]
#[must_use]
pub fn lane_at(lanes: &[u32], index: usize) -> u32 {
    lanes.get(index).copied().unwrap_or(0)
}

/// Stores `value` in lane `index` of `out`, if it exists.
#[inline]
pub fn set_lane(out: &mut [u32], index: usize, value: u32) {
    if let Some(slot) = out.get_mut(index) {
        *slot = value;
    }
}

macro_rules! unsigned_lanes {
    ($($ty:ty => $bits:expr),*) => {$(
        impl Lanes for $ty {
            const LANES: usize = 1;

            #[inline]
            fn lane(_: usize) -> Lane {
                Lane::bits($bits)
            }

            #[inline]
            fn write_lanes(&self, out: &mut [u32]) {
                set_lane(out, 0, u32::from(*self));
            }

            #[inline]
            fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
                <$ty>::try_from(lane_at(lanes, 0)).map_err(|_| DecodeError::InvalidValue)
            }
        }
    )*};
}

unsigned_lanes!(u8 => 8, u16 => 16, u32 => 32);

macro_rules! signed_lanes {
    ($($ty:ty => $uty:ty, $bits:expr),*) => {$(
        /// The two's-complement bits, wrapping: −1 to 0 is a step of one.
        impl Lanes for $ty {
            const LANES: usize = 1;

            #[inline]
            fn lane(_: usize) -> Lane {
                Lane::wrapping($bits)
            }

            #[inline]
            fn write_lanes(&self, out: &mut [u32]) {
                set_lane(out, 0, u32::from(*self as $uty));
            }

            #[inline]
            fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
                <$uty>::try_from(lane_at(lanes, 0))
                    .map(|v| v as $ty)
                    .map_err(|_| DecodeError::InvalidValue)
            }
        }
    )*};
}

signed_lanes!(i8 => u8, 8, i16 => u16, 16, i32 => u32, 32);

impl Lanes for bool {
    const LANES: usize = 1;

    #[inline]
    fn lane(_: usize) -> Lane {
        Lane::upto(1)
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        set_lane(out, 0, u32::from(*self));
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        match lane_at(lanes, 0) {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(DecodeError::InvalidValue),
        }
    }
}

/// Two lanes, low half first.
impl Lanes for u64 {
    const LANES: usize = 2;

    #[inline]
    fn lane(_: usize) -> Lane {
        Lane::bits(32)
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        set_lane(out, 0, *self as u32);
        set_lane(out, 1, (*self >> 32) as u32);
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        Ok(u64::from(lane_at(lanes, 0)) | (u64::from(lane_at(lanes, 1)) << 32))
    }
}

impl Lanes for i64 {
    const LANES: usize = 2;

    #[inline]
    fn lane(_: usize) -> Lane {
        Lane::wrapping(32)
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        (*self as u64).write_lanes(out);
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        u64::read_lanes(lanes).map(|v| v as i64)
    }
}

/// The float's bits, so every value (NaN payloads, −0.0) survives exactly;
/// a small change of a float is usually a small change of its bits.
impl Lanes for f32 {
    const LANES: usize = 1;

    #[inline]
    fn lane(_: usize) -> Lane {
        Lane::bits(32)
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        set_lane(out, 0, self.to_bits());
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        Ok(f32::from_bits(lane_at(lanes, 0)))
    }
}

impl Lanes for f64 {
    const LANES: usize = 2;

    #[inline]
    fn lane(_: usize) -> Lane {
        Lane::bits(32)
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        self.to_bits().write_lanes(out);
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        u64::read_lanes(lanes).map(f64::from_bits)
    }
}

/// The elements' lanes in order.
impl<T: Lanes + Default, const N: usize> Lanes for [T; N] {
    const LANES: usize = T::LANES * N;

    #[inline]
    fn lane(index: usize) -> Lane {
        T::lane(index % T::LANES.max(1))
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        for (item, out) in self.iter().zip(out.chunks_mut(T::LANES.max(1))) {
            item.write_lanes(out);
        }
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        let mut array: [T; N] = core::array::from_fn(|_| T::default());
        for (slot, lanes) in array.iter_mut().zip(lanes.chunks(T::LANES.max(1))) {
            *slot = T::read_lanes(lanes)?;
        }
        Ok(array)
    }
}

#[cfg(feature = "glam")]
mod glam_lanes {
    use glam::{IVec2, IVec3, IVec4, Quat, UVec2, UVec3, UVec4, Vec2, Vec3, Vec4};

    use super::{Lane, Lanes};
    use crate::DecodeError;

    macro_rules! glam_lanes {
        ($($ty:ty => $scalar:ty, $n:literal;)*) => {$(
            /// The components' lanes in order.
            impl Lanes for $ty {
                const LANES: usize = $n;

                #[inline]
                fn lane(index: usize) -> Lane {
                    <$scalar as Lanes>::lane(index)
                }

                #[inline]
                fn write_lanes(&self, out: &mut [u32]) {
                    self.to_array().write_lanes(out);
                }

                #[inline]
                fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
                    <[$scalar; $n]>::read_lanes(lanes).map(<$ty>::from_array)
                }
            }
        )*};
    }

    glam_lanes! {
        Vec2 => f32, 2;
        Vec3 => f32, 3;
        Vec4 => f32, 4;
        Quat => f32, 4;
        IVec2 => i32, 2;
        IVec3 => i32, 3;
        IVec4 => i32, 4;
        UVec2 => u32, 2;
        UVec3 => u32, 3;
        UVec4 => u32, 4;
    }
}
