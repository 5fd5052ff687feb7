// Two variants with one tag could not be told apart on the wire.
use zao::Encode;

#[derive(Encode)]
enum Twice {
    #[zao(tag = 1)]
    A,
    #[zao(tag = 1)]
    B,
}

fn main() {}
