//! The gateway over HTTP: the MCP endpoint behind the user gate, the admin API and `/healthz`.
//!
//! # Security boundary
//!
//! Every request to the MCP endpoint passes [`gate`] first: [`Users::identify`] gives it a
//! user or it is answered `401` (a JSON-RPC error body and `WWW-Authenticate`) before any of
//! the MCP server sees it. A request over its user's request rate, or a `GET` stream over
//! their open streams, is answered `429` with a JSON-RPC error (code `-32003`); a request
//! without a user counts against nobody's limits. A request naming an HTTP session
//! (`Mcp-Session-Id`) that its user does not own is answered `404`, as a session the server
//! does not know, whatever its method and whichever process sharing the store gets it
//! ([`SessionOwners`]); a session is its user's from the answer to its `initialize`. Then the
//! MCP server's own `Host`, `Origin` and body size checks apply. `/healthz` and the admin API
//! follow the same `Host` and `Origin` rules ([`same_site`]); the admin API admits only the
//! admin token, compared as a hash in constant time, and `/healthz` shows the upstreams'
//! errors only to it.

use std::{io, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Json, Router,
    extract::{ConnectInfo, Path, Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::{delete, get, post, put},
};
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{
    GatewayError, Shared,
    fast::FastCalls,
    handler::GatewayHandler,
    owners::SessionOwners,
    sessions::StoredSessions,
    users::{GatewayUser, Refusal, Users},
};
use crate::mcp::{McpServerError, SESSION_ID_HEADER, SessionOwner, Site};

/// The gateway's HTTP server, from [`McpGateway::start_http`](super::McpGateway::start_http).
/// Dropping it stops it.
#[derive(Debug)]
pub struct GatewayHttpServer {
    addr: SocketAddr,
    path: String,
    stop: CancellationToken,
    task: JoinHandle<io::Result<()>>,
    owners: Arc<SessionOwners>,
    _stop_on_drop: DropGuard,
}

impl GatewayHttpServer {
    /// How many times this server's gate read a session's owner from the store (for tests of
    /// the owners it keeps).
    #[doc(hidden)]
    pub fn session_owner_reads(&self) -> u64 {
        self.owners.reads()
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint's URL, for example `http://127.0.0.1:8090/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Stops accepting connections and waits for the server to stop.
    pub async fn shutdown(self) -> Result<(), GatewayError> {
        self.stop.cancel();
        self.wait().await
    }

    /// Serves until the server fails.
    pub async fn wait(self) -> Result<(), GatewayError> {
        let Self {
            task,
            _stop_on_drop,
            ..
        } = self;
        task.await
            .map_err(|error| GatewayError::Serve(McpServerError::Task(error)))?
            .map_err(|error| GatewayError::Serve(McpServerError::Http(error)))
    }
}

struct Http {
    shared: Arc<Shared>,
    users: Users,
    owners: Arc<SessionOwners>,
    /// The short way of stateless `tools/call` requests, when the gateway is stateless.
    fast: Option<FastCalls>,
}

pub(super) async fn start(
    shared: Arc<Shared>,
    addr: &str,
    stop: CancellationToken,
) -> Result<GatewayHttpServer, GatewayError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| {
            GatewayError::Serve(McpServerError::Bind {
                addr: addr.to_owned(),
                source,
            })
        })?;
    let bound = listener
        .local_addr()
        .map_err(|error| GatewayError::Serve(McpServerError::Http(error)))?;
    let users = Users::new(&shared.config, Some(bound))?;
    let options = shared.server.options().clone();
    let factory = {
        let shared = shared.clone();
        move || Ok(GatewayHandler::new(shared.clone(), None, None))
    };
    // With an SQL store, sessions are kept there for the other processes to restore.
    let sessions = if shared.stateless {
        None
    } else {
        shared.switches.sql().map(|sql| {
            Arc::new(StoredSessions {
                sql: sql.clone(),
                switches: shared.switches.clone(),
            })
                as Arc<dyn rmcp::transport::streamable_http_server::session::SessionStore>
        })
    };
    let (mcp, path, held) = crate::mcp::http_router(&options, bound, factory, &stop, sessions);
    let owners = Arc::new(SessionOwners::new(Duration::from_secs(
        shared.config.gateway.session_idle_timeout_secs,
    )));
    shared.http_sessions.add(held, owners.clone());
    let site = Site::new(&options, bound);
    let fast = (shared.stateless && shared.config.gateway.fast_calls)
        .then(|| FastCalls::new(site.clone(), options.max_request_bytes));
    let state = Arc::new(Http {
        shared,
        users,
        owners: owners.clone(),
        fast,
    });
    let rules = Arc::new(SiteRules {
        mcp: mcp.clone(),
        path: path.clone(),
        site,
    });
    let mcp = mcp.layer(axum::middleware::from_fn_with_state(state.clone(), gate));
    // The admin token is checked before a handler reads anything of the request, its body
    // above all.
    let admin = Router::new()
        .route("/admin/users/{user}/tools", get(user_tools))
        .route("/admin/users/{user}/tools/{tool}", put(switch_tool))
        .route("/admin/pins", get(pins))
        .route("/admin/pins/{tool}/accept", post(accept_pin))
        .route("/admin/pins/{tool}", delete(drop_pin))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            admin_only,
        ))
        .route("/healthz", get(healthz))
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(rules, same_site));
    let router = mcp.merge(admin);
    let task = tokio::spawn(crate::http_server::serve(
        listener,
        router,
        options.http_limits.clone(),
        stop.clone().cancelled_owned(),
    ));
    Ok(GatewayHttpServer {
        addr: bound,
        path,
        _stop_on_drop: stop.clone().drop_guard(),
        stop,
        task,
        owners,
    })
}

