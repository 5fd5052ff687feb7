//! A server's end and its life in a fleet (docs/FLEET.md), a module of
//! the Bevy tests' binary (each test binary links zao again: a fresh
//! `cargo test` is bounded at 6 minutes): the graceful drain on the
//! simulated network (`drain`), the same drain on SIGTERM for a standalone
//! Bevy server (`sigterm`, which signals this whole process: no other test
//! here runs a fleet, so none minds), and the deploy/ manifests
//! (`deploy`). The Agones SDK's tests are tests/fleet_agones.rs
//! (`--features agones`).

mod deploy;
mod drain;
mod sigterm;
