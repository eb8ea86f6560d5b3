//! The connection to one server: starting it, the `rmcp` client handler, the task that follows
//! the tool list and reconnects, and tool calls.

use std::{
    collections::{HashMap, VecDeque},
    fmt::Write as _,
    future::Future,
    hash::{BuildHasher, Hasher},
    pin::Pin,
    process::Stdio,
    sync::{
        Arc, Mutex, RwLock, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientHandler, ServiceError, ServiceExt,
    model::{
        CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
        ClientConfig, ClientRequest, ErrorData, Implementation, InitializeRequestParams,
        NumberOrString, PingRequest, ProgressNotificationParam, ProgressToken, ProtocolVersion,
        RequestId, ServerResult, Tool, ToolAnnotations,
    },
    service::{
        ClientInitializeError, NotificationContext, Peer, PeerRequestOptions, QuitReason,
        RoleClient, RunningService,
    },
    transport::{
        StreamableHttpClientTransport, async_rw::AsyncRwTransport,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, ChildStderr},
    sync::{Notify, broadcast, mpsc, watch},
};
use tokio_util::sync::CancellationToken;

use super::{
    McpClientError, McpProgress, McpServerConfig, McpStatus, McpToolInfo, McpTransportConfig,
    config::header_pair,
    content::{content_text, result_text, truncated},
    direct::{self, DirectHttp, Outcome},
    http::{HttpReports, LostAnswer, ReportingClient},
    lines::{LimitedLines, MAX_MESSAGE_SIZE, OVERSIZED},
    listing::{ListError, Listed, list_tools},
    lock,
    names::{local_name, local_names, unique_local_names},
    progress::{InOrder, ProgressSink},
    with_causes,
};
use crate::{
    JsonObject, ToolError,
    call::CallContext,
    secrets::Scrubber,
    tool::{ChatTool, ToolHints, ToolMetadata},
};

/// The protocol versions this client accepts in the server's `initialize` answer. It asks for
/// the newest; older servers answer with theirs.
const SUPPORTED_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
];

/// How long a child process may take to exit after its stdin is closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The bounds of how long a server may take to answer the `ping` sent after a call timed out:
/// the call timeout, within these.
const PING_TIMEOUT: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(10));

/// The longest text quoted from someone else's error (a server's message, a library's error)
/// in a message.
const MAX_FOREIGN_TEXT: usize = 1000;

/// What the client handle, the connection task, the `rmcp` handler and the registered tools
/// share.
pub(super) struct Shared {
    pub(super) config: McpServerConfig,
    /// The name in messages; the server's own name replaces the command line once known.
    name: RwLock<String>,
    /// The live connection's peer and generation (`None` while disconnected).
    peer: Mutex<Option<(u64, Peer<RoleClient>)>>,
    pub(super) status: watch::Sender<McpStatus>,
    pub(super) tools: watch::Sender<Arc<[McpToolInfo]>>,
    pub(super) progress: broadcast::Sender<McpProgress>,
    /// Set by `notifications/tools/list_changed`.
    refresh: Notify,
    /// Set when a call timed out: the connection task pings the server, and takes a server
    /// that does not answer for hung.
    probe: Notify,
    /// Calls that found the connection broken report it here, with the generation they used.
    lost: mpsc::UnboundedSender<(u64, String)>,
    generation: AtomicU64,
    /// Each call in flight, by progress token.
    calls: Mutex<HashMap<String, CallInFlight>>,
    /// Progress that came before its call was entered in `calls`: a request is entered once
    /// it is sent, and the server may report progress before that. Bounded; the oldest goes.
    early_progress: Mutex<VecDeque<ProgressNotificationParam>>,
    /// The last line the child process wrote to stderr, for error messages.
    stderr_tail: Arc<Mutex<Option<String>>>,
    /// What the HTTP client saw go wrong.
    http_reports: Arc<HttpReports>,
    /// The configuration's secrets (the URL's credentials and query, the headers' values),
    /// taken out of every message that quotes someone else's error.
    scrubber: Scrubber,
    /// The live connection's way to send calls beside `rmcp`, over HTTP (see [`direct`]).
    direct: Mutex<Option<Arc<DirectHttp>>>,
    /// The number of the next call sent beside `rmcp`, for its request id.
    direct_ids: AtomicU64,
    pub(super) stop: CancellationToken,
}

/// One live connection.
pub(super) struct Connection {
    generation: u64,
    peer: Peer<RoleClient>,
    /// Ends when the `rmcp` service loop ends (transport closed or cancelled); `None` once it
    /// has ended (a finished future must not be polled again).
    done: Option<ServiceDone>,
    cancel: CancellationToken,
    child: Option<Child>,
    /// Over HTTP: what calls sent beside `rmcp` need.
    direct: Option<Arc<DirectHttp>>,
}

type ServiceDone = Pin<Box<dyn Future<Output = Result<QuitReason, tokio::task::JoinError>> + Send>>;

pub(super) type LostReceiver = mpsc::UnboundedReceiver<(u64, String)>;