/// Gives the request its user, or answers `401`; holds the user to their limits (`429`);
/// answers a request in a session its user does not own as in an unknown session (`404`), and
/// records the owner of a session that begins.
async fn gate(State(http): State<Arc<Http>>, request: Request, next: Next) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    match http.users.identify(request.headers(), peer) {
        Ok(user) => serve_user(&http, user, request, next).await,
        Err(refusal) => {
            let challenge = match refusal {
                Refusal::Missing => "Bearer realm=\"mcp\"",
                Refusal::Invalid => "Bearer realm=\"mcp\", error=\"invalid_token\"",
            };
            let mut response = rpc_refusal(
                StatusCode::UNAUTHORIZED,
                "unauthorized: missing or invalid credentials",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
            response
        }
    }
}

/// Serves a request of `user` within their limits: their request rate (a request the MCP
/// server then refuses for its `Host` or `Origin` is given back, so a web page cannot spend a
/// user's requests), their open streams (a `GET` stream holds one until it closes) and their
/// sessions (counted where sessions are made, [`SessionOwner`]).
async fn serve_user(http: &Http, user: GatewayUser, mut request: Request, next: Next) -> Response {
    let limits = &http.shared.limits;
    if let Err(over) = limits.admit_request(&user.0) {
        let mut response =
            crate::mcp::limited_response(StatusCode::TOO_MANY_REQUESTS, &over.message);
        let seconds = over.retry_after.as_secs_f64().ceil().max(1.0);
        if let Ok(value) = HeaderValue::from_str(&format!("{seconds:.0}")) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let stream = if request.method() == Method::GET {
        match limits.open_stream(&user.0) {
            Ok(stream) => Some(stream),
            Err(message) => {
                return crate::mcp::limited_response(StatusCode::TOO_MANY_REQUESTS, &message);
            }
        }
    } else {
        None
    };
    let name = user.0.clone();
    let response = if http.shared.stateless {
        request.extensions_mut().insert(user);
        match &http.fast {
            Some(fast) => super::fast::serve(&http.shared, fast, &name, request, next).await,
            None => next.run(request).await,
        }
    } else {
        let sql = http.shared.switches.sql();
        let session = match request.headers().get(SESSION_ID_HEADER) {
            None => None,
            Some(id) => {
                let Ok(id) = id.to_str() else {
                    return session_not_found();
                };
                match http.owners.owns(sql, id, &name).await {
                    Ok(true) => Some(id.to_owned()),
                    Ok(false) => return session_not_found(),
                    Err(error) => {
                        tracing::warn!(%error, "cannot read the user of an mcp session");
                        return rpc_refusal(
                            StatusCode::SERVICE_UNAVAILABLE,
                            "the gateway's preference store failed; try again",
                        );
                    }
                }
            }
        };
        let ends = request.method() == Method::DELETE;
        request.extensions_mut().insert(user);
        let sessions = SessionOwner {
            name: name.as_str().into(),
            limit: http.shared.config.gateway.max_sessions_per_user.max(1) as usize,
        };
        let response = sessions.scope(next.run(request)).await;
        match session {
            // The session is its user's before its client knows its id.
            None => {
                if let Some(id) = response
                    .headers()
                    .get(SESSION_ID_HEADER)
                    .and_then(|id| id.to_str().ok())
                {
                    http.owners.began(sql, id, &name).await;
                }
            }
            Some(id) if ends && response.status().is_success() => http.owners.ended(&id),
            Some(_) => {}
        }
        response
    };
    if response.status() == StatusCode::FORBIDDEN {
        limits.refund_request(&name);
    }
    match stream {
        // The stream is the user's until its body ends or its client goes.
        Some(stream) if response.status().is_success() => {
            let (parts, body) = response.into_parts();
            let body = body.into_data_stream().map(move |chunk| {
                let _open = &stream;
                chunk
            });
            Response::from_parts(parts, axum::body::Body::from_stream(body))
        }
        _ => response,
    }
}

/// The MCP endpoint (before [`gate`]), whose `Host` and `Origin` rules the other routes follow.
struct SiteRules {
    mcp: Router,
    path: String,
    /// The endpoint's rules, checked before it.
    site: Site,
}

/// Serves a request to `/healthz` or the admin API only when the MCP endpoint would admit its
/// `Host` and `Origin`, against DNS rebinding and web pages as there ([`Site::admits`], the
/// check requests served before rmcp pass too). A request it refuses gets the endpoint's own
/// refusal: rmcp is asked with an `OPTIONS` request carrying them and nothing else, and
/// answers `403` (or `400` for a malformed `Host`), or `405` should it admit them after all,
/// when the request is served.
async fn same_site(State(rules): State<Arc<SiteRules>>, request: Request, next: Next) -> Response {
    if rules.site.admits(request.uri(), request.headers()) {
        return next.run(request).await;
    }
    let uri = match request.uri().authority() {
        Some(authority) => format!("http://{authority}{}", rules.path),
        None => rules.path.clone(),
    };
    let mut probe = axum::http::Request::builder()
        .method(Method::OPTIONS)
        .uri(uri);
    for name in [header::HOST, header::ORIGIN] {
        for value in request.headers().get_all(&name) {
            probe = probe.header(&name, value);
        }
    }
    let Ok(probe) = probe.body(axum::body::Body::empty()) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let answer = match hyper::service::Service::call(
        &hyper_util::service::TowerToHyperService::new(rules.mcp.clone()),
        probe,
    )
    .await
    {
        Ok(answer) => answer,
        Err(never) => match never {},
    };
    if answer.status() == StatusCode::METHOD_NOT_ALLOWED {
        next.run(request).await
    } else {
        answer.into_response()
    }
}

/// The answer to a request in a session the requesting user does not own: the MCP server's own
/// answer to an unknown session, so that another user's session and no session look alike.
fn session_not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

fn rpc_refusal(status: StatusCode, message: &str) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32001, "message": message},
    });
    (status, Json(body)).into_response()
}

