//! Quantized values (docs/WIRE.md §7.1): floats, vectors, angles and
//! rotations held as the integers they travel as, at a range and precision
//! the type declares. A value is its integers, so encoding is exact and
//! decoding checks every bit: a step out of range, a quaternion that is not
//! a unit or a padding bit set is a [`DecodeError`].
//!
//! Each type is a field like any other (its bits, padded to whole bytes)
//! and travels in delta snapshots as small [`Lanes`].

use core::fmt;

use super::bits::{BitReader, BitWriter, bits_for};
use super::lanes::{Lane, Lanes, lane_at, set_lane};
use super::schema::{CustomShape, Shape, leaf, mix_u64};
use super::{Decode, DecodeError, Encode, Reader, Schema, Sink};

/// Writes `fields` (value, bits) as one run of bits padded to `bytes`.
#[inline]
fn put_fields<W: Sink>(w: &mut W, bytes: usize, fields: &[(u64, u32)]) {
    let mut buf = [0u8; 16];
    let mut bits = BitWriter::new(&mut buf);
    for &(value, n) in fields {
        bits.put_bits(value, n);
    }
    let n = bits.finish().unwrap_or(0);
    debug_assert_eq!(n, bytes);
    w.put_slice(buf.get(..bytes).unwrap_or_default());
}

/// Reads `bytes` bytes and gives them to `read` as bits; the padding after
/// what `read` took must be zero.
#[inline]
fn get_fields<'de, T>(
    r: &mut Reader<'de>,
    bytes: usize,
    read: impl FnOnce(&mut BitReader<'de>) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    let mut bits = BitReader::new(r.take(bytes)?);
    let value = read(&mut bits)?;
    bits.finish().map_err(|_| DecodeError::InvalidValue)?;
    Ok(value)
}

const fn bytes_for(bits: u32) -> usize {
    (bits as usize).div_ceil(8)
}

/// Steps from `min` to `max` at `per_unit` steps a unit, or a compile-time
/// error (when the constant is used) for a bad declaration.
const fn steps(min: i32, max: i32, per_unit: u32) -> u32 {
    assert!(max > min, "a quantized range needs MAX > MIN");
    assert!(
        per_unit > 0,
        "a quantized range needs at least one step a unit"
    );
    let steps = (max as i64 - min as i64) * per_unit as i64;
    assert!(
        steps <= u32::MAX as i64,
        "a quantized range may have at most 2^32 - 1 steps"
    );
    steps as u32
}

/// `v` as a step of `[min, max]` at `per_unit` steps a unit: rounded to
/// the nearest step, clamped to the range; NaN is `min`.
#[inline]
fn quantize(v: f32, min: i32, per_unit: u32, steps: u32) -> u32 {
    let q = ((f64::from(v) - f64::from(min)) * f64::from(per_unit)).round();
    // `as` saturates and maps NaN to 0.
    (q.clamp(0.0, f64::from(steps)) as u32).min(steps)
}

#[inline]
fn dequantize(q: u32, min: i32, per_unit: u32) -> f32 {
    (f64::from(min) + f64::from(q) / f64::from(per_unit)) as f32
}

const fn range_fingerprint(name: &str, min: i32, max: i32, per_unit: u32, n: u64) -> u64 {
    let h = mix_u64(leaf(name), min as i64 as u64);
    let h = mix_u64(h, max as i64 as u64);
    mix_u64(mix_u64(h, per_unit as u64), n)
}

/// A float from `MIN` to `MAX` in steps of `1 / PER_UNIT`, held as its step
/// number: `QF32<-8000, 8000, 1000>` is ±8 km at 1 mm, 24 bits (3 bytes on
/// the wire). [`new`](Self::new) rounds to the nearest step and clamps to
/// the range (NaN is `MIN`); [`get`](Self::get) gives the float back.
///
/// On the wire: the step number in [`BITS`](Self::BITS) bits, least
/// significant first, padded with zero bits to [`BYTES`](Self::BYTES)
/// bytes; a step above the range or a set padding bit is
/// [`DecodeError::InvalidValue`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QF32<const MIN: i32, const MAX: i32, const PER_UNIT: u32> {
    step: u32,
}

impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> QF32<MIN, MAX, PER_UNIT> {
    /// The largest step number: the range times the steps a unit.
    pub const STEPS: u32 = steps(MIN, MAX, PER_UNIT);
    /// Bits a value takes.
    pub const BITS: u32 = bits_for(Self::STEPS as u64);
    /// Bytes a value takes as a field.
    pub const BYTES: usize = bytes_for(Self::BITS);
    /// The distance between two steps.
    pub const PRECISION: f32 = 1.0 / PER_UNIT as f32;

    const CUSTOM: CustomShape = CustomShape {
        name: "QF32",
        wire: Shape::Array {
            len: Self::BYTES,
            item: &<u8 as Schema>::SHAPE,
        },
        fingerprint: range_fingerprint("qf32", MIN, MAX, PER_UNIT, 1),
    };

    /// `v` rounded to the nearest step and clamped to the range.
    #[inline]
    #[must_use]
    pub fn new(v: f32) -> Self {
        Self {
            step: quantize(v, MIN, PER_UNIT, Self::STEPS),
        }
    }

    /// The value at step `step`, if it is in the range.
    #[inline]
    #[must_use]
    pub fn from_step(step: u32) -> Option<Self> {
        (step <= Self::STEPS).then_some(Self { step })
    }

    /// The step number, from 0 (`MIN`) to [`STEPS`](Self::STEPS) (`MAX`).
    #[inline]
    #[must_use]
    pub fn step(self) -> u32 {
        self.step
    }

    /// The float this value stands for.
    #[inline]
    #[must_use]
    pub fn get(self) -> f32 {
        dequantize(self.step, MIN, PER_UNIT)
    }
}

impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> Default for QF32<MIN, MAX, PER_UNIT> {
    /// The step nearest zero.
    fn default() -> Self {
        Self::new(0.0)
    }
}

impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> fmt::Debug for QF32<MIN, MAX, PER_UNIT> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QF32({} = step {})", self.get(), self.step)
    }
}

impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> Encode for QF32<MIN, MAX, PER_UNIT> {
    const FIXED_SIZE: Option<usize> = Some(Self::BYTES);

    #[inline]
    fn encoded_len(&self) -> usize {
        Self::BYTES
    }

    #[inline]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        put_fields(w, Self::BYTES, &[(u64::from(self.step), Self::BITS)]);
    }
}

impl<'de, const MIN: i32, const MAX: i32, const PER_UNIT: u32> Decode<'de>
    for QF32<MIN, MAX, PER_UNIT>
{
    const MIN_SIZE: usize = Self::BYTES;
    const EXACT_SIZE: bool = true;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        get_fields(r, Self::BYTES, |b| {
            let step = b.get_bits(Self::BITS)? as u32;
            Self::from_step(step).ok_or(DecodeError::InvalidValue)
        })
    }
}

impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> Schema for QF32<MIN, MAX, PER_UNIT> {
    const SHAPE: Shape = Shape::Custom(&Self::CUSTOM);
}

impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> Lanes for QF32<MIN, MAX, PER_UNIT> {
    const LANES: usize = 1;

    #[inline]
    fn lane(_: usize) -> Lane {
        Lane::upto(Self::STEPS)
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        set_lane(out, 0, self.step);
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        Self::from_step(lane_at(lanes, 0)).ok_or(DecodeError::InvalidValue)
    }
}

/// `N` components, each a [`QF32`] of the same range: the vectors below.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QVector<const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32> {
    steps: [u32; N],
}

/// A 2-component vector of [`QF32`]s: `QVec2<-4096, 4096, 100>` is ±4 km at
/// 1 cm a component.
pub type QVec2<const MIN: i32, const MAX: i32, const PER_UNIT: u32> =
    QVector<2, MIN, MAX, PER_UNIT>;

