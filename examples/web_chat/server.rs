//! The HTTP side: the page, a small JSON API, and each turn as a stream of server-sent events.
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /` | the page (`app.js` and `app.css` beside it) |
//! | `GET /api/state` | the model, and whether it is the offline test model |
//! | `GET /api/chats`, `POST /api/chats` | the user's chats (newest first); a new chat |
//! | `GET /api/chats/{chat}` | one chat's title, messages, the calls waiting for approval and the results of the other calls of their step |
//! | `GET /api/chats/{chat}/tools` | every tool, with its state in this chat |
//! | `PUT /api/chats/{chat}/tools/{tool}` | `{"enabled": bool}`: switches a tool in this chat |
//! | `POST /api/chats/{chat}/messages` | `{"text": "..."}`: runs a turn, answered with its events |
//! | `POST /api/chats/{chat}/approvals` | `{"decisions": [{"id": "CALL", "decision": "approve"}, {"id": "CALL", "decision": "deny", "reason": "..."}]}`: answers every call waiting for approval and continues the turn, answered with its events |
//!
//! The user is the `webchat_user` cookie, set on the first request that comes without one.

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

use crate::chats::{Chat, User, Users, is_id, new_id};

/// The cookie that holds the user's id.
const USER_COOKIE: &str = "webchat_user";

const PAGE: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// The server's routes over the users' chats.
pub(crate) fn router(users: Arc<Users>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/app.js", get(script))
        .route("/app.css", get(style))
        .route("/api/state", get(state))
        .route("/api/chats", get(list_chats).post(create_chat))
        .route("/api/chats/{chat}", get(get_chat))
        .route("/api/chats/{chat}/tools", get(list_tools))
        .route("/api/chats/{chat}/tools/{tool}", put(set_tool))
        .route("/api/chats/{chat}/messages", post(send_message))
        .route("/api/chats/{chat}/approvals", post(answer_approvals))
        .layer(middleware::from_fn(identify))
        .with_state(users)
}

/// The id of the user making the request.
#[derive(Clone)]
struct UserId(String);

/// Finds the user from the cookie, or gives a new user one.
async fn identify(mut request: Request, next: Next) -> Response {
    let known = cookie(request.headers(), USER_COOKIE).filter(|id| is_id(id));
    let (id, new) = match known {
        Some(id) => (id, false),
        None => (new_id(), true),
    };
    request.extensions_mut().insert(UserId(id.clone()));
    let mut response = next.run(request).await;
    if new {
        let cookie =
            format!("{USER_COOKIE}={id}; Path=/; Max-Age=31536000; HttpOnly; SameSite=Strict");
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
    Json(json!({ "chats": users.user(&id).summaries() }))
}

async fn create_chat(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
) -> Response {
    let user = users.user(&id);
    match user.new_chat(users.shared()).await {
        Ok((chat, warning)) => (
            StatusCode::CREATED,
            Json(json!({
                "id": chat.id,
                "title": chat.title(),
                "warning": warning,
            })),
        )
            .into_response(),
        Err(error) => failure(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the chat could not be saved: {error}"),
        ),
    }
}

async fn get_chat(
    State(users): State<Arc<Users>>,
    Extension(UserId(id)): Extension<UserId>,
    Path(chat_id): Path<String>,
) -> Response {
    let Some(chat) = find_chat(&users.user(&id), &chat_id) else {
        return no_such_chat(&chat_id);
    };
    let messages: Vec<Value> = chat.agent.messages().iter().map(message_view).collect();
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
        .map(message_view)
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
    let Some(chat) = find_chat(&users.user(&id), &chat_id) else {
        return no_such_chat(&chat_id);
    };
    Json(json!({ "tools": chat.session.list_tools() })).into_response()
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
    let Some(chat) = find_chat(&users.user(&id), &chat_id) else {
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
    let Some(chat) = find_chat(&users.user(&id), &chat_id) else {
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
    let Some(chat) = find_chat(&users.user(&id), &chat_id) else {
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

/// A saved message as the page redraws it, with `is_error` on every tool result.
fn message_view(message: &Message) -> Value {
    let mut view = json!(message);
    if let (Message::Tool { is_error, .. }, Value::Object(fields)) = (message, &mut view) {
        fields.insert("is_error".to_owned(), (*is_error).into());
    }
    view
}

fn find_chat(user: &User, chat_id: &str) -> Option<Arc<Chat>> {
    user.chat(chat_id)
}

fn no_such_chat(chat_id: &str) -> Response {
    failure(StatusCode::NOT_FOUND, format!("no chat `{chat_id}`"))
}

fn failure(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}
