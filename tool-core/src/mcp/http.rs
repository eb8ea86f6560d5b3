//! Streamable HTTP serving: `rmcp`'s tower service behind the request gate ([`admit`]) and a
//! session cap ([`CappedSessions`]), served by [`crate::http_server::serve`].
//!
//! # Security boundary
//!
//! Every HTTP request passes, before anything of the server sees it:
//!
//! 1. the authentication hook ([`McpAuth`], when set): a request it does not accept is answered
//!    `401 Unauthorized` with a `WWW-Authenticate` challenge;
//! 2. the `Host` rule (`rmcp`, against DNS rebinding): only [`McpOptions::allowed_hosts`]
//!    (by default loopback names and the bound address), else `403 Forbidden`;
//! 3. the `Origin` rule (`rmcp`, against web pages reaching a local server): a request with an
//!    `Origin` header is served only when it is in [`McpOptions::allowed_origins`] (by default
//!    pages on `localhost`, `127.0.0.1` and `[::1]`, any port), else `403 Forbidden`; one with
//!    none (as non-browser clients send) passes.
//!
//! A refused request runs no tool and creates no session. An `initialize` past
//! [`McpOptions::max_sessions`] is answered `503 Service Unavailable` with a JSON-RPC error; one
//! past the cap of its owner (a gate in front, such as the gateway's, names the user a new
//! session belongs to: [`SessionOwner`]) `429 Too Many Requests`.
//!
//! [`McpOptions::allowed_hosts`]: super::McpOptions::allowed_hosts
//! [`McpOptions::allowed_origins`]: super::McpOptions::allowed_origins
//! [`McpOptions::max_sessions`]: super::McpOptions::max_sessions

use std::{cell::Cell, collections::HashMap, fmt, io, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use futures::Stream;
use rmcp::{
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::{
            RestoreOutcome, SessionId, SessionManager,
            session::{
                ServerSseMessage,
                local::{LocalSessionManager, LocalSessionManagerError},
            },
        },
    },
};
use tokio::{net::ToSocketAddrs, task::JoinHandle};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{McpServer, McpServerError};
use crate::http_server::serve;

/// A running streamable HTTP MCP server, from [`McpServer::start_http`]. Dropping it shuts the
/// server down.
#[derive(Debug)]
pub struct McpHttpServer {
    addr: SocketAddr,
    path: String,
    stop: CancellationToken,
    task: JoinHandle<io::Result<()>>,
    _stop_on_drop: DropGuard,
}

impl McpHttpServer {
    /// The address the server is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the MCP endpoint, for example `http://127.0.0.1:8080/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Closes every session, stops accepting connections and waits for the server to stop.
    pub async fn shutdown(self) -> Result<(), McpServerError> {
        self.stop.cancel();
        self.wait().await
    }

    /// Serves until the server fails (a server that never fails serves for the life of the
    /// process); [`McpServer::serve_http`](super::McpServer::serve_http) is bind then wait.
    pub async fn wait(self) -> Result<(), McpServerError> {
        let Self {
            task,
            _stop_on_drop,
            ..
        } = self;
        task.await
            .map_err(McpServerError::Task)?
            .map_err(McpServerError::Http)
    }
}

/// Who may use the MCP HTTP server: a bearer token, or a check of your own over the request's
/// headers (an API key, a signed cookie, a header set by a proxy that authenticated the user).
/// Set it with [`McpOptions::auth`](super::McpOptions::auth) or
/// [`McpOptions::bearer_token`](super::McpOptions::bearer_token).
///
/// A request it does not accept is answered `401 Unauthorized` with a `WWW-Authenticate`
/// challenge (`Bearer realm="mcp"`, with `error="invalid_token"` when a wrong bearer token
/// came; [`McpAuth::challenge`] changes it) and a JSON-RPC error body, before anything of the
/// server sees it. It applies to HTTP only: a stdio client started the server itself.
///
/// Its `Debug` output never shows the token.
///
/// ```
/// use tool_core::mcp::{McpAuth, McpOptions};
///
/// let token = McpOptions::new().bearer_token("a long random secret");
/// let api_key = McpOptions::new().auth(
///     McpAuth::check(|headers| headers.get("x-api-key").is_some_and(|key| key == "k-1"))
///         .challenge("ApiKey realm=\"tools\""),
/// );
/// assert!(!format!("{token:?}").contains("secret"));
/// # let _ = api_key;
/// ```
#[derive(Clone)]
pub struct McpAuth {
    rule: Rule,
    challenge: Option<String>,
}

