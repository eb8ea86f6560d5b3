//! [`McpHandler`]: the `rmcp` server handler over a [`ToolRegistry`].

use std::{
    borrow::Cow,
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
        CustomRequest, CustomResult, ElicitRequest, ElicitRequestParams, ElicitResult,
        ElicitationAction, ElicitationSchema, Icon, Implementation, InitializeRequestParams,
        InitializeResult, InputRequest, InputRequiredResult, ListToolsResult, MetaObject,
        PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion,
        RequestParamsMeta, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
        ToolAnnotations,
    },
    service::{NotificationContext, Peer, RequestContext, SubscriptionContext},
};
use serde_json::Value;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::McpOptions;
use crate::{
    call::{CallContext, Progress},
    execute::ExecuteError,
    registry::{RegistryEvent, RegistrySnapshot, ToolRegistry},
    schema::drop_rust_formats,
    tool::{ChatTool, JsonObject, ToolHints, ToolMetadata},
};

/// The protocol versions the server speaks, oldest first. `initialize` echoes one of these when
/// the client asks for it and answers with the newest otherwise; the client then decides whether
/// it can go on.
pub(crate) const SUPPORTED_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// The method of the request [`super::stdio`] puts in place of a line over the size limit, so
/// that the client gets an error answer with the request's id.
pub(crate) const TOO_LARGE_METHOD: &str = "tool-core/request-too-large";

/// What an MCP server does with a call of a tool whose metadata says
/// [`needs_approval`](crate::ToolMetadata::needs_approval). Whatever the choice, such a tool is
/// listed with `annotations.destructiveHint: true` (unless its hints say otherwise) and
/// `_meta: {"tool-core/needsApproval": true}`, so a client can confirm with its user on its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpApproval {
    /// Ask the client's user through MCP elicitation before the tool runs (an
    /// `elicitation/create` request during the call on 2025-06-18 and later, an
    /// `InputRequiredResult` the client answers by calling again on 2026-07-28). Declined or
    /// dismissed, or with a client that cannot ask (no elicitation capability, a protocol
    /// before 2025-06-18, a stateless server on a protocol before 2026-07-28), the tool does
    /// not run and the call's result is an error (`isError: true`) saying why. On 2026-07-28
    /// the answer comes back with the client's repeated call; on every version the approval
    /// is only as trustworthy as the client that relays its user's answer.
    #[default]
    Ask,
    /// Run the tool without asking: the application trusts the client to confirm with its
    /// user (MCP clients commonly do for tools with `destructiveHint`).
    Allow,
    /// Never run such a tool over MCP; a call's result is an error saying so.
    Refuse,
}

/// The `rmcp` [`ServerHandler`] behind [`McpServer`](super::McpServer): one per client
/// connection.
///
/// Use it to serve a registry over a transport `McpServer` does not wrap, with
/// [`rmcp::ServiceExt::serve`]. It lists the registry's enabled tools, runs calls through
/// [`ToolRegistry::try_execute`] and, once the client has sent `notifications/initialized`,
/// forwards every registry change as `notifications/tools/list_changed` until the connection
/// ends (dropping the handler stops the forwarding).
pub struct McpHandler {
    registry: Arc<ToolRegistry>,
    options: Arc<McpOptions>,
    /// Subscribed at `initialize` so that no change made after the handshake answer is missed;
    /// taken by the forwarding task when the client confirms with `initialized`.
    events: Mutex<Option<broadcast::Receiver<RegistryEvent>>>,
    negotiated: Mutex<Option<ProtocolVersion>>,
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
    /// Cancelled when the client closed the connection (stdio: end of input), so running calls
    /// stop at once instead of when rmcp gives up waiting for them.
    closed: CancellationToken,
    /// The [fingerprint](RegistrySnapshot::fingerprint) of the view the last `tools/list`
    /// answer showed (`None` before the first).
    listed: Mutex<Option<u64>>,
    /// How a request sees the registry; `None`: as it is.
    view: Option<SnapshotView>,
}

/// A request's view of the registry (a user's switches applied), for servers that show each
/// client its own tools.
#[cfg_attr(not(feature = "gateway"), allow(dead_code))]
pub(crate) type SnapshotView =
    Arc<dyn Fn(&RequestContext<RoleServer>) -> Arc<RegistrySnapshot> + Send + Sync>;

