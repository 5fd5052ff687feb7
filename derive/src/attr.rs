//! `#[zao(...)]` attributes.

use syn::{Attribute, Expr, ExprLit, Lit, LitInt, Result};

/// Attributes on the struct or enum itself.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    /// `#[zao(blittable)]`: wire form is the memory image.
    pub(crate) blittable: bool,
    /// `#[zao(tolerant)]`: body is length-prefixed; fields may be appended.
    pub(crate) tolerant: bool,
    /// `#[zao(id = N)]`: the message id.
    pub(crate) id: Option<LitInt>,
}

/// Attributes on an enum variant.
#[derive(Default)]
pub(crate) struct VariantAttrs {
    /// `#[zao(tag = N)]`: the variant's wire tag.
    pub(crate) tag: Option<LitInt>,
}

impl ContainerAttrs {
    pub(crate) fn parse(attrs: &[Attribute]) -> Result<Self> {
        let mut out = Self::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("zao")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("blittable") {
                    out.blittable = true;
                } else if meta.path.is_ident("tolerant") {
                    out.tolerant = true;
                } else if meta.path.is_ident("id") {
                    out.id = Some(meta.value()?.parse()?);
                } else {
                    return Err(meta.error(
                        "unknown zao attribute: expected `blittable`, `tolerant` or `id = N`",
                    ));
                }
                Ok(())
            })?;
        }
        if out.blittable && out.tolerant {
            return Err(syn::Error::new(
                proc_macro2::Span::call_site(),
                "a type cannot be both `blittable` and `tolerant`: a blittable wire form has no length prefix",
            ));
        }
        Ok(out)
    }
}

impl VariantAttrs {
    pub(crate) fn parse(attrs: &[Attribute]) -> Result<Self> {
        let mut out = Self::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("zao")) {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("tag") {
                    out.tag = Some(meta.value()?.parse()?);
                    Ok(())
                } else {
                    Err(meta.error("unknown zao variant attribute: expected `tag = N`"))
                }
            })?;
        }
        Ok(out)
    }
}

/// A variant's tag: `#[zao(tag = N)]`, or else an integer discriminant `= N`.
pub(crate) fn variant_tag(variant: &syn::Variant) -> Result<u32> {
    let attrs = VariantAttrs::parse(&variant.attrs)?;
    let lit = match (attrs.tag, &variant.discriminant) {
        (Some(lit), _) => lit,
        (
            None,
            Some((
                _,
                Expr::Lit(ExprLit {
                    lit: Lit::Int(lit), ..
                }),
            )),
        ) => lit.clone(),
        _ => {
            return Err(syn::Error::new_spanned(
                variant,
                "every variant needs an explicit wire tag: `#[zao(tag = N)]` or an integer discriminant `= N`",
            ));
        }
    };
    lit.base10_parse::<u32>()
}
