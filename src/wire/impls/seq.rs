//! Sequences and wrappers: slices, `Vec`, arrays, `Option`, `Box`, tuples,
//! references (docs/WIRE.md §5).

use crate::wire::encode::run_count_len;
use crate::wire::schema::Shape;
use crate::wire::{Decode, DecodeError, Encode, Reader, Schema, Sink, size};

impl<T: Encode + ?Sized> Encode for &T {
    const FIXED_SIZE: Option<usize> = T::FIXED_SIZE;
    const MAX_SIZE: Option<usize> = T::MAX_SIZE;
    const LEN_WALKS: bool = T::LEN_WALKS;
    const WIDE_COUNT: bool = T::WIDE_COUNT;

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        (**self).encoded_len()
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        (**self).encode_to(w);
    }
}

impl<T: Schema + ?Sized> Schema for &T {
    const SHAPE: Shape = T::SHAPE;
}

/// A count, then the elements; a run of blittable elements is one copy.
impl<T: Encode> Encode for [T] {
    const LEN_WALKS: bool = T::FIXED_SIZE.is_none();

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        run_count_len::<T>(self.len()) + T::slice_encoded_len(self)
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        T::encode_run(self, w);
    }
}

impl<T: Schema> Schema for [T] {
    const SHAPE: Shape = T::SLICE_SHAPE;
    const BOXED_SHAPE: Shape = Self::SHAPE;
}

impl<T: Encode> Encode for Vec<T> {
    const LEN_WALKS: bool = <[T] as Encode>::LEN_WALKS;

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        self.as_slice().encoded_len()
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        self.as_slice().encode_to(w);
    }
}

impl<'de, T: Decode<'de>> Decode<'de> for Vec<T> {
    const MIN_SIZE: usize = if T::WIDE_COUNT { 4 } else { 1 };

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        r.enter()?;
        let count = r.get_run_count(T::WIDE_COUNT, T::MIN_SIZE, size_of::<T>())?;
        let vec = T::decode_vec(count, r)?;
        r.leave();
        Ok(vec)
    }

    /// Reuses the `Vec`'s capacity, charging all of it against the
    /// allocation budget; capacity the budget cannot hold is released first.
    #[inline(always)]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        r.enter()?;
        let count = r.get_run_count(T::WIDE_COUNT, T::MIN_SIZE, 0)?;
        let size = size_of::<T>();
        let needed = count.checked_mul(size).ok_or(DecodeError::OverLimit)?;
        if !r.charge_reuse(self.capacity().saturating_mul(size), needed)? {
            self.truncate(count);
            self.shrink_to(count);
        }
        T::decode_vec_in_place(self, count, r)?;
        r.leave();
        Ok(())
    }
}

/// Always a sequence, `Vec<u8>` included: it decodes element by element
/// under `max_collection` (docs/WIRE.md §4).
impl<T: Schema> Schema for Vec<T> {
    const SHAPE: Shape = Shape::Seq(&T::SHAPE);
}

/// No count: the length is part of the type.
impl<T: Encode, const N: usize> Encode for [T; N] {
    const FIXED_SIZE: Option<usize> = size::mul(T::FIXED_SIZE, N);
    const MAX_SIZE: Option<usize> = size::mul(T::MAX_SIZE, N);
    const LEN_WALKS: bool = T::FIXED_SIZE.is_none() && N > 0;

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        T::slice_encoded_len(self)
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        T::encode_slice(self, w);
    }
}

/// Arrays decode into `Default` elements, then overwrite them in place.
impl<'de, T: Decode<'de> + Default, const N: usize> Decode<'de> for [T; N] {
    const MIN_SIZE: usize = T::MIN_SIZE.saturating_mul(N);
    const EXACT_SIZE: bool = T::EXACT_SIZE;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        let mut array: [T; N] = core::array::from_fn(|_| T::default());
        T::decode_slice_in_place(&mut array, r)?;
        Ok(array)
    }

    #[inline(always)]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        T::decode_slice_in_place(self, r)
    }
}

