//! The size limit of a message from a server over stdio.
//!
//! `rmcp` drops a line longer than its cap without a word, so a call whose answer is too long
//! waits for its timeout. [`LimitedLines`] sits between the child's stdout and `rmcp` and does
//! better: a line longer than the limit is cut off (the part already passed on ends with a
//! newline, which `rmcp` reads as an unfinished message and ignores), the rest is read and
//! dropped, and when the dropped message was an answer, an error answer with the same id takes
//! its place. The call it answers ends at once, saying how long the answer was.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// The longest message a server may send, in bytes: 16 MiB, as `rmcp`'s streamable HTTP
/// client allows.
pub(super) const MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// The member of an error answer's `data` that says the answer was replaced: `{"size": …,
/// "limit": …}`.
pub(super) const OVERSIZED: &str = "toolCoreOversizedAnswer";

/// Passes lines through up to `limit` bytes each; see the [module docs](self).
pub(super) struct LimitedLines<R> {
    inner: R,
    limit: usize,
    /// The bytes of the current line read so far (passed on or dropped).
    line_len: usize,
    /// Whether the current line is over the limit and being dropped.
    dropping: bool,
    envelope: Envelope,
    /// What goes out before anything else is read: the newline that cuts a long line off, or
    /// the error answer that replaces it.
    pending: Vec<u8>,
    pending_at: usize,
    buffer: Box<[u8]>,
    start: usize,
    end: usize,
}

impl<R> LimitedLines<R> {
    pub(super) fn new(inner: R, limit: usize) -> Self {
        Self {
            inner,
            limit,
            line_len: 0,
            dropping: false,
            envelope: Envelope::default(),
            pending: Vec::new(),
            pending_at: 0,
            buffer: vec![0; 64 * 1024].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    /// Ends the dropped line: the error answer that takes its place, if it was an answer.
    fn end_dropped_line(&mut self) {
        let size = self.line_len;
        let envelope = std::mem::take(&mut self.envelope);
        self.line_len = 0;
        self.dropping = false;
        self.pending.clear();
        self.pending_at = 0;
        let Some(id) = envelope.answer_id() else {
            tracing::warn!(
                size,
                limit = self.limit,
                "an mcp server sent a message over the size limit; it was dropped"
            );
            return;
        };
        let message = format!(
            "the answer was {size} bytes, over the limit of {} bytes",
            self.limit
        );
        let answer = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": -32603,
                "message": message,
                "data": {OVERSIZED: {"size": size, "limit": self.limit}},
            },
        });
        self.pending = answer.to_string().into_bytes();
        self.pending.push(b'\n');
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LimitedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if out.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if this.pending_at < this.pending.len() {
                let rest = &this.pending[this.pending_at..];
                let n = rest.len().min(out.remaining());
                out.put_slice(&rest[..n]);
                this.pending_at += n;
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                let mut read = ReadBuf::new(&mut this.buffer);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                let n = read.filled().len();
                if n == 0 {
                    // The end: a line being dropped ends with it.
                    return Poll::Ready(Ok(()));
                }
                this.start = 0;
                this.end = n;
            }
            let chunk = &this.buffer[this.start..this.end];
            if this.dropping {
                let newline = chunk.iter().position(|&byte| byte == b'\n');
                let content = &chunk[..newline.unwrap_or(chunk.len())];
                this.envelope.feed(content);
                this.line_len += content.len();
                this.start += newline.map_or(chunk.len(), |at| at + 1);
                if newline.is_some() {
                    this.end_dropped_line();
                }
                continue;
            }
            let room = this.limit - this.line_len;
            let available = chunk.len().min(out.remaining());
            let newline = chunk[..available].iter().position(|&byte| byte == b'\n');
            let passed = match newline {
                Some(at) if at <= room => {
                    this.envelope = Envelope::default();
                    this.line_len = 0;
                    at + 1
                }
                _ if available > room => {
                    // The line is over the limit: cut it off here and drop the rest.
                    this.envelope.feed(&chunk[..room]);
                    this.line_len += room;
                    this.dropping = true;
                    this.pending.clear();
                    this.pending.push(b'\n');
                    this.pending_at = 0;
                    room
                }
                _ => {
                    this.envelope.feed(&chunk[..available]);
                    this.line_len += available;
                    available
                }
            };
            out.put_slice(&chunk[..passed]);
            this.start += passed;
            if passed > 0 {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

/// What a JSON-RPC message says at its top level, read as its bytes go by without keeping
/// them: its `id`, and whether it is an answer (`result` or `error`) or a request or
/// notification (`method`).
#[derive(Default)]
struct Envelope {
    depth: u32,
    lexer: Lexer,
    /// At depth 1: what comes next.
    expect: Expect,
    /// What the bytes being read are kept for.
    reading: Reading,
    /// The top-level key being read (only its first bytes: the keys of interest are short).
    key: Vec<u8>,
    /// The raw text of the `id` value.
    id: Vec<u8>,
    /// Whether `id` holds a whole value.
    id_done: bool,
    kind: Kind,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Lexer {
    #[default]
    Plain,
    InString,
    /// After a backslash in a string.
    Escaped,
}

#[derive(Default, PartialEq, Eq)]
enum Expect {
    #[default]
    Key,
    Colon,
    Value,
}

#[derive(Default, PartialEq, Eq)]
enum Reading {
    #[default]
    Nothing,
    Key,
    Id,
}

#[derive(Default, PartialEq, Eq)]
enum Kind {
    #[default]
    Unknown,
    /// Has `result` or `error`.
    Answer,
    /// Has `method`, whatever else it has.
    Request,
}

/// Longer ids are not answered (no sane client sends them).
const MAX_ID_LEN: usize = 256;
/// Top-level keys are compared on this many bytes at most.
const MAX_KEY_LEN: usize = 8;

impl Envelope {
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.byte(byte);
        }
    }

    fn byte(&mut self, byte: u8) {
        match self.lexer {
            Lexer::Escaped => {
                self.lexer = Lexer::InString;
                self.keep(byte);
                return;
            }
            Lexer::InString => {
                match byte {
                    b'\\' => self.lexer = Lexer::Escaped,
                    b'"' => {
                        self.lexer = Lexer::Plain;
                        if self.reading == Reading::Key {
                            self.reading = Reading::Nothing;
                            self.expect = Expect::Colon;
                            return;
                        }
                    }
                    _ => {}
                }
                self.keep(byte);
                return;
            }
            Lexer::Plain => {}
        }
        match byte {
            b'"' => {
                self.lexer = Lexer::InString;
                if self.depth == 1 && self.expect == Expect::Key {
                    self.reading = Reading::Key;
                    self.key.clear();
                } else {
                    self.keep(byte);
                }
            }
            b'{' | b'[' => {
                self.keep(byte);
                self.depth += 1;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.end_id();
                } else {
                    self.keep(byte);
                }
            }
            b':' if self.depth == 1 && self.expect == Expect::Colon => {
                self.expect = Expect::Value;
                match self.key.as_slice() {
                    b"id" => {
                        self.reading = Reading::Id;
                        self.id.clear();
                    }
                    b"result" | b"error" if self.kind == Kind::Unknown => self.kind = Kind::Answer,
                    b"method" => self.kind = Kind::Request,
                    _ => {}
                }
            }
            b',' if self.depth == 1 => {
                self.end_id();
                self.expect = Expect::Key;
            }
            byte if byte.is_ascii_whitespace() => {}
            byte => self.keep(byte),
        }
    }

