//! The `delta_snapshots` fuzz target's seeds, written by code here
//! (`ZAO_BLESS=1` re-creates them), and the whole seed corpus replayed
//! through its checks (`fuzz/fuzz_targets/delta_check.rs`) in `cargo test`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
#![allow(dead_code)]

use std::path::PathBuf;

#[path = "../fuzz/fuzz_targets/delta_check.rs"]
mod delta_check;

use delta_check::{SEQS, genuine, world};
use glam::Vec3;
use zao::Encode;
use zao::wire::{QQuat, QVec3};

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/delta")
}

/// A genuine chunk: `ff`, then bytes that pick snapshot `seq` against
/// `baseline`, chunk `chunk`.
fn pick(seq: u64, baseline: u64, chunk: usize) -> Vec<u8> {
    vec![4, 0xff, (seq - 1) as u8, baseline as u8, chunk as u8]
}

/// Every chunk of `seq` against `baseline`.
fn all_chunks(seq: u64, baseline: u64) -> Vec<u8> {
    let n = genuine()[&(seq, baseline)].len();
    (0..n).flat_map(|c| pick(seq, baseline, c)).collect()
}

fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let raw: Vec<u8> = {
        let chunk = &genuine()[&(2, 1)][0];
        let mut v = vec![1, chunk.len().min(255) as u8];
        v.extend_from_slice(&chunk[..chunk.len().min(255)]);
        v
    };
    vec![
        (
            "quant-entity-snapshot",
            [vec![0], world(2).to_encoded_vec()].concat(),
        ),
        (
            "quant-positions",
            [
                vec![0],
                vec![
                    QVec3::<-4096, 4096, 1000>::new(Vec3::new(1.5, -2.25, 4095.0)),
                    QVec3::new(Vec3::new(-4096.0, 0.0, 0.001)),
                ]
                .to_encoded_vec(),
            ]
            .concat(),
        ),
        (
            "quant-quaternion",
            [
                vec![0],
                QQuat::<9>::from_xyzw([0.1, 0.7, -0.1, 0.7]).to_encoded_vec(),
            ]
            .concat(),
        ),
        (
            "receiver-keyframes",
            [vec![1], (1..=SEQS).flat_map(|s| all_chunks(s, 0)).collect()].concat(),
        ),
        (
            "receiver-deltas-in-order",
            [
                vec![1],
                all_chunks(1, 0),
                (2..=SEQS).flat_map(|s| all_chunks(s, s - 1)).collect(),
            ]
            .concat(),
        ),
        (
            "receiver-delta-before-its-baseline",
            [
                vec![1],
                all_chunks(1, 0),
                all_chunks(3, 2),
                all_chunks(2, 1),
            ]
            .concat(),
        ),
        ("receiver-raw-chunk", raw),
    ]
}

#[test]
fn the_seeds_are_the_codes() {
    let dir = seeds_dir();
    for (name, input) in seeds() {
        let path = dir.join(format!("seed-{name}"));
        if std::env::var_os("ZAO_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &input).unwrap();
        }
        let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(file, input, "{name}: ZAO_BLESS=1 re-creates it");
    }
}

#[test]
fn genuine_deltas_rebuild_every_snapshot() {
    // The seeds exercise what they claim: every snapshot completes and
    // equals the server's (checked inside `check`), a delta before its
    // baseline waits for nothing and is dropped.
    let rebuilt: std::collections::BTreeMap<&str, usize> = seeds()
        .iter()
        .map(|(name, input)| (*name, delta_check::check(input)))
        .collect();
    assert_eq!(rebuilt["receiver-keyframes"], SEQS as usize);
    assert_eq!(rebuilt["receiver-deltas-in-order"], SEQS as usize);
    // 1, then 3 against 2 (not held: dropped), then 2.
    assert_eq!(rebuilt["receiver-delta-before-its-baseline"], 2);
}

#[test]
fn the_corpus_replays_without_a_finding() {
    let mut n = 0;
    for entry in std::fs::read_dir(seeds_dir()).unwrap() {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        delta_check::check(&input);
        n += 1;
    }
    assert!(n >= 7, "only {n} inputs in fuzz/seeds/delta");
}
