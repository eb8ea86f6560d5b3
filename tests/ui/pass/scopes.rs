//! Tools in a function body, with a context type of that body, and tools of every visibility,
//! named from where their visibility says they are seen.
#![deny(warnings)]

use tool_core::{ExecutableTool, tool};

mod outer {
    pub(crate) mod inner {
        use tool_core::tool;

        /// Seen in `outer`.
        #[tool]
        pub(super) async fn up_one() -> u8 {
            1
        }

        /// Seen in `inner` only.
        #[tool]
        pub(self) async fn here(#[context] base: &u8) -> u8 {
            *base
        }

        /// Seen in the crate.
        #[tool]
        pub(in crate::outer) async fn in_outer(#[context] base: u8) -> u8 {
            base
        }

        pub(crate) fn here_name() -> String {
            use tool_core::ExecutableTool;
            Here::new(2).name().to_owned()
        }
    }

    pub(crate) fn names() -> [String; 3] {
        use tool_core::ExecutableTool;
        [
            inner::UpOne.name().to_owned(),
            inner::here_name(),
            inner::InOuter::new(3).name().to_owned(),
        ]
    }
}

fn main() {
    /// A value of this function body.
    struct Cap(u8);

    /// Read the limit.
    #[tool]
    async fn limit(#[context] limit: &Cap) -> u8 {
        limit.0
    }

    let tool = Limit::new(Cap(4));
    assert_eq!(tool.name(), "limit");
    assert_eq!(outer::names(), ["up_one", "here", "in_outer"]);
}