#[derive(Clone)]
enum Rule {
    Bearer(Arc<str>),
    Check(Arc<dyn Fn(&HeaderMap) -> bool + Send + Sync>),
}

impl McpAuth {
    /// Accepts requests carrying `Authorization: Bearer <token>` with exactly this token
    /// (compared in constant time). An empty token accepts nothing.
    pub fn bearer(token: impl Into<String>) -> Self {
        Self {
            rule: Rule::Bearer(token.into().into()),
            challenge: None,
        }
    }

    /// Accepts the requests for whose headers `check` returns `true`.
    pub fn check(check: impl Fn(&HeaderMap) -> bool + Send + Sync + 'static) -> Self {
        Self {
            rule: Rule::Check(Arc::new(check)),
            challenge: None,
        }
    }

    /// Sets the `WWW-Authenticate` value of a refusal (for example to name another scheme, or
    /// to add an OAuth `resource_metadata` URL).
    #[must_use]
    pub fn challenge(mut self, challenge: impl Into<String>) -> Self {
        self.challenge = Some(challenge.into());
        self
    }

    /// `None` when `headers` are accepted, else the `WWW-Authenticate` value of the refusal.
    fn refusal(&self, headers: &HeaderMap) -> Option<String> {
        let (accepted, wrong_token) = match &self.rule {
            Rule::Bearer(expected) => match bearer_token(headers) {
                Some(token) => (!expected.is_empty() && same_secret(token, expected), true),
                None => (false, headers.contains_key(header::AUTHORIZATION)),
            },
            Rule::Check(check) => (check(headers), false),
        };
        if accepted {
            return None;
        }
        Some(match &self.challenge {
            Some(challenge) => challenge.clone(),
            None if wrong_token => "Bearer realm=\"mcp\", error=\"invalid_token\"".to_owned(),
            None => "Bearer realm=\"mcp\"".to_owned(),
        })
    }
}

impl fmt::Debug for McpAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = match self.rule {
            Rule::Bearer(_) => "Bearer(<redacted>)",
            Rule::Check(_) => "Check(<fn>)",
        };
        f.debug_struct("McpAuth")
            .field("rule", &format_args!("{rule}"))
            .field("challenge", &self.challenge)
            .finish()
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(char::is_whitespace)?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// The JSON-RPC error code of requests the HTTP layer refuses (in the range JSON-RPC leaves to
/// implementations).
const REFUSED: i64 = -32001;

/// The JSON-RPC error code of a request over one of its user's limits.
const LIMITED: i64 = -32003;

/// The message of a `401`.
const UNAUTHORIZED: &str = "unauthorized: missing or invalid credentials";

/// Who the sessions a request begins (or restores) belong to, and how many they may hold at
/// once in this server: set by a gate in front of the MCP endpoint (the gateway's, which knows
/// each request's user) around the rest of the request with [`SessionOwner::scope`].
#[cfg_attr(not(feature = "gateway"), allow(dead_code))] // The gateway's gate sets it.
pub(crate) struct SessionOwner {
    pub(crate) name: Arc<str>,
    pub(crate) limit: usize,
}

#[cfg_attr(not(feature = "gateway"), allow(dead_code))] // The gateway's gate sets it.
impl SessionOwner {
    /// Runs `serve` (the rest of a request) with its sessions counted as this owner's.
    pub(crate) async fn scope<F: Future>(self, serve: F) -> F::Output {
        SESSION_OWNER.scope(self, serve).await
    }
}

