//! Related words: a small, general table of the words tool catalogs and their users use for the
//! same software actions and objects ("make a new folder" for `create_directory`, "erase" for
//! `delete`, "web page" for `fetch` a URL). A query reaches the tools that use a related word
//! as well as those that use its own, at a lower weight (see
//! [`ToolIndex::search`](super::ToolIndex::search)), so a tool named in other words is found
//! without outranking one named in the query's own.
//!
//! The table holds groups of words that mean nearly the same in a tool's name or description,
//! whatever the tools: verbs of creating, reading, finding, changing, moving, removing, running
//! and stopping things, and the common objects (files and folders, web pages, time zones,
//! images, settings, records). A word may be in several groups; it is related to every other
//! word of each. Words are matched by their stems, so `folders` and `directories` meet as
//! `folder` and `directory` do. Domain words (what a particular service calls its objects)
//! are left out: a table cannot know them, and that is what the hybrid mode's embeddings are
//! for.

use std::{collections::HashMap, sync::LazyLock};

use super::text;

/// The groups of related words, as written (each is stemmed when the table is first read).
const GROUPS: &[&[&str]] = &[
    // Making things.
    &[
        "create",
        "make",
        "new",
        "add",
        "insert",
        "generate",
        "build",
        "init",
        "initialize",
    ],
    // Adding to a thing.
    &["add", "include", "attach", "append", "insert"],
    // Removing things.
    &[
        "delete", "remove", "erase", "drop", "destroy", "discard", "purge", "wipe", "clear",
        "unlink", "rm", "del", "forget", "trash",
    ],
    // Getting a thing from somewhere.
    &[
        "get", "fetch", "retrieve", "obtain", "download", "pull", "grab", "load", "access",
    ],
    // Showing a thing.
    &[
        "show", "view", "display", "print", "see", "look", "read", "open", "inspect", "dump", "cat",
    ],
    // Finding things.
    &[
        "find", "search", "lookup", "locate", "query", "seek", "discover", "grep", "where", "look",
    ],
    // Listing things.
    &["list", "enumerate", "ls", "browse"],
    // Changing a thing.
    &[
        "edit", "modify", "update", "change", "alter", "amend", "patch", "tweak", "adjust",
        "revise", "replace",
    ],
    // Moving or renaming a thing.
    &["move", "rename", "mv", "relocate"],
    // Copying a thing.
    &["copy", "duplicate", "clone", "cp", "replicate"],
    // Keeping a thing.
    &[
        "write", "save", "store", "persist", "record", "remember", "memorize", "keep",
    ],
    // Sending a thing.
    &["send", "post", "submit", "publish", "deliver"],
    // Running a thing.
    &[
        "run", "execute", "launch", "start", "trigger", "invoke", "perform", "begin",
    ],
    // Stopping a thing.
    &[
        "stop",
        "halt",
        "kill",
        "terminate",
        "cancel",
        "abort",
        "quit",
        "end",
    ],
    // Switching a thing on or off.
    &[
        "toggle",
        "switch",
        "enable",
        "disable",
        "activate",
        "deactivate",
        "turn",
    ],
    // Making a thing smaller.
    &[
        "compress", "zip", "gzip", "pack", "shrink", "deflate", "tar", "archive",
    ],
    &[
        "decompress",
        "unzip",
        "gunzip",
        "extract",
        "unpack",
        "inflate",
    ],
    &["convert", "transform"],
    &["compare", "diff", "difference", "differ", "versus", "vs"],
    &[
        "sum",
        "add",
        "plus",
        "total",
        "calculate",
        "compute",
        "addition",
        "arithmetic",
    ],
    &["echo", "repeat", "parrot"],
    &["undo", "revert", "reset", "rollback", "restore"],
    &[
        "link",
        "connect",
        "relate",
        "relation",
        "relationship",
        "associate",
        "association",
    ],
    &["sort", "rank", "arrange"],
    &["check", "verify", "validate", "test"],
    &["upload", "push"],
    &["status", "state"],
    // Objects.
    &["folder", "directory", "dir"],
    &["subfolder", "subdirectory", "subdir"],
    &["file", "document", "doc"],
    &["url", "link", "uri", "address"],
    &[
        "web", "internet", "online", "website", "webpage", "site", "page", "url", "http",
    ],
    &["timezone", "tz", "zone"],
    &["time", "clock", "hour", "date", "when", "timestamp"],
    &["current", "now", "today", "present"],
    &[
        "image", "picture", "photo", "pic", "png", "jpg", "jpeg", "graphic", "icon",
    ],
    &["audio", "sound", "mp3", "wav", "voice"],
    &["env", "environment"],
    &[
        "config",
        "configuration",
        "settings",
        "setting",
        "preferences",
        "options",
    ],
    &["message", "msg"],
    &["commit", "revision", "changeset"],
    &["repo", "repository", "project", "codebase"],
    &["log", "history", "journal"],
    &["error", "bug", "issue", "problem", "failure", "fault"],
    &["user", "person", "people", "account", "member", "contact"],
    &[
        "entity", "node", "item", "record", "object", "entry", "element",
    ],
    &["size", "bytes", "space", "large", "big"],
    &[
        "metadata",
        "info",
        "information",
        "details",
        "attributes",
        "properties",
        "stats",
        "statistics",
    ],
    &["tree", "structure", "hierarchy", "recursive", "nested"],
    &["content", "contents", "text", "body"],
    &["number", "digit", "integer"],
    &["email", "mail"],
    &["calendar", "schedule", "event", "meeting", "appointment"],
    &["weather", "forecast"],
    &["table", "sheet", "spreadsheet"],
    &["database", "db", "sql"],
    &["name", "title", "label"],
    &["tag", "label"],
    &[
        "memory",
        "remember",
        "memorize",
        "recall",
        "knowledge",
        "know",
    ],
    &["path", "location", "filepath"],
    &["pattern", "glob", "wildcard", "regex"],
    &["first", "head", "top", "beginning"],
    &["last", "tail", "final", "bottom"],
    &["recent", "latest", "newest"],
    &["line", "row"],
    &["permission", "access", "rights", "allowed", "privilege"],
    &["secret", "token", "credential", "password"],
];

