//! The generated code. Every impl body is a one-line call into `::tool_core::__private`; bound
//! checks are spanned on the user's tokens so that errors underline them.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::{ImplItem, ItemImpl, spanned::Spanned};

use crate::{
    ast::{self, ToolFn},
    attr::{self, ToolArgs},
    errors::Errors,
    fallback,
    valid::{self, Form, Place, Tool},
};

/// `#[tool]` on a free function.
pub(crate) fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let attr = ToolArgs::parse(args, &mut errors);
    let item = match syn::parse2::<syn::ItemFn>(input.clone()) {
        Ok(item) => item,
        Err(_) => match ast::fn_with_unparsed_body(input.clone()) {
            Some(item) => item,
            // A function syn cannot read: rustc reports the syntax error on its own tokens, and
            // a second error here would only repeat it.
            None if fallback::is_function(&input) => {
                return fallback::unparsed_function(input);
            }
            None => {
                errors.push(syn::Error::new(
                    first_span(&input),
                    "`#[tool]` goes on an `async fn`, or on a method of a `#[toolbox]` impl",
                ));
                return fallback::raw(input, &errors);
            }
        },
    };
    let func = ToolFn::from_item(item, &mut errors);
    match valid::tool(&func, &attr, Place::Free, &mut errors) {
        Some(tool) if errors.is_empty() => free_tool(&tool),
        _ => fallback::function(&func, &attr, &errors),
    }
}

/// `#[toolbox]` on an inherent impl block.
pub(crate) fn toolbox(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    if !args.is_empty() {
        errors.spanned(
            &args,
            "`#[toolbox]` takes no arguments; put them on each method's `#[tool(...)]`",
        );
    }
    let Ok(mut item) = syn::parse2::<ItemImpl>(input.clone()) else {
        // A syntax error inside a method: rustc reports it on the user's tokens.
        if fallback::is_impl(&input) {
            let output = fallback::unparsed_toolbox(input);
            let errors = errors.to_compile_errors();
            return quote!(#output #errors);
        }
        errors.push(syn::Error::new(
            first_span(&input),
            "`#[toolbox]` goes on an inherent `impl` block whose methods are marked `#[tool]`",
        ));
        return fallback::raw(input, &errors);
    };
    if let Some((_, path, _)) = &item.trait_ {
        errors.spanned(
            path,
            "`#[toolbox]` goes on an inherent `impl` block, not on a trait impl",
        );
    }
    if !item.generics.params.is_empty() {
        errors.spanned(
            &item.generics,
            "`#[toolbox]` impl blocks cannot be generic, since each tool needs one concrete \
             state type; implement the tools for a concrete type",
        );
    }
    let (methods, tool_path) = take_tool_methods(&mut item, &mut errors);
    if methods.is_empty() && errors.is_empty() {
        errors.spanned(
            &item.self_ty,
            "this `#[toolbox]` has no `#[tool]` methods; mark the methods the model may call \
             with `#[tool]`",
        );
    }
    let mut tools = Vec::new();
    for (func, args) in &methods {
        if let Some(tool) = valid::tool(func, args, Place::Toolbox, &mut errors) {
            tools.push(tool);
        }
    }
    valid::unique_names(&tools, &mut errors);
    if !errors.is_empty() {
        return fallback::toolbox(&item, &errors);
    }
    toolbox_tools(&item, &tools, tool_path.as_ref())
}

/// Removes `#[tool]` from the methods of `item` that carry it, returning them (cleaned of the
/// parameter attributes `#[tool]` reads) with their arguments, and the path the first `#[tool]`
/// was written with.
fn take_tool_methods(
    item: &mut ItemImpl,
    errors: &mut Errors,
) -> (Vec<(ToolFn, ToolArgs)>, Option<syn::Path>) {
    let mut methods = Vec::new();
    let mut tool_path = None;
    for impl_item in &mut item.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        let (tool_attrs, others): (Vec<_>, Vec<_>) = std::mem::take(&mut method.attrs)
            .into_iter()
            .partition(attr::is_tool_attr);
        method.attrs = others;
        let Some(first) = tool_attrs.first() else {
            continue;
        };
        tool_path.get_or_insert_with(|| first.path().clone());
        for extra in &tool_attrs[1..] {
            errors.spanned(extra, "duplicate `#[tool]` on one method; keep one");
        }
        let args = match attr::tool_attr_tokens(first) {
            Ok(tokens) => ToolArgs::parse(tokens, errors),
            Err(error) => {
                errors.push(error);
                ToolArgs::default()
            }
        };
        let func = ToolFn::from_method(method.clone(), errors);
        *method = func.to_method();
        methods.push((func, args));
    }
    (methods, tool_path)
}

