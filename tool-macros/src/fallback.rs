//! What a broken input expands to: the user's item, still usable, beside the errors, so that
//! call sites and other items do not fail in a cascade.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemImpl;

use crate::{ast::ToolFn, valid::Errors};

/// The function as written (minus the parameter attributes `#[tool]` reads, which would be
/// errors of their own) and the errors.
pub(crate) fn function(func: &ToolFn, errors: &Errors) -> TokenStream {
    let item = func.to_item();
    let errors = errors.to_compile_errors();
    quote! {
        #item
        #errors
    }
}

/// The impl block, its `#[tool]` attributes removed, and the errors.
pub(crate) fn toolbox(item: &ItemImpl, errors: &Errors) -> TokenStream {
    let errors = errors.to_compile_errors();
    quote! {
        #item
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
