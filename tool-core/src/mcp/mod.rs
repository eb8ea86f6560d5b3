//! Serve a [`ToolRegistry`] over the [Model Context Protocol](https://modelcontextprotocol.io),
//! so every MCP client (desktop assistants, IDEs, other agents) can call the same tools.
//!
//! [`McpServer`] wraps a shared registry and speaks MCP through the official Rust SDK
//! ([`rmcp`]), over stdio or streamable HTTP:
//!
//! - `tools/list` returns the enabled tools with their name, title, description, input schema,
//!   annotations (from [`ToolHints`](crate::ToolHints)) and icon;
//! - `tools/call` runs the tool through [`ToolRegistry::try_execute`] (argument validation,
//!   timeout and panic guard included): a result is a text block; a tool error, invalid
//!   arguments, a timeout or a panic is a result with `isError: true` and the message the model
//!   would see; an unknown or disabled tool is a JSON-RPC `invalid params` error;
//! - the server declares `tools.listChanged` and sends `notifications/tools/list_changed` to
//!   every connected client when a tool is registered, removed, enabled or disabled;
//! - a tool whose metadata has an [`output_schema`](crate::ToolMetadata::output_schema) (a
//!   `#[tool]` fn returning a `Serialize + JsonSchema` struct) is listed with an `outputSchema`
//!   and answers with `structuredContent` beside the text block;
//! - a tool whose metadata says [`needs_approval`](crate::ToolMetadata::needs_approval) is
//!   listed with `annotations.destructiveHint: true` and `_meta: {"tool-core/needsApproval":
//!   true}`, and by default runs only once the client's user approved the call through MCP
//!   elicitation; see [`McpApproval`];
//! - schemas carry no Rust-only numeric `format` (`int64`, `uint32`, `double`, ...), which
//!   strict validators refuse; the bounds they imply stay as `minimum`/`maximum`;
//! - protocol versions `2026-07-28` (`server/discover` and self-contained requests with their
//!   own `_meta`; changes reach a client through `subscriptions/listen`), and through
//!   `initialize` `2025-11-25`, `2025-06-18`, `2025-03-26` and `2024-11-05`; each version gets
//!   the fields it defines and none it does not (`title`, `outputSchema` and `structuredContent`
//!   from `2025-06-18`, `icons` from `2025-11-25`, `annotations` from `2025-03-26`).
//!
//! # Stateless HTTP
//!
//! With [`McpOptions::stateless`] the HTTP server keeps no session: every POST is answered on
//! its own (legacy clients' requests are served without an `Mcp-Session-Id`; 2026-07-28
//! requests are always stateless), so any number of server processes over the same tools can
//! answer behind an ordinary load balancer. Server-sent notifications then reach only clients
//! on 2026-07-28 that hold a `subscriptions/listen` stream.
//!
//! # Security (HTTP)
//!
//! [`McpServer::start_http`] binds where you say (`127.0.0.1:…` keeps it on this machine).
//! Every request passes, before the server acts on it:
//!
//! - the authentication hook, when [`McpOptions::auth`] is set (a bearer token or a check of
//!   your own over the headers, [`McpAuth`]): otherwise `401 Unauthorized` with
//!   `WWW-Authenticate`;
//! - the `Host` rule against DNS rebinding ([`McpOptions::allowed_hosts`]; by default
//!   `localhost`, `127.0.0.1`, `::1` and the bound address): otherwise `403 Forbidden`;
//! - the `Origin` rule against web pages ([`McpOptions::allowed_origins`]; by default pages on
//!   `localhost`, `127.0.0.1` and `[::1]`, any port; a request without `Origin`, as
//!   non-browser clients send, passes): otherwise `403 Forbidden`.
//!
//! A refused request runs no tool and creates no session. Over stdio none of this applies:
//! the client started the server.
//!
//! # Limits
//!
//! | limit | default | set with | over it |
//! |---|---|---|---|
//! | HTTP request body | 4 MiB | [`McpOptions::max_request_bytes`] | `413 Payload Too Large` |
//! | HTTP sessions at once | 256 | [`McpOptions::max_sessions`] | the `initialize` is answered `503 Service Unavailable` with a JSON-RPC error; a session ends with the client's HTTP `DELETE` or after [`McpOptions::session_idle_timeout`] (5 minutes) without a request |
//! | HTTP connections at once | 512 | [`McpOptions::http_limits`] ([`ServerLimits::max_connections`]) | the connection is answered `503` and closed |
//! | time to send a request's head | 10 s | [`McpOptions::http_limits`] ([`ServerLimits::header_read_timeout`]) | the connection is closed (idle kept-alive ones too) |
//! | time to send a request's body | 10 s | [`McpOptions::http_limits`] ([`ServerLimits::body_read_timeout`]) | the body fails to read (an error answer) and the connection is closed |
//! | one stdio message (line) | 16 MiB | [`McpOptions::max_line_bytes`] | a JSON-RPC error answer (`-32600`) with the request's id; the line is read to its end and dropped |
//! | one tool call | 60 s | [`McpOptions::tool_timeout`] | a result with `isError: true` saying it timed out (a tool's own `timeout` wins) |
//!
//! A stdio server stops when its client closes stdin: running calls are cancelled at once
//! (their [`CallContext`](crate::CallContext) cancellation token fires) and
//! [`McpServer::serve_stdio`] returns.
//!
//! ```
//! use std::sync::Arc;
//!
//! use tool_core::{ToolContext, create_default_tool_registry, mcp::McpServer};
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let registry = Arc::new(create_default_tool_registry(ToolContext::default()));
//! let server = McpServer::new(registry);
//!
//! // Streamable HTTP on a free loopback port; `serve_stdio().await` serves a client that
//! // started this process instead.
//! let http = server.start_http("127.0.0.1:0").await?;
//! assert!(http.url().starts_with("http://127.0.0.1:"));
//! assert!(http.url().ends_with("/mcp"));
//! http.shutdown().await?;
//! # Ok::<(), tool_core::mcp::McpServerError>(())
//! # }).unwrap();
//! ```
//!
//! # Using a server's tools
//!
//! The other direction: any MCP server's tools in a [`ToolRegistry`].
//!
//! [`McpClient::connect`] starts a server as a child process (stdio) or reaches it over
//! streamable HTTP, negotiates the protocol (`2025-11-25`, or older versions the server
//! answers with) and lists its tools, page after page. [`McpClient::register_into`] registers
//! each tool as an [`ExecutableTool`](crate::ExecutableTool) and keeps the registry in sync:
//!
//! - names MCP allows but providers reject (`files.read`, `a/b`, past 64 characters) are
//!   mapped to valid, unique names and back (see [`McpToolInfo`]); a
//!   [prefix](McpServerConfig::prefix) keeps two servers' tools apart;
//! - calls go through the registry like any tool's (argument validation, timeout, panic
//!   guard); a result with `isError: true` is a tool error carrying the server's text; text,
//!   embedded text resources and (when there is no text) structured content become the text
//!   the model reads, and what cannot be text is named instead
//!   (`[image omitted: image/png, 1234 bytes]`);
//! - `notifications/tools/list_changed` re-lists the tools and adds, removes or replaces them
//!   in the registry, so the next request to the model sends the new list;
//! - a server's tool annotations are its claims, not believed unless the application says so
//!   ([`McpServerConfig::trust_annotations`], [`McpServerConfig::read_only_tools`]): every
//!   other tool is destructive, so an [`ApprovalPolicy`](crate::agent::ApprovalPolicy) that
//!   asks about destructive tools asks about each of its calls;
//! - progress notifications of a call are logged with `tracing` and sent to
//!   [`McpClient::subscribe_progress`] receivers;
//! - a server that exits or drops the connection makes its tools answer
//!   `the MCP server 'NAME' is not connected: REASON` until the client has reconnected, with
//!   backoff and jitter ([`ReconnectPolicy`]); a stdio server is started again;
//! - [`McpRegistration::close`] (or dropping the registration) unregisters the tools;
//!   [`McpClient::close`] (or dropping the last clone of the client) ends the connection and
//!   stops a child process.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use tool_core::{
//!     ToolRegistry,
//!     mcp::{McpClient, McpServerConfig},
//! };
//!
//! # async fn run() -> Result<(), tool_core::mcp::McpClientError> {
//! let registry = Arc::new(ToolRegistry::new());
//! let everything = McpClient::connect(
//!     McpServerConfig::command("npx", ["-y", "@modelcontextprotocol/server-everything"])
//!         .env("NODE_ENV", "production")
//!         .prefix("everything"),
//! )
//! .await?;
//! let remote = McpClient::connect(
//!     McpServerConfig::url("http://127.0.0.1:3001/mcp").header("authorization", "Bearer x"),
//! )
//! .await?;
//!
//! let tools = everything.register_into(&registry).await?;
//! let _more = remote.register_into(&registry).await?;
//! assert!(tools.tool_names().contains(&"everything_echo".to_owned()));
//! let args = serde_json::from_str(r#"{"message": "hi"}"#).unwrap();
//! println!("{}", registry.execute("everything_echo", args).await);
//!
//! tools.close().await; // the tools leave the registry
//! everything.close().await; // the server process stops
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "mcp-client")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp-client")))]
mod client;
mod handler;
mod http;
mod stdio;

