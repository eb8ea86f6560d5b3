//! Hybrid tool search: the lexical ranking of a snapshot's deferred tools fused with a ranking
//! by the similarity of their embeddings to the query's, each tool's embedding computed once
//! per definition and cached.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use crate::{
    model::{EmbedError, Embedder, check_embeddings},
    registry::RegistrySnapshot,
    search::{
        SearchError, SearchHit, SearchMatches,
        hybrid::{cosine, embedding_text, reciprocal_rank_fusion, text_key},
        summary,
    },
};

/// How deep each ranking goes before the two are fused, the `k` of the fusion and the weight
/// of the lexical ranking (the semantic one weighs 1). Chosen on half of the requests of the
/// evaluation set (`tests/data/tool_search_eval`, the even lines) and measured on the other
/// half: a shallow fusion with a small `k` and the words counting half lets a clear lexical
/// match win without letting the weak matches of a request in other words crowd out the
/// tools its meaning finds.
const DEPTH: usize = 10;
const FUSION_K: f32 = 10.0;
const LEXICAL_WEIGHT: f32 = 0.5;

/// Tool search that finds tools by meaning as well as by words: BM25F over the tools' text
/// (what [`RegistrySnapshot::search`] does) fused by reciprocal rank with a ranking by the
/// cosine similarity of the tools' embeddings to the query's. A request in words that no
/// tool shares and that the built-in table of related words does not know ("somewhere to put
/// my holiday pictures" for `create_directory`) still finds it.
///
/// Each tool's text (see [`embedding_text`]) is embedded once per definition: the vectors are
/// cached by a hash of that text, so a changed definition is embedded again and an unchanged
/// one never. When the embedder fails (an error status, no connection, vectors of the wrong
/// number or dimension), the search falls back to the lexical ranking and says why
/// ([`HybridMatches::fallback`], and a warning in the log); it never fails for that.
/// `select:` and `regex:` queries are answered by the index alone.
///
/// Give it to an agent with [`AgentOptions::hybrid_search`](super::AgentOptions::hybrid_search).
///
/// ```no_run
/// use tool_core::{AgentOptions, agent::HybridSearch, model::{Endpoint, OpenAiEmbedder}};
///
/// let embedder = OpenAiEmbedder::new(Endpoint::new("http://127.0.0.1:8080/v1", "minilm"))
///     .unwrap();
/// let options = AgentOptions::new().hybrid_search(HybridSearch::new(embedder));
/// # let _ = options;
/// ```
pub struct HybridSearch {
    embedder: Arc<dyn Embedder>,
    /// Embeddings of tool texts by [`text_key`].
    cache: Mutex<HashMap<u64, Arc<[f32]>>>,
    /// How many tool texts were sent to the embedder so far.
    embedded: AtomicU64,
}

impl std::fmt::Debug for HybridSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HybridSearch")
            .field("cached", &lock(&self.cache).len())
            .finish_non_exhaustive()
    }
}

/// What a hybrid search found.
#[derive(Debug)]
#[non_exhaustive]
pub struct HybridMatches {
    /// The tools found, best first; each hit's score is its fused score (or its BM25F score
    /// after a fallback).
    pub matches: SearchMatches,
    /// Why the ranking is lexical only, when the embedder failed.
    pub fallback: Option<EmbedError>,
}

impl HybridSearch {
    /// A hybrid search embedding with `embedder`.
    pub fn new(embedder: impl Embedder + 'static) -> Self {
        Self {
            embedder: Arc::new(embedder),
            cache: Mutex::default(),
            embedded: AtomicU64::new(0),
        }
    }

    /// How many tool texts were sent to the embedder so far (the query's not counted): each
    /// definition once, however many searches.
    pub fn embedded_tools(&self) -> u64 {
        self.embedded.load(Ordering::Relaxed)
    }

    /// The `limit` deferred tools of `snapshot` that best match `query`. The query's errors
    /// are those of [`RegistrySnapshot::search`]; the embedder's are not errors (see
    /// [`HybridMatches::fallback`]).
    pub async fn search(
        &self,
        snapshot: &RegistrySnapshot,
        query: &str,
        limit: usize,
    ) -> Result<HybridMatches, SearchError> {
        let lexical = snapshot.search(query, DEPTH.max(limit))?;
        let trimmed = query.trim_start();
        if trimmed.starts_with("select:") || trimmed.starts_with("regex:") {
            return Ok(HybridMatches {
                matches: first(lexical, limit),
                fallback: None,
            });
        }
        let tools = deferred_tools(snapshot);
        match self.similar(&tools, query).await {
            Ok(semantic) => Ok(HybridMatches {
                matches: fuse(&tools, &lexical, &semantic, DEPTH.max(limit), limit),
                fallback: None,
            }),
            Err(error) => {
                tracing::warn!(%error, "the embedder failed; tool search ranks by words alone");
                Ok(HybridMatches {
                    matches: first(lexical, limit),
                    fallback: Some(error),
                })
            }
        }
    }

