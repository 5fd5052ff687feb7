// `#[zao(blittable)]` without zerocopy's proof that the type is plain data.
use zao::{Decode, Encode};

#[derive(Encode, Decode)]
#[zao(blittable)]
#[repr(C)]
struct Unproven {
    a: u32,
    b: u32,
}

fn main() {}
