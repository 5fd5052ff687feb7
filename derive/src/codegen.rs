//! Code generation for the three derives.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{GenericParam, Generics, Lifetime, LifetimeParam, parse_quote};

use crate::model::{Field, FieldSet, Input, Shape};

/// Adds `bound` to every type parameter.
fn bounded(generics: &Generics, bound: TokenStream) -> Generics {
    let mut generics = generics.clone();
    for param in &mut generics.params {
        if let GenericParam::Type(ty) = param {
            ty.bounds.push(parse_quote!(#bound));
        }
    }
    generics
}

fn sum_const(fields: &[Field], konst: TokenStream) -> TokenStream {
    let sizes = fields.iter().map(|f| {
        let ty = &f.ty;
        if f.recursive {
            // A type that contains itself has no fixed or bounded size.
            quote!(::core::option::Option::None)
        } else {
            quote!(<#ty as ::zao::Encode>::#konst)
        }
    });
    quote! {{
        let __total = ::core::option::Option::Some(0usize);
        #(let __total = ::zao::__private::size::add(__total, #sizes);)*
        __total
    }}
}

fn fields_len(fields: &[Field], access: impl Fn(&Field) -> TokenStream) -> TokenStream {
    let access = fields.iter().map(access);
    quote!(0usize #( + ::zao::Encode::encoded_len(#access) )*)
}

/// A field's `FIXED_SIZE`, or `None` for a field whose type names the type
/// being derived (its constants would refer to themselves).
fn fixed_size(f: &Field) -> TokenStream {
    let ty = &f.ty;
    if f.recursive {
        quote!(::core::option::Option::<usize>::None)
    } else {
        quote!(<#ty as ::zao::Encode>::FIXED_SIZE)
    }
}

/// `Encode::LEN_WALKS` of a set of fields: whether any field's size is a
/// walk over values of varying size. A field whose type names the type being
/// derived is (the type nests in itself), and its constant would refer to
/// itself.
fn len_walks<'a>(fields: impl IntoIterator<Item = &'a Field>) -> TokenStream {
    let walks = fields.into_iter().map(|f| {
        let ty = &f.ty;
        if f.recursive {
            quote!(true)
        } else {
            quote!(<#ty as ::zao::Encode>::LEN_WALKS)
        }
    });
    quote!(false #( || #walks )*)
}

/// Writes the fields in order. Each run of consecutive fixed-size fields
/// goes through one [`window`] of the run's constant size, taken with one
/// bounds check; inside it the compiler drops the per-field checks
/// (a `Transform` of seven floats: one check instead of seven). Which fields
/// form a run depends on their types' constants, so every field that could
/// start a run gets a window holding the fields that could follow it, each
/// guarded by a constant: all but the straight-line writes folds away.
///
/// [`window`]: ../zao/trait.Sink.html#tymethod.window
fn fields_encode(fields: &[Field], access: impl Fn(&Field) -> TokenStream) -> TokenStream {
    if fields.len() < 2 {
        let access = fields.iter().map(access);
        return quote!(#( ::zao::Encode::encode_to(#access, __w); )*);
    }
    let sizes: Vec<TokenStream> = fields.iter().map(fixed_size).collect();
    let stmts = fields.iter().zip(&sizes).enumerate().map(|(i, (f, size))| {
        let field = access(f);
        let starts = match i.checked_sub(1).and_then(|p| sizes.get(p)) {
            Some(prev) => quote!(#prev.is_none()),
            None => quote!(true),
        };
        let run = sizes.get(i..).unwrap_or_default();
        let members = fields
            .get(i..)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let field = access(f);
                quote! {
                    if #k < __count {
                        ::zao::Encode::encode_to(#field, &mut __win);
                    }
                }
            });
        quote! {
            if const { #size.is_some() } {
                if const { #starts } {
                    let __count = const { ::zao::__private::size::leading_count(&[#(#run),*]) };
                    // A window, not a closure: closures are not always
                    // inlined, and a call would pin the writer to memory.
                    let __filled = {
                        let mut __win = ::zao::Sink::window(
                            __w,
                            const { ::zao::__private::size::leading(&[#(#run),*]) },
                        );
                        #(#members)*
                        ::zao::Sink::is_filled(&__win)
                    };
                    ::zao::Sink::close_window(__w, __filled);
                    // A refused window refuses every write after it: leave
                    // now, so the refusal is a jump rather than a flag
                    // carried to the end of the encode.
                    if !__filled {
                        return;
                    }
                }
            } else {
                ::zao::Encode::encode_to(#field, __w);
            }
        }
    });
    quote!(#(#stmts)*)
}

/// A variant's one-byte tag as a field bound to `__tag` (a `&u8`).
fn tag_field() -> Field {
    Field {
        member: syn::Member::Named(quote::format_ident!("__tag")),
        name: String::new(),
        ty: syn::parse_quote!(u8),
        binding: quote::format_ident!("__tag"),
        recursive: false,
        self_free: None,
    }
}

fn self_access(f: &Field) -> TokenStream {
    let member = &f.member;
    quote!(&self.#member)
}

fn binding_access(f: &Field) -> TokenStream {
    let binding = &f.binding;
    quote!(#binding)
}

pub(crate) fn encode(input: &Input) -> syn::Result<TokenStream> {
    let ident = &input.ident;
    let generics = bounded(&input.generics, quote!(::zao::Encode));
    let (impl_g, ty_g, where_c) = generics.split_for_impl();
    let body = match &input.shape {
        Shape::Struct(set) => encode_struct(input, set),
        Shape::Enum(variants) => {
            // Fixed only when every variant has the same fixed size.
            let mut sizes = variants
                .iter()
                .map(|v| variant_size(v.tag, &v.fields.fields, quote!(FIXED_SIZE)));
            let fixed = match sizes.next() {
                Some(first) => quote! {{
                    let __size = #first;
                    #(let __size = ::zao::__private::size::same(__size, #sizes);)*
                    __size
                }},
                None => quote!(::core::option::Option::None),
            };
            let max = variants
                .iter()
                .map(|v| variant_size(v.tag, &v.fields.fields, quote!(MAX_SIZE)));
            let walks = len_walks(variants.iter().flat_map(|v| &v.fields.fields));
            let len_arms = variants.iter().map(|v| {
                let vident = &v.ident;
                let pattern = v.fields.pattern();
                let tag = v.tag;
                let len = fields_len(&v.fields.fields, binding_access);
                quote!(Self::#vident #pattern => ::zao::varint_len(#tag as u64) + #len,)
            });
            let encode_arms: Vec<TokenStream> =
                if variants.iter().all(|v| v.fields.fields.is_empty()) {
                    // Variants without fields: the tag is a value of the
                    // match and one write follows it, so the compiler makes
                    // the match a lookup or arithmetic, not a jump to a write
                    // per variant (a jump table's target is mispredicted
                    // whenever the variants mix).
                    let tags = variants.iter().map(|v| {
                        let vident = &v.ident;
                        let pattern = v.fields.pattern();
                        let tag = v.tag;
                        quote!(Self::#vident #pattern => #tag,)
                    });
                    let put = if variants.iter().all(|v| v.tag < 0x80) {
                        quote!(__w.put_u8(__tag as u8))
                    } else {
                        quote!(__w.put_varint(__tag as u64))
                    };
                    vec![quote!(__value => { let __tag: u32 = match __value { #(#tags)* }; #put; })]
                } else {
                    variants
                    .iter()
                    .map(|v| {
                        let vident = &v.ident;
                        let pattern = v.fields.pattern();
                        let tag = v.tag;
                        if tag < 0x80 {
                            // A one-byte varint is the byte itself,
                            // written as a leading `u8` field: it joins
                            // the window of the fixed-size fields after
                            // it, one check for the tag and those fields.
                            let mut fields = vec![tag_field()];
                            fields.extend(v.fields.fields.iter().cloned());
                            let enc = fields_encode(&fields, binding_access);
                            let byte = tag as u8;
                            quote!(Self::#vident #pattern => { let __tag: &u8 = &#byte; #enc })
                        } else {
                            let enc = fields_encode(&v.fields.fields, binding_access);
                            quote!(Self::#vident #pattern => { __w.put_varint(#tag as u64); #enc })
                        }
                    })
                    .collect()
                };
            quote! {
                const FIXED_SIZE: ::core::option::Option<usize> = #fixed;
                const MAX_SIZE: ::core::option::Option<usize> = {
                    let __size = ::core::option::Option::Some(0usize);
                    #(let __size = ::zao::__private::size::max(__size, #max);)*
                    __size
                };
                const LEN_WALKS: bool = #walks;

                #[inline]
                fn encoded_len(&self) -> usize {
                    #[allow(unused_variables)]
                    match self { #(#len_arms)* }
                }

                // Always inlined, so the writer stays in registers.
                #[inline(always)]
                fn encode_to<__W: ::zao::Sink>(&self, __w: &mut __W) {
                    #[allow(unused_variables)]
                    match self { #(#encode_arms)* }
                }
            }
        }
    };
    let schema = schema(input);
    Ok(quote! {
        #[automatically_derived]
        impl #impl_g ::zao::Encode for #ident #ty_g #where_c {
            #body
        }
        #schema
    })
}

fn variant_size(tag: u32, fields: &[Field], konst: TokenStream) -> TokenStream {
    let sum = sum_const(fields, konst);
    quote!(::zao::__private::size::add(::core::option::Option::Some(::zao::varint_len(#tag as u64)), #sum))
}

fn encode_struct(input: &Input, set: &FieldSet) -> TokenStream {
    let fields = &set.fields;
    let fixed = sum_const(fields, quote!(FIXED_SIZE));
    let max = sum_const(fields, quote!(MAX_SIZE));
    let walks = len_walks(fields);
    let len = fields_len(fields, self_access);
    let enc = fields_encode(fields, self_access);
    if input.attrs.tolerant {
        return quote! {
            const FIXED_SIZE: ::core::option::Option<usize> = match #fixed {
                ::core::option::Option::Some(__body) => ::core::option::Option::Some(::zao::varint_len(__body as u64) + __body),
                ::core::option::Option::None => ::core::option::Option::None,
            };
            const MAX_SIZE: ::core::option::Option<usize> = match #max {
                ::core::option::Option::Some(__body) => ::core::option::Option::Some(::zao::varint_len(__body as u64) + __body),
                ::core::option::Option::None => ::core::option::Option::None,
            };
            const LEN_WALKS: bool = #walks;

            #[inline]
            fn encoded_len(&self) -> usize {
                let __body = #len;
                ::zao::varint_len(__body as u64) + __body
            }

            #[inline]
            fn encode_to<__W: ::zao::Sink>(&self, __w: &mut __W) {
                __w.put_len(#len);
                #enc
            }
        };
    }
    if input.attrs.blittable {
        let ident = &input.ident;
        let tys = fields.iter().map(|f| &f.ty);
        let msg = format!(
            "`{ident}` is `#[zao(blittable)]` but has padding: its size is not the sum of its fields"
        );
        return quote! {
            const FIXED_SIZE: ::core::option::Option<usize> = ::core::option::Option::Some(::core::mem::size_of::<Self>());
            const WIDE_COUNT: bool = true;

            #[inline]
            fn encoded_len(&self) -> usize {
                ::core::mem::size_of::<Self>()
            }

            #[inline(always)]
            fn encode_to<__W: ::zao::Sink>(&self, __w: &mut __W) {
                const _: () = ::core::assert!(
                    ::core::mem::size_of::<#ident>() == 0usize #( + ::core::mem::size_of::<#tys>() )*,
                    #msg
                );
                if ::core::cfg!(target_endian = "little") {
                    ::zao::__private::blit::encode_blit(self, __w);
                } else {
                    #enc
                }
            }

            /// One check and one copy: the memory image straight into `buf`,
            /// in 8-byte words for a small value (`blit::copy_image`).
            #[inline(always)]
            fn encode(&self, __buf: &mut [u8]) -> ::core::result::Result<usize, ::zao::EncodeError> {
                const __N: usize = ::core::mem::size_of::<#ident>();
                if ::core::cfg!(target_endian = "little") {
                    return match __buf.first_chunk_mut::<__N>() {
                        ::core::option::Option::Some(__dst) => {
                            ::zao::__private::blit::copy_image::<__N>(__dst, ::zao::__private::zerocopy::IntoBytes::as_bytes(self));
                            ::core::result::Result::Ok(__N)
                        }
                        ::core::option::Option::None => ::core::result::Result::Err(::zao::EncodeError {
                            needed: __N,
                            available: __buf.len(),
                        }),
                    };
                }
                ::zao::Writer::new(__buf).encode(self)
            }

            #[inline]
            fn encode_slice<__W: ::zao::Sink>(__items: &[Self], __w: &mut __W) {
                if ::core::cfg!(target_endian = "little") {
                    ::zao::__private::blit::encode_blit_slice(__items, __w);
                } else {
                    for __item in __items {
                        ::zao::Encode::encode_to(__item, __w);
                    }
                }
            }

            #[inline]
            fn encode_run<__W: ::zao::Sink>(__items: &[Self], __w: &mut __W) {
                ::zao::__private::blit::encode_blit_run(__items, __w);
            }
        };
    }
    quote! {
        const FIXED_SIZE: ::core::option::Option<usize> = #fixed;
        const MAX_SIZE: ::core::option::Option<usize> = #max;
        const LEN_WALKS: bool = #walks;

        #[inline]
        fn encoded_len(&self) -> usize {
            if let ::core::option::Option::Some(__size) = <Self as ::zao::Encode>::FIXED_SIZE {
                return __size;
            }
            #len
        }

        // Always inlined, so the writer stays in registers (a call passes
        // it through memory and re-stores it at every write).
        #[inline(always)]
        fn encode_to<__W: ::zao::Sink>(&self, __w: &mut __W) {
            #enc
        }
    }
}

fn schema(input: &Input) -> TokenStream {
    let ident = &input.ident;
    let generics = bounded(&input.generics, quote!(::zao::Schema));
    let (impl_g, ty_g, where_c) = generics.split_for_impl();
    let s = quote!(::zao::__private::schema);
    let name = ident.to_string();
    let fields = |set: &FieldSet| {
        let fields = set.fields.iter().map(|f| {
            let field = &f.name;
            let ty = &f.ty;
            let shape = if f.recursive {
                // Its own fingerprint would be a cycle: a self-reference
                // counts by its spelling; the shape names it `SelfRef`.
                let spelled = quote!(#ty).to_string();
                let inner = match &f.self_free {
                    Some(free) => {
                        quote!(::core::option::Option::Some(&<#free as ::zao::Schema>::SHAPE))
                    }
                    None => quote!(::core::option::Option::None),
                };
                quote!(#s::Shape::Recursive { spelled: #spelled, shape: #inner })
            } else {
                quote!(<#ty as ::zao::Schema>::SHAPE)
            };
            quote!(#s::FieldShape { name: #field, shape: #shape })
        });
        let style = format_ident!("{}", set.style_name());
        (quote!(#s::FieldStyle::#style), quote!(&[#(#fields),*]))
    };
    let shape = match &input.shape {
        Shape::Struct(set) => {
            let (style, fields) = fields(set);
            let tolerant = input.attrs.tolerant;
            let blittable = input.attrs.blittable;
            quote! {
                #s::Shape::Struct(&#s::StructShape {
                    name: #name,
                    style: #style,
                    fields: #fields,
                    tolerant: #tolerant,
                    blittable: #blittable,
                })
            }
        }
        Shape::Enum(variants) => {
            // In tag order: reordering variants in the source keeps the
            // fingerprint.
            let mut sorted: Vec<_> = variants.iter().collect();
            sorted.sort_by_key(|v| v.tag);
            let variants = sorted.into_iter().map(|v| {
                let vname = v.ident.to_string();
                let tag = v.tag;
                let (style, fields) = fields(&v.fields);
                quote! {
                    #s::VariantShape { name: #vname, tag: #tag, style: #style, fields: #fields }
                }
            });
            quote! {
                #s::Shape::Enum(&#s::EnumShape {
                    name: #name,
                    variants: &[#(#variants),*],
                })
            }
        }
    };
    quote! {
        #[automatically_derived]
        impl #impl_g ::zao::Schema for #ident #ty_g #where_c {
            const SHAPE: #s::Shape = #shape;
        }
    }
}

pub(crate) fn decode(input: &Input) -> syn::Result<TokenStream> {
    let ident = &input.ident;
    let (_, ty_g, _) = input.generics.split_for_impl();
    // A fresh input lifetime that outlives every lifetime of the type, so
    // borrowed fields (`&'a str`) decode straight from the input.
    let de = Lifetime::new("'__de", proc_macro2::Span::call_site());
    let mut generics = bounded(&input.generics, quote!(::zao::Decode<'__de>));
    let mut de_param = LifetimeParam::new(de.clone());
    de_param
        .bounds
        .extend(input.generics.lifetimes().map(|l| l.lifetime.clone()));
    generics.params.insert(0, GenericParam::Lifetime(de_param));
    let (impl_g, _, where_c) = generics.split_for_impl();

    let body = match &input.shape {
        Shape::Struct(set) => decode_struct(input, set),
        Shape::Enum(variants) => {
            let small_tags = variants.iter().all(|v| v.tag < 0x80);
            let plain_arms: Vec<_> = variants
                .iter()
                .map(|v| {
                    let vident = &v.ident;
                    let exprs: Vec<_> = v
                        .fields
                        .fields
                        .iter()
                        .map(|_| quote!(::zao::Decode::decode_from(__r)?))
                        .collect();
                    let built = v.fields.construct(&exprs);
                    let tag = v.tag;
                    if small_tags {
                        let byte = tag as u8;
                        quote!(#byte => ::core::result::Result::Ok(Self::#vident #built),)
                    } else {
                        quote!(#tag => ::core::result::Result::Ok(Self::#vident #built),)
                    }
                })
                .collect();
            let arms = variants.iter().map(|v| {
                let vident = &v.ident;
                let tag = v.tag;
                let exprs: Vec<_> = v
                    .fields
                    .fields
                    .iter()
                    .map(|_| quote!(::zao::Decode::decode_from(__r)?))
                    .collect();
                let built = v.fields.construct(&exprs);
                if small_tags {
                    let byte = tag as u8;
                    quote!(#byte => ::core::result::Result::Ok(::zao::__private::Then::then(__then, Self::#vident #built)),)
                } else {
                    quote!(#tag => ::core::result::Result::Ok(::zao::__private::Then::then(__then, Self::#vident #built)),)
                }
            });
            // Each variant's size on the wire: its tag, then its fields.
            let sizes: Vec<_> = variants
                .iter()
                .map(|v| {
                    let tag_len = if v.tag < 0x80 {
                        1usize
                    } else if v.tag < 0x4000 {
                        2
                    } else if v.tag < 0x20_0000 {
                        3
                    } else if v.tag < 0x1000_0000 {
                        4
                    } else {
                        5
                    };
                    let mins = v.fields.fields.iter().map(|f| {
                        let ty = &f.ty;
                        if f.recursive {
                            quote!(0usize)
                        } else {
                            quote!(<#ty as ::zao::Decode<'__de>>::MIN_SIZE)
                        }
                    });
                    let exacts = v.fields.fields.iter().map(|f| {
                        let ty = &f.ty;
                        if f.recursive {
                            quote!(false)
                        } else {
                            quote!(<#ty as ::zao::Decode<'__de>>::EXACT_SIZE)
                        }
                    });
                    (
                        quote!(#tag_len #( .saturating_add(#mins) )*),
                        quote!(true #( && #exacts )*),
                    )
                })
                .collect();
            let min = sizes.iter().fold(quote!(usize::MAX), |acc, (size, _)| {
                quote!({ let __a = #acc; let __b = #size; if __a < __b { __a } else { __b } })
            });
            let first = sizes
                .first()
                .map_or(quote!(0usize), |(size, _)| size.clone());
            let exact = sizes.iter().fold(
                quote!(true),
                |acc, (size, exact)| quote!(#acc && #exact && #size == #first),
            );
            let read_tag = if small_tags {
                // Every tag is one byte: a byte of 0x80 or more starts a
                // longer varint, which names no variant either way.
                quote!(__r.get_u8()?)
            } else {
                quote!(__r.get_varint_u32()?)
            };
            let empty = variants.is_empty();
            let with_data = variants.iter().any(|v| !v.fields.fields.is_empty());
            // In place: a variant with data whose tag matches the value's
            // own variant decodes into its fields (a `String` keeps its
            // buffer); any other tag builds the new variant.
            let reuse_arms = variants
                .iter()
                .filter(|v| !v.fields.fields.is_empty())
                .map(|v| {
                    let vident = &v.ident;
                    let pattern = v.fields.pattern();
                    let bindings = v.fields.fields.iter().map(|f| &f.binding);
                    let tag = if small_tags {
                        let byte = v.tag as u8;
                        quote!(#byte)
                    } else {
                        let tag = v.tag;
                        quote!(#tag)
                    };
                    quote! {
                        (#tag, Self::#vident #pattern) => {
                            #( ::zao::Decode::decode_in_place_from(#bindings, __r)?; )*
                            ::core::result::Result::Ok(())
                        }
                    }
                });
            let in_place = if with_data {
                quote! {
                    #[inline(always)]
                    fn decode_in_place_from(&mut self, __r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<(), ::zao::DecodeError> {
                        match (#read_tag, self) {
                            #(#reuse_arms)*
                            (__tag, __this) => {
                                *__this = match __tag {
                                    #(#plain_arms)*
                                    _ => ::core::result::Result::Err(::zao::DecodeError::InvalidTag),
                                }?;
                                ::core::result::Result::Ok(())
                            }
                        }
                    }
                }
            } else {
                quote!()
            };
            let min = if empty { quote!(0usize) } else { min };
            let exact = if empty { quote!(false) } else { exact };
            quote! {
                const MIN_SIZE: usize = #min;
                const EXACT_SIZE: bool = #exact;
                const BUILT_IN_ARMS: bool = #with_data;

                #in_place

                // Always inlined, as encode is: a decode that stays a call
                // passes its result through memory.
                #[inline(always)]
                fn decode_from(__r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<Self, ::zao::DecodeError> {
                    match #read_tag {
                        #(#plain_arms)*
                        _ => ::core::result::Result::Err(::zao::DecodeError::InvalidTag),
                    }
                }

                // Each arm hands its value on where it is built (see
                // `Decode::decode_then`).
                #[inline(always)]
                fn decode_then<__F: ::zao::__private::Then<Self>>(
                    __r: &mut ::zao::Reader<'__de>,
                    __then: __F,
                ) -> ::core::result::Result<__F::Output, ::zao::DecodeError> {
                    match #read_tag {
                        #(#arms)*
                        _ => ::core::result::Result::Err(::zao::DecodeError::InvalidTag),
                    }
                }
            }
        }
    };
    // A blittable struct's image becomes the value in a method of its own,
    // outside the trait impl: zerocopy's `transmute!` needs the concrete
    // type, and a type without `FromBytes` then gets an error that names
    // this method, the same in every build (inside the impl, the trait's
    // path in the message depended on which crates were loaded).
    let from_words = match &input.shape {
        Shape::Struct(_) if input.attrs.blittable => quote! {
            #[automatically_derived]
            impl #ident {
                /// The value from its memory image, through words
                /// (`image_words`): `[u64; __K]` is never smaller than the
                /// value, so the transmute only drops the zero tail.
                #[inline(always)]
                fn __zao_from_image(
                    __image: &[u8; ::core::mem::size_of::<#ident>()],
                ) -> Self {
                    const __N: usize = ::core::mem::size_of::<#ident>();
                    const __K: usize = __N.div_ceil(8);
                    ::zao::__private::zerocopy::transmute!(#![allow(shrink)]
                        ::zao::__private::blit::image_words::<__N, __K>(__image))
                }
            }
        },
        _ => quote!(),
    };
    Ok(quote! {
        #[automatically_derived]
        impl #impl_g ::zao::Decode<'__de> for #ident #ty_g #where_c {
            #body
        }
        #from_words
    })
}

fn decode_struct(input: &Input, set: &FieldSet) -> TokenStream {
    let fields = &set.fields;
    let members: Vec<_> = fields.iter().map(|f| &f.member).collect();
    let mins = fields.iter().map(|f| {
        let ty = &f.ty;
        if f.recursive {
            quote!(0usize)
        } else {
            quote!(<#ty as ::zao::Decode<'__de>>::MIN_SIZE)
        }
    });
    let min = quote!(0usize #( .saturating_add(#mins) )*);
    if input.attrs.tolerant {
        let exprs: Vec<_> = fields
            .iter()
            .map(|_| {
                quote! {
                    if __body.is_empty() {
                        ::core::default::Default::default()
                    } else {
                        ::zao::Decode::decode_from(&mut __body)?
                    }
                }
            })
            .collect();
        let built = set.construct(&exprs);
        return quote! {
            const MIN_SIZE: usize = 1;

            #[inline]
            fn decode_from(__r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<Self, ::zao::DecodeError> {
                let mut __body = __r.split_body()?;
                let __value = Self #built;
                __r.join(__body);
                ::core::result::Result::Ok(__value)
            }

            #[inline]
            fn decode_in_place_from(&mut self, __r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<(), ::zao::DecodeError> {
                let mut __body = __r.split_body()?;
                #(
                    if __body.is_empty() {
                        self.#members = ::core::default::Default::default();
                    } else {
                        ::zao::Decode::decode_in_place_from(&mut self.#members, &mut __body)?;
                    }
                )*
                __r.join(__body);
                ::core::result::Result::Ok(())
            }
        };
    }
    let exprs: Vec<_> = fields
        .iter()
        .map(|_| quote!(::zao::Decode::decode_from(__r)?))
        .collect();
    let built = set.construct(&exprs);
    // A field of an infallible type (numbers, and tuples and structs of
    // them) whose bytes are known to be there is read bare, not out of a
    // `Result` (see `Decode::decode_plain`): `in_window` is a constant
    // that says its bytes are checked already.
    let field_expr = |f: &crate::model::Field, in_window: TokenStream| {
        let ty = &f.ty;
        if f.recursive {
            quote!(::zao::Decode::decode_from(__r)?)
        } else {
            quote! {
                if <#ty as ::zao::Decode<'__de>>::INFALLIBLE && #in_window {
                    <#ty as ::zao::Decode<'__de>>::decode_plain(__r)
                } else {
                    <#ty as ::zao::Decode<'__de>>::decode_from(__r)?
                }
            }
        }
    };
    if input.attrs.blittable {
        let ident = &input.ident;
        return quote! {
            const MIN_SIZE: usize = ::core::mem::size_of::<Self>();
            const EXACT_SIZE: bool = true;
            const WIDE_COUNT: bool = true;

            /// The whole input must be the memory image: one length check,
            /// one copy. Every decode entry point comes here.
            #[inline(always)]
            fn decode_whole(__bytes: &'__de [u8], __max_message: usize) -> ::core::result::Result<Self, ::zao::DecodeError> {
                const __N: usize = ::core::mem::size_of::<#ident>();
                // A small value goes through words, which keeps it in
                // registers (`__zao_from_image`).
                if ::core::cfg!(target_endian = "little") && __N <= ::zao::__private::blit::WORD_IMAGE_MAX {
                    // The error is made here, not passed through a
                    // `Result` of the image: that one kept the value in a
                    // stack slot again.
                    return match <&[u8; __N]>::try_from(__bytes) {
                        ::core::result::Result::Ok(__image) if __N <= __max_message => {
                            ::core::result::Result::Ok(Self::__zao_from_image(__image))
                        }
                        _ => ::core::result::Result::Err(
                            ::zao::__private::blit::blit_len_error(__bytes.len(), __N, __max_message),
                        ),
                    };
                }
                if ::core::cfg!(target_endian = "little") {
                    return match ::zao::__private::blit::decode_blit_exact::<Self, __N>(__bytes) {
                        ::core::result::Result::Ok(__value) if __N <= __max_message => {
                            ::core::result::Result::Ok(__value)
                        }
                        _ => ::core::result::Result::Err(
                            ::zao::__private::blit::blit_len_error(__bytes.len(), __N, __max_message),
                        ),
                    };
                }
                if __bytes.len() > __max_message {
                    return ::core::result::Result::Err(::zao::DecodeError::MessageTooLarge);
                }
                let mut __r = ::zao::Reader::new(__bytes);
                let __value = <Self as ::zao::Decode<'__de>>::decode_from(&mut __r)?;
                __r.finish()?;
                ::core::result::Result::Ok(__value)
            }

            #[inline(always)]
            fn decode_from(__r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<Self, ::zao::DecodeError> {
                // The derive only compiles for a zerocopy-blittable type.
                fn __zao_assert_blittable<T: ::zao::__private::zerocopy::IntoBytes
                    + ::zao::__private::zerocopy::FromBytes
                    + ::zao::__private::zerocopy::Immutable
                    + ::zao::__private::zerocopy::KnownLayout>() {}
                let _ = __zao_assert_blittable::<#ident>;
                const __N: usize = ::core::mem::size_of::<#ident>();
                if ::core::cfg!(target_endian = "little") && __N <= ::zao::__private::blit::WORD_IMAGE_MAX {
                    return match __r.take_chunk::<__N>() {
                        ::core::result::Result::Ok(__image) => ::core::result::Result::Ok(
                            Self::__zao_from_image(__image),
                        ),
                        ::core::result::Result::Err(__e) => ::core::result::Result::Err(__e),
                    };
                }
                if ::core::cfg!(target_endian = "little") {
                    ::zao::__private::blit::decode_blit(__r)
                } else {
                    ::core::result::Result::Ok(Self #built)
                }
            }

            #[inline(always)]
            fn decode_in_place_from(&mut self, __r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<(), ::zao::DecodeError> {
                *self = <Self as ::zao::Decode<'__de>>::decode_from(__r)?;
                ::core::result::Result::Ok(())
            }

            #[inline]
            fn decode_slice_in_place(__items: &mut [Self], __r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<(), ::zao::DecodeError> {
                if ::core::cfg!(target_endian = "little") {
                    ::zao::__private::blit::decode_blit_slice(__items, __r)
                } else {
                    for __item in __items {
                        ::zao::Decode::decode_in_place_from(__item, __r)?;
                    }
                    ::core::result::Result::Ok(())
                }
            }

            #[inline]
            fn decode_vec(
                __count: usize,
                __r: &mut ::zao::Reader<'__de>,
            ) -> ::core::result::Result<::std::vec::Vec<Self>, ::zao::DecodeError> {
                if ::core::cfg!(target_endian = "little") {
                    ::zao::__private::blit::decode_blit_vec_owned(__count, __r)
                } else {
                    let mut __vec = ::std::vec::Vec::new();
                    <Self as ::zao::Decode<'__de>>::decode_vec_in_place(&mut __vec, __count, __r)?;
                    ::core::result::Result::Ok(__vec)
                }
            }

            #[inline]
            fn decode_vec_in_place(
                __vec: &mut ::std::vec::Vec<Self>,
                __count: usize,
                __r: &mut ::zao::Reader<'__de>,
            ) -> ::core::result::Result<(), ::zao::DecodeError> {
                if ::core::cfg!(target_endian = "little") {
                    ::zao::__private::blit::decode_blit_vec(__vec, __count, __r)
                } else {
                    __vec.clear();
                    for _ in 0..__count {
                        __vec.push(<Self as ::zao::Decode<'__de>>::decode_from(__r)?);
                    }
                    ::core::result::Result::Ok(())
                }
            }
        };
    }
    let exacts = fields.iter().map(|f| {
        let ty = &f.ty;
        if f.recursive {
            quote!(false)
        } else {
            quote!(<#ty as ::zao::Decode<'__de>>::EXACT_SIZE)
        }
    });
    let exact = quote!(true #( && #exacts )*);
    // Field by field: every field before and this one exact-size, so its
    // bytes lie in the prefix that is checked up front.
    let mut open = quote!(true);
    let in_prefix: Vec<_> = fields
        .iter()
        .map(|f| {
            let ty = &f.ty;
            open = if f.recursive {
                quote!(false)
            } else {
                quote!(#open && <#ty as ::zao::Decode<'__de>>::EXACT_SIZE)
            };
            open.clone()
        })
        .collect();
    let general: Vec<_> = fields
        .iter()
        .zip(&in_prefix)
        .map(|(f, pre)| field_expr(f, pre.clone()))
        .collect();
    let built_general = set.construct(&general);
    let whole: Vec<_> = fields.iter().map(|f| field_expr(f, quote!(true))).collect();
    let built_whole = set.construct(&whole);
    let any_recursive = fields.iter().any(|f| f.recursive);
    let plain = if any_recursive {
        quote!()
    } else {
        let infallibles = fields.iter().map(|f| {
            let ty = &f.ty;
            quote!(<#ty as ::zao::Decode<'__de>>::INFALLIBLE)
        });
        let plain_exprs: Vec<_> = fields
            .iter()
            .map(|f| {
                let ty = &f.ty;
                quote!(<#ty as ::zao::Decode<'__de>>::decode_plain(__r))
            })
            .collect();
        let plain_built = set.construct(&plain_exprs);
        quote! {
            const INFALLIBLE: bool = #exact #( && #infallibles )*;

            #[inline(always)]
            fn decode_plain(__r: &mut ::zao::Reader<'__de>) -> Self {
                Self #plain_built
            }
        }
    };
    // A non-generic struct of exact-size fields reads all its bytes with one
    // check and decodes the fields from that local array, where the compiler
    // can see every remaining bound.
    let fast = if input.generics.params.is_empty() && !fields.is_empty() {
        let ident = &input.ident;
        quote! {
            if <Self as ::zao::Decode<'__de>>::EXACT_SIZE {
                const __N: usize = <#ident as ::zao::Decode<'static>>::MIN_SIZE;
                // Borrowed, not copied: a copy into a local array is read
                // back at other widths and stalls store forwarding.
                let __bytes: &[u8; __N] = __r.take_chunk::<__N>()?;
                let __r = &mut ::zao::Reader::new(__bytes);
                return ::core::result::Result::Ok(Self #built_whole);
            }
        }
    } else {
        quote!()
    };
    // The leading exact-size fields' bytes (those `in_prefix`) are checked
    // once up front; the compiler then drops the per-field checks they imply.
    let prefix_terms = fields.iter().zip(&in_prefix).map(|(f, pre)| {
        let ty = &f.ty;
        if f.recursive {
            quote!(0usize)
        } else {
            quote!(if #pre { <#ty as ::zao::Decode<'__de>>::MIN_SIZE } else { 0usize })
        }
    });
    let prefix = quote! {
        let __prefix = 0usize #( .saturating_add(#prefix_terms) )*;
        if __r.remaining() < __prefix {
            return ::core::result::Result::Err(::zao::DecodeError::UnexpectedEnd);
        }
    };
    quote! {
        const MIN_SIZE: usize = #min;
        const EXACT_SIZE: bool = #exact;
        #plain

        // Always inlined, as encode is: a decode that stays a call passes its
        // result through memory.
        #[inline(always)]
        fn decode_from(__r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<Self, ::zao::DecodeError> {
            #fast
            #prefix
            ::core::result::Result::Ok(Self #built_general)
        }

        #[inline(always)]
        fn decode_in_place_from(&mut self, __r: &mut ::zao::Reader<'__de>) -> ::core::result::Result<(), ::zao::DecodeError> {
            if <Self as ::zao::Decode<'__de>>::EXACT_SIZE {
                // Nothing to reuse in plain data: take the one-check path.
                *self = <Self as ::zao::Decode<'__de>>::decode_from(__r)?;
                return ::core::result::Result::Ok(());
            }
            #( ::zao::Decode::decode_in_place_from(&mut self.#members, __r)?; )*
            ::core::result::Result::Ok(())
        }
    }
}

pub(crate) fn message(input: &Input) -> syn::Result<TokenStream> {
    let ident = &input.ident;
    let Some(id) = &input.attrs.id else {
        return Err(syn::Error::new_spanned(
            ident,
            "#[derive(NetMessage)] needs a stable message id: add #[zao(id = N)]",
        ));
    };
    let id: u32 = id.base10_parse()?;
    let name = ident.to_string();
    let (impl_g, ty_g, where_c) = input.generics.split_for_impl();
    Ok(quote! {
        #[automatically_derived]
        impl #impl_g ::zao::NetMessage for #ident #ty_g #where_c {
            const ID: u32 = #id;
            const NAME: &'static str = #name;
        }
    })
}
