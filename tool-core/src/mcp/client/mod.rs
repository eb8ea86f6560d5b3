//! The MCP client: an MCP server's tools in a registry. Its documentation is the
//! "Using a server's tools" section of the [`mcp`](crate::mcp) module.

mod config;
mod connection;
mod content;
mod direct;
mod http;
mod lines;
mod listing;
mod names;
mod progress;
mod registration;

use std::{
    fmt,
    sync::{Arc, PoisonError},
};

pub use config::{
    CommandLineError, McpServerConfig, McpTransportConfig, ReconnectPolicy, parse_command_line,
};
pub use registration::McpRegistration;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::DropGuard;

use self::connection::Shared;
use crate::{registry::ToolRegistry, tool::ToolMetadata};

/// Why an MCP server could not be connected or its tools registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The command line could not be split into words.
    #[error("invalid mcp command line")]
    CommandLine(#[from] CommandLineError),
    /// The tool name prefix is not 1 to 32 ASCII letters, digits, `_` or `-`.
    #[error("invalid mcp tool prefix `{prefix}`: use 1 to 32 ASCII letters, digits, `_` or `-`")]
    InvalidPrefix {
        /// The rejected prefix.
        prefix: String,
    },
    /// An HTTP header name or value is not valid.
    #[error("invalid http header `{name}` for the mcp server")]
    InvalidHeader {
        /// The header name as given.
        name: String,
    },
    /// The server's process could not be started.
    #[error("cannot start the mcp server `{command}`")]
    Spawn {
        /// The command line.
        command: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The `initialize` handshake failed (the server closed the connection, answered with an
    /// error, or could not be reached).
    #[error("the mcp handshake with '{server}' failed: {reason}")]
    Handshake {
        /// The server's name.
        server: String,
        /// What went wrong, with the process's exit status and last stderr line when known.
        reason: String,
    },
    /// The server answered `initialize` with a protocol version this client does not speak.
    #[error("the mcp server '{server}' speaks protocol version {version}, which is not supported")]
    UnsupportedVersion {
        /// The server's name.
        server: String,
        /// The version it answered with.
        version: String,
    },
    /// `tools/list` failed.
    #[error("listing the tools of the mcp server '{server}' failed: {reason}")]
    ListTools {
        /// The server's name.
        server: String,
        /// The error.
        reason: String,
    },
    /// Starting, the handshake and the first `tools/list` took longer than the
    /// [connect timeout](McpServerConfig::connect_timeout).
    #[error("the mcp server '{server}' did not answer within {timeout:?}")]
    Timeout {
        /// The server's name.
        server: String,
        /// The limit.
        timeout: std::time::Duration,
    },
    /// The client was closed.
    #[error("the mcp client for '{server}' is closed")]
    Closed {
        /// The server's name.
        server: String,
    },
}

/// The state of a client's connection, from [`McpClient::status`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpStatus {
    /// Connected; calls go to the server.
    Connected {
        /// The negotiated protocol version, e.g. `2025-11-25`.
        protocol_version: String,
    },
    /// Not connected (the server exited, dropped the connection, or hung: it did not answer a
    /// ping after a call timed out); the client is reconnecting unless the reason says it gave
    /// up.
    Disconnected {
        /// Why, as the tools report it.
        reason: String,
    },
    /// [`McpClient::close`] was called or the last clone of the client was dropped.
    Closed,
}

/// A progress notification the server sent during a tool call.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct McpProgress {
    /// The server's name.
    pub server: String,
    /// The local name of the tool that was called.
    pub tool: String,
    /// The progress so far (it grows with every notification).
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// A message about the current step.
    pub message: Option<String>,
}

/// One tool of a server: its MCP name, the name it has in a registry and its definition.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct McpToolInfo {
    /// The name in the registry: `{prefix}_{name}`, or a valid replacement when the MCP name is
    /// not a valid provider tool name (see the [module docs](crate::mcp)).
    pub local_name: String,
    /// The name on the server.
    pub remote_name: String,
    /// The definition registered (description and input schema from the server).
    pub definition: crate::tool::ChatTool,
    /// Title, hints, icon and the server's name as category. The hints are MCP's defaults
    /// for a tool nothing is known of (destructive, not read-only) unless the application
    /// trusts the server's annotations ([`McpServerConfig::trust_annotations`]) or names the
    /// tool read-only ([`McpServerConfig::read_only_tools`]); deferred when the server is
    /// ([`McpServerConfig::defer_loading`]). The
    /// [call timeout](McpServerConfig::call_timeout) is the client's own, not set here, so a
    /// registry's or an agent's shorter timeout still applies.
    pub metadata: ToolMetadata,
    /// The tool's `outputSchema` as the server declared it (`None`: it declared none). Not
    /// registered (calls answer the result as text); kept for whoever checks what the server
    /// claims, as the MCP gateway pins it.
    pub output_schema: Option<serde_json::Value>,
    /// The tool's `annotations` as the server declared them, trusted or not (`None`: it
    /// declared none).
    pub annotations: Option<serde_json::Value>,
}

/// A connection to one MCP server; see the [module docs](crate::mcp).
///
/// Cloning is cheap and shares the connection. The connection ends with [`close`](Self::close)
/// or when the last clone (including those held by [`McpRegistration`]s) is dropped.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Handle>,
}

