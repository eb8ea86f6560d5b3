//! [`GatewayHandler`]: the MCP server handler of one client connection (an HTTP session, one
//! stateless request, or a stdio client), showing the connection's user their own tools.

use std::{
    borrow::Cow,
    sync::{Arc, Mutex, PoisonError},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
        CustomResult, ErrorCode, InitializeRequestParams, InitializeResult, ListToolsResult,
        PaginatedRequestParams, ProtocolVersion, ServerConfig, SubscriptionFilter,
    },
    service::{MaybeSendFuture, NotificationContext, RequestContext, SubscriptionContext},
    transport::streamable_http_server::SessionRestoreMarker,
};
use serde_json::{Value, json};
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument as _;

use super::{
    Shared,
    switches::{Attached, SessionSwitches, UserSwitches},
    users::GatewayUser,
};
use crate::{
    mcp::{McpHandler, drain},
    registry::{RegistrySnapshot, ToolToggles},
};

/// The name of the gateway's own switch tool.
pub(crate) const SET_TOOL_ENABLED: &str = "set_tool_enabled";

/// The name of the gateway's tool search, listed to users with tool search on.
pub(crate) const SEARCH_TOOLS: &str = "search_tools";

/// The most matches one `search_tools` call answers.
const MAX_SEARCH_LIMIT: u64 = 50;

/// JSON-RPC error code of a call over the user's rate or concurrency limit.
const LIMITED: i32 = -32003;

pub(crate) struct GatewayHandler {
    inner: McpHandler,
    shared: Arc<Shared>,
    /// The user of a connection without HTTP (stdio), and of a session once it began.
    user: Arc<Mutex<Option<String>>>,
    /// This connection's own switches, on top of its user's.
    session: ToolToggles,
    /// One message per change of [`session`](Self::session).
    session_changed: broadcast::Sender<()>,
    /// The HTTP session's switches in the store, once the session's id is known (`None`: the
    /// store keeps no sessions).
    stored: tokio::sync::OnceCell<Option<Arc<SessionSwitches>>>,
    /// The switches of the user of this connection's last request, held so that they stay
    /// loaded while the connection lasts.
    held: Mutex<Option<Arc<UserSwitches>>>,
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
}

impl GatewayHandler {
    pub(crate) fn new(
        shared: Arc<Shared>,
        user: Option<String>,
        closed: Option<CancellationToken>,
    ) -> Self {
        let user = Arc::new(Mutex::new(user));
        let session = ToolToggles::new();
        let view = {
            let shared = shared.clone();
            let user = user.clone();
            let session = session.clone();
            Arc::new(move |context: &RequestContext<RoleServer>| {
                // `ensure_user` ran before every request that reaches here.
                view_of(&shared, user_of(context, &user).as_deref(), &session)
            }) as crate::mcp::SnapshotView
        };
        let mut inner = shared.server.handler().with_view(view);
        if let Some(closed) = closed {
            inner = inner.with_closed(closed);
        }
        let stop = CancellationToken::new();
        Self {
            inner,
            shared,
            user,
            session,
            session_changed: broadcast::channel(16).0,
            stored: tokio::sync::OnceCell::new(),
            held: Mutex::new(None),
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
        }
    }

    /// The request's user, with their switches loaded.
    async fn ensure_user(&self, context: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
        let name = user_of(context, &self.user).ok_or_else(|| {
            ErrorData::new(
                ErrorCode(-32001),
                "unauthorized: no user for this request",
                None,
            )
        })?;
        if !self.shared.stateless {
            // A session belongs to the user who began it.
            let mut bound = lock(&self.user);
            match bound.as_ref() {
                None => *bound = Some(name.clone()),
                Some(owner) if *owner != name => {
                    return Err(ErrorData::new(
                        ErrorCode(-32001),
                        "forbidden: this session belongs to another user",
                        None,
                    ));
                }
                Some(_) => {}
            }
        }
        let switches = load_user(&self.shared, &name).await?;
        *lock(&self.held) = Some(switches);
        Ok(name)
    }

