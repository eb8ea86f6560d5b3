//! The HTTP side: the page, a small JSON API, and each turn as a stream of server-sent events.
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /` | the page (`app.js`, `app.css` and `favicon.ico` beside it) |
//! | `GET /api/state` | the model, and whether it is the offline test model |
//! | `GET /api/chats`, `POST /api/chats` | the user's chats (newest first); a new chat |
//! | `GET /api/chats/{chat}` | one chat's title, messages, the calls waiting for approval and the results of the other calls of their step |
//! | `GET /api/chats/{chat}/tools` | every tool, with its state in this chat |
//! | `PUT /api/chats/{chat}/tools/{tool}` | `{"enabled": bool}`: switches a tool in this chat |
//! | `POST /api/chats/{chat}/messages` | `{"text": "..."}`: runs a turn, answered with its events |
//! | `POST /api/chats/{chat}/approvals` | `{"decisions": [{"id": "CALL", "decision": "approve"}, {"id": "CALL", "decision": "deny", "reason": "..."}]}`: answers every call waiting for approval and continues the turn, answered with its events |
//!
//! Every request first passes [`access::check`] (its host, and for a change its origin). The
//! user is the `webchat_user` cookie, signed by the server (see [`identity`](crate::identity)) and
//! set on the first request that comes without a valid one; the user's folder is made with their
//! first chat, within the limits of `--max-users` and `--max-chats` (over them: `429`).

use std::{convert::Infallible, sync::Arc};

use axum::{
    Extension, Json, Router,
    extract::{Path, Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::{get, post, put},
};
use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    AgentError, AgentEvent, Message,
    agent::{ApprovalDecision, ApprovalRequest, ToolResultKind},
    session::SessionError,
};

use crate::{
    access::{self, AllowedHosts},
    chats::{Chat, Refusal, ResultKind, Users, kind_for},
};

/// The cookie that proves who the user is.
const USER_COOKIE: &str = "webchat_user";

const PAGE: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");
const ICON: &str = include_str!("page/favicon.svg");

/// The server's routes over the users' chats, behind the access check.
pub(crate) fn router(users: Arc<Users>, hosts: Arc<AllowedHosts>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/app.js", get(script))
        .route("/app.css", get(style))
        .route("/favicon.ico", get(icon))
        .route("/api/state", get(state))
        .route("/api/chats", get(list_chats).post(create_chat))
        .route("/api/chats/{chat}", get(get_chat))
        .route("/api/chats/{chat}/tools", get(list_tools))
        .route("/api/chats/{chat}/tools/{tool}", put(set_tool))
        .route("/api/chats/{chat}/messages", post(send_message))
        .route("/api/chats/{chat}/approvals", post(answer_approvals))
        .layer(middleware::from_fn_with_state(users.clone(), identify))
        // The last layer added runs first: nothing is looked up for a refused request.
        .layer(middleware::from_fn_with_state(hosts, access::check))
        .with_state(users)
}

/// The id of the user making the request.
#[derive(Clone)]
struct UserId(String);

/// Finds the user from a cookie the server signed, or gives a new user one. A cookie the server
/// did not sign (made up, or from before a new key) counts as none.
async fn identify(State(users): State<Arc<Users>>, mut request: Request, next: Next) -> Response {
    let identity = &users.shared().identity;
    let known = cookie(request.headers(), USER_COOKIE).and_then(|value| identity.verify(&value));
    let (id, new_cookie) = match known {
        Some(id) => (id, None),
        None => match identity.issue() {
            Ok(issued) => (issued.id, Some(issued.cookie)),
            Err(error) => {
                return failure(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("no random bytes for a new user: {error}"),
                );
            }
        },
    };
    request.extensions_mut().insert(UserId(id));
    let mut response = next.run(request).await;
    if let Some(value) = new_cookie {
        let cookie =
            format!("{USER_COOKIE}={value}; Path=/; Max-Age=31536000; HttpOnly; SameSite=Strict");
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

async fn page() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE)
}

async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
}

async fn style() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE)
}

async fn icon() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "image/svg+xml")], ICON)
}

async fn state(State(users): State<Arc<Users>>) -> Json<Value> {
    let shared = users.shared();
    Json(json!({
        "offline": shared.offline,
        "model": shared.model.model_name(),
        "provider": shared.model.provider().as_str(),
    }))
}

async fn list_chats(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
) -> Json<Value> {
    let chats = users.find(&id).map(|user| user.summaries());
    Json(json!({ "chats": chats.unwrap_or_default() }))
}

async fn create_chat(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
) -> Response {
    let made = match users.find_or_create(&id) {
        Ok(user) => user.new_chat(users.shared()).await,
        Err(refusal) => Err(refusal),
    };
    match made {
        Ok((chat, warning)) => (
            StatusCode::CREATED,
            Json(json!({
                "id": chat.id,
                "title": chat.title(),
                "warning": warning,
            })),
        )
            .into_response(),
        Err(Refusal::Limit(message)) => failure(StatusCode::TOO_MANY_REQUESTS, message),
        Err(Refusal::Failed(message)) => failure(StatusCode::INTERNAL_SERVER_ERROR, message),
    }
}

async fn get_chat(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
    Path(chat_id): Path<String>,
) -> Response {
    let Some(chat) = find_chat(&users, &id, &chat_id) else {
        return no_such_chat(&chat_id);
    };
    let mut kinds = chat.kinds();
    let messages: Vec<Value> = chat
        .agent
        .messages()
        .iter()
        .map(|message| message_view(message, &mut kinds))
        .collect();
    let pending: Vec<Value> = chat
        .agent
        .pending_approvals()
        .iter()
        .map(approval_view)
        .collect();
    // While calls wait for approval, the results of the other calls of their step are held
    // beside the conversation (they join it, in call order, once every call is answered).
    let ran: Vec<Value> = chat
        .agent
        .context()
        .pending_calls()
        .iter()
        .filter_map(|pending| pending.result.as_ref())
        .map(|message| message_view(message, &mut kinds))
        .collect();
    Json(json!({
        "id": chat.id,
        "title": chat.title(),
        "messages": messages,
        "pending_approvals": pending,
        "pending_results": ran,
    }))
    .into_response()
}

async fn list_tools(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
    Path(chat_id): Path<String>,
) -> Response {
    let Some(chat) = find_chat(&users, &id, &chat_id) else {
        return no_such_chat(&chat_id);
    };
    // The agent's view: its switches, and which tools are deferred (by their declaration or
    // the agent's budget) and loaded in this chat.
    Json(json!({ "tools": chat.agent.list_tools() })).into_response()
}

/// The body of `PUT /api/chats/{chat}/tools/{tool}`.
#[derive(Deserialize)]
struct Switch {
    enabled: bool,
}

async fn set_tool(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
    Path((chat_id, tool)): Path<(String, String)>,
    Json(switch): Json<Switch>,
) -> Response {
    let Some(chat) = find_chat(&users, &id, &chat_id) else {
        return no_such_chat(&chat_id);
    };
    // The chat changes at once; the user's preference is saved by the session's store.
    let mut warning = match chat.session.set_enabled(&tool, switch.enabled).await {
        Ok(()) => None,
        Err(SessionError::UnknownTool { .. }) => {
            return failure(StatusCode::NOT_FOUND, format!("no tool named `{tool}`"));
        }
        Err(error) => Some(format!(
            "the switch applies to this chat, but it was not saved as your preference: {error}"
        )),
    };
    if let Err(error) = chat.save().await {
        warning = Some(format!("the chat could not be saved: {error}"));
    }
    Json(json!({
        "name": tool,
        "enabled": chat.session.is_tool_enabled(&tool),
        "warning": warning,
    }))
    .into_response()
}

/// The body of `POST /api/chats/{chat}/messages`.
#[derive(Deserialize)]
struct Prompt {
    text: String,
}

async fn send_message(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
    Path(chat_id): Path<String>,
    Json(prompt): Json<Prompt>,
) -> Response {
    let Some(chat) = find_chat(&users, &id, &chat_id) else {
        return no_such_chat(&chat_id);
    };
    let text = prompt.text.trim().to_owned();
    if text.is_empty() {
        return failure(StatusCode::BAD_REQUEST, "the message is empty".to_owned());
    }
    // The agent would refuse the turn too, but as an event of a stream already answered 200;
    // the page is better told plainly.
    if !chat.agent.pending_approvals().is_empty() {
        return failure(
            StatusCode::CONFLICT,
            "tool calls wait for your approval; answer them first".to_owned(),
        );
    }
    chat.name_after(&text);
    let events = chat.agent.stream_chat(text);
    stream_turn(chat, events)
}

/// The body of `POST /api/chats/{chat}/approvals`.
#[derive(Deserialize)]
struct Answers {
    decisions: Vec<Answer>,
}

/// One call's answer: `{"id": "CALL", "decision": "approve"}` or
/// `{"id": "CALL", "decision": "deny", "reason": "..."}`.
#[derive(Deserialize)]
struct Answer {
    id: String,
    #[serde(flatten)]
    decision: ApprovalDecision,
}

async fn answer_approvals(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
    Path(chat_id): Path<String>,
    Json(answers): Json<Answers>,
) -> Response {
    let Some(chat) = find_chat(&users, &id, &chat_id) else {
        return no_such_chat(&chat_id);
    };
    let pending = chat.agent.pending_approvals();
    if pending.is_empty() {
        return failure(
            StatusCode::CONFLICT,
            "no tool call waits for approval in this chat".to_owned(),
        );
    }
    // Checked here so a mismatch is a plain 400, not an error event after a 200.
    let mut waiting: Vec<&str> = pending
        .iter()
        .map(|request| request.call.id.as_str())
        .collect();
    let mut answered: Vec<&str> = answers
        .decisions
        .iter()
        .map(|answer| answer.id.as_str())
        .collect();
    waiting.sort_unstable();
    answered.sort_unstable();
    if waiting != answered {
        return failure(
            StatusCode::BAD_REQUEST,
            format!(
                "answer every call waiting for approval exactly once: {}",
                waiting.join(", ")
            ),
        );
    }
    let decisions = answers
        .decisions
        .into_iter()
        .map(|answer| (answer.id, answer.decision));
    let events = chat.agent.stream_continue_with(decisions);
    stream_turn(chat, events)
}

/// Answers with a turn's events as server-sent events. The turn runs on its own task, so a page
/// that reloads mid-turn does not cancel it: the turn ends, is saved, and the reloaded page
/// shows it.
fn stream_turn(
    chat: Arc<Chat>,
    events: futures::stream::BoxStream<'static, Result<AgentEvent, AgentError>>,
) -> Response {
    let (sender, receiver) = futures::channel::mpsc::unbounded();
    tokio::spawn(run_turn(chat, events, sender));
    Sse::new(receiver.map(Ok::<_, Infallible>))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Runs one turn, forwarding its events to the page while it listens, then saves the chat
/// (with the calls left waiting for approval, if any).
async fn run_turn(
    chat: Arc<Chat>,
    mut events: futures::stream::BoxStream<'static, Result<AgentEvent, AgentError>>,
    sender: futures::channel::mpsc::UnboundedSender<Event>,
) {
    while let Some(event) = events.next().await {
        if let Ok(AgentEvent::ToolResult { id, kind, .. }) = &event {
            chat.record_kind(id, kind_name(*kind));
        }
        let sse = match event {
            Ok(event) => event_view(event),
            Err(error) => Some(sse("error", &json!({ "message": error.to_string() }))),
        };
        // A page that went away misses the rest; the turn goes on regardless.
        if let Some(sse) = sse {
            let _ = sender.unbounded_send(sse);
        }
    }
    if let Err(error) = chat.save().await {
        let message = format!("the chat could not be saved: {error}");
        let _ = sender.unbounded_send(sse("error", &json!({ "message": message })));
    }
}

/// An agent event as the page reads it.
fn event_view(event: AgentEvent) -> Option<Event> {
    let event = match event {
        AgentEvent::TextDelta(delta) => sse("text", &json!({ "delta": delta })),
        AgentEvent::ToolCallStarted(start) => sse(
            "tool_call_started",
            &json!({ "index": start.index, "id": start.id, "name": start.name }),
        ),
        AgentEvent::ToolCallDelta { index, arguments } => sse(
            "tool_call_delta",
            &json!({ "index": index, "arguments": arguments }),
        ),
        AgentEvent::ToolCallFinished { call, arguments } => sse(
            "tool_call_finished",
            &json!({
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "valid": arguments.is_some(),
            }),
        ),
        AgentEvent::ToolResult {
            id,
            name,
            content,
            is_error,
            kind,
        } => sse(
            "tool_result",
            &json!({
                "id": id,
                "name": name,
                "content": content,
                "is_error": is_error,
                "kind": kind_name(kind),
            }),
        ),
        AgentEvent::ApprovalRequested(request) => {
            sse("approval_requested", &approval_view(&request))
        }
        AgentEvent::StepFinished {
            step,
            finish_reason,
            tool_calls,
        } => sse(
            "step_finished",
            &json!({ "step": step, "finish_reason": finish_reason, "tool_calls": tool_calls }),
        ),
        AgentEvent::Usage(usage) => sse("usage", &json!(usage)),
        AgentEvent::ToolSearch {
            query,
            matches,
            loaded,
        } => sse(
            "tool_search",
            &json!({ "query": query, "matches": matches, "loaded": loaded }),
        ),
        AgentEvent::Done(reply) => sse(
            "done",
            &json!({
                "text": reply.text,
                "steps": reply.steps,
                "tool_calls": reply.tool_calls,
                "usage": reply.usage,
                "finish_reason": reply.finish_reason,
                "pending_approvals": reply
                    .pending_approvals
                    .iter()
                    .map(approval_view)
                    .collect::<Vec<_>>(),
            }),
        ),
        // Progress reports, and events the agent may add later, are not shown.
        _ => return None,
    };
    Some(event)
}

/// A call waiting for approval as the page shows it: the call's id, tool and arguments as the
/// model wrote them.
fn approval_view(request: &ApprovalRequest) -> Value {
    json!({
        "id": request.call.id,
        "name": request.call.name,
        "arguments": request.call.arguments,
    })
}

/// How a tool call went, as the page styles its card.
fn kind_name(kind: ToolResultKind) -> &'static str {
    match kind {
        ToolResultKind::Success => "success",
        ToolResultKind::Error => "error",
        ToolResultKind::InvalidArguments => "invalid_arguments",
        ToolResultKind::RetryRequested => "retry_requested",
        ToolResultKind::Denied => "denied",
        ToolResultKind::NotRun => "not_run",
        // Kinds the agent may add later are failures of some sort.
        _ => "error",
    }
}

fn sse(name: &str, data: &Value) -> Event {
    Event::default().event(name).data(data.to_string())
}

/// A saved message as the page redraws it, with `is_error` and `kind` (how the call went) on
/// every tool result. `kinds` are the chat's recorded kinds not yet matched to a message, in
/// the order of the messages; the one matched here is taken out.
fn message_view(message: &Message, kinds: &mut Vec<ResultKind>) -> Value {
    let mut view = json!(message);
    if let (
        Message::Tool {
            tool_call_id,
            is_error,
            ..
        },
        Value::Object(fields),
    ) = (message, &mut view)
    {
        fields.insert("is_error".to_owned(), (*is_error).into());
        fields.insert(
            "kind".to_owned(),
            kind_for(kinds, tool_call_id, *is_error).into(),
        );
    }
    view
}

fn find_chat(users: &Users, user: &str, chat_id: &str) -> Option<Arc<Chat>> {
    users.find(user).and_then(|user| user.chat(chat_id))
}

fn no_such_chat(chat_id: &str) -> Response {
    failure(StatusCode::NOT_FOUND, format!("no chat `{chat_id}`"))
}

fn failure(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}
