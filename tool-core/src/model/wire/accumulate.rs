//! Assembling an answer from stream fragments: the text, the tool calls (arguments appended to
//! one `String` per call, never re-parsed while streaming, so the work is linear in the stream
//! length; a call whose arguments come in one fragment keeps that fragment, shared with its
//! events and the final message, not copied), usage and the finish reason.

use std::collections::HashMap;

use serde_json::Value;

use crate::{
    message::{FinishReason, Message, SharedStr, ToolCall, Usage},
    model::{ModelEvent, ProviderToolSearch, ToolCallStart},
};

/// The answer built so far from a stream's events.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    text: String,
    pub(crate) calls: ToolCallAccumulator,
    usage: Option<Usage>,
    /// The searches the provider ran on its side.
    searches: Vec<ProviderToolSearch>,
    /// Provider data of the answer that belongs to none of its calls.
    metadata: Option<Value>,
}

impl Answer {
    /// Appends text and emits it as a delta (empty fragments are dropped).
    pub(crate) fn text(&mut self, fragment: &str, out: &mut Vec<ModelEvent>) {
        if fragment.is_empty() {
            return;
        }
        self.text.push_str(fragment);
        out.push(ModelEvent::TextDelta(fragment.to_owned()));
    }

    /// Records the latest token counts (emitted once, before `Done`).
    pub(crate) fn usage(&mut self, usage: Usage) {
        self.usage = Some(usage);
    }

    /// Records a search the provider ran on its side (emitted before `Done`).
    pub(crate) fn search(&mut self, search: ProviderToolSearch) {
        self.searches.push(search);
    }

    /// The length of the text so far, in bytes.
    pub(crate) fn text_len(&self) -> usize {
        self.text.len()
    }

    /// Keeps provider data with the answer as a whole (see
    /// [`Message::Assistant::provider_metadata`](Message::Assistant)).
    pub(crate) fn set_metadata(&mut self, metadata: Value) {
        self.metadata = Some(metadata);
    }

    /// The searches recorded so far, taken out (for a whole answer read without events).
    pub(crate) fn take_searches(&mut self) -> Vec<ProviderToolSearch> {
        std::mem::take(&mut self.searches)
    }

    /// Ends the answer: starts and closes what is still open, then emits the usage and `Done`.
    ///
    /// Calls that were never closed by the provider are closed here unless the answer was cut
    /// off (`Length`): an interrupted call keeps its (possibly invalid) arguments in the final
    /// message, so it is reported, but it gets no `ToolCallFinished`.
    pub(crate) fn done(mut self, finish_reason: FinishReason, out: &mut Vec<ModelEvent>) {
        let close_open_calls = finish_reason != FinishReason::Length;
        self.calls.finish(close_open_calls, out);
        let tool_calls = self.calls.into_calls();
        let finish_reason = match finish_reason {
            // Some servers (Ollama's `/v1`, a few gateways) say `stop` after tool calls.
            FinishReason::Stop if !tool_calls.is_empty() => FinishReason::ToolCalls,
            other => other,
        };
        out.extend(self.searches.into_iter().map(ModelEvent::ToolSearch));
        if let Some(usage) = self.usage {
            out.push(ModelEvent::Usage(usage));
        }
        out.push(ModelEvent::Done {
            message: Message::Assistant {
                content: self.text,
                tool_calls,
                provider_metadata: self.metadata,
            },
            finish_reason,
        });
    }

    /// The name of the last tool call still open (its arguments may be incomplete).
    pub(crate) fn open_call(&self) -> Option<&str> {
        self.calls.open_call()
    }

    /// The answer as a whole (for the non-streamed `chat`), with no events.
    pub(crate) fn into_message(self) -> (Message, Option<Usage>) {
        let mut sink = Vec::new();
        let mut calls = self.calls;
        calls.finish(true, &mut sink);
        (
            Message::Assistant {
                content: self.text,
                tool_calls: calls.into_calls(),
                provider_metadata: self.metadata,
            },
            self.usage,
        )
    }
}

