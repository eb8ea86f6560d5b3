//! Stream framing: Server-Sent Events and newline-delimited JSON, each a small synchronous
//! parser driven over the body's chunks.
//!
//! Both parsers look at every byte a bounded number of times whatever the chunk size: complete
//! lines are read in place from the chunk, and only a line split between chunks is copied,
//! once, when its end arrives (its pieces are kept aside until then, never re-scanned). A general-purpose SSE crate that re-parsed its
//! pending buffer for every chunk of an unfinished line made one large event (a tool call with
//! a 5 MB argument, delivered in 16 KB network chunks) cost quadratic time.
//!
//! The SSE parser follows the WHATWG rules
//! (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>):
//! LF, CR and CRLF line ends (split anywhere between chunks), a leading UTF-8 BOM, `:`
//! comments, `field: value` with one optional space stripped, `data` lines joined with `\n`,
//! the event name `message` by default, dispatch on a blank line, `id` and `retry` ignored (the
//! clients never reconnect). Two things real provider streams need go beyond the spec:
//!
//! - **A last event with no trailing blank line.** Anthropic's own recordings end with
//!   `data: {"type":"message_stop"}` and no blank line. The body's end dispatches what is
//!   pending, and the event is marked `unterminated` (a cut-off body then reads as truncated
//!   rather than as malformed JSON).
//! - **A raw JSON body inside an SSE stream.** Gemini can abort a stream with a pretty-printed
//!   `{"error": ...}` object that has no `data:` prefix, whose lines would read as unknown
//!   fields. A line that starts with `{` or `[` cannot be SSE, so from there on the bytes are
//!   kept aside and the decoder gets them as [`Frame::Raw`] at the end.

use std::{
    collections::VecDeque,
    fmt::Display,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures::{Stream, StreamExt, stream::BoxStream};

/// One unit of a provider's stream, as the decoders see it.
#[derive(Debug, PartialEq)]
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

/// A stream of frames that knows how much of the body it has read; transport errors are
/// already described as text.
pub(crate) trait Frames: Stream<Item = Result<Frame, String>> + Send + Unpin {
    /// The body bytes received so far.
    fn bytes_read(&self) -> u64;

    /// The bytes the parser has looked at or copied so far.
    #[cfg(test)]
    fn work(&self) -> usize;
}

/// A boxed [`Frames`].
pub(crate) type FrameStream = Box<dyn Frames>;

/// Frames an SSE body.
pub(crate) fn sse<S, B, E>(body: S) -> FrameStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Into<Bytes>,
    E: Display,
{
    Box::new(Framed::new(body, SseParser::default()))
}

/// Frames an NDJSON body.
pub(crate) fn ndjson<S, B, E>(body: S) -> FrameStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: Into<Bytes>,
    E: Display,
{
    Box::new(Framed::new(body, NdjsonParser::default()))
}

/// A synchronous framer, fed the body one chunk at a time.
trait Parser: Send + Unpin + 'static {
    /// Reads a chunk and queues the frames it completes.
    fn push(&mut self, chunk: Bytes, out: &mut VecDeque<Frame>);

    /// The body has ended: queues what is still pending.
    fn finish(&mut self, out: &mut VecDeque<Frame>);

    /// The bytes looked at or copied so far.
    #[cfg(test)]
    fn work(&self) -> usize;
}

/// A [`Parser`] driven over a body.
struct Framed<P> {
    body: BoxStream<'static, Result<Bytes, String>>,
    parser: P,
    ready: VecDeque<Frame>,
    bytes: u64,
    ended: bool,
}

impl<P: Parser> Framed<P> {
    fn new<S, B, E>(body: S, parser: P) -> Self
    where
        S: Stream<Item = Result<B, E>> + Send + 'static,
        B: Into<Bytes>,
        E: Display,
    {
        Self {
            body: body
                .map(|chunk| chunk.map(Into::into).map_err(|e| e.to_string()))
                .boxed(),
            parser,
            ready: VecDeque::new(),
            bytes: 0,
            ended: false,
        }
    }
}

impl<P: Parser> Stream for Framed<P> {
    type Item = Result<Frame, String>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(frame) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            match this.body.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    this.bytes += chunk.len() as u64;
                    this.parser.push(chunk, &mut this.ready);
                }
                Poll::Ready(Some(Err(error))) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(error)));
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    this.parser.finish(&mut this.ready);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<P: Parser> Frames for Framed<P> {
    fn bytes_read(&self) -> u64 {
        self.bytes
    }

    #[cfg(test)]
    fn work(&self) -> usize {
        self.parser.work()
    }
}

