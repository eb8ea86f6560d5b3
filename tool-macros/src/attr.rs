//! The grammar of `#[tool(...)]` and of the parameter markers `#[context]` and `#[args]`.
//!
//! Parsing is strict: every key is a `custom_keyword`, an unknown or repeated key is an error
//! spanned on it, and parsing goes on after an error so that all of them are shown at once.

use proc_macro2::{Span, TokenStream};
use syn::{
    Attribute, Expr, LitBool, LitStr, Token,
    parse::{ParseStream, Parser},
};

use crate::errors::Errors;

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(description);
    syn::custom_keyword!(rename_struct);
    syn::custom_keyword!(title);
    syn::custom_keyword!(category);
    syn::custom_keyword!(icon);
    syn::custom_keyword!(enabled);
    syn::custom_keyword!(read_only);
    syn::custom_keyword!(destructive);
    syn::custom_keyword!(idempotent);
    syn::custom_keyword!(open_world);
    syn::custom_keyword!(sequential);
    syn::custom_keyword!(timeout);
    syn::custom_keyword!(needs_approval);
    syn::custom_keyword!(max_retries);
    syn::custom_keyword!(lenient);
    syn::custom_keyword!(defer_loading);
}

/// The keys `#[tool(...)]` accepts, for the unknown-key message.
const KEYS: &str = "`name`, `description`, `rename_struct`, `title`, `category`, `icon`, \
                    `enabled`, `read_only`, `destructive`, `idempotent`, `open_world`, `sequential`, \
                    `timeout`, `needs_approval`, `max_retries`, `lenient`, `defer_loading`";

/// A boolean argument, written `key` (true) or `key = true|false`.
#[derive(Clone, Copy)]
pub(crate) struct Flag {
    pub(crate) value: bool,
    pub(crate) span: Span,
}

/// The arguments of one `#[tool(...)]` attribute.
#[derive(Default)]
pub(crate) struct ToolArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<Expr>,
    pub(crate) rename_struct: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) category: Option<LitStr>,
    pub(crate) icon: Option<LitStr>,
    pub(crate) enabled: Option<LitBool>,
    pub(crate) read_only: Option<Flag>,
    pub(crate) destructive: Option<Flag>,
    pub(crate) idempotent: Option<Flag>,
    pub(crate) open_world: Option<Flag>,
    pub(crate) sequential: Option<Flag>,
    pub(crate) timeout: Option<LitStr>,
    pub(crate) needs_approval: Option<Flag>,
    pub(crate) max_retries: Option<syn::LitInt>,
    pub(crate) lenient: Option<Flag>,
    pub(crate) defer_loading: Option<Flag>,
    /// Whether every argument parsed; checks that depend on the arguments (the name, the
    /// description) are skipped otherwise, so a typo does not cause a cascade of errors.
    pub(crate) complete: bool,
}