/// Tool calls under construction, in the order they started.
#[derive(Debug, Default)]
pub(crate) struct ToolCallAccumulator {
    calls: Vec<PendingCall>,
    /// The provider's key for a call (OpenAI's `index`, Anthropic's block index) to its slot.
    slots: HashMap<u64, usize>,
}

#[derive(Debug, Default)]
struct PendingCall {
    id: String,
    name: String,
    arguments: Arguments,
    metadata: Option<Value>,
    started: bool,
    ended: bool,
}

/// A call's arguments so far.
#[derive(Debug, Default)]
enum Arguments {
    #[default]
    Empty,
    /// One fragment (or the whole text, once shared), kept as it came: a whole call in one
    /// event is never copied.
    Shared(SharedStr),
    /// Several fragments appended into one buffer.
    Building(String),
}

impl Arguments {
    fn push(&mut self, fragment: &SharedStr) {
        match self {
            Self::Empty => *self = Self::Shared(fragment.clone()),
            Self::Shared(first) => {
                let mut text = String::with_capacity(first.len() + fragment.len());
                text.push_str(first);
                text.push_str(fragment);
                *self = Self::Building(text);
            }
            Self::Building(text) => text.push_str(fragment),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Self::Empty => "",
            Self::Shared(text) => text,
            Self::Building(text) => text,
        }
    }

    /// The text so far as shared text; a buffer is handed over as it is, not copied.
    fn share(&mut self) -> SharedStr {
        match self {
            Self::Empty => SharedStr::default(),
            Self::Shared(text) => text.clone(),
            Self::Building(text) => {
                let shared = SharedStr::from(std::mem::take(text));
                *self = Self::Shared(shared.clone());
                shared
            }
        }
    }
}

impl ToolCallAccumulator {
    /// The slot of the call the provider keys `key`. A fragment that carries an id different
    /// from the one already under that key starts a new call: some servers number every call
    /// `0`.
    pub(crate) fn slot(&mut self, key: u64, id: Option<&str>) -> usize {
        if let Some(&slot) = self.slots.get(&key) {
            let call = &self.calls[slot];
            let new_id =
                id.is_some_and(|id| !id.is_empty() && !call.id.is_empty() && id != call.id);
            if !new_id && !call.ended {
                return slot;
            }
        }
        let slot = self.calls.len();
        self.calls.push(PendingCall::default());
        self.slots.insert(key, slot);
        slot
    }

    /// Starts a call in a new slot (for providers that send whole calls without keys).
    pub(crate) fn push(&mut self) -> usize {
        self.calls.push(PendingCall::default());
        self.calls.len() - 1
    }

    /// Sets the id of a call if it has none yet.
    pub(crate) fn set_id(&mut self, slot: usize, id: &str) {
        let call = &mut self.calls[slot];
        if call.id.is_empty() && !id.is_empty() {
            call.id.push_str(id);
        }
    }

    /// Sets the name of a call if it has none yet, and announces the call once its id is known.
    pub(crate) fn set_name(&mut self, slot: usize, name: &str, out: &mut Vec<ModelEvent>) {
        let call = &mut self.calls[slot];
        if call.name.is_empty() && !name.is_empty() {
            call.name.push_str(name);
        }
        if !call.id.is_empty() {
            self.start(slot, out);
        }
    }

    /// Attaches provider data that must travel back with the call.
    pub(crate) fn set_metadata(&mut self, slot: usize, metadata: Value) {
        self.calls[slot].metadata = Some(metadata);
    }

    /// The provider data kept with the call in `slot`, to add to.
    pub(crate) fn metadata_mut(&mut self, slot: usize) -> Option<&mut Value> {
        self.calls[slot].metadata.as_mut()
    }

    /// Appends a fragment of the arguments (copied once, for its `ToolCallDelta`).
    pub(crate) fn append(&mut self, slot: usize, fragment: &str, out: &mut Vec<ModelEvent>) {
        if !fragment.is_empty() {
            self.append_shared(slot, SharedStr::from(fragment), out);
        }
    }

