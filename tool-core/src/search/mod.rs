//! Tool search: a BM25F index over tool definitions ([`ToolIndex`]), so a model offered a few
//! tools can find the others by what they do.
//!
//! Each tool is read as five fields, each weighted: its name (split on `_`, `-`, `.` and at
//! camelCase humps), its title, its description, its parameters' names and their
//! descriptions. Words are lowercased, stop words dropped and cut to a light stem, in the index
//! and in the query alike. A query `select:name[,name…]` picks tools by exact name instead.
//!
//! ```
//! use serde_json::json;
//! use tool_core::{ChatTool, search::ToolIndex};
//!
//! let tools = [
//!     ChatTool::new("create_directory", "Create a new directory.", json!({"type": "object"})),
//!     ChatTool::new("get_weather", "Current weather for a city.", json!({"type": "object"})),
//! ];
//! let index = ToolIndex::new(tools.iter().map(|tool| (tool, None)));
//! let found = index.search("make directories", 5).unwrap();
//! assert_eq!(found.hits[0].name, "create_directory");
//! let picked = index.search("select:get_weather,nope", 5).unwrap();
//! assert_eq!(picked.hits[0].name, "get_weather");
//! assert_eq!(picked.missing, ["nope"]);
//! ```

mod text;

use std::{collections::HashMap, sync::Arc};

use serde_json::Value;

use crate::tool::ChatTool;

/// The longest query [`ToolIndex::search`] reads, in bytes; a longer one is refused.
pub const MAX_QUERY_BYTES: usize = 1_000;

/// The most distinct words of a query that count; the rest are ignored.
const MAX_QUERY_WORDS: usize = 32;

/// The most names one `select:` query picks.
const MAX_SELECTED: usize = 32;

/// How deep into nested parameter schemas names and descriptions are read.
const MAX_SCHEMA_DEPTH: usize = 3;

/// The fields of a tool, in the order of [`WEIGHTS`] and [`B`].
const FIELDS: usize = 5;
const NAME: usize = 0;
const TITLE: usize = 1;
const DESCRIPTION: usize = 2;
const PARAMETER_NAMES: usize = 3;
const PARAMETER_DESCRIPTIONS: usize = 4;

/// How much a word found in each field counts: a word of the name says more about the tool than
/// one of a parameter's description.
const WEIGHTS: [f32; FIELDS] = [3.0, 2.0, 1.0, 1.5, 0.5];

/// How much each field's length normalizes its counts (BM25's `b`): names and titles are short
/// by nature, so little.
const B: [f32; FIELDS] = [0.3, 0.3, 0.75, 0.5, 0.75];

/// BM25's saturation of repeated words.
const K1: f32 = 1.2;

/// Why a query was not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query is empty or only white space.
    #[error(
        "the query is empty; describe the tool you need in a few words, or write `select:NAME`"
    )]
    Empty,
    /// The query is longer than [`MAX_QUERY_BYTES`].
    #[error("the query is {len} bytes long, over the limit of {max}; use a few words")]
    TooLong {
        /// The query's length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The query has no word to look for (only punctuation, control characters, stop words).
    #[error("the query has no words to look for; describe the tool you need in a few words")]
    NoWords,
}

/// One tool a search found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SearchHit {
    /// The tool's name.
    pub name: String,
    /// The first line of its description, cut to about a hundred characters.
    pub summary: String,
    /// Its BM25F score (0 for a tool picked with `select:`).
    pub score: f32,
}

/// What a search found.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SearchMatches {
    /// The best matches, best first (for `select:`, in the order named).
    pub hits: Vec<SearchHit>,
    /// The names a `select:` query gave that no tool of the index has.
    pub missing: Vec<String>,
}