impl Shared {
    /// The shared state, and the receiver of lost-connection reports for the connection task.
    pub(super) fn new(config: McpServerConfig) -> (Arc<Self>, LostReceiver) {
        let (lost, lost_rx) = mpsc::unbounded_channel();
        let mut scrubber = Scrubber::new();
        if let McpTransportConfig::Http { url, headers } = &config.transport {
            scrubber.url(url);
            for (_, value) in headers {
                scrubber.secret(value);
            }
        }
        let shared = Arc::new(Self {
            name: RwLock::new(config.display_name()),
            config,
            peer: Mutex::new(None),
            status: watch::Sender::new(McpStatus::Disconnected {
                reason: "connecting".to_owned(),
            }),
            tools: watch::Sender::new(Arc::from(Vec::new())),
            progress: broadcast::channel(64).0,
            refresh: Notify::new(),
            probe: Notify::new(),
            lost,
            generation: AtomicU64::new(0),
            calls: Mutex::new(HashMap::new()),
            early_progress: Mutex::new(VecDeque::new()),
            stderr_tail: Arc::new(Mutex::new(None)),
            http_reports: Arc::default(),
            scrubber,
            direct: Mutex::new(None),
            direct_ids: AtomicU64::new(0),
            stop: CancellationToken::new(),
        });
        (shared, lost_rx)
    }