    /// Appends a fragment of the arguments; the `ToolCallDelta` shares it, and so do the
    /// call's end and the final message when it is the call's only fragment (a whole call in
    /// one event can be megabytes).
    pub(crate) fn append_shared(
        &mut self,
        slot: usize,
        fragment: SharedStr,
        out: &mut Vec<ModelEvent>,
    ) {
        if fragment.is_empty() {
            return;
        }
        self.calls[slot].arguments.push(&fragment);
        if self.calls[slot].started {
            out.push(ModelEvent::ToolCallDelta {
                index: slot,
                arguments: fragment,
            });
        } else if !self.calls[slot].name.is_empty() {
            // The id never came with the name; do not hold the arguments back any longer.
            self.start(slot, out);
        }
    }

    /// Closes a call: announces it if needed, turns empty arguments into `{}` and emits
    /// `ToolCallFinished`.
    pub(crate) fn end(&mut self, slot: usize, out: &mut Vec<ModelEvent>) {
        if self.calls[slot].ended {
            return;
        }
        self.start(slot, out);
        let call = &mut self.calls[slot];
        if call.arguments.as_str().trim().is_empty() {
            call.arguments = Arguments::Shared(SharedStr::from_static("{}"));
        }
        call.ended = true;
        out.push(ModelEvent::ToolCallFinished {
            index: slot,
            call: call.tool_call(),
        });
    }

    /// The id of a call (empty until known).
    pub(crate) fn id(&self, slot: usize) -> &str {
        &self.calls[slot].id
    }

    /// The name of the last named call not closed yet.
    pub(crate) fn open_call(&self) -> Option<&str> {
        self.calls
            .iter()
            .rev()
            .find(|call| !call.ended && !call.name.is_empty())
            .map(|call| call.name.as_str())
    }

    /// Closes every open call (or, with `close` false, only announces them).
    pub(crate) fn finish(&mut self, close: bool, out: &mut Vec<ModelEvent>) {
        for slot in 0..self.calls.len() {
            if close {
                self.end(slot, out);
            } else {
                self.start(slot, out);
            }
        }
    }

    /// Closes every open call.
    pub(crate) fn end_all(&mut self, out: &mut Vec<ModelEvent>) {
        self.finish(true, out);
    }

    fn into_calls(self) -> Vec<ToolCall> {
        self.calls
            .into_iter()
            .map(|mut call| ToolCall {
                arguments: call.arguments.share(),
                id: call.id,
                name: call.name,
                provider_metadata: call.metadata,
            })
            .collect()
    }

    /// Emits `ToolCallStarted` (generating an id if the provider gave none), then the arguments
    /// received before the start.
    fn start(&mut self, slot: usize, out: &mut Vec<ModelEvent>) {
        let call = &mut self.calls[slot];
        if call.started {
            return;
        }
        if call.id.is_empty() {
            call.id = generate_call_id();
        }
        call.started = true;
        out.push(ModelEvent::ToolCallStarted(ToolCallStart::new(
            slot,
            call.id.clone(),
            call.name.clone(),
        )));
        if !call.arguments.as_str().is_empty() {
            out.push(ModelEvent::ToolCallDelta {
                index: slot,
                arguments: call.arguments.share(),
            });
        }
    }
}

impl PendingCall {
    fn tool_call(&mut self) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: self.arguments.share(),
            provider_metadata: self.metadata.clone(),
        }
    }
}

