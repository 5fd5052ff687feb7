//! Derive macros for [zao](https://docs.rs/zao): `Encode`, `Decode` and
//! `NetMessage`. Use them through `zao`'s re-exports; the generated code names
//! only `::zao::...` paths.
//!
//! Attributes:
//! - `#[zao(blittable)]` on a `#[repr(C)]` struct that also derives zerocopy's
//!   `IntoBytes, FromBytes, Immutable, KnownLayout`: its wire form is its
//!   memory image, one copy each way. Padding is a compile error. A `Vec`
//!   or slice of the type carries a 4-byte count (docs/WIRE.md §5), and its
//!   fingerprint says so (`seq32`).
//! - `#[zao(tolerant)]` on a struct: the body is length-prefixed, so fields
//!   can be appended later; readers skip unknown trailing fields and default
//!   missing ones (every field must implement `Default`).
//! - `#[zao(tag = N)]` on an enum variant, or an integer discriminant `= N`:
//!   the variant's wire tag. Every variant needs one.
//! - `#[zao(id = N)]` with `#[derive(NetMessage)]`: the stable message id.
//!
//! `#[derive(Snapshot)]` on a message with one `#[zao(items)] Vec<T>` field
//! (and optionally a `#[zao(tick)]` field) splits it into independently
//! decodable parts and makes it a delta snapshot; `#[derive(SnapshotItem)]`
//! on `T` with one `#[zao(key)]` field gives its items' keys and lanes.

#![forbid(unsafe_code)]

mod attr;
mod codegen;
mod model;
mod snapshot;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `zao::Encode` and `zao::Schema`. See the crate docs for attributes.
#[proc_macro_derive(Encode, attributes(zao))]
pub fn derive_encode(input: TokenStream) -> TokenStream {
    expand(input, codegen::encode)
}

/// Derives `zao::Decode`. See the crate docs for attributes.
#[proc_macro_derive(Decode, attributes(zao))]
pub fn derive_decode(input: TokenStream) -> TokenStream {
    expand(input, codegen::decode)
}

/// Derives `zao::NetMessage` from `#[zao(id = N)]`.
#[proc_macro_derive(NetMessage, attributes(zao))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    expand(input, codegen::message)
}

/// Derives `zao::proto::Snapshot` and `zao::proto::DeltaSnapshot` for a
/// struct with one `#[zao(items)] Vec<T>` field whose `T` derives
/// `SnapshotItem`; `#[zao(tick)]` on a header field gives the tick.
#[proc_macro_derive(Snapshot, attributes(zao))]
pub fn derive_snapshot(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    snapshot::snapshot(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Derives `zao::proto::SnapshotItem`: `#[zao(key)]` on the field that
/// names the entity; every other field implements `zao::wire::Lanes`.
#[proc_macro_derive(SnapshotItem, attributes(zao))]
pub fn derive_snapshot_item(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    snapshot::item(&input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

fn expand(
    input: TokenStream,
    generate: fn(&model::Input) -> syn::Result<proc_macro2::TokenStream>,
) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    model::Input::parse(&input)
        .and_then(|model| generate(&model))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
