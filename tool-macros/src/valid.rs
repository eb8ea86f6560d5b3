//! The rules a tool must follow, checked all at once, and the validated model `expand` reads.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::{Ident, LitStr, Type, spanned::Spanned};

use crate::{
    ast::{DocPart, Param, ToolFn},
    attr::{Flag, ToolArgs},
    errors::Errors,
};

/// Where a tool function lives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A free function, or an associated function outside a `#[toolbox]`.
    Free,
    /// A method of a `#[toolbox]` impl: `&self` is the state.
    Toolbox,
}

/// A tool that passed every check.
pub(crate) struct Tool<'a> {
    pub(crate) func: &'a ToolFn,
    /// The name the model calls.
    pub(crate) name: String,
    /// The span the name came from (the fn's name or the `name = ".."` literal).
    pub(crate) name_span: Span,
    /// The generated type's name.
    pub(crate) type_ident: Ident,
    /// The description's parts, joined at run time.
    pub(crate) description: Vec<TokenStream>,
    /// `ToolMetadata` builder calls, such as `.category("math")`.
    pub(crate) metadata: Vec<TokenStream>,
    pub(crate) form: Form<'a>,
    /// The `#[context]` parameter's index in `func.params`.
    pub(crate) context: Option<Context<'a>>,
}

/// How the model's arguments reach the function.
pub(crate) enum Form<'a> {
    /// No parameters besides the context: the schema is an empty object.
    Empty,
    /// Plain parameters, gathered into a hidden arguments struct.
    Plain,
    /// The `#[args]` parameter takes the whole argument object; its type is the arguments
    /// struct.
    Args(&'a Param),
}

/// The `#[context]` parameter.
pub(crate) struct Context<'a> {
    pub(crate) param: &'a Param,
    /// The type the tool holds: `T` for `&T`, the parameter's type otherwise.
    pub(crate) held: &'a Type,
    /// Whether the function takes it by reference.
    pub(crate) by_ref: bool,
}

/// Checks `func` against every rule, returning the validated tool when all pass.
pub(crate) fn tool<'a>(
    func: &'a ToolFn,
    args: &ToolArgs,
    place: Place,
    errors: &mut Errors,
) -> Option<Tool<'a>> {
    let before = errors.count();
    signature(func, place, errors);
    let context = context(func, place, errors);
    let form = form(func, errors);
    let (name, name_span) = name(func, args, errors);
    let type_ident = type_ident(func, args, errors);
    let description = if args.complete {
        description(func, args, errors)
    } else {
        Vec::new()
    };
    let metadata = metadata(args, errors);
    if errors.count() != before {
        return None;
    }
    Some(Tool {
        func,
        name,
        name_span,
        type_ident: type_ident?,
        description,
        metadata,
        form: form?,
        context,
    })
}

fn signature(func: &ToolFn, place: Place, errors: &mut Errors) {
    let sig = &func.sig;
    if sig.asyncness.is_none() {
        errors.spanned(
            sig.fn_token,
            "`#[tool]` functions must be `async`; add `async` before `fn`",
        );
    }
    if let Some(constness) = sig.constness {
        errors.spanned(
            constness,
            "`#[tool]` functions cannot be `const`; remove `const`",
        );
    }
    if let Some(unsafety) = sig.unsafety {
        errors.spanned(
            unsafety,
            "`#[tool]` functions cannot be `unsafe`, since the model calls them; remove `unsafe` \
             and use an `unsafe` block inside",
        );
    }
    if let Some(abi) = &sig.abi {
        errors.spanned(abi, "`#[tool]` functions cannot have an ABI; remove it");
    }
    if let Some(variadic) = &sig.variadic {
        errors.spanned(variadic, "`#[tool]` functions cannot be variadic");
    }
    if !sig.generics.params.is_empty() {
        errors.spanned(
            &sig.generics,
            "`#[tool]` functions cannot be generic, since the model's arguments need one \
             concrete type; remove the generic parameters and use concrete types",
        );
    }
    if let Some(where_clause) = &sig.generics.where_clause {
        errors.spanned(
            where_clause,
            "`#[tool]` functions cannot have a `where` clause; use concrete types",
        );
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        if contains_impl_trait(ty) {
            errors.spanned(
                ty,
                "`#[tool]` functions cannot return `impl Trait`; name the concrete type",
            );
        }
    }
    match (place, &func.receiver) {
        (Place::Free, Some(receiver)) => errors.spanned(
            receiver,
            "`self` is only allowed in `#[tool]` methods of a `#[toolbox]` impl; add \
             `#[toolbox]` to the `impl` block, or make the state a `#[context]` parameter",
        ),
        (Place::Toolbox, None) => errors.spanned(
            &sig.ident,
            "`#[tool]` methods of a `#[toolbox]` take `&self`, the toolbox's state; add `&self` \
             as the first parameter",
        ),
        (Place::Toolbox, Some(receiver))
            if receiver.reference.is_none() || receiver.mutability.is_some() =>
        {
            errors.spanned(
                receiver,
                "`#[tool]` methods take `&self`, since the tools share the state; use `&self` \
                 and interior mutability (`Mutex`) for state that changes",
            );
        }
        _ => {}
    }
    for param in &func.params {
        if contains_impl_trait(&param.ty) {
            errors.spanned(
                &param.ty,
                "`impl Trait` cannot be the type of a `#[tool]` parameter, since the model's \
                 arguments need one concrete type; name the concrete type",
            );
        }
    }
}

