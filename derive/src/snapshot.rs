//! `#[derive(Snapshot)]` and `#[derive(SnapshotItem)]`: a snapshot's split
//! into parts and its delta form, written from the same fields as its
//! `Encode`, so the two cannot disagree.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, GenericArgument, Member, PathArguments, Result, Type};

/// A field and the `#[zao(...)]` markers on it.
struct MarkedField {
    member: Member,
    ty: Type,
    items: bool,
    tick: bool,
    key: bool,
}

fn fields(input: &DeriveInput, derive: &str) -> Result<Vec<MarkedField>> {
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            format!("#[derive({derive})] applies to structs"),
        ));
    };
    let fields = match &data.fields {
        Fields::Named(f) => f.named.iter().collect::<Vec<_>>(),
        Fields::Unnamed(f) => f.unnamed.iter().collect(),
        Fields::Unit => Vec::new(),
    };
    fields
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            let member = match &f.ident {
                Some(ident) => Member::Named(ident.clone()),
                None => Member::Unnamed(syn::Index {
                    index: i as u32,
                    span: Span::call_site(),
                }),
            };
            let mut out = MarkedField {
                member,
                ty: f.ty.clone(),
                items: false,
                tick: false,
                key: false,
            };
            for attr in f.attrs.iter().filter(|a| a.path().is_ident("zao")) {
                attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("items") {
                        out.items = true;
                    } else if meta.path.is_ident("tick") {
                        out.tick = true;
                    } else if meta.path.is_ident("key") {
                        out.key = true;
                    } else {
                        return Err(meta.error(
                            "unknown zao field attribute: expected `items`, `tick` or `key`",
                        ));
                    }
                    Ok(())
                })?;
            }
            Ok(out)
        })
        .collect()
}

/// `T` of a field typed `Vec<T>`.
fn vec_item(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Vec" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) if args.args.len() == 1 => Some(t),
        _ => None,
    }
}