    pub(super) fn name(&self) -> String {
        self.name
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Someone else's error as text for messages: without the configuration's secrets, and no
    /// longer than a message should be.
    fn foreign(&self, error: impl std::fmt::Display) -> String {
        let text = self.scrubber.scrub(&error.to_string());
        truncated(text, MAX_FOREIGN_TEXT)
    }

    /// Why the handshake failed, from `rmcp`'s error (and the HTTP client's, which `rmcp`
    /// quotes without its causes).
    fn handshake_reason(&self, error: &ClientInitializeError) -> String {
        if let ClientInitializeError::TransportError { context, .. } = error {
            if let Some(failure) = self.http_reports.failure() {
                return format!("{} (when {context})", self.foreign(failure));
            }
        }
        match error {
            ClientInitializeError::ExpectedInitResponse(_)
            | ClientInitializeError::ExpectedInitResult(_)
            | ClientInitializeError::ConflictInitResponseId(..)
            | ClientInitializeError::UncorrelatedErrorResponse { .. } => format!(
                "the server sent something other than the answer to `initialize`: {}",
                self.foreign(with_causes(error))
            ),
            error => self.foreign(with_causes(error)),
        }
    }

    /// Starts or reaches the server, shakes hands, lists the tools and publishes them.
    pub(super) async fn open(self: &Arc<Self>) -> Result<Connection, McpClientError> {
        let limit = self.config.connect_timeout;
        let opened = tokio::time::timeout(limit, self.open_unbounded()).await;
        let mut connection = opened.map_err(|_| McpClientError::Timeout {
            server: self.name(),
            timeout: limit,
        })??;
        connection.generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        *lock(&self.peer) = Some((connection.generation, connection.peer.clone()));
        lock(&self.direct).clone_from(&connection.direct);
        let version = connection
            .peer
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_default();
        self.status.send_replace(McpStatus::Connected {
            protocol_version: version,
        });
        Ok(connection)
    }

    // Connecting, the handshake and listing every page are one sequence of awaits with their
    // error handling; split up, the steps would pass half a connection around.
    #[allow(clippy::too_many_lines)]
    async fn open_unbounded(self: &Arc<Self>) -> Result<Connection, McpClientError> {
        let handler = ClientSide {
            shared: Arc::downgrade(self),
        };
        let mut http = None;
        let (running, mut child) = match &self.config.transport {
            McpTransportConfig::Command {
                program,
                args,
                env,
                cwd,
            } => {
                let mut command = tokio::process::Command::new(program);
                command
                    .args(args)
                    .envs(env.iter().map(|(key, value)| (key, value)))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true);
                if let Some(cwd) = cwd {
                    command.current_dir(cwd);
                }
                let spawn_error = |source| McpClientError::Spawn {
                    command: self.config.transport.to_string(),
                    source,
                };
                let mut child = command.spawn().map_err(spawn_error)?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err(spawn_error(std::io::Error::other("no stdio pipes")));
                };
                if let Some(stderr) = child.stderr.take() {
                    tokio::spawn(forward_stderr(
                        self.name(),
                        stderr,
                        self.stderr_tail.clone(),
                    ));
                }
                // `rmcp`'s own cap must not drop a line `LimitedLines` lets through.
                let transport = AsyncRwTransport::<RoleClient, _, _>::new(
                    LimitedLines::new(stdout, MAX_MESSAGE_SIZE),
                    stdin,
                )
                .with_max_line_length(MAX_MESSAGE_SIZE + 1);
                match handler
                    .serve(InOrder::new(transport, Arc::downgrade(self)))
                    .await
                {
                    Ok(running) => (running, Some(child)),
                    Err(error) => {
                        let reason = self.handshake_reason(&error);
                        let reason = self.describe_exit(&mut child, &reason).await;
                        return Err(McpClientError::Handshake {
                            server: self.name(),
                            reason,
                        });
                    }
                }
            }
            McpTransportConfig::Http { url, headers } => {
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let (name, value) = header_pair(name, value)?;
                    custom.insert(name, value);
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom.clone());
                config.max_sse_event_size = MAX_MESSAGE_SIZE;
                config.max_json_response_size = MAX_MESSAGE_SIZE;
                let client = ReportingClient::new(self.http_reports.clone()).map_err(|error| {
                    McpClientError::Handshake {
                        server: self.name(),
                        reason: format!(
                            "cannot build the http client: {}",
                            self.foreign(with_causes(&error))
                        ),
                    }
                })?;
                http = Some((client.reqwest(), url, custom));
                let transport = InOrder::new(
                    StreamableHttpClientTransport::with_client(client, config),
                    Arc::downgrade(self),
                );
                // A failure of the last connection's requests says nothing about this one.
                let _ = self.http_reports.failure();
                let running =
                    handler
                        .serve(transport)
                        .await
                        .map_err(|error| McpClientError::Handshake {
                            server: self.name(),
                            reason: self.handshake_reason(&error),
                        })?;
                (running, None)
            }
        };

        let info = running.peer().peer_info();
        let version = info
            .as_ref()
            .map(|info| info.protocol_version.clone())
            .unwrap_or_default();
        if !SUPPORTED_VERSIONS.contains(&version) {
            return Err(McpClientError::UnsupportedVersion {
                server: self.name(),
                version: version.to_string(),
            });
        }
        if self.config.name.is_none() && self.config.prefix.is_none() {
            if let Some(server_name) = info.and_then(|info| info.server_info.clone()) {
                *self
                    .name
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = server_name.name;
            }
        }
        let listed = list_tools(running.peer(), self.config.max_tools)
            .await
            .map_err(|error| McpClientError::ListTools {
                server: self.name(),
                reason: self.foreign(with_causes(&error)),
            })?;
        self.publish_tools(listed);

        let direct = http.and_then(|(client, url, custom)| {
            DirectHttp::new(client, url, custom, version.as_str()).map(Arc::new)
        });
        let peer = running.peer().clone();
        let cancel = CancellationToken::new();
        let done: ServiceDone = Box::pin(wait_service(running, cancel.clone()));
        if let Some(child) = &mut child {
            // Forget a tail from an earlier process once this one is up.
            if let Ok(None) = child.try_wait() {
                lock(&self.stderr_tail).take();
            }
        }
        Ok(Connection {
            generation: 0,
            peer,
            done: Some(done),
            cancel,
            child,
            direct,
        })
    }

    /// Why a child process is gone: `reason`, then its exit status when it has exited within a
    /// moment, and the last line it wrote to stderr.
    async fn describe_exit(&self, child: &mut Child, reason: &str) -> String {
        let status = tokio::time::timeout(Duration::from_secs(1), child.wait()).await;
        let mut text = reason.to_owned();
        if let Ok(Ok(status)) = status {
            let _ = write!(text, "; the server process exited ({status})");
        }
        // Give the stderr reader a moment to see the last line.
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Some(line) = lock(&self.stderr_tail).clone() {
            text.push_str(": ");
            text.push_str(&line);
        }
        text
    }

    /// Turns a tool list into the local tool table and publishes it when it changed.
    fn publish_tools(&self, listed: Listed) {
        let server = self.name();
        for name in &listed.duplicates {
            tracing::warn!(
                server = %server,
                tool = %name,
                "the MCP server lists the tool more than once; its first definition is used"
            );
        }
        if listed.cut {
            tracing::warn!(
                server = %server,
                max_tools = self.config.max_tools,
                "the MCP server lists more tools than the limit; only the first are used"
            );
        }
        let tools = listed.tools;
        let prefix = self.config.prefix.as_deref();
        let remote = tools.iter().map(|tool| tool.name.as_ref());
        let locals: Vec<Option<String>> = if self.config.refuse_name_collisions {
            let locals = unique_local_names(prefix, remote);
            self.report_collisions(&tools, &locals);
            locals
        } else {
            local_names(prefix, remote).into_iter().map(Some).collect()
        };
        let table: Arc<[McpToolInfo]> = tools
            .into_iter()
            .zip(locals)
            .filter_map(|(tool, local)| Some(tool_info(&server, &self.config, tool, local?)))
            .collect();
        self.tools.send_if_modified(|current| {
            if **current == *table {
                return false;
            }
            *current = table;
            true
        });
    }

    /// Logs the tools [`unique_local_names`] left out (`None` in `locals`), by the name they
    /// would share.
    fn report_collisions(&self, tools: &[Tool], locals: &[Option<String>]) {
        let prefix = self.config.prefix.as_deref();
        let mut shared = std::collections::BTreeMap::<String, Vec<&str>>::new();
        for (tool, local) in tools.iter().zip(locals) {
            if local.is_none() {
                shared
                    .entry(local_name(prefix, &tool.name))
                    .or_default()
                    .push(tool.name.as_ref());
            }
        }
        for (local, remote) in shared {
            tracing::error!(
                server = %self.name(),
                tool = %local,
                "tool name collision: the MCP server '{}' offers {} under the one name `{local}`; \
                 none of them is served",
                self.name(),
                remote
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            );
        }
    }

    fn set_disconnected(&self, reason: &str) {
        lock(&self.peer).take();
        self.status.send_replace(McpStatus::Disconnected {
            reason: reason.to_owned(),
        });
        tracing::warn!(server = %self.name(), "the MCP server is not connected: {reason}");
    }

    fn not_connected(&self) -> ToolError {
        let reason = match &*self.status.borrow() {
            McpStatus::Disconnected { reason } => reason.clone(),
            McpStatus::Closed => "the client was closed".to_owned(),
            McpStatus::Connected { .. } => "the connection was lost".to_owned(),
        };
        ToolError::new(format!(
            "the MCP server '{}' is not connected: {reason}",
            self.name()
        ))
    }

    /// Calls `remote` on the server; see [`McpClient::call`](super::McpClient::call). The call
    /// waits at most the [call timeout](McpServerConfig::call_timeout) (a call given up is
    /// cancelled on the server), and its text is cut to the
    /// [result size limit](McpServerConfig::max_result_size).
    ///
    /// With `direct`, a call over HTTP is sent beside `rmcp` (see [`direct`]).
    pub(super) async fn call(
        &self,
        local: &str,
        remote: &str,
        args: JsonObject,
        context: Option<CallContext>,
        direct: bool,
    ) -> Result<String, ToolError> {
        let limit = self.config.call_timeout;
        let request = ToolCall {
            local,
            remote,
            args,
            context,
        };
        let call = tokio::time::timeout(limit, self.call_unbounded(request, direct));
        #[cfg(feature = "otel")]
        let span = self.call_span(remote);
        #[cfg(feature = "otel")]
        let call = tracing::Instrument::instrument(call, span.clone());
        call.await.unwrap_or_else(|_| {
            // Slow, or hung: the connection task asks the server.
            self.probe.notify_one();
            #[cfg(feature = "otel")]
            crate::otel::mcp::failed(&span, "timeout", None, "the server did not answer in time");
            Err(ToolError::new(format!(
                "the MCP server '{}' did not answer within {limit:?}",
                self.name()
            )))
        })
    }

    /// The span of a call of `remote`: `tools/call {remote}`, kind `CLIENT`, with the version
    /// the connection speaks and its transport.
    #[cfg(feature = "otel")]
    fn call_span(&self, remote: &str) -> tracing::Span {
        let version = lock(&self.peer).as_ref().and_then(|(_, peer)| {
            peer.peer_info()
                .map(|info| info.protocol_version.as_str().to_owned())
        });
        let transport = match self.config.transport() {
            McpTransportConfig::Http { .. } => "tcp",
            _ => "pipe",
        };
        crate::otel::mcp::tools_call_span(
            crate::otel::mcp::Side::Client,
            remote,
            version.as_deref(),
            transport,
        )
    }

    async fn call_unbounded(
        &self,
        request: ToolCall<'_>,
        direct: bool,
    ) -> Result<String, ToolError> {
        let Some((generation, peer)) = lock(&self.peer).clone() else {
            return Err(self.not_connected());
        };
        let http = if direct {
            lock(&self.direct).clone()
        } else {
            None
        };
        if let Some(http) = http {
            return self.call_direct(&http, generation, peer, request).await;
        }
        self.call_through_rmcp(generation, peer, request).await
    }

    /// A call sent beside `rmcp` over HTTP; see [`direct`].
    async fn call_direct(
        &self,
        http: &DirectHttp,
        generation: u64,
        peer: Peer<RoleClient>,
        request: ToolCall<'_>,
    ) -> Result<String, ToolError> {
        let number = self.direct_ids.fetch_add(1, Ordering::Relaxed);
        let id_text = format!("tool-core-{number}");
        let id = RequestId::String(Arc::from(id_text.as_str()));
        let mut meta = JsonObject::new();
        // Asked for only when someone reads it: a server given a token sets up reports.
        let progress_read = request
            .context
            .as_ref()
            .is_some_and(CallContext::wants_progress)
            || self.progress.receiver_count() > 0;
        if progress_read {
            meta.insert("progressToken".to_owned(), Value::String(id_text.clone()));
        }
        #[cfg(feature = "otel")]
        {
            // The call's trace context, so the server's span continues this trace.
            crate::otel::mcp::inject(&tracing::Span::current(), &mut meta);
            tracing::Span::current().record("jsonrpc.request.id", id_text.as_str());
        }
        let body = direct::call_body(&id_text, request.remote, &request.args, &meta);
        let mut in_flight = InFlight::new(
            self,
            &ProgressToken(id.clone()),
            request.local,
            request.context,
            &peer,
            &id,
        );
        let Ok(outcome) =
            direct::call(http, self.http_reports.session(), &id_text, body, self).await
        else {
            // The call was not run: `rmcp` sends it, with its context, and begins a new
            // session.
            let request = ToolCall {
                context: in_flight.withdraw(),
                ..request
            };
            return self.call_through_rmcp(generation, peer, request).await;
        };
        in_flight.answered = true;
        // The call's context goes with its answer: it may hold an agent's event stream open.
        drop(in_flight);
        match outcome {
            Outcome::Result(result) => match (result.content, result.structured_content) {
                (None, None) if result.is_error != Some(true) => Ok(String::new()),
                (blocks, structured) => self.tool_outcome(
                    content_text(&blocks.unwrap_or_default(), structured.as_ref()),
                    result.is_error == Some(true),
                ),
            },
            Outcome::Error(error) => Err(self.rejected(&error)),
            Outcome::Unreachable(reason) => {
                Err(self.connection_lost(generation, &self.foreign(reason)))
            }
            Outcome::Lost(lost) => Err(self.lost_answer(lost)),
        }
    }

    /// A call sent through `rmcp`'s client.
    async fn call_through_rmcp(
        &self,
        generation: u64,
        peer: Peer<RoleClient>,
        request: ToolCall<'_>,
    ) -> Result<String, ToolError> {
        let ToolCall {
            local,
            remote,
            args,
            context,
        } = request;
        let params = CallToolRequestParams::new(remote.to_owned()).with_arguments(args);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        #[allow(unused_mut)]
        let mut options = PeerRequestOptions::no_options();
        #[cfg(feature = "otel")]
        {
            // The call's trace context, so the server's span continues this trace.
            let mut meta = serde_json::Map::new();
            crate::otel::mcp::inject(&tracing::Span::current(), &mut meta);
            if !meta.is_empty() {
                options = options.with_meta(rmcp::model::RequestMetaObject(
                    rmcp::model::MetaObject(meta),
                ));
            }
        }
        // Sent by hand rather than with `Peer::call_tool`, which hides the progress token rmcp
        // puts in the request: the token is what ties progress notifications to the tool.
        let handle = peer
            .send_request_with_option(request, options)
            .await
            .map_err(|error| self.call_error(generation, &peer, None, error))?;
        let id = handle.id.clone();
        #[cfg(feature = "otel")]
        tracing::Span::current().record("jsonrpc.request.id", id.to_string());
        let mut in_flight = InFlight::new(self, &handle.progress_token, local, context, &peer, &id);
        let response = handle.await_response().await;
        in_flight.answered = true;
        // The call's context goes with its answer: it may hold an agent's event stream open.
        drop(in_flight);
        match response.map_err(|error| self.call_error(generation, &peer, Some(&id), error))? {
            ServerResult::CallToolResult(result) => {
                self.tool_outcome(result_text(&result), result.is_error == Some(true))
            }
            // A result with no `content` decodes as the empty result (the field is required
            // by the schema, but some servers leave it out when there is nothing to say).
            ServerResult::EmptyResult(_) => Ok(String::new()),
            _ => Err(ToolError::new(format!(
                "the MCP server '{}' answered the call with something other than a tool result",
                self.name()
            ))),
        }
    }

    /// A tool result's text (cut to the result size limit), or its error when `is_error`.
    fn tool_outcome(&self, text: String, is_error: bool) -> Result<String, ToolError> {
        let text = truncated(text, self.config.max_result_size);
        if is_error {
            #[cfg(feature = "otel")]
            crate::otel::mcp::failed(
                &tracing::Span::current(),
                "tool_error",
                None,
                "the tool reported an error",
            );
            if text.is_empty() {
                return Err(ToolError::new(
                    "the tool reported an error without a message",
                ));
            }
            return Err(ToolError::new(text));
        }
        Ok(text)
    }

    /// The tool error for a failed request (`id`, once sent). A broken connection is reported
    /// to the connection task, which reconnects; an answer lost on a connection that lives on
    /// (an HTTP response too large to read) is not.
    fn call_error(
        &self,
        generation: u64,
        peer: &Peer<RoleClient>,
        id: Option<&RequestId>,
        error: ServiceError,
    ) -> ToolError {
        let lost_answer = id.and_then(|id| self.http_reports.lost_answer(id));
        if let (ServiceError::TransportClosed, Some(lost)) = (&error, lost_answer) {
            if !peer.is_transport_closed() {
                return self.lost_answer(lost);
            }
        }
        match error {
            ServiceError::McpError(error) => self.rejected(&error),
            error @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                self.connection_lost(generation, &self.foreign(with_causes(&error)))
            }
            error => ToolError::new(format!(
                "the call to the MCP server '{}' failed: {}",
                self.name(),
                self.foreign(with_causes(&error))
            )),
        }
    }

    /// The tool error for an answer lost on a connection that lives on.
    fn lost_answer(&self, lost: LostAnswer) -> ToolError {
        let server = self.name();
        ToolError::new(match lost {
            LostAnswer::TooLarge => format!(
                "the answer of the MCP server '{server}' was over the limit of \
                 {MAX_MESSAGE_SIZE} bytes"
            ),
            LostAnswer::Other(reason) => format!(
                "the answer of the MCP server '{server}' was lost: {}",
                self.foreign(reason)
            ),
        })
    }

    /// The tool error for the server's error answer.
    fn rejected(&self, error: &ErrorData) -> ToolError {
        #[cfg(feature = "otel")]
        crate::otel::mcp::failed(
            &tracing::Span::current(),
            &error.code.0.to_string(),
            Some(error.code.0),
            &self.foreign(&error.message),
        );
        let server = self.name();
        match oversized(error) {
            Some((size, limit)) => ToolError::new(format!(
                "the answer of the MCP server '{server}' was {size} bytes, over the limit \
                 of {limit} bytes"
            )),
            None => ToolError::new(format!(
                "the MCP server '{server}' rejected the call: {}",
                self.foreign(&error.message)
            )),
        }
    }

    /// The tool error for a call that found the connection broken (`cause`, already without
    /// secrets); the connection task is told, and reconnects.
    fn connection_lost(&self, generation: u64, cause: &str) -> ToolError {
        let reason = format!("the connection was lost ({cause})");
        let _ = self.lost.send((generation, reason.clone()));
        ToolError::new(format!(
            "the MCP server '{}' is not connected: {reason}",
            self.name()
        ))
    }

    /// Forwards a progress notification of a call in flight to the subscribers and to the
    /// call's own [`CallContext`], in the order the server sent them (see
    /// [`InOrder`](super::progress::InOrder)). One whose progress is not above the last
    /// forwarded for its call is dropped, so progress never goes backwards whatever the server
    /// sends.
    pub(super) fn on_progress(&self, params: ProgressNotificationParam) {
        let mut calls = lock(&self.calls);
        if let Some(call) = calls.get_mut(&token_key(&params.progress_token)) {
            self.forward(call, params);
            return;
        }
        // Its call may not be entered yet (see `early_progress`).
        let mut early = lock(&self.early_progress);
        if early.len() == MAX_EARLY_PROGRESS {
            early.pop_front();
        }
        early.push_back(params);
    }

    /// Enters a call in flight under `token`, and hands it the progress that came before it
    /// was entered.
    fn enter_call(&self, token: &ProgressToken, mut call: CallInFlight) {
        let mut calls = lock(&self.calls);
        let early: VecDeque<ProgressNotificationParam> = {
            let mut early = lock(&self.early_progress);
            let (mine, others) = early
                .drain(..)
                .partition(|params| params.progress_token == *token);
            *early = others;
            mine
        };
        for params in early {
            self.forward(&mut call, params);
        }
        calls.insert(token_key(token), call);
    }

    /// Forwards one progress notification of `call` (see [`Shared::on_progress`]).
    fn forward(&self, call: &mut CallInFlight, params: ProgressNotificationParam) {
        if params.progress <= call.last_progress {
            tracing::debug!(
                server = %self.name(),
                tool = %call.tool,
                progress = params.progress,
                "mcp progress that does not grow dropped"
            );
            return;
        }
        call.last_progress = params.progress;
        if let Some(context) = &call.context {
            let fraction = params
                .total
                .filter(|total| *total > 0.0)
                .map_or(0.0, |total| params.progress / total);
            context.report_progress(fraction, params.message.as_deref());
        }
        let progress = McpProgress {
            server: self.name(),
            tool: call.tool.clone(),
            progress: params.progress,
            total: params.total,
            message: params.message,
        };
        tracing::info!(
            server = %progress.server,
            tool = %progress.tool,
            progress = progress.progress,
            total = ?progress.total,
            message = progress.message.as_deref().unwrap_or(""),
            "mcp tool progress"
        );
        // Nobody listening is fine. Sent under the lock, so subscribers see the order above.
        let _ = self.progress.send(progress);
    }
}

