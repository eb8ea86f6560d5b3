//! Turning frames into [`ModelEvent`]s: each wire protocol has a [`Decoder`] (a synchronous
//! state machine fed one frame at a time), and [`decoded`] drives one over a frame stream.

use std::{
    collections::VecDeque,
    pin::Pin,
    task::{Context, Poll},
};

use futures::{Stream, StreamExt};

use super::framing::{Frame, FrameStream};
use crate::{
    model::{ChatResponse, ModelEvent, ModelStream, ProviderError},
    schema::Provider,
};

/// A wire protocol's stream decoder.
pub(crate) trait Decoder: Send + Unpin + 'static {
    /// Reads one frame and pushes the events it yields. Returns `true` once the protocol's
    /// terminal event has been seen (and `Done` pushed); the rest of the body is not read.
    fn feed(&mut self, frame: Frame, out: &mut Vec<ModelEvent>) -> Result<bool, ProviderError>;

    /// The body ended without a terminal event: pushes `Done` if the answer is nonetheless
    /// complete, or fails with [`truncated`].
    fn finish(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ProviderError>;

    /// The name of the tool call whose arguments are still arriving, if any (to say what a
    /// stream that ends early cut off).
    fn open_call(&self) -> Option<&str> {
        None
    }
}

/// The error of a stream that ended before its terminal event. The decoders return it bare;
/// [`decoded`] fills in how far the stream got, which only the driver knows.
pub(crate) fn truncated(provider: Provider) -> ProviderError {
    ProviderError::Truncated {
        provider,
        bytes: None,
        events: 0,
        incomplete_call: None,
        cause: None,
    }
}

/// The events of `frames` decoded by `decoder`, a decoder of `provider`'s protocol.
pub(crate) fn decoded<D: Decoder>(
    frames: FrameStream,
    decoder: D,
    provider: Provider,
) -> ModelStream {
    Decoded {
        frames,
        decoder,
        provider,
        ready: VecDeque::new(),
        scratch: Vec::new(),
        events: 0,
        state: State::Reading,
    }
    .boxed()
}

enum State {
    Reading,
    /// The remaining ready events are the last ones.
    Draining,
    /// An error is to be yielded after the ready events.
    Failing(ProviderError),
    Finished,
}

struct Decoded<D> {
    frames: FrameStream,
    decoder: D,
    provider: Provider,
    ready: VecDeque<ModelEvent>,
    scratch: Vec<ModelEvent>,
    /// The frames read whole so far.
    events: u64,
    state: State,
}

impl<D: Decoder> Decoded<D> {
    fn settle(&mut self, result: Result<bool, ProviderError>, draining_on: bool) {
        self.ready.extend(self.scratch.drain(..));
        match result {
            Ok(true) => self.state = State::Draining,
            Ok(false) if draining_on => self.state = State::Draining,
            Ok(false) => {}
            Err(ProviderError::Truncated { cause, .. }) => {
                self.state = State::Failing(self.ended_early(cause));
            }
            Err(error) => self.state = State::Failing(error),
        }
    }

    /// The stream ended early: how far it got, and what it was in the middle of.
    fn ended_early(&self, cause: Option<String>) -> ProviderError {
        ProviderError::Truncated {
            provider: self.provider,
            bytes: Some(self.frames.bytes_read()),
            events: self.events,
            incomplete_call: self.decoder.open_call().map(str::to_owned),
            cause,
        }
    }
}

impl<D: Decoder> Stream for Decoded<D> {
    type Item = Result<ModelEvent, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            match std::mem::replace(&mut this.state, State::Finished) {
                State::Finished | State::Draining => return Poll::Ready(None),
                State::Failing(error) => return Poll::Ready(Some(Err(error))),
                State::Reading => this.state = State::Reading,
            }
            match this.frames.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    let result = this.decoder.feed(frame, &mut this.scratch);
                    this.events += u64::from(result.is_ok());
                    this.settle(result, false);
                }
                // The response has started, so a failing body is a stream cut off half-way
                // (a reset connection, a read timeout), not an unreachable provider.
                Poll::Ready(Some(Err(message))) => {
                    this.state = State::Failing(this.ended_early(Some(message)));
                }
                Poll::Ready(None) => {
                    let result = this.decoder.finish(&mut this.scratch).map(|()| true);
                    this.settle(result, true);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A JSON string borrowed from the input when it has no escapes (`Option<Cow<str>>` fields
/// always allocate in serde, this does not).
#[derive(Debug, Default)]
pub(crate) struct Text<'a>(pub(crate) std::borrow::Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(std::borrow::Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(std::borrow::Cow::Owned(v.to_owned())))
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(std::borrow::Cow::Owned(v)))
            }
        }

        deserializer.deserialize_str(Visitor)
    }
}

