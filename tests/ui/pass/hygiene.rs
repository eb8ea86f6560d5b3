//! The generated code names only `::tool_core` paths: none of the names below, which shadow the
//! prelude, may break it, and it triggers no lint.
#![deny(warnings, missing_docs, unused_qualifications)]
#![allow(dead_code)]

/// Declares, in the scope it is used in, types named like the prelude items generated code
/// could reach for; each tool below is in a scope where all of them are visible.
macro_rules! decoys {
    () => {
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
        struct Arc;
        struct Default;
    };
}

decoys!();

pub(crate) mod tools {
    //! Tools inside a module, beside their own decoys (a module does not see its parent's).

    use tool_core::{tool, toolbox};

    decoys!();

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

    /// A toolbox's state.
    pub(crate) struct Notes;

    #[toolbox]
    impl Notes {
        /// Count the notes.
        #[tool]
        async fn count(&self) -> u32 {
            0
        }
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
    let toolbox = std::sync::Arc::new(tools::Notes).tools();
    assert_eq!(toolbox.len(), 1);
    assert_eq!(toolbox[0].name(), "count");
}