/// The upstreams' states; their details (errors may carry a command line or a server's last
/// words on stderr) only with the admin token.
async fn healthz(State(http): State<Arc<Http>>, headers: HeaderMap) -> Json<Value> {
    Json(super::health(&http.shared, http.users.is_admin(&headers)))
}

/// Passes requests with the admin token on to the admin API; refuses the others.
async fn admin_only(State(http): State<Arc<Http>>, request: Request, next: Next) -> Response {
    match refuse_non_admin(&http, request.headers()) {
        Some(refusal) => refusal,
        None => next.run(request).await,
    }
}

/// `None` when the admin token came, else the refusal.
fn refuse_non_admin(http: &Http, headers: &HeaderMap) -> Option<Response> {
    if http.shared.config.gateway.admin_token_sha256.is_none() {
        return Some(admin_error(
            StatusCode::FORBIDDEN,
            "the admin API is off: no admin token is configured",
        ));
    }
    if http.users.is_admin(headers) {
        return None;
    }
    let mut response = admin_error(
        StatusCode::UNAUTHORIZED,
        "the admin API needs the admin token",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"admin\""),
    );
    Some(response)
}

fn admin_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

async fn user_tools(State(http): State<Arc<Http>>, Path(user): Path<String>) -> Response {
    if !super::users::is_user_name(&user) {
        return admin_error(StatusCode::BAD_REQUEST, "invalid user name");
    }
    let switches = match http.shared.switches.user(&user).await {
        Ok(switches) => switches,
        Err(error) => return admin_error(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string()),
    };
    let snapshot = switches.own_snapshot(&http.shared.catalog.registry);
    let registry = &http.shared.catalog.registry;
    let tools: Vec<Value> = registry
        .list_tools()
        .into_iter()
        .map(|tool| json!({"name": tool.name, "enabled": snapshot.is_enabled(&tool.name)}))
        .collect();
    Json(json!({"tools": tools})).into_response()
}

