//! [`Errors`]: the collector every stage reports to, so the user sees all of a tool's errors at
//! once. It sits below the stages (serde keeps its `Ctxt` in a file of its own for the same
//! reason): `attr` and `ast` report while parsing, `valid` while checking, `expand` and
//! `fallback` emit what was collected.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Collects every error of one macro invocation, so the user sees all of them at once.
#[derive(Default)]
pub(crate) struct Errors {
    errors: Option<syn::Error>,
    count: usize,
}

impl Errors {
    /// Adds an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.count += 1;
        match &mut self.errors {
            Some(errors) => errors.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// Adds an error spanned on `tokens`.
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Whether any error was pushed.
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many errors were pushed.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// The errors as `compile_error!` invocations.
    pub(crate) fn to_compile_errors(&self) -> TokenStream {
        self.errors
            .as_ref()
            .map(syn::Error::to_compile_error)
            .unwrap_or_default()
    }
}
