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
//! - protocol version `2025-11-25`, negotiated down to `2025-06-18` and `2025-03-26`.
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

#[cfg(feature = "mcp-client")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp-client")))]
mod client;
mod handler;
mod http;

use std::{io, sync::Arc};

#[cfg(feature = "mcp-client")]
pub use client::{
    CommandLineError, McpClient, McpClientError, McpProgress, McpRegistration, McpServerConfig,
    McpStatus, McpToolInfo, McpTransportConfig, ReconnectPolicy, parse_command_line,
};
pub use handler::McpHandler;
pub use http::McpHttpServer;
/// The MCP SDK this module is built on, for serving [`McpHandler`] over other transports.
pub use rmcp;
use rmcp::ServiceExt;
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::ToSocketAddrs,
};

use crate::registry::ToolRegistry;

/// How an [`McpServer`] presents itself and serves HTTP. `Default` names the server `tool-core`
/// with this crate's version and serves HTTP at `/mcp`, accepting loopback `Host` headers only.
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
    /// List your host names here when serving beyond loopback.
    pub allowed_hosts: Option<Vec<String>>,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            name: "tool-core".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            title: None,
            instructions: None,
            http_path: "/mcp".to_owned(),
            allowed_hosts: None,
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

    /// A fresh `rmcp` handler for one connection, to serve on a transport of your choice with
    /// [`rmcp::ServiceExt::serve`].
    pub fn handler(&self) -> McpHandler {
        McpHandler::new(self.registry.clone(), self.options.clone())
    }

    /// Serves one client on this process's stdin and stdout (the client started this process),
    /// until the client closes the connection.
    ///
    /// Nothing else may write to stdout meanwhile: log to stderr.
    pub async fn serve_stdio(&self) -> Result<(), McpServerError> {
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve_io(stdin, stdout).await
    }

    /// Serves one client on a byte stream pair (newline-delimited JSON-RPC, as on stdio), until
    /// the client closes the connection.
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> Result<(), McpServerError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .handler()
            .serve((reader, writer))
            .await
            .map_err(|error| McpServerError::Handshake(Box::new(error)))?;
        running.waiting().await.map_err(McpServerError::Task)?;
        Ok(())
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