impl std::fmt::Debug for McpHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHandler")
            .field("registry", &self.registry)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl McpHandler {
    pub(crate) fn new(registry: Arc<ToolRegistry>, options: Arc<McpOptions>) -> Self {
        let stop = CancellationToken::new();
        Self {
            registry,
            options,
            events: Mutex::new(None),
            negotiated: Mutex::new(None),
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
            closed: CancellationToken::new(),
            listed: Mutex::new(None),
            view: None,
        }
    }

    /// Lists and calls tools through `view` instead of the registry as it is.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))]
    pub(crate) fn with_view(mut self, view: SnapshotView) -> Self {
        self.view = Some(view);
        self
    }

    /// The registry as the request sees it.
    fn snapshot_for(&self, context: &RequestContext<RoleServer>) -> Arc<RegistrySnapshot> {
        match &self.view {
            Some(view) => view(context),
            None => self.registry.snapshot(),
        }
    }

    /// Begins a listen stream: when the tools its request sees differ from those the last
    /// `tools/list` of this handler showed (a change no stream heard, on a connection that
    /// lives across requests), one `notifications/tools/list_changed` at once. `false` when
    /// the stream is gone.
    pub(crate) async fn tell_changes_since_listed(
        &self,
        subscription: &SubscriptionContext,
    ) -> bool {
        let listed = *lock(&self.listed);
        let current = self
            .snapshot_for(subscription.request_context())
            .fingerprint();
        listed.is_none_or(|listed| listed == current)
            || subscription.sink().notify_tool_list_changed().await.is_ok()
    }

    /// Cancels running calls when `closed` is cancelled.
    pub(crate) fn with_closed(mut self, closed: CancellationToken) -> Self {
        self.closed = closed;
        self
    }

    /// The tools of the registry as MCP lists them for a client on `version`; fields newer
    /// than it are left out.
    pub fn tools(&self, version: &ProtocolVersion) -> Vec<Tool> {
        self.tools_in(&self.registry.snapshot(), version)
    }

    fn tools_in(&self, snapshot: &RegistrySnapshot, version: &ProtocolVersion) -> Vec<Tool> {
        *lock(&self.listed) = Some(snapshot.fingerprint());
        snapshot
            .definitions()
            .iter()
            .map(|schema| {
                let metadata = snapshot
                    .metadata(schema.name())
                    .cloned()
                    .unwrap_or_default();
                to_mcp_tool(schema, &metadata, version)
            })
            .collect()
    }

    /// The span of a `tools/call` request: `tools/call {tool}` (kind `SERVER`) with the MCP
    /// attributes, whose parent is the trace context the client sent in `_meta`, when it sent
    /// one.
    #[cfg(feature = "otel")]
    pub(crate) fn call_span(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> tracing::Span {
        let parts = context.extensions.get::<axum::http::request::Parts>();
        let session = parts
            .and_then(|parts| parts.headers.get(super::SESSION_ID_HEADER))
            .and_then(|value| value.to_str().ok());
        call_span(
            &request.name,
            &self.version_of(context),
            parts.is_some(),
            &context.meta.0.0,
            &context.id,
            session,
        )
    }

    /// Runs a `tools/call` request: asks for approval when the tool needs it, then runs the
    /// tool until it answers or the client cancels.
    pub(crate) async fn run_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The call stops when the client cancels it or leaves.
        let cancelled = self.closed.child_token();
        let stop = CallStop {
            call: &cancelled,
            request: Some(&context.ct),
        };
        let version = self.version_of(&context);
        let snapshot = self.snapshot_for(&context);
        if needs_approval(&snapshot, &request.name) {
            let verdict = tokio::select! {
                // Boxed: asking is rare, and the call's future stays small to move.
                verdict = Box::pin(self.approval(&request, &context, &version)) => verdict,
                () = stop.stopped() => return Err(cancelled_error()),
            };
            match verdict {
                Verdict::Run => {}
                Verdict::NotRun(text) => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
                }
                Verdict::Ask(question) => return Ok(question.into()),
            }
        }
        let (call, progress) = call_context(&request, &context, cancelled.clone());
        run_call(
            &snapshot,
            &request.name,
            request.arguments.unwrap_or_default(),
            call,
            progress,
            &version,
            self.options.tool_timeout,
            stop,
        )
        .await
        .map(CallToolResponse::from)
    }

    /// The version a request speaks: its own `_meta` version (2026-07-28 and stateless
    /// requests), else the session's.
    fn version_of(&self, context: &RequestContext<RoleServer>) -> ProtocolVersion {
        context
            .protocol_version()
            .or_else(|| lock(&self.negotiated).clone())
            .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    /// Whether a call of a tool that needs approval may run, as [`McpOptions::approval`] says:
    /// on 2026-07-28 from the answer the client sent with the call (or by asking for one), on
    /// older versions by asking the client's user with an `elicitation/create` request.
    async fn approval(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        version: &ProtocolVersion,
    ) -> Verdict {
        let name = &request.name;
        match self.options.approval {
            McpApproval::Allow => return Verdict::Run,
            McpApproval::Refuse => {
                return Verdict::NotRun(format!(
                    "Error: {name} needs the user's approval, which this server does not ask \
                     for over MCP; the call was not run"
                ));
            }
            McpApproval::Ask => {}
        }
        let cannot_ask = || {
            Verdict::NotRun(format!(
                "Error: {name} needs the user's approval, and this MCP client cannot ask for \
                 it (it does not support elicitation); the call was not run"
            ))
        };
        let can_ask = version.as_str() >= ProtocolVersion::V_2025_06_18.as_str()
            && context
                .client_capabilities()
                .is_some_and(|capabilities| asks_with_forms(&capabilities));
        let question = approval_question(request);
        if version.as_str() >= ProtocolVersion::V_2026_07_28.as_str() {
            // 2026-07-28 has no server-to-client requests: the answer comes with the call
            // again, after an `InputRequiredResult` asked for it.
            if let Some(answer) = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(APPROVAL_INPUT))
            {
                return match serde_json::from_value::<ElicitResult>(answer.clone()) {
                    Ok(answer) => verdict_of(name, &answer.action),
                    Err(error) => Verdict::NotRun(format!(
                        "Error: the approval answer for {name} is not an elicitation result \
                         ({error}); the call was not run"
                    )),
                };
            }
            if !can_ask {
                return cannot_ask();
            }
            let requests = [(
                APPROVAL_INPUT.to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(question)),
            )];
            return Verdict::Ask(InputRequiredResult::from_input_requests(
                requests.into_iter().collect(),
            ));
        }
        if self.options.stateless {
            return Verdict::NotRun(format!(
                "Error: {name} needs the user's approval, and a stateless server can ask for \
                 it only on protocol 2026-07-28; the call was not run"
            ));
        }
        if !can_ask {
            return cannot_ask();
        }
        match context.peer.create_elicitation(question).await {
            Ok(answer) => verdict_of(name, &answer.action),
            Err(error) => Verdict::NotRun(format!(
                "Error: {name} needs the user's approval, and asking for it failed ({error}); \
                 the call was not run"
            )),
        }
    }
}