async fn switch_tool(
    State(http): State<Arc<Http>>,
    Path((user, tool)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    if !super::users::is_user_name(&user) {
        return admin_error(StatusCode::BAD_REQUEST, "invalid user name");
    }
    let Some(enabled) = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|body| body.get("enabled").and_then(Value::as_bool))
    else {
        return admin_error(
            StatusCode::BAD_REQUEST,
            "the body must be {\"enabled\": true|false}",
        );
    };
    if http.shared.catalog.registry.get(&tool).is_none() {
        return admin_error(StatusCode::NOT_FOUND, "no tool of that name is served");
    }
    let switches = match http.shared.switches.user(&user).await {
        Ok(switches) => switches,
        Err(error) => return admin_error(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string()),
    };
    if let Err(error) = switches.set(&tool, enabled).await {
        return admin_error(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string());
    }
    tracing::info!(%user, %tool, enabled, "an operator switched a tool");
    Json(json!({"user": user, "name": tool, "enabled": enabled})).into_response()
}

async fn pins(State(http): State<Arc<Http>>) -> Response {
    Json(json!({"pending": http.shared.catalog.pending().await})).into_response()
}

/// `DELETE /admin/pins/{tool}` drops the pin of a tool no server offers.
async fn drop_pin(State(http): State<Arc<Http>>, Path(tool): Path<String>) -> Response {
    use super::catalog::PinDrop;
    let refusal = match http.shared.drop_pin(&tool).await {
        Ok(PinDrop::Dropped) => return Json(json!({"dropped": tool})).into_response(),
        Ok(PinDrop::Offered) => (
            StatusCode::CONFLICT,
            "a server offers the tool: its pin stays (accept a change of it instead)",
        ),
        Ok(PinDrop::Waiting) => (
            StatusCode::CONFLICT,
            "a change of the tool waits for an operator (a process sharing the store withholds \
             it): its pin stays (accept the change, or stop the server offering the tool first)",
        ),
        Ok(PinDrop::Unknown) => (StatusCode::NOT_FOUND, "the tool has no pin"),
        Err(error) => return admin_error(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string()),
    };
    admin_error(refusal.0, refusal.1)
}

/// `POST /admin/pins/{tool}/accept` accepts the waiting change of the tool's definition; with
/// a body `{"offered": "<sha256>"}` (as `GET /admin/pins` lists it), only if the change waiting
/// is still that one.
async fn accept_pin(
    State(http): State<Arc<Http>>,
    Path(tool): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    use super::catalog::PinAccept;
    let offered = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let named = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|body| {
                body.get("offered")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        let Some(named) = named else {
            return admin_error(
                StatusCode::BAD_REQUEST,
                "the body must be empty or {\"offered\": \"<sha256>\"}",
            );
        };
        Some(named)
    };
    match http.shared.accept_pin(&tool, offered.as_deref()).await {
        Ok(PinAccept::Accepted) => Json(json!({"accepted": tool})).into_response(),
        Ok(PinAccept::NotPending) => {
            admin_error(StatusCode::NOT_FOUND, "no change of that tool is pending")
        }
        Ok(PinAccept::Other(waiting)) => (
            StatusCode::CONFLICT,
            Json(json!({
                "error": "the change waiting is not the one named: nothing was accepted \
                          (review it in GET /admin/pins)",
                "offered": waiting,
            })),
        )
            .into_response(),
        Err(error) => admin_error(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string()),
    }
}
