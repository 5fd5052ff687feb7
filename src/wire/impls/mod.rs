//! `Encode`/`Decode`/`Schema` for std, glam and bytes types.

mod bytes;
#[cfg(feature = "glam")]
mod glam;
mod map;
mod primitive;
mod seq;
mod text;

pub use text::utf8;
