//! The size limit of one message on stdio (one line of newline-delimited JSON-RPC).
//!
//! [`LimitedLines`] passes the client's bytes through line by line. A line longer than the
//! limit is not passed on: it is read to its end without being kept, its top-level `id` is
//! picked out on the way, and in its place the server sees a small request
//! ([`TOO_LARGE_METHOD`]) with that id, which it answers with a JSON-RPC error. So the client
//! gets an answer instead of waiting for ever, and memory stays bounded by the limit.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

use super::handler::TOO_LARGE_METHOD;

/// The longest `id` value kept from an oversized line; a longer one is not answered.
const MAX_ID_BYTES: usize = 256;

/// An [`AsyncRead`] of newline-delimited messages in which a line over `limit` bytes is
/// replaced by a [`TOO_LARGE_METHOD`] request with the same id (or dropped, when it has none).
pub(crate) struct LimitedLines<R> {
    inner: R,
    limit: usize,
    /// The current line, not yet passed on (at most `limit` bytes).
    line: Vec<u8>,
    /// Bytes ready to be read: complete lines, or a substitute request.
    ready: Vec<u8>,
    ready_at: usize,
    /// Set while the rest of an oversized line is read and dropped.
    skipping: Option<IdScanner>,
    eof: bool,
    /// Cancelled at the end of input.
    closed: CancellationToken,
}

impl<R> LimitedLines<R> {
    pub(crate) fn new(inner: R, limit: usize, closed: CancellationToken) -> Self {
        Self {
            inner,
            limit,
            line: Vec::new(),
            ready: Vec::new(),
            ready_at: 0,
            skipping: None,
            eof: false,
            closed,
        }
    }

    /// Takes in bytes from the client.
    fn absorb(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&byte| byte == b'\n');
            let (part, rest, complete) = match end {
                Some(end) => (&bytes[..end], &bytes[end + 1..], true),
                None => (bytes, &[][..], false),
            };
            bytes = rest;
            if let Some(scanner) = &mut self.skipping {
                scanner.feed(part);
            } else if self.line.len() + part.len() > self.limit {
                let mut scanner = IdScanner::default();
                scanner.feed(&self.line);
                scanner.feed(part);
                self.line = Vec::new();
                self.skipping = Some(scanner);
            } else {
                self.line.extend_from_slice(part);
            }
            if complete {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        if let Some(scanner) = self.skipping.take() {
            if let Some(id) = scanner.id() {
                let request = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "method": TOO_LARGE_METHOD,
                    "params": {"limit": self.limit},
                });
                self.ready.extend_from_slice(request.to_string().as_bytes());
                self.ready.push(b'\n');
            } else {
                tracing::warn!(
                    limit = self.limit,
                    "dropped an mcp message over the size limit that has no id to answer"
                );
            }
        } else {
            self.ready.append(&mut self.line);
            self.ready.push(b'\n');
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LimitedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let mut chunk = [0u8; 8192];
        loop {
            if this.ready_at < this.ready.len() {
                let available = &this.ready[this.ready_at..];
                let n = available.len().min(buf.remaining());
                buf.put_slice(&available[..n]);
                this.ready_at += n;
                if this.ready_at == this.ready.len() {
                    this.ready.clear();
                    this.ready_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Ready(Ok(())) if read.filled().is_empty() => {
                    this.eof = true;
                    this.closed.cancel();
                    // A last line without its newline still counts.
                    if !this.line.is_empty() || this.skipping.is_some() {
                        this.end_line();
                    }
                }
                Poll::Ready(Ok(())) => {
                    let filled = read.filled().to_vec();
                    this.absorb(&filled);
                }
            }
        }
    }
}

/// Finds the value of the top-level `"id"` member of a JSON object read in pieces, keeping
/// only the key being read and the id's own bytes.
// The flags are a byte scanner's state (inside a string, after a backslash, ...), each read
// on every byte; an enum of their combinations would be harder to follow.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Default)]
struct IdScanner {
    depth: usize,
    in_string: bool,
    escaped: bool,
    expect_key: bool,
    /// The top-level key being read (only its first few bytes).
    key: Option<Vec<u8>>,
    last_key_is_id: bool,
    /// The id's bytes while they are read.
    value: Option<Vec<u8>>,
    found: Option<Vec<u8>>,
    failed: bool,
}

impl IdScanner {
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if self.failed {
                return;
            }
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if let Some(value) = &mut self.value {
            let ends = !self.in_string && self.depth == 1 && matches!(byte, b',' | b'}');
            if ends {
                self.found = self.value.take();
            } else {
                value.push(byte);
                if value.len() > MAX_ID_BYTES {
                    self.value = None;
                }
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    self.last_key_is_id = key == b"id";
                }
                return;
            }
            if let Some(key) = &mut self.key {
                if key.len() < 8 {
                    key.push(byte);
                }
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.key = Some(Vec::new());
                    self.expect_key = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = byte == b'{';
                }
            }
            b'}' | b']' => {
                if self.depth == 0 {
                    self.failed = true;
                } else {
                    self.depth -= 1;
                }
            }
            b',' if self.depth == 1 => self.expect_key = true,
            b':' if self.depth == 1 && self.last_key_is_id => {
                self.last_key_is_id = false;
                if self.found.is_none() {
                    self.value = Some(Vec::new());
                }
            }
            _ => {}
        }
    }

    /// The id, when it is a JSON string or number.
    fn id(&self) -> Option<serde_json::Value> {
        let bytes = self.found.as_ref()?;
        let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        (value.is_string() || value.is_number()).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::AsyncReadExt;

    use super::*;

    fn scan(text: &str, piece: usize) -> Option<Value> {
        let mut scanner = IdScanner::default();
        for chunk in text.as_bytes().chunks(piece) {
            scanner.feed(chunk);
        }
        scanner.id()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_stands() {
        let big = "x".repeat(1000);
        for piece in [1, 7, 4096] {
            assert_eq!(
                scan(r#"{"jsonrpc":"2.0","id":42,"method":"m"}"#, piece),
                Some(json!(42))
            );
            let text = format!(
                r#"{{"method":"tools/call","params":{{"id":"inner","a":"{big}\"}}"}},"jsonrpc":"2.0","id":"abc"}}"#
            );
            assert_eq!(scan(&text, piece), Some(json!("abc")), "{piece}");
            assert_eq!(scan(r#"{"jsonrpc":"2.0","method":"n"}"#, piece), None);
            assert_eq!(scan(r#"{"id":{"a":1},"method":"n"}"#, piece), None);
        }
    }

    #[tokio::test]
    async fn an_oversized_line_becomes_a_too_large_request_and_others_pass() {
        let big = "y".repeat(300);
        let input = format!(
            "{{\"id\":1,\"method\":\"a\"}}\n{{\"method\":\"b\",\"params\":{{\"s\":\"{big}\"}},\"id\":2}}\n{{\"id\":3}}\n"
        );
        let closed = CancellationToken::new();
        let mut reader = LimitedLines::new(input.as_bytes(), 100, closed.clone());
        let mut out = String::new();
        reader.read_to_string(&mut out).await.unwrap();
        assert!(closed.is_cancelled(), "the end of input is told");
        let lines: Vec<Value> = out
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(
            lines,
            [
                json!({"id": 1, "method": "a"}),
                json!({"jsonrpc": "2.0", "id": 2, "method": TOO_LARGE_METHOD, "params": {"limit": 100}}),
                json!({"id": 3}),
            ]
        );
    }
}