/// The most progress notifications kept for calls not yet entered.
const MAX_EARLY_PROGRESS: usize = 256;

/// What the client knows of a call in flight.
struct CallInFlight {
    /// The local tool name.
    tool: String,
    /// The highest progress forwarded so far.
    last_progress: f64,
    /// The call's context, when the caller gave one: progress reaches it too.
    context: Option<CallContext>,
}

/// What a call of a server's tool asks: the tool's name in the registry (its progress reports
/// carry it) and on the server, its arguments and the caller's context.
struct ToolCall<'a> {
    local: &'a str,
    remote: &'a str,
    args: JsonObject,
    context: Option<CallContext>,
}

/// The progress-token entry of a call in flight, removed when the call ends, with the call's
/// context: nothing keeps it once the call has its answer (an agent's event stream ends when
/// its last sender goes). A call dropped before its answer (a timeout, or the caller gave up)
/// is cancelled on the server.
struct InFlight<'a> {
    shared: &'a Shared,
    token: String,
    peer: Peer<RoleClient>,
    id: RequestId,
    answered: bool,
}

impl<'a> InFlight<'a> {
    fn new(
        shared: &'a Shared,
        token: &ProgressToken,
        local: &str,
        context: Option<CallContext>,
        peer: &Peer<RoleClient>,
        id: &RequestId,
    ) -> Self {
        let call = CallInFlight {
            tool: local.to_owned(),
            last_progress: f64::NEG_INFINITY,
            context,
        };
        shared.enter_call(token, call);
        let token = token_key(token);
        Self {
            shared,
            token,
            peer: peer.clone(),
            id: id.clone(),
            answered: false,
        }
    }
}