/// A 3-component vector of [`QF32`]s: `QVec3<-8000, 8000, 1000>` is a
/// position ±8 km at 1 mm, 72 bits (9 bytes) where a `Vec3` takes 12.
pub type QVec3<const MIN: i32, const MAX: i32, const PER_UNIT: u32> =
    QVector<3, MIN, MAX, PER_UNIT>;

impl<const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32>
    QVector<N, MIN, MAX, PER_UNIT>
{
    /// The largest step number of a component.
    pub const STEPS: u32 = steps(MIN, MAX, PER_UNIT);
    /// Bits a component takes.
    pub const BITS: u32 = bits_for(Self::STEPS as u64);
    /// Bytes the vector takes as a field: its components' bits one after
    /// another, padded once.
    pub const BYTES: usize = {
        assert!(N >= 1 && N <= 4, "QVector has 1 to 4 components");
        bytes_for(Self::BITS * N as u32)
    };

    const CUSTOM: CustomShape = CustomShape {
        name: "QVector",
        wire: Shape::Array {
            len: Self::BYTES,
            item: &<u8 as Schema>::SHAPE,
        },
        fingerprint: range_fingerprint("qvector", MIN, MAX, PER_UNIT, N as u64),
    };

    /// Each component rounded to its nearest step and clamped to the range.
    #[inline]
    #[must_use]
    pub fn from_array(v: [f32; N]) -> Self {
        Self {
            steps: v.map(|c| quantize(c, MIN, PER_UNIT, Self::STEPS)),
        }
    }

    /// The vector of these step numbers, if each is in the range.
    #[inline]
    #[must_use]
    pub fn from_steps(steps: [u32; N]) -> Option<Self> {
        steps
            .iter()
            .all(|s| *s <= Self::STEPS)
            .then_some(Self { steps })
    }

    /// The components' step numbers.
    #[inline]
    #[must_use]
    pub fn steps(self) -> [u32; N] {
        self.steps
    }

    /// The components as floats.
    #[inline]
    #[must_use]
    pub fn to_array(self) -> [f32; N] {
        self.steps.map(|s| dequantize(s, MIN, PER_UNIT))
    }
}

#[cfg(feature = "glam")]
impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> QVector<2, MIN, MAX, PER_UNIT> {
    /// `v` quantized.
    #[inline]
    #[must_use]
    pub fn new(v: glam::Vec2) -> Self {
        Self::from_array(v.to_array())
    }

    /// The vector this value stands for.
    #[inline]
    #[must_use]
    pub fn get(self) -> glam::Vec2 {
        glam::Vec2::from_array(self.to_array())
    }
}

#[cfg(feature = "glam")]
impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> QVector<3, MIN, MAX, PER_UNIT> {
    /// `v` quantized.
    #[inline]
    #[must_use]
    pub fn new(v: glam::Vec3) -> Self {
        Self::from_array(v.to_array())
    }

    /// The vector this value stands for.
    #[inline]
    #[must_use]
    pub fn get(self) -> glam::Vec3 {
        glam::Vec3::from_array(self.to_array())
    }
}

impl<const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32> Default
    for QVector<N, MIN, MAX, PER_UNIT>
{
    /// Each component at the step nearest zero.
    fn default() -> Self {
        Self::from_array([0.0; N])
    }
}

impl<const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32> fmt::Debug
    for QVector<N, MIN, MAX, PER_UNIT>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QVector({:?} = steps {:?})", self.to_array(), self.steps)
    }
}

impl<const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32> Encode
    for QVector<N, MIN, MAX, PER_UNIT>
{
    const FIXED_SIZE: Option<usize> = Some(Self::BYTES);

    #[inline]
    fn encoded_len(&self) -> usize {
        Self::BYTES
    }

    #[inline]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        let mut fields = [(0u64, Self::BITS); 4];
        for (field, step) in fields.iter_mut().zip(self.steps) {
            field.0 = u64::from(step);
        }
        put_fields(w, Self::BYTES, fields.get(..N).unwrap_or_default());
    }
}