use std::{io, sync::Arc, time::Duration};

#[cfg(feature = "mcp-client")]
pub use client::{
    CommandLineError, McpClient, McpClientError, McpProgress, McpRegistration, McpServerConfig,
    McpStatus, McpToolInfo, McpTransportConfig, ReconnectPolicy, parse_command_line,
};
#[cfg(all(feature = "otel", feature = "gateway"))]
pub(crate) use handler::call_span;
#[cfg(all(feature = "gateway", feature = "otel"))]
pub(crate) use handler::traced;
#[cfg(feature = "gateway")]
pub(crate) use handler::{CallStop, SnapshotView, drain, needs_approval, run_call};
pub use handler::{McpApproval, McpHandler};
#[cfg(feature = "gateway")]
pub(crate) use http::{HttpSessions, Site, router as http_router};
pub use http::{McpAuth, McpHttpServer};
#[cfg(feature = "gateway")]
pub(crate) use http::{SessionOwner, limited as limited_response};
use rmcp::ServiceExt;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::ToSocketAddrs,
};

use crate::{http_server::ServerLimits, registry::ToolRegistry};

/// The header naming a request's HTTP session (`Mcp-Session-Id`), in the lower case `http`'s
/// header names take: what the server's spans record, the client sends back, and the gateway's
/// HTTP gate checks the owner of.
#[cfg(any(feature = "otel", feature = "mcp-client"))]
pub(crate) const SESSION_ID_HEADER: &str = "mcp-session-id";