    /// The tools by the similarity of their embeddings to the query's, best first, as
    /// positions in `tools`.
    async fn similar(&self, tools: &[Tool], query: &str) -> Result<Vec<usize>, EmbedError> {
        let missing: Vec<&Tool> = {
            let cache = lock(&self.cache);
            let mut seen = std::collections::HashSet::new();
            tools
                .iter()
                .filter(|tool| !cache.contains_key(&tool.key) && seen.insert(tool.key))
                .collect()
        };
        let mut dimension = lock(&self.cache).values().next().map(|vector| vector.len());
        for batch in missing.chunks(self.embedder.max_batch().max(1)) {
            let texts: Vec<String> = batch.iter().map(|tool| tool.text.clone()).collect();
            let vectors = self.embedder.embed(&texts).await?;
            check_embeddings(&vectors, texts.len(), dimension)?;
            dimension = vectors.first().map(Vec::len).or(dimension);
            self.embedded
                .fetch_add(texts.len() as u64, Ordering::Relaxed);
            let mut cache = lock(&self.cache);
            for (tool, vector) in batch.iter().zip(vectors) {
                cache.insert(tool.key, vector.into());
            }
        }
        let query = self.embedder.embed(&[query.to_owned()]).await?;
        check_embeddings(&query, 1, dimension)?;
        let cache = lock(&self.cache);
        let mut scored: Vec<(usize, f32)> = tools
            .iter()
            .enumerate()
            .filter_map(|(at, tool)| Some((at, cosine(&query[0], cache.get(&tool.key)?))))
            .collect();
        // Tools of this snapshot that came and went since: forget the vectors of texts no tool
        // has any more once they outnumber the tools.
        if cache.len() > 2 * tools.len() + 1_024 {
            drop(cache);
            let keys: std::collections::HashSet<u64> = tools.iter().map(|tool| tool.key).collect();
            lock(&self.cache).retain(|key, _| keys.contains(key));
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(scored.into_iter().map(|(at, _)| at).collect())
    }
}

/// A deferred tool as hybrid search reads it.
struct Tool {
    name: String,
    description: String,
    text: String,
    key: u64,
}

/// The enabled deferred tools of `snapshot`, in registration order.
fn deferred_tools(snapshot: &RegistrySnapshot) -> Vec<Tool> {
    snapshot
        .definitions()
        .into_iter()
        .filter(|definition| snapshot.is_deferred(definition.name()))
        .map(|definition| {
            let title = snapshot
                .metadata(definition.name())
                .and_then(|metadata| metadata.title.as_deref());
            let text = embedding_text(&definition, title);
            Tool {
                name: definition.name().to_owned(),
                description: definition.description().to_owned(),
                key: text_key(&text),
                text,
            }
        })
        .collect()
}

/// The first `depth` of the lexical and of the semantic ranking fused, the first `limit`.
fn fuse(
    tools: &[Tool],
    lexical: &SearchMatches,
    semantic: &[usize],
    depth: usize,
    limit: usize,
) -> SearchMatches {
    let lexical: Vec<&str> = lexical
        .hits
        .iter()
        .take(depth)
        .map(|hit| hit.name.as_str())
        .collect();
    let semantic: Vec<&str> = semantic
        .iter()
        .take(depth)
        .map(|&at| tools[at].name.as_str())
        .collect();
    let by_name: HashMap<&str, &Tool> = tools
        .iter()
        .map(|tool| (tool.name.as_str(), tool))
        .collect();
    let hits = reciprocal_rank_fusion(&[(&lexical, LEXICAL_WEIGHT), (&semantic, 1.0)], FUSION_K)
        .into_iter()
        .filter_map(|(name, score)| {
            let tool = by_name.get(name)?;
            Some(SearchHit {
                name: name.to_owned(),
                summary: summary(&tool.description),
                score,
            })
        })
        .take(limit)
        .collect();
    SearchMatches {
        hits,
        missing: Vec::new(),
    }
}

fn first(mut matches: SearchMatches, limit: usize) -> SearchMatches {
    matches.hits.truncate(limit);
    matches
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
