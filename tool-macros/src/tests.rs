//! Expansion snapshots: the code generated for a few representative tools, pretty-printed, so a
//! change in the output is seen in review.

use proc_macro2::TokenStream;
use quote::quote;

use crate::expand;

fn pretty(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(error) => format!("unparsable output ({error}):\n{tokens}"),
    }
}

#[test]
fn plain_parameters_with_metadata() {
    let output = expand::tool(
        quote!(category = "math", read_only, timeout = "30s", lenient),
        quote! {
            /// Add two integers.
            pub async fn add(
                /// The first addend
                a: i64,
                /// The second addend
                #[serde(default)]
                b: i64,
            ) -> i64 {
                a + b
            }
        },
    );
    insta::assert_snapshot!(pretty(output));
}

#[test]
fn typed_arguments_struct() {
    let output = expand::tool(
        TokenStream::new(),
        quote! {
            /// Get the current weather for a city.
            #[doc = include_str!("weather.md")]
            async fn get_weather(#[args] args: WeatherArgs) -> Result<String, WeatherError> {
                fetch(args).await
            }
        },
    );
    insta::assert_snapshot!(pretty(output));
}

#[test]
fn context_parameter() {
    let output = expand::tool(
        quote!(name = "save_session_context"),
        quote! {
            /// Save the session.
            pub(crate) async fn save(#[context] ctx: &ToolContext, reason: String) -> String {
                ctx.save(reason)
            }
        },
    );
    insta::assert_snapshot!(pretty(output));
}

#[test]
fn toolbox_impl() {
    let output = expand::toolbox(
        TokenStream::new(),
        quote! {
            impl Weather {
                /// Today's weather.
                #[tool]
                async fn today(&self, city: String) -> String {
                    self.lookup(city)
                }

                /// No parameters.
                #[tool(name = "stations")]
                async fn list_stations(&self) -> Vec<String> {
                    self.stations.clone()
                }

                fn lookup(&self, city: String) -> String {
                    city
                }
            }
        },
    );
    insta::assert_snapshot!(pretty(output));
}

#[test]
fn broken_input_keeps_the_function_beside_every_error() {
    let output = expand::tool(
        quote!(colour = "red", name = "a b"),
        quote! {
            fn add(#[context] a: i64, /** doc */ b: i64) -> i64 {
                a + b
            }
        },
    );
    insta::assert_snapshot!(pretty(output));
}

#[test]
fn call_context_parameter_and_approval() {
    let output = expand::tool(
        quote!(needs_approval, max_retries = 1),
        quote! {
            /// Publish a note for the user this call serves.
            async fn publish(call: &CallContext, text: String) -> Result<String, ToolError> {
                let user: &User = call.dep()?;
                Ok(format!("{text} for {}", user.0))
            }
        },
    );
    insta::assert_snapshot!(pretty(output));
}

#[test]
fn a_syntax_error_in_the_body_adds_no_error_and_keeps_the_tool() {
    let output = expand::tool(
        TokenStream::new(),
        quote! {
            /// Add two integers.
            async fn add(a: i64, b: i64) -> i64 {
                let sum = a + ;
                sum
            }
        },
    )
    .to_string();
    assert!(!output.contains("compile_error"), "{output}");
    assert!(
        output.contains("impl :: tool_core :: ExecutableTool for __tool_add :: Add"),
        "{output}"
    );
    // The body is emitted as written, for rustc to report the error in it.
    assert!(output.contains("let sum = a + ;"), "{output}");
}

#[test]
fn a_function_whose_signature_does_not_parse_gets_no_error_of_ours_and_a_stub() {
    let output = expand::tool(
        TokenStream::new(),
        quote! {
            /// Add two integers.
            pub async fn add(#[context] a: i64 b: i64) -> i64 {
                a + b
            }
        },
    )
    .to_string();
    assert!(!output.contains("compile_error"), "{output}");
    assert!(output.contains("pub struct Add ;"), "{output}");
    // `#[context]` would be an unknown attribute on a plain function.
    assert!(!output.contains("context ]"), "{output}");
}

#[test]
fn an_item_that_is_not_a_function_is_one_error() {
    let output = expand::tool(
        TokenStream::new(),
        quote!(
            struct Add;
        ),
    )
    .to_string();
    assert_eq!(output.matches("compile_error").count(), 1, "{output}");
    assert!(
        output.contains("`#[tool]` goes on an `async fn`"),
        "{output}"
    );
}

#[test]
fn a_parameter_named_args_without_the_marker_is_a_plain_parameter() {
    let output = expand::tool(
        TokenStream::new(),
        quote! {
            /// Shout.
            async fn shout(args: String) -> String {
                args
            }
        },
    )
    .to_string();
    assert!(
        output.contains("struct __Args { args : String , }"),
        "{output}"
    );
    assert!(!output.contains("narrow_args"), "{output}");
}

#[test]
fn a_body_waits_when_it_awaits_or_calls_an_unknown_macro() {
    use quote::quote;
    assert!(crate::expand::never_waits(quote!({
        let x = format!("{}", a);
        vec![x].len() + 1
    })));
    assert!(!crate::expand::never_waits(quote!({ helper().await })));
    assert!(!crate::expand::never_waits(quote!({
        format!("{}", helper().await)
    })));
    assert!(!crate::expand::never_waits(quote!({ tokio::join!(a, b) })));
    assert!(!crate::expand::never_waits(quote!({ join!(a, b) })));
    assert!(!crate::expand::never_waits(quote!({
        std::format!("{}", 1)
    })));
    assert!(crate::expand::never_waits(quote!({ a != b })));
}

#[test]
fn only_text_numbers_bools_and_unit_skip_the_output_schema_probe() {
    let never = |ty: &str| crate::expand::never_an_object(&syn::parse_str(ty).unwrap());
    for ty in [
        "String",
        "&'static str",
        "()",
        "i64",
        "f64",
        "bool",
        "Result<String, MyError>",
    ] {
        assert!(never(ty), "{ty}");
    }
    for ty in [
        "Forecast",
        "Result<Forecast, MyError>",
        "Vec<String>",
        "serde_json::Value",
        "Option<String>",
    ] {
        assert!(!never(ty), "{ty}");
    }
}
