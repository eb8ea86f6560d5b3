//! Stream framing: Server-Sent Events (through `eventsource-stream`) and newline-delimited JSON.
//!
//! `eventsource-stream` parses SSE lines (LF, CR and CRLF endings, split anywhere between
//! chunks), but three things real provider streams need are left to the [`SseTap`] around it:
//!
//! - **A last event with no trailing blank line.** The crate only dispatches an event on a blank
//!   line and drops what is buffered at the end of the body; Anthropic's own recordings end with
//!   `data: {"type":"message_stop"}` and no blank line. The tap appends a blank line at the end
//!   of the body and remembers that it did, so an event completed by it is marked
//!   `unterminated` (a cut-off body then reads as truncated rather than as malformed JSON).
//! - **A raw JSON body inside an SSE stream.** Gemini can abort a stream with a pretty-printed
//!   `{"error": ...}` object that has no `data:` prefix; the crate would read each of its lines
//!   as an unknown field and ignore it. A line that starts with `{` or `[` cannot be SSE, so from
//!   there on the tap keeps the bytes aside and the decoder gets them as [`Frame::Raw`].
//! - **Linear cost.** The crate copies its remaining buffer after every line it parses, which
//!   is quadratic in the size of a chunk holding many lines; the tap hands it one event at a
//!   time (zero-copy slices of the chunk), which keeps the whole pipeline linear.

// Shared by the provider clients; a build with only some of them leaves parts unused.
#![cfg_attr(
    not(all(
        feature = "openai",
        feature = "ollama",
        feature = "gemini",
        feature = "anthropic"
    )),
    allow(dead_code)
)]

use std::{
    collections::VecDeque,
    fmt::Display,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
};

use bytes::Bytes;
use eventsource_stream::{EventStream, Eventsource};
use futures::{Stream, StreamExt, stream::BoxStream};

/// One unit of a provider's stream, as the decoders see it.
#[derive(Debug)]
pub(crate) enum Frame {
    /// An SSE event.
    Event {
        /// The `event:` name (`message` when absent).
        name: String,
        /// The `data:` lines, joined with `\n`.
        data: String,
        /// The body ended before the event's closing blank line.
        unterminated: bool,
    },
    /// One NDJSON line (without its line ending).
    Line {
        /// The line.
        line: Bytes,
        /// The body ended before the line's newline.
        unterminated: bool,
    },
    /// Non-SSE text found in an SSE body (a raw JSON error object), delivered at the end.
    Raw(String),
}

/// A stream of frames; transport errors are already described as text.
pub(crate) type FrameStream = BoxStream<'static, Result<Frame, String>>;

/// Frames an SSE body.
pub(crate) fn sse<S, B, E>(body: S) -> FrameStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Into<Bytes>,
    E: Display,
{
    let shared = Arc::new(Mutex::new(TapShared::default()));
    let tap = SseTap {
        body: body
            .map(|chunk| chunk.map(Into::into).map_err(|e| e.to_string()))
            .boxed(),
        chunk: Bytes::new(),
        at_line_start: true,
        raw_mode: false,
        ended: false,
        shared: Arc::clone(&shared),
    };
    SseFrames {
        events: tap.eventsource(),
        shared,
        finished: false,
    }
    .boxed()
}

/// Frames an NDJSON body.
pub(crate) fn ndjson<S, B, E>(body: S) -> FrameStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Into<Bytes>,
    E: Display,
{
    NdjsonLines {
        body: body
            .map(|chunk| chunk.map(Into::into).map_err(|e| e.to_string()))
            .boxed(),
        carry: Vec::new(),
        ready: VecDeque::new(),
        ended: false,
    }
    .boxed()
}

#[derive(Debug, Default)]
struct TapShared {
    /// The blank line that closes the body has been handed to the SSE parser.
    eof: bool,
    /// Bytes that are not SSE.
    raw: Vec<u8>,
}

