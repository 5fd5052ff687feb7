//! `Buttons`: bit flags with a hand-written codec, through zao's public
//! primitives, that refuses bits no button uses.

use zao::wire::schema::{FlagsShape, Scalar, Shape};
use zao::{Decode, DecodeError, Encode, Reader, Schema, Sink};

/// Buttons held during one input tick, as bit flags. Two bytes on the wire;
/// a decoder refuses bits outside [`Buttons::ALL`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Buttons(u16);

impl Buttons {
    /// No button.
    pub const NONE: Self = Self(0);
    /// Fire.
    pub const FIRE: Self = Self(1 << 0);
    /// Aim down sights.
    pub const AIM: Self = Self(1 << 1);
    /// Jump.
    pub const JUMP: Self = Self(1 << 2);
    /// Use / interact.
    pub const USE: Self = Self(1 << 3);
    /// Reload.
    pub const RELOAD: Self = Self(1 << 4);
    /// Sprint.
    pub const SPRINT: Self = Self(1 << 5);
    /// Every defined button.
    pub const ALL: Self = Self(0b11_1111);

    /// The flags from raw bits, or `None` if a bit is not a button.
    #[must_use]
    pub const fn from_bits(bits: u16) -> Option<Self> {
        if bits & !Self::ALL.0 == 0 {
            Some(Self(bits))
        } else {
            None
        }
    }

    /// The raw bits.
    #[must_use]
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// Whether every button in `other` is held.
    #[must_use]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for Buttons {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl Encode for Buttons {
    const FIXED_SIZE: Option<usize> = Some(2);

    #[inline]
    fn encoded_len(&self) -> usize {
        2
    }

    #[inline]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        w.put_u16_le(self.0);
    }
}

impl<'de> Decode<'de> for Buttons {
    const MIN_SIZE: usize = 2;
    const EXACT_SIZE: bool = true;

    #[inline]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        Self::from_bits(r.get_u16_le()?).ok_or(DecodeError::InvalidValue)
    }
}

/// Bit flags: a tool reading the shape prints `FIRE | JUMP` and refuses the
/// bits the decoder refuses. Fingerprint: `mix_u64(leaf("Buttons"), 0x3f)`,
/// the name and every bit in use (docs/WIRE.md §9).
impl Schema for Buttons {
    const SHAPE: Shape = Shape::Flags(&FlagsShape {
        name: "Buttons",
        bits: Scalar::U16,
        flags: &[
            ("FIRE", Self::FIRE.0 as u64),
            ("AIM", Self::AIM.0 as u64),
            ("JUMP", Self::JUMP.0 as u64),
            ("USE", Self::USE.0 as u64),
            ("RELOAD", Self::RELOAD.0 as u64),
            ("SPRINT", Self::SPRINT.0 as u64),
        ],
    });
}