/// A free tool: the function, and its tool type, defined in a module of its own and brought in
/// by a glob import. A type of the same name already in scope shadows the import instead of
/// clashing with it, so `name_free` can report the clash once, naming `rename_struct`.
fn free_tool(tool: &Tool<'_>) -> TokenStream {
    let item = tool.func.to_item();
    let vis = &tool.func.vis;
    let inner_vis = one_level_in(vis);
    let ident = &tool.type_ident;
    let docs = tool.func.doc_attrs();
    let fn_ident = &tool.func.sig.ident;
    let module = format_ident!("__tool_{}", valid::unraw(fn_ident));
    let (definition, outside) = match &tool.context {
        None => (
            quote! {
                #[derive(Clone, Copy, Debug, Default)]
                #inner_vis struct #ident;
            },
            TokenStream::new(),
        ),
        Some(context) => {
            let held = context.held;
            let doc = format!(
                "Builds the `{}` tool, holding `context`, the value passed to the function's \
                 `#[context]` parameter on every call: `registry.register({ident}::new(..))`.",
                tool.name
            );
            let check = quote_spanned! {valid::span_of(held)=>
                const _: fn() = ::tool_core::__private::context_value::<#held>;
            };
            let clone_check = (!context.by_ref).then(|| {
                quote_spanned! {valid::span_of(held)=>
                    const _: fn() = ::tool_core::__private::context_clone::<#held>;
                }
            });
            // The field's type is named outside the module, through `Held`: the module cannot
            // name the types of a function body the tool may be defined in. The constant is the
            // type's name as a value, so that `register(CountRows)` says "is not a tool" and
            // leads to `new`, rather than to a struct literal.
            (
                quote! {
                    #inner_vis struct #ident {
                        pub(super) context: <__Held as ::tool_core::__private::Held>::Value,
                    }
                    pub(super) struct __Held;
                    #[doc(hidden)]
                    #[allow(non_upper_case_globals)]
                    #inner_vis const #ident: ::tool_core::__private::BuildWithNew<#ident> =
                        ::tool_core::__private::BuildWithNew::VALUE;
                },
                quote! {
                    impl ::tool_core::__private::Held for #module::__Held {
                        type Value = #held;
                    }
                    impl #module::#ident {
                        #[doc = #doc]
                        #vis fn new(context: #held) -> Self {
                            Self { context }
                        }
                    }
                    #check
                    #clone_check
                },
            )
        }
    };
    let name_check = quote_spanned! {ident.span()=>
        const _: fn() = ::tool_core::__private::name_free::<#ident, #module::#ident>;
    };
    let body = tool_impl(tool, &quote!(#module::#ident), &quote!(#fn_ident), "");
    quote! {
        #item

        mod #module {
            #(#docs)*
            #definition
        }
        #[allow(unused_imports)]
        #vis use #module::*;
        #name_check
        #outside

        const _: () = {
            #body
        };
    }
}