/// `impl Snapshot` (parts: the header fields and a range of the items) and
/// `impl DeltaSnapshot` for a struct with one `#[zao(items)] Vec<T>` field.
pub(crate) fn snapshot(input: &DeriveInput) -> Result<TokenStream> {
    let ident = &input.ident;
    let fields = fields(input, "Snapshot")?;
    let mut items = fields.iter().filter(|f| f.items);
    let Some(items_field) = items.next() else {
        return Err(syn::Error::new_spanned(
            ident,
            "#[derive(Snapshot)] needs one `Vec` field marked #[zao(items)]: the items split between chunks",
        ));
    };
    if let Some(extra) = items.next() {
        return Err(syn::Error::new_spanned(
            &extra.ty,
            "only one field may be #[zao(items)]",
        ));
    }
    let Some(item_ty) = vec_item(&items_field.ty) else {
        return Err(syn::Error::new_spanned(
            &items_field.ty,
            "the #[zao(items)] field must be a `Vec<T>`",
        ));
    };
    let ticks: Vec<&MarkedField> = fields.iter().filter(|f| f.tick).collect();
    if ticks.len() > 1 {
        return Err(syn::Error::new_spanned(
            ident,
            "only one field may be #[zao(tick)]",
        ));
    }
    if let Some(f) = fields.iter().find(|f| f.key) {
        return Err(syn::Error::new_spanned(
            &f.ty,
            "#[zao(key)] belongs on a field of the item type (#[derive(SnapshotItem)])",
        ));
    }
    let items_member = &items_field.member;
    let (impl_g, ty_g, where_c) = input.generics.split_for_impl();
    let part = |f: &MarkedField| {
        let member = &f.member;
        if f.items {
            quote!(self.#member.get(__items.clone()).unwrap_or_default())
        } else {
            quote!(&self.#member)
        }
    };
    let lens = fields.iter().map(|f| {
        let access = part(f);
        quote!(::zao::Encode::encoded_len(#access))
    });
    let encodes = fields.iter().map(|f| {
        let access = part(f);
        quote!(::zao::Encode::encode_to(#access, __w);)
    });
    let tick = match ticks.first() {
        Some(f) => {
            let member = &f.member;
            quote! {
                fn tick(&self) -> ::core::option::Option<u64> {
                    ::core::option::Option::Some(<u64 as ::core::convert::From<_>>::from(self.#member))
                }
            }
        }
        None => quote!(),
    };
    Ok(quote! {
        /// A part is the header fields and a run of the items: each part
        /// decodes on its own as a whole message of the type.
        #[automatically_derived]
        impl #impl_g ::zao::proto::Snapshot for #ident #ty_g #where_c {
            fn items(&self) -> usize {
                self.#items_member.len()
            }

            fn part_len(&self, __items: ::core::ops::Range<usize>) -> usize {
                0usize #( + #lens )*
            }

            fn encode_part(&self, __items: ::core::ops::Range<usize>, __w: &mut ::zao::Writer<'_>) {
                #(#encodes)*
            }
        }

        #[automatically_derived]
        impl #impl_g ::zao::proto::DeltaSnapshot for #ident #ty_g #where_c {
            type Item = #item_ty;

            fn snapshot_items(&self) -> &[#item_ty] {
                &self.#items_member
            }

            fn snapshot_items_mut(&mut self) -> &mut ::std::vec::Vec<#item_ty> {
                &mut self.#items_member
            }

            #tick
        }
    })
}

/// `impl SnapshotItem`: the `#[zao(key)]` field is the key, every other
/// field's lanes follow one another in declaration order.
pub(crate) fn item(input: &DeriveInput) -> Result<TokenStream> {
    let ident = &input.ident;
    let fields = fields(input, "SnapshotItem")?;
    let keys: Vec<&MarkedField> = fields.iter().filter(|f| f.key).collect();
    let [key] = keys.as_slice() else {
        return Err(syn::Error::new_spanned(
            ident,
            "#[derive(SnapshotItem)] needs exactly one field marked #[zao(key)]: the entity it describes",
        ));
    };
    if let Some(f) = fields.iter().find(|f| f.items || f.tick) {
        return Err(syn::Error::new_spanned(
            &f.ty,
            "#[zao(items)] and #[zao(tick)] belong on the snapshot (#[derive(Snapshot)])",
        ));
    }
    let key_ty = &key.ty;
    let key_member = &key.member;
    let lanes: Vec<&MarkedField> = fields.iter().filter(|f| !f.key).collect();
    let counts: Vec<TokenStream> = lanes
        .iter()
        .map(|f| {
            let ty = &f.ty;
            quote!(<#ty as ::zao::wire::Lanes>::LANES)
        })
        .collect();
    let lane_steps = lanes.iter().zip(&counts).map(|(f, n)| {
        let ty = &f.ty;
        quote! {
            if __i < #n {
                return <#ty as ::zao::wire::Lanes>::lane(__i);
            }
            let __i = __i - #n;
        }
    });
    let writes = lanes.iter().zip(&counts).map(|(f, n)| {
        let member = &f.member;
        quote! {
            ::zao::wire::Lanes::write_lanes(
                &self.#member,
                __out.get_mut(__at..__at + #n).unwrap_or_default(),
            );
            let __at = __at + #n;
        }
    });
    let bindings: Vec<_> = (0..lanes.len())
        .map(|i| format_ident!("__zao_{}", i))
        .collect();
    let reads = lanes.iter().zip(&counts).zip(&bindings).map(|((f, n), b)| {
        let ty = &f.ty;
        quote! {
            let #b = <#ty as ::zao::wire::Lanes>::read_lanes(
                __lanes.get(__at..__at + #n).unwrap_or_default(),
            )?;
            let __at = __at + #n;
        }
    });
    let mut next = bindings.iter();
    let values: Vec<TokenStream> = fields
        .iter()
        .map(|f| {
            let member = &f.member;
            if f.key {
                quote!(#member: __key)
            } else {
                let b = next.next();
                quote!(#member: #b)
            }
        })
        .collect();
    let (impl_g, ty_g, where_c) = input.generics.split_for_impl();
    Ok(quote! {
        #[automatically_derived]
        impl #impl_g ::zao::proto::SnapshotItem for #ident #ty_g #where_c {
            type Key = #key_ty;
            const LANES: usize = 0usize #( + #counts )*;

            fn key(&self) -> #key_ty {
                self.#key_member
            }

            #[allow(unused_variables)]
            fn lane(__index: usize) -> ::zao::wire::Lane {
                let __i = __index;
                #(#lane_steps)*
                ::zao::wire::Lane::upto(0)
            }

            #[allow(unused_variables)]
            fn write_lanes(&self, __out: &mut [u32]) {
                let __at = 0usize;
                #(#writes)*
            }

            #[allow(unused_variables)]
            fn from_lanes(
                __key: #key_ty,
                __lanes: &[u32],
            ) -> ::core::result::Result<Self, ::zao::DecodeError> {
                let __at = 0usize;
                #(#reads)*
                ::core::result::Result::Ok(Self { #(#values),* })
            }
        }
    })
}
