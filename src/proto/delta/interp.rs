//! Interpolation between two states of an entity, for rendering between
//! snapshots ([`Sample::interpolated`](super::Sample::interpolated)).

use crate::wire::{QAngle, QF32, QQuat, QVector};

/// A value that can be drawn part of the way between two states.
///
/// Implement it for a snapshot item to get
/// [`Sample::interpolated`](super::Sample::interpolated): usually each
/// field interpolated, the key and discrete fields taken from `to` once
/// `t` passes one half.
pub trait Interpolate {
    /// The state `t` of the way from `self` (0) to `to` (1).
    #[must_use]
    fn interpolate(&self, to: &Self, t: f32) -> Self;
}

impl Interpolate for f32 {
    fn interpolate(&self, to: &Self, t: f32) -> Self {
        self + (to - self) * t
    }
}

impl Interpolate for f64 {
    fn interpolate(&self, to: &Self, t: f32) -> Self {
        self + (to - self) * f64::from(t)
    }
}

/// Rounded to the nearest step between the two.
impl<const MIN: i32, const MAX: i32, const PER_UNIT: u32> Interpolate for QF32<MIN, MAX, PER_UNIT> {
    fn interpolate(&self, to: &Self, t: f32) -> Self {
        Self::new(self.get().interpolate(&to.get(), t))
    }
}

/// Each component rounded to the nearest step between the two.
impl<const N: usize, const MIN: i32, const MAX: i32, const PER_UNIT: u32> Interpolate
    for QVector<N, MIN, MAX, PER_UNIT>
{
    fn interpolate(&self, to: &Self, t: f32) -> Self {
        let (a, b) = (self.to_array(), to.to_array());
        let mut out = a;
        for (o, (a, b)) in out.iter_mut().zip(a.iter().zip(b)) {
            *o = a.interpolate(&b, t);
        }
        Self::from_array(out)
    }
}

/// The shorter way round.
impl<const BITS: u32> Interpolate for QAngle<BITS> {
    fn interpolate(&self, to: &Self, t: f32) -> Self {
        let turn = Self::TURN as i64;
        let d = (i64::from(to.step()) - i64::from(self.step())).rem_euclid(turn);
        let d = if d >= turn / 2 { d - turn } else { d };
        let step =
            (i64::from(self.step()) + (d as f64 * f64::from(t)).round() as i64).rem_euclid(turn);
        Self::from_step(step as u32).unwrap_or(*self)
    }
}

/// Normalised linear interpolation along the shorter arc.
impl<const BITS: u32> Interpolate for QQuat<BITS> {
    fn interpolate(&self, to: &Self, t: f32) -> Self {
        Self::from_xyzw(nlerp(self.to_xyzw(), to.to_xyzw(), t))
    }
}

fn nlerp(a: [f32; 4], b: [f32; 4], t: f32) -> [f32; 4] {
    let dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    let sign = if dot < 0.0 { -1.0 } else { 1.0 };
    let mut out = [0.0; 4];
    for (o, (x, y)) in out.iter_mut().zip(a.iter().zip(&b)) {
        *o = x + (y * sign - x) * t;
    }
    let len = out.iter().map(|c| c * c).sum::<f32>().sqrt();
    if len > 0.0 {
        out.iter_mut().for_each(|c| *c /= len);
    }
    out
}

#[cfg(feature = "glam")]
mod glam_interp {
    use glam::{Quat, Vec2, Vec3, Vec4};

    use super::Interpolate;

    macro_rules! lerp {
        ($($ty:ty),*) => {$(
            impl Interpolate for $ty {
                fn interpolate(&self, to: &Self, t: f32) -> Self {
                    self.lerp(*to, t)
                }
            }
        )*};
    }

    lerp!(Vec2, Vec3, Vec4);

    /// Spherical interpolation along the shorter arc.
    impl Interpolate for Quat {
        fn interpolate(&self, to: &Self, t: f32) -> Self {
            self.slerp(*to, t)
        }
    }
}
