//! What a broken input expands to: the user's item, still usable, beside the errors, and a stub
//! of the type the macro would have generated, so that call sites, other items and an IDE see
//! no follow-on errors (thiserror's `fallback.rs` does the same for its derive).

use proc_macro2::{Delimiter, Group, Ident, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{
    Attribute, ItemImpl, Token, Visibility,
    parse::{ParseStream, Parser},
};

use crate::{ast::ToolFn, attr::ToolArgs, errors::Errors};

/// The function as written (minus the parameter attributes `#[tool]` reads, which would be
/// errors of their own), a stub of its tool type, and the errors.
pub(crate) fn function(func: &ToolFn, args: &ToolArgs, errors: &Errors) -> TokenStream {
    let item = func.to_item();
    let errors = errors.to_compile_errors();
    // A method (one with `self`) sits in an impl block, where no type can be declared.
    if func.receiver.is_some() {
        return quote! {
            #item
            #errors
        };
    }
    // The context's type as written, so `Tool::new(value)` infers as it would for the real
    // type; a `&T` context is held as `T`.
    let context = func
        .params
        .iter()
        .find(|param| param.context.is_some())
        .map(|param| match &*param.ty {
            syn::Type::Reference(reference) => reference.elem.to_token_stream(),
            ty => ty.to_token_stream(),
        });
    let stub = tool_stub(
        &func.vis,
        &crate::valid::fallback_type_ident(func, args),
        context,
    );
    quote! {
        #item
        #stub
        #errors
    }
}

/// The impl block, its `#[tool]` attributes removed, a stub `tools()` when the block is one a
/// toolbox could have been written on, and the errors.
pub(crate) fn toolbox(item: &ItemImpl, errors: &Errors) -> TokenStream {
    let stub = (item.trait_.is_none() && item.generics.params.is_empty())
        .then(|| tools_stub(&item.self_ty));
    let errors = errors.to_compile_errors();
    quote! {
        #item
        #stub
        #errors
    }
}

/// An input that is not what the attribute expects, unchanged, and the errors.
pub(crate) fn raw(input: TokenStream, errors: &Errors) -> TokenStream {
    let errors = errors.to_compile_errors();
    quote! {
        #input
        #errors
    }
}

/// A function whose signature syn cannot parse: unchanged, for rustc to report the syntax
/// error on the user's tokens, with a stub of its tool type when its name can be found.
pub(crate) fn unparsed_function(input: TokenStream) -> TokenStream {
    let stub = fn_name(input.clone())
        .filter(|_| !takes_self(&input))
        .map(|(vis, ident)| {
            let ident = Ident::new(
                &crate::valid::pascal_case(&ident_text(&ident)),
                ident.span(),
            );
            tool_stub(&vis, &ident, None)
        });
    let input = map_groups(input, Delimiter::Parenthesis, strip_param_attrs);
    quote! {
        #input
        #stub
    }
}

/// An impl block syn cannot parse (a syntax error inside a method): unchanged, for rustc to
/// report the error, with a stub `tools()` when the block is a plain `impl Type { .. }`.
pub(crate) fn unparsed_toolbox(input: TokenStream) -> TokenStream {
    let stub = impl_self_type(input.clone()).map(|ty| tools_stub(&ty));
    let input = map_groups(input, Delimiter::Brace, |body| {
        map_groups(
            strip_tool_attrs(body),
            Delimiter::Parenthesis,
            strip_param_attrs,
        )
    });
    quote! {
        #input
        #stub
    }
}

/// Whether `input` is a function, judged by a `fn` keyword outside any group: the input is
/// then passed through for rustc, whose error says what is wrong with it.
pub(crate) fn is_function(input: &TokenStream) -> bool {
    input
        .clone()
        .into_iter()
        .any(|token| matches!(&token, TokenTree::Ident(ident) if ident == "fn"))
}

/// Whether the parameter list of a function that does not parse mentions `self`: a method,
/// in an impl block where no type can be declared.
fn takes_self(input: &TokenStream) -> bool {
    input.clone().into_iter().any(|token| match token {
        TokenTree::Group(group) if group.delimiter() == Delimiter::Parenthesis => group
            .stream()
            .into_iter()
            .any(|token| matches!(&token, TokenTree::Ident(ident) if ident == "self")),
        _ => false,
    })
}

/// Whether `input` is an impl block, judged by an `impl` keyword outside any group.
pub(crate) fn is_impl(input: &TokenStream) -> bool {
    input
        .clone()
        .into_iter()
        .any(|token| matches!(&token, TokenTree::Ident(ident) if ident == "impl"))
}

/// A type named `ident` implementing `ExecutableTool`, constructible as the real one is
/// (`Ident`, `Ident::new(context)`, `Ident::default()`); its methods are never run, because
/// the crate does not compile. `new` takes `context`, or any value when its type is unknown.
fn tool_stub(vis: &Visibility, ident: &Ident, context: Option<TokenStream>) -> TokenStream {
    let new = match context {
        Some(ty) => quote!(#vis fn new(_context: #ty) -> Self),
        None => quote!(#vis fn new<T>(_context: T) -> Self),
    };
    // Hidden, so `missing_docs` adds no error of its own.
    quote! {
        #[doc(hidden)]
        #[allow(dead_code)]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #ident;

        const _: () = {
            impl #ident {
                #[doc(hidden)]
                #[allow(dead_code)]
                #new {
                    Self
                }
            }

            impl ::tool_core::ExecutableTool for #ident {
                fn name(&self) -> &str {
                    ::core::unreachable!()
                }

                fn get_schema(&self) -> ::tool_core::ChatTool {
                    ::core::unreachable!()
                }

                fn execute<'life0, 'async_trait>(
                    &'life0 self,
                    _args: ::tool_core::JsonObject,
                ) -> ::tool_core::__private::ExecuteFuture<'async_trait>
                where
                    'life0: 'async_trait,
                    Self: 'async_trait,
                {
                    ::core::unreachable!()
                }
            }
        };
    }
}

