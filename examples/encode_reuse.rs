//! Encodes each reference message into one reused buffer in a loop and prints
//! bytes and nanoseconds per message (encode, and decode back).
//!
//! Run with `cargo run --release --example encode_reuse`. For comparisons
//! with other codecs measured in one run, see the benches.

// A demo on its own trusted values: indexing here cannot meet peer bytes.
#![allow(clippy::indexing_slicing)]

use std::hint::black_box;
use std::time::Instant;

use zao::{Decode, Encode};
use zao_messages::{Inventory, PlayerInput, PlayerMoved, SpawnEntity, WorldSnapshot, samples};

/// Encodes `value` `iters` times into `buf`, then decodes it in place `iters`
/// times, and prints one row.
fn measure<T>(name: &str, value: &T, buf: &mut [u8], iters: u32)
where
    T: Encode + for<'de> Decode<'de> + Clone + PartialEq,
{
    let mut written = 0;
    let start = Instant::now();
    for _ in 0..iters {
        written = black_box(value).encode(black_box(&mut *buf)).unwrap_or(0);
    }
    let encode_ns = start.elapsed().as_nanos() as f64 / f64::from(iters);

    let bytes = &buf[..written];
    let mut decoded = value.clone();
    let start = Instant::now();
    for _ in 0..iters {
        if black_box(&mut decoded)
            .decode_in_place(black_box(bytes))
            .is_err()
        {
            break;
        }
    }
    let decode_ns = start.elapsed().as_nanos() as f64 / f64::from(iters);
    let ok = if decoded == *value { "ok" } else { "MISMATCH" };
    println!("{name:<22} {written:>7} B {encode_ns:>10.1} ns {decode_ns:>10.1} ns   {ok}");
}

fn main() {
    // One buffer, allocated once, reused by every message and iteration.
    let mut buf = vec![0u8; 64 * 1024];
    println!(
        "{:<22} {:>9} {:>13} {:>13}",
        "message", "wire", "encode", "decode_in_place"
    );
    let iters = 200_000;
    measure::<PlayerMoved>("PlayerMoved", &samples::player_moved(), &mut buf, iters);
    measure::<PlayerInput>("PlayerInput", &samples::player_input(), &mut buf, iters);
    measure::<SpawnEntity>("SpawnEntity", &samples::spawn_entity(), &mut buf, iters);
    measure::<WorldSnapshot>(
        "WorldSnapshot(32)",
        &samples::world_snapshot(32),
        &mut buf,
        iters,
    );
    measure::<WorldSnapshot>(
        "WorldSnapshot(1024)",
        &samples::world_snapshot(1024),
        &mut buf,
        iters / 20,
    );
    measure::<Inventory>(
        "Inventory(128)",
        &samples::inventory(128),
        &mut buf,
        iters / 20,
    );
}
