//! One MCP endpoint in front of many MCP servers, showing each user their own tools.
//!
//! [`McpGateway`] connects to the upstream MCP servers of a [`GatewayConfig`] (child processes
//! over stdio, or streamable HTTP), adds the gateway's local tools (tools defined in the
//! configuration file, and any [`ExecutableTool`] of the application, such as `#[tool]` fns),
//! and serves all of them as one MCP server, over stdio and streamable HTTP, at every protocol
//! version [`McpServer`] speaks (stateless HTTP included).
//!
//! - **Names.** A server's tools are named `{prefix}_{name}` (the prefix defaults to the
//!   server's name); names MCP allows but providers refuse are mapped as the
//!   [MCP client](crate::mcp) maps them, from the name alone, so the mapping is the same after
//!   a restart or a reconnection. A name two sources offer is served by neither: the gateway
//!   logs an error naming both servers and sends [`GatewayEvent::NameCollision`]. A name two
//!   tools of one server map to is served for neither, with an error naming the server (never
//!   numbered in the server's order). The gateway's own names (`set_tool_enabled`,
//!   `search_tools`) are never an upstream tool's: such a tool is refused, with an error naming
//!   its server. A server whose prefix (by default its name) is not 1 to 32 ASCII letters,
//!   digits, `_` or `-` stops the gateway at start.
//! - **Users.** Each HTTP request belongs to a user: a bearer token listed (as its SHA-256) in
//!   `[[users]]`, or, from a `trusted_proxy` address, the proxy's user header. A request
//!   without credentials is refused `401` unless the gateway listens on loopback and names an
//!   `anonymous_user`, and then too when it came through a proxy (it carries `Forwarded`,
//!   `X-Forwarded-For`, `X-Forwarded-Host`, `X-Forwarded-Proto`, `X-Real-IP` or `Via`, or
//!   comes from a `trusted_proxy` address): a reverse proxy on the same host does not make
//!   remote clients the anonymous user. A wrong token is always refused. A stdio client is `stdio_user`. An
//!   HTTP session is its user's from the answer to its `initialize`: a request in another
//!   user's session, whatever its method, is answered `404`, as an unknown session, by every
//!   process sharing the store.
//! - **Switches.** Each user's tool switches are kept in the preference store (SQLite by
//!   default, PostgreSQL with the `postgres` feature) and decide what that user's `tools/list`
//!   shows and what `tools/call` may run (a switched-off tool is a JSON-RPC `invalid params`
//!   error, as an unknown one). A client switches with the gateway tool `set_tool_enabled`
//!   (`{"name": …, "enabled": …}`, plus `"scope": "session"` to switch for this connection only,
//!   on top of the user's switches; a request without a session, stateless HTTP or 2026-07-28,
//!   gets an error result for it and nothing switches); an operator with the admin API. A change reaches that
//!   user's open connections only, as `notifications/tools/list_changed`. An operator's switch
//!   is the user's own, which the user may turn back: switching `set_tool_enabled` off for the
//!   user too keeps it (a server's `block` list keeps a tool from everyone).
//! - **Tool search.** With `tool_search = true` (in `[gateway]`, or a user's own entry) a
//!   user's `tools/list` shows only `search_tools`, `set_tool_enabled` and their
//!   `pinned_tools`; `search_tools` (`{"query": …, "limit": …}`) ranks the tools the user has
//!   switched on with a [`ToolIndex`](crate::search::ToolIndex) and answers their names,
//!   descriptions and input schemas, to be called by name. A switched-off tool is never found.
//!   A server with `deferred = true` has its tools left out of every `tools/list`, tool search
//!   on or off: `search_tools` is listed to each user with one of them switched on, finds
//!   them, and they are called by name (with tool search on, a pinned one is listed).
//! - **Pinned definitions.** The SHA-256 of each upstream tool's description, input and output
//!   schemas, title and annotations is recorded (in the store, or in `pins_file` when one is named) when the tool is
//!   first served. A tool whose definition changes later is withheld from every user, with a
//!   warning in the log and a [`GatewayEvent::DefinitionChanged`], until an operator accepts
//!   the change (`POST /admin/pins/{tool}/accept`, through any process sharing the store).
//!   `pin_definitions = false` turns this off. A pin written before pins covered the output
//!   schema and the annotations is taken over in the current format when it matches the
//!   definition offered, and the tool stays served (every process sharing a store should
//!   run the same version).
//! - **Several processes.** With the store in PostgreSQL (feature `postgres`), any number of
//!   gateway processes can serve behind a load balancer: a switch made through one (a user's,
//!   a session's, or an accepted definition) is announced with PostgreSQL `NOTIFY`, and every
//!   other process reads it from the store and tells the streams it holds. HTTP sessions live
//!   in the store too: a process restores a session another began, with its user and its
//!   switches; a session ends with its client's `DELETE` (in every process: the others end
//!   their copies and its streams) or once no process held it for
//!   `session_idle_timeout_secs`, and its switches go with it. A request in another user's
//!   session is answered `404`, as in an unknown session, by every process alike. Upstream
//!   connections are per process.
//! - **Limits and faults.** Each user may start `calls_per_minute` calls a minute and run
//!   `max_concurrent_calls` at once on each server (each server counts apart, so calls hanging
//!   on one do not hold back the others); a call over either is answered with a JSON-RPC error
//!   (code `-32003`), the connection stays. Over HTTP each user may also make
//!   `requests_per_minute` requests of every kind (a looser budget, default 1200), hold
//!   `max_sessions_per_user` sessions (default 16) and `max_streams_per_user` open streams
//!   (`GET` and `subscriptions/listen`, default 32) in each process, so one user cannot take
//!   the process's 256 sessions or 512 connections; a request over one is answered `429` with
//!   a JSON-RPC error `-32003` (a `subscriptions/listen`, with that error on its stream). A
//!   session's or stream's place is free once it ends; a request refused without a user, or
//!   for its `Host` or `Origin`, counts for nobody. Each server's `timeout_ms` bounds its calls; after
//!   a call timed out the server is pinged, and one that does not answer within its timeout
//!   (kept to 1 to 10 s) hangs and is disconnected. A server that exits, drops the connection,
//!   hangs or cannot be reached at start leaves the others serving; its tools answer
//!   "temporarily unavailable" (a result with `isError`) and `/healthz` shows it down while
//!   the gateway reconnects with backoff. HTTP bodies over `max_request_bytes` are answered `413`,
//!   a `Host` or `Origin` outside the allowed ones `403` (see [`crate::mcp`]).
//! - **Observability.** Every call runs in a `tracing` span `gateway_call` with the user, the
//!   server and the tool. With the `otel` feature that span is inside the call's
//!   `tools/call {tool}` span (kind `SERVER`), which continues the trace context the client
//!   sent in `params._meta`, and the call to the upstream server (`tools/call {tool}`, kind
//!   `CLIENT`) passes it on in its own `_meta`: one trace covers the client, the gateway and
//!   the upstream. `GET /healthz` reports each upstream's state.
//!
//! # The admin API
//!
//! On the gateway's HTTP address, with `Authorization: Bearer <admin token>` (its SHA-256 is
//! `admin_token_sha256`; without one the admin API answers `403`):
//!
//! | request | does |
//! |---|---|
//! | `GET /admin/users/{user}/tools` | `{"tools": [{"name", "enabled"}]}`: the user's view |
//! | `PUT /admin/users/{user}/tools/{tool}` with `{"enabled": bool}` | switches a tool for the user |
//! | `GET /admin/pins` | `{"pending": {tool: {"server", "pinned", "offered"}}}` |
//! | `POST /admin/pins/{tool}/accept` | serves the tool's new definition; with a body `{"offered": sha256}`, only if the change waiting is that one (`409` with the one waiting otherwise) |
//! | `DELETE /admin/pins/{tool}` | forgets the pin of a tool no server offers (`409` while one does, or while a change of it waits) |
//! | `GET /healthz` (no token) | `{"status": "ok" \| "degraded", "servers": {name: {"state"}}}` |
//! | `GET /healthz` with the admin token | also each server's `protocol_version` and `tools`, or its last `error` |
//!
//! # Configuration
//!
//! ```toml
//! [gateway]
//! listen = "127.0.0.1:8090"
//! store = "sqlite://gateway.db"           # or postgres://…, or memory:
//! admin_token_sha256 = "…"                # cargo run --example mcp_gateway -- hash-token
//! calls_per_minute = 600
//! max_concurrent_calls = 16
//! requests_per_minute = 1200             # every HTTP request of one user
//! max_sessions_per_user = 16
//! max_streams_per_user = 32
//!
//! [[users]]
//! name = "alice"
//! token_sha256 = "…"
//!
//! [[servers]]
//! name = "everything"
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! timeout_ms = 30000
//! block = ["longRunningOperation"]
//!
//! [[servers]]
//! name = "remote"
//! url = "http://127.0.0.1:3001/mcp"
//! headers = { Authorization = "Bearer …" }
//! prefix = "r"
//! allow = ["search", "fetch"]
//! ```
//!
//! ```no_run
//! use tool_core::gateway::{GatewayConfig, McpGateway};
//!
//! # async fn run() -> Result<(), tool_core::gateway::GatewayError> {
//! let config = GatewayConfig::from_file("gateway.toml")?;
//! let listen = config.gateway.listen.clone();
//! let gateway = McpGateway::start(config, Vec::new()).await?;
//! let http = gateway.start_http(&listen).await?;
//! println!("serving on {}", http.url());
//! http.wait().await
//! # }
//! ```

