// Every variant needs an explicit wire tag, so reordering variants cannot
// change the wire.
use zao::{Decode, Encode};

#[derive(Encode, Decode)]
enum Untagged {
    #[zao(tag = 0)]
    A,
    B(u32),
}

fn main() {}
