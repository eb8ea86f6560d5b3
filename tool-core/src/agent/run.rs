//! The tool-call loop: one turn of an [`Agent`](super::Agent).

use std::{collections::HashMap, sync::Arc};

use futures::{
    StreamExt as _,
    channel::{mpsc::UnboundedSender, oneshot},
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::{
    AgentError, AgentEvent, AgentResponse, Shared, ToolResultKind, TurnOptions,
    approval::{ApprovalDecision, ApprovalRequest, denied_result},
    output::{self, Judged},
    search,
    step::{Prepared, StepFailures, UniqueIds},
};
use crate::{
    call::{CallContext, Deps},
    context::{PendingCall, ToolContext},
    execute::{ExecuteError, parse_arguments},
    message::{FinishReason, Message, ToolCall, Usage},
    model::{ChatRequest, ModelEvent, ProviderError, ProviderToolSearch, ToolChoice},
    registry::RegistrySnapshot,
    schema::FormatOptions,
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

/// Where a turn that stopped for approval had got to: its continuation is the same turn, and
/// goes on from there.
#[derive(Clone, Debug)]
pub(super) struct Paused {
    number: u64,
    steps: usize,
    tool_calls: usize,
    retried_calls: usize,
    usage: Option<Usage>,
}

/// What every call of a turn shares.
struct Turn<'a> {
    shared: &'a Shared,
    events: Events<'a>,
    number: u64,
    deps: Deps,
    cancellation: CancellationToken,
    /// Per tool, the steps in a row in which a call failed with invalid arguments or asked for
    /// a retry, and the last such error.
    failures: HashMap<String, (u32, String)>,
    tool_calls: usize,
    retried_calls: usize,
    /// The tools left out of this turn's requests because the provider cannot accept them.
    skipped: Vec<String>,
}

/// Runs one turn: appends the user's text (or applies the approval decisions), then asks the
/// model and runs its tool calls until it answers, a call needs approval, or the step limit is
/// reached.
#[cfg(not(feature = "otel"))]
pub(super) async fn turn(
    shared: Arc<Shared>,
    input: Input,
    options: TurnOptions,
    events: Events<'_>,
) -> Result<AgentResponse, AgentError> {
    let span = tracing::info_span!(
        "agent.turn",
        model = shared.model.model_name(),
        provider = %shared.model.provider(),
        steps = tracing::field::Empty,
    );
    run_turn(shared, input, options, events)
        .instrument(span)
        .await
}

/// Runs one turn (see above) in an `invoke_agent` span, which records its usage and how it
/// ended.
#[cfg(feature = "otel")]
pub(super) async fn turn(
    shared: Arc<Shared>,
    input: Input,
    options: TurnOptions,
    events: Events<'_>,
) -> Result<AgentResponse, AgentError> {
    let telemetry = &shared.telemetry;
    let span = crate::otel::invoke_agent_span(
        telemetry,
        shared.model.provider(),
        shared.model.model_name(),
    );
    if let Input::User(text) = &input {
        if telemetry.captures_content() && !span.is_disabled() {
            crate::otel::agent_input(&span, telemetry, text, &shared.snapshot().definitions());
        }
    }
    let result = run_turn(shared.clone(), input, options, events)
        .instrument(span.clone())
        .await;
    match &result {
        Ok(response) => crate::otel::agent_answered(
            &span,
            telemetry,
            response.usage,
            &response.finish_reason,
            &response.text,
        ),
        Err(error) => crate::otel::record_error(&span, &agent_error_type(error), error),
    }
    result
}

/// `error.type` of a turn that failed.
#[cfg(feature = "otel")]
fn agent_error_type(error: &AgentError) -> std::borrow::Cow<'static, str> {
    let name = match error {
        AgentError::Model(error) => return provider_error_type(error),
        AgentError::MaxSteps { .. } => "max_steps",
        AgentError::Load(_) => "load_context",
        AgentError::ToolRetriesExhausted { .. } => "tool_retries_exhausted",
        AgentError::ApprovalsPending { .. } => "approvals_pending",
        AgentError::AwaitingApproval { .. } => "awaiting_approval",
        AgentError::UnsupportedTools(_) => "unsupported_tools",
        AgentError::OutputRetriesExhausted { .. } => "output_retries_exhausted",
        AgentError::InvalidDecisions { .. } => "invalid_decisions",
    };
    name.into()
}