mod catalog;
mod config;
mod fast;
mod handler;
mod http;
mod limits;
mod owners;
mod scope;
mod sessions;
mod switches;
mod users;

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

pub use config::{GatewayConfig, ServeConfig, TrustedProxy, UpstreamConfig, UserConfig};
pub use http::GatewayHttpServer;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};
pub use users::hash_token;

use self::{
    catalog::{Catalog, LOCAL, Offered, PinStore, UpstreamTool},
    handler::{GatewayHandler, SEARCH_TOOLS, SET_TOOL_ENABLED},
    limits::Limits,
    switches::Switches,
};
use crate::{
    config::{HandlerTable, ToolConfig},
    mcp::{McpClient, McpOptions, McpServer, McpStatus, ReconnectPolicy},
    registry::ToolRegistry,
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata},
};

/// Why the gateway could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The configuration is invalid.
    #[error("invalid gateway configuration: {0}")]
    Config(String),
    /// The preference store failed.
    #[error("the gateway's preference store failed: {0}")]
    Store(String),
    /// Serving failed.
    #[error("the gateway could not serve")]
    Serve(#[source] crate::mcp::McpServerError),
}

/// Something an operator should know of, from [`McpGateway::subscribe_events`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GatewayEvent {
    /// An upstream tool's definition changed since it was pinned; it is withheld until an
    /// operator accepts the change.
    DefinitionChanged {
        /// The tool's name in the gateway.
        tool: String,
        /// The server offering it.
        server: String,
    },
    /// Several sources offer a tool under one name; none of them is served.
    NameCollision {
        /// The name.
        tool: String,
        /// The servers offering it (`local` for the gateway's own tools).
        servers: Vec<String>,
    },
}

