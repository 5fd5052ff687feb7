//! Derive macros for [zao](https://docs.rs/zao): `Encode`, `Decode` and
//! `Message`. Use them through `zao`'s re-exports; the generated code names
//! only `::zao::...` paths.
//!
//! Attributes:
//! - `#[zao(blittable)]` on a `#[repr(C)]` struct that also derives zerocopy's
//!   `IntoBytes, FromBytes, Immutable, KnownLayout`: its wire form is its
//!   memory image, one copy each way. Padding is a compile error.
//! - `#[zao(tolerant)]` on a struct: the body is length-prefixed, so fields
//!   can be appended later; readers skip unknown trailing fields and default
//!   missing ones (every field must implement `Default`).
//! - `#[zao(tag = N)]` on an enum variant, or an integer discriminant `= N`:
//!   the variant's wire tag. Every variant needs one.
//! - `#[zao(id = N)]` with `#[derive(Message)]`: the stable message id.

#![forbid(unsafe_code)]

mod attr;
mod codegen;
mod model;

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

/// Derives `zao::Message` from `#[zao(id = N)]`.
#[proc_macro_derive(Message, attributes(zao))]
pub fn derive_message(input: TokenStream) -> TokenStream {
    expand(input, codegen::message)
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
