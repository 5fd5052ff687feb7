// A blittable type with padding: 3 bytes after `kind`. Its memory image would
// leak uninitialised bytes onto the wire, so it must not compile.
use zao::zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};
use zao::{Decode, Encode};

#[derive(Encode, Decode, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[zerocopy(crate = "zao::zerocopy")]
#[zao(blittable)]
#[repr(C)]
struct Padded {
    kind: u8,
    value: u32,
}

fn main() {}
