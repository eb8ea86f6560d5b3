//! [`McpServerConfig`]: how to reach an MCP server, and the command-line parser behind
//! [`McpServerConfig::command_line`].

use std::{fmt, path::PathBuf, time::Duration};

use super::McpClientError;
use crate::secrets::{HiddenValues, Redaction, redact_url};

/// How to reach one MCP server and how to present its tools; see
/// [`McpClient::connect`](super::McpClient::connect).
///
/// ```
/// use std::time::Duration;
///
/// use tool_core::mcp::{McpServerConfig, McpTransportConfig};
///
/// let stdio = McpServerConfig::command("npx", ["-y", "@modelcontextprotocol/server-everything"])
///     .env("LOG_LEVEL", "warn")
///     .cwd("/tmp")
///     .prefix("everything");
/// assert_eq!(stdio.display_name(), "everything");
///
/// let http = McpServerConfig::url("http://127.0.0.1:3001/mcp")
///     .header("authorization", "Bearer x")
///     .connect_timeout(Duration::from_secs(5));
/// assert!(matches!(http.transport(), McpTransportConfig::Http { .. }));
///
/// let parsed = McpServerConfig::command_line("python3 'my server.py' --flag")?;
/// let McpTransportConfig::Command { program, args, .. } = parsed.transport() else {
///     unreachable!()
/// };
/// assert_eq!(program, "python3");
/// assert_eq!(args, &["my server.py", "--flag"]);
/// # Ok::<(), tool_core::mcp::McpClientError>(())
/// ```
///
/// # Limits
///
/// A server is trusted with its own tools' work, not with the application: every answer is
/// bounded.
///
/// | limit | default | past it |
/// |---|---|---|
/// | [`call_timeout`](Self::call_timeout) | 60 s | the call ends with an error, cancelled on the server; the server is pinged, and one that does not answer (within the call timeout, kept to 1 to 10 s) is taken for hung and reconnected |
/// | [`max_result_size`](Self::max_result_size) | 256 KiB | the text is cut, with a note to the model |
/// | [`max_tools`](Self::max_tools) | 256 | only the first tools are used, with a warning |
/// | [`connect_timeout`](Self::connect_timeout) | 60 s | connecting fails; a re-list is given up |
/// | one message | 16 MiB | the call ends with an error giving the answer's size |
///
/// A list is read in at most `max_tools + 1` pages: a cursor that goes on longer fails the
/// connection, and fails a later re-list (after `notifications/tools/list_changed`), which then
/// leaves the previous list in place; [`McpClient::close`](super::McpClient::close) stops a
/// re-list too.
/// A server that lists a tool name twice gets one tool, with the first definition.
///
/// # Secrets
///
/// `Debug` shows the headers' and the environment's names, not their values, and the URL
/// without its user part and query values; so do the client's errors and logs. Requests follow
/// a redirect only within the URL's origin: a redirect to another scheme, host or port is an
/// error, so the headers never reach a host the application did not name.
#[derive(Clone)]
pub struct McpServerConfig {
    pub(super) transport: McpTransportConfig,
    pub(super) name: Option<String>,
    pub(super) prefix: Option<String>,
    pub(super) connect_timeout: Duration,
    pub(super) call_timeout: Duration,
    pub(super) max_result_size: usize,
    pub(super) max_tools: usize,
    pub(super) reconnect: ReconnectPolicy,
    pub(super) trust_annotations: bool,
    pub(super) read_only_tools: Vec<String>,
    pub(super) defer_loading: bool,
    pub(super) eager_tools: Vec<String>,
    /// Refuse the tools whose local names collide instead of numbering them (the gateway's
    /// choice; see `names::unique_local_names`).
    pub(super) refuse_name_collisions: bool,
}

/// The transport to an MCP server.
///
/// `Debug` and `Display` hide the secrets: the environment's and the headers' values, and the
/// URL's user part and query values.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransportConfig {
    /// A child process that speaks MCP on its stdin and stdout (its stderr goes to `tracing`).
    Command {
        /// The program to run, looked up on `PATH` like a shell does.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to (or replacing those of) this process's environment.
        env: Vec<(String, String)>,
        /// The working directory (`None`: this process's).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at a URL.
    Http {
        /// The MCP endpoint, for example `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Headers sent with every request, for example `authorization: Bearer …`.
        headers: Vec<(String, String)>,
    },
}