impl InFlight<'_> {
    /// Takes the call out of the calls in flight, not cancelled (it was never run), and gives
    /// back its context.
    fn withdraw(mut self) -> Option<CallContext> {
        self.answered = true;
        lock(&self.shared.calls)
            .remove(&self.token)
            .and_then(|call| call.context)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        lock(&self.shared.calls).remove(&self.token);
        if self.answered {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        let params = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("the call was abandoned".to_owned()),
        );
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(params).await;
        });
    }
}

/// The size and limit of an answer that [`LimitedLines`] replaced with an error.
fn oversized(error: &ErrorData) -> Option<(u64, u64)> {
    let data = error.data.as_ref()?.get(OVERSIZED)?;
    Some((data.get("size")?.as_u64()?, data.get("limit")?.as_u64()?))
}

/// A progress token as a map key.
fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::String(token) => format!("s:{token}"),
        NumberOrString::Number(number) => format!("n:{number}"),
    }
}

/// Follows the tool list, notices a lost connection and reconnects, until the client stops.
pub(super) async fn supervise(
    shared: Arc<Shared>,
    mut connection: Connection,
    mut lost: LostReceiver,
) {
    loop {
        let Some(reason) = serve(&shared, &mut connection, &mut lost).await else {
            shutdown(connection).await;
            closed(&shared);
            return;
        };
        let reason = shutdown_with_reason(&shared, connection, reason).await;
        shared.set_disconnected(&reason);
        let Some(next) = reconnect(&shared, reason).await else {
            closed(&shared);
            return;
        };
        connection = next;
        tracing::info!(server = %shared.name(), "the MCP server is connected again");
    }
}