/// The state of one upstream server, as `/healthz` reports it.
#[derive(Clone, Debug)]
enum UpstreamState {
    Connecting { last_error: Option<String> },
    Client(McpClient),
}

/// What every connection's handler shares.
pub(crate) struct Shared {
    pub(crate) catalog: Catalog,
    pub(crate) switches: Arc<Switches>,
    pub(crate) limits: Limits,
    pub(crate) server: McpServer,
    pub(crate) stateless: bool,
    /// The in-memory sessions of this process's HTTP servers.
    pub(crate) http_sessions: sessions::InMemory,
    config: GatewayConfig,
    upstreams: Mutex<BTreeMap<String, UpstreamState>>,
    events: broadcast::Sender<GatewayEvent>,
}

impl Shared {
    /// Accepts the pending definition change of `tool` (when `offered`, only if its SHA-256
    /// is that) and tells the other processes sharing the store.
    pub(crate) async fn accept_pin(
        &self,
        tool: &str,
        offered: Option<&str>,
    ) -> Result<catalog::PinAccept, GatewayError> {
        let accepted = self.catalog.accept(tool, offered).await?;
        if accepted == catalog::PinAccept::Accepted {
            self.switches.announce_pin(tool).await;
        }
        Ok(accepted)
    }

    /// Drops the pin of `tool`, which no source of this process offers, and tells the other
    /// processes sharing the store.
    pub(crate) async fn drop_pin(&self, tool: &str) -> Result<catalog::PinDrop, GatewayError> {
        let dropped = self.catalog.drop_pin(tool).await?;
        if dropped == catalog::PinDrop::Dropped {
            self.switches.announce_pin(tool).await;
        }
        Ok(dropped)
    }
}

/// A running gateway; see the [module docs](self). Dropping it (and its servers) disconnects
/// the upstreams.
pub struct McpGateway {
    shared: Arc<Shared>,
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
}