/// The gate every request passes first: the authentication hook, then (inside) rmcp's `Host`
/// and `Origin` rules. An `initialize` the session cap refused becomes a `503`, one its owner's
/// cap refused a `429`.
async fn admit(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    if let Some(challenge) = gate
        .auth
        .as_ref()
        .and_then(|auth| auth.refusal(request.headers()))
    {
        let mut response = refusal(StatusCode::UNAUTHORIZED, UNAUTHORIZED);
        if let Ok(challenge) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        return response;
    }
    let (response, over_cap) = SESSION_REFUSED
        .scope(Cell::new(None), async {
            let response = next.run(request).await;
            (response, SESSION_REFUSED.with(Cell::get))
        })
        .await;
    match over_cap {
        None => response,
        Some(Full::Server) => {
            let message = SessionsError::Full {
                limit: gate.max_sessions,
            }
            .to_string();
            let mut response = refusal(StatusCode::SERVICE_UNAVAILABLE, &message);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
        Some(Full::Owner { limit }) => {
            let message = SessionsError::OwnerFull { limit }.to_string();
            limited(StatusCode::TOO_MANY_REQUESTS, &message)
        }
    }
}

struct Gate {
    auth: Option<McpAuth>,
    max_sessions: usize,
}

/// A refusal with a JSON-RPC error body, which MCP clients show as the request's error.
fn refusal(status: StatusCode, message: &str) -> Response {
    rpc_error(status, REFUSED, message)
}

/// The refusal of a request over one of its user's limits (JSON-RPC code `-32003`).
pub(crate) fn limited(status: StatusCode, message: &str) -> Response {
    rpc_error(status, LIMITED, message)
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    (status, axum::Json(body)).into_response()
}

/// Which session cap refused a session.
#[derive(Clone, Copy)]
enum Full {
    /// The server's.
    Server,
    /// Its owner's, of `limit` sessions.
    Owner { limit: usize },
}

tokio::task_local! {
    /// Set by [`CappedSessions::create_session`] when it refuses, so that [`admit`], which runs
    /// the request in the same task, answers `503` (or `429`, over the owner's cap) instead of
    /// rmcp's `500`.
    static SESSION_REFUSED: Cell<Option<Full>>;
    /// The owner of the sessions the request begins, if a gate named one.
    static SESSION_OWNER: SessionOwner;
}

/// rmcp's in-memory sessions, at most `limit` at once. A session counts from its `initialize`
/// until the client ends it (HTTP `DELETE`) or it has gone [`McpOptions::session_idle_timeout`]
/// without a request, when rmcp closes it.
///
/// [`McpOptions::session_idle_timeout`]: super::McpOptions::session_idle_timeout
struct CappedSessions {
    inner: LocalSessionManager,
    limit: usize,
    /// Makes counting and creating one step, so that concurrent `initialize`s cannot pass the
    /// cap together.
    creating: tokio::sync::Mutex<()>,
    /// The owner of each session begun with a [`SessionOwner`] (a session's entry goes when it
    /// closes, or when it is found gone from `inner`).
    owners: std::sync::Mutex<HashMap<SessionId, Arc<str>>>,
}

/// Why a [`CappedSessions`] call failed.
#[derive(Debug, thiserror::Error)]
enum SessionsError {
    #[error(
        "the server has reached its limit of {limit} mcp sessions; \
         end one (HTTP DELETE) or wait for an idle one to expire"
    )]
    Full { limit: usize },
    #[error(
        "session limit: at most {limit} mcp sessions at once per user; end one (HTTP DELETE) \
         or wait for an idle one to expire"
    )]
    OwnerFull { limit: usize },
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