fn contains_impl_trait(ty: &Type) -> bool {
    match ty {
        Type::ImplTrait(_) => true,
        Type::Reference(reference) => contains_impl_trait(&reference.elem),
        Type::Paren(paren) => contains_impl_trait(&paren.elem),
        Type::Group(group) => contains_impl_trait(&group.elem),
        Type::Slice(slice) => contains_impl_trait(&slice.elem),
        Type::Array(array) => contains_impl_trait(&array.elem),
        Type::Tuple(tuple) => tuple.elems.iter().any(contains_impl_trait),
        Type::Path(path) => path.path.segments.iter().any(|segment| {
            matches!(&segment.arguments, syn::PathArguments::AngleBracketed(generics)
                if generics.args.iter().any(|arg| matches!(arg, syn::GenericArgument::Type(ty) if contains_impl_trait(ty))))
        }),
        _ => false,
    }
}

fn context<'a>(func: &'a ToolFn, place: Place, errors: &mut Errors) -> Option<Context<'a>> {
    let mut found: Option<Context<'a>> = None;
    for param in &func.params {
        let Some(span) = param.context else {
            continue;
        };
        if place == Place::Toolbox {
            errors.push(syn::Error::new(
                span,
                "`#[context]` is not used in a `#[toolbox]`, where `&self` is the state; remove \
                 it and reach the value through `self`",
            ));
            continue;
        }
        if found.is_some() {
            errors.push(syn::Error::new(
                span,
                "only one parameter can be `#[context]`; gather the values in one struct and \
                 take that",
            ));
            continue;
        }
        if param.args.is_some() {
            errors.push(syn::Error::new(
                span,
                "a parameter cannot be both `#[context]` and `#[args]`; keep one",
            ));
        }
        let (held, by_ref) = match &*param.ty {
            Type::Reference(reference) => {
                if let Some(mutability) = reference.mutability {
                    errors.spanned(
                        mutability,
                        "a `#[context]` parameter cannot be `&mut`, since calls may run at the \
                         same time; take `&T` and use interior mutability (`Mutex`)",
                    );
                }
                (&*reference.elem, true)
            }
            ty => (ty, false),
        };
        found = Some(Context {
            param,
            held,
            by_ref,
        });
    }
    found
}

