//! The tool-call loop: one turn of an [`Agent`](super::Agent).

use std::{collections::HashMap, sync::Arc, time::Duration};

use futures::{
    StreamExt as _,
    channel::{mpsc::UnboundedSender, oneshot},
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::{
    AgentError, AgentEvent, AgentResponse, Shared, ToolResultKind, TurnOptions,
    approval::{ApprovalDecision, ApprovalRequest, denied_result},
    search,
};
use crate::{
    call::{CallContext, Deps},
    context::{PendingCall, ToolContext},
    execute::{ExecuteError, parse_arguments},
    message::{FinishReason, Message, ToolCall, Usage},
    model::{ChatRequest, ModelEvent, ProviderError, ToolChoice},
    registry::RegistrySnapshot,
    schema::Coercion,
    tool::JsonObject,
};

/// What a streamed turn sends to its stream.
pub(super) enum Signal {
    /// An event (or the error that ends the turn) for the consumer.
    Event(Result<AgentEvent, AgentError>),
    /// Answered once the consumer has taken every event sent before it.
    Flush(oneshot::Sender<()>),
}

/// Where a streamed turn sends its events; `None` for [`Agent::chat`](super::Agent::chat).
pub(super) type Events<'a> = Option<&'a UnboundedSender<Signal>>;

/// The result given for each call the model made at the last allowed step.
pub(crate) const STEP_LIMIT_RESULT: &str =
    "Error: this call was not run because the agent reached its step limit";

/// The result given, when a turn starts, to a call left without one (a session saved while its
/// tools were running).
pub(crate) const INTERRUPTED_RESULT: &str = "Error: the result of this call was not recorded (the session was saved or stopped while it ran)";

/// What starts a turn.
pub(super) enum Input {
    /// The user said something.
    User(String),
    /// The application decided the calls that waited for approval.
    Decisions(Vec<(String, ApprovalDecision)>),
}

/// What every call of a turn shares.
struct Turn<'a> {
    shared: &'a Shared,
    events: Events<'a>,
    number: u64,
    deps: Deps,
    cancellation: CancellationToken,
    /// Consecutive invalid-argument or retry-requested failures per tool.
    failures: HashMap<String, (u32, String)>,
    tool_calls: usize,
    retried_calls: usize,
}