/// `vis` as written one module further in, so an item of the tool's module is visible as far
/// as the function: `pub(super)` for a private function, `pub(in super::super)` for
/// `pub(super)`.
fn one_level_in(vis: &syn::Visibility) -> TokenStream {
    let syn::Visibility::Restricted(restricted) = vis else {
        return match vis {
            syn::Visibility::Inherited => quote!(pub(super)),
            _ => quote!(#vis),
        };
    };
    let path = &restricted.path;
    match path.segments.first() {
        Some(first) if first.ident == "self" => {
            let rest = path.segments.iter().skip(1);
            quote!(pub(in super #(:: #rest)*))
        }
        Some(first) if first.ident == "super" => quote!(pub(in super::#path)),
        _ => quote!(#vis),
    }
}

fn toolbox_tools(
    item: &ItemImpl,
    tools: &[Tool<'_>],
    tool_path: Option<&syn::Path>,
) -> TokenStream {
    let self_ty = &item.self_ty;
    let mut bodies = Vec::new();
    let mut constructors = Vec::new();
    for tool in tools {
        let ident = format_ident!("__Toolbox{}", tool.type_ident);
        let method = &tool.func.sig.ident;
        let body = tool_impl(
            tool,
            &quote!(#ident),
            &quote!(<#self_ty>::#method),
            &ident.to_string(),
        );
        bodies.push(quote! {
            struct #ident(::tool_core::__private::Arc<#self_ty>);
            #body
        });
        constructors.push(quote! {
            ::tool_core::__private::Arc::new(#ident(::tool_core::__private::Clone::clone(&self)))
                as ::tool_core::__private::DynTool
        });
    }
    let names = tools
        .iter()
        .map(|tool| format!("`{}`", tool.name))
        .collect::<Vec<_>>()
        .join(", ");
    let doc = format!(
        " The tools of this toolbox ({names}), sharing this state; register them with \
         `ToolRegistry::register_all`."
    );
    // The `#[tool]` attributes are removed before name resolution, so an import of `tool` used
    // only inside toolboxes would be reported unused; this use of its path keeps it used.
    let tool_use = tool_path.map(|path| quote!(use #path as _;));
    quote! {
        #item

        const _: () = {
            #tool_use
            #(#bodies)*

            impl #self_ty {
                #[doc = #doc]
                pub fn tools(
                    self: ::tool_core::__private::Arc<Self>,
                ) -> ::tool_core::__private::Vec<::tool_core::__private::DynTool> {
                    ::tool_core::__private::Vec::from([#(#constructors),*])
                }
            }
        };
    }
}

/// The `ExecutableTool` impl of `tool` for `self_ty`, calling `callee`, with the hidden
/// arguments struct it needs. `prefix` keeps the hidden names of one toolbox apart.
fn tool_impl(
    tool: &Tool<'_>,
    self_ty: &TokenStream,
    callee: &TokenStream,
    prefix: &str,
) -> TokenStream {
    let name = &tool.name;
    let description = &tool.description;
    let args_ident = format_ident!("{}Args", if prefix.is_empty() { "__" } else { prefix });
    let mut call_args = Vec::new();
    if tool.func.receiver.is_some() {
        call_args.push(quote!(&*this.0));
    }
    let mut fields = Vec::new();
    let mut bindings = Vec::new();
    let mut takes_call = false;
    for (index, param) in tool.func.params.iter().enumerate() {
        if let Some(reference) = param.call_value() {
            takes_call = true;
            let elem = &reference.elem;
            call_args.push(quote_spanned! {valid::span_of(elem)=>
                <#elem as ::tool_core::__private::CallValue>::from_call(&__call)
            });
            continue;
        }
        if let Some(context) = tool
            .context
            .as_ref()
            .filter(|c| std::ptr::eq(c.param, param))
        {
            call_args.push(if context.by_ref {
                quote!(&this.context)
            } else {
                quote!(::tool_core::__private::Clone::clone(&this.context))
            });
            continue;
        }
        match &tool.form {
            Form::Args(_) => call_args.push(quote!(__args)),
            Form::Plain => {
                let binding = format_ident!("__arg{}", index);
                if let Some(field) = param.ident() {
                    let attrs = &param.field_attrs;
                    let ty = &param.ty;
                    let with = param_schema_with(ty, attrs);
                    fields.push(quote!(#(#attrs)* #with #field: #ty));
                    bindings.push(quote!(#field: #binding));
                }
                call_args.push(quote!(#binding));
            }
            Form::Empty => {}
        }
    }
    // The typed arguments: the hidden struct of plain parameters, the user's `#[args]` type, or
    // `NoArgs` for a tool without parameters. `start` reads them from an object or from text
    // (the one use of the type, so a type that is not `Deserialize` is reported once).
    let (args_struct, schema, args_ty, unpack) = match &tool.form {
        Form::Empty => (
            TokenStream::new(),
            quote!(::tool_core::__private::empty_schema),
            quote!(::tool_core::__private::NoArgs),
            quote!(let _ = __args;),
        ),
        Form::Plain => (
            quote! {
                #[derive(
                    ::tool_core::__private::serde::Deserialize,
                    ::tool_core::__private::schemars::JsonSchema,
                )]
                #[serde(crate = "::tool_core::__private::serde")]
                #[schemars(crate = "::tool_core::__private::schemars")]
                struct #args_ident {
                    #(#fields,)*
                }
            },
            quote!(::tool_core::__private::params_schema_for::<#args_ident>),
            quote!(#args_ident),
            quote!(let #args_ident { #(#bindings),* } = __args;),
        ),
        Form::Args(param) => {
            let ty = &param.ty;
            let span = valid::span_of(ty);
            (
                TokenStream::new(),
                quote_spanned!(span=> ::tool_core::__private::args_schema::<#ty>),
                quote_spanned!(span=> #ty),
                TokenStream::new(),
            )
        }
    };
    let output_span = match &tool.func.sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => tool.func.sig.ident.span(),
    };
    let output = quote_spanned! {output_span=>
        (&&&&::tool_core::__private::Output::new(__output)).tool_output()
    };
    // A tool that reads its call gets an empty context when it is called without one.
    let call = if takes_call {
        quote!(let __call = __call.unwrap_or_else(|| ::tool_core::CallContext::new("", #name));)
    } else {
        quote!(let _ = __call;)
    };
    // A context type that is not `Send + Sync + 'static` is reported once, on the type, by the
    // `context_value` check. This bound keeps the impl from reporting it again (the trait's
    // supertraits, the `Send` future): written through a lifetime it names, it is not a
    // trivially false bound to rustc, but an assumption under which the impl is checked.
    let assume = tool.context.as_ref().map(|context| {
        let held = context.held;
        quote! {
            where
                for<'__tool> <#held as ::tool_core::__private::Assume<'__tool>>::This:
                    ::tool_core::__private::Send + ::tool_core::__private::Sync + 'static
        }
    });
    // A body that never waits finishes when first polled: it is run at once, unboxed.
    let block = &tool.func.block;
    let execute = if never_waits(quote!(#block)) {
        quote!(execute_now)
    } else {
        quote!(execute)
    };
    // The function's own future, with its output turned into text by a closure: no `async`
    // block of ours around it, so no second state machine per tool. A tool that borrows from
    // its call owns the call in a block, since the call is a local of the closure below.
    let future = if takes_call {
        quote!(async move { #callee(#(#call_args),*).await })
    } else {
        quote!(#callee(#(#call_args),*))
    };
    let start_ident = format_ident!("__{}start", prefix);
    let start_fn = quote! {
        fn #start_ident<'__a>(
            this: &'__a #self_ty,
            source: ::tool_core::__private::Source<'_>,
            call: ::core::option::Option<::tool_core::CallContext>,
        ) -> ::tool_core::TextCall<'__a> #assume {
            ::tool_core::__private::start::<#args_ty, _, _>(
                #name,
                source,
                call,
                || ::tool_core::ExecutableTool::get_schema(this),
                move |__args, __call| {
                    #unpack
                    #call
                    use ::tool_core::__private::{
                        PlainOutput as _, ResultOutput as _, StringOutput as _,
                        ToolErrorOutput as _,
                    };
                    ::tool_core::__private::#execute(#future, |__output| #output)
                },
            )
        }
    };
    // `execute` and `execute_with` read an object; a tool that reads its call gets it through
    // `execute_with`, and an empty context through plain `execute`. `execute_with` is written
    // out for every tool, even one that ignores its call: the trait's default is an `async`
    // body of its own, a state machine compiled again for each tool type.
    let object_method = |method: TokenStream, param: TokenStream, call: TokenStream| {
        quote! {
            fn #method<'life0, 'async_trait>(
                &'life0 self,
                args: ::tool_core::JsonObject,
                #param
            ) -> ::tool_core::__private::ExecuteFuture<'async_trait>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                ::tool_core::__private::started(#start_ident(
                    self,
                    ::tool_core::__private::Source::Object(args),
                    #call,
                ))
            }
        }
    };
    let execute_with = object_method(
        quote!(execute_with),
        quote!(call: ::tool_core::CallContext,),
        quote!(::core::option::Option::Some(call)),
    );
    let execute_object = object_method(
        quote!(execute),
        TokenStream::new(),
        quote!(::core::option::Option::None),
    );
    let execute = quote! {
        #execute_object

        #execute_with

        fn execute_text<'__a>(
            &'__a self,
            text: &str,
            call: ::core::option::Option<::tool_core::CallContext>,
        ) -> ::tool_core::TextCall<'__a> {
            #start_ident(self, ::tool_core::__private::Source::Text(text), call)
        }

        fn execute_object(
            &self,
            args: ::tool_core::JsonObject,
            call: ::core::option::Option<::tool_core::CallContext>,
        ) -> ::tool_core::TextCall<'_> {
            #start_ident(self, ::tool_core::__private::Source::Object(args), call)
        }
    };
    let output_schema = output_schema(&tool.func.sig.output);
    let metadata = (!tool.metadata.is_empty() || output_schema.is_some()).then(|| {
        let calls = &tool.metadata;
        quote! {
            fn metadata(&self) -> ::tool_core::ToolMetadata {
                ::tool_core::ToolMetadata::new() #(#calls)* #output_schema
            }
        }
    });
    quote! {
        #args_struct

        #start_fn

        impl ::tool_core::ExecutableTool for #self_ty #assume {
            fn name(&self) -> &str {
                #name
            }

            fn get_schema(&self) -> ::tool_core::ChatTool {
                static SCHEMA: ::tool_core::__private::OnceLock<::tool_core::ChatTool> =
                    ::tool_core::__private::OnceLock::new();
                ::tool_core::__private::chat_tool(&SCHEMA, #name, &[#(#description),*], #schema)
            }

            #metadata

            #execute
        }
    }
}

/// The `#[schemars(with = ..)]` that takes a plain parameter's schema from
/// `__private::Param<T>`, so a type that is not `JsonSchema` gets the same error, on the same
/// tokens, as an `#[args]` type. Not for the scalars, which always are, nor when the parameter
/// names its own schema.
fn param_schema_with(ty: &syn::Type, attrs: &[syn::Attribute]) -> Option<TokenStream> {
    let own_schema = attrs.iter().any(|attr| {
        attr.path().is_ident("schemars")
            && attr.to_token_stream().into_iter().any(|token| {
                fn has_with(token: proc_macro2::TokenTree) -> bool {
                    match token {
                        proc_macro2::TokenTree::Ident(ident) => {
                            ident == "with" || ident == "schema_with"
                        }
                        proc_macro2::TokenTree::Group(group) => {
                            group.stream().into_iter().any(has_with)
                        }
                        _ => false,
                    }
                }
                has_with(token)
            })
    });
    if own_schema || never_an_object(ty) {
        return None;
    }
    let with = syn::LitStr::new(
        &format!("::tool_core::__private::Param<{}>", ty.to_token_stream()),
        valid::span_of(ty),
    );
    Some(quote!(#[schemars(with = #with)]))
}

/// Macros that expand to no await point of their own: an `.await` in their input is seen by
/// [`never_waits`] like any other.
const NON_WAITING_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "eprint",
    "eprintln",
    "format",
    "format_args",
    "matches",
    "panic",
    "print",
    "println",
    "stringify",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

/// Whether a function body can never wait: it holds no `.await`, and no macro call other than
/// [`NON_WAITING_MACROS`] written by their bare names (any other macro could expand to one).
pub(crate) fn never_waits(tokens: TokenStream) -> bool {
    use proc_macro2::TokenTree;
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    tokens.iter().enumerate().all(|(index, token)| match token {
        TokenTree::Group(group) => never_waits(group.stream()),
        TokenTree::Punct(dot) if dot.as_char() == '.' => !matches!(
            tokens.get(index + 1),
            Some(TokenTree::Ident(ident)) if ident == "await"
        ),
        TokenTree::Ident(name) => {
            let is_macro_call = matches!(
                (tokens.get(index + 1), tokens.get(index + 2)),
                (Some(TokenTree::Punct(bang)), Some(TokenTree::Group(_))) if bang.as_char() == '!'
            );
            let after_path = index > 0
                && matches!(&tokens[index - 1], TokenTree::Punct(colon) if colon.as_char() == ':');
            !is_macro_call || (!after_path && NON_WAITING_MACROS.contains(&&*name.to_string()))
        }
        _ => true,
    })
}

fn first_span(tokens: &TokenStream) -> Span {
    tokens
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |token| token.span())
}

/// Whether `ty` is text, a number, a `bool` or `()`, or a `Result` of one: a type whose schema
/// is never an object, so it has no output schema and the probe for one can be left out.
pub(crate) fn never_an_object(ty: &syn::Type) -> bool {
    const SCALARS: &[&str] = &[
        "String", "str", "bool", "char", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16",
        "u32", "u64", "u128", "usize", "f32", "f64",
    ];
    match ty {
        syn::Type::Tuple(tuple) => tuple.elems.is_empty(),
        syn::Type::Reference(reference) => never_an_object(&reference.elem),
        syn::Type::Paren(inner) => never_an_object(&inner.elem),
        syn::Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return false;
            };
            match &last.arguments {
                syn::PathArguments::None => SCALARS.contains(&&*last.ident.to_string()),
                syn::PathArguments::AngleBracketed(args) if last.ident == "Result" => {
                    matches!(args.args.first(), Some(syn::GenericArgument::Type(ok)) if never_an_object(ok))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// The `.output_schema(..)` metadata call for a return type that can be named outside the fn
/// (no `impl Trait`, no `Self`); the schema itself is picked by autoref specialization.
fn output_schema(output: &syn::ReturnType) -> Option<TokenStream> {
    let syn::ReturnType::Type(_, ty) = output else {
        return None;
    };
    fn nameable(tokens: TokenStream) -> bool {
        tokens.into_iter().all(|token| match token {
            proc_macro2::TokenTree::Ident(ident) => ident != "impl" && ident != "Self",
            proc_macro2::TokenTree::Group(group) => nameable(group.stream()),
            _ => true,
        })
    }
    if !nameable(quote!(#ty)) || never_an_object(ty) {
        return None;
    }
    let pick = quote_spanned! {ty.span()=>
        (&&&::tool_core::__private::OutputSchema::<#ty>::new()).output_schema()
    };
    Some(quote! {
        .output_schema({
            use ::tool_core::__private::{NoSchema as _, PlainSchema as _, ResultSchema as _};
            #pick
        })
    })
}