impl ToolArgs {
    /// Parses the tokens inside `#[tool(...)]`, pushing every problem to `errors`.
    pub(crate) fn parse(tokens: TokenStream, errors: &mut Errors) -> Self {
        let mut args = Self {
            complete: true,
            ..Self::default()
        };
        let parser = |input: ParseStream<'_>| {
            while !input.is_empty() {
                if let Err(error) = args.parse_one(input) {
                    args.complete = false;
                    errors.push(error);
                    skip_to_comma(input);
                }
                if input.is_empty() {
                    break;
                }
                if let Err(error) = input.parse::<Token![,]>() {
                    args.complete = false;
                    errors.push(error);
                    skip_to_comma(input);
                    let _ = input.parse::<Option<Token![,]>>();
                }
            }
            Ok(())
        };
        if let Err(error) = parser.parse2(tokens) {
            args.complete = false;
            errors.push(error);
        }
        args
    }

    fn parse_one(&mut self, input: ParseStream<'_>) -> syn::Result<()> {
        let lookahead = input.lookahead1();
        if lookahead.peek(kw::name) {
            let key = input.parse::<kw::name>()?;
            set(&mut self.name, key.span, "name", string_value(input)?)
        } else if lookahead.peek(kw::description) {
            let key = input.parse::<kw::description>()?;
            input.parse::<Token![=]>()?;
            let value = description_value(input)?;
            set(&mut self.description, key.span, "description", value)
        } else if lookahead.peek(kw::rename_struct) {
            let key = input.parse::<kw::rename_struct>()?;
            set(
                &mut self.rename_struct,
                key.span,
                "rename_struct",
                string_value(input)?,
            )
        } else if lookahead.peek(kw::title) {
            let key = input.parse::<kw::title>()?;
            set(&mut self.title, key.span, "title", string_value(input)?)
        } else if lookahead.peek(kw::category) {
            let key = input.parse::<kw::category>()?;
            set(
                &mut self.category,
                key.span,
                "category",
                string_value(input)?,
            )
        } else if lookahead.peek(kw::icon) {
            let key = input.parse::<kw::icon>()?;
            set(&mut self.icon, key.span, "icon", string_value(input)?)
        } else if lookahead.peek(kw::enabled) {
            let key = input.parse::<kw::enabled>()?;
            if !input.peek(Token![=]) {
                return Err(syn::Error::new(
                    key.span,
                    "`enabled` needs a value; write `enabled = false` to register the tool disabled",
                ));
            }
            input.parse::<Token![=]>()?;
            set(&mut self.enabled, key.span, "enabled", input.parse()?)
        } else if lookahead.peek(kw::read_only) {
            let key = input.parse::<kw::read_only>()?;
            set(
                &mut self.read_only,
                key.span,
                "read_only",
                flag(input, key.span)?,
            )
        } else if lookahead.peek(kw::destructive) {
            let key = input.parse::<kw::destructive>()?;
            let value = flag(input, key.span)?;
            set(&mut self.destructive, key.span, "destructive", value)
        } else if lookahead.peek(kw::idempotent) {
            let key = input.parse::<kw::idempotent>()?;
            let value = flag(input, key.span)?;
            set(&mut self.idempotent, key.span, "idempotent", value)
        } else if lookahead.peek(kw::open_world) {
            let key = input.parse::<kw::open_world>()?;
            let value = flag(input, key.span)?;
            set(&mut self.open_world, key.span, "open_world", value)
        } else if lookahead.peek(kw::sequential) {
            let key = input.parse::<kw::sequential>()?;
            let value = flag(input, key.span)?;
            set(&mut self.sequential, key.span, "sequential", value)
        } else if lookahead.peek(kw::timeout) {
            let key = input.parse::<kw::timeout>()?;
            set(&mut self.timeout, key.span, "timeout", string_value(input)?)
        } else if lookahead.peek(kw::needs_approval) {
            let key = input.parse::<kw::needs_approval>()?;
            let value = flag(input, key.span)?;
            set(&mut self.needs_approval, key.span, "needs_approval", value)
        } else if lookahead.peek(kw::max_retries) {
            let key = input.parse::<kw::max_retries>()?;
            input.parse::<Token![=]>()?;
            let value: syn::LitInt = input.parse()?;
            value.base10_parse::<u32>().map_err(|_| {
                syn::Error::new(
                    value.span(),
                    "`max_retries` takes a whole number of retries, such as `max_retries = 3`",
                )
            })?;
            set(&mut self.max_retries, key.span, "max_retries", value)
        } else if lookahead.peek(kw::lenient) {
            let key = input.parse::<kw::lenient>()?;
            let value = flag(input, key.span)?;
            set(&mut self.lenient, key.span, "lenient", value)
        } else if lookahead.peek(kw::defer_loading) {
            let key = input.parse::<kw::defer_loading>()?;
            let value = flag(input, key.span)?;
            set(&mut self.defer_loading, key.span, "defer_loading", value)
        } else if input.peek(syn::Ident) {
            let key: syn::Ident = input.parse()?;
            let hint = closest(&key.to_string()).map_or_else(
                || format!("the arguments are {KEYS}"),
                |known| format!("did you mean `{known}`?"),
            );
            Err(syn::Error::new(
                key.span(),
                format!("unknown `#[tool]` argument `{key}`; {hint}"),
            ))
        } else {
            Err(lookahead.error())
        }
    }
}

/// The known key closest to a misspelt one, when it is close enough to be a typo.
fn closest(key: &str) -> Option<&'static str> {
    KEYS.split(", ")
        .map(|known| known.trim_matches('`'))
        .map(|known| (edit_distance(key, known), known))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, known)| known)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