/// Runs one turn: appends the user's text (or applies the approval decisions), then asks the
/// model and runs its tool calls until it answers, a call needs approval, or the step limit is
/// reached.
// One turn is one loop over the steps of the data flow (request, stream, approvals, calls,
// results); it reads top to bottom, and each step is a call into a function of its own.
#[allow(clippy::too_many_lines)]
#[tracing::instrument(
    name = "agent.turn",
    skip_all,
    fields(
        model = shared.model.model_name(),
        provider = %shared.model.provider(),
        steps = tracing::field::Empty,
    )
)]
pub(super) async fn turn(
    shared: Arc<Shared>,
    input: Input,
    options: TurnOptions,
    events: Events<'_>,
) -> Result<AgentResponse, AgentError> {
    let shared = &*shared;
    let _turn = shared.turn.clone().lock_owned().await;
    let context = &shared.context;
    let pending = context.pending_calls();
    let mut rollback = Rollback {
        context: context.clone(),
        len: context.message_count(),
        pending: pending.clone(),
        armed: true,
    };
    let cancellation = CancellationToken::new();
    // Fired when the turn ends or its future is dropped (a dropped stream): running tools that
    // watch it stop.
    let _cancel_on_drop = cancellation.clone().drop_guard();
    let mut deps = shared.deps.clone();
    if let Some(turn_deps) = &options.deps {
        deps.extend(turn_deps);
    }
    let mut turn = Turn {
        shared,
        events,
        number: shared.next_turn(),
        deps,
        cancellation,
        failures: HashMap::new(),
        tool_calls: 0,
        retried_calls: 0,
    };
    // A forced tool choice applies to the turn's first model call; a turn that goes on after
    // approval decisions has made it already.
    let fresh_turn = matches!(input, Input::User(_));
    match input {
        Input::User(text) => {
            if !pending.is_empty() {
                rollback.armed = false;
                return Err(AgentError::ApprovalsPending {
                    call_ids: pending
                        .iter()
                        .filter(|call| call.needs_approval)
                        .map(|call| call.call.id.clone())
                        .collect(),
                });
            }
            close_dangling_calls(context);
            rollback.len = context.message_count();
            context.push_message(Message::user(text));
        }
        Input::Decisions(decisions) => {
            let decided = match match_decisions(&pending, decisions) {
                Ok(decided) => decided,
                Err(error) => {
                    rollback.armed = false;
                    return Err(error);
                }
            };
            context.set_pending_calls(Vec::new());
            let (snapshot, _) = shared.search.prepare(shared.snapshot());
            let results = turn.resolve(&snapshot, pending, decided).await;
            context.extend_messages(results);
            if let Err(error) = turn.check_retries() {
                rollback.armed = false;
                return Err(error);
            }
        }
    }
    let mut usage: Option<Usage> = None;
    for step in 1..=shared.max_steps {
        tracing::Span::current().record("steps", step);
        let snapshot = match &options.active_tools {
            None => shared.snapshot(),
            Some(active) => {
                let base = shared.snapshot();
                Arc::new(shared.registry.snapshot_with(|name, _, _| {
                    base.is_enabled(name) && active.iter().any(|tool| tool == name)
                }))
            }
        };
        let choice = if (step == 1 && fresh_turn) || shared.tool_choice_every_step {
            options
                .tool_choice
                .clone()
                .unwrap_or_else(|| shared.tool_choice.clone())
        } else {
            ToolChoice::Auto
        };
        shared.search.load_chosen(&snapshot, &choice);
        let (snapshot, tools) = shared.search.prepare(snapshot);
        let request = ChatRequest::new(request_messages(context))
            .tools(tools)
            .tool_choice(choice)
            .settings(shared.settings.clone());
        let answer = model_call(shared, request, step, events).await?;
        if let Some(counts) = answer.usage {
            *usage.get_or_insert_default() += counts;
        }
        let calls = answer.tool_calls;
        context.push_message(Message::Assistant {
            content: answer.content.clone(),
            tool_calls: calls.clone(),
        });
        for event in shared.search.load_called(&snapshot, &calls) {
            emit(events, event);
        }
        let response = |(tool_calls, retried_calls), pending_approvals| AgentResponse {
            text: answer.content.clone(),
            steps: step,
            tool_calls,
            retried_calls,
            usage,
            finish_reason: answer.finish_reason.clone(),
            pending_approvals,
        };
        if calls.is_empty() {
            rollback.armed = false;
            step_finished(events, step, answer.finish_reason.clone(), 0);
            return Ok(response((turn.tool_calls, turn.retried_calls), Vec::new()));
        }
        if step == shared.max_steps {
            // Nothing could read the results of these calls, so they are not run; each still
            // gets a result, so the conversation stays valid for the next turn.
            let results: Vec<Message> = calls
                .iter()
                .map(|call| {
                    emit_result(events, call, STEP_LIMIT_RESULT, ToolResultKind::NotRun);
                    Message::tool_error(&call.id, &call.name, STEP_LIMIT_RESULT)
                })
                .collect();
            context.extend_messages(results);
            rollback.armed = false;
            step_finished(events, step, answer.finish_reason, 0);
            tracing::warn!(steps = step, "the turn reached the step limit");
            return Err(AgentError::MaxSteps { steps: step });
        }
        let parsed: Vec<Option<JsonObject>> = calls
            .iter()
            .map(|call| parse_arguments(&call.arguments).ok())
            .collect();
        let needs_approval: Vec<bool> = calls
            .iter()
            .zip(&parsed)
            .map(|(call, arguments)| {
                shared
                    .approval
                    .requires(call, arguments.as_ref(), snapshot.metadata(&call.name))
            })
            .collect();
        // Every call's "finished" event reaches the consumer before any call runs.
        flush(events).await;
        if needs_approval.iter().any(|needs| *needs) {
            let mut requests = Vec::new();
            let mut ready = Vec::new();
            for ((call, arguments), needs) in calls.iter().zip(parsed).zip(&needs_approval) {
                if *needs {
                    let request = ApprovalRequest {
                        call: call.clone(),
                        arguments,
                    };
                    emit(events, AgentEvent::ApprovalRequested(request.clone()));
                    requests.push(request);
                } else {
                    ready.push(call.clone());
                }
            }
            let outcomes = turn.run_calls(&snapshot, &ready, step).await;
            let mut results: HashMap<String, Message> = outcomes
                .into_iter()
                .map(|(message, _)| (tool_call_id(&message).to_owned(), message))
                .collect();
            let pending = calls
                .iter()
                .zip(&needs_approval)
                .map(|(call, needs)| PendingCall {
                    call: call.clone(),
                    needs_approval: *needs,
                    result: results.remove(&call.id),
                })
                .collect();
            context.set_pending_calls(pending);
            rollback.armed = false;
            step_finished(events, step, answer.finish_reason.clone(), ready.len());
            tracing::info!(
                calls = requests.len(),
                "the turn waits for the application's approval"
            );
            return Ok(response((turn.tool_calls, turn.retried_calls), requests));
        }
        let outcomes = turn.run_calls(&snapshot, &calls, step).await;
        context.extend_messages(outcomes.into_iter().map(|(message, _)| message));
        step_finished(events, step, answer.finish_reason, calls.len());
        if let Err(error) = turn.check_retries() {
            // Every call is answered: the conversation stays as it is.
            rollback.armed = false;
            return Err(error);
        }
    }
    // `max_steps` is at least 1, so the loop always returns; this keeps the compiler content.
    Err(AgentError::MaxSteps {
        steps: shared.max_steps,
    })
}

