// A message needs a stable id: deriving one from the name or order would
// silently change the wire when code moves.
use zao::{Encode, NetMessage};

#[derive(Encode, NetMessage)]
struct NoId {
    a: u32,
}

fn main() {}