    /// Binds this connection's HTTP session `id` to `user` in the store and loads its
    /// switches there (once; later calls return at once). Refused when another user owns it.
    async fn attach_session(&self, user: &str, id: &str) -> Result<(), ErrorData> {
        self.stored
            .get_or_try_init(|| async {
                let attached = self
                    .shared
                    .switches
                    .attach_session(user, id, &self.session, &self.session_changed)
                    .await
                    .map_err(|error| store_error("restore this session", &error))?;
                match attached {
                    Attached::Session(session) => Ok(Some(session)),
                    Attached::Foreign => Err(ErrorData::new(
                        ErrorCode(-32001),
                        "forbidden: this session belongs to another user",
                        None,
                    )),
                }
            })
            .await
            .map(drop)
    }

    /// [`attach_session`](Self::attach_session) for the HTTP session a message came in, if any.
    async fn attach_session_of(
        &self,
        user: &str,
        extensions: &rmcp::model::Extensions,
    ) -> Result<(), ErrorData> {
        let id = extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get(crate::mcp::SESSION_ID_HEADER))
            .and_then(|id| id.to_str().ok());
        match id {
            Some(id) if !self.shared.stateless => self.attach_session(user, id).await,
            _ => Ok(()),
        }
    }

    fn snapshot(&self, user: &str) -> Arc<RegistrySnapshot> {
        view_of(&self.shared, Some(user), &self.session)
    }

    /// `set_tool_enabled`: switches a tool for the calling user (or only this session, when the
    /// request has one: `in_session`).
    async fn set_tool_enabled(
        &self,
        user: &str,
        request: &CallToolRequestParams,
        in_session: bool,
    ) -> CallToolResult {
        let arguments = request.arguments.clone().unwrap_or_default();
        let name = arguments.get("name").and_then(Value::as_str);
        let enabled = arguments.get("enabled").and_then(Value::as_bool);
        let session_only = arguments.get("scope").and_then(Value::as_str) == Some("session");
        let (Some(name), Some(enabled)) = (name, enabled) else {
            return error_result(
                "Error: set_tool_enabled needs `name` (a tool's name) and `enabled` (true or false)",
            );
        };
        if name == SET_TOOL_ENABLED {
            return error_result("Error: set_tool_enabled cannot switch itself; ask an operator");
        }
        if self.shared.catalog.registry.get(name).is_none() {
            return error_result(&format!("Error: no tool named {name}"));
        }
        if session_only && !in_session {
            return error_result(
                "Error: scope \"session\" needs a session, and this request has none (stateless \
                 HTTP, or protocol 2026-07-28); nothing was switched. Use scope \"user\" to \
                 switch the tool for your user",
            );
        }
        if session_only {
            if let Some(Some(stored)) = self.stored.get() {
                if let Err(error) = stored.set(name, enabled).await {
                    return error_result(&format!(
                        "Error: {}",
                        store_failed("save the switch", &error)
                    ));
                }
            } else {
                self.session.set(name, enabled);
                let _ = self.session_changed.send(());
            }
        } else {
            match self.shared.switches.user(user).await {
                Ok(switches) => {
                    if let Err(error) = switches.set(name, enabled).await {
                        return error_result(&format!(
                            "Error: {}",
                            store_failed("save the switch", &error)
                        ));
                    }
                }
                Err(error) => {
                    return error_result(&format!(
                        "Error: {}",
                        store_failed("read your switches", &error)
                    ));
                }
            }
        }
        let state = if enabled { "on" } else { "off" };
        CallToolResult::success(vec![ContentBlock::text(format!("{name} is {state}"))])
    }
}