/// `error.type` of a model call that failed: the HTTP status when the provider answered with
/// one, else what went wrong.
#[cfg(feature = "otel")]
fn provider_error_type(error: &ProviderError) -> std::borrow::Cow<'static, str> {
    let name = match error {
        ProviderError::Api {
            status: Some(status),
            ..
        }
        | ProviderError::Unavailable { status, .. } => return status.to_string().into(),
        ProviderError::Api { .. } => "api_error",
        ProviderError::Transport { .. } => "transport",
        ProviderError::Protocol { .. } => "protocol",
        ProviderError::Truncated { .. } => "truncated",
        ProviderError::Config(_) => "config",
        _ => "_OTHER",
    };
    name.into()
}

// One turn is one loop over the steps of the data flow (request, stream, approvals, calls,
// results); it reads top to bottom, and each step is a call into a function of its own.
#[allow(clippy::too_many_lines)]
async fn run_turn(
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
    // A continuation after approval decisions is the same turn: its number, step and counts
    // go on from where it stopped.
    let resumed = match input {
        Input::Decisions(_) => super::lock(&shared.paused).clone(),
        Input::User(_) => {
            shared.search.start_turn();
            None
        }
    };
    let mut turn = Turn {
        shared,
        events,
        number: resumed
            .as_ref()
            .map_or_else(|| shared.next_turn(), |paused| paused.number),
        deps,
        cancellation,
        failures: HashMap::new(),
        tool_calls: resumed.as_ref().map_or(0, |paused| paused.tool_calls),
        retried_calls: resumed.as_ref().map_or(0, |paused| paused.retried_calls),
        skipped: Vec::new(),
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
            // Nothing waits: whatever an earlier turn left for its continuation is over.
            *super::lock(&shared.paused) = None;
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
            let step = resumed.as_ref().map_or(0, |paused| paused.steps);
            let results = turn.resolve(&snapshot, pending, decided, step).await;
            context.extend_messages(results);
            if let Err(error) = turn.check_retries() {
                rollback.armed = false;
                return Err(error);
            }
        }
    }
    let mut usage: Option<Usage> = resumed.as_ref().and_then(|paused| paused.usage);
    let first_step = resumed.as_ref().map_or(1, |paused| paused.steps + 1);
    for step in first_step..=shared.max_steps {
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
        let snapshot = turn.supported(snapshot)?;
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
        let tools = output::offer(options.output.as_deref(), tools);
        let output = options.output.as_deref();
        let request = ChatRequest::new(output::instruct(output, request_messages(context)))
            .tools(tools)
            .tool_choice(output::choice(output, choice))
            .settings(shared.settings.clone())
            .response_format(output::response_format(output));
        let answer = model_call(shared, request, step, events).await?;
        if let Some(counts) = answer.usage {
            *usage.get_or_insert_default() += counts;
        }
        let calls = answer.tool_calls;
        context.push_message(Message::Assistant {
            content: answer.content.clone(),
            tool_calls: calls.clone(),
            provider_metadata: answer.provider_metadata.clone(),
        });
        let (calls, outputs) = output::split(options.output.as_deref(), calls);
        for event in shared.search.load_found(&snapshot, &answer.tool_searches) {
            emit(events, event);
        }
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
            let judged = output::judge(
                options.output.as_deref(),
                context,
                &|id, name| turn.call_context(&ToolCall::new(id, name, ""), step),
                &answer.content,
                &outputs,
            );
            if let Judged::Again = judged {
                step_finished(events, step, answer.finish_reason.clone(), 0);
                continue;
            }
            rollback.armed = false;
            step_finished(events, step, answer.finish_reason.clone(), 0);
            if let Judged::Failed(error) = judged {
                return Err(error);
            }
            return Ok(response((turn.tool_calls, turn.retried_calls), Vec::new()));
        }
        if step == shared.max_steps {
            // Nothing could read the results of these calls, so they are not run; each still
            // gets a result, so the conversation stays valid for the next turn.
            let results: Vec<Message> = calls
                .iter()
                .chain(&outputs)
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
        let prepared: Vec<Prepared> = calls
            .iter()
            .map(|call| Prepared::new(&snapshot, call.clone()))
            .collect();
        let needs_approval: Vec<bool> = prepared
            .iter()
            .map(|prepared| needs_approval(shared, &snapshot, prepared))
            .collect();
        // Every call's "finished" event reaches the consumer before any call runs.
        flush(events).await;
        if needs_approval.iter().any(|needs| *needs) {
            let mut requests = Vec::new();
            let mut ready = Vec::new();
            for (prepared, needs) in prepared.into_iter().zip(&needs_approval) {
                if *needs {
                    let request = ApprovalRequest {
                        arguments: prepared.arguments.ok(),
                        call: prepared.call,
                    };
                    emit(events, AgentEvent::ApprovalRequested(request.clone()));
                    requests.push(request);
                } else {
                    ready.push(prepared);
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
                .chain(output::not_judged(&outputs))
                .collect();
            context.set_pending_calls(pending);
            *super::lock(&shared.paused) = Some(Paused {
                number: turn.number,
                steps: step,
                tool_calls: turn.tool_calls,
                retried_calls: turn.retried_calls,
                usage,
            });
            rollback.armed = false;
            step_finished(events, step, answer.finish_reason.clone(), ready.len());
            tracing::info!(
                calls = requests.len(),
                "the turn waits for the application's approval"
            );
            return Ok(response((turn.tool_calls, turn.retried_calls), requests));
        }
        let outcomes = turn.run_calls(&snapshot, &prepared, step).await;
        context.extend_messages(outcomes.into_iter().map(|(message, _)| message));
        step_finished(events, step, answer.finish_reason.clone(), calls.len());
        if let Err(error) = turn.check_retries() {
            // Every call is answered: the conversation stays as it is.
            rollback.armed = false;
            return Err(error);
        }
        if !outputs.is_empty() {
            match output::judge(
                options.output.as_deref(),
                context,
                &|id, name| turn.call_context(&ToolCall::new(id, name, ""), step),
                &answer.content,
                &outputs,
            ) {
                Judged::Done => {
                    rollback.armed = false;
                    return Ok(response((turn.tool_calls, turn.retried_calls), Vec::new()));
                }
                Judged::Again => {}
                Judged::Failed(error) => {
                    rollback.armed = false;
                    return Err(error);
                }
            }
        }
    }
    // Reached when the last step's output was invalid (a typed run); other turns return in
    // the loop, since `max_steps` is at least 1. Every call is answered: the conversation stays.
    rollback.armed = false;
    Err(AgentError::MaxSteps {
        steps: shared.max_steps,
    })
}

/// Whether a call needs the application's approval, decided on the arguments its tool will get.
/// Arguments that are not a JSON object need none: the call only gets an error.
fn needs_approval(shared: &Shared, snapshot: &RegistrySnapshot, prepared: &Prepared) -> bool {
    prepared.arguments.as_ref().is_ok_and(|arguments| {
        shared.approval.requires(
            &prepared.call,
            Some(arguments),
            snapshot.metadata(&prepared.call.name),
        )
    })
}

/// The decision for each call that waits for one, in the pending calls' order; an error when
/// a decision names no waiting call, a call gets two, or a waiting call has none.
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
        if decided.contains_key(&id) {
            // Two answers for one call: neither can be taken as the application's word.
            return Err(AgentError::InvalidDecisions {
                message: format!("more than one decision for {id}"),
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
    /// The snapshot a request may offer: an error naming the tools the model's provider cannot
    /// accept, or, when the agent skips them, the snapshot without them (and an event naming
    /// each the first time), so no tool goes missing from a request unnoticed.
    fn supported(
        &mut self,
        snapshot: Arc<RegistrySnapshot>,
    ) -> Result<Arc<RegistrySnapshot>, AgentError> {
        // The options the request path converts with (`RegistrySnapshot::provider_json`).
        let Err(mut error) =
            snapshot.check(self.shared.model.provider(), &FormatOptions::default())
        else {
            return Ok(snapshot);
        };
        if !self.shared.skip_unsupported_tools {
            tracing::error!(%error, "the provider cannot accept some tools");
            return Err(AgentError::UnsupportedTools(error));
        }
        error
            .errors
            .retain(|failed| !self.skipped.contains(&failed.tool));
        if !error.errors.is_empty() {
            tracing::warn!(%error, "tools left out of this turn");
            self.skipped
                .extend(error.errors.iter().map(|failed| failed.tool.clone()));
            emit(self.events, AgentEvent::ToolsSkipped(error));
        }
        let skipped = &self.skipped;
        Ok(Arc::new(self.shared.registry.snapshot_with(
            |name, _, _| snapshot.is_enabled(name) && !skipped.iter().any(|tool| tool == name),
        )))
    }

    /// Runs the approved calls (made at `step`), answers the denied ones, and returns every
    /// pending call's result in call order.
    async fn resolve(
        &mut self,
        snapshot: &RegistrySnapshot,
        pending: Vec<PendingCall>,
        mut decided: HashMap<String, ApprovalDecision>,
        step: usize,
    ) -> Vec<Message> {
        // The arguments are read as they were for the decision: from the call's text, by the
        // same tool.
        let approved: Vec<Prepared> = pending
            .iter()
            .filter(|call| {
                call.needs_approval
                    && matches!(decided.get(&call.call.id), Some(ApprovalDecision::Approve))
            })
            .map(|call| Prepared::new(snapshot, call.call.clone()))
            .collect();
        let mut ran: HashMap<String, Message> = self
            .run_calls(snapshot, &approved, step)
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
                #[cfg(feature = "otel")]
                {
                    let span = crate::otel::execute_tool_span(
                        &self.shared.telemetry,
                        &call.name,
                        &call.id,
                        snapshot.description(&call.name),
                        &call.arguments,
                    );
                    crate::otel::tool_finished(
                        &span,
                        &self.shared.telemetry,
                        &call.name,
                        std::time::Duration::ZERO,
                        Err(("denied", &text)),
                    );
                }
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
        calls: &[Prepared],
        step: usize,
    ) -> Vec<(Message, ToolResultKind)> {
        let shared = self.shared;
        let limit = if shared.sequential_tools {
            1
        } else {
            shared.tool_concurrency
        };
        let is_sequential = |prepared: &Prepared| {
            snapshot
                .metadata(&prepared.call.name)
                .is_some_and(|metadata| metadata.sequential)
        };
        let mut step_failures = StepFailures::default();
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
                    let prepared = &batch[next];
                    pending.push_back(run_call(
                        shared,
                        snapshot,
                        prepared,
                        self.call_context(&prepared.call, step),
                        shared.search.refusal(snapshot, &prepared.call.name),
                    ));
                    next += 1;
                }
                let Some((prepared, outcome)) = pending.next().await else {
                    break;
                };
                let call = &prepared.call;
                if !prepared.coercions.is_empty() {
                    emit(
                        self.events,
                        AgentEvent::ArgumentsCoerced {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            coercions: prepared.coercions.clone(),
                        },
                    );
                }
                let (content, kind) = match outcome {
                    Ok(text) => (text, ToolResultKind::Success),
                    Err((text, kind)) => (text, kind),
                };
                self.tool_calls += 1;
                if step_failures.record(call, &content, kind) {
                    self.retried_calls += 1;
                }
                emit_result(self.events, call, &content, kind);
                let message = if kind == ToolResultKind::Success {
                    shared
                        .search
                        .with_references(Message::tool_result(&call.id, &call.name, content))
                } else {
                    Message::tool_error(&call.id, &call.name, content)
                };
                messages.push((message, kind));
            }
            start = end;
        }
        self.count(step_failures);
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

    /// Counts a step against its tools' retry budgets: one failure for each tool that failed in
    /// it, however many of its calls did (the model sees the errors only after the step, so the
    /// next step is its first chance to correct them); a tool whose calls all succeeded starts
    /// again from nothing.
    fn count(&mut self, step: StepFailures) {
        for (tool, last_error) in step.failed {
            let entry = self.failures.entry(tool).or_insert((0, String::new()));
            entry.0 += 1;
            entry.1 = last_error;
        }
        for tool in step.succeeded {
            self.failures.remove(&tool);
        }
    }

    /// Ends the turn when a tool failed in more steps in a row than its budget allows.
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
    /// The searches the provider ran on its side.
    tool_searches: Vec<ProviderToolSearch>,
    /// Provider data of the answer that belongs to none of its calls.
    provider_metadata: Option<serde_json::Value>,
}

#[cfg(not(feature = "otel"))]
async fn model_call(
    shared: &Shared,
    request: ChatRequest,
    step: usize,
    events: Events<'_>,
) -> Result<Answer, ProviderError> {
    let span = tracing::info_span!(
        "model.call",
        step = step,
        model = shared.model.model_name(),
        messages = request.messages.len(),
        tools = request.tools.definitions().len(),
    );
    ask(shared, request, events).instrument(span).await
}

/// Asks the model (see above) in a `chat {model}` span, which records the answer or the
/// error, and the call's metrics.
#[cfg(feature = "otel")]
async fn model_call(
    shared: &Shared,
    request: ChatRequest,
    _step: usize,
    events: Events<'_>,
) -> Result<Answer, ProviderError> {
    let telemetry = &shared.telemetry;
    let tools = if telemetry.captures_content() {
        request.tools.definitions().to_vec()
    } else {
        Vec::new()
    };
    let call = crate::otel::ChatCall::start(
        telemetry,
        &crate::otel::ChatRequestInfo {
            provider: shared.model.provider(),
            model: shared.model.model_name(),
            stream: events.is_some(),
            temperature: request.settings.temperature,
            max_tokens: request.settings.max_tokens,
            messages: &request.messages,
            tools: &tools,
        },
    );
    let span = call.span().clone();
    let result = ask(shared, request, events).instrument(span).await;
    match &result {
        Ok(answer) => call.answered(
            &answer.finish_reason,
            answer.usage,
            &answer.content,
            &answer.tool_calls,
        ),
        Err(error) => call.failed(&provider_error_type(error), error),
    }
    result
}

/// Asks the model, streaming its answer to `events` when there are any.
async fn ask(
    shared: &Shared,
    request: ChatRequest,
    events: Events<'_>,
) -> Result<Answer, ProviderError> {
    let Some(sender) = events else {
        let response = shared.model.chat(request).await?;
        let (content, mut tool_calls, provider_metadata) = split(response.message);
        UniqueIds::default().assign(&mut tool_calls);
        return Ok(Answer {
            content,
            tool_calls,
            usage: response.usage,
            finish_reason: response.finish_reason,
            tool_searches: response.tool_searches,
            provider_metadata,
        });
    };
    let events = Some(sender);
    #[cfg(feature = "otel")]
    let requested = std::time::Instant::now();
    let mut stream = shared.model.stream(request).await?;
    let mut finished: Vec<String> = Vec::new();
    let mut usage = None;
    let mut tool_searches = Vec::new();
    // How far a stream that ends without `Done` got, for its error.
    let mut received: u64 = 0;
    let mut open_calls: Vec<(usize, String)> = Vec::new();
    // The calls of the answer with ids of their own, the same in every event of a call.
    let mut ids = UniqueIds::default();
    while let Some(event) = stream.next().await {
        #[cfg(feature = "otel")]
        if received == 0 {
            crate::otel::first_chunk(requested.elapsed());
        }
        received += 1;
        match event? {
            ModelEvent::TextDelta(text) => emit(events, AgentEvent::TextDelta(text)),
            ModelEvent::ToolCallStarted(mut start) => {
                start.id = ids.id(start.index, &start.id);
                open_calls.push((start.index, start.name.clone()));
                emit(events, AgentEvent::ToolCallStarted(start));
            }
            ModelEvent::ToolCallDelta { index, arguments } => {
                emit(events, AgentEvent::ToolCallDelta { index, arguments });
            }
            ModelEvent::ToolCallFinished { index, mut call } => {
                call.id = ids.id(index, &call.id);
                open_calls.retain(|(open, _)| *open != index);
                finished.push(call.id.clone());
                emit(events, finished_event(call));
            }
            ModelEvent::Usage(counts) => {
                usage = Some(counts);
                emit(events, AgentEvent::Usage(counts));
            }
            ModelEvent::ToolSearch(search) => tool_searches.push(search),
            ModelEvent::Done {
                message,
                finish_reason,
            } => {
                let (content, mut tool_calls, provider_metadata) = split(message);
                ids.assign(&mut tool_calls);
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
                    tool_searches,
                    provider_metadata,
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

fn split(message: Message) -> (String, Vec<ToolCall>, Option<serde_json::Value>) {
    match message {
        Message::Assistant {
            content,
            tool_calls,
            provider_metadata,
        } => (content, tool_calls, provider_metadata),
        other => (other.content().to_owned(), Vec::new(), None),
    }
}

/// Runs one call through the snapshot: the result text, or the error text the model sees and
/// what kind of failure it was.
async fn run_call<'c>(
    shared: &Shared,
    snapshot: &RegistrySnapshot,
    prepared: &'c Prepared,
    context: CallContext,
    refusal: Option<String>,
) -> (&'c Prepared, Result<String, (String, ToolResultKind)>) {
    let call = &prepared.call;
    #[cfg(not(feature = "otel"))]
    let span = tracing::info_span!("tool.call", tool = %call.name, id = %call.id);
    #[cfg(feature = "otel")]
    let span = crate::otel::execute_tool_span(
        &shared.telemetry,
        &call.name,
        &call.id,
        snapshot.description(&call.name),
        &call.arguments,
    );
    #[cfg(feature = "otel")]
    let (started, tool_span) = (std::time::Instant::now(), span.clone());
    let tool_timeout = shared.tool_timeout;
    let outcome = async {
        if let Some(text) = refusal {
            tracing::warn!(tool = %call.name, "the model called a deferred tool it did not search for");
            return Err((text, ToolResultKind::Error, "search_required"));
        }
        let unavailable = if snapshot.metadata(&call.name).is_none() {
            tracing::warn!(tool = %call.name, "the model called a tool that does not exist");
            Some(ExecuteError::NotFound {
                name: call.name.clone(),
            })
        } else if !snapshot.is_enabled(&call.name) {
            tracing::warn!(tool = %call.name, "the model called a disabled tool");
            Some(ExecuteError::Disabled {
                name: call.name.clone(),
            })
        } else {
            None
        };
        if let Some(error) = unavailable {
            return Err((
                search::not_available(&error, snapshot, &call.name),
                ToolResultKind::Error,
                error_type(&error),
            ));
        }
        let arguments = prepared.arguments.as_ref().map_err(|message| {
            let error = ExecuteError::InvalidArguments {
                name: call.name.clone(),
                message: message.clone(),
            };
            (
                error.to_model_string(),
                ToolResultKind::InvalidArguments,
                error_type(&error),
            )
        })?;
        let result = if snapshot.is_lenient(&call.name) {
            // The arguments the approval decided on, drifted types already read as the schema
            // says.
            snapshot
                .try_execute_call(&call.name, arguments.clone(), context, tool_timeout)
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
            (error.to_model_string(), kind, error_type(&error))
        })
    }
    .instrument(span)
    .await;
    #[cfg(feature = "otel")]
    crate::otel::tool_finished(
        &tool_span,
        &shared.telemetry,
        &call.name,
        started.elapsed(),
        match &outcome {
            Ok(result) => Ok(result),
            Err((text, _, error_type)) => Err((error_type, text)),
        },
    );
    let outcome = outcome.map_err(|(text, kind, _)| (text, kind));
    (prepared, outcome)
}

/// What went wrong with a call, as the `error.type` of its span says it (low cardinality: one
/// value per kind of failure).
fn error_type(error: &ExecuteError) -> &'static str {
    match error {
        ExecuteError::NotFound { .. } => "tool_not_found",
        ExecuteError::Disabled { .. } => "tool_disabled",
        ExecuteError::InvalidArguments { .. } => "invalid_arguments",
        ExecuteError::Failed { .. } => "tool_error",
        ExecuteError::Panicked { .. } => "panic",
        ExecuteError::TimedOut { .. } => "timeout",
        ExecuteError::RetryRequested { .. } => "retry",
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
            Message::assistant_with_calls(
                "",
                vec![ToolCall::new("a", "x", "{}"), ToolCall::new("b", "y", "{}")],
            ),
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