/// How an [`McpServer`] presents itself and serves HTTP. `Default` names the server `tool-core`
/// with this crate's version and serves HTTP at `/mcp`, accepting loopback `Host` headers and
/// loopback pages' `Origin` only, with no authentication, within the [limits](self#limits).
///
/// Its `Debug` output never shows a token of [`auth`](Self::auth).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct McpOptions {
    /// The server's name in the `initialize` answer (`serverInfo.name`).
    pub name: String,
    /// The server's version in the `initialize` answer.
    pub version: String,
    /// A human-readable title for the server.
    pub title: Option<String>,
    /// Instructions for the client's model on using this server.
    pub instructions: Option<String>,
    /// The HTTP path of the MCP endpoint (default `/mcp`).
    pub http_path: String,
    /// The `Host` header values (`name` or `name:port`) the HTTP server accepts, against DNS
    /// rebinding. `None` (the default): `localhost`, `127.0.0.1`, `::1` and the bound address.
    /// List your host names here when serving beyond loopback (an empty list admits any).
    pub allowed_hosts: Option<Vec<String>>,
    /// The `Origin` header values (`scheme://host`, `scheme://host:port`, `scheme://host:*` for
    /// any port, or `null`) the HTTP server accepts, against web pages reaching it from a
    /// browser; a request with another `Origin` is answered `403 Forbidden`, one with none (as
    /// non-browser clients send) is served. `None` (the default): pages on `localhost`,
    /// `127.0.0.1` and `[::1]` over http or https, any port. An empty list refuses every page.
    pub allowed_origins: Option<Vec<String>>,
    /// Who may use the HTTP server (default `None`: anyone the `Host` and `Origin` rules
    /// admit); see [`McpAuth`].
    pub auth: Option<McpAuth>,
    /// Serve HTTP without sessions, so that several server processes can answer one client
    /// (default `false`); see [Stateless HTTP](self#stateless-http).
    pub stateless: bool,
    /// The largest HTTP request body, in bytes (default 4 MiB); a larger one is answered
    /// `413 Payload Too Large`.
    pub max_request_bytes: usize,
    /// The longest message (one line) a stdio client may send, in bytes (default 16 MiB); a
    /// longer one is answered with a JSON-RPC error.
    pub max_line_bytes: usize,
    /// The timeout of tools whose metadata sets none (default 60 s; `None`: the registry's
    /// default).
    pub tool_timeout: Option<Duration>,
    /// The most HTTP sessions at once (default 256); an `initialize` over it is answered
    /// `503 Service Unavailable` with a JSON-RPC error. A session ends when its client sends
    /// HTTP `DELETE` or after [`session_idle_timeout`](Self::session_idle_timeout) without a
    /// request. Stateless serving and 2026-07-28 requests use no session.
    pub max_sessions: usize,
    /// How long an HTTP session may go without a request before it ends (default 5 minutes).
    pub session_idle_timeout: Duration,
    /// The HTTP server's connection cap (default 512) and header-read timeout (default 10 s).
    pub http_limits: ServerLimits,
    /// What happens to a call of a tool whose metadata says
    /// [`needs_approval`](crate::ToolMetadata::needs_approval) (default
    /// [`McpApproval::Ask`]).
    pub approval: McpApproval,
}