/// The decision for each call that waits for one, in the pending calls' order; an error when
/// a decision names no waiting call or a waiting call has none.
fn match_decisions(
    pending: &[PendingCall],
    decisions: Vec<(String, ApprovalDecision)>,
) -> Result<HashMap<String, ApprovalDecision>, AgentError> {
    let waiting: Vec<&str> = pending
        .iter()
        .filter(|call| call.needs_approval)
        .map(|call| call.call.id.as_str())
        .collect();
    if waiting.is_empty() {
        return Err(AgentError::InvalidDecisions {
            message: "no call is waiting for approval".to_owned(),
        });
    }
    let mut decided = HashMap::new();
    for (id, decision) in decisions {
        if !waiting.contains(&id.as_str()) {
            return Err(AgentError::InvalidDecisions {
                message: format!(
                    "no call `{id}` is waiting for approval; waiting: {}",
                    waiting.join(", ")
                ),
            });
        }
        decided.insert(id, decision);
    }
    let missing: Vec<&str> = waiting
        .iter()
        .copied()
        .filter(|id| !decided.contains_key(*id))
        .collect();
    if !missing.is_empty() {
        return Err(AgentError::InvalidDecisions {
            message: format!("no decision for {}", missing.join(", ")),
        });
    }
    Ok(decided)
}

fn tool_call_id(message: &Message) -> &str {
    match message {
        Message::Tool { tool_call_id, .. } => tool_call_id,
        _ => "",
    }
}

