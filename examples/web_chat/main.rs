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
//! The tools: `read_file` and `write_file`, confined to the user's own scratch folder
//! (`DATA/users/USER/scratch`), the example's own `city_weather`, `roll_dice`, `current_time`
//! and `word_count`, and any tools defined in `--tools-config FILE` (see `examples/tools.toml`),
//! and the built-in `save_session_context`, which saves the conversation of the chat whose model
//! calls it to that chat's own session file (`DATA/users/USER/sessions/CHAT.json`). Chats are
//! also saved by the server after every turn.
//!
//! A tool that changes or destroys something (`write_file`, and any tool whose hints say
//! `destructive`, such as a configured alias of `write_file`), and any tool whose metadata says
//! it needs approval, waits for the user: the turn stops, the page shows the call with Approve
//! and Deny buttons in its card, and the answer continues the turn. Calls waiting for approval
//! are saved with the chat, so a reload or a restart shows the question again.
//!
//! Everything is kept under `--data DIR` (by default `tool-core-web-chat` in the system's
//! temporary directory), private to the user running the server: per user (a signed cookie) the
//! tool preferences, and every chat with its own switches and conversation, so a reload or a
//! restart of the server keeps them. A new chat starts from the user's preferences; a switch
//! flipped in a chat applies to that chat at once and becomes the user's preference for new
//! chats; other chats keep their own switches. `--help` says what the server lets in.

mod access;
mod chats;
mod identity;
mod server;
mod storage;
mod tools;

use std::{net::SocketAddr, path::PathBuf, process::ExitCode, sync::Arc};

use tool_core::{
    config::ToolConfig,
    http_server::ServerLimits,
    model::{ChatModel, TestModel},
    store::SqlStore,
};

use crate::{
    access::AllowedHosts,
    chats::{Limits, Preferences, Shared, Users},
    identity::Identity,
    storage::FolderError,
};

/// Environment variables and the security defaults, shown under `--help`.
const AFTER_HELP: &str = "\
Environment:
  OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL      OpenAI (Responses API), or an
                                                     OpenAI-compatible server (Chat Completions)
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_MODEL
  GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_BASE_URL, GEMINI_MODEL
  OLLAMA_HOST, OLLAMA_MODEL, OLLAMA_API_KEY          Ollama's native API
  TOOL_CORE_PROVIDER   openai, anthropic, gemini or ollama, when several are configured
  TOOL_CORE_OPENAI_API responses or chat-completions, to choose the OpenAI API
  RUST_LOG             log filter (default: warn)
With no provider configured, the offline test model answers.

Security:
  There is no authentication: whoever can send the server requests can chat, run turns on the
  configured provider's key, and use the file tools (in a scratch folder of their own). So by
  default it listens on 127.0.0.1 only, and:
  - answers only requests whose Host is localhost, 127.0.0.1, [::1], the --addr address or a
    name given with --allow-host, so a web page that rebinds its own name to 127.0.0.1 (DNS
    rebinding) is refused;
  - takes a change (any method but GET, HEAD, OPTIONS) only when its Origin is the page's own,
    or when there is none (curl, scripts), so other sites cannot post to it;
  - tells users apart by a cookie it signs (made-up cookies are not taken), and keeps at most
    --max-users users and --max-chats chats each (over that: HTTP 429);
  - makes DATA and its folders 0700 and its files 0600, and refuses a DATA folder that belongs
    to another user (someone may have made it first in a shared temporary folder).
  An --addr other than loopback (0.0.0.0:3000, a LAN address) opens all of this to the network:
  put the server behind a reverse proxy that authenticates users and serves HTTPS, and name the
  host clients use with --allow-host.";

