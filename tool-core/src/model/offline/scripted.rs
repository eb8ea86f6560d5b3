//! [`ScriptedModel`]: plays back a list of responses and records the requests it received.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError},
};

use futures::StreamExt as _;

use crate::{
    message::{FinishReason, Message, SharedStr, ToolCall, Usage},
    model::{
        ChatModel, ChatRequest, ChatResponse, ModelEvent, ModelStream, ProviderError, ToolCallStart,
    },
    schema::Provider,
};

/// A model that plays back a script: each request gets the next [`ScriptedResponse`]. It records
/// every request, so a test can check what an agent sent (the messages, whether any tools were
/// offered).
///
/// Clones share the script and the recorded requests: keep a clone, give the other to the agent.
///
/// ```
/// use tool_core::model::{ChatModel, ChatRequest, Message, ScriptedModel, ScriptedResponse};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([
///     ScriptedResponse::tool_call("call_1", "add", r#"{"a": 2, "b": 3}"#),
///     ScriptedResponse::text("5"),
/// ]);
/// let first = model.chat(ChatRequest::new(vec![Message::user("2 + 3?")])).await.unwrap();
/// assert!(matches!(first.message, Message::Assistant { ref tool_calls, .. } if tool_calls.len() == 1));
/// assert_eq!(model.requests().len(), 1);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct ScriptedModel {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    script: Mutex<VecDeque<ScriptedResponse>>,
    requests: Mutex<Vec<ChatRequest>>,
    provider: Option<Provider>,
}

/// One scripted answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum ScriptedResponse {
    /// An assistant message (text, tool calls, or both).
    Reply {
        /// The text.
        text: String,
        /// The tool calls, in order.
        tool_calls: Vec<ToolCall>,
        /// The token counts to report.
        usage: Option<Usage>,
    },
    /// The request fails with this error (before any event when streaming).
    Error(ProviderError),
    /// When streaming, the reply's events are sent up to (not including) the end of the answer,
    /// then the stream fails with `error`; without streaming, the request fails with `error`.
    FailMidStream {
        /// The text sent before the failure.
        text: String,
        /// The tool calls begun before the failure.
        tool_calls: Vec<ToolCall>,
        /// The error.
        error: ProviderError,
    },
}

impl ScriptedResponse {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Reply {
            text: text.into(),
            tool_calls: Vec::new(),
            usage: None,
        }
    }

    /// One tool call with the given id, tool name and JSON arguments text (which may be invalid
    /// JSON, to test how the agent copes).
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<SharedStr>,
    ) -> Self {
        Self::tool_calls([ToolCall::new(id, name, arguments)])
    }

    /// Several tool calls in one answer.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self::Reply {
            text: String::new(),
            tool_calls: calls.into_iter().collect(),
            usage: None,
        }
    }

    /// A failed request.
    pub fn error(error: ProviderError) -> Self {
        Self::Error(error)
    }

    /// Sets the text of a reply (a reply can carry text and tool calls).
    #[must_use]
    pub fn with_text(mut self, new_text: impl Into<String>) -> Self {
        if let Self::Reply { text, .. } | Self::FailMidStream { text, .. } = &mut self {
            *text = new_text.into();
        }
        self
    }

    /// Sets the token counts a reply reports.
    #[must_use]
    pub fn usage(mut self, counts: Usage) -> Self {
        if let Self::Reply { usage, .. } = &mut self {
            *usage = Some(counts);
        }
        self
    }
}

/// The error of a [`ScriptedModel`] asked for more answers than its script holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the scripted model has no more responses")]
#[non_exhaustive]
pub struct ScriptExhausted;

impl ScriptedModel {
    /// A model that answers with these responses, in order, then fails with
    /// [`ScriptExhausted`] (as [`ProviderError::Other`]).
    pub fn new(script: impl IntoIterator<Item = ScriptedResponse>) -> Self {
        Self::with_provider(Provider::OpenAi, script)
    }

    /// Like [`new`](Self::new), claiming to speak `provider`'s tool format.
    pub fn with_provider(
        provider: Provider,
        script: impl IntoIterator<Item = ScriptedResponse>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                script: Mutex::new(script.into_iter().collect()),
                requests: Mutex::new(Vec::new()),
                provider: Some(provider),
            }),
        }
    }

    /// Appends a response to the script.
    pub fn push(&self, response: ScriptedResponse) {
        lock(&self.inner.script).push_back(response);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.inner.requests).clone()
    }

    /// The last request received.
    pub fn last_request(&self) -> Option<ChatRequest> {
        lock(&self.inner.requests).last().cloned()
    }

    /// How many responses are left.
    pub fn remaining(&self) -> usize {
        lock(&self.inner.script).len()
    }

    fn next(&self, request: ChatRequest) -> Result<ScriptedResponse, ProviderError> {
        lock(&self.inner.requests).push(request);
        lock(&self.inner.script)
            .pop_front()
            .ok_or_else(|| ProviderError::Other(Box::new(ScriptExhausted)))
    }
}

