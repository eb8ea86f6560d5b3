//! The main example: an agent with the built-in tools (`read_file`, `write_file`,
//! `save_session_context`), showing tool calls and results as they happen.
//!
//! ```sh
//! cargo run --example agent                          # a REPL in a terminal, else one demo turn
//! cargo run --example agent -- "What is in notes.txt?"   # one prompt
//! echo "/tools" | cargo run --example agent -- --stdin   # prompts and commands from stdin
//! ```
//!
//! With a model provider configured in the environment it talks to it; with none it runs on the
//! offline test model, which calls every enabled tool once with arguments generated from the
//! tool's JSON Schema. The file tools only see the working directory (`--root DIR`, by default
//! `tool-core-agent` in the system's temporary directory). `--help` lists every flag and the
//! environment variables.
//!
//! `--tools-config PATH` adds the tools defined in a JSON or TOML file (see `examples/tools.toml`).
//! `--otlp URL` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) exports the agent's spans and metrics, which
//! follow the OpenTelemetry GenAI conventions, over OTLP/HTTP to a collector at that base URL.
//!
//! REPL commands: `/tools` lists every tool with its on/off switch and category (and whether it
//! is deferred or loaded), `/enable NAME` and `/disable NAME` toggle a tool and remember the
//! choice across runs, `/search QUERY` shows what the model's tool search would answer,
//! `/save [REASON]` saves the session, `/clear` forgets the conversation, `/quit` leaves. Ctrl-C
//! cancels a running turn.
//!
//! Tool search turns itself on once the tools (built-in, configured, and those of `--mcp`
//! servers) pass `--search-budget` (30 by default, where models start to pick worse): every tool
//! but the file tools is then deferred, and the model finds them with a search (its provider's
//! own on Anthropic and OpenAI Responses, `search_tools` elsewhere).
//!
//! What the model may not change stays out of its reach: the switches
//! (`tool-preferences.json`) and the session (`session.json`) live in a state directory beside
//! the working directory (`--state DIR`, by default `ROOT-state`), or at `--prefs FILE` /
//! `--session FILE`, and the program refuses any of them, the tools configuration or a
//! `--store` file inside `--root`, where `write_file` could rewrite them.
//!
//! Every call of a destructive tool is asked about first (unless `--yes`): a tool whose metadata
//! says so (`write_file`, and configured aliases of it such as `write_note`), and every tool of
//! an MCP server, whose own annotations are not trusted. The question shows the arguments the
//! tool will get, every key of them, a long value cut with a note saying so. Text from the
//! model, the tools and MCP servers is printed with its control characters shown as escapes
//! (`\x1b`), so it cannot move the cursor, retitle the window or hide part of a question.

use std::{
    borrow::Cow,
    fmt::Write as _,
    io::{IsTerminal as _, Write as _},
    path::{Component, Path, PathBuf},
    process::ExitCode,
    sync::Arc,
};

use futures::StreamExt as _;
use tokio::io::{AsyncBufReadExt as _, BufReader, Lines, Stdin};
use tool_core::{
    Agent, AgentEvent, AgentOptions, ChatSession, FilePreferenceStore, HandlerTable, JsonObject,
    PreferenceStore, ToolContext, ToolContextOptions, ToolRegistry,
    agent::{ApprovalDecision, ApprovalPolicy, ApprovalRequest, DeferBudget},
    config, create_default_tool_registry,
    mcp::{McpClient, McpRegistration, McpServerConfig},
    model::{ChatModel, TestModel},
    otel::Telemetry,
    session::SessionError,
};

#[path = "../otlp.rs"]
mod otlp;

const SYSTEM_PROMPT: &str = "You are a helpful assistant. You can read and write files in the \
                             working directory, and save the session when asked.";

const DEMO_PROMPT: &str = "Show me what your tools can do.";

/// The scope this program's preferences have in a database store.
const STORE_SCOPE: &str = "agent-example";