/// Whether a call of a tool that needs approval runs.
enum Verdict {
    Run,
    /// It does not; the text says why (the call's result, with `isError: true`).
    NotRun(String),
    /// 2026-07-28: the client is to ask its user and call again with the answer.
    Ask(InputRequiredResult),
}

/// The key of the approval in an `InputRequiredResult`'s requests and the answers to them.
const APPROVAL_INPUT: &str = "approval";

/// The longest text of a call's arguments shown in the approval question.
const MAX_SHOWN_ARGUMENTS: usize = 2_000;

/// What the user is asked before a call of a tool that needs approval: the tool and the
/// arguments, nothing to fill in (the answer is accept or decline).
fn approval_question(request: &CallToolRequestParams) -> ElicitRequestParams {
    let mut arguments = Value::Object(request.arguments.clone().unwrap_or_default()).to_string();
    if arguments.len() > MAX_SHOWN_ARGUMENTS {
        let mut end = MAX_SHOWN_ARGUMENTS;
        while !arguments.is_char_boundary(end) {
            end -= 1;
        }
        arguments.truncate(end);
        arguments.push('…');
    }
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "Run the tool `{}` with the arguments {arguments}?",
            request.name
        ),
        requested_schema: ElicitationSchema::new(std::collections::BTreeMap::new()),
    }
}