/// The default [`McpOptions::max_request_bytes`]: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;
/// The default [`McpOptions::max_line_bytes`]: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// The default [`McpOptions::tool_timeout`]: 60 seconds.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_mins(1);
/// The default [`McpOptions::max_sessions`]: 256.
pub const DEFAULT_MAX_SESSIONS: usize = 256;
/// The default [`McpOptions::session_idle_timeout`]: 5 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = http::DEFAULT_SESSION_IDLE_TIMEOUT;

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            name: "tool-core".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            title: None,
            instructions: None,
            http_path: "/mcp".to_owned(),
            allowed_hosts: None,
            stateless: false,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            tool_timeout: Some(DEFAULT_TOOL_TIMEOUT),
            allowed_origins: None,
            auth: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            http_limits: ServerLimits::default(),
            approval: McpApproval::Ask,
        }
    }
}

impl McpOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the server's name and version.
    #[must_use]
    pub fn server(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Sets the server's human-readable title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets instructions for the client's model.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets the HTTP path of the MCP endpoint.
    #[must_use]
    pub fn http_path(mut self, path: impl Into<String>) -> Self {
        self.http_path = path.into();
        self
    }

    /// Sets the `Host` header values the HTTP server accepts.
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the `Origin` header values the HTTP server accepts, in place of the loopback pages
    /// (see [`McpOptions::allowed_origins`]).
    #[must_use]
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// Sets who may use the HTTP server.
    #[must_use]
    pub fn auth(mut self, auth: McpAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Lets HTTP requests in only with `Authorization: Bearer <token>`; short for
    /// `auth(McpAuth::bearer(token))`.
    #[must_use]
    pub fn bearer_token(self, token: impl Into<String>) -> Self {
        self.auth(McpAuth::bearer(token))
    }

    /// Sets the most HTTP sessions at once.
    #[must_use]
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// Sets how long an HTTP session may go without a request before it ends.
    #[must_use]
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// Sets the HTTP server's connection cap and header-read timeout.
    #[must_use]
    pub fn http_limits(mut self, limits: ServerLimits) -> Self {
        self.http_limits = limits;
        self
    }

    /// Sets what happens to calls of tools that need approval.
    #[must_use]
    pub fn approval(mut self, approval: McpApproval) -> Self {
        self.approval = approval;
        self
    }

    /// Serves HTTP without sessions (see [Stateless HTTP](self#stateless-http)).
    #[must_use]
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// Sets the largest HTTP request body, in bytes.
    #[must_use]
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// Sets the longest stdio message (one line), in bytes.
    #[must_use]
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// Sets the timeout of tools whose metadata sets none (`None`: the registry's default).
    #[must_use]
    pub fn tool_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.tool_timeout = timeout;
        self
    }
}