impl GatewayHandler {
    /// `search_tools`: the best matches among the tools the user has switched on (this
    /// session's switches included), with what a client needs to call them.
    fn search_tools(&self, user: &str, request: &CallToolRequestParams) -> CallToolResult {
        let arguments = request.arguments.clone().unwrap_or_default();
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return error_result("Error: search_tools needs `query` (a few words)");
        };
        let limit = match arguments.get("limit") {
            None => 10,
            Some(limit) => match limit.as_u64() {
                Some(limit @ 1..=MAX_SEARCH_LIMIT) => limit,
                _ => {
                    return error_result(&format!(
                        "Error: `limit` must be a whole number from 1 to {MAX_SEARCH_LIMIT}"
                    ));
                }
            },
        };
        // `ensure_user` loaded the user's switches.
        let Some(switches) = self.shared.switches.loaded(user) else {
            return error_result("Error: no tools to search");
        };
        let searched =
            switches.search_index(&self.shared.catalog.registry, &self.session, SEARCH_TOOLS);
        let definitions = &searched.definitions;
        let matches = match searched
            .index
            .search(query, usize::try_from(limit).unwrap_or(10))
        {
            Ok(matches) => matches,
            Err(error) => return error_result(&format!("Error: {error}")),
        };
        let tools: Vec<Value> = matches
            .hits
            .iter()
            .filter_map(|hit| definitions.iter().find(|tool| tool.name() == hit.name))
            .map(|tool| {
                json!({
                    "name": tool.name(),
                    "description": tool.description(),
                    "inputSchema": tool.parameters(),
                })
            })
            .collect();
        let text = json!({"tools": tools, "missing": matches.missing}).to_string();
        CallToolResult::success(vec![ContentBlock::text(text)])
    }

    /// Runs a `tools/call` request for the connection's user, within their limits.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let user = self.ensure_user(&context).await?;
        let tool = request.name.to_string();
        let (_permit, span) = admit_call(&self.shared, &user, &tool)?;
        if tool == SEARCH_TOOLS {
            let snapshot = self.snapshot(&user);
            let offered = self.shared.config.pinned_tools(&user).is_some()
                || !snapshot.deferred_names().is_empty();
            if !offered || !snapshot.is_enabled(SEARCH_TOOLS) {
                return Err(ErrorData::invalid_params(
                    format!("tool `{SEARCH_TOOLS}` is disabled"),
                    None,
                ));
            }
            return Ok(span.in_scope(|| self.search_tools(&user, &request)).into());
        }
        if tool == SET_TOOL_ENABLED {
            self.attach_session_of(&user, &context.extensions).await?;
            if !self.snapshot(&user).is_enabled(SET_TOOL_ENABLED) {
                return Err(ErrorData::invalid_params(
                    format!("tool `{SET_TOOL_ENABLED}` is disabled"),
                    None,
                ));
            }
            // Over HTTP a session is named in its header; a stdio connection is one.
            let in_session = context
                .extensions
                .get::<axum::http::request::Parts>()
                .is_none_or(|parts| {
                    !self.shared.stateless
                        && parts.headers.contains_key(crate::mcp::SESSION_ID_HEADER)
                });
            // Boxed: it holds the store's futures, and every call's future is moved into a
            // task of its own by rmcp, so it is kept small.
            return Ok(Box::pin(
                self.set_tool_enabled(&user, &request, in_session)
                    .instrument(span),
            )
            .await
            .into());
        }
        let outcome = self
            .inner
            .run_tool(request, context)
            .instrument(span.clone())
            .await;
        refused(&span, outcome.as_ref().err());
        outcome
    }
}

/// The registry as `user` sees it in a connection with `session`'s switches, their switches
/// loaded; a request without a user, or whose user's switches are not loaded, sees no tool.
fn view_of(shared: &Shared, user: Option<&str>, session: &ToolToggles) -> Arc<RegistrySnapshot> {
    match user.and_then(|name| shared.switches.loaded(name)) {
        Some(switches) => switches.snapshot(&shared.catalog.registry, session),
        None => Arc::new(shared.catalog.registry.snapshot_with(|_, _, _| false)),
    }
}

/// Loads the switches of user `name`.
pub(super) async fn load_user(shared: &Shared, name: &str) -> Result<Arc<UserSwitches>, ErrorData> {
    shared
        .switches
        .user(name)
        .await
        .map_err(|error| store_error("read your switches", &error))
}