/// Whether a client with `capabilities` can show a form: it declared elicitation with `form`,
/// or with neither mode (2025-06-18, before modes existed).
fn asks_with_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

fn verdict_of(name: &str, action: &ElicitationAction) -> Verdict {
    match action {
        ElicitationAction::Accept => Verdict::Run,
        ElicitationAction::Cancel => Verdict::NotRun(format!(
            "Error: the user denied this call of {name}: the approval request was dismissed"
        )),
        // Decline, and any answer a later protocol adds: only an acceptance runs the tool.
        _ => Verdict::NotRun(format!("Error: the user denied this call of {name}")),
    }
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new(&self.options.name, &self.options.version);
        implementation.title.clone_from(&self.options.title);
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = ServerConfig::new(capabilities)
            .with_server_info(implementation)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        info.instructions.clone_from(&self.options.instructions);
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(SUPPORTED_VERSIONS)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        if !has_structured_output(&result.protocol_version) {
            // `serverInfo.title` came with 2025-06-18, like the tools' titles.
            result.server_info.title = None;
        }
        *lock(&self.negotiated) = Some(result.protocol_version.clone());
        *lock(&self.events) = Some(self.registry.subscribe());
        Ok(result)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Some(events) = lock(&self.events).take() else {
            return;
        };
        tokio::spawn(forward_changes(events, context.peer, self.stop.clone()));
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools_in(
            &self.snapshot_for(&context),
            &self.version_of(&context),
        )))
    }

    fn get_tool(&self, _name: &str) -> Option<Tool> {
        // Arguments are validated by the registry, which reports problems as a tool result the
        // model can read; rmcp's own validation would turn them into protocol errors.
        None
    }

    #[cfg(not(feature = "otel"))]
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run_tool(request, context).await
    }

    /// Runs the call in a `tools/call {tool}` span (kind `SERVER`) whose parent is the trace
    /// context the client sent in `_meta`, when it sent one.
    #[cfg(feature = "otel")]
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = self.call_span(&request, &context);
        traced(span, self.run_tool(request, context)).await
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// 2026-07-28's way to learn of changes (`subscriptions/listen`): every burst of registry
    /// changes is one `notifications/tools/list_changed` on the subscription's stream.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut events = self.registry.subscribe();
        // Requests are handled concurrently, so a change the client asked for right after
        // opening the stream may come before the subscription above: a list that changed since
        // the client's last `tools/list` is announced at once.
        if !self.tell_changes_since_listed(&subscription).await {
            return Ok(());
        }
        loop {
            let event = tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                () = self.stop.cancelled() => return Ok(()),
                event = events.recv() => event,
            };
            match event {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return Ok(()),
            }
            drain(&mut events);
            if subscription
                .sink()
                .notify_tool_list_changed()
                .await
                .is_err()
            {
                return Ok(());
            }
        }
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == TOO_LARGE_METHOD {
            let limit = request
                .params
                .as_ref()
                .and_then(|params| params.get("limit"))
                .and_then(Value::as_u64)
                .unwrap_or_default();
            return Err(ErrorData::invalid_request(
                format!("the request is larger than the server's limit of {limit} bytes"),
                None,
            ));
        }
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("unknown method {}", request.method),
            None,
        ))
    }
}

/// What stops a running call: its own token (the connection closed, or the caller went), and
/// the request's, which rmcp cancels when the client cancels the request or leaves.
pub(crate) struct CallStop<'a> {
    /// The token the tool watches, cancelled when the call stops.
    pub(crate) call: &'a CancellationToken,
    /// The request's token, when the request has one.
    pub(crate) request: Option<&'a CancellationToken>,
}

impl CallStop<'_> {
    /// Ends when the call is to stop, having cancelled the tool's token: one task watches both
    /// tokens, with no task of its own per call.
    async fn stopped(&self) {
        match self.request {
            Some(request) => tokio::select! {
                () = self.call.cancelled() => {}
                () = request.cancelled() => self.call.cancel(),
            },
            None => self.call.cancelled().await,
        }
    }
}

