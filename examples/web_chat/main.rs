//! The chat of seed 004 in a browser: several chats, replies and tool calls streaming in, and a
//! tools popover with a switch per tool, remembered per user.
//!
//! ```sh
//! cargo run --example web_chat                            # http://127.0.0.1:3000
//! cargo run --example web_chat -- --addr 127.0.0.1:8080 --data ./chat-data
//! ```
//!
//! The first line printed is `listening on http://ADDRESS`. With a model provider configured in
//! the environment (the same variables as the `agent` example; `--help` lists them) it talks to
//! it; with none it runs on the offline test model, which calls every tool the chat offers once
//! and then reports the results, and the page says so.
//!
//! The tools: `read_file` and `write_file`, confined to `DATA/scratch`, the example's own
//! `city_weather`, `roll_dice`, `current_time` and `word_count`, and any tools defined in
//! `--tools-config FILE` (see `examples/tools.toml`), and the built-in `save_session_context`,
//! which saves the conversation of the chat whose model calls it to that chat's own session file
//! (`DATA/users/USER/sessions/CHAT.json`). Chats are also saved by the server after every turn.
//!
//! `write_file`, and any tool whose metadata says it needs approval, waits for the user: the
//! turn stops, the page shows the call with Approve and Deny buttons in its card, and the
//! answer continues the turn. Calls waiting for approval are saved with the chat, so a reload or
//! a restart shows the question again.
//!
//! Everything is kept under `--data DIR` (by default `tool-core-web-chat` in the system's
//! temporary directory): per user (a cookie) the tool preferences, and every chat with its own
//! switches and conversation, so a reload or a restart of the server keeps them. A new chat
//! starts from the user's preferences; a switch flipped in a chat applies to that chat at once
//! and becomes the user's preference for new chats; other chats keep their own switches.

mod chats;
mod server;
mod tools;

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, sync::Arc};

use tool_core::{
    HandlerTable, ToolContext, ToolContextOptions, ToolRegistry,
    builtin::{ReadFile, SaveSessionContext, WriteFile},
    config,
    model::{ChatModel, TestModel},
    store::SqlStore,
};

use crate::chats::{Preferences, Shared, Users};

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
With no provider configured, the offline test model answers.";

/// A chat page with per-chat tool switches, served on the loopback interface.
#[derive(Debug, clap::Parser)]
#[command(name = "web_chat", version, after_help = ENVIRONMENT)]
struct Args {
    /// The address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3000")]
    addr: SocketAddr,
    /// Where users' preferences, chats and the file tools' scratch folder are kept.
    #[arg(long, value_name = "DIR", default_value_os_t = default_data())]
    data: PathBuf,
    /// Add the tools defined in a JSON or TOML file (see examples/tools.toml).
    #[arg(long, value_name = "FILE")]
    tools_config: Option<PathBuf>,
    /// Where users' tool switches are kept: sqlite://PATH, postgres://USER@HOST/DB, or `files`
    /// for one JSON file per user [default: sqlite://DATA/preferences.db].
    #[arg(long, value_name = "URL", env = "TOOL_CORE_STORE")]
    store: Option<String>,
}