/// The byte stream `eventsource-stream` reads: the body, one event per item, a blank line at
/// the end, with non-SSE text diverted to [`TapShared::raw`].
struct SseTap {
    body: BoxStream<'static, Result<Bytes, String>>,
    /// The unread rest of the current chunk.
    chunk: Bytes,
    at_line_start: bool,
    raw_mode: bool,
    ended: bool,
    shared: Arc<Mutex<TapShared>>,
}

impl SseTap {
    fn divert(&self, bytes: &[u8]) {
        if let Ok(mut shared) = self.shared.lock() {
            shared.raw.extend_from_slice(bytes);
        }
    }
}

impl Stream for SseTap {
    type Item = Result<Bytes, String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if !this.chunk.is_empty() {
                if this.at_line_start && matches!(this.chunk[0], b'{' | b'[') {
                    this.raw_mode = true;
                }
                if this.raw_mode {
                    let rest = std::mem::take(&mut this.chunk);
                    this.divert(&rest);
                    continue;
                }
                let end = event_end(&this.chunk);
                let line = this.chunk.split_to(end);
                this.at_line_start = matches!(line.last(), Some(b'\n' | b'\r'));
                return Poll::Ready(Some(Ok(line)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match this.body.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(chunk))) => this.chunk = chunk,
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error))),
                Poll::Ready(None) => {
                    this.ended = true;
                    if let Ok(mut shared) = this.shared.lock() {
                        shared.eof = true;
                    }
                    return Poll::Ready(Some(Ok(Bytes::from_static(b"\n\n"))));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Where the piece of `chunk` to hand to the SSE parser ends: after the first blank line (one
/// event per piece, so the parser's buffer never holds more than one event), before a line
/// that starts like raw JSON (so the tap sees it), or at the end of the chunk.
fn event_end(chunk: &[u8]) -> usize {
    let mut line_start = 0;
    while let Some(newline) = chunk[line_start..].iter().position(|&b| b == b'\n') {
        let end = line_start + newline + 1;
        let blank = matches!(&chunk[line_start..end], b"\n" | b"\r\n");
        if blank || matches!(chunk.get(end), Some(b'{' | b'[') | None) {
            return end;
        }
        line_start = end;
    }
    chunk.len()
}

struct SseFrames {
    events: EventStream<SseTap>,
    shared: Arc<Mutex<TapShared>>,
    finished: bool,
}

impl Stream for SseFrames {
    type Item = Result<Frame, String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        match this.events.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(event))) => {
                // Every event completed before the tap's closing blank line is dispatched
                // before the tap is polled again, so one seen after it was completed by it.
                let unterminated = this.shared.lock().map(|s| s.eof).unwrap_or(false);
                Poll::Ready(Some(Ok(Frame::Event {
                    name: event.event,
                    data: event.data,
                    unterminated,
                })))
            }
            Poll::Ready(Some(Err(error))) => {
                this.finished = true;
                Poll::Ready(Some(Err(error.to_string())))
            }
            Poll::Ready(None) => {
                this.finished = true;
                let raw = this
                    .shared
                    .lock()
                    .map(|mut s| std::mem::take(&mut s.raw))
                    .unwrap_or_default();
                if raw.iter().all(u8::is_ascii_whitespace) {
                    Poll::Ready(None)
                } else {
                    let raw = String::from_utf8_lossy(&raw).into_owned();
                    Poll::Ready(Some(Ok(Frame::Raw(raw))))
                }
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// NDJSON lines: complete lines are zero-copy slices of the chunk; only a line split between
/// chunks is copied, once.
struct NdjsonLines {
    body: BoxStream<'static, Result<Bytes, String>>,
    carry: Vec<u8>,
    ready: VecDeque<Bytes>,
    ended: bool,
}

impl NdjsonLines {
    fn split(&mut self, mut chunk: Bytes) {
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            let mut line = chunk.split_to(newline + 1);
            line.truncate(newline);
            if self.carry.is_empty() {
                self.push(line);
            } else {
                self.carry.extend_from_slice(&line);
                let joined = Bytes::from(std::mem::take(&mut self.carry));
                self.push(joined);
            }
        }
        self.carry.extend_from_slice(&chunk);
    }

    fn push(&mut self, mut line: Bytes) {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            self.ready.push_back(line);
        }
    }
}