fn set<T>(slot: &mut Option<T>, span: Span, key: &str, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            span,
            format!("duplicate `#[tool]` argument `{key}`; give it once"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

fn string_value(input: ParseStream<'_>) -> syn::Result<LitStr> {
    input.parse::<Token![=]>()?;
    input.parse()
}

/// `description` takes a string literal or a macro producing one (`include_str!`, `concat!`).
fn description_value(input: ParseStream<'_>) -> syn::Result<Expr> {
    let value: Expr = input.parse()?;
    match &value {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(_),
            ..
        })
        | Expr::Macro(_) => Ok(value),
        _ => Err(syn::Error::new_spanned(
            value,
            "`description` takes a string literal or a macro such as `include_str!(\"..\")`",
        )),
    }
}

fn flag(input: ParseStream<'_>, span: Span) -> syn::Result<Flag> {
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        let value: LitBool = input.parse()?;
        Ok(Flag {
            value: value.value,
            span,
        })
    } else {
        Ok(Flag { value: true, span })
    }
}

fn skip_to_comma(input: ParseStream<'_>) {
    while !input.is_empty() && !input.peek(Token![,]) {
        if input.parse::<proc_macro2::TokenTree>().is_err() {
            break;
        }
    }
}

/// What a parameter attribute means to `#[tool]`.
pub(crate) enum ParamAttr {
    /// `#[context]`: the value the generated tool holds.
    Context(Span),
    /// `#[args]`: the parameter takes the whole argument object.
    Args(Span),
    /// `#[doc]`, `#[serde(..)]`, `#[schemars(..)]`: moved to the hidden arguments struct.
    Field,
    /// Anything else stays on the function's parameter.
    Other,
}

impl ParamAttr {
    /// Classifies a parameter attribute; `#[context]` and `#[args]` take no arguments.
    pub(crate) fn of(attr: &Attribute, errors: &mut Errors) -> Self {
        let path = attr.path();
        let marker = if path.is_ident("context") {
            Some(Self::Context(path_span(attr)))
        } else if path.is_ident("args") {
            Some(Self::Args(path_span(attr)))
        } else {
            None
        };
        if let Some(marker) = marker {
            if let Err(error) = attr.meta.require_path_only() {
                errors.push(syn::Error::new(
                    error.span(),
                    "parameter markers take no arguments; write `#[context]` or `#[args]`",
                ));
            }
            return marker;
        }
        if path.is_ident("doc") || path.is_ident("serde") || path.is_ident("schemars") {
            Self::Field
        } else {
            Self::Other
        }
    }
}

fn path_span(attr: &Attribute) -> Span {
    attr.path()
        .get_ident()
        .map_or_else(Span::call_site, syn::Ident::span)
}

/// Whether `attr` is `#[tool]` or `#[tool(..)]` (under any path ending in `tool`), as marks a
/// method inside a `#[toolbox]` impl.
pub(crate) fn is_tool_attr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "tool")
}

/// The tokens inside `#[tool(...)]`, empty for a bare `#[tool]`.
pub(crate) fn tool_attr_tokens(attr: &Attribute) -> syn::Result<TokenStream> {
    match &attr.meta {
        syn::Meta::Path(_) => Ok(TokenStream::new()),
        syn::Meta::List(list) => Ok(list.tokens.clone()),
        syn::Meta::NameValue(meta) => Err(syn::Error::new_spanned(
            meta,
            "`#[tool]` takes its arguments in parentheses: `#[tool(name = \"...\")]`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelt_keys_suggest_the_closest_one() {
        assert_eq!(closest("categroy"), Some("category"));
        assert_eq!(closest("descripton"), Some("description"));
        assert_eq!(closest("readonly"), Some("read_only"));
        assert_eq!(closest("colour"), None);
        assert_eq!(closest("lenent"), Some("lenient"));
    }

    #[test]
    fn every_error_of_an_attribute_is_collected() {
        let mut errors = Errors::default();
        let args = ToolArgs::parse(
            quote::quote!(
                name = "a",
                name = "b",
                colour = "red",
                timeout = 5,
                read_only
            ),
            &mut errors,
        );
        assert_eq!(errors.count(), 3);
        assert!(!args.complete);
        assert_eq!(args.name.map(|name| name.value()).as_deref(), Some("a"));
        assert!(args.read_only.is_some_and(|flag| flag.value));
    }
}