/// A call's arguments as a JSON object (for the providers that send them back as one), `{}`
/// when they are not one (a call cut off by the token limit).
pub(crate) fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// A fresh id for a tool call whose provider gives none (Ollama, Gemini without ids): unique in
/// this process and unlikely to collide across processes.
pub(crate) fn generate_call_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{SystemTime, UNIX_EPOCH};

    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        // Only the low 48 bits are used below.
        .map(|elapsed| u64::try_from(elapsed.as_nanos() & u128::from(u64::MAX)).unwrap_or_default())
        .unwrap_or_default();
    format!(
        "call_{:012x}{:04x}",
        nanos & 0xffff_ffff_ffff,
        count & 0xffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_are_appended_and_announced_once_id_and_name_are_known() {
        let mut calls = ToolCallAccumulator::default();
        let mut out = Vec::new();
        let slot = calls.slot(1, Some("call_1"));
        calls.set_id(slot, "call_1");
        calls.append(slot, "{\"a\"", &mut out);
        assert!(out.is_empty());
        calls.set_name(slot, "add", &mut out);
        calls.append(slot, ":1}", &mut out);
        calls.end(slot, &mut out);
        assert_eq!(
            out,
            vec![
                ModelEvent::ToolCallStarted(ToolCallStart::new(0, "call_1", "add")),
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments: "{\"a\"".into()
                },
                ModelEvent::ToolCallDelta {
                    index: 0,
                    arguments: ":1}".into()
                },
                ModelEvent::ToolCallFinished {
                    index: 0,
                    call: ToolCall::new("call_1", "add", "{\"a\":1}")
                },
            ]
        );
    }

    #[test]
    fn a_call_in_one_fragment_shares_its_text_with_every_event() {
        let mut answer = Answer::default();
        let mut out = Vec::new();
        let slot = answer.calls.push();
        answer.calls.set_id(slot, "call_1");
        answer.calls.set_name(slot, "write_file", &mut out);
        let arguments = SharedStr::from(String::from(r#"{"path":"a.txt"}"#));
        let text = arguments.as_ptr();
        answer.calls.append_shared(slot, arguments, &mut out);
        answer.calls.end(slot, &mut out);
        answer.done(FinishReason::ToolCalls, &mut out);
        let shared: Vec<*const u8> = out
            .iter()
            .filter_map(|event| match event {
                ModelEvent::ToolCallDelta { arguments, .. } => Some(arguments.as_ptr()),
                ModelEvent::ToolCallFinished { call, .. } => Some(call.arguments.as_ptr()),
                ModelEvent::Done {
                    message: Message::Assistant { tool_calls, .. },
                    ..
                } => Some(tool_calls[0].arguments.as_ptr()),
                _ => None,
            })
            .collect();
        assert_eq!(shared, vec![text; 3]);
    }

    #[test]
    fn fragments_are_joined_once_and_the_whole_is_shared_by_end_and_done() {
        let mut answer = Answer::default();
        let mut out = Vec::new();
        let slot = answer.calls.push();
        answer.calls.set_id(slot, "call_1");
        answer.calls.set_name(slot, "add", &mut out);
        for fragment in ["{\"a\"", ":1,", "\"b\":2}"] {
            answer.calls.append(slot, fragment, &mut out);
        }
        answer.calls.end(slot, &mut out);
        answer.done(FinishReason::ToolCalls, &mut out);
        let Some(ModelEvent::ToolCallFinished { call, .. }) = out.get(4) else {
            panic!("no end: {out:?}");
        };
        let Some(ModelEvent::Done {
            message: Message::Assistant { tool_calls, .. },
            ..
        }) = out.last()
        else {
            panic!("no done: {out:?}");
        };
        assert_eq!(call.arguments, r#"{"a":1,"b":2}"#);
        assert_eq!(tool_calls[0].arguments.as_ptr(), call.arguments.as_ptr());
    }

    #[test]
    fn a_new_id_under_the_same_key_starts_a_new_call() {
        let mut calls = ToolCallAccumulator::default();
        let first = calls.slot(0, Some("a"));
        calls.set_id(first, "a");
        let second = calls.slot(0, Some("b"));
        assert_ne!(first, second);
        assert_eq!(calls.slot(0, None), second);
    }

    #[test]
    fn generated_ids_are_unique() {
        assert_ne!(generate_call_id(), generate_call_id());
    }
}
