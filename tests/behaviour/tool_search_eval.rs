//! Retrieval quality of tool search, over the tools of real MCP servers: their `tools/list`
//! answers as the servers sent them (`tests/data/tool_search_eval/servers/`, each with its
//! package and version, dumped by `dump_tools.py` there), and requests labeled with the tools
//! that serve them (`queries.txt`): keyword queries as a model writes them, requests in the
//! user's own words, and requests no tool serves.
//!
//! For each kind it reports recall@1 and recall@5 (the share of requests with one of their
//! tools among the first one or five found) and the mean reciprocal rank of the first such
//! tool, and for requests no tool serves, the share that found nothing.

use std::{path::PathBuf, sync::Arc};

use serde_json::Value;
use tool_core::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolRegistry, async_trait};

/// The folder of the evaluation set.
pub(crate) fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/tool_search_eval")
}

/// A dumped tool: its definition as a [`ChatTool`], and its title.
pub(crate) struct EvalTool {
    pub(crate) definition: ChatTool,
    pub(crate) title: Option<String>,
}

/// Every tool of the dumped servers, in file order, with their names, titles, descriptions
/// and input schemas as the servers sent them (`without parameters`: an empty object schema).
pub(crate) fn eval_tools(with_parameters: bool) -> Vec<EvalTool> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir().join("servers"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut tools = Vec::new();
    for file in files {
        let listing: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert!(
            listing["package"].is_string() && listing["version"].is_string(),
            "{}: a source names its package and version",
            file.display()
        );
        for tool in listing["tools"].as_array().unwrap() {
            let parameters = if with_parameters {
                tool["inputSchema"].clone()
            } else {
                serde_json::json!({"type": "object"})
            };
            tools.push(EvalTool {
                definition: ChatTool::new(
                    tool["name"].as_str().unwrap(),
                    tool["description"].as_str().unwrap_or_default(),
                    parameters,
                ),
                title: tool["title"].as_str().map(str::to_owned),
            });
        }
    }
    tools
}

/// The kinds of requests, in the order they are reported.
pub(crate) const KINDS: [&str; 3] = ["keyword", "paraphrase", "none"];

/// One labeled request.
pub(crate) struct Request {
    pub(crate) kind: String,
    pub(crate) tools: Vec<String>,
    pub(crate) query: String,
}

/// The development set (`queries.txt`): the requests the ranking was tuned on.
pub(crate) fn requests() -> Vec<Request> {
    requests_in("queries.txt")
}

/// The held-out set (`queries_heldout.txt`): requests written before the ranking was tuned and
/// never used to tune it, so that its figures say how the ranking does on requests it was not
/// shaped on.
pub(crate) fn heldout_requests() -> Vec<Request> {
    requests_in("queries_heldout.txt")
}

/// The labeled requests of a file of the evaluation set.
fn requests_in(file: &str) -> Vec<Request> {
    let text = std::fs::read_to_string(data_dir().join(file)).unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let mut parts = line.splitn(3, '\t');
            let (kind, tools, query) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            assert!(KINDS.contains(&kind), "{line}");
            Request {
                kind: kind.to_owned(),
                tools: tools
                    .split(',')
                    .filter(|tool| *tool != "-")
                    .map(str::to_owned)
                    .collect(),
                query: query.to_owned(),
            }
        })
        .collect()
}

/// The figures of one kind of request.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Figures {
    pub(crate) requests: usize,
    pub(crate) recall_1: f64,
    pub(crate) recall_5: f64,
    pub(crate) mrr: f64,
    /// For requests no tool serves: the share that found nothing.
    pub(crate) empty: f64,
}

/// The figures per kind (in [`KINDS`] order) of a search that returns names, best first.
pub(crate) fn measure(
    requests: &[Request],
    mut search: impl FnMut(&str) -> Vec<String>,
) -> [Figures; 3] {
    let mut figures = [Figures::default(); 3];
    for request in requests {
        let kind = KINDS.iter().position(|kind| *kind == request.kind).unwrap();
        let found = search(&request.query);
        let figure = &mut figures[kind];
        figure.requests += 1;
        if request.tools.is_empty() {
            if found.is_empty() {
                figure.empty += 1.0;
            }
            continue;
        }
        if let Some(rank) = found.iter().position(|name| request.tools.contains(name)) {
            if rank == 0 {
                figure.recall_1 += 1.0;
            }
            if rank < 5 {
                figure.recall_5 += 1.0;
            }
            #[allow(clippy::cast_precision_loss)]
            let reciprocal = 1.0 / (rank + 1) as f64;
            figure.mrr += reciprocal;
        }
    }
    for figure in &mut figures {
        #[allow(clippy::cast_precision_loss)]
        let count = figure.requests.max(1) as f64;
        figure.recall_1 /= count;
        figure.recall_5 /= count;
        figure.mrr /= count;
        figure.empty /= count;
    }
    figures
}

/// Prints one table row per kind.
pub(crate) fn print(label: &str, figures: &[Figures; 3]) {
    for (kind, figure) in KINDS.iter().zip(figures) {
        if *kind == "none" {
            println!(
                "{label:<28} {kind:<10} n={:<3} found nothing {:.2}",
                figure.requests, figure.empty
            );
        } else {
            println!(
                "{label:<28} {kind:<10} n={:<3} recall@1 {:.2}  recall@5 {:.2}  MRR {:.2}",
                figure.requests, figure.recall_1, figure.recall_5, figure.mrr
            );
        }
    }
}