impl std::fmt::Debug for McpGateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpGateway")
            .field("servers", &self.shared.config.servers.len())
            .finish_non_exhaustive()
    }
}

impl McpGateway {
    /// Opens the preference store, registers the local tools (`tools`, the configuration's
    /// `[[tools]]` and `set_tool_enabled`) and connects to every upstream server, waiting for
    /// each first attempt (within its connect timeout). A server that cannot be reached is
    /// retried in the background with backoff; its tools appear when it answers.
    pub async fn start(
        config: GatewayConfig,
        tools: Vec<Arc<dyn ExecutableTool>>,
    ) -> Result<Self, GatewayError> {
        config.check()?;
        let mut names = std::collections::HashSet::new();
        for server in &config.servers {
            server.client_config()?;
            if !names.insert(server.name.as_str()) || server.name == LOCAL {
                return Err(GatewayError::Config(format!(
                    "two servers are named `{}` (or one is named `{LOCAL}`, the gateway's own)",
                    server.name
                )));
            }
        }
        let registry = Arc::new(ToolRegistry::new());
        let (events, _) = broadcast::channel(64);
        let switches =
            Arc::new(Switches::open(&config.gateway.store, config.gateway.max_idle_users).await?);
        let pins = match (&config.gateway.pins_file, switches.sql()) {
            (Some(file), _) => PinStore::File(file.into()),
            (None, Some(sql)) => PinStore::Sql(sql.clone()),
            (None, None) => PinStore::Memory,
        };
        let catalog = Catalog::new(
            registry.clone(),
            config.gateway.pin_definitions,
            config.gateway.max_pins_per_server,
            pins,
            events.clone(),
        )
        .await?;
        let longest = config
            .servers
            .iter()
            .filter_map(|server| server.timeout_ms)
            .max()
            .map_or(crate::mcp::DEFAULT_TOOL_TIMEOUT, |ms| {
                Duration::from_millis(ms) + Duration::from_secs(1)
            })
            .max(crate::mcp::DEFAULT_TOOL_TIMEOUT);
        let options = mcp_options(&config).tool_timeout(Some(longest));
        let server = McpServer::with_options(registry.clone(), options);
        let shared = Arc::new(Shared {
            catalog,
            switches,
            limits: Limits::new(&config.gateway),
            server,
            stateless: config.gateway.stateless,
            http_sessions: sessions::InMemory::default(),
            upstreams: Mutex::new(BTreeMap::new()),
            events,
            config,
        });
        shared
            .catalog
            .offer(LOCAL, local_tools(&shared.config, tools)?)
            .await;

        let stop = CancellationToken::new();
        #[cfg(feature = "postgres")]
        tokio::spawn(Switches::follow(shared.clone(), stop.clone()));
        tokio::spawn(sessions::maintain(
            shared.clone(),
            Duration::from_secs(shared.config.gateway.session_idle_timeout_secs),
            stop.clone(),
        ));
        let mut first_attempts = Vec::new();
        for upstream in shared.config.servers.clone() {
            let (done, attempted) = tokio::sync::oneshot::channel();
            lock(&shared.upstreams).insert(
                upstream.name.clone(),
                UpstreamState::Connecting { last_error: None },
            );
            tokio::spawn(run_upstream(shared.clone(), upstream, done, stop.clone()));
            first_attempts.push(attempted);
        }
        for attempted in first_attempts {
            let _ = attempted.await;
        }
        Ok(Self {
            shared,
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
        })
    }

    /// The registry holding every tool the gateway serves (before each user's switches).
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.shared.catalog.registry
    }

    /// Events an operator should know of, from now on.
    pub fn subscribe_events(&self) -> broadcast::Receiver<GatewayEvent> {
        self.shared.events.subscribe()
    }

    /// How many users this process keeps in memory: `(limits, switches)` (for tests of
    /// `max_idle_users`).
    #[doc(hidden)]
    pub fn users_in_memory(&self) -> (usize, usize) {
        (
            self.shared.limits.users(),
            self.shared.switches.loaded_users(),
        )
    }

    /// Each upstream server's state, as `/healthz` reports it to the admin token: with the
    /// last connection error, which may name the server's command line or its last line on
    /// stderr.
    pub fn health(&self) -> Value {
        health(&self.shared, true)
    }

    /// Serves one client on this process's stdin and stdout as the configuration's
    /// `stdio_user`, until the client closes stdin.
    pub async fn serve_stdio(&self) -> Result<(), GatewayError> {
        let user = self.shared.config.gateway.stdio_user.clone();
        self.shared.switches.user(&user).await?;
        crate::mcp::serve_io_with(
            self.shared.server.options(),
            |closed| GatewayHandler::new(self.shared.clone(), Some(user), Some(closed)),
            tokio::io::stdin(),
            tokio::io::stdout(),
        )
        .await
        .map_err(GatewayError::Serve)
    }

    /// Binds streamable HTTP (the MCP endpoint, the admin API and `/healthz`) at `addr` and
    /// serves it in the background.
    pub async fn start_http(&self, addr: &str) -> Result<GatewayHttpServer, GatewayError> {
        http::start(self.shared.clone(), addr, self.stop.child_token()).await
    }
}