/// Per stem, the stems related to it (never itself).
type Table = HashMap<Box<str>, Box<[Box<str>]>>;

/// The table, built from [`GROUPS`] when first read.
static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let mut table: HashMap<Box<str>, Vec<Box<str>>> = HashMap::new();
    for group in GROUPS {
        let stems: Vec<String> = group.iter().filter_map(|word| stem_of(word)).collect();
        for stem in &stems {
            let related = table.entry(stem.as_str().into()).or_default();
            for other in &stems {
                if other != stem && !related.iter().any(|known| **known == **other) {
                    related.push(other.as_str().into());
                }
            }
        }
    }
    table
        .into_iter()
        .map(|(stem, related)| (stem, related.into_boxed_slice()))
        .collect()
});

/// The stem of one word of the table, as the index reads it (`None` for a stop word).
fn stem_of(word: &str) -> Option<String> {
    let mut stem = None;
    text::words(word, |read| {
        stem.get_or_insert_with(|| read.to_owned());
    });
    stem
}

/// The stems related to `stem` (a word as [`text::words`] gives it), none if it has none.
pub(crate) fn related(stem: &str) -> &'static [Box<str>] {
    TABLE.get(stem).map_or(&[], |related| related)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn related_to(word: &str) -> Vec<&'static str> {
        related(&stem_of(word).unwrap())
            .iter()
            .map(|stem| &**stem)
            .collect()
    }

    #[test]
    fn related_words_meet_through_their_stems() {
        let folder = stem_of("folders").unwrap();
        assert!(related_to("directories").contains(&folder.as_str()));
        let create = stem_of("create").unwrap();
        assert!(related_to("make").contains(&create.as_str()));
        assert!(related_to("erase").contains(&stem_of("delete").unwrap().as_str()));
        assert!(
            !related_to("create").contains(&create.as_str()),
            "not itself"
        );
        assert!(related_to("zebra").is_empty());
    }

    #[test]
    fn every_word_of_the_table_is_read_as_one_word() {
        for word in GROUPS.iter().flat_map(|group| group.iter()) {
            let mut count = 0;
            text::words(word, |_| count += 1);
            assert!(count <= 1, "{word}");
        }
    }
}