#[async_trait::async_trait]
impl ChatModel for ScriptedModel {
    fn provider(&self) -> Provider {
        self.inner.provider.unwrap_or(Provider::OpenAi)
    }

    fn model_name(&self) -> &'static str {
        "scripted"
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        match self.next(request)? {
            ScriptedResponse::Reply {
                text,
                tool_calls,
                usage,
            } => {
                let finish_reason = finish_reason(&tool_calls);
                let mut response = ChatResponse::new(
                    Message::assistant_with_calls(text, tool_calls),
                    finish_reason,
                );
                response.usage = usage;
                Ok(response)
            }
            ScriptedResponse::Error(error) | ScriptedResponse::FailMidStream { error, .. } => {
                Err(error)
            }
        }
    }

    async fn stream(&self, request: ChatRequest) -> Result<ModelStream, ProviderError> {
        match self.next(request)? {
            ScriptedResponse::Reply {
                text,
                tool_calls,
                usage,
            } => Ok(futures::stream::iter(reply_events(text, tool_calls, usage).map(Ok)).boxed()),
            ScriptedResponse::Error(error) => Err(error),
            ScriptedResponse::FailMidStream {
                text,
                tool_calls,
                error,
            } => {
                let mut events: Vec<Result<ModelEvent, ProviderError>> =
                    reply_events(text, tool_calls, None).map(Ok).collect();
                // Cut the answer before it completes: no `ToolCallFinished`, no `Done`.
                events.retain(|event| {
                    !matches!(
                        event,
                        Ok(ModelEvent::Done { .. } | ModelEvent::ToolCallFinished { .. })
                    )
                });
                events.push(Err(error));
                Ok(futures::stream::iter(events).boxed())
            }
        }
    }
}

fn finish_reason(tool_calls: &[ToolCall]) -> FinishReason {
    if tool_calls.is_empty() {
        FinishReason::Stop
    } else {
        FinishReason::ToolCalls
    }
}

/// The events a streaming provider sends for an answer: the text in word-sized deltas, then per
/// tool call a start, its arguments in a few fragments and an end, then usage and `Done`.
pub(crate) fn reply_events(
    text: String,
    tool_calls: Vec<ToolCall>,
    usage: Option<Usage>,
) -> impl Iterator<Item = ModelEvent> {
    let mut events = Vec::new();
    events.extend(
        text.split_inclusive(' ')
            .map(|piece| ModelEvent::TextDelta(piece.to_owned())),
    );
    for (index, call) in tool_calls.iter().enumerate() {
        events.push(ModelEvent::ToolCallStarted(ToolCallStart::new(
            index,
            call.id.clone(),
            call.name.clone(),
        )));
        events.extend(
            fragments(&call.arguments, 3).map(|piece| ModelEvent::ToolCallDelta {
                index,
                arguments: SharedStr::from(piece),
            }),
        );
        events.push(ModelEvent::ToolCallFinished {
            index,
            call: call.clone(),
        });
    }
    if let Some(usage) = usage {
        events.push(ModelEvent::Usage(usage));
    }
    let finish_reason = finish_reason(&tool_calls);
    events.push(ModelEvent::Done {
        message: Message::assistant_with_calls(text, tool_calls),
        finish_reason,
    });
    events.into_iter()
}

/// Splits `text` into at most `parts` pieces on character boundaries.
fn fragments(text: &str, parts: usize) -> impl Iterator<Item = &str> {
    let size = text.len().div_ceil(parts.max(1)).max(1);
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_rebuild_the_text_and_respect_char_boundaries() {
        for text in ["", "{}", r#"{"city": "Zürich", "days": 3}"#, "ééé"] {
            let pieces: Vec<&str> = fragments(text, 3).collect();
            assert!(pieces.len() <= 3);
            assert_eq!(pieces.concat(), text);
        }
    }

    #[tokio::test]
    async fn an_empty_script_fails_with_its_own_error() {
        let model = ScriptedModel::new([]);
        let error = model.chat(ChatRequest::default()).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "the scripted model has no more responses"
        );
        let ProviderError::Other(inner) = &error else {
            panic!("not Other: {error:?}");
        };
        assert_eq!(
            inner.downcast_ref::<ScriptExhausted>(),
            Some(&ScriptExhausted)
        );
    }

    #[tokio::test]
    async fn stream_ends_with_done_holding_the_whole_message() {
        let model = ScriptedModel::new([
            ScriptedResponse::tool_call("c1", "add", r#"{"a":1}"#).with_text("calling add")
        ]);
        let events: Vec<ModelEvent> = model
            .stream(ChatRequest::default())
            .await
            .unwrap()
            .map(Result::unwrap)
            .collect()
            .await;
        let deltas: String = events
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCallDelta { arguments, .. } => Some(arguments.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, r#"{"a":1}"#);
        assert!(matches!(
            events.last(),
            Some(ModelEvent::Done { finish_reason: FinishReason::ToolCalls, message })
                if message.content() == "calling add"
        ));
    }
}