impl Stream for NdjsonLines {
    type Item = Result<Frame, String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(line) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(Frame::Line {
                    line,
                    unterminated: false,
                })));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match this.body.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(chunk))) => this.split(chunk),
                Poll::Ready(Some(Err(error))) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(error)));
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    let rest = std::mem::take(&mut this.carry);
                    if !rest.iter().all(u8::is_ascii_whitespace) {
                        return Poll::Ready(Some(Ok(Frame::Line {
                            line: Bytes::from(rest),
                            unterminated: true,
                        })));
                    }
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(
        framer: fn(BoxStream<'static, Result<Bytes, String>>) -> FrameStream,
        chunks: &[&'static str],
    ) -> Vec<Frame> {
        let body = futures::stream::iter(
            chunks
                .iter()
                .map(|chunk| Ok(Bytes::from_static(chunk.as_bytes())))
                .collect::<Vec<_>>(),
        )
        .boxed();
        futures::executor::block_on(framer(body).map(|f| f.unwrap()).collect())
    }

    fn sse_frames(chunks: &[&'static str]) -> Vec<Frame> {
        frames(sse, chunks)
    }

    fn events(frames: &[Frame]) -> Vec<(&str, &str, bool)> {
        frames
            .iter()
            .filter_map(|frame| match frame {
                Frame::Event {
                    name,
                    data,
                    unterminated,
                } => Some((name.as_str(), data.as_str(), *unterminated)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn crlf_framing_split_between_chunks() {
        let frames = sse_frames(&["data: a\r", "\n\r", "\ndata: b\r\n\r\n"]);
        assert_eq!(
            events(&frames),
            vec![("message", "a", false), ("message", "b", false)]
        );
    }

    #[test]
    fn last_event_without_blank_line_is_flushed_and_marked() {
        let frames = sse_frames(&["event: x\ndata: 1\n\nevent: y\ndata: 2"]);
        assert_eq!(events(&frames), vec![("x", "1", false), ("y", "2", true)]);
    }

    #[test]
    fn raw_json_after_events_is_kept_aside() {
        let frames = sse_frames(&["data: 1\n\n{\n  \"error\": {\"code\": 499}\n}\n"]);
        assert_eq!(events(&frames), vec![("message", "1", false)]);
        match &frames[1] {
            Frame::Raw(raw) => assert!(raw.starts_with("{\n  \"error\"")),
            other => panic!("expected raw text, got {other:?}"),
        }
    }

    #[test]
    fn pieces_end_after_blank_lines_and_before_raw_json() {
        assert_eq!(event_end(b"event: a\ndata: 1\n\ndata: 2\n\n"), 18);
        assert_eq!(event_end(b"data: 1\r\n\r\ndata: 2"), 11);
        assert_eq!(event_end(b"data: 1\n{\"error\": 1}"), 8);
        assert_eq!(event_end(b"data: 1"), 7);
    }

    #[test]
    fn ndjson_lines_split_between_chunks() {
        let frames = frames(ndjson, &["{\"a\":1}\n{\"b\"", ":2}\r\n\n{\"c\":3}"]);
        let lines: Vec<(String, bool)> = frames
            .iter()
            .map(|frame| match frame {
                Frame::Line { line, unterminated } => {
                    (String::from_utf8(line.to_vec()).unwrap(), *unterminated)
                }
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            lines,
            vec![
                ("{\"a\":1}".to_owned(), false),
                ("{\"b\":2}".to_owned(), false),
                ("{\"c\":3}".to_owned(), true)
            ]
        );
    }
}