/// The `tools()` method a toolbox would have had.
fn tools_stub(self_ty: &syn::Type) -> TokenStream {
    quote! {
        const _: () = {
            impl #self_ty {
                #[doc(hidden)]
                #[allow(dead_code)]
                pub fn tools(
                    self: ::tool_core::__private::Arc<Self>,
                ) -> ::tool_core::__private::Vec<::tool_core::__private::DynTool> {
                    ::core::unreachable!()
                }
            }
        };
    }
}

/// The visibility and name of a function whose signature may not parse: its attributes and
/// visibility, then anything up to `fn` and the name.
fn fn_name(input: TokenStream) -> Option<(Visibility, Ident)> {
    let parser = |stream: ParseStream<'_>| {
        Attribute::parse_outer(stream)?;
        let vis: Visibility = stream.parse()?;
        while !stream.peek(Token![fn]) {
            stream.parse::<TokenTree>()?;
        }
        stream.parse::<Token![fn]>()?;
        let ident: Ident = stream.parse()?;
        stream.parse::<TokenStream>()?;
        Ok((vis, ident))
    };
    parser.parse2(input).ok()
}

/// The type of `impl Type { .. }`, when the block is neither generic nor a trait impl.
fn impl_self_type(input: TokenStream) -> Option<syn::Type> {
    let parser = |stream: ParseStream<'_>| {
        Attribute::parse_outer(stream)?;
        stream.parse::<Token![impl]>()?;
        let ty: syn::Type = stream.parse()?;
        let body: proc_macro2::Group = stream.parse()?;
        if body.delimiter() != proc_macro2::Delimiter::Brace || !stream.is_empty() {
            return Err(stream.error("not a plain impl block"));
        }
        Ok(ty)
    };
    parser.parse2(input).ok()
}

fn ident_text(ident: &Ident) -> String {
    crate::valid::unraw(ident)
}

/// `tokens` with the contents of each top-level group delimited by `delimiter` passed through
/// `f`.
fn map_groups(
    tokens: TokenStream,
    delimiter: Delimiter,
    f: impl Fn(TokenStream) -> TokenStream,
) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) if group.delimiter() == delimiter => {
                let mut mapped = Group::new(delimiter, f(group.stream()));
                mapped.set_span(group.span());
                TokenTree::Group(mapped)
            }
            other => other,
        })
        .collect()
}

/// A parameter list without the attributes `#[tool]` would have moved or consumed (`#[context]`,
/// `#[args]`, docs, `#[serde]`, `#[schemars]`), which rustc rejects on a plain function.
fn strip_param_attrs(tokens: TokenStream) -> TokenStream {
    strip_attrs(tokens, |path: &[Ident]| {
        matches!(path, [one] if ["context", "args", "doc", "serde", "schemars"]
            .iter()
            .any(|name| one == name))
    })
}

/// An impl body without its `#[tool]` attributes, which rustc would expand on each method alone.
fn strip_tool_attrs(tokens: TokenStream) -> TokenStream {
    strip_attrs(tokens, |path: &[Ident]| {
        path.last().is_some_and(|last| last == "tool")
    })
}

/// `tokens` without the outer attributes `#[path ..]` whose path `remove` matches.
fn strip_attrs(tokens: TokenStream, remove: impl Fn(&[Ident]) -> bool) -> TokenStream {
    let mut out = Vec::new();
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        if let TokenTree::Punct(punct) = &token {
            if punct.as_char() == '#' {
                if let Some(TokenTree::Group(group)) = tokens.peek() {
                    if group.delimiter() == Delimiter::Bracket && remove(&attr_path(group)) {
                        tokens.next();
                        continue;
                    }
                }
            }
        }
        out.push(token);
    }
    out.into_iter().collect()
}

/// The identifiers of an attribute's path: `tool_core::tool` in `[tool_core::tool(..)]`.
fn attr_path(group: &Group) -> Vec<Ident> {
    group
        .stream()
        .into_iter()
        .take_while(|token| match token {
            TokenTree::Ident(_) => true,
            TokenTree::Punct(punct) => punct.as_char() == ':',
            _ => false,
        })
        .filter_map(|token| match token {
            TokenTree::Ident(ident) => Some(ident),
            _ => None,
        })
        .collect()
}