/// What a client is told when the preference store fails to `action` (`"save the switch"`):
/// that it failed, and nothing of the error, which may name the database's address or file;
/// that goes to the log.
fn store_failed(action: &str, error: &dyn std::fmt::Display) -> String {
    tracing::error!(%error, "the gateway's preference store failed to {action}");
    format!(
        "the gateway could not {action}: its preference store failed (the operator's log has \
         the details)"
    )
}

/// [`store_failed`] as a JSON-RPC internal error.
fn store_error(action: &str, error: &dyn std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(store_failed(action, error), None)
}

/// Admits a call of `tool` by `user` within their limits: the permit it holds while it runs
/// and its `gateway_call` span, or the refusal (JSON-RPC code `-32003`).
pub(super) fn admit_call(
    shared: &Shared,
    user: &str,
    tool: &str,
) -> Result<(tokio::sync::OwnedSemaphorePermit, tracing::Span), ErrorData> {
    let server = shared
        .catalog
        .source_of(tool)
        .unwrap_or_else(|| "-".to_owned());
    let permit = shared
        .limits
        .admit(user, &server)
        .map_err(|reason| ErrorData::new(ErrorCode(LIMITED), reason, None))?;
    let span = tracing::info_span!("gateway_call", user = %user, server = %server, tool = %tool);
    Ok((permit, span))
}

/// Logs, in the call's span, the protocol error a call ended with.
pub(super) fn refused(span: &tracing::Span, error: Option<&ErrorData>) {
    if let Some(error) = error {
        span.in_scope(|| tracing::debug!(code = error.code.0, "the call was refused"));
    }
}

fn error_result(text: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.to_owned())])
}

/// The user of a request: the one the HTTP gate found, else the connection's.
fn user_of(context: &RequestContext<RoleServer>, bound: &Mutex<Option<String>>) -> Option<String> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<GatewayUser>())
        .map(|user| user.0.clone())
        .or_else(|| lock(bound).clone())
}

impl ServerHandler for GatewayHandler {
    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    // Each request's future is boxed here: rmcp moves it into the tasks it spawns for the
    // request, and a pointer moves for less than the store's and the registry's futures.
    fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<InitializeResult, ErrorData>> + MaybeSendFuture + '_ {
        Box::pin(async move {
            let user = self.ensure_user(&context).await?;
            if let Some(restored) = context.extensions.get::<SessionRestoreMarker>() {
                // A session another process began: its user only, with its switches.
                self.attach_session(&user, &restored.id).await?;
            }
            self.inner.initialize(request, context).await
        })
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        Box::pin(self.initialized(context))
    }

    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_ {
        Box::pin(self.listed(request, context))
    }

    /// With `otel`, the call's `tools/call {tool}` span (kind `SERVER`, continuing the trace
    /// context of the request's `_meta`) holds all the gateway does for it, up to the call to
    /// the upstream server, which carries the trace on in its own `_meta`.
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CallToolResponse, ErrorData>> + MaybeSendFuture + '_ {
        #[cfg(feature = "otel")]
        let span = self.inner.call_span(&request, &context);
        let call = self.call(request, context);
        #[cfg(feature = "otel")]
        let call = crate::mcp::traced(span, call);
        Box::pin(call)
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.inner.get_tool(name)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    /// 2026-07-28 listen streams: every burst of registry changes and changes of the user's or
    /// the session's switches is one `notifications/tools/list_changed`, and a stream opened
    /// after such a change, on a connection that listed its tools before it, begins with one.
    fn listen(
        &self,
        subscription: SubscriptionContext,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        Box::pin(self.listening(subscription))
    }

    fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CustomResult, ErrorData>> + MaybeSendFuture + '_ {
        Box::pin(self.inner.on_custom_request(request, context))
    }
}

