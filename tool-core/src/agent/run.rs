//! The tool-call loop: one turn of an [`Agent`](super::Agent).

use std::sync::Arc;

use futures::{StreamExt as _, channel::mpsc::UnboundedSender};
use serde_json::Value;
use tracing::Instrument as _;

use super::{AgentError, AgentEvent, AgentResponse, Shared};
use crate::{
    context::ToolContext,
    execute::{ExecuteError, show},
    model::{
        ChatRequest, FinishReason, Message, ModelEvent, ProviderError, RequestTools, ToolCall,
        Usage,
    },
    registry::RegistrySnapshot,
    tool::JsonObject,
};

/// Where a streamed turn sends its events; `None` for [`Agent::chat`](super::Agent::chat).
pub(super) type Events<'a> = Option<&'a UnboundedSender<Result<AgentEvent, AgentError>>>;

/// The result given for each call the model made at the last allowed step.
pub(crate) const STEP_LIMIT_RESULT: &str =
    "Error: this call was not run because the agent reached its step limit";

/// The result given, when a turn starts, to a call left without one (a session saved while its
/// tools were running).
pub(crate) const INTERRUPTED_RESULT: &str = "Error: the result of this call was not recorded (the session was saved or stopped while it ran)";

/// Runs one turn: appends the user's text, then asks the model and runs its tool calls until
/// it answers or the step limit is reached.
pub(super) async fn turn(
    shared: Arc<Shared>,
    text: String,
    events: Events<'_>,
) -> Result<AgentResponse, AgentError> {
    let span = tracing::info_span!(
        "agent.turn",
        model = shared.model.model_name(),
        provider = %shared.model.provider(),
        steps = tracing::field::Empty,
    );
    run_turn(&shared, text, events).instrument(span).await
}

async fn run_turn(
    shared: &Shared,
    text: String,
    events: Events<'_>,
) -> Result<AgentResponse, AgentError> {
    let _turn = shared.turn.clone().lock_owned().await;
    let context = &shared.context;
    close_dangling_calls(context);
    let mut rollback = Rollback {
        context: context.clone(),
        len: context.message_count(),
        armed: true,
    };
    context.push_message(Message::user(text));
    let mut usage: Option<Usage> = None;
    let mut tool_calls = 0;
    for step in 1..=shared.max_steps {
        tracing::Span::current().record("steps", step);
        let snapshot = shared.snapshot();
        let tools = if snapshot.is_empty() {
            RequestTools::default()
        } else {
            RequestTools::from_snapshot(snapshot.clone())
        };
        let request = ChatRequest::new(request_messages(context))
            .with_tools(tools)
            .with_settings(shared.settings.clone());
        let answer = model_call(shared, request, step, events).await?;
        if let Some(counts) = answer.usage {
            usage = Some(match usage {
                Some(total) => Usage::new(
                    total.input_tokens + counts.input_tokens,
                    total.output_tokens + counts.output_tokens,
                ),
                None => counts,
            });
        }
        let calls = answer.tool_calls;
        context.push_message(Message::Assistant {
            content: answer.content.clone(),
            tool_calls: calls.clone(),
        });
        if calls.is_empty() {
            rollback.armed = false;
            emit(
                events,
                AgentEvent::StepFinished {
                    step,
                    finish_reason: answer.finish_reason.clone(),
                    tool_calls: 0,
                },
            );
            return Ok(AgentResponse {
                text: answer.content,
                steps: step,
                tool_calls,
                usage,
                finish_reason: answer.finish_reason,
            });
        }
        if step == shared.max_steps {
            // Nothing could read the results of these calls, so they are not run; each still
            // gets a result, so the conversation stays valid for the next turn.
            let results: Vec<Message> = calls
                .iter()
                .map(|call| {
                    emit(
                        events,
                        AgentEvent::ToolResult {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            content: STEP_LIMIT_RESULT.to_owned(),
                            is_error: true,
                        },
                    );
                    Message::tool_result(&call.id, &call.name, STEP_LIMIT_RESULT)
                })
                .collect();
            context.extend_messages(results);
            rollback.armed = false;
            emit(
                events,
                AgentEvent::StepFinished {
                    step,
                    finish_reason: answer.finish_reason,
                    tool_calls: 0,
                },
            );
            tracing::warn!(steps = step, "the turn reached the step limit");
            return Err(AgentError::MaxSteps { steps: step });
        }
        let results = run_calls(shared, &snapshot, &calls, events).await;
        tool_calls += calls.len();
        context.extend_messages(results);
        emit(
            events,
            AgentEvent::StepFinished {
                step,
                finish_reason: answer.finish_reason,
                tool_calls: calls.len(),
            },
        );
    }
    // `max_steps` is at least 1, so the loop always returns; this keeps the compiler content.
    Err(AgentError::MaxSteps {
        steps: shared.max_steps,
    })
}

/// Undoes a turn that did not finish (a failed model request, or a dropped stream): the
/// conversation goes back to its length before the turn.
struct Rollback {
    context: ToolContext,
    len: usize,
    armed: bool,
}

