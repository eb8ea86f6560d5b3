//! The syntax of a tool: a function (or a `#[toolbox]` method) split into the parts the later
//! stages need, and the same function cleaned of the attributes only `#[tool]` understands.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use syn::{
    Attribute, Block, FnArg, Pat, Signature, Type, Visibility,
    parse::{ParseStream, Parser},
};

use crate::{attr::ParamAttr, errors::Errors};

/// A function marked `#[tool]`.
pub(crate) struct ToolFn {
    /// The function's own attributes (its docs among them).
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    /// The signature with `#[context]`, `#[args]`, docs, `#[serde]` and `#[schemars]` removed
    /// from the parameters, as the function is emitted again.
    pub(crate) sig: Signature,
    pub(crate) block: Box<Block>,
    /// The doc comment, one part per `#[doc]` attribute.
    pub(crate) docs: Vec<DocPart>,
    /// `self`, `&self` or `&mut self`, when there is one.
    pub(crate) receiver: Option<syn::Receiver>,
    /// The parameters after the receiver, in order.
    pub(crate) params: Vec<Param>,
}

/// One part of a doc comment.
pub(crate) enum DocPart {
    /// A `///` line or `#[doc = "..."]`, with the space after `///` removed.
    Text(String),
    /// `#[doc = include_str!(..)]` and other expressions, evaluated by the compiler.
    Expr(syn::Expr),
}

/// One parameter of a tool function.
pub(crate) struct Param {
    pub(crate) pat: Box<Pat>,
    pub(crate) ty: Box<Type>,
    /// `#[context]`, with its span.
    pub(crate) context: Option<Span>,
    /// `#[args]`, with its span.
    pub(crate) args: Option<Span>,
    /// Docs, `#[serde]` and `#[schemars]`, for the field of the hidden arguments struct.
    pub(crate) field_attrs: Vec<Attribute>,
}

impl Param {
    /// The reference type of a parameter filled from the call rather than from the model's
    /// arguments (`call: &CallContext`): any `&T` parameter that is neither `#[context]` nor
    /// `#[args]`. Whether `T` can be had from a call is checked by the compiler, through the
    /// `CallValue` trait, so a `text: &str` is an error on `str`.
    pub(crate) fn call_value(&self) -> Option<&syn::TypeReference> {
        match &*self.ty {
            Type::Reference(reference) if self.context.is_none() && self.args.is_none() => {
                Some(reference)
            }
            _ => None,
        }
    }

    /// The parameter's name, when its pattern is a plain identifier (`city`, `mut city`).
    pub(crate) fn ident(&self) -> Option<&syn::Ident> {
        match &*self.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => Some(&pat.ident),
            _ => None,
        }
    }
}

impl ToolFn {
    /// Splits a free function.
    pub(crate) fn from_item(item: syn::ItemFn, errors: &mut Errors) -> Self {
        Self::new(item.attrs, item.vis, item.sig, item.block, errors)
    }

    /// Splits a method of a `#[toolbox]` impl, whose `#[tool]` attribute is already removed.
    pub(crate) fn from_method(method: syn::ImplItemFn, errors: &mut Errors) -> Self {
        Self::new(
            method.attrs,
            method.vis,
            method.sig,
            Box::new(method.block),
            errors,
        )
    }

    fn new(
        attrs: Vec<Attribute>,
        vis: Visibility,
        mut sig: Signature,
        block: Box<Block>,
        errors: &mut Errors,
    ) -> Self {
        let docs = attrs.iter().filter_map(doc_part).collect();
        let mut receiver = None;
        let mut params = Vec::new();
        for input in &mut sig.inputs {
            match input {
                FnArg::Receiver(this) => receiver = Some(this.clone()),
                FnArg::Typed(typed) => {
                    let mut param = Param {
                        pat: typed.pat.clone(),
                        ty: typed.ty.clone(),
                        context: None,
                        args: None,
                        field_attrs: Vec::new(),
                    };
                    let mut kept = Vec::new();
                    for attr in std::mem::take(&mut typed.attrs) {
                        match ParamAttr::of(&attr, errors) {
                            ParamAttr::Context(span) => {
                                if param.context.is_some() {
                                    errors.push(syn::Error::new(
                                        span,
                                        "duplicate `#[context]` on one parameter; remove one",
                                    ));
                                }
                                param.context = Some(span);
                            }
                            ParamAttr::Args(span) => param.args = Some(span),
                            ParamAttr::Field => param.field_attrs.push(attr),
                            ParamAttr::Other => kept.push(attr),
                        }
                    }
                    typed.attrs = kept;
                    params.push(param);
                }
            }
        }
        Self {
            attrs,
            vis,
            sig,
            block,
            docs,
            receiver,
            params,
        }
    }

    /// The function as the user wrote it, minus the parameter attributes `#[tool]` consumed.
    pub(crate) fn to_item(&self) -> syn::ItemFn {
        syn::ItemFn {
            attrs: self.attrs.clone(),
            vis: self.vis.clone(),
            sig: self.sig.clone(),
            block: self.block.clone(),
        }
    }

    /// The method as the user wrote it, minus the parameter attributes `#[tool]` consumed.
    pub(crate) fn to_method(&self) -> syn::ImplItemFn {
        syn::ImplItemFn {
            attrs: self.attrs.clone(),
            vis: self.vis.clone(),
            defaultness: None,
            sig: self.sig.clone(),
            block: (*self.block).clone(),
        }
    }

    /// The doc attributes of the function, for the generated type.
    pub(crate) fn doc_attrs(&self) -> impl Iterator<Item = &Attribute> {
        self.attrs.iter().filter(|attr| attr.path().is_ident("doc"))
    }
}

/// A function whose body syn cannot parse (a half-typed line such as `let sum = a + ;`), with
/// the body kept as written. `#[tool]` reads only the signature, so the tool is generated as
/// usual and rustc reports the syntax error, once, where it is.
pub(crate) fn fn_with_unparsed_body(input: TokenStream) -> Option<syn::ItemFn> {
    let parser = |stream: ParseStream<'_>| {
        let attrs = Attribute::parse_outer(stream)?;
        let vis: Visibility = stream.parse()?;
        let sig: Signature = stream.parse()?;
        let body: Group = stream.parse()?;
        if body.delimiter() != Delimiter::Brace || !stream.is_empty() {
            return Err(stream.error("expected a function body"));
        }
        let block = Block {
            brace_token: syn::token::Brace(body.delim_span()),
            stmts: vec![syn::Stmt::Expr(syn::Expr::Verbatim(body.stream()), None)],
        };
        Ok(syn::ItemFn {
            attrs,
            vis,
            sig,
            block: Box::new(block),
        })
    };
    parser.parse2(input).ok()
}

fn doc_part(attr: &Attribute) -> Option<DocPart> {
    if !attr.path().is_ident("doc") {
        return None;
    }
    let syn::Meta::NameValue(meta) = &attr.meta else {
        return None;
    };
    Some(match &meta.value {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(text),
            ..
        }) => {
            let text = text.value();
            let line = text.strip_prefix(' ').unwrap_or(&text);
            DocPart::Text(line.trim_end().to_owned())
        }
        other => DocPart::Expr(other.clone()),
    })
}