/// When and how often a lost connection is re-established: the delay before attempt `n`
/// (from 0) is `initial_delay · 2ⁿ`, capped at `max_delay`, with up to ±25 % random jitter so
/// that many clients do not knock at the same moment.
///
/// `Default`: 250 ms doubling up to 30 s, without a limit on attempts (a server that comes
/// back an hour later is picked up within 30 s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    /// The delay before the first attempt.
    pub initial_delay: Duration,
    /// The longest delay between two attempts.
    pub max_delay: Duration,
    /// How many attempts in a row may fail before the client gives up (`None`: never gives up;
    /// `Some(0)`: never reconnects).
    pub max_attempts: Option<u32>,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            initial_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(30),
            max_attempts: None,
        }
    }
}

impl ReconnectPolicy {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Never reconnect: once the connection is lost, the tools answer with an error until the
    /// client is closed.
    pub fn never() -> Self {
        Self {
            max_attempts: Some(0),
            ..Self::default()
        }
    }

    /// Sets the delay before the first attempt.
    #[must_use]
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// Sets the longest delay between two attempts.
    #[must_use]
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Sets how many attempts in a row may fail before the client gives up.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// The delay before attempt `attempt` (from 0), before jitter.
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        self.initial_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }
}

impl McpServerConfig {
    /// How long a tool call waits for the server's answer unless
    /// [`call_timeout`](Self::call_timeout) says otherwise: 60 s.
    pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_mins(1);

    /// The longest result text a model reads unless
    /// [`max_result_size`](Self::max_result_size) says otherwise: 256 KiB.
    pub const DEFAULT_MAX_RESULT_SIZE: usize = 256 * 1024;

    /// How many of a server's tools are used unless [`max_tools`](Self::max_tools) says
    /// otherwise: 256.
    pub const DEFAULT_MAX_TOOLS: usize = 256;

    /// A server started as a child process: `program` with `args`, speaking MCP on stdio.
    pub fn command(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::with_transport(McpTransportConfig::Command {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
        })
    }

    /// A server started from one command-line string such as
    /// `npx -y "@modelcontextprotocol/server-everything"`, split into words like a POSIX shell
    /// does (see [`parse_command_line`]); no shell runs it.
    pub fn command_line(line: &str) -> Result<Self, McpClientError> {
        let mut words = parse_command_line(line)?.into_iter();
        let program = words.next().ok_or(CommandLineError::Empty)?;
        Ok(Self::command(program, words))
    }

    /// A server reached over streamable HTTP at `url`.
    pub fn url(url: impl Into<String>) -> Self {
        Self::with_transport(McpTransportConfig::Http {
            url: url.into(),
            headers: Vec::new(),
        })
    }

    /// A server on the given transport.
    pub fn with_transport(transport: McpTransportConfig) -> Self {
        Self {
            transport,
            name: None,
            prefix: None,
            connect_timeout: Duration::from_mins(1),
            call_timeout: Self::DEFAULT_CALL_TIMEOUT,
            max_result_size: Self::DEFAULT_MAX_RESULT_SIZE,
            max_tools: Self::DEFAULT_MAX_TOOLS,
            reconnect: ReconnectPolicy::default(),
            trust_annotations: false,
            read_only_tools: Vec::new(),
            defer_loading: false,
            eager_tools: Vec::new(),
            refuse_name_collisions: false,
        }
    }