impl<'de, const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32> Decode<'de>
    for QVector<N, MIN, MAX, PER_UNIT>
{
    const MIN_SIZE: usize = Self::BYTES;
    const EXACT_SIZE: bool = true;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        get_fields(r, Self::BYTES, |b| {
            let mut steps = [0u32; N];
            for step in &mut steps {
                *step = b.get_bits(Self::BITS)? as u32;
            }
            Self::from_steps(steps).ok_or(DecodeError::InvalidValue)
        })
    }
}

impl<const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32> Schema
    for QVector<N, MIN, MAX, PER_UNIT>
{
    const SHAPE: Shape = Shape::Custom(&Self::CUSTOM);
}

impl<const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32> Lanes
    for QVector<N, MIN, MAX, PER_UNIT>
{
    const LANES: usize = N;

    #[inline]
    fn lane(_: usize) -> Lane {
        Lane::upto(Self::STEPS)
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        for (i, step) in self.steps.iter().enumerate() {
            set_lane(out, i, *step);
        }
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        Self::from_steps(core::array::from_fn(|i| lane_at(lanes, i)))
            .ok_or(DecodeError::InvalidValue)
    }
}

/// An angle in `BITS` bits (2 to 31): a whole turn in 2^BITS steps, so
/// `QAngle<12>` is 0.088°. It wraps: in a delta snapshot, turning from 359°
/// to 1° is a step of two.
///
/// On the wire: the step in `BITS` bits, padded to whole bytes with zero
/// bits.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QAngle<const BITS: u32> {
    step: u32,
}

impl<const BITS: u32> QAngle<BITS> {
    /// Steps in a whole turn.
    pub const TURN: u64 = {
        assert!(BITS >= 2 && BITS <= 31, "QAngle takes 2 to 31 bits");
        1u64 << BITS
    };
    /// Bytes the angle takes as a field.
    pub const BYTES: usize = bytes_for(BITS);

    const CUSTOM: CustomShape = CustomShape {
        name: "QAngle",
        wire: Shape::Array {
            len: Self::BYTES,
            item: &<u8 as Schema>::SHAPE,
        },
        fingerprint: mix_u64(leaf("qangle"), BITS as u64),
    };

    /// `radians` rounded to the nearest step, any number of turns folded
    /// into one; not a finite number is 0.
    #[inline]
    #[must_use]
    pub fn from_radians(radians: f32) -> Self {
        let turns = f64::from(radians) / core::f64::consts::TAU;
        let turns = if turns.is_finite() {
            turns - turns.floor()
        } else {
            0.0
        };
        let step = (turns * Self::TURN as f64).round() as u64 % Self::TURN;
        Self { step: step as u32 }
    }

    /// The angle at step `step`, if below [`TURN`](Self::TURN).
    #[inline]
    #[must_use]
    pub fn from_step(step: u32) -> Option<Self> {
        (u64::from(step) < Self::TURN).then_some(Self { step })
    }

    /// The step, from 0 to [`TURN`](Self::TURN) − 1.
    #[inline]
    #[must_use]
    pub fn step(self) -> u32 {
        self.step
    }

    /// The angle in radians, from −π (inclusive) to π.
    #[inline]
    #[must_use]
    pub fn radians(self) -> f32 {
        let turn = Self::TURN as f64;
        let s = f64::from(self.step);
        let s = if s >= turn / 2.0 { s - turn } else { s };
        (s / turn * core::f64::consts::TAU) as f32
    }
}

impl<const BITS: u32> fmt::Debug for QAngle<BITS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QAngle({} rad = step {})", self.radians(), self.step)
    }
}

impl<const BITS: u32> Encode for QAngle<BITS> {
    const FIXED_SIZE: Option<usize> = Some(Self::BYTES);

    #[inline]
    fn encoded_len(&self) -> usize {
        Self::BYTES
    }

    #[inline]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        put_fields(w, Self::BYTES, &[(u64::from(self.step), BITS)]);
    }
}

impl<'de, const BITS: u32> Decode<'de> for QAngle<BITS> {
    const MIN_SIZE: usize = Self::BYTES;
    const EXACT_SIZE: bool = true;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        get_fields(r, Self::BYTES, |b| {
            let step = b.get_bits(BITS)? as u32;
            Self::from_step(step).ok_or(DecodeError::InvalidValue)
        })
    }
}

