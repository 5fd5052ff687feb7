//! Inputs found by the fuzz targets in `fuzz/`, kept as tests with the
//! behaviour they must have.

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bytes::Bytes;
use zao::proto::{ParsedDatagram, SnapshotReceiver, SnapshotVerdict, split_datagram};

/// Parses a snapshot datagram and sequences it, as the transport does.
fn receive(rx: &mut SnapshotReceiver, datagram: &[u8]) -> SnapshotVerdict {
    match split_datagram(&Bytes::copy_from_slice(datagram)).unwrap() {
        ParsedDatagram::Snapshot(header, message) => {
            let (id, _) = zao::split_message(&message).unwrap();
            rx.handle_chunk(id, header)
        }
        _ => panic!("not a snapshot datagram"),
    }
}

/// fuzz target `snapshot_chunks`. A snapshot's chunk count changes (2 chunks
/// at seq 10, 3 at seq 11); a late chunk of an older snapshot (seq 5) with
/// the new count lands at an index where seq 10 was already delivered. The
/// receiver used to clear its per-index history at the count change and
/// deliver seq 5, an older snapshot after a newer one; it now keeps the
/// newest seq at the change as a floor.
#[test]
fn older_snapshot_after_a_chunk_count_change_is_stale() {
    let mut rx = SnapshotReceiver::new();
    // kind 02, seq, chunk, chunks, then WorldSnapshot (id 04) with tick = seq and no players.
    let seq10_chunk1_of2 = [0x02, 0x0a, 0x01, 0x02, 0x04, 0x0a, 0x00, 0x00, 0x00, 0x00];
    let seq11_chunk0_of3 = [0x02, 0x0b, 0x00, 0x03, 0x04, 0x0b, 0x00, 0x00, 0x00, 0x00];
    let seq05_chunk1_of3 = [0x02, 0x05, 0x01, 0x03, 0x04, 0x05, 0x00, 0x00, 0x00, 0x00];
    assert_eq!(
        receive(&mut rx, &seq10_chunk1_of2),
        SnapshotVerdict::Deliver
    );
    assert_eq!(
        receive(&mut rx, &seq11_chunk0_of3),
        SnapshotVerdict::Deliver
    );
    assert_eq!(receive(&mut rx, &seq05_chunk1_of3), SnapshotVerdict::Stale);
}

/// fuzz target `snapshot_chunks` (crash-a081f595…, reduced): the same
/// (seq 1, chunk 1) is delivered twice, once under each chunk count, because
/// the count changed in between (to 2320 at seq 23296).
#[test]
fn same_seq_and_chunk_is_not_delivered_twice_across_a_chunk_count_change() {
    let mut rx = SnapshotReceiver::new();
    // seq 1, chunk 1 of 64.
    let first = [0x02, 0x01, 0x01, 0x40, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00];
    // seq 23296 (80 b6 01), chunk 8 of 2320 (90 12).
    let newer = [
        0x02, 0x80, 0xb6, 0x01, 0x08, 0x90, 0x12, 0x04, 0x00, 0x5b, 0x00, 0x00, 0x00,
    ];
    // seq 1, chunk 1 of 2320 (90 12).
    let again = [
        0x02, 0x01, 0x01, 0x90, 0x12, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00,
    ];
    assert_eq!(receive(&mut rx, &first), SnapshotVerdict::Deliver);
    assert_eq!(receive(&mut rx, &newer), SnapshotVerdict::Deliver);
    assert_ne!(receive(&mut rx, &again), SnapshotVerdict::Deliver);
}