/// A BM25F index over a set of tool definitions, built once (see the [module docs](self)).
///
/// A search costs the postings of the query's words, not a pass over every tool.
pub struct ToolIndex {
    names: Vec<Arc<str>>,
    descriptions: Vec<Arc<str>>,
    by_name: HashMap<Arc<str>, u32, foldhash::fast::RandomState>,
    /// The words of the index, numbered.
    vocabulary: HashMap<String, u32, foldhash::fast::RandomState>,
    /// Per word, the tools that have it with their length-normalized, weighted count.
    postings: Vec<Vec<(u32, f32)>>,
    /// Per tool, its words with their count in each field (sorted by word): what the postings
    /// are made from, kept for incremental updates and for a scan that scores every tool.
    forward: Vec<Vec<(u32, [u16; FIELDS])>>,
    /// Per tool, each field's length in words.
    lengths: Vec<[u32; FIELDS]>,
    average: [f32; FIELDS],
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.names.len())
            .field("words", &self.vocabulary.len())
            .finish_non_exhaustive()
    }
}

impl ToolIndex {
    /// Indexes `tools`, each a definition with its title (see
    /// [`ToolMetadata::title`](crate::ToolMetadata::title)). A name given twice keeps its
    /// first definition.
    pub fn new<'a>(tools: impl IntoIterator<Item = (&'a ChatTool, Option<&'a str>)>) -> Self {
        let mut index = Self {
            names: Vec::new(),
            descriptions: Vec::new(),
            by_name: HashMap::default(),
            vocabulary: HashMap::default(),
            postings: Vec::new(),
            forward: Vec::new(),
            lengths: Vec::new(),
            average: [0.0; FIELDS],
        };
        for (tool, title) in tools {
            if index.by_name.contains_key(tool.name()) {
                continue;
            }
            index.add(tool, title);
        }
        index.compute_postings();
        index
    }

    /// The number of tools indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Whether a tool of this name is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The `limit` best tools for `query`, best first; ties go to the tool indexed first.
    /// `select:a,b` picks tools by exact name (up to 32), in the order given, and reports the
    /// names it does not know. A query of more than [`MAX_QUERY_BYTES`], or with nothing to
    /// look for, is an error that says so; only the first 32 distinct words count.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchMatches, SearchError> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(SearchError::TooLong {
                len: query.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        let query = query.trim();
        if query.is_empty() {
            return Err(SearchError::Empty);
        }
        if let Some(names) = query.strip_prefix("select:") {
            return self.select(names);
        }
        let terms = self.query_terms(query)?;
        Ok(SearchMatches {
            hits: self.rank(self.score_postings(&terms), limit),
            missing: Vec::new(),
        })
    }

    /// Like [`search`](Self::search) for a ranked query, scoring every tool with the same
    /// formula instead of reading the postings: the baseline the benchmark compares with.
    #[doc(hidden)]
    pub fn search_by_scan(&self, query: &str, limit: usize) -> Result<SearchMatches, SearchError> {
        let terms = self.query_terms(query.trim())?;
        let idf: Vec<(u32, f32)> = terms.iter().map(|&term| (term, self.idf(term))).collect();
        let scores = self
            .forward
            .iter()
            .enumerate()
            .map(|(doc, words)| {
                let score = idf
                    .iter()
                    .filter_map(|&(term, idf)| {
                        let at = words.binary_search_by_key(&term, |(word, _)| *word).ok()?;
                        Some(idf * saturate(self.weighted(doc, &words[at].1)))
                    })
                    .sum::<f32>();
                (u32::try_from(doc).unwrap_or(u32::MAX), score)
            })
            .filter(|(_, score)| *score > 0.0)
            .collect();
        Ok(SearchMatches {
            hits: self.rank(scores, limit),
            missing: Vec::new(),
        })
    }

    fn select(&self, names: &str) -> Result<SearchMatches, SearchError> {
        let mut matches = SearchMatches::default();
        let mut seen: Vec<&str> = Vec::new();
        for name in names
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|name| !name.is_empty())
            .take(MAX_SELECTED)
        {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            match self.by_name.get(name) {
                Some(&doc) => matches.hits.push(self.hit(doc, 0.0)),
                None => matches.missing.push(name.to_owned()),
            }
        }
        if seen.is_empty() {
            return Err(SearchError::Empty);
        }
        Ok(matches)
    }

    /// The query's distinct known words (unknown words match nothing and are skipped), or an
    /// error when it has no word at all.
    fn query_terms(&self, query: &str) -> Result<Vec<u32>, SearchError> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(SearchError::TooLong {
                len: query.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        let mut words: Vec<String> = Vec::new();
        text::words(query, |word| {
            if words.len() < MAX_QUERY_WORDS && !words.contains(&word) {
                words.push(word);
            }
        });
        if words.is_empty() {
            return Err(SearchError::NoWords);
        }
        Ok(words
            .iter()
            .filter_map(|word| self.vocabulary.get(word).copied())
            .collect())
    }

    fn score_postings(&self, terms: &[u32]) -> Vec<(u32, f32)> {
        // One slot per tool: adding to it costs less than hashing the tool's number, and
        // zeroing 10,000 slots takes a few microseconds.
        let mut scores = vec![0.0_f32; self.names.len()];
        let mut touched: Vec<u32> = Vec::new();
        for &term in terms {
            let idf = self.idf(term);
            for &(doc, weighted) in &self.postings[term as usize] {
                let slot = &mut scores[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += idf * saturate(weighted);
            }
        }
        touched
            .into_iter()
            .map(|doc| (doc, scores[doc as usize]))
            .collect()
    }

    /// The best `limit` of `scores`, best first, ties to the tool indexed first.
    fn rank(&self, mut scores: Vec<(u32, f32)>, limit: usize) -> Vec<SearchHit> {
        let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if limit == 0 {
            return Vec::new();
        }
        if scores.len() > limit {
            scores.select_nth_unstable_by(limit - 1, order);
            scores.truncate(limit);
        }
        scores.sort_unstable_by(order);
        scores
            .into_iter()
            .map(|(doc, score)| self.hit(doc, score))
            .collect()
    }

    fn hit(&self, doc: u32, score: f32) -> SearchHit {
        SearchHit {
            name: self.names[doc as usize].to_string(),
            summary: summary(&self.descriptions[doc as usize]),
            score,
        }
    }

    /// BM25's inverse document frequency of a word.
    fn idf(&self, term: u32) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let (tools, with) = (
            self.names.len() as f32,
            self.postings[term as usize].len() as f32,
        );
        (1.0 + (tools - with + 0.5) / (with + 0.5)).ln()
    }

    /// BM25F's pseudo-frequency: each field's count weighted and normalized by its length.
    fn weighted(&self, doc: usize, counts: &[u16; FIELDS]) -> f32 {
        let lengths = &self.lengths[doc];
        (0..FIELDS)
            .filter(|&field| counts[field] > 0)
            .map(|field| {
                #[allow(clippy::cast_precision_loss)]
                let relative = if self.average[field] > 0.0 {
                    lengths[field] as f32 / self.average[field]
                } else {
                    1.0
                };
                WEIGHTS[field] * f32::from(counts[field]) / (1.0 - B[field] + B[field] * relative)
            })
            .sum()
    }

    fn add(&mut self, tool: &ChatTool, title: Option<&str>) {
        let mut fields: [Vec<String>; FIELDS] = Default::default();
        let mut push =
            |field: usize, text: &str| text::words(text, |word| fields[field].push(word));
        push(NAME, tool.name());
        if let Some(title) = title {
            push(TITLE, title);
        }
        push(DESCRIPTION, tool.description());
        let mut budget = 256;
        parameters(tool.parameters(), 0, &mut budget, &mut |field, text| {
            push(field, text);
        });
        let mut counts: Vec<(u32, [u16; FIELDS])> = Vec::new();
        let mut lengths = [0_u32; FIELDS];
        for (field, words) in fields.iter().enumerate() {
            lengths[field] = u32::try_from(words.len()).unwrap_or(u32::MAX);
            for word in words {
                let term = if let Some(&term) = self.vocabulary.get(word.as_str()) {
                    term
                } else {
                    let term = u32::try_from(self.vocabulary.len()).unwrap_or(u32::MAX);
                    self.vocabulary.insert(word.clone(), term);
                    term
                };
                if let Some((_, field_counts)) = counts.iter_mut().find(|(known, _)| *known == term)
                {
                    field_counts[field] = field_counts[field].saturating_add(1);
                } else {
                    let mut field_counts = [0; FIELDS];
                    field_counts[field] = 1;
                    counts.push((term, field_counts));
                }
            }
        }
        counts.sort_unstable_by_key(|(term, _)| *term);
        let doc = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.by_name.insert(tool.function.name.clone(), doc);
        self.names.push(tool.function.name.clone());
        self.descriptions.push(tool.function.description.clone());
        self.forward.push(counts);
        self.lengths.push(lengths);
    }

    fn compute_postings(&mut self) {
        #[allow(clippy::cast_precision_loss)]
        let tools = self.lengths.len().max(1) as f32;
        for field in 0..FIELDS {
            #[allow(clippy::cast_precision_loss)]
            let total: f32 = self
                .lengths
                .iter()
                .map(|lengths| lengths[field] as f32)
                .sum();
            self.average[field] = total / tools;
        }
        let mut postings = vec![Vec::new(); self.vocabulary.len()];
        for (doc, words) in self.forward.iter().enumerate() {
            let id = u32::try_from(doc).unwrap_or(u32::MAX);
            for (term, counts) in words {
                postings[*term as usize].push((id, self.weighted(doc, counts)));
            }
        }
        self.postings = postings;
    }
}