const HELP: &str = "\
commands:
  /tools           list every tool with its on/off switch and category
  /enable NAME     turn a tool on (remembered across runs)
  /disable NAME    turn a tool off (remembered across runs)
  /search QUERY    show what the model's tool search would answer (once tools are deferred)
  /save [REASON]   save the session context
  /clear           forget the conversation
  /help            show this help
  /quit            leave
anything else is sent to the model; Ctrl-C cancels a running turn";

/// Environment variables, shown under `--help`.
const ENVIRONMENT: &str = "\
Environment:
  OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL      OpenAI (Responses API), or an
                                                     OpenAI-compatible server (Chat Completions)
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_MODEL
  GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_BASE_URL, GEMINI_MODEL
  OLLAMA_HOST, OLLAMA_MODEL, OLLAMA_API_KEY          Ollama's native API
  TOOL_CORE_PROVIDER   openai, anthropic, gemini or ollama, when several are configured
  TOOL_CORE_OPENAI_API responses or chat-completions, to choose the OpenAI API
  RUST_LOG             log filter (default: warn)
  OTEL_EXPORTER_OTLP_ENDPOINT  the OTLP/HTTP collector spans and metrics go to, when --otlp
                               is not given
With no provider configured, the offline test model answers.";

/// An agent with the built-in tools (`read_file`, `write_file`, `save_session_context`).
///
/// Without a prompt: a REPL when stdin is a terminal (or with --stdin), one demo turn otherwise.
#[derive(Debug, clap::Parser)]
#[command(name = "agent", version, after_help = ENVIRONMENT)]
struct Args {
    /// The prompt for one turn; the program exits after it.
    prompt: Vec<String>,
    /// The directory read_file and write_file work in.
    #[arg(long, value_name = "DIR", env = "TOOL_CORE_AGENT_ROOT", default_value_os_t = default_root())]
    root: PathBuf,
    /// Add the tools defined in a JSON or TOML file (see examples/tools.toml).
    #[arg(long, value_name = "FILE")]
    tools_config: Option<PathBuf>,
    /// Where the preferences and the session are kept, outside --root [default: ROOT-state,
    /// beside the root].
    #[arg(long, value_name = "DIR", env = "TOOL_CORE_AGENT_STATE")]
    state: Option<PathBuf>,
    /// Where /enable and /disable are remembered [default: STATE/tool-preferences.json].
    #[arg(long, value_name = "FILE")]
    prefs: Option<PathBuf>,
    /// Where /save and save_session_context write the session [default: STATE/session.json].
    #[arg(long, value_name = "FILE")]
    session: Option<PathBuf>,
    /// Remember /enable and /disable in a database instead of the preferences file:
    /// sqlite://PATH (created when missing) or postgres://USER@HOST/DB.
    #[arg(long, value_name = "URL", env = "TOOL_CORE_STORE")]
    store: Option<String>,
    /// Read prompts and commands from stdin, even when it is not a terminal.
    #[arg(long = "stdin")]
    from_stdin: bool,
    /// Approve without asking every call that needs approval (destructive tools such as
    /// write_file, and every MCP server's tool).
    #[arg(long)]
    yes: bool,
    /// Use the tools of the MCP server this command starts (repeatable), such as
    /// 'npx -y @modelcontextprotocol/server-everything'.
    #[arg(long, value_name = "COMMAND ARGS")]
    mcp: Vec<String>,
    /// Use the tools of the MCP server at this streamable-HTTP URL (repeatable).
    #[arg(long, value_name = "URL")]
    mcp_url: Vec<String>,
    /// Export the agent's spans and metrics (OpenTelemetry GenAI conventions) over OTLP/HTTP
    /// to the collector at URL, its base such as http://127.0.0.1:4318 [default:
    /// $OTEL_EXPORTER_OTLP_ENDPOINT, else none].
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// Past this many enabled tools, defer all but the file tools and let the model search
    /// for them.
    #[arg(long, value_name = "N", default_value_t = 30)]
    search_budget: usize,
}

fn default_root() -> PathBuf {
    std::env::temp_dir().join("tool-core-agent")
}

