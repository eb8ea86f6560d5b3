//! The `#[tool]` and `#[toolbox]` attribute macros of `tool-core`.
//!
//! Depend on `tool-core` and use its re-exports, `tool_core::tool` and `tool_core::toolbox`: the
//! generated code names `::tool_core` and its reference documentation lives there.
//!
//! The crate is split by stage, and the stages form a line, each file using only those before
//! it: `errors` collects every error of an invocation (each stage reports to it); `attr` parses
//! the attribute arguments and `ast` splits the function (parse); `valid` checks every rule
//! (validate); `fallback` re-emits a broken input beside its errors and `expand` writes the code
//! (expand). This file only forwards, so every stage works on `proc_macro2` tokens and can be
//! tested as a library.

mod ast;
mod attr;
mod errors;
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