/// The error of a call stopped before its answer.
fn cancelled_error() -> ErrorData {
    ErrorData::internal_error("the request was cancelled", None)
}

/// Whether `name` is enabled in `snapshot` and needs its user's approval before it runs.
pub(crate) fn needs_approval(snapshot: &RegistrySnapshot, name: &str) -> bool {
    snapshot.is_enabled(name)
        && snapshot
            .metadata(name)
            .is_some_and(|metadata| metadata.needs_approval)
}

/// Runs a call of `name` that may run (approval, if it needed one, given) in `snapshot` until
/// it answers or `stop` stops it, then waits for its progress to be sent: the core of every
/// `tools/call`, whichever way the request came. On `version` 2025-06-18 and later a tool with
/// an output schema answers with `structuredContent` too.
#[allow(clippy::too_many_arguments)] // Each is one part of the call; a struct would only name them again.
pub(crate) async fn run_call(
    snapshot: &RegistrySnapshot,
    name: &str,
    arguments: JsonObject,
    call: CallContext,
    progress: Option<ProgressOut>,
    version: &ProtocolVersion,
    timeout: Option<std::time::Duration>,
    stop: CallStop<'_>,
) -> Result<CallToolResult, ErrorData> {
    let structured = has_structured_output(version)
        && snapshot
            .metadata(name)
            .is_some_and(|metadata| metadata.output_schema.is_some());
    let execution = snapshot.try_execute_call(name, arguments, call, timeout);
    let outcome = tokio::select! {
        outcome = execution => outcome,
        () = stop.stopped() => return Err(cancelled_error()),
    };
    if let Some(progress) = progress {
        // The progress the tool reported goes out before its answer, which ends the
        // request's stream.
        tokio::select! {
            () = progress.flushed() => {}
            () = stop.stopped() => return Err(cancelled_error()),
        }
    }
    call_result(outcome, structured)
}

/// The span of a `tools/call` of `tool` (kind `SERVER`) on `version`, over HTTP (`tcp`) or
/// stdio (`pipe`), whose parent is the trace context in the request's `_meta`, when it has one.
#[cfg(feature = "otel")]
pub(crate) fn call_span(
    tool: &str,
    version: &ProtocolVersion,
    http: bool,
    meta: &serde_json::Map<String, Value>,
    id: &rmcp::model::RequestId,
    session: Option<&str>,
) -> tracing::Span {
    let span = crate::otel::mcp::tools_call_span(
        crate::otel::mcp::Side::Server,
        tool,
        Some(version.as_str()),
        if http { "tcp" } else { "pipe" },
    );
    crate::otel::mcp::continue_from(&span, meta);
    span.record("jsonrpc.request.id", id.to_string());
    if let Some(session) = session {
        span.record("mcp.session.id", session);
    }
    span
}

/// Whether `version` has `title`s, `outputSchema` and `structuredContent` (2025-06-18 and
/// later).
pub(crate) fn has_structured_output(version: &ProtocolVersion) -> bool {
    version.as_str() >= ProtocolVersion::V_2025_06_18.as_str()
}

/// Takes every message already queued in `events` (a lagging receiver's gap included), so
/// that a burst of changes makes one notification.
pub(crate) fn drain<T: Clone>(events: &mut broadcast::Receiver<T>) {
    while !matches!(
        events.try_recv(),
        Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed)
    ) {}
}

/// The tool's view of an MCP call: the request id as the call id, the client's cancellation,
/// and, when the client asked for progress (a `progressToken` in `_meta`), a progress channel
/// whose reports become `notifications/progress` (`progress` the fraction done, `total` 1), in
/// the order the tool made them, with the [`ProgressOut`] that tells when they are sent.
fn call_context(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    cancellation: CancellationToken,
) -> (CallContext, Option<ProgressOut>) {
    let mut call = CallContext::new(context.id.to_string(), request.name.to_string())
        .with_cancellation(cancellation);
    let token = request
        .progress_token()
        .or_else(|| context.meta.get_progress_token());
    let Some(token) = token else {
        return (call, None);
    };
    let peer = context.peer.clone();
    let runtime = tokio::runtime::Handle::current();
    // Most calls report no progress: the task sending the notifications, in order, starts with
    // the first report. It ends when the call's context (and so the sender) is dropped.
    let out = ProgressOut::default();
    let reports = out.0.clone();
    call = call.with_progress(move |report| {
        let sender = reports.get_or_init(|| {
            let (sender, pending) = tokio::sync::mpsc::unbounded_channel();
            runtime.spawn(send_progress(peer.clone(), token.clone(), pending));
            sender
        });
        let _ = sender.send(ProgressItem::Report(report));
    });
    (call, Some(out))
}

