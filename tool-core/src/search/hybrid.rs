//! What hybrid search adds to the lexical index, with no model in it: the text of a tool an
//! embedder reads and its key in a cache, cosine similarity, and reciprocal rank fusion.

use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::{MAX_SCHEMA_DEPTH, text};
use crate::tool::ChatTool;

/// The most bytes of a tool's text an embedder is given.
const MAX_TEXT: usize = 4_096;

/// The text of a tool an embedder reads: its name as words (`create_directory` →
/// `create directory`), its title, its description, and its parameters' names and
/// descriptions, cut to 4 KiB at a character boundary.
pub fn embedding_text(tool: &ChatTool, title: Option<&str>) -> String {
    let mut out = String::new();
    text::split_name(tool.name(), |word| {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    });
    out.push('\n');
    if let Some(title) = title {
        out.push_str(title);
        out.push('\n');
    }
    out.push_str(tool.description());
    let mut budget = 256;
    let mut first = true;
    parameters(tool.parameters(), 0, &mut budget, &mut |part| {
        out.push_str(if first { "\nParameters: " } else { "; " });
        first = false;
        out.push_str(part);
    });
    if out.len() > MAX_TEXT {
        let mut cut = MAX_TEXT;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

/// A key of `text` for a cache of embeddings: the same text has the same key in every process
/// (`SipHash` with fixed keys over the text), so a tool's embedding is computed once per
/// definition.
pub fn text_key(text: &str) -> u64 {
    // `DefaultHasher::new()` always starts from the same keys, unlike `RandomState`.
    let mut hasher = std::hash::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The cosine similarity of two vectors (0 when either is all zeros, or their dimensions
/// differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut aa, mut bb) = (0.0_f32, 0.0_f32, 0.0_f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        dot / (aa.sqrt() * bb.sqrt())
    }
}

/// Weighted reciprocal rank fusion (Cormack, Clarke and Büttcher, "Reciprocal Rank Fusion
/// outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009) of `rankings`,
/// each best first with its weight: every name gets the sum over the rankings it is in of
/// `weight / (k + rank)`, ranks counted from 1. Best first; ties keep the order in which names
/// first appear, ranking by ranking.
///
/// ```
/// use tool_core::search::hybrid::reciprocal_rank_fusion;
///
/// let lexical = ["git_log", "git_show", "git_diff"];
/// let semantic = ["git_show", "git_status"];
/// let fused = reciprocal_rank_fusion(&[(&lexical[..], 1.0), (&semantic[..], 1.0)], 60.0);
/// let names: Vec<&str> = fused.iter().map(|(name, _)| *name).collect();
/// assert_eq!(names, ["git_show", "git_log", "git_status", "git_diff"]);
/// ```
pub fn reciprocal_rank_fusion<'a>(rankings: &[(&[&'a str], f32)], k: f32) -> Vec<(&'a str, f32)> {
    let mut fused: Vec<(&'a str, f32)> = Vec::new();
    let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (ranking, weight) in rankings {
        for (rank, name) in ranking.iter().enumerate() {
            #[allow(clippy::cast_precision_loss)]
            let share = weight / (k + (rank + 1) as f32);
            if let Some(&slot) = at.get(name) {
                fused[slot].1 += share;
            } else {
                at.insert(name, fused.len());
                fused.push((name, share));
            }
        }
    }
    // A stable sort keeps first appearance among equal scores.
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

/// Each parameter's name and description, as `name: description`, nested ones included, to a
/// bounded depth and number of nodes.
fn parameters(schema: &Value, depth: usize, budget: &mut usize, push: &mut impl FnMut(&str)) {
    if depth > MAX_SCHEMA_DEPTH || *budget == 0 {
        return;
    }
    *budget -= 1;
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            match property.get("description").and_then(Value::as_str) {
                Some(description) => push(&format!("{name}: {description}")),
                None => push(name),
            }
            parameters(property, depth + 1, budget, push);
        }
    }
    if let Some(items) = schema.get("items") {
        parameters(items, depth + 1, budget, push);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tools_text_reads_as_words_and_its_key_is_stable() {
        let tool = ChatTool::new(
            "git_create_branch",
            "Creates a new branch.",
            json!({"type": "object", "properties": {
                "branch_name": {"type": "string", "description": "The new branch"},
                "base": {"type": "string"}
            }}),
        );
        let text = embedding_text(&tool, Some("Create Branch"));
        assert_eq!(
            text,
            "git create branch\nCreate Branch\nCreates a new branch.\nParameters: base; \
             branch_name: The new branch"
        );
        assert_eq!(text_key(&text), text_key(&text.clone()));
        assert_ne!(text_key(&text), text_key("git create branch"));
        let long = ChatTool::new("t", "é".repeat(5_000), json!({"type": "object"}));
        assert!(embedding_text(&long, None).len() <= MAX_TEXT);
    }

    #[test]
    fn cosine_and_fusion() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert!(cosine(&[0.0, 0.0], &[1.0, 0.0]).abs() < f32::EPSILON);
        assert!(cosine(&[1.0], &[1.0, 0.0]).abs() < f32::EPSILON);
        let fused = reciprocal_rank_fusion(&[(&["a", "b"][..], 1.0), (&["c", "a"][..], 1.0)], 60.0);
        assert_eq!(fused[0].0, "a");
        assert!((fused[0].1 - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-6);
        assert_eq!(fused.len(), 3);
        assert_eq!((fused[1].0, fused[2].0), ("c", "b"));
        // Weighted: the first ranking counts half, so its first is behind the second's.
        let fused = reciprocal_rank_fusion(&[(&["a"][..], 0.5), (&["b"][..], 1.0)], 10.0);
        assert_eq!((fused[0].0, fused[1].0), ("b", "a"));
        assert!((fused[1].1 - 0.5 / 11.0).abs() < 1e-6);
    }
}