impl Args {
    /// The state directory: `--state`, else `ROOT-state` beside the root (or inside the
    /// temporary directory when the root has no parent, such as `/`).
    fn state_dir(&self) -> PathBuf {
        if let Some(state) = &self.state {
            return state.clone();
        }
        let root = std::path::absolute(&self.root).unwrap_or_else(|_| self.root.clone());
        match (root.parent(), root.file_name()) {
            (Some(parent), Some(name)) => {
                let mut name = name.to_owned();
                name.push("-state");
                parent.join(name)
            }
            _ => std::env::temp_dir().join("tool-core-agent-state"),
        }
    }

    fn prefs_path(&self) -> PathBuf {
        self.prefs
            .clone()
            .unwrap_or_else(|| self.state_dir().join("tool-preferences.json"))
    }

    fn session_path(&self) -> PathBuf {
        self.session
            .clone()
            .unwrap_or_else(|| self.state_dir().join("session.json"))
    }

    /// The first file that says what the model may do (preferences, session, tools
    /// configuration, preference store) but lies inside the root its file tools may write, as
    /// the message that refuses it.
    fn state_inside_root(&self) -> Option<String> {
        let mut files: Vec<(&str, PathBuf)> = Vec::new();
        if self.prefs.is_none() || self.session.is_none() {
            files.push(("--state", self.state_dir()));
        }
        files.push(("--prefs", self.prefs_path()));
        files.push(("--session", self.session_path()));
        files.extend(
            self.tools_config
                .clone()
                .map(|path| ("--tools-config", path)),
        );
        files.extend(
            self.store
                .as_deref()
                .and_then(store_file)
                .map(|path| ("--store", path)),
        );
        let (flag, path) = files
            .into_iter()
            .find(|(_, path)| is_inside(path, &self.root))?;
        Some(format!(
            "{flag} {} is inside --root {}, where the model's file tools could rewrite it; \
             choose a path outside that directory",
            path.display(),
            self.root.display()
        ))
    }
}

/// The file a `--store` location keeps its data in: a `sqlite://` database or a plain path
/// (`memory:` and server URLs have none).
fn store_file(location: &str) -> Option<PathBuf> {
    if location == "memory:" {
        return None;
    }
    let (scheme, rest) = location.split_once(':').unwrap_or(("", location));
    let path = if scheme.eq_ignore_ascii_case("sqlite") {
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        rest.split('?').next().unwrap_or(rest)
    } else if location.contains("://") {
        return None;
    } else {
        location
    };
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// Whether `path` (which need not exist) lies inside the existing directory `root`, once `.`,
/// `..` and symbolic links are resolved as the operating system would.
fn is_inside(path: &Path, root: &Path) -> bool {
    let Ok(root) = root.canonicalize() else {
        return false;
    };
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut resolved = PathBuf::new();
    for component in absolute.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => resolved.push(component),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(part) => {
                resolved.push(part);
                // An existing part may be a symbolic link: go on from where it leads.
                if let Ok(real) = resolved.canonicalize() {
                    resolved = real;
                }
            }
        }
    }
    resolved.starts_with(&root)
}

#[tokio::main]
async fn main() -> ExitCode {
    // Usage errors (an unknown or misspelt flag, a missing value) exit with code 2.
    let args = <Args as clap::Parser>::parse();
    let otlp = match otlp::init(args.otlp.clone(), "agent", "warn") {
        Ok(otlp) => otlp,
        Err(error) => {
            eprintln!("{}", printable(&error));
            return ExitCode::FAILURE;
        }
    };
    let code = run(args).await;
    // What is left of the spans and metrics goes out before the program ends.
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    code
}