    /// Sets an environment variable of the child process (stdio servers only).
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransportConfig::Command { env, .. } = &mut self.transport {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Sets the working directory of the child process (stdio servers only).
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransportConfig::Command { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every HTTP request (HTTP servers only), for example
    /// `.header("authorization", "Bearer TOKEN")`.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransportConfig::Http { headers, .. } = &mut self.transport {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// Registers every tool as `{prefix}_{name}`, so that two servers' tools cannot collide.
    /// The prefix is 1 to 32 ASCII letters, digits, `_` or `-`. It also names the server in
    /// messages unless [`name`](Self::name) is set.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Names the server in messages and logs (default: the prefix, else the name the server
    /// gives itself, else the command or the URL without its secrets).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets how long starting the server, the handshake and the first `tools/list` may take
    /// together (default 60 s: `npx` may download the package first).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the timeout of every call to this server's tools (default 60 s).
    #[must_use]
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets the longest result text, in bytes (default 256 KiB).
    #[must_use]
    pub fn max_result_size(mut self, bytes: usize) -> Self {
        self.max_result_size = bytes;
        self
    }

    /// Sets how many of the server's tools are used (default 256).
    #[must_use]
    pub fn max_tools(mut self, count: usize) -> Self {
        self.max_tools = count;
        self
    }

    /// Sets the reconnection policy.
    #[must_use]
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }

    /// Believes the server's tool annotations (`readOnlyHint`, `destructiveHint`,
    /// `idempotentHint`, `openWorldHint`), read with the defaults MCP gives a missing one (not
    /// read-only, destructive, not idempotent, open world). By default they are not believed:
    /// they are only the server's claims, so every tool gets those defaults whatever it
    /// claims, and an [`ApprovalPolicy`](crate::agent::ApprovalPolicy) that asks about
    /// destructive tools asks about every tool of the server.
    #[must_use]
    pub fn trust_annotations(mut self, trust: bool) -> Self {
        self.trust_annotations = trust;
        self
    }

    /// Names tools of the server (as the server names them, before any
    /// [`prefix`](Self::prefix)) that only read, in the application's own judgment: they are
    /// read-only and not destructive whatever the server's annotations say, so an
    /// [`ApprovalPolicy`](crate::agent::ApprovalPolicy) that asks about destructive tools does
    /// not ask about them. Calls add to the list.
    #[must_use]
    pub fn read_only_tools(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.read_only_tools
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Defers every tool of the server (see
    /// [`ToolMetadata::defer_loading`](crate::ToolMetadata::defer_loading)), those named with
    /// [`eager_tools`](Self::eager_tools) excepted: an agent leaves their definitions out of
    /// its requests until its `search_tools` loads them. Tools the server adds later (a
    /// `list_changed`) are deferred too, and the search index follows the server's list.
    #[must_use]
    pub fn defer_loading(mut self, defer: bool) -> Self {
        self.defer_loading = defer;
        self
    }

    /// Names tools of the server (as the server names them, before any
    /// [`prefix`](Self::prefix)) that stay eager when the server is
    /// [deferred](Self::defer_loading): always offered, never searched for. Calls add to the
    /// list.
    #[must_use]
    pub fn eager_tools(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.eager_tools.extend(names.into_iter().map(Into::into));
        self
    }

    /// Tools whose local names would collide (two remote names mapped to one) are left out,
    /// with an error in the log naming the server, instead of numbered in the server's order.
    #[cfg(feature = "gateway")]
    #[must_use]
    pub(crate) fn refuse_name_collisions(mut self) -> Self {
        self.refuse_name_collisions = true;
        self
    }

    /// The transport.
    pub fn transport(&self) -> &McpTransportConfig {
        &self.transport
    }

    /// The tool name prefix, if any.
    pub fn tool_prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// The name of the server in messages before it has named itself: the configured name,
    /// else the prefix, else the command line or the URL (without its user part and query
    /// values).
    pub fn display_name(&self) -> String {
        if let Some(name) = self.name.as_ref().or(self.prefix.as_ref()) {
            return name.clone();
        }
        self.transport.to_string()
    }

    pub(crate) fn validate(&self) -> Result<(), McpClientError> {
        if let Some(prefix) = &self.prefix {
            let valid = !prefix.is_empty()
                && prefix.len() <= 32
                && prefix
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !valid {
                return Err(McpClientError::InvalidPrefix {
                    prefix: prefix.clone(),
                });
            }
        }
        if let McpTransportConfig::Http { headers, .. } = &self.transport {
            for (name, value) in headers {
                header_pair(name, value)?;
            }
        }
        Ok(())
    }
}

/// A configured header as `reqwest` types, or the error naming it: `McpServerConfig::validate`
/// checks every header with it, and the connection builds its requests' headers with it.
pub(super) fn header_pair(
    name: &str,
    value: &str,
) -> Result<(reqwest::header::HeaderName, reqwest::header::HeaderValue), McpClientError> {
    let invalid = || McpClientError::InvalidHeader {
        name: name.to_owned(),
    };
    let header_name = reqwest::header::HeaderName::try_from(name).map_err(|_| invalid())?;
    let header_value = reqwest::header::HeaderValue::try_from(value).map_err(|_| invalid())?;
    Ok((header_name, header_value))
}

impl fmt::Display for McpTransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args, .. } => {
                f.write_str(program)?;
                for arg in args {
                    write!(f, " {arg}")?;
                }
                Ok(())
            }
            Self::Http { url, .. } => f.write_str(&redact_url(url, Redaction::Credentials)),
        }
    }
}

