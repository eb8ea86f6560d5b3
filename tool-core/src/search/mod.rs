//! Tool search: a BM25F index over tool definitions ([`ToolIndex`]), so a model offered a few
//! tools can find the others by what they do.
//!
//! Each tool is read as five fields, each weighted: its name (split on `_`, `-`, `.` and at
//! camelCase humps), its title, its description, its parameters' names and their
//! descriptions. Words are lowercased, stop words dropped and cut to a light stem, in the index
//! and in the query alike. A query `select:name[,name…]` picks tools by exact name instead.
//!
//! A query is read as a request may be written, in the user's own words:
//! - the filler of a spoken request ("can you show me…", "what's", "please") is dropped;
//! - each word is also looked for as its *related words*, from a small built-in table of the
//!   words tool catalogs use for the same actions and objects (`make` and `new` for `create`,
//!   `folder` for `directory`, `erase` for `delete`, `web page` for `url`), at
//!   a lower weight than the word itself; a tool scores the best of a word's matches, not
//!   their sum;
//! - two words in a row are also looked for as one (`time zone` finds `timezone`);
//! - a tool that has none of the query's own words, only related ones, is found only when
//!   they relate to at least half of the words that describe the request (numbers, names and
//!   file names are not counted): "resize this photo to 800 pixels wide" finds no tool that
//!   merely reads image files.
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
//! let found = index.search("can you make me a new folder?", 5).unwrap();
//! assert_eq!(found.hits[0].name, "create_directory");
//! let picked = index.search("select:get_weather,nope", 5).unwrap();
//! assert_eq!(picked.hits[0].name, "get_weather");
//! assert_eq!(picked.missing, ["nope"]);
//! ```

pub mod hybrid;
mod related;
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

/// The most memory a `regex:` pattern may compile to, in bytes, for the program and for the
/// lazy DFA's cache each.
const MAX_PATTERN_SIZE: usize = 1 << 20;

/// How deeply a `regex:` pattern may nest groups and repetitions.
const MAX_PATTERN_NESTING: u32 = 64;

/// The most bytes of parameter text the regex mode keeps per tool.
const MAX_EXTRA: usize = 4_096;

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

/// How much a tool's word [related](related) to a query's word counts, against the query's
/// word itself.
const RELATED_WEIGHT: f32 = 0.6;

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
    /// A `regex:` query's pattern is not a valid regular expression, or compiles too large.
    #[error("the pattern is not usable: {reason}")]
    Pattern {
        /// What is wrong with it.
        reason: String,
    },
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

/// A BM25F index over a set of tool definitions (see the [module docs](self)), kept up to
/// date one tool at a time: [`upsert`](Self::upsert) and [`remove`](Self::remove) touch the
/// postings of that tool's words only, never the rest of the index.
///
/// A search costs the postings of the query's words, not a pass over every tool. Field
/// lengths are normalized by the averages at query time, so adding a tool changes no other
/// tool's postings.
pub struct ToolIndex {
    /// Per slot, the tool it holds; a removed tool's slot is free until the next insert.
    docs: Vec<Option<Doc>>,
    free: Vec<u32>,
    by_name: HashMap<Arc<str>, u32, foldhash::fast::RandomState>,
    /// The words of the index, numbered; a word stays numbered when its last tool goes.
    vocabulary: HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    /// Per word, the tools that have it with their count in each field, in no order.
    postings: Vec<Vec<Posting>>,
    /// Per slot, each field's length in words (zeros for a free slot), apart from `docs` so
    /// that scoring reads a dense array.
    lengths: Vec<[u32; FIELDS]>,
    /// Per field, the sum of the lengths of the tools indexed.
    totals: [u64; FIELDS],
    /// The order the next new tool gets; ties go to the lower.
    next_order: u64,
    /// How many postings were written or removed so far: the work of the updates.
    postings_written: u64,
}

/// One indexed tool.
struct Doc {
    name: Arc<str>,
    description: Arc<str>,
    /// Its title and its parameters' names and descriptions, as the regex mode reads them.
    extra: Box<str>,
    order: u64,
    /// Its words, sorted, each with the place of its posting in that word's list.
    words: Vec<DocWord>,
}

#[derive(Clone, Copy)]
struct DocWord {
    term: u32,
    at: u32,
}

#[derive(Clone, Copy)]
struct Posting {
    doc: u32,
    counts: [u16; FIELDS],
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.len())
            .field("words", &self.vocabulary.len())
            .finish_non_exhaustive()
    }
}

impl Default for ToolIndex {
    fn default() -> Self {
        Self {
            docs: Vec::new(),
            free: Vec::new(),
            by_name: HashMap::default(),
            vocabulary: HashMap::default(),
            postings: Vec::new(),
            lengths: Vec::new(),
            totals: [0; FIELDS],
            next_order: 0,
            postings_written: 0,
        }
    }
}