fn form<'a>(func: &'a ToolFn, errors: &mut Errors) -> Option<Form<'a>> {
    let mut ok = true;
    for param in &func.params {
        if let Some(reference) = param.call_value() {
            if let Some(mutability) = reference.mutability {
                ok = false;
                errors.spanned(
                    mutability,
                    "a parameter filled from the call is shared, so it cannot be `&mut`; take \
                     `&CallContext`",
                );
            }
        }
    }
    let inputs: Vec<&Param> = func
        .params
        .iter()
        .filter(|param| param.context.is_none() && param.call_value().is_none())
        .collect();
    let marked: Vec<&Param> = inputs
        .iter()
        .copied()
        .filter(|param| param.args.is_some())
        .collect();
    if !ok {
        return None;
    }
    // Only `#[args]` selects the whole-object form: a parameter's name never does, so
    // `args: String` is a plain string argument named `args`.
    let whole = match marked.as_slice() {
        [] => None,
        [one] => Some(*one),
        [_, rest @ ..] => {
            for param in rest {
                if let Some(span) = param.args {
                    errors.push(syn::Error::new(
                        span,
                        "only one parameter can be `#[args]`; it takes the whole argument object",
                    ));
                }
            }
            return None;
        }
    };
    if let Some(whole) = whole {
        let mut ok = true;
        for param in &inputs {
            if !std::ptr::eq(*param, whole) {
                ok = false;
                errors.spanned(
                    &param.pat,
                    "a `#[tool]` that takes its arguments as one `#[args]` struct cannot take \
                     other parameters; move this one into the arguments struct",
                );
            }
        }
        return ok.then_some(Form::Args(whole));
    }
    for param in &inputs {
        if param.ident().is_none() {
            ok = false;
            errors.spanned(
                &param.pat,
                "`#[tool]` parameters must be plain names, since each becomes a named argument; \
                 write `name: Type`, or take a struct with `#[args]`",
            );
        }
    }
    if !ok {
        None
    } else if inputs.is_empty() {
        Some(Form::Empty)
    } else {
        Some(Form::Plain)
    }
}

fn name(func: &ToolFn, args: &ToolArgs, errors: &mut Errors) -> (String, Span) {
    let (name, span) = match &args.name {
        Some(name) => (name.value(), name.span()),
        None => (unraw(&func.sig.ident), func.sig.ident.span()),
    };
    let problem = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.chars().count() > 64 {
        Some(format!(
            "it is {} characters long, and at most 64 are allowed",
            name.chars().count()
        ))
    } else {
        name.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
            .map(|c| format!("{c:?} is not allowed"))
    };
    if let Some(problem) = problem {
        let fix = if args.name.is_some() {
            "use only ASCII letters, digits, `_` and `-`, at most 64 of them"
        } else {
            "rename the function or set `#[tool(name = \"...\")]` with only ASCII letters, \
             digits, `_` and `-`"
        };
        errors.push(syn::Error::new(
            span,
            format!("invalid tool name `{name}`: {problem}; {fix}"),
        ));
    }
    (name, span)
}

fn type_ident(func: &ToolFn, args: &ToolArgs, errors: &mut Errors) -> Option<Ident> {
    match &args.rename_struct {
        Some(lit) => match syn::parse_str::<Ident>(&lit.value()) {
            Ok(ident) => Some(Ident::new(&ident.to_string(), lit.span())),
            Err(_) => {
                errors.spanned(
                    lit,
                    "`rename_struct` must be a type name, such as `rename_struct = \"WeatherTool\"`",
                );
                None
            }
        },
        None => Some(Ident::new(
            &pascal_case(&unraw(&func.sig.ident)),
            func.sig.ident.span(),
        )),
    }
}

/// The name of the type a broken tool's stub takes: the one `type_ident` would give, or the
/// function's name in PascalCase when `rename_struct` is itself the mistake.
pub(crate) fn fallback_type_ident(func: &ToolFn, args: &ToolArgs) -> Ident {
    type_ident(func, args, &mut Errors::default())
        .unwrap_or_else(|| Ident::new(&pascal_case(&unraw(&func.sig.ident)), func.sig.ident.span()))
}

fn description(func: &ToolFn, args: &ToolArgs, errors: &mut Errors) -> Vec<TokenStream> {
    if let Some(description) = &args.description {
        if let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(text),
            ..
        }) = description
        {
            if text.value().trim().is_empty() {
                errors.spanned(
                    text,
                    "the `description` is empty; say what the tool does, for the model",
                );
            }
        }
        return vec![description.to_token_stream()];
    }
    let blank = func.docs.iter().all(|part| match part {
        DocPart::Text(text) => text.trim().is_empty(),
        DocPart::Expr(_) => false,
    });
    if blank {
        errors.spanned(
            &func.sig.ident,
            "`#[tool]` functions need a description for the model; add a doc comment \
             (`/// What the tool does.`) or `#[tool(description = \"...\")]`",
        );
    }
    func.docs
        .iter()
        .map(|part| match part {
            DocPart::Text(text) => LitStr::new(text, Span::call_site()).to_token_stream(),
            DocPart::Expr(expr) => expr.to_token_stream(),
        })
        .collect()
}