/// The MCP options the configuration asks for.
fn mcp_options(config: &GatewayConfig) -> McpOptions {
    let serve = &config.gateway;
    let mut options = McpOptions::new()
        .server(serve.name.clone(), env!("CARGO_PKG_VERSION"))
        .http_path(serve.path.clone())
        .stateless(serve.stateless)
        .max_request_bytes(serve.max_request_bytes)
        .session_idle_timeout(Duration::from_secs(serve.session_idle_timeout_secs))
        // Upstream tools carry no approval flag the gateway could honour; the client's user
        // confirms destructive tools as their client does.
        .approval(crate::mcp::McpApproval::Allow);
    if let Some(hosts) = &serve.allowed_hosts {
        options = options.allowed_hosts(hosts.clone());
    }
    if let Some(origins) = &serve.allowed_origins {
        options = options.allowed_origins(origins.clone());
    }
    options
}

/// The gateway's own tools: the application's, the configuration's and `set_tool_enabled`.
fn local_tools(
    config: &GatewayConfig,
    tools: Vec<Arc<dyn ExecutableTool>>,
) -> Result<Vec<Offered>, GatewayError> {
    let mut offered: Vec<Arc<dyn ExecutableTool>> = tools;
    if !config.tools.is_empty() {
        let file = ToolConfig::from_value(json!({ "tools": config.tools }))
            .map_err(|error| GatewayError::Config(error.to_string()))?;
        let scratch = ToolRegistry::new();
        let report = file.register(&scratch, &HandlerTable::new());
        for rejected in &report.rejected {
            tracing::error!(tool = %rejected.label(), "a configured tool is not served: {}", rejected.error);
        }
        offered.extend(
            report
                .registered
                .iter()
                .filter_map(|name| scratch.get(name)),
        );
    }
    offered.retain(|tool| {
        let reserved = catalog::RESERVED.contains(&tool.name());
        if reserved {
            tracing::error!(
                tool = %tool.name(),
                "a local tool is named `{}`, a name of the gateway's own tools; it is not served",
                tool.name()
            );
        }
        !reserved
    });
    offered.push(Arc::new(SetToolEnabled));
    if config.any_tool_search() || config.any_deferred() {
        offered.push(Arc::new(SearchTools));
    }
    Ok(offered
        .into_iter()
        .map(|tool| Offered {
            tool,
            fingerprint: None,
        })
        .collect())
}

