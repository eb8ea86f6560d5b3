//! The user-facing documentation stays true to the code: the README's Rust snippets are whole
//! programs a user can paste (the registry and GitHub show hidden `# ` lines as written), and
//! the `#[tool]` argument tables of the README and of `tool_core::tool` list exactly the keys
//! the macro accepts.

use std::collections::BTreeSet;

fn repo_file(path: &str) -> String {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|error| panic!("{}: {error}", full.display()))
}

/// The Rust code blocks of a Markdown text (```` ```rust ````, with or without attributes such
/// as `no_run`), each with the line its fence opens on and its lines.
fn rust_blocks(markdown: &str) -> Vec<(usize, Vec<&str>)> {
    let mut blocks = Vec::new();
    // The open block: its first line and lines, and whether it is Rust.
    let mut open: Option<(usize, Vec<&str>, bool)> = None;
    for (index, line) in markdown.lines().enumerate() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            if let Some((_, lines, _)) = &mut open {
                lines.push(line);
            }
            continue;
        };
        match open.take() {
            Some((start, lines, true)) => blocks.push((start, lines)),
            Some((_, _, false)) => {}
            None => {
                let language = info.split(',').next().unwrap_or_default().trim();
                open = Some((index + 1, Vec::new(), language == "rust"));
            }
        }
    }
    blocks
}

#[test]
fn readme_snippets_are_whole_programs_with_no_hidden_lines() {
    let readme = repo_file("README.md");
    let blocks = rust_blocks(&readme);
    assert!(blocks.len() >= 5, "found only {} Rust blocks", blocks.len());
    let mut problems = Vec::new();
    for (start, lines) in &blocks {
        for (offset, line) in lines.iter().enumerate() {
            let code = line.trim_start();
            if code == "#" || code.starts_with("# ") {
                problems.push(format!(
                    "README.md:{}: a hidden doctest line, shown as written on GitHub and the \
                     registry: {code}",
                    start + offset + 1
                ));
            }
        }
        if !lines.iter().any(|line| line.contains("fn main(")) {
            problems.push(format!(
                "README.md:{start}: the snippet is not a whole program (no `fn main`)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The keys of `#[tool(...)]` as the macro's grammar declares them (`custom_keyword!`).
fn macro_keywords(attr_rs: &str) -> BTreeSet<String> {
    attr_rs
        .lines()
        .filter_map(|line| line.trim().strip_prefix("syn::custom_keyword!("))
        .filter_map(|rest| rest.strip_suffix(");"))
        .map(str::to_owned)
        .collect()
}

/// The keys the macro's unknown-key message lists (the `KEYS` constant).
fn listed_keys(attr_rs: &str) -> BTreeSet<String> {
    let start = attr_rs
        .find("const KEYS: &str = \"")
        .expect("attr.rs declares `KEYS`");
    let rest = &attr_rs[start + "const KEYS: &str = \"".len()..];
    let end = rest.find("\";").expect("`KEYS` ends");
    backticked(&rest[..end])
}

/// Every `word` in backticks.
fn backticked(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| {
            !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .map(str::to_owned)
        .collect()
}

/// The keys in the first column of the `| argument | value | effect |` table of a Markdown text.
fn table_keys(markdown: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut in_table = false;
    for line in markdown.lines() {
        let line = line.trim();
        if line.replace(' ', "") == "|argument|value|effect|" {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let first = line.split('|').nth(1).unwrap_or_default();
        keys.extend(backticked(first));
    }
    keys
}

/// The text of a rustdoc comment placed just before `item` in `source`, without the `/// `.
fn rustdoc_before(source: &str, item: &str) -> String {
    let end = source
        .find(item)
        .unwrap_or_else(|| panic!("`{item}` found"));
    let mut lines: Vec<&str> = source[..end]
        .lines()
        .rev()
        .skip_while(|line| !line.trim_start().starts_with("///"))
        .take_while(|line| {
            let line = line.trim_start();
            line.starts_with("///") || line.starts_with("#[")
        })
        .filter_map(|line| line.trim_start().strip_prefix("///"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    lines.reverse();
    lines.join("\n")
}

#[test]
fn the_tool_reference_tables_list_every_key_the_macro_accepts() {
    let attr_rs = repo_file("tool-macros/src/attr.rs");
    let grammar = macro_keywords(&attr_rs);
    assert!(
        grammar.contains("name") && grammar.contains("lenient"),
        "{grammar:?}"
    );
    assert_eq!(
        listed_keys(&attr_rs),
        grammar,
        "the unknown-key message (`KEYS` in tool-macros/src/attr.rs) and the grammar differ"
    );

    let readme = table_keys(&repo_file("README.md"));
    assert_eq!(
        readme, grammar,
        "the README's `#[tool]` table (left) and the keys `#[tool]` accepts (right) differ"
    );

    let rustdoc = rustdoc_before(
        &repo_file("tool-core/src/lib.rs"),
        "pub use tool_core_macros::tool;",
    );
    assert_eq!(
        table_keys(&rustdoc),
        grammar,
        "the table on `tool_core::tool` (left) and the keys `#[tool]` accepts (right) differ"
    );
}