/// BM25's saturation of a (pseudo-)frequency.
fn saturate(frequency: f32) -> f32 {
    frequency * (K1 + 1.0) / (K1 + frequency)
}

/// The parameters' names and descriptions of a JSON Schema, nested objects and arrays
/// included, to a bounded depth and number of nodes.
fn parameters(
    schema: &Value,
    depth: usize,
    budget: &mut usize,
    push: &mut impl FnMut(usize, &str),
) {
    if depth > MAX_SCHEMA_DEPTH || *budget == 0 {
        return;
    }
    *budget -= 1;
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            push(PARAMETER_NAMES, name);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                push(PARAMETER_DESCRIPTIONS, description);
            }
            parameters(property, depth + 1, budget, push);
        }
    }
    if let Some(items) = schema.get("items") {
        parameters(items, depth + 1, budget, push);
    }
}

/// The first line of a description, cut at a word to about a hundred characters.
pub fn summary(description: &str) -> String {
    const MAX: usize = 100;
    let line = description.trim().lines().next().unwrap_or_default().trim();
    if line.chars().count() <= MAX {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools() -> Vec<ChatTool> {
        vec![
            ChatTool::new(
                "create_directory",
                "Create a new directory, with its parents.",
                json!({"type": "object", "properties": {"path": {"type": "string", "description": "Where."}}}),
            ),
            ChatTool::new(
                "readFile",
                "Read a file's text.",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
            ChatTool::new(
                "send_email",
                "Send an email message.",
                json!({"type": "object", "properties": {"recipient": {"type": "string", "description": "An address."}}}),
            ),
        ]
    }

    #[test]
    fn postings_and_scan_rank_alike() {
        let tools = tools();
        let index = ToolIndex::new(tools.iter().map(|tool| (tool, None)));
        for query in ["read file", "directory path", "email address", "path"] {
            let fast = index.search(query, 3).unwrap();
            let scan = index.search_by_scan(query, 3).unwrap();
            let names = |matches: &SearchMatches| {
                matches
                    .hits
                    .iter()
                    .map(|hit| hit.name.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(&fast), names(&scan), "{query}");
        }
        assert_eq!(
            index.search("read file", 1).unwrap().hits[0].name,
            "readFile"
        );
        assert_eq!(
            index.search("email address", 1).unwrap().hits[0].name,
            "send_email"
        );
    }

    #[test]
    fn summaries_keep_the_first_line_and_cut_long_ones_at_a_word() {
        assert_eq!(summary("One line.\nMore."), "One line.");
        let long = "word ".repeat(50);
        let cut = summary(&long);
        assert!(
            cut.ends_with("word…") && cut.chars().count() <= 101,
            "{cut}"
        );
    }
}
