//! One connection's whole state machine, sans I/O (see [`Session`]).

mod recv;
mod send;
mod state;

pub use state::{
    OutStream, Session, SessionConfig, SessionEvent, StreamId, StreamWrite, Tap, Transmit,
    UnorderedWrite,
};