/// The error a frame that cannot be read stands for: a cut-off last frame means the stream
/// was truncated; anything else is a protocol error.
pub(crate) fn unreadable(
    provider: Provider,
    unterminated: bool,
    what: &str,
    error: &serde_json::Error,
) -> ProviderError {
    if unterminated {
        truncated(provider)
    } else {
        ProviderError::Protocol {
            provider,
            message: format!("cannot read {what}: {error}"),
        }
    }
}

/// An error object found in the stream (an `error` event, a raw JSON body, an NDJSON line),
/// with the provider's own message.
pub(crate) fn stream_error(provider: Provider, text: &str) -> ProviderError {
    match serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .as_ref()
        .and_then(super::http::error_from_value)
    {
        Some((code, message)) => ProviderError::Api {
            provider,
            status: None,
            code,
            message,
        },
        None => ProviderError::Protocol {
            provider,
            message: format!("unexpected text in the stream: {}", text.trim()),
        },
    }
}

/// One server-sent event, as a wire that streams them reads it.
pub(crate) struct SseEvent {
    /// The `event:` name (`message` when absent).
    pub(crate) name: String,
    /// The `data:` lines, joined with `\n`.
    pub(crate) data: String,
    /// The body ended before the event's closing blank line.
    pub(crate) unterminated: bool,
}

/// A frame of a wire that streams server-sent events, as the event it should be: raw text
/// among the events is the provider's error object (or unexpected text), and a line means the
/// body is not SSE at all.
pub(crate) fn sse_event(provider: Provider, frame: Frame) -> Result<SseEvent, ProviderError> {
    match frame {
        Frame::Event {
            name,
            data,
            unterminated,
        } => Ok(SseEvent {
            name,
            data,
            unterminated,
        }),
        Frame::Raw(text) => Err(stream_error(provider, &text)),
        Frame::Line { .. } => Err(ProviderError::Protocol {
            provider,
            message: String::from("expected server-sent events"),
        }),
    }
}

/// A whole (non-streamed) body read as one frame with a stream decoder of `provider`'s
/// protocol.
pub(crate) fn decode_whole<D: Decoder>(
    mut decoder: D,
    frame: Frame,
    provider: Provider,
) -> Result<ChatResponse, ProviderError> {
    let bytes = match &frame {
        Frame::Event { data, .. } | Frame::Raw(data) => data.len(),
        Frame::Line { line, .. } => line.len(),
    } as u64;
    // A whole body has no transport of its own to fail: only the counts need filling in.
    let ended_early = |error: ProviderError, events: u64| match error {
        ProviderError::Truncated { .. } => ProviderError::Truncated {
            provider,
            bytes: Some(bytes),
            events,
            incomplete_call: None,
            cause: None,
        },
        other => other,
    };
    let mut events = Vec::new();
    let terminal = decoder
        .feed(frame, &mut events)
        .map_err(|error| ended_early(error, 0))?;
    if !terminal {
        decoder
            .finish(&mut events)
            .map_err(|error| ended_early(error, 1))?;
    }
    let mut usage = None;
    let mut searches = Vec::new();
    for event in events {
        match event {
            ModelEvent::Usage(counts) => usage = Some(counts),
            ModelEvent::ToolSearch(search) => searches.push(search),
            ModelEvent::Done {
                message,
                finish_reason,
            } => {
                let mut response = ChatResponse::new(message, finish_reason);
                response.usage = usage;
                response.tool_searches = searches;
                return Ok(response);
            }
            _ => {}
        }
    }
    Err(ended_early(truncated(provider), 1))
}
