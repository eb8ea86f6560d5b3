//! Automatic deferral: past a budget (a number of tools, or estimated tokens of their
//! definitions), an agent defers every tool it would offer but the pinned ones. Over a
//! generated registry of real-looking definitions.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{
    Agent, AgentOptions, ChatTool, ExecutableTool, JsonObject, Provider, ToolError, ToolRegistry,
    ToolToggles,
    agent::DeferBudget,
    async_trait,
    model::{ScriptedModel, ScriptedResponse},
};

use crate::tool_search::{names, result_of, search};

/// A tool's name, description, and parameters with their descriptions.
type Template = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// Definitions shaped like those of the reference filesystem, git and fetch MCP servers (their
/// names, descriptions and parameters), repeated with distinct names by [`generated`].
const TEMPLATES: &[Template] = &[
    (
        "read_text_file",
        "Read the complete contents of a file from the file system as text. Handles various \
         text encodings and provides detailed error messages if the file cannot be read. Use \
         this tool when you need to examine the contents of a single file. Only works within \
         allowed directories.",
        &[
            ("path", "The path of the file to read."),
            (
                "head",
                "If provided, returns only the first N lines of the file.",
            ),
        ],
    ),
    (
        "write_file",
        "Create a new file or completely overwrite an existing file with new content. Use with \
         caution as it will overwrite existing files without warning. Handles text content \
         with proper encoding. Only works within allowed directories.",
        &[
            ("path", "The path of the file to write."),
            ("content", "The text to write."),
        ],
    ),
    (
        "create_directory",
        "Create a new directory or ensure a directory exists. Can create multiple nested \
         directories in one operation. If the directory already exists, this operation will \
         succeed silently.",
        &[("path", "The directory to create.")],
    ),
    (
        "list_directory",
        "Get a detailed listing of all files and directories in a specified path. Results \
         clearly distinguish between files and directories with [FILE] and [DIR] prefixes.",
        &[("path", "The directory to list.")],
    ),
    (
        "move_file",
        "Move or rename files and directories. Can move files between directories and rename \
         them in a single operation. If the destination exists, the operation will fail.",
        &[
            ("source", "The path to move."),
            ("destination", "Where to move it."),
        ],
    ),
    (
        "search_files",
        "Recursively search for files and directories matching a pattern. Searches through all \
         subdirectories from the starting path. The search is case-insensitive and matches \
         partial names.",
        &[
            ("path", "Where the search starts."),
            ("pattern", "The glob pattern to match."),
            ("excludePatterns", "Patterns to leave out."),
        ],
    ),
    (
        "git_status",
        "Shows the working tree status of a git repository.",
        &[("repo_path", "The path of the git repository.")],
    ),
    (
        "git_commit",
        "Records changes to the repository with a commit message.",
        &[
            ("repo_path", "The path of the git repository."),
            ("message", "The commit message."),
        ],
    ),
    (
        "git_log",
        "Shows the commit logs, with optional date filtering.",
        &[
            ("repo_path", "The path of the git repository."),
            ("max_count", "The most commits to show."),
            ("start_timestamp", "Show commits after this date."),
        ],
    ),
    (
        "fetch",
        "Fetches a URL from the internet and optionally extracts its contents as markdown. \
         This tool grants you internet access: you can fetch the most up-to-date information \
         and let the user know that.",
        &[
            ("url", "URL to fetch."),
            ("max_length", "Maximum number of characters to return."),
            ("start_index", "Start the content at this character index."),
            (
                "raw",
                "Get the actual HTML content, without simplification.",
            ),
        ],
    ),
];

/// A tool with a generated definition that answers its own name.
pub(crate) struct Generated(ChatTool);

#[async_trait]
impl ExecutableTool for Generated {
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

/// Tool `n`: the template `n % 10`, named `<template>_<n>` (four digits).
pub(crate) fn definition(n: usize) -> ChatTool {
    let (name, description, parameters) = TEMPLATES[n % TEMPLATES.len()];
    let properties: serde_json::Map<String, Value> = parameters
        .iter()
        .map(|(name, description)| {
            (
                (*name).to_owned(),
                json!({ "type": "string", "description": description }),
            )
        })
        .collect();
    ChatTool::new(
        format!("{name}_{n:04}"),
        description,
        json!({
            "type": "object",
            "properties": properties,
            "required": [parameters[0].0],
        }),
    )
}

/// A registry of `count` generated tools, none deferred by itself.
pub(crate) fn generated(count: usize) -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    for n in 0..count {
        registry.register(Generated(definition(n))).unwrap();
    }
    Arc::new(registry)
}

fn first_request_names(registry: &Arc<ToolRegistry>, options: AgentOptions) -> Vec<String> {
    let model = ScriptedModel::new([ScriptedResponse::text("Hello.")]);
    let agent = Agent::new(model.clone(), options.registry(registry.clone()));
    futures::executor::block_on(agent.chat("hello")).unwrap();
    names(&model.requests()[0])
}

