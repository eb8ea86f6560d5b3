//! The short way of a stateless `tools/call`: a single `POST`ed `tools/call` request that rmcp
//! would serve as a plain JSON answer is answered here, after the user gate, without rmcp's
//! per-request service (a handler built, the message decoded variant by variant, the call
//! moved into tasks of its own). Everything else, and anything this module is not sure to
//! answer exactly as rmcp would, goes on to rmcp with the bytes already read.
//!
//! What rmcp checks comes first and in its order: the `Host` and `Origin` rules
//! ([`Site::admits`]), the `Accept` and `Content-Type` headers, the body size limit (refused
//! with rmcp's own `413` answer), the JSON-RPC message and the `MCP-Protocol-Version` header.
//! A request failing one of them is left to rmcp, which refuses it. Then the call goes as
//! [`GatewayHandler`](super::handler::GatewayHandler) takes it: the user's switches, their
//! call limits, the `gateway_call` span (with `otel`, the `tools/call {tool}` server span too,
//! continuing the request's trace context), and the call itself through
//! [`run_call`](crate::mcp::run_call), the core rmcp's way runs too. The gateway's own tools,
//! tools that need approval and calls asking for progress (answered on an event stream) go to
//! rmcp. A client that goes before the answer drops the call, which cancels it upstream.

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::Response,
};
use futures::StreamExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, JsonRpcVersion2_0, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::{
    Shared,
    handler::{SEARCH_TOOLS, SET_TOOL_ENABLED, admit_call, load_user, refused},
};
use crate::{
    call::CallContext,
    mcp::{CallStop, SESSION_ID_HEADER, Site, needs_approval, run_call},
    registry::RegistrySnapshot,
};

/// What the short way needs besides the gateway's shared state.
pub(super) struct FastCalls {
    site: Site,
    max_request_bytes: usize,
}

impl FastCalls {
    pub(super) fn new(site: Site, max_request_bytes: usize) -> Self {
        Self {
            site,
            max_request_bytes,
        }
    }
}

/// The header naming a request's protocol version.
const PROTOCOL_VERSION: &str = "mcp-protocol-version";

/// The `_meta` keys of requests that carry their own protocol lifecycle (2026-07-28), which
/// rmcp serves its own way.
const LIFECYCLE_META: &str = "io.modelcontextprotocol/";

/// Serves the request of `user` (already admitted by the gate) when it is a stateless
/// `tools/call` this module answers exactly as rmcp would, else runs the rest of the stack.
pub(super) async fn serve(
    shared: &Shared,
    fast: &FastCalls,
    user: &str,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST
        || request.headers().contains_key(SESSION_ID_HEADER)
        || !fast.site.admits(request.uri(), request.headers())
        || !accepts_json_and_sse(request.headers())
        || !is_json(request.headers())
    {
        return next.run(request).await;
    }
    let Some(version) = plain_version(request.headers()) else {
        return next.run(request).await;
    };
    let (parts, body) = request.into_parts();
    let body = match read_body(body, fast.max_request_bytes).await {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    let again = |body: Bytes| next.run(Request::from_parts(parts, Body::from(body)));
    let Ok(message) = serde_json::from_slice::<CallMessage<'_>>(&body) else {
        return again(body).await;
    };
    let CallMessage {
        jsonrpc: JsonRpcVersion2_0,
        id,
        method,
        params,
    } = message;
    if method != "tools/call"
        || params.input_responses.is_some()
        || params.request_state.is_some()
        || params.meta.as_ref().is_some_and(|meta| {
            meta.0
                .0
                .keys()
                .any(|key| key == "progressToken" || key.starts_with(LIFECYCLE_META))
        })
        || params.name == SEARCH_TOOLS
        || params.name == SET_TOOL_ENABLED
    {
        return again(body).await;
    }
    // The user's switches, as `GatewayHandler::ensure_user` loads them.
    let Ok(switches) = load_user(shared, user).await else {
        return again(body).await;
    };
    let snapshot = switches.own_snapshot(&shared.catalog.registry);
    if needs_approval(&snapshot, &params.name) {
        return again(body).await;
    }
    tracing::trace!(tool = %params.name, "a stateless tools/call served before rmcp");
    json_response(&answer(shared, user, &snapshot, &version, id, params).await)
}