impl Turn<'_> {
    /// Runs the approved calls, answers the denied ones, and returns every pending call's
    /// result in call order.
    async fn resolve(
        &mut self,
        snapshot: &RegistrySnapshot,
        pending: Vec<PendingCall>,
        mut decided: HashMap<String, ApprovalDecision>,
    ) -> Vec<Message> {
        let approved: Vec<ToolCall> = pending
            .iter()
            .filter(|call| {
                call.needs_approval
                    && matches!(decided.get(&call.call.id), Some(ApprovalDecision::Approve))
            })
            .map(|call| call.call.clone())
            .collect();
        let mut ran: HashMap<String, Message> = self
            .run_calls(snapshot, &approved, 0)
            .await
            .into_iter()
            .map(|(message, _)| (tool_call_id(&message).to_owned(), message))
            .collect();
        pending
            .into_iter()
            .map(|pending| {
                let call = pending.call;
                if let Some(result) = pending.result {
                    return result;
                }
                if let Some(result) = ran.remove(&call.id) {
                    return result;
                }
                let reason = match decided.remove(&call.id) {
                    Some(ApprovalDecision::Deny { reason }) => reason,
                    _ => None,
                };
                self.tool_calls += 1;
                let text = denied_result(&call.name, reason.as_deref());
                tracing::info!(tool = %call.name, id = %call.id, "the application denied a call");
                emit_result(self.events, &call, &text, ToolResultKind::Denied);
                Message::tool_error(&call.id, &call.name, text)
            })
            .collect()
    }

    /// Runs the calls of one step and returns one tool message per call, in call order, with
    /// how each went.
    ///
    /// Calls run concurrently (at most `tool_concurrency` at once); a call of a tool marked
    /// `sequential` runs alone, after the calls before it and before the calls after it.
    async fn run_calls(
        &mut self,
        snapshot: &RegistrySnapshot,
        calls: &[ToolCall],
        step: usize,
    ) -> Vec<(Message, ToolResultKind)> {
        let shared = self.shared;
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
                    let call = &batch[next];
                    pending.push_back(run_call(
                        snapshot,
                        call,
                        self.call_context(call, step),
                        shared.tool_timeout,
                    ));
                    next += 1;
                }
                let Some((call, outcome, coercions)) = pending.next().await else {
                    break;
                };
                if !coercions.is_empty() {
                    emit(
                        self.events,
                        AgentEvent::ArgumentsCoerced {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            coercions,
                        },
                    );
                }
                let (content, kind) = match outcome {
                    Ok(text) => (text, ToolResultKind::Success),
                    Err((text, kind)) => (text, kind),
                };
                self.tool_calls += 1;
                self.count(call, &content, kind);
                emit_result(self.events, call, &content, kind);
                let message = if kind == ToolResultKind::Success {
                    Message::tool_result(&call.id, &call.name, content)
                } else {
                    Message::tool_error(&call.id, &call.name, content)
                };
                messages.push((message, kind));
            }
            start = end;
        }
        for event in shared.search.take_events() {
            emit(self.events, event);
        }
        messages
    }

    /// The context handed to the tool of `call`.
    fn call_context(&self, call: &ToolCall, step: usize) -> CallContext {
        let shared = self.shared;
        let mut context = CallContext::new(&call.id, &call.name)
            .with_step(step)
            .with_turn(self.number)
            .with_messages(shared.context.session_context().messages)
            .with_conversation(shared.context.clone())
            .with_deps(self.deps.clone())
            .with_cancellation(self.cancellation.clone());
        if let Some(sender) = self.events {
            let sender = sender.clone();
            context = context.with_progress(move |progress| {
                let _ =
                    sender.unbounded_send(Signal::Event(Ok(AgentEvent::ToolProgress(progress))));
            });
        }
        context
    }

    /// Counts a call's outcome against its tool's retry budget.
    fn count(&mut self, call: &ToolCall, content: &str, kind: ToolResultKind) {
        if matches!(
            kind,
            ToolResultKind::InvalidArguments | ToolResultKind::RetryRequested
        ) {
            let entry = self
                .failures
                .entry(call.name.clone())
                .or_insert((0, String::new()));
            entry.0 += 1;
            content.clone_into(&mut entry.1);
            self.retried_calls += 1;
        } else if kind == ToolResultKind::Success {
            self.failures.remove(&call.name);
        }
    }

    /// Ends the turn when a tool failed more times in a row than its budget allows.
    fn check_retries(&self) -> Result<(), AgentError> {
        for (tool, (failures, last_error)) in &self.failures {
            let budget = self
                .shared
                .snapshot()
                .metadata(tool)
                .and_then(|metadata| metadata.max_retries)
                .unwrap_or(self.shared.max_tool_retries);
            if *failures > budget {
                tracing::warn!(%tool, failures, "a tool used up its retries");
                return Err(AgentError::ToolRetriesExhausted {
                    tool: tool.clone(),
                    failures: *failures,
                    last_error: last_error.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Undoes a turn that did not finish (a failed model request, or a dropped stream): the
/// conversation goes back to its length before the turn, and the calls waiting for approval
/// come back.
struct Rollback {
    context: ToolContext,
    len: usize,
    pending: Vec<PendingCall>,
    armed: bool,
}

impl Drop for Rollback {
    fn drop(&mut self) {
        if self.armed {
            self.context.truncate_messages(self.len);
            self.context
                .set_pending_calls(std::mem::take(&mut self.pending));
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

#[tracing::instrument(
    name = "model.call",
    skip_all,
    fields(
        step = step,
        model = shared.model.model_name(),
        messages = request.messages.len(),
        tools = request.tools.definitions().len(),
    )
)]
async fn model_call(
    shared: &Shared,
    request: ChatRequest,
    step: usize,
    events: Events<'_>,
) -> Result<Answer, ProviderError> {
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
            ModelEvent::ToolCallStarted(start) => {
                open_calls.push((start.index, start.name.clone()));
                emit(events, AgentEvent::ToolCallStarted(start));
            }
            ModelEvent::ToolCallDelta { index, arguments } => {
                emit(events, AgentEvent::ToolCallDelta { index, arguments });
            }
            ModelEvent::ToolCallFinished { index, call } => {
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

/// Runs one call through the snapshot: the result text, or the error text the model sees and
/// what kind of failure it was.
async fn run_call<'c>(
    snapshot: &RegistrySnapshot,
    call: &'c ToolCall,
    context: CallContext,
    tool_timeout: Option<Duration>,
) -> (
    &'c ToolCall,
    Result<String, (String, ToolResultKind)>,
    Vec<Coercion>,
) {
    let span = tracing::info_span!("tool.call", tool = %call.name, id = %call.id);
    let mut coercions = Vec::new();
    let outcome = async {
        if snapshot.metadata(&call.name).is_none() {
            let available = search::available(snapshot);
            tracing::warn!(
                tool = %call.name,
                ?available,
                "the model called a tool that does not exist"
            );
            let error = ExecuteError::NotFound {
                name: call.name.clone(),
            };
            return Err((with_available(&error, &available), ToolResultKind::Error));
        }
        if !snapshot.is_enabled(&call.name) {
            tracing::warn!(tool = %call.name, "the model called a disabled tool");
            let error = ExecuteError::Disabled {
                name: call.name.clone(),
            };
            return Err((
                with_available(&error, &search::available(snapshot)),
                ToolResultKind::Error,
            ));
        }
        let result = if snapshot.is_lenient(&call.name) {
            let mut args = parse_arguments(&call.arguments).map_err(|message| {
                let error = ExecuteError::InvalidArguments {
                    name: call.name.clone(),
                    message,
                };
                (error.to_model_string(), ToolResultKind::InvalidArguments)
            })?;
            // A lenient tool's drifted types, read here so the application sees them; the
            // registry's own pass then finds nothing left to change.
            coercions = snapshot.coerce_arguments(&call.name, &mut args);
            snapshot
                .try_execute_call(&call.name, args, context, tool_timeout)
                .await
        } else {
            // The text as the provider sent it: a typed tool reads it with no object between.
            snapshot
                .try_execute_text_call(&call.name, &call.arguments, context, tool_timeout)
                .await
        };
        result.map_err(|error| {
            let kind = match &error {
                ExecuteError::InvalidArguments { .. } => ToolResultKind::InvalidArguments,
                ExecuteError::RetryRequested { .. } => ToolResultKind::RetryRequested,
                _ => ToolResultKind::Error,
            };
            tracing::debug!(%error, ?kind, "tool call failed");
            (error.to_model_string(), kind)
        })
    }
    .instrument(span)
    .await;
    (call, outcome, coercions)
}

fn with_available(error: &ExecuteError, available: &[&str]) -> String {
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
                repaired.push(Message::tool_error(
                    &call.id,
                    &call.name,
                    INTERRUPTED_RESULT,
                ));
            }
        }
    }
    if changed {
        context.replace(crate::context::Conversation {
            messages: repaired,
            ..session
        });
    }
}

fn emit(events: Events<'_>, event: AgentEvent) {
    if let Some(sender) = events {
        // A closed channel means the stream was dropped; the turn is being cancelled anyway.
        let _ = sender.unbounded_send(Signal::Event(Ok(event)));
    }
}

/// Emits the end of step `step`, which ran `tool_calls` of the model's calls.
fn step_finished(events: Events<'_>, step: usize, finish_reason: FinishReason, tool_calls: usize) {
    emit(
        events,
        AgentEvent::StepFinished {
            step,
            finish_reason,
            tool_calls,
        },
    );
}

/// Emits a call's result.
fn emit_result(events: Events<'_>, call: &ToolCall, content: &str, kind: ToolResultKind) {
    if events.is_some() {
        emit(
            events,
            AgentEvent::ToolResult {
                id: call.id.clone(),
                name: call.name.clone(),
                content: content.to_owned(),
                is_error: kind != ToolResultKind::Success,
                kind,
            },
        );
    }
}

/// Waits until the consumer of a streamed turn has taken every event sent so far.
async fn flush(events: Events<'_>) {
    if let Some(sender) = events {
        let (done, taken) = oneshot::channel();
        if sender.unbounded_send(Signal::Flush(done)).is_ok() {
            // An error means the stream is gone; the turn is being cancelled anyway.
            let _ = taken.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Message::tool_error("b", "y", INTERRUPTED_RESULT)
        );
        close_dangling_calls(&context);
        assert_eq!(context.message_count(), 4);
    }
}
