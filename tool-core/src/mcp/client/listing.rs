//! Reading a server's tool list within bounds.
//!
//! A server's list is untrusted input: its cursor may never end, it may name a tool twice, it
//! may be longer than any model can use. [`list_tools`] reads it page by page and guarantees
//! that it sends at most `max_tools + 1` requests, that the list it returns names each remote
//! tool once (the first definition wins) and holds at most `max_tools` tools. The caller bounds
//! the time it waits.

use std::collections::HashSet;

use rmcp::{
    ServiceError,
    model::{PaginatedRequestParams, Tool},
    service::{Peer, RoleClient},
};

/// A tool list as it is used, and what was left out of it.
#[derive(Debug, Default)]
pub(super) struct Listed {
    /// Each remote tool once, in the server's order, at most `max_tools` of them.
    pub(super) tools: Vec<Tool>,
    /// The names the server listed more than once (their later definitions were left out).
    pub(super) duplicates: Vec<String>,
    /// Whether the list was longer than `max_tools` and was cut.
    pub(super) cut: bool,
}

/// Why a tool list could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum ListError {
    /// A request failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// The cursor had not ended after so many pages.
    #[error("the list did not end after {pages} pages (its cursor goes on)")]
    EndlessCursor {
        /// How many pages were read.
        pages: usize,
    },
}

/// Reads the server's tool list; see the [module docs](self).
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
    max_tools: usize,
) -> Result<Listed, ListError> {
    let pages = max_tools.saturating_add(1);
    let mut listed = Listed::default();
    let mut seen = HashSet::new();
    let mut cursor = None;
    for _ in 0..pages {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await?;
        listed.add(page.tools, &mut seen, max_tools);
        if listed.cut {
            return Ok(listed);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(listed),
        }
    }
    Err(ListError::EndlessCursor { pages })
}

impl Listed {
    /// Adds a page: new names are kept up to `max_tools`, repeated ones noted.
    fn add(&mut self, tools: Vec<Tool>, seen: &mut HashSet<String>, max_tools: usize) {
        for tool in tools {
            if !seen.insert(tool.name.to_string()) {
                self.duplicates.push(tool.name.into_owned());
            } else if self.tools.len() < max_tools {
                self.tools.push(tool);
            } else {
                self.cut = true;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn tool(name: &str, description: &str) -> Tool {
        Tool::new(
            name.to_owned(),
            description.to_owned(),
            Arc::new(serde_json::Map::new()),
        )
    }

    #[test]
    fn a_name_is_kept_once_and_the_list_is_cut_at_the_limit() {
        let mut listed = Listed::default();
        let mut seen = HashSet::new();
        listed.add(
            vec![tool("a", "first"), tool("b", ""), tool("a", "second")],
            &mut seen,
            3,
        );
        assert!(!listed.cut);
        listed.add(
            vec![tool("b", ""), tool("c", ""), tool("d", "")],
            &mut seen,
            3,
        );
        let names: Vec<&str> = listed.tools.iter().map(|tool| tool.name.as_ref()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(listed.tools[0].description.as_deref(), Some("first"));
        assert_eq!(listed.duplicates, ["a", "b"]);
        assert!(listed.cut);
    }
}
