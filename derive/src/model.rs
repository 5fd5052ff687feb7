//! The derive input, reduced to what code generation needs.

use proc_macro2::TokenTree;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::{Data, DeriveInput, Fields, Ident, Member, Result, Type};

use crate::attr::{ContainerAttrs, variant_tag};

/// One field of a struct or variant.
#[derive(Clone)]
pub(crate) struct Field {
    /// `self.<member>` for structs.
    pub(crate) member: Member,
    /// The field's name for the fingerprint (`"0"` for tuple fields).
    pub(crate) name: String,
    pub(crate) ty: Type,
    /// Local name when bound in a pattern.
    pub(crate) binding: Ident,
    /// The type names the type being derived (`Option<Box<Self>>`): its
    /// constants would refer to themselves, so they are not consulted.
    pub(crate) recursive: bool,
    /// For a recursive field, its type with every self-reference replaced
    /// by zao's `SelfRef` marker, when each is a plain `Self` or the type's
    /// own name (with or without generic arguments).
    pub(crate) self_free: Option<Type>,
}

/// Named, tuple or unit fields.
pub(crate) struct FieldSet {
    pub(crate) fields: Vec<Field>,
    style: Style,
}

#[derive(Clone, Copy)]
enum Style {
    Named,
    Tuple,
    Unit,
}

pub(crate) struct Variant {
    pub(crate) ident: Ident,
    pub(crate) tag: u32,
    pub(crate) fields: FieldSet,
}

pub(crate) enum Shape {
    Struct(FieldSet),
    Enum(Vec<Variant>),
}

pub(crate) struct Input {
    pub(crate) ident: Ident,
    pub(crate) generics: syn::Generics,
    pub(crate) attrs: ContainerAttrs,
    pub(crate) shape: Shape,
}

impl Input {
    pub(crate) fn parse(input: &DeriveInput) -> Result<Self> {
        let attrs = ContainerAttrs::parse(&input.attrs)?;
        let shape = match &input.data {
            Data::Struct(data) => Shape::Struct(FieldSet::new(&data.fields, &input.ident)),
            Data::Enum(data) => {
                if attrs.blittable || attrs.tolerant {
                    return Err(syn::Error::new_spanned(
                        &input.ident,
                        "`blittable` and `tolerant` apply to structs only",
                    ));
                }
                let mut variants = Vec::new();
                for v in &data.variants {
                    let tag = variant_tag(v)?;
                    if variants.iter().any(|seen: &Variant| seen.tag == tag) {
                        return Err(syn::Error::new_spanned(
                            v,
                            format!("wire tag {tag} is used twice"),
                        ));
                    }
                    variants.push(Variant {
                        ident: v.ident.clone(),
                        tag,
                        fields: FieldSet::new(&v.fields, &input.ident),
                    });
                }
                Shape::Enum(variants)
            }
            Data::Union(_) => {
                return Err(syn::Error::new_spanned(
                    &input.ident,
                    "zao cannot derive for unions",
                ));
            }
        };
        if let (true, Shape::Struct(set)) = (attrs.blittable, &shape) {
            // Platform-sized integers travel as varints, not as their image.
            let sized = |ty: &syn::Type| matches!(ty, syn::Type::Path(p) if p.path.is_ident("usize") || p.path.is_ident("isize"));
            if let Some(f) = set.fields.iter().find(|f| sized(&f.ty)) {
                return Err(syn::Error::new_spanned(
                    &f.ty,
                    "a `blittable` type cannot hold `usize`/`isize`: their size differs between platforms",
                ));
            }
        }
        if attrs.blittable && !input.generics.params.is_empty() {
            return Err(syn::Error::new_spanned(
                &input.generics,
                "a `blittable` type cannot be generic",
            ));
        }
        Ok(Self {
            ident: input.ident.clone(),
            generics: input.generics.clone(),
            attrs,
            shape,
        })
    }
}

