//! The `#[tool]` and `#[toolbox]` attribute macros of `tool-core`.
//!
//! Depend on `tool-core` and use its re-exports, `tool_core::tool` and `tool_core::toolbox`: the
//! generated code names `::tool_core` and its reference documentation lives there.
//!
//! The crate is split by stage: `attr` parses the attribute arguments, `ast` splits the
//! function, `valid` checks every rule and collects all errors, `expand` writes the code and
//! `fallback` re-emits a broken input beside its errors. This file only forwards, so every
//! stage works on `proc_macro2` tokens and can be tested as a library.

mod ast;
mod attr;
mod expand;
mod fallback;
mod valid;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Turns an `async fn` into a tool a model can call. See `tool_core::tool` for the reference.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::tool(args.into(), input.into()).into()
}

/// Turns the `#[tool]` methods of an impl block into tools sharing `&self` as their state. See
/// `tool_core::toolbox` for the reference.
#[proc_macro_attribute]
pub fn toolbox(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::toolbox(args.into(), input.into()).into()
}