fn closed(shared: &Shared) {
    lock(&shared.peer).take();
    shared.status.send_replace(McpStatus::Closed);
}

/// Serves one connection: re-lists the tools when told to, and pings the server when a call
/// timed out (a server that does not answer the ping in time hangs: the connection ends, and
/// the task reconnects). Returns why the connection ended, or `None` when the client stopped. A re-list is bounded in pages (see
/// [`list_tools`]) and in time (the connect timeout); one that fails leaves the previous list
/// in place, and `close` or the end of the connection stops it.
async fn serve(
    shared: &Arc<Shared>,
    connection: &mut Connection,
    lost: &mut LostReceiver,
) -> Option<String> {
    loop {
        tokio::select! {
            () = shared.stop.cancelled() => return None,
            quit = service_done(&mut connection.done) => return Some(quit_reason(&quit)),
            report = lost.recv() => match report {
                Some((generation, reason)) if generation == connection.generation => {
                    return Some(reason);
                }
                // A report about an earlier connection.
                Some(_) => {}
                None => return None,
            },
            () = shared.probe.notified() => {
                let limit = shared.config.call_timeout.clamp(PING_TIMEOUT.0, PING_TIMEOUT.1);
                let ping = connection
                    .peer
                    .send_request(ClientRequest::PingRequest(PingRequest::default()));
                let answered = tokio::select! {
                    () = shared.stop.cancelled() => return None,
                    quit = service_done(&mut connection.done) => return Some(quit_reason(&quit)),
                    answered = tokio::time::timeout(limit, ping) => answered,
                };
                match answered {
                    // Alive (an error answer is an answer): the call was only slow.
                    Ok(Ok(_) | Err(ServiceError::McpError(_))) => {}
                    Ok(Err(error)) => {
                        let reason = shared.foreign(with_causes(&error));
                        return Some(format!("the connection was lost ({reason})"));
                    }
                    Err(_) => {
                        return Some(format!(
                            "the server did not answer a ping within {limit:?} after a call \
                             timed out (it hangs)"
                        ));
                    }
                }
            }
            () = shared.refresh.notified() => {
                let limit = shared.config.connect_timeout;
                let listing = list_tools(&connection.peer, shared.config.max_tools);
                let listed = tokio::select! {
                    () = shared.stop.cancelled() => return None,
                    quit = service_done(&mut connection.done) => return Some(quit_reason(&quit)),
                    listed = tokio::time::timeout(limit, listing) => listed,
                };
                match listed {
                    Ok(Ok(listed)) => shared.publish_tools(listed),
                    Ok(Err(ListError::Service(
                        error @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)),
                    ))) => {
                        let reason = shared.foreign(with_causes(&error));
                        return Some(format!("the connection was lost ({reason})"));
                    }
                    Ok(Err(error)) => tracing::warn!(
                        server = %shared.name(),
                        "re-listing the tools after list_changed failed, the previous list \
                         stays: {}",
                        shared.foreign(with_causes(&error))
                    ),
                    Err(_) => tracing::warn!(
                        server = %shared.name(),
                        "re-listing the tools after list_changed took longer than {limit:?}, \
                         the previous list stays"
                    ),
                }
            }
        }
    }
}