impl<T: Schema, const N: usize> Schema for [T; N] {
    const SHAPE: Shape = Shape::Array {
        len: N,
        item: &T::SHAPE,
    };
}

/// A tag byte, `0x00` for `None`, `0x01` then the value for `Some`.
impl<T: Encode> Encode for Option<T> {
    const MAX_SIZE: Option<usize> = size::add(Some(1), T::MAX_SIZE);
    const LEN_WALKS: bool = T::LEN_WALKS;

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        match self {
            Some(value) => 1 + value.encoded_len(),
            None => 1,
        }
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        match self {
            Some(value) => {
                w.put_u8(1);
                value.encode_to(w);
            }
            None => w.put_u8(0),
        }
    }
}

impl<'de, T: Decode<'de>> Decode<'de> for Option<T> {
    const MIN_SIZE: usize = 1;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        if let Some(plain) = decode_plain_option(r) {
            return plain;
        }
        match r.get_u8()? {
            0 => Ok(None),
            1 => T::decode_from(r).map(Some),
            _ => Err(DecodeError::InvalidTag),
        }
    }

    #[inline(always)]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        if let Some(plain) = decode_plain_option(r) {
            *self = plain?;
            return Ok(());
        }
        match (r.get_u8()?, self.as_mut()) {
            (0, _) => *self = None,
            (1, Some(value)) => value.decode_in_place_from(r)?,
            (1, None) => *self = Some(T::decode_from(r)?),
            _ => return Err(DecodeError::InvalidTag),
        }
        Ok(())
    }
}

/// An `Option` of an exact-size payload (numbers, bools, unit enums,
/// tuples and structs of them) decoded with no branch on its tag, when the
/// input holds the tag and a whole payload: the payload is decoded from a
/// window of its bytes whatever the tag (for `None` those are bytes of what
/// follows, decoded and dropped), and the tag selects `Some` or `None` and
/// how far the reader moves. A branch on a tag that varies from one value to
/// the next (an optional owner on some entities of a run) is mispredicted
/// about as often as not. An exact-size value does not allocate, so reading
/// it from its own window under default limits is what a run of them does
/// too (`Decode::EXACT_SIZE`). `None` where the input is shorter, or the
/// payload's size varies or passes 32 bytes: the caller branches.
#[inline(always)]
fn decode_plain_option<'de, T: Decode<'de>>(
    r: &mut Reader<'de>,
) -> Option<Result<Option<T>, DecodeError>> {
    // A payload of at most 32 bytes: for a `None`, decoding a large array
    // to drop it would cost more than the branch.
    if !(T::EXACT_SIZE && T::MIN_SIZE <= 32) {
        return None;
    }
    let size = T::MIN_SIZE;
    let rest = r.rest();
    let (&tag, payload) = rest.split_first()?;
    let payload = payload.get(..size)?;
    if tag > 1 {
        return Some(Err(DecodeError::InvalidTag));
    }
    let window = &mut Reader::new(payload);
    let value = if T::INFALLIBLE {
        Some(T::decode_plain(window))
    } else {
        match T::decode_from(window) {
            Ok(value) => Some(value),
            // Only a payload that is there counts.
            Err(e) if tag == 1 => return Some(Err(e)),
            Err(_) => None,
        }
    };
    // At most `1 + size` bytes, which the input holds: this never fails.
    r.take(1 + usize::from(tag) * size).ok()?;
    Some(Ok(core::hint::select_unpredictable(tag == 1, value, None)))
}

impl<T: Schema> Schema for Option<T> {
    const SHAPE: Shape = Shape::Option(&T::SHAPE);
}

/// Boxes are transparent on the wire; decoding one counts a level of depth,
/// so recursive types stop at [`DecodeLimits::max_depth`](crate::DecodeLimits::max_depth)
/// instead of overflowing the stack.
impl<T: Encode + ?Sized> Encode for Box<T> {
    const FIXED_SIZE: Option<usize> = T::FIXED_SIZE;
    const MAX_SIZE: Option<usize> = T::MAX_SIZE;
    const LEN_WALKS: bool = T::LEN_WALKS;
    // Not `WIDE_COUNT`: a run of boxes is no run of blittable structs, and
    // its shape (`Shape::Boxed`) says a varint count.