impl ToolIndex {
    /// Indexes `tools`, each a definition with its title (see
    /// [`ToolMetadata::title`](crate::ToolMetadata::title)). A name given twice keeps its
    /// first definition.
    pub fn new<'a>(tools: impl IntoIterator<Item = (&'a ChatTool, Option<&'a str>)>) -> Self {
        let tools = tools.into_iter();
        let mut index = Self::default();
        let (expected, _) = tools.size_hint();
        index.docs.reserve(expected);
        index.lengths.reserve(expected);
        index.by_name.reserve(expected);
        let mut scratch = Scratch::default();
        for (tool, title) in tools {
            if !index.by_name.contains_key(tool.name()) {
                index.insert(tool, title, &mut scratch);
            }
        }
        index
    }

    /// The number of tools indexed.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Whether a tool of this name is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Adds a tool, or replaces the definition indexed under its name (which keeps its place
    /// among ties). Costs the postings of the old and the new definition's words only.
    pub fn upsert(&mut self, tool: &ChatTool, title: Option<&str>) {
        self.insert(tool, title, &mut Scratch::default());
    }

    /// [`upsert`](Self::upsert), with buffers that a build reuses from one tool to the next.
    fn insert(&mut self, tool: &ChatTool, title: Option<&str>, scratch: &mut Scratch) {
        let (doc, order) = if let Some(&doc) = self.by_name.get(tool.name()) {
            let order = self.docs[doc as usize].as_ref().map_or(0, |old| old.order);
            self.clear(doc);
            (doc, order)
        } else {
            let doc = self.free.pop().unwrap_or_else(|| {
                self.docs.push(None);
                self.lengths.push([0; FIELDS]);
                u32::try_from(self.docs.len() - 1).unwrap_or(u32::MAX)
            });
            self.next_order += 1;
            (doc, self.next_order - 1)
        };
        // Each word of the tool, numbered, with its field: words are numbered in the order
        // they are read, so a build numbers them as a series of updates would.
        let Scratch {
            tokens,
            word,
            extra,
        } = scratch;
        tokens.clear();
        let mut lengths = [0_u32; FIELDS];
        read_fields(tool, title, extra, |field, text| {
            text::words_in(text, word, |word| {
                lengths[field] = lengths[field].saturating_add(1);
                let term = term(&mut self.vocabulary, &mut self.postings, word);
                #[allow(clippy::cast_possible_truncation)] // `field < FIELDS`
                tokens.push((term, field as u8));
            });
        });
        tokens.sort_unstable();
        let distinct = tokens.chunk_by(|a, b| a.0 == b.0).count();
        let mut words = Vec::with_capacity(distinct);
        for same in tokens.chunk_by(|a, b| a.0 == b.0) {
            let term = same[0].0;
            let mut counts = [0_u16; FIELDS];
            for &(_, field) in same {
                let count = &mut counts[usize::from(field)];
                *count = count.saturating_add(1);
            }
            let list = &mut self.postings[term as usize];
            list.push(Posting { doc, counts });
            let at = u32::try_from(list.len() - 1).unwrap_or(u32::MAX);
            words.push(DocWord { term, at });
        }
        self.postings_written += words.len() as u64;
        for (total, length) in self.totals.iter_mut().zip(lengths) {
            *total += u64::from(length);
        }
        self.lengths[doc as usize] = lengths;
        self.by_name.insert(tool.function.name.clone(), doc);
        self.docs[doc as usize] = Some(Doc {
            name: tool.function.name.clone(),
            description: tool.function.description.clone(),
            extra: extra.as_str().into(),
            order,
            words,
        });
    }

    /// Removes the tool of this name; returns whether there was one. Costs the postings of its
    /// words only.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(doc) = self.by_name.remove(name) else {
            return false;
        };
        self.clear(doc);
        self.docs[doc as usize] = None;
        self.free.push(doc);
        true
    }

    /// An estimate of the bytes the index holds (its tables and postings, not the names and
    /// descriptions it shares with the definitions).
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        let docs = self.docs.capacity() * size_of::<Option<Doc>>()
            + self
                .docs
                .iter()
                .flatten()
                .map(|doc| doc.words.capacity() * size_of::<DocWord>() + doc.extra.len())
                .sum::<usize>();
        let names = self.by_name.capacity() * (size_of::<(Arc<str>, u32)>() + 1);
        let vocabulary = self.vocabulary.capacity() * (size_of::<(Box<str>, u32)>() + 1)
            + self.vocabulary.keys().map(|word| word.len()).sum::<usize>();
        let postings = self.postings.capacity() * size_of::<Vec<Posting>>()
            + self
                .postings
                .iter()
                .map(|list| list.capacity() * size_of::<Posting>())
                .sum::<usize>();
        let lengths = self.lengths.capacity() * size_of::<[u32; FIELDS]>()
            + self.free.capacity() * size_of::<u32>();
        size_of::<Self>() + docs + names + vocabulary + postings + lengths
    }

    /// How many postings the updates of this index wrote or removed: a tool costs one per
    /// distinct word it has.
    #[doc(hidden)]
    pub fn postings_written(&self) -> u64 {
        self.postings_written
    }

    /// The `limit` best tools for `query`, best first; ties go to the tool indexed first.
    ///
    /// - `select:a,b` picks tools by exact name (up to 32), in the order given, and reports
    ///   the names it does not know;
    /// - `regex:PATTERN` finds the tools whose name, title, description or parameters match a
    ///   regular expression (case-insensitive; a linear-time engine, so no pattern can make
    ///   a search take long, and a pattern that compiles too large is refused), those whose
    ///   name matches first;
    /// - anything else is ranked by BM25F.
    ///
    /// A query of more than [`MAX_QUERY_BYTES`], or with nothing to look for, is an error that
    /// says so; only the first 32 distinct words count.
    pub fn search(&self, query: &str, limit: usize) -> Result<SearchMatches, SearchError> {
        self.search_where(query, limit, |_| true)
    }

    /// Like [`search`](Self::search), among the tools for which `keep(name)` holds (the
    /// deferred tools of a snapshot, say) only; the others are neither found nor counted
    /// against `limit`.
    pub fn search_where(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Result<SearchMatches, SearchError> {
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
            return self.select(names, &keep);
        }
        if let Some(pattern) = query.strip_prefix("regex:") {
            return self.search_pattern(pattern, limit, &keep);
        }
        let query = self.query_terms(query)?;
        Ok(SearchMatches {
            hits: self.rank(self.score_postings(&query.words), limit, &|doc: &Doc| {
                keep(&doc.name) && query.enough(doc)
            }),
            missing: Vec::new(),
        })
    }

    /// Like [`search`](Self::search) for a ranked query, scoring every tool with the same
    /// formula instead of reading the postings: the baseline the benchmark compares with.
    #[doc(hidden)]
    pub fn search_by_scan(&self, query: &str, limit: usize) -> Result<SearchMatches, SearchError> {
        let query = self.query_terms(query.trim())?;
        let idf: Vec<Vec<(u32, f32)>> = query
            .words
            .iter()
            .map(|word| {
                word.terms
                    .iter()
                    .map(|&(term, weight)| (term, weight * self.idf(term)))
                    .collect()
            })
            .collect();
        let norms = self.norms();
        let scores = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(doc, slot)| Some((doc, slot.as_ref()?)))
            .map(|(doc, indexed)| {
                let score = idf
                    .iter()
                    .map(|terms| {
                        terms
                            .iter()
                            .filter_map(|&(term, idf)| {
                                let at = indexed
                                    .words
                                    .binary_search_by_key(&term, |word| word.term)
                                    .ok()?;
                                let posting =
                                    self.postings[term as usize][indexed.words[at].at as usize];
                                Some(idf * saturate(self.weighted(&norms, doc, &posting.counts)))
                            })
                            .fold(0.0_f32, f32::max)
                    })
                    .sum::<f32>();
                (u32::try_from(doc).unwrap_or(u32::MAX), score)
            })
            .filter(|(_, score)| *score > 0.0)
            .collect();
        Ok(SearchMatches {
            hits: self.rank(scores, limit, &|doc: &Doc| query.enough(doc)),
            missing: Vec::new(),
        })
    }

    fn select(
        &self,
        names: &str,
        keep: &impl Fn(&str) -> bool,
    ) -> Result<SearchMatches, SearchError> {
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
                Some(&doc) if keep(name) => matches.hits.extend(self.hit(doc, 0.0)),
                _ => matches.missing.push(name.to_owned()),
            }
        }
        if seen.is_empty() {
            return Err(SearchError::Empty);
        }
        Ok(matches)
    }

    /// The regex mode: the tools whose text matches `pattern`, a match in the name counting
    /// most, then the title and description, then the parameters.
    fn search_pattern(
        &self,
        pattern: &str,
        limit: usize,
        keep: &impl Fn(&str) -> bool,
    ) -> Result<SearchMatches, SearchError> {
        let pattern = pattern.trim();
        if pattern.is_empty() {
            return Err(SearchError::Empty);
        }
        let regex = regex::RegexBuilder::new(pattern)
            .case_insensitive(true)
            .size_limit(MAX_PATTERN_SIZE)
            .dfa_size_limit(MAX_PATTERN_SIZE)
            .nest_limit(MAX_PATTERN_NESTING)
            .build()
            .map_err(|error| SearchError::Pattern {
                reason: pattern_error(&error),
            })?;
        let scores = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(doc, slot)| {
                let indexed = slot.as_ref()?;
                if !keep(&indexed.name) {
                    return None;
                }
                let score = [
                    (&*indexed.name, 3.0),
                    (&*indexed.description, 2.0),
                    (&*indexed.extra, 1.0),
                ]
                .into_iter()
                .filter(|(text, _)| regex.is_match(text))
                .map(|(_, weight)| weight)
                .sum::<f32>();
                (score > 0.0).then(|| (u32::try_from(doc).unwrap_or(u32::MAX), score))
            })
            .collect();
        Ok(SearchMatches {
            hits: self.rank(scores, limit, &|_: &Doc| true),
            missing: Vec::new(),
        })
    }

    /// The query's words, each as the group of indexed words it is looked for as (see
    /// [`QueryWord`]); words no tool has, and that relate to none a tool has, are skipped.
    /// An error when the query has no word at all.
    fn query_terms(&self, query: &str) -> Result<Query, SearchError> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(SearchError::TooLong {
                len: query.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        // The distinct stems, and beside them the compounds of two words in a row
        // ("time zone" → `timezone`, "look up" → `lookup`).
        let mut stems: Vec<String> = Vec::new();
        let mut compounds: Vec<String> = Vec::new();
        let mut previous = String::new();
        let mut descriptive = 0;
        text::query_words(query, |word, stem, value| {
            if stems.len() < MAX_QUERY_WORDS && !stems.iter().any(|known| known == stem) {
                stems.push(stem.to_owned());
                if !value {
                    descriptive += 1;
                }
            }
            if !previous.is_empty() && compounds.len() < MAX_QUERY_WORDS {
                previous.push_str(word);
                compounds.push(text::stem(&previous));
            }
            previous.clear();
            previous.push_str(word);
        });
        if stems.is_empty() {
            return Err(SearchError::NoWords);
        }
        let known = |word: &str| self.vocabulary.get(word).copied();
        let mut groups: Vec<QueryWord> = Vec::with_capacity(stems.len() + compounds.len());
        for stem in &stems {
            let mut group = QueryWord::default();
            if let Some(term) = known(stem) {
                group.terms.push((term, 1.0));
                group.exact = true;
            }
            for other in related::related(stem) {
                // A word the query has itself counts as that word, not as a related one.
                if stems.iter().any(|known| **known == **other) {
                    continue;
                }
                if let Some(term) = known(other) {
                    group.terms.push((term, RELATED_WEIGHT));
                }
            }
            if !group.terms.is_empty() {
                groups.push(group);
            }
        }
        for compound in compounds {
            if stems.contains(&compound) {
                continue;
            }
            if let Some(term) = known(&compound) {
                groups.push(QueryWord {
                    terms: vec![(term, 1.0)],
                    exact: true,
                });
            }
        }
        Ok(Query {
            words: groups,
            len: descriptive,
        })
    }

    fn score_postings(&self, words: &[QueryWord]) -> Vec<(u32, f32)> {
        // One slot per tool: adding to it costs less than hashing the tool's number, and
        // zeroing 10,000 slots takes a few microseconds.
        let mut scores = vec![0.0_f32; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        // A query word's best score in each tool, for a word looked for as several.
        let mut best: Vec<f32> = Vec::new();
        let mut best_touched: Vec<u32> = Vec::new();
        let norms = self.norms();
        for word in words {
            let single = word.terms.len() == 1;
            if !single && best.is_empty() {
                best = vec![0.0_f32; self.docs.len()];
            }
            for &(term, weight) in &word.terms {
                let idf = weight * self.idf(term);
                for posting in &self.postings[term as usize] {
                    let doc = posting.doc as usize;
                    let score = idf * saturate(self.weighted(&norms, doc, &posting.counts));
                    if single {
                        if scores[doc] == 0.0 {
                            touched.push(posting.doc);
                        }
                        scores[doc] += score;
                    } else {
                        if best[doc] == 0.0 {
                            best_touched.push(posting.doc);
                        }
                        best[doc] = best[doc].max(score);
                    }
                }
            }
            for doc in best_touched.drain(..) {
                let slot = &mut scores[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += std::mem::take(&mut best[doc as usize]);
            }
        }
        touched
            .into_iter()
            .map(|doc| (doc, scores[doc as usize]))
            .collect()
    }

    /// The best `limit` of `scores` that `keep` keeps, best first, ties to the tool indexed
    /// first.
    fn rank(
        &self,
        mut scores: Vec<(u32, f32)>,
        limit: usize,
        keep: &impl Fn(&Doc) -> bool,
    ) -> Vec<SearchHit> {
        let order = |a: &(u32, f32), b: &(u32, f32)| {
            b.1.total_cmp(&a.1)
                .then(self.order(a.0).cmp(&self.order(b.0)))
        };
        if limit == 0 {
            return Vec::new();
        }
        // Most candidates are kept: rank a few more than asked, and only when too many of
        // those are filtered out, all of them.
        let mut hits = Vec::with_capacity(limit);
        let mut ranked = 0;
        let mut window = limit.saturating_mul(4).max(16);
        while hits.len() < limit && ranked < scores.len() {
            let rest = &mut scores[ranked..];
            if rest.len() > window {
                rest.select_nth_unstable_by(window - 1, order);
            }
            let take = rest.len().min(window);
            rest[..take].sort_unstable_by(order);
            for &(doc, score) in &rest[..take] {
                if hits.len() == limit {
                    break;
                }
                let kept = self.docs[doc as usize].as_ref().is_some_and(keep);
                if kept {
                    hits.extend(self.hit(doc, score));
                }
            }
            ranked += take;
            window = window.saturating_mul(4);
        }
        hits
    }

    fn order(&self, doc: u32) -> u64 {
        self.docs[doc as usize]
            .as_ref()
            .map_or(u64::MAX, |indexed| indexed.order)
    }

    /// The hit of the tool in slot `doc`, if it holds one.
    fn hit(&self, doc: u32, score: f32) -> Option<SearchHit> {
        let indexed = self.docs[doc as usize].as_ref()?;
        Some(SearchHit {
            name: indexed.name.to_string(),
            summary: summary(&indexed.description),
            score,
        })
    }

    /// BM25's inverse document frequency of a word.
    fn idf(&self, term: u32) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let (tools, with) = (self.len() as f32, self.postings[term as usize].len() as f32);
        (1.0 + (tools - with + 0.5) / (with + 0.5)).ln()
    }

    /// Per field, the reciprocal of its average length (0 when no tool has the field).
    fn norms(&self) -> [f32; FIELDS] {
        #[allow(clippy::cast_precision_loss)]
        let tools = self.len().max(1) as f32;
        let mut norms = [0.0; FIELDS];
        for (norm, &total) in norms.iter_mut().zip(&self.totals) {
            #[allow(clippy::cast_precision_loss)]
            let average = total as f32 / tools;
            if average > 0.0 {
                *norm = 1.0 / average;
            }
        }
        norms
    }

    /// BM25F's pseudo-frequency: each field's count weighted and normalized by its length
    /// relative to the average (`norms`, from [`norms`](Self::norms)).
    fn weighted(&self, norms: &[f32; FIELDS], doc: usize, counts: &[u16; FIELDS]) -> f32 {
        let lengths = &self.lengths[doc];
        let mut sum = 0.0;
        for field in 0..FIELDS {
            if counts[field] > 0 {
                #[allow(clippy::cast_precision_loss)]
                let relative = if norms[field] > 0.0 {
                    lengths[field] as f32 * norms[field]
                } else {
                    1.0
                };
                sum += WEIGHTS[field] * f32::from(counts[field])
                    / (1.0 - B[field] + B[field] * relative);
            }
        }
        sum
    }

    /// Takes the postings of the tool in slot `doc` out of the lists of its words, and its
    /// lengths out of the totals; the slot keeps its name.
    fn clear(&mut self, doc: u32) {
        let Some(indexed) = self.docs[doc as usize].as_mut() else {
            return;
        };
        let words = std::mem::take(&mut indexed.words);
        self.postings_written += words.len() as u64;
        for word in &words {
            let list = &mut self.postings[word.term as usize];
            let at = word.at as usize;
            list.swap_remove(at);
            // The list's last posting moved into the gap: tell its tool where it now is.
            if let Some(moved) = list.get(at).map(|posting| posting.doc) {
                if let Some(other) = self.docs[moved as usize].as_mut() {
                    if let Ok(found) = other
                        .words
                        .binary_search_by_key(&word.term, |known| known.term)
                    {
                        other.words[found].at = word.at;
                    }
                }
            }
        }
        let lengths = std::mem::take(&mut self.lengths[doc as usize]);
        for (total, length) in self.totals.iter_mut().zip(lengths) {
            *total -= u64::from(length);
        }
    }
}

/// One word of a query, as the indexed words it is looked for as, each with its weight: the
/// word itself (1) and its [related words](related) ([`RELATED_WEIGHT`]). A tool scores the
/// best of them, so a tool that has the word and two related ones counts the word once.
#[derive(Default)]
struct QueryWord {
    terms: Vec<(u32, f32)>,
    /// Whether the first of `terms` is the word itself (a word no tool has is looked for as
    /// its related words only).
    exact: bool,
}

/// A ranked query, read.
struct Query {
    /// Its distinct words, then the compounds of two words in a row that a tool has.
    words: Vec<QueryWord>,
    /// How many of its distinct words describe what it asks, known to the index or not:
    /// values (numbers, names, file names, addresses) do not.
    len: usize,
}

impl Query {
    /// Whether `doc` matches enough of this query to be found: any of its words itself, or
    /// words related to at least half of the words that describe what it asks (values do not
    /// count, see [`len`](Self::len)). A related word alone is weak evidence ("resize this
    /// photo to 800 pixels wide" is no request for a tool that reads image files), so a tool
    /// that has none of the query's own words must relate to much of it.
    fn enough(&self, doc: &Doc) -> bool {
        let has = |term: u32| {
            doc.words
                .binary_search_by_key(&term, |word| word.term)
                .is_ok()
        };
        let mut related = 0;
        for word in &self.words {
            let mut terms = word.terms.iter();
            if word.exact && terms.next().is_some_and(|&(term, _)| has(term)) {
                return true;
            }
            if terms.any(|&(term, _)| has(term)) {
                related += 1;
            }
        }
        related >= 1 && related * 2 >= self.len
    }
}

/// The buffers an index reads a tool with, kept from one tool to the next by a build.
#[derive(Default)]
struct Scratch {
    /// The tool's words, each numbered and with its field, in the order read.
    tokens: Vec<(u32, u8)>,
    /// The word being read.
    word: String,
    /// The text the regex mode reads besides the name and the description.
    extra: String,
}

/// The number of `word` in `vocabulary`, numbering it (with an empty list of postings) when
/// new.
fn term(
    vocabulary: &mut HashMap<Box<str>, u32, foldhash::fast::RandomState>,
    postings: &mut Vec<Vec<Posting>>,
    word: &str,
) -> u32 {
    if let Some(&term) = vocabulary.get(word) {
        return term;
    }
    let term = u32::try_from(postings.len()).unwrap_or(u32::MAX);
    vocabulary.insert(word.into(), term);
    postings.push(Vec::new());
    term
}

/// Calls `push` with each text of a tool and its field, in order: its name, its title, its
/// description, then its parameters' names and descriptions. Writes into `extra` (cleared
/// first) the text the regex mode reads besides the name and description.
fn read_fields(
    tool: &ChatTool,
    title: Option<&str>,
    extra: &mut String,
    mut push: impl FnMut(usize, &str),
) {
    extra.clear();
    push(NAME, tool.name());
    if let Some(title) = title {
        push(TITLE, title);
        extra.push_str(title);
        extra.push('\n');
    }
    push(DESCRIPTION, tool.description());
    let mut budget = 256;
    parameters(tool.parameters(), 0, &mut budget, &mut |field, text| {
        push(field, text);
        if extra.len() < MAX_EXTRA {
            extra.push_str(text);
            extra.push('\n');
        }
    });
}

/// The regex mode's own error text, without the pattern repeated back in full.
fn pattern_error(error: &regex::Error) -> String {
    match error {
        regex::Error::CompiledTooBig(_) => {
            "the pattern compiles too large; use a shorter, simpler pattern".to_owned()
        }
        error => {
            let text = error.to_string();
            let last = text.lines().last().unwrap_or_default();
            last.trim_start_matches("error: ").to_owned()
        }
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
        for query in [
            "read file",
            "directory path",
            "email address",
            "path",
            "make a folder",
            "show me the document",
            "erase mail",
        ] {
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

    fn top(index: &ToolIndex, query: &str) -> Vec<String> {
        index
            .search(query, 5)
            .unwrap()
            .hits
            .into_iter()
            .map(|hit| hit.name)
            .collect()
    }

    #[test]
    fn a_request_in_other_words_finds_the_tool_below_one_in_its_own() {
        let mut tools = tools();
        tools.push(ChatTool::new(
            "make_coffee",
            "Make a cup of coffee.",
            json!({"type": "object"}),
        ));
        let index = ToolIndex::new(tools.iter().map(|tool| (tool, None)));
        // `make` and `folder` are related to `create` and `directory`: found.
        assert_eq!(
            top(&index, "could you make me a folder?"),
            ["create_directory", "make_coffee"]
        );
        // A tool with the word itself comes first.
        assert_eq!(
            top(&index, "make a new coffee"),
            ["make_coffee", "create_directory"]
        );
        assert_eq!(top(&index, "erase a message"), ["send_email"]);
        // Filler alone is no request.
        assert_eq!(index.search("can you please", 5), Err(SearchError::NoWords));
    }

    #[test]
    fn related_words_alone_must_cover_half_of_what_a_request_describes() {
        let tools = [
            ChatTool::new("read_image", "Read an image.", json!({"type": "object"})),
            ChatTool::new("rename", "Set a new filename.", json!({"type": "object"})),
        ];
        let index = ToolIndex::new(tools.iter().map(|tool| (tool, None)));
        // `photo` is related to `image`, but `resize`, `pixels` and `wide` are not.
        assert!(top(&index, "resize this photo to 800 pixels wide").is_empty());
        assert!(
            index
                .search_by_scan("resize this photo to 800 pixels", 5)
                .unwrap()
                .hits
                .is_empty()
        );
        // `show` and `picture` are both related: the whole request.
        assert_eq!(top(&index, "show the picture"), ["read_image"]);
        // Names and file names are values, not descriptions: they do not count.
        assert_eq!(
            top(&index, "show Alice the picture holiday.png"),
            ["read_image"]
        );
        // Two words in a row are looked for as one: no tool has `file` or `name`.
        assert_eq!(top(&index, "change the file name"), ["rename"]);
    }

    /// Tool `n` of a generated set: a verb on a noun of a domain, described.
    fn generated(n: usize, variant: &str) -> ChatTool {
        const DOMAINS: [&str; 7] = ["github", "slack", "files", "mail", "maps", "shop", "crm"];
        const VERBS: [&str; 5] = ["create", "list", "delete", "update", "search"];
        let domain = DOMAINS[n % DOMAINS.len()];
        let verb = VERBS[(n / DOMAINS.len()) % VERBS.len()];
        ChatTool::new(
            format!("{domain}_{verb}_{n}"),
            format!("{verb} an item in {domain} {variant}; returns its id and owner."),
            json!({"type": "object", "properties": {
                "item_id": {"type": "string", "description": format!("The {domain} item.")},
                "limit": {"type": "integer", "description": "The most results."}
            }}),
        )
    }

    fn names(matches: &SearchMatches) -> Vec<(String, f32)> {
        matches
            .hits
            .iter()
            .map(|hit| (hit.name.clone(), hit.score))
            .collect()
    }

    /// The distinct words of the tool in slot `doc`: the postings an update of it writes.
    fn words_of(index: &ToolIndex, name: &str) -> u64 {
        let doc = index.by_name[name];
        index.docs[doc as usize].as_ref().unwrap().words.len() as u64
    }

    #[test]
    fn an_update_writes_the_postings_of_that_tool_only_whatever_the_size_of_the_index() {
        for size in [10, 1_000] {
            let tools: Vec<ChatTool> = (0..size).map(|n| generated(n, "")).collect();
            let mut index = ToolIndex::new(tools.iter().map(|tool| (tool, None)));
            let before = index.postings_written();

            // Replacing a tool: its old postings out, its new ones in, nothing else.
            let name = tools[7].name().to_owned();
            let old = words_of(&index, &name);
            let changed = ChatTool::new(
                &name,
                "Archive the quarterly invoices of a customer.",
                json!({"type": "object"}),
            );
            index.upsert(&changed, Some("Invoices"));
            let new = words_of(&index, &name);
            assert_eq!(index.postings_written() - before, old + new, "{size} tools");
            assert_eq!(index.len(), size);

            // Adding and removing one: its own postings.
            let before = index.postings_written();
            let added = generated(size + 1, "extra words here");
            index.upsert(&added, None);
            let added_words = words_of(&index, added.name());
            assert!(index.remove(added.name()));
            assert!(!index.remove(added.name()));
            assert_eq!(
                index.postings_written() - before,
                2 * added_words,
                "{size} tools"
            );
            assert_eq!(
                index.search("quarterly invoices", 1).unwrap().hits[0].name,
                name
            );
        }
    }

    #[test]
    fn incremental_updates_rank_exactly_as_a_fresh_build() {
        let mut index = ToolIndex::default();
        // What the index should hold, in order: a replaced tool keeps its place, a removed
        // and re-added one goes last.
        let mut expected: Vec<ChatTool> = Vec::new();
        for n in 0..300 {
            let tool = generated(n, "");
            index.upsert(&tool, None);
            expected.push(tool);
        }
        for n in (0..300).step_by(3) {
            let name = generated(n, "").name().to_owned();
            assert!(index.remove(&name));
            expected.retain(|tool| tool.name() != name);
        }
        let mut upsert = |index: &mut ToolIndex, tool: ChatTool| {
            index.upsert(&tool, None);
            match expected
                .iter_mut()
                .find(|known| known.name() == tool.name())
            {
                Some(known) => *known = tool,
                None => expected.push(tool),
            }
        };
        for n in (1..300).step_by(5) {
            upsert(
                &mut index,
                generated(n, "now with a calendar and a meeting"),
            );
        }
        for n in (0..60).step_by(3) {
            upsert(&mut index, generated(n, "back again"));
        }
        let fresh = ToolIndex::new(expected.iter().map(|tool| (tool, None)));
        assert_eq!(index.len(), fresh.len());
        for query in [
            "create github item",
            "calendar meeting",
            "back again",
            "delete mail",
            "owner id",
            "regex:^slack_(list|search)",
            "select:files_list_9,github_create_0,maps_delete_25",
        ] {
            let incremental = index.search(query, 10).unwrap();
            assert_eq!(
                names(&incremental),
                names(&fresh.search(query, 10).unwrap()),
                "{query}"
            );
            assert_eq!(
                incremental.missing,
                fresh.search(query, 10).unwrap().missing
            );
            if !query.contains(':') {
                assert_eq!(
                    names(&incremental),
                    names(&index.search_by_scan(query, 10).unwrap()),
                    "{query}"
                );
            }
        }
    }

    #[test]
    fn a_filter_leaves_tools_out_without_losing_places() {
        let tools: Vec<ChatTool> = (0..200).map(|n| generated(n, "")).collect();
        let index = ToolIndex::new(tools.iter().map(|tool| (tool, None)));
        let all = index.search("github", 200).unwrap();
        // Keep only every fifth github tool: the first four are among the twenty ranked first,
        // the fifth is not, and still found.
        let kept: Vec<&str> = all
            .hits
            .iter()
            .step_by(5)
            .map(|hit| hit.name.as_str())
            .collect();
        assert!(kept.len() > 5);
        let found = index
            .search_where("github", 5, |name| kept.contains(&name))
            .unwrap();
        let found: Vec<&str> = found.hits.iter().map(|hit| hit.name.as_str()).collect();
        assert_eq!(found, kept[..5]);
        let selected = index
            .search_where("select:github_create_0,slack_create_1", 5, |name| {
                name.starts_with("slack")
            })
            .unwrap();
        assert_eq!(selected.hits.len(), 1);
        assert_eq!(selected.missing, ["github_create_0"]);
    }

    #[test]
    fn the_regex_mode_matches_names_first_and_refuses_patterns_it_cannot_run() {
        let tools = tools();
        let index = ToolIndex::new(tools.iter().map(|tool| (tool, Some("Tool title"))));
        assert_eq!(top(&index, "regex:DIRECTORY"), ["create_directory"]);
        // `send_email`'s name matches, `create_directory`'s parameter text does too.
        assert_eq!(
            top(&index, "regex:e?mail|where"),
            ["send_email", "create_directory"]
        );
        assert_eq!(top(&index, "regex:^read"), ["readFile"]);
        assert_eq!(
            top(&index, "regex:tool title"),
            ["create_directory", "readFile", "send_email"]
        );
        assert!(top(&index, "regex:nothing like this").is_empty());

        for bad in [
            "regex:(",
            "regex:[z-a]",
            "regex:a{1000}{1000}{1000}",
            r"regex:\p{L}{100000}",
        ] {
            match index.search(bad, 5) {
                Err(SearchError::Pattern { reason }) => {
                    assert!(!reason.is_empty() && reason.len() < 200, "{bad}: {reason}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        let nested = format!("regex:{}a{}", "(".repeat(100), ")".repeat(100));
        assert!(matches!(
            index.search(&nested, 5),
            Err(SearchError::Pattern { .. })
        ));
        assert_eq!(index.search("regex:", 5), Err(SearchError::Empty));
        assert_eq!(index.search("regex:   ", 5), Err(SearchError::Empty));
    }

    #[test]
    fn hostile_queries_get_an_error_or_nothing_in_both_modes() {
        // Long descriptions, so a pattern that backtracks would have a lot to chew on.
        let long = "a".repeat(3_000);
        let tools: Vec<ChatTool> = (0..300)
            .map(|n| {
                ChatTool::new(
                    format!("tool_{n}"),
                    format!("{long} {n}"),
                    json!({"type": "object"}),
                )
            })
            .collect();
        let index = ToolIndex::new(tools.iter().map(|tool| (tool, None)));
        let megabyte = "x".repeat(1 << 20);
        assert_eq!(index.search("", 5), Err(SearchError::Empty));
        assert_eq!(index.search(" \t\n ", 5), Err(SearchError::Empty));
        for query in [
            megabyte.clone(),
            format!("regex:{megabyte}"),
            format!("select:{megabyte}"),
        ] {
            assert_eq!(
                index.search(&query, 5),
                Err(SearchError::TooLong {
                    len: query.len(),
                    max: MAX_QUERY_BYTES
                })
            );
        }
        assert_eq!(
            index.search("\u{0}\u{7}\u{1b}[2J\u{202e}", 5),
            Err(SearchError::NoWords)
        );
        assert_eq!(index.search("?!... ---", 5), Err(SearchError::NoWords));
        assert!(index.search("zzz qqq", 5).unwrap().hits.is_empty());
        assert!(index.search("\u{0}zzz\u{0}", 5).unwrap().hits.is_empty());
        assert!(index.search("regex:\u{0}", 5).unwrap().hits.is_empty());
        // Patterns that take exponential time in a backtracking engine: linear here, and
        // they match nothing (the descriptions have no `b`, no `y`).
        for bomb in [
            "regex:(a*)*b",
            "regex:(a+)+b",
            "regex:(a|aa)+b",
            "regex:(x+x+)+y",
            "regex:(a|a?)+$b",
        ] {
            assert!(index.search(bomb, 5).unwrap().hits.is_empty(), "{bomb}");
        }
        // A pattern at the length limit made of many alternatives compiles or is refused.
        let wide = format!("regex:{}", ["[a-z]{1,50}"; 80].join("|"));
        assert!(wide.len() <= MAX_QUERY_BYTES);
        match index.search(&wide, 5) {
            Ok(found) => assert_eq!(found.hits.len(), 5),
            Err(SearchError::Pattern { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
        assert!(index.search("select:,,, ", 5).is_err());
        assert!(index.search("widget", 0).unwrap().hits.is_empty());
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