impl CappedSessions {
    /// Room for one more session: the creation lock, held while there is room. At the cap, a
    /// refusal (marked for [`admit`], and logged as `refused {what}`).
    async fn room(&self, what: &str) -> Result<tokio::sync::MutexGuard<'_, ()>, SessionsError> {
        let creating = self.creating.lock().await;
        let sessions = self.inner.sessions.read().await;
        if sessions.len() >= self.limit {
            let _ = SESSION_REFUSED.try_with(|refused| refused.set(Some(Full::Server)));
            tracing::warn!(
                limit = self.limit,
                "refused {what}: the server is at its session limit"
            );
            return Err(SessionsError::Full { limit: self.limit });
        }
        let owner = SESSION_OWNER.try_with(|owner| (owner.name.clone(), owner.limit));
        if let Ok((owner, limit)) = owner {
            let mut owners = lock(&self.owners);
            // Sessions rmcp ended without a close through here are no one's any more.
            owners.retain(|id, _| sessions.contains_key(id));
            if owners.values().filter(|held| **held == owner).count() >= limit {
                let _ =
                    SESSION_REFUSED.try_with(|refused| refused.set(Some(Full::Owner { limit })));
                tracing::warn!(
                    user = %owner,
                    limit,
                    "refused {what}: the user is at their session limit"
                );
                return Err(SessionsError::OwnerFull { limit });
            }
        }
        Ok(creating)
    }

    /// Records the session `id`, just made, as its [`SessionOwner`]'s, if the request named
    /// one.
    fn owned(&self, id: &SessionId) {
        if let Ok(owner) = SESSION_OWNER.try_with(|owner| owner.name.clone()) {
            lock(&self.owners).insert(id.clone(), owner);
        }
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Each change is one insert, removal or retain.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _creating = self.room("an mcp session").await?;
        let (id, transport) = self.inner.create_session().await?;
        self.owned(&id);
        Ok((id, transport))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // A restored session counts against the caps as a new one does.
        let _creating = self.room("to restore an mcp session").await?;
        let outcome = self.inner.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) {
            self.owned(&id);
        }
        Ok(outcome)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.owners).remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

/// The loopback page origins admitted by default, any port.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

pub(super) async fn start(
    server: &McpServer,
    addr: impl ToSocketAddrs + fmt::Debug,
) -> Result<McpHttpServer, McpServerError> {
    let shown = format!("{addr:?}");
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| McpServerError::Bind {
            addr: shown.trim_matches('"').to_owned(),
            source,
        })?;
    let addr = listener.local_addr().map_err(McpServerError::Http)?;

    let options = server.options();
    let stop = CancellationToken::new();
    let factory = {
        let server = server.clone();
        move || Ok(server.handler())
    };
    let (router, path, _) = router(options, addr, factory, &stop, None);
    let task = tokio::spawn(serve(
        listener,
        router,
        options.http_limits.clone(),
        stop.clone().cancelled_owned(),
    ));
    Ok(McpHttpServer {
        addr,
        path,
        _stop_on_drop: stop.clone().drop_guard(),
        stop,
        task,
    })
}

/// The MCP endpoint's router: rmcp's streamable HTTP service over handlers from `factory`,
/// behind the request gate ([`admit`]) and the session cap, at [`McpOptions::http_path`]
/// (returned normalized), and its in-memory sessions. `stop` ends its sessions. With
/// `session_store`, sessions are kept there too and a session this process does not hold is
/// restored from it.
///
/// [`McpOptions::http_path`]: super::McpOptions::http_path
pub(crate) fn router<H, F>(
    options: &super::McpOptions,
    addr: SocketAddr,
    factory: F,
    stop: &CancellationToken,
    session_store: Option<Arc<dyn rmcp::transport::streamable_http_server::session::SessionStore>>,
) -> (axum::Router, String, HttpSessions)
where
    H: rmcp::ServerHandler,
    F: Fn() -> Result<H, io::Error> + Send + Sync + 'static,
{
    let site = Site::new(options, addr);
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(site.hosts)
        .with_allowed_origins(site.origins)
        // An empty list refuses every page rather than switching the check off.
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_request_bytes)
        // Stateless: no session, and plain JSON answers where no notification comes first.
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless)
        .with_cancellation_token(stop.child_token());
    config.session_store = session_store;
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(options.session_idle_timeout);
    let sessions = Arc::new(CappedSessions {
        inner: sessions,
        limit: options.max_sessions,
        creating: tokio::sync::Mutex::new(()),
        owners: std::sync::Mutex::default(),
    });
    // Behind an `Arc`: axum and each middleware layer clone the route's service for every
    // request, and rmcp's carries its configuration (the host and origin lists) by value. The
    // gateway answers most calls in front of it; those no longer pay for copying it.
    let service = Arc::new(StreamableHttpService::new(
        factory,
        sessions.clone(),
        config,
    ));
    let service = axum::handler::HandlerWithoutStateExt::into_service(
        move |request: axum::extract::Request| async move { service.handle(request).await },
    );
    let path = normalized_path(&options.http_path);
    // axum nests nothing at the root; a root endpoint is the fallback of an empty router.
    let router = if path == "/" {
        axum::Router::new().fallback_service(service)
    } else {
        axum::Router::new().nest_service(&path, service)
    };
    let gate = Arc::new(Gate {
        auth: options.auth.clone(),
        max_sessions: options.max_sessions,
    });
    let router = router.layer(axum::middleware::from_fn_with_state(gate, admit));
    (router, path, HttpSessions(sessions))
}