/// How many bytes a parser has looked at or copied (tests assert it stays linear).
#[derive(Debug, Default)]
struct Work {
    #[cfg(test)]
    bytes: usize,
}

impl Work {
    // Counts only in tests; elsewhere the call compiles to nothing.
    #[allow(clippy::unused_self)]
    #[inline]
    fn add(&mut self, bytes: usize) {
        #[cfg(test)]
        {
            self.bytes += bytes;
        }
        let _ = bytes;
    }
}

/// The start of a line split between chunks: the chunks' pieces, kept as they came (no copy)
/// and joined once into an exactly sized buffer when the line ends. Appending to a growing
/// buffer instead copied a large line about twice more, into ever larger fresh allocations.
/// Small pieces are gathered into one buffer first, so that a body delivered in tiny chunks
/// does not cost a `Bytes` handle per few bytes.
#[derive(Debug, Default)]
struct Pieces {
    chunks: Vec<Bytes>,
    /// Small pieces that came after the last one in `chunks`.
    small: Vec<u8>,
    len: usize,
}

impl Pieces {
    /// Pieces shorter than this are copied into `small`.
    const SMALL: usize = 1024;

    fn push(&mut self, piece: Bytes) {
        self.len += piece.len();
        if piece.len() < Self::SMALL {
            self.small.extend_from_slice(&piece);
            return;
        }
        if !self.small.is_empty() {
            self.chunks
                .push(Bytes::from(std::mem::take(&mut self.small)));
        }
        self.chunks.push(piece);
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first `n` bytes (or fewer) of the pieces followed by `tail`.
    fn head(&self, tail: &[u8], n: usize) -> Vec<u8> {
        let mut head = Vec::with_capacity(n);
        let pieces = self.chunks.iter().map(|piece| &piece[..]);
        for piece in pieces.chain([&self.small[..], tail]) {
            let take = piece.len().min(n - head.len());
            head.extend_from_slice(&piece[..take]);
            if head.len() == n {
                break;
            }
        }
        head
    }

    /// The pieces followed by `tail`, less their first `skip` bytes, with room for `spare`
    /// more bytes; empties the pieces.
    fn join(&mut self, tail: &[u8], mut skip: usize, spare: usize) -> Vec<u8> {
        let len = (self.len + tail.len()).saturating_sub(skip);
        let mut line = Vec::with_capacity(len + spare);
        let small = std::mem::take(&mut self.small);
        for piece in self
            .chunks
            .iter()
            .map(|piece| &piece[..])
            .chain([&small[..], tail])
        {
            let drop = skip.min(piece.len());
            skip -= drop;
            line.extend_from_slice(&piece[drop..]);
        }
        self.chunks.clear();
        self.len = 0;
        line
    }
}

/// The position of the first CR or LF in `bytes`.
fn line_end(bytes: &[u8]) -> Option<usize> {
    find(bytes, |b| b == b'\n' || b == b'\r')
}

/// The position of the first byte of `bytes` that `wanted` accepts. Whole 32-byte blocks are
/// tested without an early exit, which the compiler turns into a few vector instructions per
/// block; a byte-wise search is not vectorized and was the framers' main cost on a large event.
#[inline]
pub(crate) fn find(bytes: &[u8], wanted: impl Fn(u8) -> bool) -> Option<usize> {
    const BLOCK: usize = 32;
    let mut blocks = bytes.chunks_exact(BLOCK);
    let mut start = 0;
    for block in &mut blocks {
        if block.iter().fold(false, |found, &b| found | wanted(b)) {
            return block.iter().position(|&b| wanted(b)).map(|at| start + at);
        }
        start += BLOCK;
    }
    blocks
        .remainder()
        .iter()
        .position(|&b| wanted(b))
        .map(|at| start + at)
}

/// The SSE parser.
#[derive(Debug, Default)]
struct SseParser {
    /// The start of a line split between chunks.
    carry: Pieces,
    /// The last line is not complete (its start is in `carry`).
    mid_line: bool,
    /// The last chunk ended with CR: an LF opening the next one belongs to the same line end.
    pending_lf: bool,
    /// A line has been read (the BOM can only open the first one).
    seen_line: bool,
    /// Non-SSE text, once a line that starts like raw JSON has been seen.
    raw: Option<Vec<u8>>,
    /// The event being read: its name and its data lines, each followed by `\n`.
    name: String,
    data: String,
    work: Work,
}

impl SseParser {
    /// Reads one complete line (without its line end).
    fn line(&mut self, mut line: &[u8], out: &mut VecDeque<Frame>) {
        if !self.seen_line {
            self.seen_line = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(false, out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = if let Some(colon) = line.iter().position(|&b| b == b':') {
            self.work.add(colon + 1);
            let value = &line[colon + 1..];
            (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
        } else {
            self.work.add(line.len());
            (line, &[][..])
        };
        match field {
            b"data" => {
                // Invalid UTF-8 is replaced, as the spec's decoder does. The strict check
                // comes first: it is several times faster than the lossy one on valid text.
                let value = match std::str::from_utf8(value) {
                    Ok(text) => std::borrow::Cow::Borrowed(text),
                    Err(_) => String::from_utf8_lossy(value),
                };
                self.work.add(2 * value.len());
                // Reserving first keeps a large value to one copy (the `\n` would otherwise
                // grow an exactly-sized buffer).
                self.data.reserve(value.len() + 1);
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"event" => {
                self.work.add(value.len());
                self.name = String::from_utf8_lossy(value).into_owned();
            }
            // `id` and `retry` only matter to a client that reconnects; unknown fields are
            // ignored by the spec.
            _ => {}
        }
    }

    /// Reads a line that was split between chunks: its start is in `carry`, its end is
    /// `tail`. The first `data` line of an event (typically a large one: small events fit in
    /// one chunk) is joined straight into the event's data, without its field name and with
    /// no further copy; any other line is joined and read as usual.
    fn carry_line(&mut self, tail: &[u8], out: &mut VecDeque<Frame>) {
        let head = self.carry.head(tail, 9);
        let bom = if !self.seen_line && head.starts_with(b"\xEF\xBB\xBF") {
            3
        } else {
            0
        };
        let head = &head[bom..];
        if self.data.is_empty() && head.starts_with(b"data:") {
            self.seen_line = true;
            let skip = bom + if head.get(5) == Some(&b' ') { 6 } else { 5 };
            let mut data = self.carry.join(tail, skip, 1);
            self.work.add(2 * data.len());
            data.push(b'\n');
            self.data = match String::from_utf8(data) {
                Ok(data) => data,
                // Invalid UTF-8 is replaced, as the spec's decoder does.
                Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
            };
            return;
        }
        let line = self.carry.join(tail, 0, 0);
        self.line(&line, out);
    }

    /// A blank line (or the body's end): queues the event read so far, if it has data.
    fn dispatch(&mut self, unterminated: bool, out: &mut VecDeque<Frame>) {
        let name = std::mem::take(&mut self.name);
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        out.push_back(Frame::Event {
            name: if name.is_empty() {
                String::from("message")
            } else {
                name
            },
            data,
            unterminated,
        });
    }
}

impl Parser for SseParser {
    fn push(&mut self, chunk: Bytes, out: &mut VecDeque<Frame>) {
        let mut rest: &[u8] = &chunk;
        while !rest.is_empty() {
            if let Some(raw) = &mut self.raw {
                self.work.add(rest.len());
                raw.extend_from_slice(rest);
                return;
            }
            if std::mem::take(&mut self.pending_lf) && rest[0] == b'\n' {
                rest = &rest[1..];
                continue;
            }
            if !self.mid_line && matches!(rest[0], b'{' | b'[') {
                self.raw = Some(Vec::new());
                continue;
            }
            let Some(end) = line_end(rest) else {
                // An unfinished line: kept until its end arrives, and not looked at again.
                self.work.add(2 * rest.len());
                self.carry.push(chunk.slice_ref(rest));
                self.mid_line = true;
                return;
            };
            self.work.add(end + 1);
            let mut next = end + 1;
            if rest[end] == b'\r' {
                match rest.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.pending_lf = true,
                }
            }
            if self.mid_line {
                self.work.add(end);
                // One spare byte for the `\n` a data line gets.
                self.carry_line(&rest[..end], out);
                self.mid_line = false;
            } else {
                self.line(&rest[..end], out);
            }
            rest = &rest[next..];
        }
    }

    fn finish(&mut self, out: &mut VecDeque<Frame>) {
        if self.mid_line {
            self.mid_line = false;
            self.carry_line(&[], out);
        }
        self.dispatch(true, out);
        let raw = self.raw.take().unwrap_or_default();
        if !raw.iter().all(u8::is_ascii_whitespace) {
            out.push_back(Frame::Raw(String::from_utf8_lossy(&raw).into_owned()));
        }
    }

    #[cfg(test)]
    fn work(&self) -> usize {
        self.work.bytes
    }
}

/// The NDJSON parser: complete lines are zero-copy slices of the chunk; only a line split
/// between chunks is copied, once.
#[derive(Debug, Default)]
struct NdjsonParser {
    carry: Pieces,
    work: Work,
}

impl NdjsonParser {
    fn line(mut line: Bytes, out: &mut VecDeque<Frame>) {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        // Stops at the first byte that is not blank: a line is looked at once more at most.
        if !line.iter().all(u8::is_ascii_whitespace) {
            out.push_back(Frame::Line {
                line,
                unterminated: false,
            });
        }
    }
}

impl Parser for NdjsonParser {
    fn push(&mut self, mut chunk: Bytes, out: &mut VecDeque<Frame>) {
        while let Some(newline) = find(&chunk, |b| b == b'\n') {
            self.work.add(newline + 1);
            let mut line = chunk.split_to(newline + 1);
            line.truncate(newline);
            if self.carry.is_empty() {
                Self::line(line, out);
            } else {
                self.work.add(line.len());
                let joined = Bytes::from(self.carry.join(&line, 0, 0));
                Self::line(joined, out);
            }
        }
        self.work.add(2 * chunk.len());
        if !chunk.is_empty() {
            self.carry.push(chunk);
        }
    }

    fn finish(&mut self, out: &mut VecDeque<Frame>) {
        let rest = self.carry.join(&[], 0, 0);
        if !rest.iter().all(u8::is_ascii_whitespace) {
            out.push_back(Frame::Line {
                line: Bytes::from(rest),
                unterminated: true,
            });
        }
    }

    #[cfg(test)]
    fn work(&self) -> usize {
        self.work.bytes
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

    fn frames_of(
        framer: fn(BoxStream<'static, Result<Bytes, String>>) -> FrameStream,
        chunks: Vec<Vec<u8>>,
    ) -> Vec<Frame> {
        let body = futures::stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c)))).boxed();
        futures::executor::block_on(framer(body).map(|f| f.unwrap()).collect())
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
        let frames = sse_frames(&["event: a\ndata: 1\n\ndata: 2\n\n"]);
        assert_eq!(
            events(&frames),
            vec![("a", "1", false), ("message", "2", false)]
        );
        let frames = sse_frames(&["data: 1\r\n\r\ndata: 2"]);
        assert_eq!(
            events(&frames),
            vec![("message", "1", false), ("message", "2", true)]
        );
        let frames = sse_frames(&["data: 1\n{\"error\": 1}"]);
        assert_eq!(
            frames,
            vec![
                Frame::Event {
                    name: "message".into(),
                    data: "1".into(),
                    unterminated: true
                },
                Frame::Raw("{\"error\": 1}".into())
            ]
        );
        assert_eq!(
            events(&sse_frames(&["data: 1"])),
            vec![("message", "1", true)]
        );
    }

    #[test]
    fn sse_fields_follow_the_whatwg_rules() {
        let body = "\u{feff}: a comment\nid: 7\nretry: 10\nevent:named\ndata:no space\ndata:  two spaces\ndata\n\ndata: x\r\r";
        assert_eq!(
            events(&sse_frames(&[body])),
            vec![
                ("named", "no space\n two spaces\n", false),
                ("message", "x", false)
            ]
        );
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        let frames = sse_frames(&["event: ping\n\n: keep-alive\n\ndata: 1\n\n"]);
        assert_eq!(events(&frames), vec![("message", "1", false)]);
    }

    #[test]
    fn line_ends_and_the_bom_split_anywhere() {
        let body = "\u{feff}event: e\rdata: a\r\ndata: b\n\r\ndata: c\r\rdata: d\n\n";
        let whole = sse_frames(&[body]);
        assert_eq!(
            events(&whole),
            vec![
                ("e", "a\nb", false),
                ("message", "c", false),
                ("message", "d", false)
            ]
        );
        let bytes = body.as_bytes();
        for split in 0..=bytes.len() {
            let frames = frames_of(sse, vec![bytes[..split].to_vec(), bytes[split..].to_vec()]);
            assert_eq!(frames, whole, "split at {split}");
        }
        let one_by_one = frames_of(sse, bytes.iter().map(|&b| vec![b]).collect());
        assert_eq!(one_by_one, whole);
    }

    #[test]
    fn a_first_data_line_split_anywhere_loses_its_bom_and_field_name() {
        for body in [
            "\u{feff}data: abc\n\n",
            "data:abc\r\n\r\n",
            "\u{feff}data:  a\n\n",
        ] {
            let whole = sse_frames(&[body]);
            let value = body.trim_start_matches('\u{feff}').trim_end();
            let value = value.strip_prefix("data:").unwrap_or_default();
            let value = value.strip_prefix(' ').unwrap_or(value);
            assert_eq!(events(&whole), vec![("message", value, false)], "{body:?}");
            let bytes = body.as_bytes();
            for split in 0..=bytes.len() {
                let frames = frames_of(sse, vec![bytes[..split].to_vec(), bytes[split..].to_vec()]);
                assert_eq!(frames, whole, "{body:?} split at {split}");
            }
            let one_by_one = frames_of(sse, bytes.iter().map(|&b| vec![b]).collect());
            assert_eq!(one_by_one, whole, "{body:?}");
        }
    }

    #[test]
    fn a_line_split_into_small_and_large_pieces_is_joined_in_order() {
        let value: String = (0u32..6000)
            .map(|i| char::from_u32(u32::from('a') + i % 26).unwrap_or('a'))
            .collect();
        let body = format!("event: e\ndata: {value}\ndata: {value}\n\n");
        let bytes = body.as_bytes();
        let mut chunks = Vec::new();
        let mut at = 0;
        for size in [1, 2, 1500, 3, 7, 2048, 1023, 1024, 5, 4000]
            .into_iter()
            .cycle()
        {
            if at == bytes.len() {
                break;
            }
            let end = (at + size).min(bytes.len());
            chunks.push(bytes[at..end].to_vec());
            at = end;
        }
        let expected = format!("{value}\n{value}");
        for framer in [sse, ndjson] {
            let frames = frames_of(framer, chunks.clone());
            match &frames[..] {
                [Frame::Event { name, data, .. }] => {
                    assert_eq!((name.as_str(), data.as_str()), ("e", expected.as_str()));
                }
                lines => {
                    let lines: Vec<Vec<u8>> = lines
                        .iter()
                        .map(|frame| match frame {
                            Frame::Line { line, .. } => line.to_vec(),
                            other => panic!("unexpected {other:?}"),
                        })
                        .collect();
                    let expected: Vec<Vec<u8>> = body
                        .split('\n')
                        .filter(|line| !line.is_empty())
                        .map(|line| line.as_bytes().to_vec())
                        .collect();
                    assert_eq!(lines, expected);
                }
            }
        }
    }

    #[test]
    fn sse_work_is_linear_in_one_large_event_whatever_the_chunk_size() {
        let value = "x".repeat(1 << 20);
        let body = format!("event: big\ndata: {{\"a\":\"{value}\"}}\n\n");
        for size in [1, 1024, 16 * 1024] {
            let mut parser = SseParser::default();
            let mut out = VecDeque::new();
            for piece in body.as_bytes().chunks(size) {
                parser.push(Bytes::copy_from_slice(piece), &mut out);
            }
            parser.finish(&mut out);
            assert_eq!(out.len(), 1);
            assert!(
                parser.work.bytes <= 6 * body.len(),
                "{} bytes of work for {} bytes in {size}-byte chunks",
                parser.work.bytes,
                body.len()
            );
        }
    }

    #[test]
    fn ndjson_work_is_linear_in_one_large_line_whatever_the_chunk_size() {
        let value = "x".repeat(1 << 20);
        let body = format!("{{\"a\":\"{value}\"}}\n{{\"done\":true}}\n");
        for size in [1, 1024, 16 * 1024] {
            let mut parser = NdjsonParser::default();
            let mut out = VecDeque::new();
            for piece in body.as_bytes().chunks(size) {
                parser.push(Bytes::copy_from_slice(piece), &mut out);
            }
            parser.finish(&mut out);
            assert_eq!(out.len(), 2);
            assert!(
                parser.work.bytes <= 4 * body.len(),
                "{} bytes of work for {} bytes in {size}-byte chunks",
                parser.work.bytes,
                body.len()
            );
        }
    }

    #[test]
    fn the_framer_counts_the_bytes_it_read() {
        let body = futures::stream::iter(vec![
            Ok::<_, String>(Bytes::from_static(b"data: 1\n\n")),
            Ok(Bytes::from_static(b"data: 2")),
            Err(String::from("connection reset")),
        ]);
        let mut frames = sse(body);
        let mut seen = Vec::new();
        while let Some(item) = futures::executor::block_on(frames.next()) {
            seen.push(item);
        }
        assert_eq!(frames.bytes_read(), 16);
        assert_eq!(
            seen,
            vec![
                Ok(Frame::Event {
                    name: "message".into(),
                    data: "1".into(),
                    unterminated: false
                }),
                Err(String::from("connection reset"))
            ]
        );
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