impl fmt::Debug for McpTransportConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command {
                program,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Command")
                .field("program", program)
                .field("args", args)
                .field("env", &HiddenValues(env))
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", &redact_url(url, Redaction::Credentials))
                .field("headers", &HiddenValues(headers))
                .finish(),
        }
    }
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("transport", &self.transport)
            .field("name", &self.name)
            .field("prefix", &self.prefix)
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("max_result_size", &self.max_result_size)
            .field("max_tools", &self.max_tools)
            .field("reconnect", &self.reconnect)
            .field("trust_annotations", &self.trust_annotations)
            .field("read_only_tools", &self.read_only_tools)
            .field("defer_loading", &self.defer_loading)
            .field("eager_tools", &self.eager_tools)
            .field("refuse_name_collisions", &self.refuse_name_collisions)
            .finish()
    }
}

/// Why a command line could not be split into words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandLineError {
    /// The line has no words.
    #[error("the command line is empty")]
    Empty,
    /// A quote is not closed.
    #[error("the command line has an unclosed {quote} quote")]
    UnclosedQuote {
        /// `'` or `"`.
        quote: char,
    },
    /// The line ends with a lone backslash.
    #[error("the command line ends with a lone backslash")]
    TrailingBackslash,
}

/// Splits a command line into words the way a POSIX shell does, without expanding anything:
/// blanks separate words; `'…'` keeps everything literally; `"…"` keeps everything but lets
/// `\` escape `"`, `\`, `$` and `` ` ``; outside quotes `\` escapes the next character; `''`
/// or `""` is an empty word.
///
/// ```
/// use tool_core::mcp::parse_command_line;
///
/// assert_eq!(
///     parse_command_line(r#"npx -y "@scope/server" --name 'a b' c\ d"#).unwrap(),
///     ["npx", "-y", "@scope/server", "--name", "a b", "c d"]
/// );
/// assert!(parse_command_line("echo 'open").is_err());
/// ```
pub fn parse_command_line(line: &str) -> Result<Vec<String>, CommandLineError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether a word has started: `''` is an empty word, blanks are none.
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(CommandLineError::UnclosedQuote { quote: '\'' }),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            // A backslash-newline inside double quotes joins lines.
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(CommandLineError::UnclosedQuote { quote: '"' }),
                        },
                        Some(c) => word.push(c),
                        None => return Err(CommandLineError::UnclosedQuote { quote: '"' }),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(CommandLineError::TrailingBackslash),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(CommandLineError::Empty);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_quotes_and_escapes_split_like_a_shell() {
        let cases: &[(&str, &[&str])] = &[
            ("a b  c", &["a", "b", "c"]),
            ("  lead and trail  ", &["lead", "and", "trail"]),
            ("'a b' \"c d\"", &["a b", "c d"]),
            ("x'y'\"z\"", &["xyz"]),
            ("'' \"\"", &["", ""]),
            (r#""a \" \\ \$ \n""#, &["a \" \\ $ \\n"]),
            (r"'\n stays'", &[r"\n stays"]),
            (r"a\ b \'c", &["a b", "'c"]),
            ("tab\tsep\nnewline", &["tab", "sep", "newline"]),
            ("unicode é 'ü ß'", &["unicode", "é", "ü ß"]),
        ];
        for (line, expected) in cases {
            assert_eq!(parse_command_line(line).unwrap(), *expected, "{line}");
        }
    }

    #[test]
    fn broken_lines_are_errors() {
        assert_eq!(parse_command_line("   "), Err(CommandLineError::Empty));
        assert_eq!(
            parse_command_line("a 'b"),
            Err(CommandLineError::UnclosedQuote { quote: '\'' })
        );
        assert_eq!(
            parse_command_line("a \"b\\\""),
            Err(CommandLineError::UnclosedQuote { quote: '"' })
        );
        assert_eq!(
            parse_command_line("a \\"),
            Err(CommandLineError::TrailingBackslash)
        );
    }

    #[test]
    fn reconnect_delays_double_up_to_the_cap() {
        let policy = ReconnectPolicy::new()
            .initial_delay(Duration::from_millis(100))
            .max_delay(Duration::from_secs(1));
        let delays: Vec<u128> = (0..6).map(|n| policy.delay(n).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.delay(u32::MAX), Duration::from_secs(1));
    }
}
