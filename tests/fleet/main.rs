//! A server's end and its life in a fleet (docs/FLEET.md), in one test
//! binary: the graceful drain on the simulated network (`drain`), the same
//! drain on SIGTERM for a standalone Bevy server (`sigterm`, which signals
//! this whole process: no other test here minds), and the deploy/
//! manifests (`deploy`). The Agones SDK's tests are tests/fleet_agones.rs
//! (`--features agones`).

// Test code: a panic is a failed test, so indexing and unwrap are fine here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod deploy;
mod drain;
mod sigterm;