/// The `Host` and `Origin` rules of an MCP endpoint: the lists rmcp is given, and the same
/// rules checked in front of it ([`Site::admits`]), for the routes beside the endpoint and for
/// requests served before rmcp.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "gateway"), allow(dead_code))] // The gateway checks before rmcp.
pub(crate) struct Site {
    hosts: Vec<String>,
    origins: Vec<String>,
    /// `hosts` parsed; `None`: every host (an empty list, as rmcp takes it).
    allowed_hosts: Option<Vec<Authority>>,
    allowed_origins: Vec<AllowedOrigin>,
}

/// A host and maybe a port, the host lowercase and without brackets.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Authority {
    host: String,
    port: Option<u16>,
}

/// An origin an endpoint admits.
#[derive(Clone, Debug, PartialEq, Eq)]
enum AllowedOrigin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        /// `None`: any port (`:*`, or none given).
        port: Option<u16>,
    },
}

/// A request's origin.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

impl Site {
    /// The rules of an endpoint with `options` bound to `addr`: [`McpOptions::allowed_hosts`]
    /// (by default loopback names and the bound address) and [`McpOptions::allowed_origins`]
    /// (by default pages on loopback, any port).
    ///
    /// [`McpOptions::allowed_hosts`]: super::McpOptions::allowed_hosts
    /// [`McpOptions::allowed_origins`]: super::McpOptions::allowed_origins
    pub(crate) fn new(options: &super::McpOptions, addr: SocketAddr) -> Self {
        let hosts = options.allowed_hosts.clone().unwrap_or_else(|| {
            let mut hosts = vec![
                "localhost".to_owned(),
                "127.0.0.1".to_owned(),
                "::1".to_owned(),
            ];
            let ip = addr.ip();
            if !ip.is_unspecified() && !ip.is_loopback() {
                hosts.push(ip.to_string());
            }
            hosts
        });
        let origins = options
            .allowed_origins
            .clone()
            .unwrap_or_else(|| LOOPBACK_ORIGINS.map(str::to_owned).to_vec());
        let allowed_hosts = (!hosts.is_empty())
            .then(|| hosts.iter().filter_map(|host| allowed_host(host)).collect());
        let allowed_origins = origins
            .iter()
            .filter_map(|origin| allowed_origin(origin))
            .collect();
        Self {
            hosts,
            origins,
            allowed_hosts,
            allowed_origins,
        }
    }

    /// Whether rmcp admits a request with `uri` and `headers`: its `Host` (or, without one, the
    /// URI's authority) is allowed, and so is its `Origin`, when it has one. What rmcp refuses
    /// is refused here; a request refused here is left to rmcp to answer.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // The gateway checks before rmcp.
    pub(crate) fn admits(&self, uri: &axum::http::Uri, headers: &HeaderMap) -> bool {
        let host = match headers.get(header::HOST) {
            Some(host) => {
                let Some(authority) = host
                    .to_str()
                    .ok()
                    .and_then(|host| axum::http::uri::Authority::try_from(host).ok())
                else {
                    return false;
                };
                authority_of(authority.host(), authority.port_u16())
            }
            None => match uri.authority() {
                Some(authority) => authority_of(authority.host(), authority.port_u16()),
                None => return false,
            },
        };
        let host_allowed = self.allowed_hosts.as_ref().is_none_or(|allowed| {
            allowed.iter().any(|entry| {
                entry.host == host.host && entry.port.is_none_or(|port| host.port == Some(port))
            })
        });
        if !host_allowed {
            return false;
        }
        let Some(origin) = headers.get(header::ORIGIN) else {
            return true;
        };
        let Some(origin) = origin.to_str().ok().and_then(origin_of) else {
            return false;
        };
        self.allowed_origins
            .iter()
            .any(|allowed| match (allowed, &origin) {
                (AllowedOrigin::Null, Origin::Null) => true,
                (
                    AllowedOrigin::Tuple { scheme, host, port },
                    Origin::Tuple {
                        scheme: o_scheme,
                        host: o_host,
                        port: o_port,
                    },
                ) => {
                    scheme == o_scheme
                        && host == o_host
                        && port.is_none_or(|port| {
                            o_port.or_else(|| default_port(o_scheme)) == Some(port)
                        })
                }
                _ => false,
            })
    }
}