/// The answer to the `tools/call` `id` with `params` of `user`, who sees `snapshot`, on
/// `version` (before 2026-07-28): as `GatewayHandler::call` runs it, within the user's limits
/// and in the `gateway_call` span (with `otel`, in the `tools/call {tool}` server span too).
async fn answer(
    shared: &Shared,
    user: &str,
    snapshot: &RegistrySnapshot,
    version: &ProtocolVersion,
    id: RequestId,
    params: CallToolRequestParams,
) -> ServerJsonRpcMessage {
    let CallToolRequestParams {
        name,
        arguments,
        meta,
        ..
    } = params;
    #[cfg(feature = "otel")]
    let span = crate::mcp::call_span(
        &name,
        version,
        true,
        &meta.unwrap_or_default().0.0,
        &id,
        None,
    );
    #[cfg(not(feature = "otel"))]
    drop(meta);
    let call = async {
        let (_permit, span) = admit_call(shared, user, &name)?;
        let cancelled = CancellationToken::new();
        // A client that goes drops this future: the tool's token is cancelled with it.
        let cancel_on_drop = cancelled.clone().drop_guard();
        let call =
            CallContext::new(id.to_string(), name.to_string()).with_cancellation(cancelled.clone());
        let outcome = run_call(
            snapshot,
            &name,
            arguments.unwrap_or_default(),
            call,
            None,
            version,
            shared.server.options().tool_timeout,
            CallStop {
                call: &cancelled,
                request: None,
            },
        )
        .instrument(span.clone())
        .await
        .map(CallToolResponse::from);
        cancel_on_drop.disarm();
        refused(&span, outcome.as_ref().err());
        outcome
    };
    #[cfg(feature = "otel")]
    let call = crate::mcp::traced(span, call);
    match call.await {
        Ok(result) => {
            // The shape of results before 2026-07-28, as rmcp's handler gives them.
            let mut result = ServerResult::from(result);
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            ServerJsonRpcMessage::response(result, id)
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    }
}

/// A JSON-RPC request as the short way takes it: exactly these members (rmcp ignores others;
/// a message with any goes to rmcp), `params` a `tools/call`'s.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallMessage<'a> {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: &'a str,
    params: CallToolRequestParams,
}

/// rmcp's `Accept` rule: the client takes both `application/json` and `text/event-stream`
/// (a media range with weight 0 does not count).
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    let essences = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| split_unquoted(value, ','))
        .filter_map(|entry| {
            let mut parts = split_unquoted(entry, ';');
            let essence = parts.next()?.trim();
            parts
                .all(|parameter| {
                    let Some((name, value)) = parameter.split_once('=') else {
                        return true;
                    };
                    !name.trim().eq_ignore_ascii_case("q") || acceptable_weight(value.trim())
                })
                .then_some(essence)
        });
    for essence in essences {
        json |= essence.eq_ignore_ascii_case("application/json");
        sse |= essence.eq_ignore_ascii_case("text/event-stream");
    }
    json && sse
}

/// `value` split at `delimiter` outside quoted strings.
fn split_unquoted(value: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let mut quoted = false;
    let mut escaped = false;
    value.split(move |character| {
        if escaped {
            escaped = false;
        } else if quoted && character == '\\' {
            escaped = true;
        } else if character == '"' {
            quoted = !quoted;
        } else if !quoted && character == delimiter {
            return true;
        }
        false
    })
}

/// Whether a `q` weight keeps its media range: all but an explicit zero (a malformed weight
/// is ignored, as rmcp does).
fn acceptable_weight(quality: &str) -> bool {
    let (whole, fraction) = quality.split_once('.').unwrap_or((quality, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|digit| digit.is_ascii_digit()) {
        return true;
    }
    whole != "0" || fraction.bytes().any(|digit| digit != b'0')
}

/// rmcp's `Content-Type` rule: `application/json`, parameters aside.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let essence = value.split_once(';').map_or(value, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}

/// The version of a request whose `MCP-Protocol-Version` header is absent (2025-03-26, as rmcp
/// takes it) or names a known version before 2026-07-28; `None` for any other (rmcp refuses
/// it, or serves it with header rules of that version).
fn plain_version(headers: &HeaderMap) -> Option<ProtocolVersion> {
    let mut values = headers.get_all(PROTOCOL_VERSION).iter();
    let Some(value) = values.next() else {
        return Some(ProtocolVersion::V_2025_03_26);
    };
    let value = value.to_str().ok()?;
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str() == value)
        .filter(|known| known.as_str() < ProtocolVersion::V_2026_07_28.as_str())
        .cloned()
}

/// The body, or rmcp's answer to one over `limit` bytes or cut short.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, Response> {
    let mut chunks = body.into_data_stream();
    let mut first: Option<Bytes> = None;
    let mut collected: Vec<u8> = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| {
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Failed to read request body: {error}"),
            )
        })?;
        let held = first.as_ref().map_or(0, Bytes::len) + collected.len();
        if chunk.len() > limit.saturating_sub(held) {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {limit} bytes"),
            ));
        }
        match first.take() {
            None if collected.is_empty() => first = Some(chunk),
            None => collected.extend_from_slice(&chunk),
            Some(held) => {
                collected.extend_from_slice(&held);
                collected.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(collected)))
}

/// A plain-text answer, as rmcp gives its refusals.
fn plain(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response
}

/// The JSON answer to a stateless request, as rmcp sends it.
fn json_response(message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => {
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Err(error) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Internal Server Error: serialize json response: {error}"),
        ),
    }
}