    #[inline(always)]
    fn encoded_len(&self) -> usize {
        (**self).encoded_len()
    }

    #[inline(always)]
    fn encode_to<W: Sink>(&self, w: &mut W) {
        (**self).encode_to(w);
    }
}

impl<'de, T: Decode<'de>> Decode<'de> for Box<T> {
    const MIN_SIZE: usize = T::MIN_SIZE;

    #[inline(always)]
    fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
        r.enter()?;
        r.charge(size_of::<T>())?;
        let value = T::decode_from(r)?;
        r.leave();
        Ok(Box::new(value))
    }

    /// Reuses the box; what it holds counts against the allocation budget.
    #[inline(always)]
    fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
        r.enter()?;
        r.charge(size_of::<T>())?;
        (**self).decode_in_place_from(r)?;
        r.leave();
        Ok(())
    }
}

impl<T: Schema + ?Sized> Schema for Box<T> {
    const SHAPE: Shape = T::BOXED_SHAPE;
}

/// Tuples are their elements in order, with nothing between.
macro_rules! tuple {
    ($($name:ident . $idx:tt),+) => {
        impl<$($name: Encode),+> Encode for ($($name,)+) {
            const FIXED_SIZE: Option<usize> = {
                let total = Some(0);
                $(let total = size::add(total, $name::FIXED_SIZE);)+
                total
            };
            const MAX_SIZE: Option<usize> = {
                let total = Some(0);
                $(let total = size::add(total, $name::MAX_SIZE);)+
                total
            };
            const LEN_WALKS: bool = false $(|| $name::LEN_WALKS)+;

            #[inline(always)]
            fn encoded_len(&self) -> usize {
                0 $(+ self.$idx.encoded_len())+
            }

            #[inline(always)]
            fn encode_to<W: Sink>(&self, w: &mut W) {
                $(self.$idx.encode_to(w);)+
            }
        }

        impl<'de, $($name: Decode<'de>),+> Decode<'de> for ($($name,)+) {
            const MIN_SIZE: usize = 0usize $(.saturating_add($name::MIN_SIZE))+;
            const EXACT_SIZE: bool = true $(&& $name::EXACT_SIZE)+;
            const INFALLIBLE: bool = true $(&& $name::INFALLIBLE)+;

            #[inline(always)]
            fn decode_plain(r: &mut Reader<'de>) -> Self {
                ($($name::decode_plain(r),)+)
            }

            /// An exact-size tuple (a position of three floats) is one
            /// bounds check, as a derived struct's is: its elements then
            /// read a window of exactly their bytes, and their checks fold.
            #[inline(always)]
            fn decode_from(r: &mut Reader<'de>) -> Result<Self, DecodeError> {
                if <Self as Decode<'de>>::EXACT_SIZE {
                    let r = &mut Reader::new(r.take(<Self as Decode<'de>>::MIN_SIZE)?);
                    if <Self as Decode<'de>>::INFALLIBLE {
                        return Ok(Self::decode_plain(r));
                    }
                    return Ok(($($name::decode_from(r)?,)+));
                }
                Ok(($($name::decode_from(r)?,)+))
            }

            #[inline(always)]
            fn decode_in_place_from(&mut self, r: &mut Reader<'de>) -> Result<(), DecodeError> {
                $(self.$idx.decode_in_place_from(r)?;)+
                Ok(())
            }
        }

        impl<$($name: Schema),+> Schema for ($($name,)+) {
            const SHAPE: Shape = Shape::Tuple(&[$($name::SHAPE),+]);
        }
    };
}

tuple!(A.0);
tuple!(A.0, B.1);
tuple!(A.0, B.1, C.2);
tuple!(A.0, B.1, C.2, D.3);
tuple!(A.0, B.1, C.2, D.3, E.4);
tuple!(A.0, B.1, C.2, D.3, E.4, F.5);
tuple!(A.0, B.1, C.2, D.3, E.4, F.5, G.6);
tuple!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7);