impl<const BITS: u32> Schema for QAngle<BITS> {
    const SHAPE: Shape = Shape::Custom(&Self::CUSTOM);
}

impl<const BITS: u32> Lanes for QAngle<BITS> {
    const LANES: usize = 1;

    #[inline]
    fn lane(_: usize) -> Lane {
        Lane::wrapping(BITS)
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        set_lane(out, 0, self.step);
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        Self::from_step(lane_at(lanes, 0)).ok_or(DecodeError::InvalidValue)
    }
}

/// A rotation in "smallest three" form: the index of the quaternion's
/// largest component (2 bits) and the other three, each in `BITS` bits (2 to
/// 30) over ±1/√2; the largest is rebuilt from the unit length and is
/// never negative (q and −q are the same rotation). `QQuat<9>` is 29 bits
/// (4 bytes) where a `Quat` takes 16, within about 0.2° (Glenn Fiedler's
/// "Snapshot Compression").
///
/// On the wire: the index, then the three components in order (each the
/// step `c` from 0 to 2H with H = 2^(BITS−1) − 1, standing for
/// (c − H) / (H √2)), padded to whole bytes with zero bits. A component
/// above 2H, or three whose squares add up past one (Σ(c − H)² > 2H²), is
/// [`DecodeError::InvalidValue`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct QQuat<const BITS: u32> {
    largest: u8,
    steps: [u32; 3],
}

impl<const BITS: u32> QQuat<BITS> {
    /// The step of a zero component.
    pub const HALF: u32 = {
        assert!(
            BITS >= 2 && BITS <= 30,
            "QQuat takes 2 to 30 bits a component"
        );
        (1u32 << (BITS - 1)) - 1
    };
    /// Bits the rotation takes.
    pub const TOTAL_BITS: u32 = 2 + 3 * BITS;
    /// Bytes the rotation takes as a field.
    pub const BYTES: usize = bytes_for(Self::TOTAL_BITS);
    /// The identity rotation.
    pub const IDENTITY: Self = Self {
        largest: 3,
        steps: [Self::HALF; 3],
    };

    const CUSTOM: CustomShape = CustomShape {
        name: "QQuat",
        wire: Shape::Array {
            len: Self::BYTES,
            item: &<u8 as Schema>::SHAPE,
        },
        fingerprint: mix_u64(leaf("qquat"), BITS as u64),
    };

    /// The rotation of `[x, y, z, w]` (normalised first; a quaternion of no
    /// finite length is the identity).
    #[must_use]
    pub fn from_xyzw(q: [f32; 4]) -> Self {
        let q = q.map(f64::from);
        let len = q.iter().map(|c| c * c).sum::<f64>().sqrt();
        if !len.is_finite() || len == 0.0 {
            return Self::IDENTITY;
        }
        let mut largest = 0;
        for i in 1..4 {
            if q.get(i).map(|c| c.abs()) > q.get(largest).map(|c| c.abs()) {
                largest = i;
            }
        }
        let sign = if q.get(largest).copied().unwrap_or(0.0) < 0.0 {
            -1.0
        } else {
            1.0
        };
        let half = f64::from(Self::HALF);
        let mut steps = [0u32; 3];
        let others = (0..4).filter(|i| *i != largest);
        for (step, i) in steps.iter_mut().zip(others) {
            let v = q.get(i).copied().unwrap_or(0.0) * sign / len;
            let c = (v * core::f64::consts::SQRT_2 * half).round() + half;
            *step = c.clamp(0.0, 2.0 * half) as u32;
        }
        // Rounding can push three near-equal components just past the
        // unit sphere: pull the largest of them in until they fit.
        while !Self::fits(steps) {
            let mut far = 0;
            for i in 1..3 {
                if dist(steps, i, Self::HALF) > dist(steps, far, Self::HALF) {
                    far = i;
                }
            }
            if let Some(s) = steps.get_mut(far) {
                *s = if *s > Self::HALF { *s - 1 } else { *s + 1 };
            }
        }
        Self {
            largest: largest as u8,
            steps,
        }
    }