fn default_data() -> PathBuf {
    std::env::temp_dir().join("tool-core-web-chat")
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();

    // Usage errors (an unknown or misspelt flag, a bad address) exit with code 2.
    let args = <Args as clap::Parser>::parse();
    let scratch = args.data.join("scratch");
    if let Err(error) = std::fs::create_dir_all(&scratch) {
        eprintln!("cannot create {}: {error}", scratch.display());
        return ExitCode::FAILURE;
    }
    let notes = scratch.join("notes.txt");
    if !notes.exists() {
        // Something for `read_file` to find; a failure only means there is nothing to read.
        let _ = std::fs::write(&notes, "Buy milk. Call Ada about the tool registry.\n");
    }

    // The HTTP provider clients read their settings from the environment (see ENVIRONMENT).
    let (model, offline) = match tool_core::model::from_env() {
        Ok(Some(model)) => (model, false),
        Ok(None) => (Arc::new(TestModel::new()) as Arc<dyn ChatModel>, true),
        Err(error) => {
            eprintln!("the model provider configured in the environment cannot be used: {error}");
            return ExitCode::FAILURE;
        }
    };

    // One registry shared by every chat of every user; each chat sees it through its own
    // switches.
    let registry = Arc::new(ToolRegistry::new());
    let files = ToolContext::with_options(ToolContextOptions::new().root_dir(&scratch));
    let mut rejected = Vec::new();
    rejected.extend(registry.register(ReadFile::new(files.clone())).err());
    rejected.extend(registry.register(WriteFile::new(files.clone())).err());
    // Every chat's agent hands the tool its own conversation (and session file), so the context
    // given here is only used by callers that bring none, which this server has not.
    rejected.extend(registry.register(SaveSessionContext::new(files)).err());
    rejected.extend(registry.register_all(tools::all()));
    for error in rejected {
        eprintln!("tool not registered: {error}");
    }
    let config_report = match &args.tools_config {
        Some(path) => match load_config(&registry, path) {
            Ok(report) => Some(report),
            Err(code) => return code,
        },
        None => None,
    };

    let preferences = match args.store.as_deref() {
        Some("files") => Preferences::Files,
        location => {
            let url = location.map_or_else(
                || format!("sqlite://{}", args.data.join("preferences.db").display()),
                str::to_owned,
            );
            match SqlStore::open(&url).await {
                Ok(store) => Preferences::Database(store),
                Err(error) => {
                    eprintln!("cannot open the preference store: {error}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let shared = Arc::new(Shared {
        preferences,
        model: model.clone(),
        registry,
        offline,
        data: args.data.clone(),
        scratch: scratch.clone(),
    });
    let (users, restored) = Users::restore(shared).await;

    let listener = match tokio::net::TcpListener::bind(args.addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on {}: {error}", args.addr);
            return ExitCode::FAILURE;
        }
    };
    let address = match listener.local_addr() {
        Ok(address) => address,
        Err(error) => {
            eprintln!("cannot read the listening address: {error}");
            return ExitCode::FAILURE;
        }
    };
    // Tests and scripts read this first line to find the port.
    println!("listening on http://{address}");
    if offline {
        println!(
            "No model provider is configured (set OPENAI_API_KEY, ANTHROPIC_API_KEY, \
             GEMINI_API_KEY or OLLAMA_HOST), so this runs on the offline test model."
        );
    } else {
        println!(
            "Model: {} ({})",
            model.model_name(),
            model.provider().as_str()
        );
    }
    if let Some(report) = config_report {
        println!("{report}");
    }
    println!(
        "Data in {} ({restored} chat(s) restored); file tools work in {}",
        args.data.display(),
        scratch.display()
    );

    let app = server::router(Arc::new(users));
    let shutdown = async {
        // Without a Ctrl-C handler the server runs until it is killed, which is fine too.
        let _ = tokio::signal::ctrl_c().await;
    };
    match axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("the server stopped: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Adds the tools of a configuration file; invalid entries are reported and skipped. Returns a
/// line saying what was loaded.
fn load_config(registry: &ToolRegistry, path: &std::path::Path) -> Result<String, ExitCode> {
    let handlers = HandlerTable::builtins_from(registry);
    match config::load_tools(registry, path, &handlers) {
        Ok(report) => {
            let mut line = format!(
                "{} tool(s) loaded from {}",
                report.registered.len(),
                path.display()
            );
            for rejected in &report.rejected {
                line.push_str(&format!("\n  skipped: {rejected}"));
            }
            Ok(line)
        }
        Err(error) => {
            eprintln!("{error}");
            Err(ExitCode::FAILURE)
        }
    }
}
