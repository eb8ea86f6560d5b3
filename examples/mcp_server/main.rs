//! Serves the default tools plus a few of its own to any MCP client.
//!
//! ```sh
//! cargo run --example mcp_server                        # stdio: an MCP client starts this process
//! cargo run --example mcp_server -- --http              # streamable HTTP at http://127.0.0.1:8080/mcp
//! cargo run --example mcp_server -- --http 127.0.0.1:0  # any free port; the URL is printed
//! cargo run --example mcp_server -- --root DIR          # the folder read_file and write_file work in
//! cargo run --example mcp_server -- --http 127.0.0.1:0 --stateless  # no sessions: run several
//! cargo run --example mcp_server -- --otlp http://127.0.0.1:4318  # spans and metrics over OTLP
//! ```
//!
//! The tool `set_tool_enabled` switches another tool off or on while the server runs, so a
//! client sees `notifications/tools/list_changed` and what a call to a switched-off tool
//! answers. `divide_integers` returns a struct, so MCP lists its `outputSchema` and answers
//! with `structuredContent`.
//!
//! In HTTP mode the first line on stdout is `listening on <url>`. Logs go to stderr (stdout
//! carries the protocol in stdio mode); set `RUST_LOG` for more. With `MCP_SERVER_TOKEN` set,
//! HTTP clients must send `Authorization: Bearer <that token>` (an environment variable rather
//! than a flag, so the token does not show in the process list).

use std::{
    path::PathBuf,
    process::ExitCode,
    sync::{Arc, Weak},
};

use tool_core::{
    ExecutableTool, ToolContext, ToolContextOptions, ToolRegistry, create_default_tool_registry,
    mcp::{McpOptions, McpServer},
    tool, toolbox,
};

#[path = "../otlp.rs"]
mod otlp;

#[tokio::main]
async fn main() -> ExitCode {
    // Usage errors (an unknown or misspelt flag, a missing value) exit with code 2.
    let arguments = <Arguments as clap::Parser>::parse();

    // rmcp logs every JSON-RPC error answer (an unknown tool, say) as a warning.
    let otlp = match otlp::init(
        arguments.otlp.clone(),
        "mcp_server",
        "warn,rmcp::service=error",
    ) {
        Ok(otlp) => otlp,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };

    let registry = Arc::new(build_registry(arguments.root));
    let switchboard = Arc::new(Switchboard {
        registry: Arc::downgrade(&registry),
    });
    for error in registry.register_all(switchboard.tools()) {
        eprintln!("tool not registered: {error}");
    }
    let options = McpOptions::new()
        .server("tool-core-example", env!("CARGO_PKG_VERSION"))
        .title("tool-core example tools")
        .instructions("Arithmetic, the clock, and files in the server's working folder.")
        .stateless(arguments.stateless);
    let options = match std::env::var(TOKEN_VARIABLE) {
        Ok(token) if !token.is_empty() => options.bearer_token(token),
        _ => options,
    };
    let server = McpServer::with_options(registry, options);

    let outcome = match arguments.http {
        None => server.serve_stdio().await,
        Some(addr) => match server.start_http(addr.as_str()).await {
            Ok(http) => {
                println!("listening on {}", http.url());
                http.wait().await
            }
            Err(error) => Err(error),
        },
    };
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

/// The environment variable holding the bearer token HTTP clients must send.
const TOKEN_VARIABLE: &str = "MCP_SERVER_TOKEN";

/// Serves the built-in tools (read_file, write_file, save_session_context) plus add, divide
/// and now to any MCP client, over stdio (the default) or streamable HTTP.
#[derive(Debug, clap::Parser)]
#[command(
    name = "mcp_server",
    version,
    after_help = "Environment:\n  \
        RUST_LOG          log filter (default: warn,rmcp::service=error)\n  \
        MCP_SERVER_TOKEN  with --http: the bearer token clients must send (default: none)\n  \
        OTEL_EXPORTER_OTLP_ENDPOINT  the OTLP/HTTP collector, when --otlp is not given"
)]
struct Arguments {
    /// Serve streamable HTTP at ADDR (at /mcp) instead of stdio.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8080")]
    http: Option<String>,
    /// The folder read_file and write_file work in [default: an empty scratch folder, removed on
    /// exit].
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Serve HTTP without sessions, so several processes can answer behind a load balancer.
    #[arg(long, requires = "http")]
    stateless: bool,
    /// Export spans and metrics over OTLP/HTTP to the collector at URL (its base, such as
    /// http://127.0.0.1:4318) [default: $OTEL_EXPORTER_OTLP_ENDPOINT, else none].
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
}