impl FieldSet {
    fn new(fields: &Fields, owner: &Ident) -> Self {
        let style = match fields {
            Fields::Named(_) => Style::Named,
            Fields::Unnamed(_) => Style::Tuple,
            Fields::Unit => Style::Unit,
        };
        let fields = fields
            .iter()
            .enumerate()
            .map(|(i, f)| match &f.ident {
                Some(ident) => Field {
                    member: Member::Named(ident.clone()),
                    name: ident.to_string(),
                    ty: f.ty.clone(),
                    binding: format_ident!("__zao_{}", ident),
                    recursive: mentions(f.ty.to_token_stream(), owner),
                    self_free: self_free(&f.ty, owner),
                },
                None => Field {
                    member: Member::Unnamed(syn::Index {
                        index: i as u32,
                        span: Span::call_site(),
                    }),
                    name: i.to_string(),
                    ty: f.ty.clone(),
                    binding: format_ident!("__zao_{}", i),
                    recursive: mentions(f.ty.to_token_stream(), owner),
                    self_free: self_free(&f.ty, owner),
                },
            })
            .collect();
        Self { fields, style }
    }

    /// `"Named"`, `"Tuple"` or `"Unit"`: the `FieldStyle` variant.
    pub(crate) fn style_name(&self) -> &'static str {
        match self.style {
            Style::Named => "Named",
            Style::Tuple => "Tuple",
            Style::Unit => "Unit",
        }
    }

    /// `{ a: __zao_a, .. }`, `(__zao_0, ..)` or nothing: destructures the
    /// fields into their bindings, or builds from expressions of that name.
    pub(crate) fn pattern(&self) -> TokenStream {
        let bindings = self.fields.iter().map(|f| &f.binding);
        match self.style {
            Style::Named => {
                let members = self.fields.iter().map(|f| &f.member);
                quote!({ #(#members: #bindings),* })
            }
            Style::Tuple => quote!(( #(#bindings),* )),
            Style::Unit => quote!(),
        }
    }

    /// Builds the struct or variant from one expression per field.
    pub(crate) fn construct(&self, exprs: &[TokenStream]) -> TokenStream {
        match self.style {
            Style::Named => {
                let members = self.fields.iter().map(|f| &f.member);
                quote!({ #(#members: #exprs),* })
            }
            Style::Tuple => quote!(( #(#exprs),* )),
            Style::Unit => quote!(),
        }
    }
}

/// Whether `tokens` name `owner` or `Self` anywhere.
fn mentions(tokens: TokenStream, owner: &Ident) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(ident) => ident == *owner || ident == "Self",
        TokenTree::Group(group) => mentions(group.stream(), owner),
        _ => false,
    })
}

/// `ty` with each self-reference (`Self`, `Owner`, `Owner<T>`) replaced by
/// `::zao::__private::schema::SelfRef`, or `None` if `ty` does not mention
/// the owner or mentions it some other way (`crate::Owner`, `<Self as
/// Trait>::X`).
fn self_free(ty: &Type, owner: &Ident) -> Option<Type> {
    if !mentions(ty.to_token_stream(), owner) {
        return None;
    }
    let mut ty = ty.clone();
    replace_self(&mut ty, owner);
    (!mentions(ty.to_token_stream(), owner)).then_some(ty)
}

fn replace_self(ty: &mut Type, owner: &Ident) {
    match ty {
        Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let is_self = p
                .path
                .segments
                .first()
                .is_some_and(|seg| seg.ident == *owner || seg.ident == "Self");
            if is_self {
                *ty = syn::parse_quote!(::zao::__private::schema::SelfRef);
                return;
            }
            for seg in &mut p.path.segments {
                replace_in_args(&mut seg.arguments, owner);
            }
        }
        Type::Path(p) if p.qself.is_none() => {
            for seg in &mut p.path.segments {
                replace_in_args(&mut seg.arguments, owner);
            }
        }
        Type::Reference(r) => replace_self(&mut r.elem, owner),
        Type::Array(a) => replace_self(&mut a.elem, owner),
        Type::Slice(s) => replace_self(&mut s.elem, owner),
        Type::Paren(p) => replace_self(&mut p.elem, owner),
        Type::Group(g) => replace_self(&mut g.elem, owner),
        Type::Tuple(t) => t.elems.iter_mut().for_each(|e| replace_self(e, owner)),
        _ => {}
    }
}

fn replace_in_args(args: &mut syn::PathArguments, owner: &Ident) {
    if let syn::PathArguments::AngleBracketed(args) = args {
        for arg in &mut args.args {
            if let syn::GenericArgument::Type(ty) = arg {
                replace_self(ty, owner);
            }
        }
    }
}