/// The way to a call's progress task, once the call reported progress.
#[derive(Default)]
pub(crate) struct ProgressOut(
    Arc<std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<ProgressItem>>>,
);

impl ProgressOut {
    /// Waits until the progress reported so far is sent (at once if none was).
    async fn flushed(&self) {
        let Some(sender) = self.0.get() else { return };
        let (done, sent) = tokio::sync::oneshot::channel();
        if sender.send(ProgressItem::Flush(done)).is_ok() {
            let _ = sent.await;
        }
    }
}

/// What a call's progress task is given.
enum ProgressItem {
    /// A report to send.
    Report(Progress),
    /// Told once every report before it is sent.
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Sends the progress reports of a call as `notifications/progress` with `token`.
async fn send_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut pending: tokio::sync::mpsc::UnboundedReceiver<ProgressItem>,
) {
    let mut open = true;
    while let Some(item) = pending.recv().await {
        match item {
            ProgressItem::Report(report) if open => {
                let mut notification =
                    ProgressNotificationParam::new(token.clone(), report.fraction).with_total(1.0);
                if let Some(message) = report.message {
                    notification = notification.with_message(message);
                }
                // A closed stream takes no more; flushes are still answered.
                open = peer.notify_progress(notification).await.is_ok();
            }
            ProgressItem::Report(_) => {}
            ProgressItem::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Maps a registry outcome to MCP: unknown and disabled tools are protocol errors (the MCP spec
/// lists unknown tools among them); everything the tool or its arguments caused is a result with
/// `isError: true`, so the model reads the message. With `structured` (the tool has an output
/// schema and the client's version knows it) a result that is a JSON object is also sent as
/// `structuredContent`, beside the same JSON as text for older clients.
pub(crate) fn call_result(
    outcome: Result<String, ExecuteError>,
    structured: bool,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(text) => {
            let object = structured
                .then(|| serde_json::from_str::<Value>(&text).ok())
                .flatten()
                .filter(Value::is_object);
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = object;
            Ok(result)
        }
        Err(error @ (ExecuteError::NotFound { .. } | ExecuteError::Disabled { .. })) => {
            Err(ErrorData::invalid_params(error.to_string(), None))
        }
        Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(
            error.to_model_string(),
        )])),
    }
}

/// Sends `notifications/tools/list_changed` for every burst of registry changes until the
/// connection closes or the handler is dropped.
async fn forward_changes(
    mut events: broadcast::Receiver<RegistryEvent>,
    peer: Peer<RoleServer>,
    stop: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            // A lagging receiver missed events; the list changed all the same.
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
        // Several changes in a row (a batch registration) make one notification.
        drain(&mut events);
        if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
            return;
        }
    }
}

/// The `_meta` key that marks a tool needing the user's approval (from 2025-06-18, which
/// brought `_meta` on tools).
const NEEDS_APPROVAL_META: &str = "tool-core/needsApproval";

