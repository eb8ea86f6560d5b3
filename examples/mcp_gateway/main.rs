//! One MCP endpoint in front of the MCP servers a TOML file lists, with each user's own tool
//! switches (see `tool_core::gateway` and the README's gateway section).
//!
//! ```sh
//! cargo run --example mcp_gateway -- --config gateway.toml            # HTTP at [gateway] listen
//! cargo run --example mcp_gateway -- --config gateway.toml --listen 127.0.0.1:0
//! cargo run --example mcp_gateway -- --config gateway.toml --stdio    # one stdio client
//! cargo run --example mcp_gateway -- --config gateway.toml --otlp http://127.0.0.1:4318
//! echo -n 'a long random token' | cargo run --example mcp_gateway -- hash-token
//! ```
//!
//! In HTTP mode the first line on stdout is `listening on <url>`; Ctrl-C stops the gateway.
//! Logs go to stderr; set `RUST_LOG` for more (`RUST_LOG=tool_core=info` shows every call's
//! span). With `--otlp URL` (or `OTEL_EXPORTER_OTLP_ENDPOINT`) the spans go to that OTLP/HTTP
//! collector: each call's `tools/call {tool}` span continues the trace its client sent in
//! `_meta`, and the gateway passes the trace on to the upstream server.

use std::{io::Read as _, path::PathBuf, process::ExitCode};

use tool_core::gateway::{GatewayConfig, McpGateway, hash_token};

#[path = "../otlp.rs"]
mod otlp;

/// Every request the gateway serves allocates and frees its headers, bodies and JSON values
/// from many threads; mimalloc does that in fewer instructions than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let arguments = <Arguments as clap::Parser>::parse();
    if let Some(Command::HashToken) = arguments.command {
        let mut token = String::new();
        if let Err(error) = std::io::stdin().read_to_string(&mut token) {
            eprintln!("error: cannot read the token from stdin: {error}");
            return ExitCode::FAILURE;
        }
        println!("{}", hash_token(token.trim_end_matches(['\r', '\n'])));
        return ExitCode::SUCCESS;
    }
    let Some(path) = arguments.config else {
        eprintln!("error: --config FILE is required");
        return ExitCode::from(2);
    };
    let otlp = match otlp::init(arguments.otlp, "mcp_gateway", "warn,rmcp::service=error") {
        Ok(otlp) => otlp,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = run(path, arguments.listen, arguments.stdio).await;
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", error_chain(&error));
            ExitCode::FAILURE
        }
    }
}

async fn run(
    path: PathBuf,
    listen: Option<String>,
    stdio: bool,
) -> Result<(), tool_core::gateway::GatewayError> {
    let config = GatewayConfig::from_file(path)?;
    let listen = listen.unwrap_or_else(|| config.gateway.listen.clone());
    let gateway = McpGateway::start(config, Vec::new()).await?;
    if stdio {
        return gateway.serve_stdio().await;
    }
    let http = gateway.start_http(&listen).await?;
    println!("listening on {}", http.url());
    tokio::select! {
        outcome = http.wait() => outcome,
        // Stopped by the operator: the spans not exported yet are sent before the exit.
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

/// Serves the MCP servers of a TOML file as one MCP server, each user seeing their own tools.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp_gateway", version)]
struct Arguments {
    /// The gateway's configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Serve HTTP at ADDR instead of the file's `[gateway] listen`.
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    listen: Option<String>,
    /// Serve one client on stdin and stdout (as the file's `stdio_user`) instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// Export spans and metrics over OTLP/HTTP to the collector at URL (its base, such as
    /// http://127.0.0.1:4318) [default: $OTEL_EXPORTER_OTLP_ENDPOINT, else none].
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Print the SHA-256 of the token read from stdin, as `token_sha256` and
    /// `admin_token_sha256` want it.
    HashToken,
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