/// Why the `rmcp` service ended, as the tools report it.
fn quit_reason(quit: &Result<QuitReason, tokio::task::JoinError>) -> String {
    match quit {
        Ok(QuitReason::Cancelled) => "the connection was cancelled".to_owned(),
        _ => "the server closed the connection".to_owned(),
    }
}

/// Ends a connection and says why it ended: a child process's exit status and last stderr
/// line replace the generic reason when there are any.
async fn shutdown_with_reason(
    shared: &Shared,
    mut connection: Connection,
    reason: String,
) -> String {
    connection.cancel.cancel();
    let _ = tokio::time::timeout(EXIT_GRACE, service_done(&mut connection.done)).await;
    match connection.child.take() {
        Some(mut child) => {
            let reason = shared.describe_exit(&mut child, &reason).await;
            let _ = child.kill().await;
            reason
        }
        None => reason,
    }
}

/// Ends a connection: the `rmcp` service closes the transport (a child's stdin closes, which
/// asks it to exit), then a child that is still running after the grace period is killed.
async fn shutdown(mut connection: Connection) {
    connection.cancel.cancel();
    let _ = tokio::time::timeout(EXIT_GRACE, service_done(&mut connection.done)).await;
    if let Some(mut child) = connection.child.take() {
        if tokio::time::timeout(EXIT_GRACE, child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

/// Reconnects with backoff and jitter; `None` when the client stopped first. When the policy's
/// attempts run out, the client stays disconnected (saying it gave up) until it is closed.
async fn reconnect(shared: &Arc<Shared>, mut reason: String) -> Option<Connection> {
    let policy = shared.config.reconnect;
    let mut attempt = 0u32;
    loop {
        if policy.max_attempts.is_some_and(|max| attempt >= max) {
            shared.set_disconnected(&format!(
                "{reason} (gave up reconnecting after {attempt} attempts)"
            ));
            shared.stop.cancelled().await;
            return None;
        }
        let delay = jitter(policy.delay(attempt));
        tokio::select! {
            () = shared.stop.cancelled() => return None,
            () = tokio::time::sleep(delay) => {}
        }
        let opened = tokio::select! {
            () = shared.stop.cancelled() => return None,
            opened = shared.open() => opened,
        };
        match opened {
            Ok(connection) => return Some(connection),
            Err(error) => {
                attempt += 1;
                reason = error.to_string();
                shared.set_disconnected(&format!("{reason} (reconnect attempt {attempt} failed)"));
            }
        }
    }
}

/// `delay` plus or minus up to 25 %, from the standard library's randomly seeded hasher (no
/// dependency needed for this little randomness).
fn jitter(delay: Duration) -> Duration {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    // At most 1000, which f64 holds exactly.
    #[allow(clippy::cast_precision_loss)]
    let unit = (hasher.finish() % 1001) as f64 / 1000.0; // 0.0 ..= 1.0
    delay.mul_f64(0.75 + unit * 0.5)
}

/// Waits for the service to end; at once when it has ended before (and was taken).
async fn service_done(
    done: &mut Option<ServiceDone>,
) -> Result<QuitReason, tokio::task::JoinError> {
    let Some(future) = done.as_mut() else {
        return Ok(QuitReason::Closed);
    };
    let quit = future.await;
    *done = None;
    quit
}

/// Runs the `rmcp` service until it ends or `cancel` fires.
async fn wait_service(
    running: RunningService<RoleClient, ClientSide>,
    cancel: CancellationToken,
) -> Result<QuitReason, tokio::task::JoinError> {
    let stop = running.cancellation_token();
    let mut waiting = Box::pin(running.waiting());
    tokio::select! {
        quit = &mut waiting => quit,
        () = cancel.cancelled() => {
            stop.cancel();
            waiting.await
        }
    }
}

/// Forwards a child's stderr to `tracing`, line by line, keeping the last line that says
/// something (a line of only box-drawing characters or dashes, which ends many tracebacks,
/// does not).
async fn forward_stderr(server: String, stderr: ChildStderr, tail: Arc<Mutex<Option<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %server, "mcp server stderr: {line}");
        if line.chars().any(char::is_alphanumeric) {
            let line = line.trim_matches(|c: char| c.is_whitespace() || matches!(c, '|' | '│'));
            *lock(&tail) = Some(truncated(line.to_owned(), MAX_FOREIGN_TEXT));
        }
    }
}

/// One MCP tool as a registry definition.
fn tool_info(server: &str, config: &McpServerConfig, tool: Tool, local: String) -> McpToolInfo {
    let annotations = tool.annotations.clone().unwrap_or_default();
    let title = tool.title.clone().or(annotations.title.clone());
    let description = tool
        .description
        .as_deref()
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
        .or_else(|| title.clone())
        .unwrap_or_else(|| format!("The `{}` tool of the MCP server '{server}'.", tool.name));
    let mut parameters = (*tool.input_schema).clone();
    parameters
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    let metadata = ToolMetadata {
        title,
        icon: tool
            .icons
            .as_ref()
            .and_then(|icons| icons.first())
            .map(|icon| icon.src.clone()),
        category: Some(server.to_owned()),
        hints: hints(config, &tool.name, &annotations),
        defer_loading: config.defer_loading
            && !config.eager_tools.iter().any(|eager| *eager == tool.name),
        ..ToolMetadata::default()
    };
    McpToolInfo {
        definition: ChatTool::new(&local, description, Value::Object(parameters)),
        local_name: local,
        remote_name: tool.name.into_owned(),
        metadata,
        output_schema: tool
            .output_schema
            .map(|schema| Value::Object((*schema).clone())),
        annotations: tool
            .annotations
            .and_then(|annotations| serde_json::to_value(annotations).ok()),
    }
}

/// A tool's hints: read-only when the application names it so
/// ([`McpServerConfig::read_only_tools`]); else its annotations when the application trusts
/// them ([`McpServerConfig::trust_annotations`]); and MCP's defaults for whatever that leaves
/// open (not read-only, destructive, not idempotent, open world). An untrusted server's
/// annotations are only its claims: a tool that says it only reads may delete.
fn hints(config: &McpServerConfig, name: &str, annotations: &ToolAnnotations) -> ToolHints {
    let claims = config.trust_annotations.then_some(annotations);
    let claim = |hint: fn(&ToolAnnotations) -> Option<bool>| claims.and_then(hint);
    let read_only = config.read_only_tools.iter().any(|tool| tool == name)
        || claim(|claims| claims.read_only_hint).unwrap_or(false);
    ToolHints {
        read_only: Some(read_only),
        // MCP: `destructiveHint` means something only when the tool is not read-only.
        destructive: Some(!read_only && claim(|claims| claims.destructive_hint).unwrap_or(true)),
        idempotent: Some(claim(|claims| claims.idempotent_hint).unwrap_or(false)),
        open_world: Some(claim(|claims| claims.open_world_hint).unwrap_or(true)),
    }
}

/// The `rmcp` client handler: answers the server's requests with the defaults (no sampling,
/// no roots, elicitation declined) and has the tool list read again when it changes (progress
/// goes its own way, see [`InOrder`]).
pub(super) struct ClientSide {
    shared: Weak<Shared>,
}

impl ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("tool-core", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.refresh.notify_one();
        }
    }
}

impl ProgressSink for Shared {
    fn on_progress(&self, params: ProgressNotificationParam) {
        Shared::on_progress(self, params);
    }
}

impl direct::Events for Shared {
    fn progress(&self, params: ProgressNotificationParam) {
        Shared::on_progress(self, params);
    }

    fn tools_changed(&self) {
        self.refresh.notify_one();
    }
}
