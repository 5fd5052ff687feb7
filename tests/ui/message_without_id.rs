// A message needs a stable id: deriving one from the name or order would
// silently change the wire when code moves.
use zao::{Encode, Message};

#[derive(Encode, Message)]
struct NoId {
    a: u32,
}

fn main() {}