impl Drop for Rollback {
    fn drop(&mut self) {
        if self.armed {
            self.context.truncate_messages(self.len);
        }
    }
}

/// What the model answered at one step.
struct Answer {
    content: String,
    tool_calls: Vec<ToolCall>,
    usage: Option<Usage>,
    finish_reason: FinishReason,
}

async fn model_call(
    shared: &Shared,
    request: ChatRequest,
    step: usize,
    events: Events<'_>,
) -> Result<Answer, ProviderError> {
    let span = tracing::info_span!(
        "model.call",
        step,
        model = shared.model.model_name(),
        messages = request.messages.len(),
        tools = request.tools.schemas().len(),
    );
    async move {
        let Some(sender) = events else {
            let response = shared.model.chat(request).await?;
            let (content, tool_calls) = split(response.message);
            return Ok(Answer {
                content,
                tool_calls,
                usage: response.usage,
                finish_reason: response.finish_reason,
            });
        };
        let events = Some(sender);
        let mut stream = shared.model.stream(request).await?;
        let mut finished: Vec<String> = Vec::new();
        let mut usage = None;
        // How far a stream that ends without `Done` got, for its error.
        let mut received: u64 = 0;
        let mut open_calls: Vec<(usize, String)> = Vec::new();
        while let Some(event) = stream.next().await {
            received += 1;
            match event? {
                ModelEvent::TextDelta(text) => emit(events, AgentEvent::TextDelta(text)),
                ModelEvent::ToolCallStart { index, id, name } => {
                    open_calls.push((index, name.clone()));
                    emit(events, AgentEvent::ToolCallStarted { index, id, name });
                }
                ModelEvent::ToolCallDelta { index, arguments } => {
                    emit(events, AgentEvent::ToolCallDelta { index, arguments });
                }
                ModelEvent::ToolCallEnd { index, call } => {
                    open_calls.retain(|(open, _)| *open != index);
                    finished.push(call.id.clone());
                    emit(events, finished_event(call));
                }
                ModelEvent::Usage(counts) => {
                    usage = Some(counts);
                    emit(events, AgentEvent::Usage(counts));
                }
                ModelEvent::Done {
                    message,
                    finish_reason,
                } => {
                    let (content, tool_calls) = split(message);
                    for call in &tool_calls {
                        if !finished.contains(&call.id) {
                            emit(events, finished_event(call.clone()));
                        }
                    }
                    return Ok(Answer {
                        content,
                        tool_calls,
                        usage,
                        finish_reason,
                    });
                }
                #[allow(unreachable_patterns)]
                _ => {}
            }
        }
        Err(ProviderError::Truncated {
            provider: shared.model.provider(),
            bytes: None,
            events: received,
            incomplete_call: open_calls.pop().map(|(_, name)| name),
            cause: None,
        })
    }
    .instrument(span)
    .await
}

fn finished_event(call: ToolCall) -> AgentEvent {
    let arguments = parse_arguments(&call.arguments).ok();
    AgentEvent::ToolCallFinished { call, arguments }
}

fn split(message: Message) -> (String, Vec<ToolCall>) {
    match message {
        Message::Assistant {
            content,
            tool_calls,
        } => (content, tool_calls),
        other => (other.content().to_owned(), Vec::new()),
    }
}

/// Runs the calls of one step and returns one tool message per call, in call order.
///
/// Calls run concurrently (at most `tool_concurrency` at once); a call of a tool marked
/// `sequential` runs alone, after the calls before it and before the calls after it.
async fn run_calls(
    shared: &Shared,
    snapshot: &RegistrySnapshot,
    calls: &[ToolCall],
    events: Events<'_>,
) -> Vec<Message> {
    let limit = if shared.sequential_tools {
        1
    } else {
        shared.tool_concurrency
    };
    let is_sequential = |call: &ToolCall| {
        snapshot
            .metadata(&call.name)
            .is_some_and(|metadata| metadata.sequential)
    };
    let mut messages = Vec::with_capacity(calls.len());
    let mut start = 0;
    while start < calls.len() {
        let end = if is_sequential(&calls[start]) {
            start + 1
        } else {
            calls[start..]
                .iter()
                .position(&is_sequential)
                .map_or(calls.len(), |offset| start + offset)
        };
        // Bounded and in call order; a plain loop rather than `buffered`, whose closure type
        // trips the compiler's `Send` check over higher-ranked lifetimes.
        let batch = &calls[start..end];
        let mut pending = futures::stream::FuturesOrdered::new();
        let mut next = 0;
        loop {
            while pending.len() < limit && next < batch.len() {
                pending.push_back(run_call(snapshot, &batch[next]));
                next += 1;
            }
            let Some((call, outcome)) = pending.next().await else {
                break;
            };
            let (content, is_error) = match outcome {
                Ok(text) => (text, false),
                Err(text) => (text, true),
            };
            if events.is_some() {
                emit(
                    events,
                    AgentEvent::ToolResult {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        content: content.clone(),
                        is_error,
                    },
                );
            }
            messages.push(Message::tool_result(&call.id, &call.name, content));
        }
        start = end;
    }
    messages
}