    /// The rotation of these parts, if they make one.
    #[must_use]
    pub fn from_parts(largest: u8, steps: [u32; 3]) -> Option<Self> {
        let valid = largest < 4 && steps.iter().all(|s| *s <= 2 * Self::HALF) && Self::fits(steps);
        valid.then_some(Self { largest, steps })
    }

    /// The index of the largest component (0 = x … 3 = w) and the other
    /// three's steps.
    #[must_use]
    pub fn parts(self) -> (u8, [u32; 3]) {
        (self.largest, self.steps)
    }

    /// The quaternion `[x, y, z, w]` this value stands for (unit length).
    #[must_use]
    pub fn to_xyzw(self) -> [f32; 4] {
        let half = f64::from(Self::HALF);
        let small = self
            .steps
            .map(|c| (f64::from(c) - half) / (half * core::f64::consts::SQRT_2));
        let largest = (1.0 - small.iter().map(|c| c * c).sum::<f64>())
            .max(0.0)
            .sqrt();
        let mut out = [0f32; 4];
        let mut others = small.into_iter();
        for (i, slot) in out.iter_mut().enumerate() {
            let v = if i == usize::from(self.largest) {
                largest
            } else {
                others.next().unwrap_or(0.0)
            };
            *slot = v as f32;
        }
        out
    }

    /// Whether three steps make a part of a unit quaternion:
    /// Σ(c − H)² ≤ 2H², exactly, in integers.
    fn fits(steps: [u32; 3]) -> bool {
        let half = u64::from(Self::HALF);
        let sum: u64 = steps
            .iter()
            .map(|c| {
                let d = u64::from(*c).abs_diff(half);
                d * d
            })
            .sum();
        sum <= 2 * half * half
    }
}

fn dist(steps: [u32; 3], i: usize, half: u32) -> u32 {
    steps.get(i).map_or(0, |s| s.abs_diff(half))
}

#[cfg(feature = "glam")]
impl<const BITS: u32> QQuat<BITS> {
    /// `q` quantized (normalised first).
    #[must_use]
    pub fn new(q: glam::Quat) -> Self {
        Self::from_xyzw(q.to_array())
    }

    /// The rotation this value stands for.
    #[must_use]
    pub fn get(self) -> glam::Quat {
        glam::Quat::from_array(self.to_xyzw())
    }
}

impl<const BITS: u32> Default for QQuat<BITS> {
    /// The identity.
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl<const BITS: u32> fmt::Debug for QQuat<BITS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "QQuat({:?} = largest {}, steps {:?})",
            self.to_xyzw(),
            self.largest,
            self.steps
        )
    }
}

impl<const BITS: u32> Encode for QQuat<BITS> {
    const FIXED_SIZE: Option<usize> = Some(Self::BYTES);

    #[inline]
    fn encoded_len(&self) -> usize {
        Self::BYTES
    }

    #[inline]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        let [a, b, c] = self.steps.map(u64::from);
        put_fields(
            w,
            Self::BYTES,
            &[
                (u64::from(self.largest), 2),
                (a, BITS),
                (b, BITS),
                (c, BITS),
            ],
        );
    }
}

impl<'de, const BITS: u32> Decode<'de> for QQuat<BITS> {
    const MIN_SIZE: usize = Self::BYTES;
    const EXACT_SIZE: bool = true;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        get_fields(r, Self::BYTES, |b| {
            let largest = b.get_bits(2)? as u8;
            let mut steps = [0u32; 3];
            for step in &mut steps {
                *step = b.get_bits(BITS)? as u32;
            }
            Self::from_parts(largest, steps).ok_or(DecodeError::InvalidValue)
        })
    }
}

impl<const BITS: u32> Schema for QQuat<BITS> {
    const SHAPE: Shape = Shape::Custom(&Self::CUSTOM);
}

/// Four lanes: the index of the largest component, then the three steps.
impl<const BITS: u32> Lanes for QQuat<BITS> {
    const LANES: usize = 4;