    /// Keeps a byte of the key or of the id being read.
    fn keep(&mut self, byte: u8) {
        match self.reading {
            Reading::Key if self.key.len() <= MAX_KEY_LEN => self.key.push(byte),
            Reading::Id if self.id.len() <= MAX_ID_LEN => self.id.push(byte),
            _ => {}
        }
    }

    fn end_id(&mut self) {
        if self.reading == Reading::Id {
            self.reading = Reading::Nothing;
            self.id_done = true;
        }
    }

    /// The id of the message if it is an answer (`result` or `error` with an `id`, and no
    /// `method`) and its id is a number or a string.
    fn answer_id(&self) -> Option<Value> {
        if self.kind != Kind::Answer || !self.id_done || self.id.len() > MAX_ID_LEN {
            return None;
        }
        let id: Value = serde_json::from_slice(&self.id).ok()?;
        (id.is_number() || id.is_string()).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn envelope(text: &str) -> Envelope {
        let mut envelope = Envelope::default();
        // Fed in small pieces, as reads come.
        for piece in text.as_bytes().chunks(3) {
            envelope.feed(piece);
        }
        envelope
    }

    #[test]
    fn the_id_of_an_answer_is_found_wherever_it_is() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"x":"}{,\"id\":1"}}"#,
                Some(json!(7)),
            ),
            (
                r#"{"result":{"id":9,"a":[1,{"b":2}]}, "id" : "a\"b" }"#,
                Some(json!("a\"b")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}"#,
                Some(json!(3)),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}"#,
                None,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":1}}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0","id":{"x":1},"result":{}}"#, None),
            (r#"{"jsonrpc":"2.0","result":{}}"#, None),
        ];
        for (text, expected) in cases {
            assert_eq!(envelope(text).answer_id(), expected, "{text}");
        }
    }

    async fn read_all(input: &[u8], limit: usize) -> String {
        let mut reader = LimitedLines::new(input, limit);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn short_lines_pass_and_a_long_answer_is_replaced_by_an_error() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":5,"result":{{"t":"{}"}}}}"#,
            "x".repeat(100)
        );
        let input = format!("{{\"a\":1}}\n{long}\n{{\"b\":2}}\n");
        let out = read_all(input.as_bytes(), 40).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[0], r#"{"a":1}"#);
        assert_eq!(lines[1], &long[..40]);
        let error: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(error["id"], json!(5));
        assert_eq!(
            error["error"]["data"][OVERSIZED],
            json!({"size": long.len(), "limit": 40})
        );
        assert_eq!(lines[3], r#"{"b":2}"#);

        // A line of exactly the limit passes whole.
        let exact = "y".repeat(40);
        assert_eq!(
            read_all(format!("{exact}\n").as_bytes(), 40).await,
            format!("{exact}\n")
        );
    }

    #[tokio::test]
    async fn a_long_message_that_is_no_answer_is_dropped() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"t":"{}"}}}}"#,
            "x".repeat(100)
        );
        let out = read_all(format!("{long}\n{{\"b\":2}}\n").as_bytes(), 40).await;
        assert_eq!(out, format!("{}\n{{\"b\":2}}\n", &long[..40]));
    }
}