/// One registry tool in MCP's shape. Fields newer than the negotiated version are left out.
pub(crate) fn to_mcp_tool(
    schema: &ChatTool,
    metadata: &ToolMetadata,
    version: &ProtocolVersion,
) -> Tool {
    let mut tool = Tool::new(
        schema.name().to_owned(),
        schema.description().to_owned(),
        input_schema(schema.parameters()),
    );
    let has_annotations = version.as_str() >= ProtocolVersion::V_2025_03_26.as_str();
    let has_title = has_structured_output(version);
    let has_icons = version.as_str() >= ProtocolVersion::V_2025_11_25.as_str();
    if has_title {
        tool.title.clone_from(&metadata.title);
        if let Some(Value::Object(schema)) = &metadata.output_schema {
            let mut schema = Value::Object(schema.clone());
            drop_rust_formats(&mut schema);
            if let Value::Object(schema) = schema {
                tool.output_schema = Some(Arc::new(schema));
            }
        }
    }
    let mut hints = metadata.hints;
    if metadata.needs_approval {
        // Clients commonly confirm destructive tools with their user; a tool that says it is
        // not destructive keeps its claim.
        hints.destructive = hints.destructive.or(Some(true));
        if has_title {
            let mut meta = MetaObject::new();
            meta.insert(NEEDS_APPROVAL_META.to_owned(), Value::Bool(true));
            tool.meta = Some(meta);
        }
    }
    if has_annotations && (hints != ToolHints::default() || metadata.title.is_some()) {
        // `annotations.title` is how 2025-03-26 clients learn the title; later clients read
        // `title` first and fall back to it.
        tool.annotations = Some(ToolAnnotations::from_raw(
            metadata.title.clone(),
            hints.read_only,
            hints.destructive,
            hints.idempotent,
            hints.open_world,
        ));
    }
    if has_icons {
        if let Some(src) = &metadata.icon {
            let mut icon = Icon::new(src.clone());
            icon.mime_type = icon_mime_type(src).map(str::to_owned);
            tool.icons = Some(vec![icon]);
        }
    }
    tool
}

/// The tool's parameters as an MCP `inputSchema`. Registration guarantees an object root; a tool
/// that takes no arguments gets exactly `{"type":"object","additionalProperties":false}`.
pub(crate) fn input_schema(parameters: &Value) -> JsonObject {
    let Some(schema) = parameters.as_object() else {
        return no_arguments();
    };
    if takes_no_arguments(schema) {
        return no_arguments();
    }
    let mut schema = Value::Object(schema.clone());
    drop_rust_formats(&mut schema);
    let Value::Object(mut schema) = schema else {
        return no_arguments();
    };
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    schema
}

fn no_arguments() -> JsonObject {
    let mut schema = JsonObject::new();
    schema.insert("type".to_owned(), Value::String("object".to_owned()));
    schema.insert("additionalProperties".to_owned(), Value::Bool(false));
    schema
}

/// A schema with no properties and nothing else that could admit an argument (no
/// `additionalProperties` other than `false`, no `patternProperties`, no composition).
fn takes_no_arguments(schema: &JsonObject) -> bool {
    schema.iter().all(|(key, value)| match key.as_str() {
        "type" | "$schema" | "title" | "description" | "$defs" | "definitions" => true,
        "properties" => value.as_object().is_some_and(serde_json::Map::is_empty),
        "required" => value.as_array().is_some_and(Vec::is_empty),
        "additionalProperties" => value == &Value::Bool(false),
        _ => false,
    })
}