/// A chat page with per-chat tool switches, served on the loopback interface.
#[derive(Debug, clap::Parser)]
#[command(name = "web_chat", version, after_help = AFTER_HELP)]
struct Args {
    /// The address to listen on (port 0 picks a free port). Anything but loopback lets anyone
    /// on the network use the chat: see Security below.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:3000")]
    addr: SocketAddr,
    /// Also answer requests for this host name (may be given more than once): the name clients
    /// use behind a reverse proxy, say. Loopback names and the --addr address are always
    /// answered.
    #[arg(long = "allow-host", value_name = "HOST", value_parser = access::parse_host)]
    allow_host: Vec<String>,
    /// Where users' preferences, chats and scratch folders are kept; made 0700, and refused
    /// when it belongs to another user.
    #[arg(long, value_name = "DIR", default_value_os_t = default_data())]
    data: PathBuf,
    /// The most users the server keeps; a new one beyond that is refused.
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_users: usize,
    /// The most chats each user may have; a new one beyond that is refused.
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_chats: usize,
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
    // Nothing is written in a data folder before it is known to be this user's.
    match storage::private_folder(&args.data) {
        Ok(()) => {}
        Err(FolderError::Foreign { uid }) => {
            eprintln!(
                "the data folder {} belongs to another user (uid {uid}); choose one of your own \
                 with --data",
                args.data.display()
            );
            return ExitCode::FAILURE;
        }
        Err(error) => {
            eprintln!(
                "cannot use the data folder {}: {error}",
                args.data.display()
            );
            return ExitCode::FAILURE;
        }
    }
    let identity = match Identity::load_or_create(&args.data.join("cookie.key")) {
        Ok(identity) => identity,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };

    // The HTTP provider clients read their settings from the environment (see AFTER_HELP).
    let (model, offline) = match tool_core::model::from_env() {
        Ok(Some(model)) => (model, false),
        Ok(None) => (Arc::new(TestModel::new()) as Arc<dyn ChatModel>, true),
        Err(error) => {
            eprintln!("the model provider configured in the environment cannot be used: {error}");
            return ExitCode::FAILURE;
        }
    };

    let config = match &args.tools_config {
        Some(path) => match ToolConfig::from_file(path) {
            Ok(config) => Some(config),
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    // Each user gets a registry of their own; this one, made the same way, reports what would
    // not register, once.
    let (_, rejected, report) = tools::registry(&args.data.join("users"), config.as_ref());
    for error in rejected {
        eprintln!("tool not registered: {error}");
    }
    let config_report = args
        .tools_config
        .as_ref()
        .zip(report)
        .map(|(path, report)| {
            let mut line = format!(
                "{} tool(s) loaded from {}",
                report.registered.len(),
                path.display()
            );
            for rejected in &report.rejected {
                line.push_str(&format!("\n  skipped: {rejected}"));
            }
            line
        });

    let preferences = match args.store.as_deref() {
        Some("files") => Preferences::Files,
        location => {
            let url = match location {
                Some(url) => url.to_owned(),
                None => {
                    let path = args.data.join("preferences.db");
                    if let Err(error) = storage::private_file(&path) {
                        eprintln!("cannot create {}: {error}", path.display());
                        return ExitCode::FAILURE;
                    }
                    format!("sqlite://{}", path.display())
                }
            };
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
        config,
        offline,
        data: args.data.clone(),
        identity,
        limits: Limits {
            users: args.max_users,
            chats: args.max_chats,
        },
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
        "Data in {} ({restored} chat(s) restored); each user's file tools work in their own \
         users/USER/scratch folder there",
        args.data.display(),
    );
    if !address.ip().is_loopback() {
        eprintln!(
            "warning: {address} is not a loopback address, and the chat has no authentication: \
             anyone who can reach it can use it (see --help, Security)"
        );
    }

    let hosts = AllowedHosts::new(address, &args.allow_host);
    let app = server::router(Arc::new(users), Arc::new(hosts));
    let shutdown = async {
        // Without a Ctrl-C handler the server runs until it is killed, which is fine too.
        let _ = tokio::signal::ctrl_c().await;
    };
    match tool_core::http_server::serve(listener, app, ServerLimits::default(), shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("the server stopped: {error}");
            ExitCode::FAILURE
        }
    }
}