    #[inline]
    fn lane(index: usize) -> Lane {
        if index == 0 {
            Lane::upto(3)
        } else {
            Lane::upto(2 * Self::HALF)
        }
    }

    #[inline]
    fn write_lanes(&self, out: &mut [u32]) {
        set_lane(out, 0, u32::from(self.largest));
        for (i, step) in self.steps.iter().enumerate() {
            set_lane(out, i + 1, *step);
        }
    }

    #[inline]
    fn read_lanes(lanes: &[u32]) -> Result<Self, DecodeError> {
        let largest = u8::try_from(lane_at(lanes, 0)).map_err(|_| DecodeError::InvalidValue)?;
        let steps = core::array::from_fn(|i| lane_at(lanes, i + 1));
        Self::from_parts(largest, steps).ok_or(DecodeError::InvalidValue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Pos = QF32<-8000, 8000, 1000>;
    type V3 = QVec3<-4096, 4096, 1000>;

    fn round_trip<T: Encode + for<'de> Decode<'de> + PartialEq + fmt::Debug>(v: &T) {
        let bytes = v.to_encoded_vec();
        assert_eq!(bytes.len(), v.encoded_len());
        assert_eq!(T::decode(&bytes).as_ref(), Ok(v));
    }

    #[test]
    fn sizes_follow_the_declared_range() {
        assert_eq!(Pos::STEPS, 16_000_000);
        assert_eq!(Pos::BITS, 24);
        assert_eq!(Pos::BYTES, 3);
        assert_eq!(V3::BITS, 23);
        assert_eq!(V3::BYTES, 9);
        assert_eq!(QF32::<0, 1, 255>::BITS, 8);
        assert_eq!(QQuat::<9>::BYTES, 4);
        assert_eq!(QAngle::<12>::BYTES, 2);
    }

    #[test]
    fn floats_round_to_the_nearest_step_and_clamp() {
        assert_eq!(Pos::new(1.2344).get(), 1.234);
        assert_eq!(Pos::new(-1.2346).get(), -1.235);
        assert_eq!(Pos::new(9000.0).get(), 8000.0);
        assert_eq!(Pos::new(f32::NEG_INFINITY).get(), -8000.0);
        assert_eq!(Pos::new(f32::NAN).step(), 0);
        for v in [-8000.0, -1.5, 0.0, 0.001, 7999.999, 8000.0] {
            let q = Pos::new(v);
            assert!(
                (q.get() - v).abs() <= 0.0005 + v.abs() * 1e-7,
                "{v} -> {}",
                q.get()
            );
            round_trip(&q);
        }
        // 1.5 at steps of 1/1000 from -8000: step 8 001 500, bytes LE.
        assert_eq!(
            Pos::new(1.5).to_encoded_vec(),
            8_001_500u32.to_le_bytes()[..3]
        );
    }

    #[test]
    fn out_of_range_steps_and_padding_are_refused() {
        // 16 000 001 is one step past the range (24 bits hold up to 16 777 215).
        assert_eq!(
            Pos::decode(&16_000_001u32.to_le_bytes()[..3]),
            Err(DecodeError::InvalidValue)
        );
        assert_eq!(Pos::decode(&[0, 0]), Err(DecodeError::UnexpectedEnd));
        // QF32<0, 1, 255>: 8 bits, 0..=255 all valid; QF32<0, 1, 100>: 7
        // bits, the eighth is padding.
        assert_eq!(
            QF32::<0, 1, 100>::decode(&[0x80]),
            Err(DecodeError::InvalidValue)
        );
        assert_eq!(
            QF32::<0, 1, 100>::decode(&[101]),
            Err(DecodeError::InvalidValue)
        );
        assert_eq!(QF32::<0, 1, 100>::decode(&[100]).map(QF32::get), Ok(1.0));
        // A vector: 3 × 23 bits = 69, three padding bits in the last byte.
        let mut bytes = V3::default().to_encoded_vec();
        bytes[8] |= 0x20;
        assert_eq!(V3::decode(&bytes), Err(DecodeError::InvalidValue));
        assert_eq!(
            QAngle::<12>::decode(&[0, 0x10]),
            Err(DecodeError::InvalidValue)
        );
    }

    #[test]
    fn vectors_and_angles_round_trip() {
        let v = V3::from_array([-4096.0, 1.2345, 4095.5]);
        assert_eq!(v.to_array(), [-4096.0, 1.235, 4095.5]);
        round_trip(&v);
        assert_eq!(V3::from_steps([0, 0, V3::STEPS + 1]), None);
        let a = QAngle::<12>::from_radians(-core::f32::consts::FRAC_PI_2);
        assert_eq!(a.step(), 3072);
        assert!((a.radians() + core::f32::consts::FRAC_PI_2).abs() < 1e-6);
        assert_eq!(
            QAngle::<12>::from_radians(core::f32::consts::TAU * 3.0).step(),
            0
        );
        assert_eq!(QAngle::<12>::from_radians(f32::NAN).step(), 0);
        round_trip(&a);
    }

    #[test]
    fn quaternions_keep_their_rotation_within_the_precision() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
        };
        for _ in 0..2000 {
            let q = [next(), next(), next(), next()];
            let len = q.iter().map(|c| c * c).sum::<f32>().sqrt();
            let unit = q.map(|c| c / len);
            let packed = QQuat::<9>::from_xyzw(q);
            round_trip(&packed);
            let back = packed.to_xyzw();
            let dot: f32 = unit
                .iter()
                .zip(&back)
                .map(|(a, b)| a * b)
                .sum::<f32>()
                .abs();
            // Within half a degree at 9 bits a component (steps of 0.0028).
            assert!(
                dot > (0.5f32.to_radians() / 2.0).cos(),
                "{unit:?} -> {back:?}"
            );
        }
        assert_eq!(QQuat::<9>::from_xyzw([0.0; 4]), QQuat::<9>::IDENTITY);
        assert_eq!(QQuat::<9>::IDENTITY.to_xyzw(), [0.0, 0.0, 0.0, 1.0]);
        // Three components at their extreme: not part of a unit quaternion.
        assert_eq!(QQuat::<9>::from_parts(0, [510, 510, 510]), None);
        assert_eq!(QQuat::<9>::from_parts(0, [511, 255, 255]), None);
        assert_eq!(QQuat::<9>::from_parts(4, [255, 255, 255]), None);
        let mut bytes = QQuat::<9>::IDENTITY.to_encoded_vec();
        // The first component's top bit (bit 10): 255 becomes 511 > 2H = 510.
        bytes[1] |= 0b100;
        assert_eq!(QQuat::<9>::decode(&bytes), Err(DecodeError::InvalidValue));
    }