/// Connects to one upstream (retrying with backoff until it answers) and keeps its tools in
/// the catalog.
async fn run_upstream(
    shared: Arc<Shared>,
    upstream: UpstreamConfig,
    first_attempt: tokio::sync::oneshot::Sender<()>,
    stop: CancellationToken,
) {
    let mut first_attempt = Some(first_attempt);
    let Ok(client_config) = upstream.client_config() else {
        return;
    };
    let policy = ReconnectPolicy::default();
    let mut attempt = 0;
    let client = loop {
        let connected = tokio::select! {
            () = stop.cancelled() => return,
            connected = McpClient::connect(client_config.clone()) => connected,
        };
        match connected {
            Ok(client) => break client,
            Err(error) => {
                tracing::warn!(server = %upstream.name, %error, "cannot connect to the upstream mcp server; retrying");
                lock(&shared.upstreams).insert(
                    upstream.name.clone(),
                    UpstreamState::Connecting {
                        last_error: Some(error.to_string()),
                    },
                );
                if let Some(done) = first_attempt.take() {
                    let _ = done.send(());
                }
                let delay = policy.delay(attempt);
                attempt = attempt.saturating_add(1);
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
            }
        }
    };
    lock(&shared.upstreams).insert(upstream.name.clone(), UpstreamState::Client(client.clone()));
    let mut lists = client.watch_tools();
    let mut made: std::collections::HashMap<
        String,
        (crate::mcp::McpToolInfo, Arc<dyn ExecutableTool>),
    > = std::collections::HashMap::new();
    loop {
        let list = lists.borrow_and_update().clone();
        let mut offered = Vec::new();
        let mut next = std::collections::HashMap::new();
        for info in list
            .iter()
            .filter(|info| upstream.admits(&info.remote_name))
        {
            // The same definition keeps the same tool, so the registry sees no change.
            let tool = match made.get(&info.local_name) {
                Some((known, tool)) if known == info => tool.clone(),
                _ => Arc::new(UpstreamTool {
                    client: client.clone(),
                    server: upstream.name.clone(),
                    info: info.clone(),
                }) as Arc<dyn ExecutableTool>,
            };
            offered.push(Offered {
                tool: tool.clone(),
                fingerprint: Some(catalog::fingerprint(info)),
            });
            next.insert(info.local_name.clone(), (info.clone(), tool));
        }
        made = next;
        if shared.catalog.offer(&upstream.name, offered).await {
            shared.switches.announce_pin(&upstream.name).await;
        }
        if let Some(done) = first_attempt.take() {
            let _ = done.send(());
        }
        tokio::select! {
            () = stop.cancelled() => break,
            changed = lists.changed() => if changed.is_err() { break },
        }
    }
    client.close().await;
}

/// The upstream servers' states; with `details`, their protocol versions, tool counts and last
/// errors too.
fn health(shared: &Shared, details: bool) -> Value {
    let upstreams = lock(&shared.upstreams).clone();
    let mut all_up = true;
    let servers: serde_json::Map<String, Value> = upstreams
        .into_iter()
        .map(|(name, state)| {
            let report = match state {
                UpstreamState::Connecting { last_error } => {
                    all_up = false;
                    json!({"state": "connecting", "error": last_error})
                }
                UpstreamState::Client(client) => match client.status() {
                    McpStatus::Connected { protocol_version } => json!({
                        "state": "connected",
                        "protocol_version": protocol_version,
                        "tools": client.tools().len(),
                    }),
                    McpStatus::Disconnected { reason } => {
                        all_up = false;
                        json!({"state": "disconnected", "error": reason})
                    }
                    _ => {
                        all_up = false;
                        json!({"state": "closed"})
                    }
                },
            };
            let report = if details {
                report
            } else {
                json!({"state": report["state"]})
            };
            (name, report)
        })
        .collect();
    json!({"status": if all_up { "ok" } else { "degraded" }, "servers": servers})
}

/// `set_tool_enabled` as listed; calls never reach it, the gateway's handler answers them with
/// the caller's user in hand.
struct SetToolEnabled;

#[async_trait::async_trait]
impl ExecutableTool for SetToolEnabled {
    fn name(&self) -> &str {
        SET_TOOL_ENABLED
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            SET_TOOL_ENABLED,
            "Switch one of your tools off or on. The choice is remembered for your user; with \
             scope \"session\" it lasts for this connection only.",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name."},
                    "enabled": {"type": "boolean", "description": "true to switch it on, false to switch it off."},
                    "scope": {"type": "string", "enum": ["user", "session"], "description": "Whom the switch is for (default user)."}
                },
                "required": ["name", "enabled"],
                "additionalProperties": false
            }),
        )
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new()
            .title("Switch a tool")
            .idempotent(true)
            .open_world(false)
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        Err(ToolError::new(
            "set_tool_enabled switches tools only when called through the gateway",
        ))
    }
}

/// `search_tools` as listed to users with tool search on; the gateway's handler answers its
/// calls over the caller's own switches.
struct SearchTools;

#[async_trait::async_trait]
impl ExecutableTool for SearchTools {
    fn name(&self) -> &str {
        SEARCH_TOOLS
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            SEARCH_TOOLS,
            "Find tools by what they do. Answers the best matches with their names, descriptions \
             and input schemas; call a match by its name. `select:a,b` picks tools by name.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What the tool should do, in a few words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many matches at most (default 10)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        )
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new()
            .title("Search tools")
            .read_only(true)
            .open_world(false)
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        Err(ToolError::new(
            "search_tools searches only when called through the gateway",
        ))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The guarded values are replaced whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