#[test]
fn past_a_number_of_tools_everything_but_the_pinned_tools_is_deferred() {
    let registry = generated(200);
    let pinned = ["list_directory_0003", "read_text_file_0000"];

    // Within the budget: every tool, no search tool.
    let all = first_request_names(
        &registry,
        AgentOptions::new().defer_budget(DeferBudget::tools(200)),
    );
    assert_eq!(all.len(), 200);
    assert!(!all.contains(&"search_tools".to_owned()));

    // Past it: the pinned tools (in registration order) and the search tool.
    let offered = first_request_names(
        &registry,
        AgentOptions::new().defer_budget(DeferBudget::tools(199).pin(pinned)),
    );
    assert_eq!(
        offered,
        ["read_text_file_0000", "list_directory_0003", "search_tools"]
    );

    // Switched-off tools do not count: 160 off leaves 40, within a budget of 50.
    let toggles = ToolToggles::new();
    for n in 40..200 {
        toggles.set(definition(n).function.name.to_string(), false);
    }
    let session = first_request_names(
        &registry,
        AgentOptions::new()
            .toggles(toggles)
            .defer_budget(DeferBudget::tools(50)),
    );
    assert_eq!(session.len(), 40);
}

#[test]
fn past_a_token_estimate_the_tools_are_deferred_and_a_search_finds_them() {
    let registry = generated(200);
    // The estimate is a quarter of the bytes of the tools' provider JSON.
    let bytes = registry
        .snapshot()
        .provider_json(Provider::OpenAi)
        .get()
        .len();
    let tokens = bytes / 4;
    let all = first_request_names(
        &registry,
        AgentOptions::new().defer_budget(DeferBudget::tokens(tokens)),
    );
    assert_eq!(all.len(), 200);

    let model = ScriptedModel::new([
        search("s1", "git commit message"),
        ScriptedResponse::tool_call("c1", "git_commit_0007", r#"{"repo_path": "."}"#),
        ScriptedResponse::text("Committed."),
    ]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new()
            .registry(registry.clone())
            .search_results(1)
            .defer_budget(DeferBudget::tokens(tokens - 1).pin(["fetch_0009"])),
    );
    futures::executor::block_on(agent.chat("commit")).unwrap();
    let requests = model.requests();
    assert_eq!(names(&requests[0]), ["fetch_0009", "search_tools"]);
    assert!(
        result_of(&agent, "s1")
            .starts_with("Loaded; call them like any other tool:\n- git_commit_")
    );
    let loaded = agent.loaded_tools();
    assert_eq!(loaded.len(), 1);
    assert_eq!(
        names(&requests[1]),
        [
            "fetch_0009".to_owned(),
            "search_tools".to_owned(),
            loaded[0].clone()
        ]
    );
    assert_eq!(result_of(&agent, "c1"), "git_commit_0007 done");
}

/// The bytes of the `tools` part of the first request each wire sends over real HTTP for
/// `count` tools (the dumped lists of real MCP servers repeated with distinct names), every one
/// offered (search off) or deferred (search on), printed with their estimated tokens; with
/// 1,000 tools, search sends at most 5% of the bytes.
#[tokio::test]
async fn request_size_with_search_on_and_off() {
    for provider in crate::tool_choice::ALL {
        for count in [10, 100, 1_000, 10_000] {
            let registry = crate::tool_search_eval::dumped_registry(count);
            let off = tools_bytes(provider, &registry, None).await;
            let on = tools_bytes(provider, &registry, Some(DeferBudget::tools(0))).await;
            #[allow(clippy::cast_precision_loss)]
            let share = on as f64 / off as f64 * 100.0;
            println!(
                "{provider}: {count:>6} tools: search off {off:>9} bytes (~{:>7} tokens), \
                 on {on:>5} bytes (~{:>4} tokens), {share:.3}%",
                off / 4,
                on / 4,
            );
            if count >= 1_000 {
                assert!(on * 20 <= off, "{provider}: {on} of {off} bytes");
            }
        }
    }
}

/// The length of the first request's `tools` value, as the provider client sent it.
async fn tools_bytes(
    provider: Provider,
    registry: &Arc<ToolRegistry>,
    budget: Option<DeferBudget>,
) -> usize {
    let link = crate::tool_choice::link(provider, false).await;
    // The local search on every wire: Anthropic's own search takes every deferred definition
    // (marked `defer_loading`, kept out of the prompt on Anthropic's side).
    let mut options = AgentOptions::new()
        .registry(registry.clone())
        .max_steps(1)
        .native_search(tool_core::model::NativeSearch::Off);
    if let Some(budget) = budget {
        options = options.defer_budget(budget);
    }
    let agent = Agent::with_model(link.model.into(), options);
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), agent.chat("hello"))
        .await
        .expect("an answer in time");
    assert!(
        !matches!(outcome, Err(tool_core::AgentError::Model(_))),
        "{provider}: {outcome:?}"
    );
    let requests = link.server.requests();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    body["tools"].to_string().len()
}