    #[test]
    fn shapes_and_fingerprints_name_the_range() {
        assert_ne!(Pos::FINGERPRINT, QF32::<-8000, 8000, 100>::FINGERPRINT);
        assert_ne!(V3::FINGERPRINT, QVec2::<-4096, 4096, 1000>::FINGERPRINT);
        assert_ne!(QQuat::<9>::FINGERPRINT, QQuat::<10>::FINGERPRINT);
        match Pos::SHAPE {
            Shape::Custom(c) => assert_eq!(
                c.wire,
                Shape::Array {
                    len: 3,
                    item: &u8::SHAPE
                }
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lanes_carry_the_steps() {
        let v = V3::from_array([1.0, 2.0, 3.0]);
        let mut lanes = [0u32; 3];
        v.write_lanes(&mut lanes);
        assert_eq!(V3::read_lanes(&lanes), Ok(v));
        assert_eq!(V3::lane(0).max, V3::STEPS);
        let q = QQuat::<9>::from_xyzw([0.1, 0.2, 0.3, 0.9]);
        let mut lanes = [0u32; 4];
        q.write_lanes(&mut lanes);
        assert_eq!(QQuat::<9>::read_lanes(&lanes), Ok(q));
        assert!(QAngle::<12>::lane(0).wrapping);
    }
}