/// Owned by the clones of one client: the last one dropped stops the connection task, which
/// holds [`Shared`] itself and would otherwise keep it alive.
struct Handle {
    shared: Arc<Shared>,
    _stop_on_drop: DropGuard,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server_name())
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts or reaches the server, runs the `initialize` handshake and lists its tools (every
    /// page, within the [limits](McpServerConfig#limits)), within the
    /// [connect timeout](McpServerConfig::connect_timeout). From then on the client follows the
    /// server's tool list and reconnects when the connection is lost.
    pub async fn connect(config: McpServerConfig) -> Result<Self, McpClientError> {
        config.validate()?;
        let (shared, lost) = Shared::new(config);
        let connection = shared.open().await?;
        let stop = shared.stop.clone();
        tokio::spawn(connection::supervise(shared.clone(), connection, lost));
        Ok(Self {
            inner: Arc::new(Handle {
                shared,
                _stop_on_drop: stop.drop_guard(),
            }),
        })
    }

    /// The server's name in messages: the configured name or prefix, else the name the server
    /// gave itself in `initialize`.
    pub fn server_name(&self) -> String {
        self.shared().name()
    }

    /// The connection's state now.
    pub fn status(&self) -> McpStatus {
        self.shared().status.borrow().clone()
    }

    /// A receiver that sees every change of [`status`](Self::status).
    pub fn watch_status(&self) -> watch::Receiver<McpStatus> {
        self.shared().status.subscribe()
    }

    /// The server's tools as last listed, in the server's order.
    pub fn tools(&self) -> Vec<McpToolInfo> {
        self.shared().tools.borrow().iter().cloned().collect()
    }

    /// A receiver that sees every new tool list of the server.
    #[cfg(feature = "gateway")]
    pub(crate) fn watch_tools(&self) -> watch::Receiver<Arc<[McpToolInfo]>> {
        self.shared().tools.subscribe()
    }

    /// Progress notifications of this client's tool calls, from now on, in the order the server
    /// sent them; those of a call arrive before its answer does, and any the server sends
    /// after its answer are dropped. A receiver that falls more than 64 notifications behind
    /// misses the oldest (it is told so by `Lagged`).
    pub fn subscribe_progress(&self) -> broadcast::Receiver<McpProgress> {
        self.shared().progress.subscribe()
    }

    /// Calls a tool by its local name (as registered) with `args`, outside any registry:
    /// `Ok` with the text the model would read, or the error message of a tool error. The
    /// [call timeout](McpServerConfig::call_timeout) and the
    /// [result size limit](McpServerConfig::max_result_size) apply here too.
    pub async fn call(
        &self,
        local_name: &str,
        args: crate::JsonObject,
    ) -> Result<String, crate::ToolError> {
        match self.remote_name(local_name) {
            Some(remote) => {
                self.shared()
                    .call(local_name, &remote, args, None, false)
                    .await
            }
            None => Err(self.no_tool(local_name)),
        }
    }

    /// As [`call`](Self::call), with the call's context (the server's progress reaches it),
    /// and, over HTTP, sent beside `rmcp`'s client with a request of its own (see `direct`):
    /// the gateway's way, which makes one such call for each it serves.
    #[cfg(feature = "gateway")]
    pub(crate) async fn call_with(
        &self,
        local_name: &str,
        args: crate::JsonObject,
        context: crate::call::CallContext,
    ) -> Result<String, crate::ToolError> {
        match self.remote_name(local_name) {
            Some(remote) => {
                self.shared()
                    .call(local_name, &remote, args, Some(context), true)
                    .await
            }
            None => Err(self.no_tool(local_name)),
        }
    }

    /// The name on the server of the tool registered as `local_name`.
    fn remote_name(&self, local_name: &str) -> Option<String> {
        self.shared()
            .tools
            .borrow()
            .iter()
            .find(|tool| tool.local_name == local_name)
            .map(|tool| tool.remote_name.clone())
    }

    fn no_tool(&self, local_name: &str) -> crate::ToolError {
        crate::ToolError::new(format!(
            "the MCP server '{}' has no tool `{local_name}`",
            self.server_name()
        ))
    }

    /// Registers the server's tools in `registry` and keeps them in sync with the server's
    /// list until the returned registration is closed or dropped. Tools whose local name is
    /// already taken in the registry (or whose definition the registry rejects) are skipped
    /// with a warning; [`McpRegistration::tool_names`] lists those that were registered.
    // `async` although nothing is awaited yet: registering may come to wait for the server
    // (a fresh list), and callers already await it.
    #[allow(clippy::unused_async)]
    pub async fn register_into(
        &self,
        registry: &Arc<ToolRegistry>,
    ) -> Result<McpRegistration, McpClientError> {
        if self.shared().stop.is_cancelled() {
            return Err(McpClientError::Closed {
                server: self.server_name(),
            });
        }
        Ok(registration::register(self.clone(), registry.clone()))
    }

    /// Ends the connection (a child process gets its stdin closed, then is killed if it has
    /// not exited within two seconds) and waits for that. Tools still registered answer that
    /// the server is not connected; close their [`McpRegistration`] to remove them.
    pub async fn close(&self) {
        let shared = self.shared();
        shared.stop.cancel();
        let mut status = shared.status.subscribe();
        // The connection task reports `Closed` once the connection is down; it is bounded by
        // the two-second grace period of a child process, and the wait by this limit.
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            status.wait_for(|status| *status == McpStatus::Closed),
        )
        .await;
    }

    fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }
}

/// An error and those of its causes it does not quote already, as one line.
fn with_causes(error: &dyn std::error::Error) -> String {
    use std::fmt::Write as _;

    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            let _ = write!(text, ": {cause_text}");
        }
        source = cause.source();
    }
    text
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The guarded values are replaced whole, never left half-written.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