/// The names a lexical search of `tools` finds for `query`, ten at most.
fn lexical(tools: &[EvalTool]) -> impl Fn(&str) -> Vec<String> + '_ {
    let index = tool_core::search::ToolIndex::new(
        tools
            .iter()
            .map(|tool| (&tool.definition, tool.title.as_deref())),
    );
    move |query| {
        index
            .search(query, 10)
            .map(|found| found.hits.into_iter().map(|hit| hit.name).collect())
            .unwrap_or_default()
    }
}

#[test]
fn the_evaluation_set_has_enough_labeled_requests_of_each_kind() {
    let names: Vec<String> = eval_tools(true)
        .iter()
        .map(|tool| tool.definition.function.name.to_string())
        .collect();
    let development = requests();
    let heldout = heldout_requests();
    for (requests, least, least_per_kind) in [(&development, 200, 20), (&heldout, 60, 8)] {
        assert!(requests.len() >= least, "{}", requests.len());
        for request in requests {
            for tool in &request.tools {
                assert!(names.contains(tool), "{}: no tool {tool}", request.query);
            }
        }
        for kind in KINDS {
            let count = requests
                .iter()
                .filter(|request| request.kind == kind)
                .count();
            assert!(count >= least_per_kind, "{kind}: {count}");
        }
    }
    // The held-out requests are requests of their own, not copies of the development ones.
    for request in &heldout {
        assert!(
            !development
                .iter()
                .any(|known| known.query.eq_ignore_ascii_case(&request.query)),
            "{}",
            request.query
        );
    }
}

/// Lexical search finds the tool of a keyword query among its first five at least nine times
/// in ten, and that of a request in the user's own words three times in four: such requests
/// share few words with the tools they need ("make a new folder" for `create_directory`), and
/// are found through the words related to theirs (`make` → `create`, `folder` → `directory`).
/// Requests no tool serves find nothing as often as before related words were looked for (15
/// of the 25 of the development set, 16 without parameter text).
///
/// The held-out requests were written before the ranking was tuned on the development ones:
/// there too, keyword queries reach nine in ten and requests in the user's own words three in
/// four (0.79; 0.74 without parameter text, not asserted), but one more of their ten
/// requests no tool serves finds a tool ("post this on twitter": `post` is related to `send`).
#[test]
fn lexical_search_finds_the_tools_real_requests_ask_for() {
    let requests = requests();
    let heldout = heldout_requests();
    let with = eval_tools(true);
    let without = eval_tools(false);
    let figures = measure(&requests, lexical(&with));
    let no_parameters = measure(&requests, lexical(&without));
    let heldout_figures = measure(&heldout, lexical(&with));
    print("lexical", &figures);
    print("lexical, no parameter text", &no_parameters);
    print("lexical, held out", &heldout_figures);
    print(
        "lexical, held out, no params",
        &measure(&heldout, lexical(&without)),
    );
    let [keyword, paraphrase, _] = heldout_figures;
    assert!(
        keyword.recall_5 >= 0.9 && paraphrase.recall_5 >= 0.75,
        "held out: keyword recall@5 {}, paraphrase recall@5 {}",
        keyword.recall_5,
        paraphrase.recall_5
    );
    for ([keyword, paraphrase, none], nothing_found) in [(figures, 15), (no_parameters, 16)] {
        assert!(
            keyword.recall_5 >= 0.9,
            "keyword recall@5 {}",
            keyword.recall_5
        );
        assert!(
            paraphrase.recall_5 >= 0.75,
            "paraphrase recall@5 {}",
            paraphrase.recall_5
        );
        #[allow(clippy::cast_precision_loss)]
        let share = f64::from(nothing_found) / none.requests as f64;
        assert!(none.empty >= share, "found nothing {}", none.empty);
    }
}

/// A dumped tool as a registered one, answering its own name.
pub(crate) struct Dumped(pub(crate) ChatTool);

#[async_trait]
impl ExecutableTool for Dumped {
    fn name(&self) -> &str {
        &self.0.function.name
    }

    fn get_schema(&self) -> ChatTool {
        self.0.clone()
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        Ok(format!("{} done", self.0.function.name))
    }
}

/// A registry of `count` tools: the dumped servers' tools over and over, each copy named
/// `<name>_<n>` (five digits), with its description and schema unchanged.
pub(crate) fn dumped_registry(count: usize) -> Arc<ToolRegistry> {
    let tools = eval_tools(true);
    let registry = ToolRegistry::new();
    let errors = registry.register_all((0..count).map(|n| {
        let tool = &tools[n % tools.len()].definition;
        let definition = ChatTool::new(
            format!("{}_{n:05}", tool.function.name),
            &tool.function.description,
            tool.parameters().clone(),
        );
        Arc::new(Dumped(definition)) as Arc<dyn ExecutableTool>
    }));
    assert!(errors.is_empty(), "{errors:?}");
    Arc::new(registry)
}