/// Why an [`McpServer`] could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServerError {
    /// The client closed the connection or misbehaved before the `initialize` handshake ended.
    #[error("the mcp handshake failed")]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The HTTP listener could not be bound.
    #[error("cannot bind the mcp http server to {addr}")]
    Bind {
        /// The address as given.
        addr: String,
        /// The bind error.
        #[source]
        source: io::Error,
    },
    /// The HTTP server stopped with an error.
    #[error("the mcp http server failed")]
    Http(#[source] io::Error),
    /// The task running the session or the server panicked or was aborted.
    #[error("the mcp server task stopped unexpectedly")]
    Task(#[source] tokio::task::JoinError),
}

/// Serves one client with the handler `make` builds on a byte stream pair (newline-delimited
/// JSON-RPC), until the client closes the connection. `make` gets the token cancelled when the
/// input ends, to cancel the calls still running. A message over
/// [`McpOptions::max_line_bytes`] is answered with a JSON-RPC error.
pub(crate) async fn serve_io_with<H, R, W>(
    options: &McpOptions,
    make: impl FnOnce(tokio_util::sync::CancellationToken) -> H,
    reader: R,
    writer: W,
) -> Result<(), McpServerError>
where
    H: rmcp::ServerHandler,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let closed = tokio_util::sync::CancellationToken::new();
    let reader = stdio::LimitedLines::new(reader, options.max_line_bytes, closed.clone());
    // The limit is enforced (with an answer) by `LimitedLines`; rmcp's own would drop the
    // stand-in line of a message just under it.
    let transport =
        rmcp::transport::async_rw::AsyncRwTransport::<rmcp::RoleServer, _, _>::new(reader, writer)
            .with_max_line_length(usize::MAX);
    let running = make(closed)
        .serve(transport)
        .await
        .map_err(|error| McpServerError::Handshake(Box::new(error)))?;
    // Ends when the client closes the connection; the end of input has already cancelled the
    // calls still running (each call's cancellation token fires).
    running.waiting().await.map_err(McpServerError::Task)?;
    Ok(())
}

/// An MCP server over a shared [`ToolRegistry`]; see the [module docs](self).
///
/// Cloning is cheap and serves the same registry. Every connection gets its own
/// [`McpHandler`]; all of them see the registry's changes as they happen.
#[derive(Clone, Debug)]
pub struct McpServer {
    registry: Arc<ToolRegistry>,
    options: Arc<McpOptions>,
}

impl McpServer {
    /// A server for `registry` with the default [`McpOptions`].
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        Self::with_options(registry, McpOptions::default())
    }

    /// A server for `registry` with the given options.
    pub fn with_options(registry: Arc<ToolRegistry>, options: McpOptions) -> Self {
        Self {
            registry,
            options: Arc::new(options),
        }
    }

    /// The registry this server serves.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The server's options.
    pub fn options(&self) -> &McpOptions {
        &self.options
    }

    /// A fresh handler for one connection, to serve on a transport of your choice with the
    /// `rmcp` crate's `ServiceExt::serve`.
    pub fn handler(&self) -> McpHandler {
        McpHandler::new(self.registry.clone(), self.options.clone())
    }

    /// Serves one client on this process's stdin and stdout (the client started this process),
    /// until the client closes stdin; calls still running then are cancelled.
    ///
    /// Nothing else may write to stdout meanwhile: log to stderr.
    pub async fn serve_stdio(&self) -> Result<(), McpServerError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves one client on a byte stream pair (newline-delimited JSON-RPC, as on stdio), until
    /// the client closes the connection; calls still running then are cancelled. A message
    /// over [`McpOptions::max_line_bytes`] is answered with a JSON-RPC error.
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> Result<(), McpServerError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        serve_io_with(
            &self.options,
            |closed| self.handler().with_closed(closed),
            reader,
            writer,
        )
        .await
    }

    /// Binds streamable HTTP at `addr` (for example `127.0.0.1:8080`; port `0` picks a free
    /// port) and serves it in the background. The returned handle tells the bound address and
    /// URL and shuts the server down; dropping it shuts the server down too.
    pub async fn start_http(
        &self,
        addr: impl ToSocketAddrs + std::fmt::Debug,
    ) -> Result<McpHttpServer, McpServerError> {
        http::start(self, addr).await
    }

    /// Binds streamable HTTP at `addr` and serves until the server fails or the process ends.
    pub async fn serve_http(
        &self,
        addr: impl ToSocketAddrs + std::fmt::Debug,
    ) -> Result<(), McpServerError> {
        self.start_http(addr).await?.wait().await
    }
}