/// The bodies of [`GatewayHandler`]'s requests, boxed by its `ServerHandler` methods.
impl GatewayHandler {
    async fn initialized(&self, context: NotificationContext<RoleServer>) {
        let user = lock(&self.user).clone();
        if let Some(user) = &user {
            if let Err(error) = self.attach_session_of(user, &context.extensions).await {
                tracing::warn!(%user, error = %error.message, "cannot keep the session in the store");
            }
        }
        self.inner.on_initialized(context.clone()).await;
        let Some(switches) = user.and_then(|user| self.shared.switches.loaded(&user)) else {
            return;
        };
        // The user's switch changes reach this connection; the registry's own changes are
        // forwarded by the inner handler.
        let mut changes = switches.subscribe();
        let mut session_changes = self.session_changed.subscribe();
        let peer = context.peer;
        let stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    change = changes.recv() => if matches!(change, Err(RecvError::Closed)) { return },
                    change = session_changes.recv() => if matches!(change, Err(RecvError::Closed)) { return },
                }
                // A burst of switches is one notification.
                drain(&mut changes);
                drain(&mut session_changes);
                if peer.is_transport_closed() || peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        });
    }

    async fn listed(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let user = self.ensure_user(&context).await?;
        let mut listed = self.inner.list_tools(request, context).await?;
        match self.shared.config.pinned_tools(&user) {
            Some(pinned) => listed.tools.retain(|tool| {
                let name = tool.name.as_ref();
                name == SEARCH_TOOLS
                    || name == SET_TOOL_ENABLED
                    || pinned.iter().any(|pin| pin == name)
            }),
            None if self.shared.config.any_deferred() => {
                // Deferred tools are found with `search_tools`, listed when there are any.
                let snapshot = self.snapshot(&user);
                let searchable = !snapshot.deferred_names().is_empty();
                listed.tools.retain(|tool| match tool.name.as_ref() {
                    SEARCH_TOOLS => searchable,
                    name => !snapshot.is_deferred(name),
                });
            }
            None => listed.tools.retain(|tool| tool.name != SEARCH_TOOLS),
        }
        Ok(listed)
    }

    async fn listening(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let user = self.ensure_user(subscription.request_context()).await?;
        // A stream of the user's while this runs.
        let _stream = self
            .shared
            .limits
            .open_stream(&user)
            .map_err(|reason| ErrorData::new(ErrorCode(LIMITED), reason, None))?;
        let Some(switches) = self.shared.switches.loaded(&user) else {
            return Ok(());
        };
        let mut registry_events = self.shared.catalog.registry.subscribe();
        let mut changes = switches.subscribe();
        let mut session_changes = self.session_changed.subscribe();
        // A connection that lives across requests (stdio, a session) may have listed its tools
        // before a change no stream heard (a switch, a registry change): the stream tells of it
        // at once. A change after the subscriptions above is told by the loop.
        if !self.inner.tell_changes_since_listed(&subscription).await {
            return Ok(());
        }
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                () = self.stop.cancelled() => return Ok(()),
                event = registry_events.recv() => if matches!(event, Err(RecvError::Closed)) { return Ok(()) },
                change = changes.recv() => if matches!(change, Err(RecvError::Closed)) { return Ok(()) },
                change = session_changes.recv() => if matches!(change, Err(RecvError::Closed)) { return Ok(()) },
            }
            // What came with it is told with it: the client's next `tools/list` shows the last
            // state, and a change after the drain is a notification of its own.
            drain(&mut registry_events);
            drain(&mut changes);
            drain(&mut session_changes);
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
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The guarded values are replaced whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_drain_takes_a_burst_and_leaves_the_next_change_to_be_told() {
        let (sender, mut events) = broadcast::channel(16);
        for change in 0..40 {
            // More than the channel holds: the receiver lags, and that is a change too.
            let _ = sender.send(change);
        }
        assert!(events.recv().await.is_err(), "lagged");
        drain(&mut events);
        assert_eq!(
            events.try_recv(),
            Err(broadcast::error::TryRecvError::Empty)
        );
        sender.send(41).unwrap();
        assert_eq!(events.recv().await, Ok(41));
        drop(sender);
        drain(&mut events);
        assert_eq!(events.recv().await, Err(RecvError::Closed));
    }
}