/// Runs one call through the snapshot: the result text, or the error text the model sees.
async fn run_call<'c>(
    snapshot: &RegistrySnapshot,
    call: &'c ToolCall,
) -> (&'c ToolCall, Result<String, String>) {
    let span = tracing::info_span!("tool.call", tool = %call.name, id = %call.id);
    let outcome = async {
        if snapshot.metadata(&call.name).is_none() {
            let available = snapshot.enabled_names();
            tracing::warn!(
                tool = %call.name,
                ?available,
                "the model called a tool that does not exist"
            );
            let error = ExecuteError::NotFound {
                name: call.name.clone(),
            };
            return Err(with_available(error, &available));
        }
        if !snapshot.is_enabled(&call.name) {
            tracing::warn!(tool = %call.name, "the model called a disabled tool");
            let error = ExecuteError::Disabled {
                name: call.name.clone(),
            };
            return Err(with_available(error, &snapshot.enabled_names()));
        }
        let args = parse_arguments(&call.arguments).map_err(|message| {
            ExecuteError::InvalidArguments {
                name: call.name.clone(),
                message,
            }
            .to_model_string()
        })?;
        snapshot
            .try_execute(&call.name, args)
            .await
            .map_err(|error| {
                tracing::debug!(%error, "tool call failed");
                error.to_model_string()
            })
    }
    .instrument(span)
    .await;
    (call, outcome)
}

fn with_available(error: ExecuteError, available: &[&str]) -> String {
    let mut text = error.to_model_string();
    if available.is_empty() {
        text.push_str(". No tools are available.");
    } else {
        text.push_str(". Available tools: ");
        text.push_str(&available.join(", "));
        text.push('.');
    }
    text
}

/// Parses a call's arguments text into an object. Empty text and `null` mean no arguments (some
/// providers send them for tools without parameters).
pub(crate) fn parse_arguments(text: &str) -> Result<JsonObject, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(JsonObject::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(args)) => Ok(args),
        Ok(Value::Null) => Ok(JsonObject::new()),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, got {}; send an object with the tool's parameters",
            show(&other)
        )),
        Err(error) => Err(format!(
            "the arguments are not valid JSON ({error}); send a JSON object with the tool's parameters"
        )),
    }
}

/// The system prompt (when there is one) and the conversation.
fn request_messages(context: &ToolContext) -> Vec<Message> {
    let session = context.session_context();
    let mut messages = Vec::with_capacity(session.messages.len() + 1);
    if !session.system_prompt.is_empty() {
        messages.push(Message::system(session.system_prompt));
    }
    messages.extend(session.messages);
    messages
}

/// Gives a result to every tool call that has none (after a session saved mid-turn is loaded),
/// right after the results its step did record.
fn close_dangling_calls(context: &ToolContext) {
    let session = context.session_context();
    let messages = &session.messages;
    let mut repaired = Vec::with_capacity(messages.len());
    let mut changed = false;
    let mut position = 0;
    while position < messages.len() {
        let message = &messages[position];
        repaired.push(message.clone());
        position += 1;
        let Message::Assistant { tool_calls, .. } = message else {
            continue;
        };
        if tool_calls.is_empty() {
            continue;
        }
        let mut answered: Vec<&str> = Vec::new();
        while let Some(Message::Tool { tool_call_id, .. }) = messages.get(position) {
            answered.push(tool_call_id);
            repaired.push(messages[position].clone());
            position += 1;
        }
        for call in tool_calls {
            if !answered.contains(&call.id.as_str()) {
                changed = true;
                repaired.push(Message::tool_result(
                    &call.id,
                    &call.name,
                    INTERRUPTED_RESULT,
                ));
            }
        }
    }
    if changed {
        context.replace(crate::context::SessionContext {
            messages: repaired,
            ..session
        });
    }
}

fn emit(events: Events<'_>, event: AgentEvent) {
    if let Some(sender) = events {
        // A closed channel means the stream was dropped; the turn is being cancelled anyway.
        let _ = sender.unbounded_send(Ok(event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_or_say_what_to_fix() {
        assert_eq!(parse_arguments("").unwrap(), JsonObject::new());
        assert_eq!(parse_arguments(" null ").unwrap(), JsonObject::new());
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap()["a"], 1);
        let error = parse_arguments("[1, 2]").unwrap_err();
        assert!(
            error.contains("must be a JSON object, got [1,2]"),
            "{error}"
        );
        let error = parse_arguments(r#"{"a": "#).unwrap_err();
        assert!(error.contains("not valid JSON"), "{error}");
    }

    #[test]
    fn dangling_calls_get_a_result_after_the_recorded_ones() {
        let context = ToolContext::default();
        context.extend_messages([
            Message::user("go"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall::new("a", "x", "{}"), ToolCall::new("b", "y", "{}")],
            },
            Message::tool_result("a", "x", "done"),
        ]);
        close_dangling_calls(&context);
        let messages = context.session_context().messages;
        assert_eq!(messages.len(), 4);
        assert_eq!(
            messages[3],
            Message::tool_result("b", "y", INTERRUPTED_RESULT)
        );
        close_dangling_calls(&context);
        assert_eq!(context.message_count(), 4);
    }
}
