//! The generated code names only `::tool_core` paths: none of the names below, which shadow the
//! prelude, may break it, and it triggers no lint.
#![deny(warnings, missing_docs, unused_qualifications)]
#![allow(dead_code)]

struct Result;
struct Ok;
struct Err;
struct Option;
struct Some;
struct None;
struct Box;
struct String;
struct Vec;
struct Send;
struct Sync;
struct Clone;

pub(crate) mod tools {
    //! Tools inside a module.

    use tool_core::tool;

    /// Add two integers.
    #[tool]
    pub(crate) async fn add(
        /// The first addend
        a: i64,
        /// The second addend
        b: i64,
    ) -> i64 {
        a + b
    }

    /// Shared state.
    pub(crate) struct State;

    /// A tool holding state.
    #[tool]
    pub(crate) async fn stateful(#[context] state: &State) -> bool {
        let _ = state;
        true
    }
}

fn main() {
    use tool_core::{ExecutableTool, tool};

    /// A tool inside a function body.
    #[tool]
    async fn inner(text: std::string::String) -> std::result::Result<std::string::String, std::fmt::Error> {
        std::result::Result::Ok(text)
    }

    assert_eq!(Inner.name(), "inner");
    assert_eq!(tools::Add.name(), "add");
    assert_eq!(tools::Stateful::new(tools::State).name(), "stateful");
}