/// The program, once its output is set up.
async fn run(args: Args) -> ExitCode {
    if let Err(error) = std::fs::create_dir_all(&args.root) {
        eprintln!("cannot create {}: {error}", args.root.display());
        return ExitCode::FAILURE;
    }
    // The model writes in the root: the files that say what it may do stay outside.
    if let Some(refusal) = args.state_inside_root() {
        eprintln!("{refusal}");
        return ExitCode::FAILURE;
    }
    let (prefs, session_file) = (args.prefs_path(), args.session_path());
    for file in [&prefs, &session_file] {
        if let Some(dir) = file.parent().filter(|dir| !dir.as_os_str().is_empty())
            && let Err(error) = std::fs::create_dir_all(dir)
        {
            eprintln!("cannot create {}: {error}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    let notes = args.root.join("notes.txt");
    if !notes.exists() {
        // Something for `read_file` to find; a failure only means there is nothing to read.
        let _ = std::fs::write(&notes, "Buy milk. Call Ada about the tool registry.\n");
    }

    // The HTTP provider clients read their settings from the environment (see ENVIRONMENT);
    // this is the one place the example asks for them.
    let (model, offline) = match tool_core::model::from_env() {
        Ok(Some(model)) => (model, false),
        Ok(None) => (Arc::new(TestModel::new()) as Arc<dyn ChatModel>, true),
        Err(error) => {
            eprintln!(
                "the model provider configured in the environment cannot be used: {}",
                printable(&error.to_string())
            );
            return ExitCode::FAILURE;
        }
    };
    if offline {
        println!(
            "No model provider is configured (set OPENAI_API_KEY, ANTHROPIC_API_KEY, \
             GEMINI_API_KEY or OLLAMA_HOST), so this runs on the offline test model: it calls \
             every enabled tool once with arguments generated from the tool's schema, then \
             reports the results."
        );
    } else {
        println!(
            "Model: {} ({})",
            model.model_name(),
            model.provider().as_str()
        );
    }
    println!("File tools work in {}", args.root.display());

    // One registry shared by the agent and the chat session: the built-in tools, plus any
    // defined in a configuration file.
    let context = ToolContext::with_options(
        ToolContextOptions::new()
            .system_prompt(SYSTEM_PROMPT)
            .root_dir(&args.root)
            .session_context_file_path(&session_file),
    );
    let registry = Arc::new(create_default_tool_registry(context.clone()));
    if let Some(path) = &args.tools_config
        && let Err(code) = load_config(&registry, path)
    {
        return code;
    }
    // MCP servers' tools join the others; the registrations keep them in sync while they live.
    let _mcp = match connect_mcp(&registry, &args.mcp, &args.mcp_url).await {
        Ok(registrations) => registrations,
        Err(message) => {
            eprintln!("{}", printable(&message));
            return ExitCode::FAILURE;
        }
    };
    // The session's on/off switches, remembered in a preferences file across runs.
    let store: Arc<dyn PreferenceStore> = match &args.store {
        None => Arc::new(FilePreferenceStore::new(&prefs)),
        Some(location) => {
            match tool_core::store::open_preference_store(location, STORE_SCOPE).await {
                Ok(store) => store,
                Err(error) => {
                    eprintln!("cannot open the preference store: {error}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let session = match ChatSession::open(registry.clone(), store).await {
        Ok(session) => session,
        Err(error) => {
            eprintln!("tool preferences unavailable ({error}); starting from the defaults");
            ChatSession::new(registry.clone())
        }
    };

    let options = AgentOptions::new()
        .context(context)
        .registry(registry)
        .toggles(session.toggles().clone())
        // The test model calls `read_file` and `write_file` on the same path; one at a time
        // keeps its output the same from run to run.
        .sequential_tools(offline)
        // A tool that changes things (`write_file`, a configured alias of it, any MCP tool,
        // whose annotations are only its server's claims) is asked about first, unless --yes:
        // approval follows what a tool does, not its name.
        .approval(ApprovalPolicy::new().destructive_tools(true))
        // Many tools (several MCP servers) make models pick worse and cost tokens in every
        // request: past the budget, the model searches for the tools it needs.
        .defer_budget(
            DeferBudget::tools(args.search_budget)
                .pin(["read_file", "write_file"])
                .keep_most_used(3),
        )
        .telemetry(Telemetry::new().agent_name("agent"));
    let agent = Agent::with_model(model, options);

    let mut answers = if args.yes {
        Answers::Yes
    } else {
        Answers::Ask(tokio::io::BufReader::new(tokio::io::stdin()).lines())
    };
    if !args.prompt.is_empty() {
        return if run_turn(&agent, &args.prompt.join(" "), &mut answers).await {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    if args.from_stdin || std::io::stdin().is_terminal() {
        repl(&agent, &session, &mut answers, args.yes).await;
        return ExitCode::SUCCESS;
    }
    println!(
        "stdin is not a terminal: running one demo turn (pass a prompt, or --stdin to read \
         prompts from stdin)"
    );
    println!("> {DEMO_PROMPT}");
    if run_turn(&agent, DEMO_PROMPT, &mut answers).await {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Adds the tools of a configuration file; invalid entries are reported and skipped.
fn load_config(registry: &ToolRegistry, path: &std::path::Path) -> Result<(), ExitCode> {
    let handlers = HandlerTable::builtins_from(registry);
    match config::load_tools(registry, path, &handlers) {
        Ok(report) => {
            println!(
                "{} tool(s) loaded from {}{}",
                report.registered.len(),
                path.display(),
                if report.rejected.is_empty() {
                    String::new()
                } else {
                    format!(", {} invalid entries skipped:", report.rejected.len())
                }
            );
            for rejected in &report.rejected {
                println!("  - {}", printable(&rejected.to_string()));
            }
            Ok(())
        }
        Err(error) => {
            eprintln!("{error}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// Connects to the MCP servers on the command line and registers their tools.
async fn connect_mcp(
    registry: &Arc<ToolRegistry>,
    commands: &[String],
    urls: &[String],
) -> Result<Vec<McpRegistration>, String> {
    let mut configs = Vec::new();
    for command in commands {
        let config = McpServerConfig::command_line(command)
            .map_err(|error| format!("--mcp {command:?}: {error}"))?;
        configs.push(config);
    }
    configs.extend(urls.iter().map(McpServerConfig::url));
    let mut registrations = Vec::new();
    for config in configs {
        let name = config.display_name();
        let client = McpClient::connect(config)
            .await
            .map_err(|error| format!("cannot use the MCP server {name}: {error}"))?;
        let registration = client
            .register_into(registry)
            .await
            .map_err(|error| format!("cannot use the MCP server {name}: {error}"))?;
        println!(
            "MCP server {name}: {} tool(s): {}",
            registration.tool_names().len(),
            printable(&registration.tool_names().join(", "))
        );
        registrations.push(registration);
    }
    Ok(registrations)
}

/// Where the answers to approval questions come from.
enum Answers {
    /// `--yes`: every call is approved.
    Yes,
    /// The next line of stdin answers (the REPL's own input, or a pipe).
    Ask(Lines<BufReader<Stdin>>),
}

impl Answers {
    /// Asks whether `request` may run; no answer (end of input) is a no.
    async fn decide(&mut self, request: &ApprovalRequest) -> ApprovalDecision {
        let call = &request.call;
        // The arguments the tool will get if approved, every key of them; text it cannot take
        // as arguments is shown whole.
        let arguments = match &request.arguments {
            Some(arguments) => show_arguments(arguments),
            None => format!(
                "with arguments it will refuse: {}",
                printable(&call.arguments)
            ),
        };
        let name = printable(&call.name);
        let lines = match self {
            Self::Yes => {
                println!("(approved by --yes) {name} {arguments}");
                return ApprovalDecision::approve();
            }
            Self::Ask(lines) => lines,
        };
        print!("Allow {name} {arguments}? [y/N] ");
        let _ = std::io::stdout().flush();
        let answer = lines.next_line().await.ok().flatten().unwrap_or_default();
        if matches!(answer.trim().to_lowercase().as_str(), "y" | "yes") {
            ApprovalDecision::approve()
        } else {
            println!("(denied)");
            ApprovalDecision::deny_because("the user said no")
        }
    }
}

async fn repl(agent: &Agent, session: &ChatSession, answers: &mut Answers, yes: bool) {
    println!("Type a message, or /help for commands.");
    // The REPL reads its commands from the same lines as the approval answers.
    let mut own = (yes).then(|| tokio::io::BufReader::new(tokio::io::stdin()).lines());
    loop {
        print!("> ");
        let _ = std::io::stdout().flush();
        let lines = match (&mut own, &mut *answers) {
            (Some(lines), _) | (None, Answers::Ask(lines)) => lines,
            (None, Answers::Yes) => return,
        };
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => {
                println!();
                return;
            }
            Err(error) => {
                eprintln!("cannot read stdin: {error}");
                return;
            }
        };
        let line = line.trim();
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match command {
            "" => {}
            "/quit" | "/exit" => return,
            "/help" => println!("{HELP}"),
            "/tools" => show_tools(agent),
            "/search" => match agent.preview_search(rest) {
                Some(answer) => println!("search_tools would answer:\n{}", printable(&answer)),
                None => println!(
                    "no tool is deferred: every tool is offered to the model (see --search-budget)"
                ),
            },
            "/enable" | "/disable" => {
                let on = command == "/enable";
                if rest.is_empty() {
                    println!("usage: {command} NAME");
                } else {
                    let name = printable(rest);
                    match session.set_enabled(rest, on).await {
                        Ok(()) => println!("{name} is {}", if on { "on" } else { "off" }),
                        Err(SessionError::UnknownTool { .. }) => {
                            println!("no tool named {name}; /tools lists them");
                        }
                        Err(error) => println!(
                            "{name} is {} for now, but the choice was not saved: {}",
                            if on { "on" } else { "off" },
                            printable(&error.to_string())
                        ),
                    }
                }
            }
            "/save" => {
                let reason = if rest.is_empty() {
                    "saved from the REPL"
                } else {
                    rest
                };
                println!("{}", printable(&agent.save_context(reason).await));
            }
            "/clear" => {
                agent.clear_context();
                println!("conversation cleared");
            }
            _ if command.starts_with('/') => {
                println!("unknown command {}; try /help", printable(command));
            }
            _ => {
                tokio::select! {
                    _ = run_turn(agent, line, answers) => {}
                    _ = tokio::signal::ctrl_c() => println!("\n(cancelled)"),
                }
            }
        }
    }
}

fn show_tools(agent: &Agent) {
    let tools = agent.list_tools();
    let width = tools.iter().map(|tool| tool.name.len()).max().unwrap_or(0);
    for tool in tools {
        let offered = match (tool.deferred, tool.loaded) {
            (false, _) => "",
            (true, false) => "  (deferred)",
            (true, true) => "  (loaded)",
        };
        println!(
            "[{}] {:width$}  {:10}  {}{offered}",
            if tool.enabled { "on " } else { "off" },
            printable(&tool.name),
            printable(tool.category.as_deref().unwrap_or("-")),
            printable(&tool.description),
        );
    }
}

/// Runs one turn, printing text, tool calls and results as they arrive, and asking about the
/// calls that need approval. Returns whether it succeeded.
async fn run_turn(agent: &Agent, prompt: &str, answers: &mut Answers) -> bool {
    let mut events = agent.stream_chat(prompt);
    loop {
        let Some(pending) = print_events(events).await else {
            return false;
        };
        if pending.is_empty() {
            return true;
        }
        let mut decisions = Vec::new();
        for request in &pending {
            decisions.push((request.call.id.clone(), answers.decide(request).await));
        }
        events = agent.stream_continue_with(decisions);
    }
}

/// Prints a turn's events; returns the calls waiting for approval, or `None` on an error.
async fn print_events(
    mut events: futures::stream::BoxStream<'static, Result<AgentEvent, tool_core::AgentError>>,
) -> Option<Vec<ApprovalRequest>> {
    let mut stdout = std::io::stdout();
    let mut mid_line = false;
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                if mid_line {
                    println!();
                }
                eprintln!("error: {}", printable(&error.to_string()));
                return None;
            }
        };
        match event {
            AgentEvent::TextDelta(text) => {
                print!("{}", printable(&text));
                let _ = stdout.flush();
                mid_line = !text.ends_with('\n');
            }
            AgentEvent::ToolCallFinished { call, .. } => {
                if mid_line {
                    println!();
                    mid_line = false;
                }
                println!(
                    "-> {}({})",
                    printable(&call.name),
                    printable(&call.arguments)
                );
            }
            AgentEvent::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let mark = if is_error { "!!" } else { "<-" };
                println!(
                    "{mark} {}: {}",
                    printable(&name),
                    printable(&shorten(&content, 300))
                );
            }
            AgentEvent::ToolSearch { query, loaded, .. } => {
                if mid_line {
                    println!();
                    mid_line = false;
                }
                println!(
                    "?? search {:?}: {}",
                    printable(&query),
                    if loaded.is_empty() {
                        "nothing new loaded".to_owned()
                    } else {
                        format!("loaded {}", printable(&loaded.join(", ")))
                    }
                );
            }
            AgentEvent::Done(reply) => {
                if mid_line {
                    println!();
                }
                if !reply.pending_approvals.is_empty() {
                    return Some(reply.pending_approvals);
                }
                let tokens = reply.usage.map_or(String::new(), |usage| {
                    let cached = match usage.cache_read_tokens {
                        0 => String::new(),
                        read => format!(" ({read} from cache)"),
                    };
                    format!(
                        ", {} tokens in{cached}, {} out",
                        usage.total_input_tokens(),
                        usage.output_tokens
                    )
                });
                println!(
                    "[{} step(s), {} tool call(s){tokens}]",
                    reply.steps, reply.tool_calls
                );
            }
            _ => {}
        }
    }
    Some(Vec::new())
}

fn shorten(text: &str, limit: usize) -> String {
    let one_line = text.replace('\n', " ");
    match one_line.char_indices().nth(limit) {
        Some((end, _)) => format!("{}...", &one_line[..end]),
        None => one_line,
    }
}

/// The longest a key or value of the arguments shown in an approval question gets before it is
/// cut (saying so).
const SHOWN_VALUE_LIMIT: usize = 300;

/// The arguments a tool will get, as one line of JSON with every key in sight: a key or value
/// longer than [`SHOWN_VALUE_LIMIT`] characters is cut with `[cut: N more characters]`, so a
/// long value cannot push the keys after it out of view.
fn show_arguments(arguments: &JsonObject) -> String {
    let mut shown = String::from("{");
    for (index, (key, value)) in arguments.iter().enumerate() {
        if index > 0 {
            shown.push(',');
        }
        cut_into(
            &mut shown,
            &serde_json::Value::from(key.as_str()).to_string(),
        );
        shown.push(':');
        cut_into(&mut shown, &value.to_string());
    }
    shown.push('}');
    printable(&shown).into_owned()
}

/// Appends `text`, cut after [`SHOWN_VALUE_LIMIT`] characters with a note saying how much is
/// left out.
fn cut_into(shown: &mut String, text: &str) {
    match text.char_indices().nth(SHOWN_VALUE_LIMIT) {
        Some((end, _)) => {
            let left_out = text[end..].chars().count();
            let _ = write!(shown, "{}[cut: {left_out} more characters]", &text[..end]);
        }
        None => shown.push_str(text),
    }
}

/// `text` made safe for a terminal: control characters other than newline and tab (escape
/// sequences, carriage returns, bells, C1 controls) and the bidirectional-text controls, which
/// could move the cursor, retitle the window or reorder what a question shows, are printed as
/// escapes (`\x1b`, `\r`, `\u{202e}`) instead. Everything the model, a tool or an MCP server
/// wrote goes through it before it is printed.
fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(
                c,
                '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            )
    };
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => safe.push_str("\\r"),
            c if unsafe_char(c) && u32::from(c) <= 0xff => {
                let _ = write!(safe, "\\x{:02x}", u32::from(c));
            }
            c if unsafe_char(c) => {
                let _ = write!(safe, "\\u{{{:x}}}", u32::from(c));
            }
            c => safe.push(c),
        }
    }
    Cow::Owned(safe)
}