/// The built-in tools (`read_file`, `write_file`, `save_session_context`) plus this example's.
fn build_registry(root: Option<PathBuf>) -> ToolRegistry {
    let mut options = ToolContextOptions::new();
    if let Some(root) = root {
        options = options.root_dir(root);
    }
    let registry = create_default_tool_registry(ToolContext::with_options(options));
    let tools: [Arc<dyn ExecutableTool>; 4] = [
        Arc::new(Add),
        Arc::new(Divide),
        Arc::new(DivideIntegers),
        Arc::new(Now),
    ];
    for error in registry.register_all(tools) {
        eprintln!("tool not registered: {error}");
    }
    registry
}

/// Add two integers.
#[tool(
    title = "Add",
    category = "math",
    read_only,
    idempotent,
    open_world = false
)]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Result<i64, &'static str> {
    a.checked_add(b).ok_or("the sum does not fit in 64 bits")
}

/// Divide one number by another.
#[tool(
    title = "Divide",
    category = "math",
    read_only,
    idempotent,
    open_world = false,
    timeout = "5s"
)]
async fn divide(
    /// The number to divide.
    dividend: f64,
    /// The number to divide by; not zero.
    divisor: f64,
) -> Result<f64, &'static str> {
    if divisor == 0.0 {
        return Err("cannot divide by zero");
    }
    Ok(dividend / divisor)
}

/// The quotient and remainder of an integer division.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Division {
    /// The quotient, rounded toward zero.
    quotient: i64,
    /// What is left: `dividend - quotient * divisor`.
    remainder: i64,
}

/// Divide one integer by another, with the remainder.
#[tool(
    title = "Divide integers",
    category = "math",
    read_only,
    idempotent,
    open_world = false
)]
async fn divide_integers(
    /// The number to divide.
    dividend: i64,
    /// The number to divide by; not zero.
    divisor: i64,
) -> Result<Division, &'static str> {
    match (dividend.checked_div(divisor), dividend.checked_rem(divisor)) {
        (Some(quotient), Some(remainder)) => Ok(Division {
            quotient,
            remainder,
        }),
        _ if divisor == 0 => Err("cannot divide by zero"),
        _ => Err("the quotient does not fit in 64 bits"),
    }
}

/// Switches this server's tools off and on; connected clients are told the list changed.
struct Switchboard {
    registry: Weak<ToolRegistry>,
}

#[toolbox]
impl Switchboard {
    /// Switch a tool of this server off or on.
    #[tool(title = "Switch a tool", idempotent, open_world = false)]
    async fn set_tool_enabled(
        &self,
        /// The tool's name.
        name: String,
        /// `true` to switch it on, `false` to switch it off.
        enabled: bool,
    ) -> Result<String, String> {
        if name == "set_tool_enabled" {
            return Err("set_tool_enabled cannot switch itself".to_owned());
        }
        let registry = self
            .registry
            .upgrade()
            .ok_or("the server is shutting down")?;
        if !registry.set_enabled(&name, enabled) {
            return Err(format!("no tool named {name}"));
        }
        Ok(format!("{name} is {}", if enabled { "on" } else { "off" }))
    }
}

/// The current time, in seconds since 1970-01-01T00:00:00Z.
// The icon, a clock, is a data URL so it needs no network.
#[tool(
    title = "Current time",
    icon = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCI+PGNpcmNsZSBjeD0iMTIiIGN5PSIxMiIgcj0iMTAiIGZpbGw9Im5vbmUiIHN0cm9rZT0iYmxhY2siIHN0cm9rZS13aWR0aD0iMiIvPjxwYXRoIGQ9Ik0xMiA2djZsNCAyIiBmaWxsPSJub25lIiBzdHJva2U9ImJsYWNrIiBzdHJva2Utd2lkdGg9IjIiLz48L3N2Zz4=",
    read_only,
    open_world = false
)]
async fn now() -> Result<u64, &'static str> {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .map_err(|_| "the system clock is before 1970")
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
