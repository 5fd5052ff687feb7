// `usize` is 4 or 8 bytes depending on the platform: no stable memory image.
use zao::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
use zao::{Decode, Encode};

#[derive(Encode, Decode, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[zerocopy(crate = "zao::zerocopy")]
#[zao(blittable)]
#[repr(C)]
struct Sized {
    len: usize,
}

fn main() {}
