//! Provider-safe local names for an MCP server's tools.
//!
//! MCP allows tool names that providers reject (`^[a-zA-Z0-9_-]{1,64}$` is what OpenAI,
//! Anthropic and Gemini all accept), such as `files.read`, `a/b` or names past 64 characters.
//! Such a name is mapped to a valid one that ends in a hash of the original, so the mapping
//! depends on the name alone and stays the same across reconnections and list changes.

use crate::registry::validate_name;

/// The longest local name.
const MAX_LEN: usize = 64;

/// The local names of `remote` names, in order: `{prefix}_{name}` (or `name`) when that is a
/// valid provider name; otherwise the name with every other character replaced by `_`, cut to
/// fit and followed by `_` and 8 hex digits of a hash of the original name. A name that would
/// repeat an earlier one gets a counter instead, so the result has no duplicates.
pub(super) fn local_names<'a>(
    prefix: Option<&str>,
    remote: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let mut taken = std::collections::HashSet::new();
    remote
        .into_iter()
        .map(|name| {
            let mut local = local_name(prefix, name);
            let mut counter = 2u32;
            while taken.contains(&local) {
                let suffix = format!("_{counter}");
                let base = local_name(prefix, name);
                local = format!("{}{suffix}", cut(&base, MAX_LEN - suffix.len()));
                counter += 1;
            }
            taken.insert(local.clone());
            local
        })
        .collect()
}

/// Like [`local_names`], but a name that several remote names would share is given to none of
/// them (`None` in their places), so every name served depends on its remote name alone, in
/// whatever order the server lists them.
pub(super) fn unique_local_names<'a>(
    prefix: Option<&str>,
    remote: impl IntoIterator<Item = &'a str>,
) -> Vec<Option<String>> {
    let locals: Vec<String> = remote
        .into_iter()
        .map(|name| local_name(prefix, name))
        .collect();
    let mut count = std::collections::HashMap::<&str, usize>::new();
    for local in &locals {
        *count.entry(local.as_str()).or_default() += 1;
    }
    locals
        .iter()
        .map(|local| (count.get(local.as_str()) == Some(&1)).then(|| local.clone()))
        .collect()
}

/// The local name of one remote name; see [`local_names`].
pub(super) fn local_name(prefix: Option<&str>, name: &str) -> String {
    let joined = match prefix {
        Some(prefix) => format!("{prefix}_{name}"),
        None => name.to_owned(),
    };
    if validate_name(&joined).is_ok() {
        return joined;
    }
    let sanitized: String = joined
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let suffix = format!("_{:08x}", fnv1a(name.as_bytes()));
    format!("{}{suffix}", cut(&sanitized, MAX_LEN - suffix.len()))
}

/// The first `max` bytes of an ASCII string.
fn cut(text: &str, max: usize) -> &str {
    // Sanitized names are ASCII, so every byte index is a char boundary.
    text.get(..max.min(text.len())).unwrap_or(text)
}

/// 32-bit FNV-1a: tiny, stable across runs and platforms (unlike `std`'s hashers).
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash, &byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_names_are_kept_and_prefixed() {
        assert_eq!(local_name(None, "get-sum"), "get-sum");
        assert_eq!(local_name(Some("ev"), "get-sum"), "ev_get-sum");
    }

    #[test]
    fn invalid_names_become_valid_and_carry_a_hash_of_the_original() {
        let dotted = local_name(None, "files.read");
        assert_eq!(dotted, format!("files_read_{:08x}", fnv1a(b"files.read")));
        assert!(validate_name(&dotted).is_ok());
        // Two names that sanitize alike stay apart.
        assert_ne!(local_name(None, "a.b"), local_name(None, "a/b"));

        let long = "x".repeat(100);
        let mapped = local_name(Some("p"), &long);
        assert_eq!(mapped.len(), 64);
        assert!(validate_name(&mapped).is_ok());
        assert!(mapped.starts_with("p_xxx"));

        let unicode = local_name(None, "météo");
        assert!(validate_name(&unicode).is_ok(), "{unicode}");
    }

    #[test]
    fn a_prefix_that_makes_a_name_too_long_is_handled_like_any_long_name() {
        let name = "n".repeat(60);
        assert_eq!(local_name(None, &name), name);
        let prefixed = local_name(Some("server"), &name);
        assert_eq!(prefixed.len(), 64);
        assert!(prefixed.starts_with("server_nnn"));
    }

    #[test]
    fn the_mapping_has_no_duplicates() {
        let dotted = local_name(None, "a.b");
        // A server whose valid name equals another's mapped name.
        let names = local_names(None, ["a.b", dotted.as_str(), "c"]);
        assert_eq!(names[0], dotted);
        assert_eq!(names[1], format!("{dotted}_2"));
        assert_eq!(names[2], "c");
    }

    #[test]
    fn a_shared_name_is_given_to_none_in_any_order() {
        let dotted = local_name(None, "a.b");
        for remote in [["a.b", dotted.as_str(), "c"], [dotted.as_str(), "c", "a.b"]] {
            let names = unique_local_names(None, remote);
            let served: Vec<&str> = names.iter().flatten().map(String::as_str).collect();
            assert_eq!(served, ["c"]);
        }
    }
}