fn metadata(args: &ToolArgs, errors: &mut Errors) -> Vec<TokenStream> {
    let mut calls = Vec::new();
    let mut text = |key: &str, value: &Option<LitStr>| {
        if let Some(value) = value {
            let method = Ident::new(key, value.span());
            calls.push(quote::quote!(.#method(#value)));
        }
    };
    text("title", &args.title);
    text("category", &args.category);
    text("icon", &args.icon);
    if let Some(enabled) = &args.enabled {
        if !enabled.value {
            calls.push(quote::quote!(.default_enabled(false)));
        }
    }
    let mut flag = |key: &str, value: &Option<Flag>| {
        if let Some(flag) = value {
            let method = Ident::new(key, flag.span);
            let value = flag.value;
            calls.push(quote::quote!(.#method(#value)));
        }
    };
    flag("read_only", &args.read_only);
    flag("destructive", &args.destructive);
    flag("idempotent", &args.idempotent);
    flag("open_world", &args.open_world);
    // Both values are kept: `lenient = false` keeps a tool strict in a lenient registry.
    flag("lenient_arguments", &args.lenient);
    flag("defer_loading", &args.defer_loading);
    if let Some(sequential) = &args.sequential {
        if sequential.value {
            calls.push(quote::quote!(.sequential(true)));
        }
    }
    if let Some(needs_approval) = &args.needs_approval {
        if needs_approval.value {
            calls.push(quote::quote!(.needs_approval(true)));
        }
    }
    if let Some(retries) = &args.max_retries {
        let retries = retries.base10_parse::<u32>().unwrap_or_default();
        calls.push(quote::quote!(.max_retries(#retries)));
    }
    if let Some(timeout) = &args.timeout {
        match parse_duration(&timeout.value()) {
            Some(millis) => calls.push(quote::quote!(
                .timeout(::tool_core::__private::Duration::from_millis(#millis))
            )),
            None => errors.spanned(
                timeout,
                format!(
                    "invalid `timeout` {:?}; write a whole number with a unit: `\"500ms\"`, \
                     `\"30s\"`, `\"5m\"` or `\"1h\"`",
                    timeout.value()
                ),
            ),
        }
    }
    calls
}

/// `"500ms"`, `"30s"`, `"5m"`, `"1h"` as milliseconds; `None` when malformed or zero.
pub(crate) fn parse_duration(text: &str) -> Option<u64> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let number: u64 = digits.parse().ok()?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    number.checked_mul(scale).filter(|millis| *millis > 0)
}

/// The identifier without `r#`.
pub(crate) fn unraw(ident: &Ident) -> String {
    let text = ident.to_string();
    text.strip_prefix("r#").map_or(text.clone(), str::to_owned)
}

/// `get_weather` → `GetWeather`.
pub(crate) fn pascal_case(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

/// Reports tools of one toolbox that share a name, on the later one.
pub(crate) fn unique_names(tools: &[Tool<'_>], errors: &mut Errors) {
    for (index, tool) in tools.iter().enumerate() {
        if let Some(first) = tools[..index].iter().find(|other| other.name == tool.name) {
            errors.push(syn::Error::new(
                tool.name_span,
                format!(
                    "duplicate tool name `{}` in this `#[toolbox]` (`{}` has it too); give one \
                     of them another name with `#[tool(name = \"...\")]`",
                    tool.name, first.func.sig.ident
                ),
            ));
        }
    }
}

/// The span of a type, for bound checks placed on the user's tokens.
pub(crate) fn span_of(ty: &Type) -> Span {
    ty.span()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration("500ms"), Some(500));
        assert_eq!(parse_duration("30s"), Some(30_000));
        assert_eq!(parse_duration("2m"), Some(120_000));
        assert_eq!(parse_duration("1h"), Some(3_600_000));
        assert_eq!(parse_duration("30"), None);
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("1.5s"), None);
        assert_eq!(parse_duration("s"), None);
    }

    #[test]
    fn names_become_pascal_case() {
        assert_eq!(pascal_case("get_weather"), "GetWeather");
        assert_eq!(pascal_case("add"), "Add");
        assert_eq!(pascal_case("read_file_2"), "ReadFile2");
        assert_eq!(pascal_case("_private__tool"), "PrivateTool");
    }
}