fn icon_mime_type(src: &str) -> Option<&'static str> {
    if let Some(data) = src.strip_prefix("data:") {
        return [
            "image/png",
            "image/svg+xml",
            "image/jpeg",
            "image/webp",
            "image/gif",
        ]
        .into_iter()
        .find(|mime| data.starts_with(mime));
    }
    let path = src
        .split(['?', '#'])
        .next()
        .unwrap_or(src)
        .to_ascii_lowercase();
    let extension = path.rsplit_once('.').map(|(_, extension)| extension)?;
    match extension {
        "png" => Some("image/png"),
        "svg" => Some("image/svg+xml"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "webp" => Some("image/webp"),
        "gif" => Some("image/gif"),
        _ => None,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The guarded values are replaced whole, never left half-written.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `call`, the answer to a `tools/call` request, in `span`, and records on the span how it
/// failed, if it did.
#[cfg(feature = "otel")]
pub(crate) async fn traced(
    span: tracing::Span,
    call: impl Future<Output = Result<CallToolResponse, ErrorData>>,
) -> Result<CallToolResponse, ErrorData> {
    use tracing::Instrument as _;

    let result = call.instrument(span.clone()).await;
    match &result {
        Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
            crate::otel::mcp::failed(&span, "tool_error", None, "the tool reported an error");
        }
        Err(error) => crate::otel::mcp::failed(
            &span,
            &error.code.0.to_string(),
            Some(error.code.0),
            &error.message,
        ),
        Ok(_) => {}
    }
    result
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tool_without_parameters_gets_a_closed_object_schema() {
        let closed = json!({"type": "object", "additionalProperties": false});
        for parameters in [
            json!({"type": "object"}),
            json!({"type": "object", "properties": {}}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "NoArgs",
                   "type": "object", "properties": {}, "required": [], "additionalProperties": false}),
        ] {
            assert_eq!(
                Value::Object(input_schema(&parameters)),
                closed,
                "{parameters}"
            );
        }
    }

    #[test]
    fn schemas_that_admit_arguments_are_kept() {
        for parameters in [
            json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            json!({"type": "object", "additionalProperties": true}),
            json!({"type": "object", "patternProperties": {"^x": {}}}),
        ] {
            assert_eq!(Value::Object(input_schema(&parameters)), parameters);
        }
    }

    #[test]
    fn icon_mime_types_come_from_the_extension_or_data_url() {
        assert_eq!(
            icon_mime_type("https://x.invalid/a.PNG?v=1"),
            Some("image/png")
        );
        assert_eq!(
            icon_mime_type("data:image/svg+xml;base64,AAAA"),
            Some("image/svg+xml")
        );
        assert_eq!(icon_mime_type("https://x.invalid/icon"), None);
    }

    #[test]
    fn fields_newer_than_the_negotiated_version_are_left_out() {
        let schema = ChatTool::new("t", "A tool.", json!({"type": "object"}));
        let metadata = ToolMetadata::new()
            .title("Tool")
            .icon("https://x.invalid/t.svg")
            .read_only(true);
        let old = to_mcp_tool(&schema, &metadata, &ProtocolVersion::V_2025_03_26);
        assert_eq!(old.title, None);
        assert_eq!(old.icons, None);
        assert_eq!(
            old.annotations.as_ref().and_then(|a| a.title.as_deref()),
            Some("Tool")
        );
        let new = to_mcp_tool(&schema, &metadata, &ProtocolVersion::V_2025_11_25);
        assert_eq!(new.title.as_deref(), Some("Tool"));
        assert_eq!(new.icons.map(|icons| icons.len()), Some(1));
        let oldest = to_mcp_tool(&schema, &metadata, &ProtocolVersion::V_2024_11_05);
        assert_eq!(oldest.annotations, None);
        assert_eq!(oldest.title, None);
    }

    #[test]
    fn an_output_schema_is_listed_from_2025_06_18_without_rust_formats() {
        let schema = ChatTool::new("t", "A tool.", json!({"type": "object"}));
        let metadata = ToolMetadata::new().output_schema(Some(json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "format": "int64"}}
        })));
        let listed = to_mcp_tool(&schema, &metadata, &ProtocolVersion::V_2025_06_18);
        assert_eq!(
            listed
                .output_schema
                .map(|schema| Value::Object((*schema).clone())),
            Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
        );
        let older = to_mcp_tool(&schema, &metadata, &ProtocolVersion::V_2025_03_26);
        assert_eq!(older.output_schema, None);
    }

    #[test]
    fn the_approval_question_shows_long_arguments_cut_at_a_character() {
        let mut request = CallToolRequestParams::new("t");
        let mut arguments = JsonObject::new();
        arguments.insert("text".to_owned(), Value::String("é".repeat(3_000)));
        request.arguments = Some(arguments);
        let ElicitRequestParams::FormElicitationParams { message, .. } =
            approval_question(&request)
        else {
            panic!("not a form");
        };
        assert!(message.starts_with("Run the tool `t` with the arguments {\"text\":\"éé"));
        assert!(message.ends_with("é…?"), "{message}");
        assert!(message.len() < MAX_SHOWN_ARGUMENTS + 64);
    }

    #[test]
    fn structured_content_is_the_json_object_result() {
        let result = call_result(Ok(r#"{"n":1}"#.to_owned()), true).unwrap();
        assert_eq!(result.structured_content, Some(json!({"n": 1})));
        let plain = call_result(Ok(r#"{"n":1}"#.to_owned()), false).unwrap();
        assert_eq!(plain.structured_content, None);
        let not_object = call_result(Ok("3".to_owned()), true).unwrap();
        assert_eq!(not_object.structured_content, None);
    }
}