fn authority_of(host: &str, port: Option<u16>) -> Authority {
    Authority {
        host: host
            .trim_matches('[')
            .trim_matches(']')
            .to_ascii_lowercase(),
        port,
    }
}

fn allowed_host(entry: &str) -> Option<Authority> {
    let entry = entry.trim();
    if entry.is_empty() {
        return None;
    }
    Some(match axum::http::uri::Authority::try_from(entry) {
        Ok(authority) => authority_of(authority.host(), authority.port_u16()),
        Err(_) => authority_of(entry, None),
    })
}

fn origin_of(value: &str) -> Option<Origin> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if value.eq_ignore_ascii_case("null") {
        return Some(Origin::Null);
    }
    let uri = axum::http::Uri::try_from(value).ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let Authority { host, port } = authority_of(authority.host(), authority.port_u16());
    Some(Origin::Tuple { scheme, host, port })
}

fn allowed_origin(entry: &str) -> Option<AllowedOrigin> {
    let entry = entry.trim();
    if let Some(base) = entry.strip_suffix(":*") {
        let Origin::Tuple {
            scheme,
            host,
            port: None,
        } = origin_of(base)?
        else {
            return None;
        };
        return Some(AllowedOrigin::Tuple {
            scheme,
            host,
            port: None,
        });
    }
    Some(match origin_of(entry)? {
        Origin::Null => AllowedOrigin::Null,
        Origin::Tuple { scheme, host, port } => AllowedOrigin::Tuple { scheme, host, port },
    })
}

/// The port a scheme implies when an origin leaves it out.
#[cfg_attr(not(feature = "gateway"), allow(dead_code))] // The gateway checks before rmcp.
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// The in-memory sessions of one [`router`], for ending a session that ended elsewhere (in
/// another process sharing the session store).
#[derive(Clone)]
pub(crate) struct HttpSessions(Arc<CappedSessions>);

impl HttpSessions {
    /// Ends session `id` if this router holds it: its streams end, and a later request in it
    /// is answered as in an ended session.
    #[cfg_attr(not(feature = "gateway"), allow(dead_code))] // The gateway's processes use it.
    pub(crate) async fn close(&self, id: &str) {
        if let Err(error) = self.0.close_session(&SessionId::from(id)).await {
            tracing::warn!(%error, "cannot end an mcp session that ended elsewhere");
        }
    }
}

fn normalized_path(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    format!("/{trimmed}")
}

/// How long an HTTP session may go without a request before it ends, by default (rmcp's).
pub(super) const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_mins(5);

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(authorization).unwrap(),
        );
        headers
    }

    #[test]
    fn only_the_exact_bearer_token_is_accepted() {
        let auth = McpAuth::bearer("tok");
        assert_eq!(auth.refusal(&headers("Bearer tok")), None);
        assert_eq!(auth.refusal(&headers("BEARER   tok ")), None);
        for wrong in ["Bearer to", "Bearer tok2", "Bearer", "tok", "Basic tok"] {
            assert!(auth.refusal(&headers(wrong)).is_some(), "{wrong}");
        }
        assert_eq!(
            auth.refusal(&HeaderMap::new()).as_deref(),
            Some("Bearer realm=\"mcp\"")
        );
        let nothing = McpAuth::bearer("");
        assert!(nothing.refusal(&headers("Bearer ")).is_some());
    }
}
