//! [`GatewayConfig`]: the gateway's TOML file.

use std::{collections::BTreeMap, net::IpAddr, path::PathBuf, time::Duration};

use serde::Deserialize;
use serde_json::Value;

use super::GatewayError;
use crate::{
    mcp::{McpClientError, McpServerConfig, McpTransportConfig},
    secrets::{HiddenValues, Redaction, redact_url},
};

/// The gateway's configuration, usually read from a TOML file with [`GatewayConfig::from_toml`];
/// the [module docs](super) show a whole file.
///
/// Tokens appear here only as SHA-256 hashes (hex), so the file gives no access when read.
/// Unknown keys are an error, so a misspelt limit is not silently ignored.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// How the gateway serves.
    #[serde(default)]
    pub gateway: ServeConfig,
    /// The users and their bearer tokens (hashed).
    #[serde(default)]
    pub users: Vec<UserConfig>,
    /// The upstream MCP servers.
    #[serde(default)]
    pub servers: Vec<UpstreamConfig>,
    /// Tools defined in the file itself, in the format of [`crate::config`].
    #[serde(default)]
    pub tools: Vec<Value>,
}

/// The `[gateway]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
#[allow(clippy::struct_excessive_bools)] // Each is a key of the TOML table.
pub struct ServeConfig {
    /// The server's name in `initialize` answers (default `tool-core-gateway`).
    pub name: String,
    /// The HTTP address (default `127.0.0.1:8090`).
    pub listen: String,
    /// The path of the MCP endpoint (default `/mcp`).
    pub path: String,
    /// Serve HTTP without sessions (default `false`).
    pub stateless: bool,
    /// `Host` values accepted on HTTP (default: loopback names and the bound address); a
    /// gateway reached by a name (behind a load balancer, in a container) lists it here. An
    /// empty list is refused.
    pub allowed_hosts: Option<Vec<String>>,
    /// `Origin` values accepted on HTTP (default: pages on loopback).
    pub allowed_origins: Option<Vec<String>>,
    /// The largest HTTP request body in bytes (default 4 MiB).
    pub max_request_bytes: usize,
    /// Where each user's switches are kept: `sqlite://path` (default `sqlite://gateway.db`,
    /// beside the configuration file), `postgres://…`, or `memory:`.
    pub store: String,
    /// Keep the pinned tool definitions in this JSON file (relative to the configuration
    /// file) instead of the store; for one process only. Default none: they are kept in the
    /// store (`memory:` keeps them in memory only), where every process sharing it sees them.
    pub pins_file: Option<String>,
    /// How long an HTTP session lasts without a request (default 300 s). With an SQL store a
    /// session, and its own switches, live in the store: any process sharing the store serves
    /// it, and it ends with its client's `DELETE` or once no process held it for this long.
    pub session_idle_timeout_secs: u64,
    /// Withhold an upstream tool whose definition changed since it was first served until an
    /// operator accepts the change (default `true`).
    pub pin_definitions: bool,
    /// Most pins the tools of one server hold (default 1024, four times the 256 tools a server
    /// may list). Pins outlive their tools (a tool that comes back is checked against its
    /// pin), so a server that keeps offering new tool names would grow them without end: past
    /// this many, its new tools are withheld, with a log line, until an operator drops the
    /// pins of tools it no longer offers (`DELETE /admin/pins/{tool}`).
    pub max_pins_per_server: usize,
    /// The user of a stdio client (default `local`).
    pub stdio_user: String,
    /// The user of HTTP requests without credentials from a client on this host (default
    /// none: such requests are refused). Honoured only when the gateway listens on a loopback
    /// address, and never for a request a proxy forwarded (one with `Forwarded`,
    /// `X-Forwarded-For`, `X-Forwarded-Host`, `X-Forwarded-Proto`, `X-Real-IP` or `Via`) or
    /// one from a `trusted_proxy` address.
    pub anonymous_user: Option<String>,
    /// The SHA-256 (hex) of the admin API's bearer token; without it the admin API is off.
    pub admin_token_sha256: Option<String>,
    /// A proxy that authenticates users and names them in a header.
    pub trusted_proxy: Option<TrustedProxy>,
    /// Most tool calls one user may start per minute (default 600).
    pub calls_per_minute: u32,
    /// Most HTTP requests of every kind (`initialize`, `tools/list`, `tools/call`,
    /// notifications, `GET` streams, `DELETE`) one user may make per minute, a looser budget
    /// than `calls_per_minute` beside it (default 1200). A request over it is answered `429`
    /// with a JSON-RPC error and `Retry-After`.
    pub requests_per_minute: u32,
    /// Most HTTP sessions one user may hold at once in one process (default 16, of the 256
    /// the process holds at most). An `initialize` over it is answered `429` with a JSON-RPC
    /// error; a session ends with its client's `DELETE` or once idle.
    pub max_sessions_per_user: u32,
    /// Most streams one user may hold open at once in one process: `GET` event streams and
    /// 2026-07-28 `subscriptions/listen` streams (default 32, of the 512 connections the
    /// process serves at most). A `GET` over it is answered `429` with a JSON-RPC error, a
    /// `subscriptions/listen` over it with a JSON-RPC error on its stream.
    pub max_streams_per_user: u32,
    /// Most tool calls one user may have running at once on one server (default 16): each
    /// upstream server, and the gateway's own tools, count apart, so calls hanging on one
    /// server do not hold back the user's calls to the others.
    pub max_concurrent_calls: u32,
    /// How many users this process keeps in memory before it forgets the idle ones (default
    /// 4096). A user's limits and switches are kept from their request on; once this many
    /// users are kept, those with no stream, session or call open whose rate limits have
    /// filled up again are forgotten, and their switches read from the store again on their
    /// next request. So names a `trusted_proxy` sends without end cannot fill the memory:
    /// this process holds at most this many users, or twice as many as are in use.
    pub max_idle_users: usize,
    /// List only `search_tools`, `set_tool_enabled` and the pinned tools, instead of every
    /// tool, to every user whose `[[users]]` entry does not say otherwise (default `false`);
    /// the other tools are found with `search_tools` and called by name.
    pub tool_search: bool,
    /// The tools listed with tool search on (by the gateway's names), for users whose entry
    /// names none.
    pub pinned_tools: Vec<String>,
    /// Answer stateless `tools/call` requests before the MCP library's per-request service
    /// (default `true`); off, they take the same way as every other request. For comparing
    /// the two ways.
    #[doc(hidden)]
    pub fast_calls: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            name: "tool-core-gateway".to_owned(),
            listen: "127.0.0.1:8090".to_owned(),
            path: "/mcp".to_owned(),
            stateless: false,
            allowed_hosts: None,
            allowed_origins: None,
            max_request_bytes: crate::mcp::DEFAULT_MAX_REQUEST_BYTES,
            store: "sqlite://gateway.db".to_owned(),
            pins_file: None,
            session_idle_timeout_secs: 300,
            pin_definitions: true,
            max_pins_per_server: 1024,
            stdio_user: "local".to_owned(),
            anonymous_user: None,
            admin_token_sha256: None,
            trusted_proxy: None,
            calls_per_minute: 600,
            requests_per_minute: 1200,
            max_sessions_per_user: 16,
            max_streams_per_user: 32,
            max_concurrent_calls: 16,
            max_idle_users: 4096,
            tool_search: false,
            pinned_tools: Vec::new(),
            fast_calls: true,
        }
    }
}

/// A proxy in front of the gateway that authenticates users: requests from its addresses may
/// name their user in [`user_header`](Self::user_header); from anywhere else the header is
/// ignored.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TrustedProxy {
    /// The proxy's addresses.
    pub addresses: Vec<IpAddr>,
    /// The header carrying the user's name (for example `x-forwarded-user`).
    pub user_header: String,
}

/// One `[[users]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct UserConfig {
    /// The user's name: 1 to 64 ASCII letters, digits, `-`, `_` or `.`.
    pub name: String,
    /// The SHA-256 (hex) of the user's bearer token.
    pub token_sha256: String,
    /// Tool search for this user, over `[gateway] tool_search`.
    pub tool_search: Option<bool>,
    /// The tools listed for this user with tool search on, over `[gateway] pinned_tools`.
    pub pinned_tools: Option<Vec<String>>,
}

/// One `[[servers]]` entry: an upstream MCP server.
///
/// Its `Debug` output names the `env` variables and `headers` without their values, and shows
/// `url` without credentials.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct UpstreamConfig {
    /// The server's name in logs, `/healthz` and errors; unique.
    pub name: String,
    /// A program speaking MCP on stdio (exclusive with `url`).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// A streamable HTTP endpoint (exclusive with `command`).
    pub url: Option<String>,
    /// Headers sent with every request to `url`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The longest a call may take, in milliseconds (default 60 000).
    pub timeout_ms: Option<u64>,
    /// The prefix of the server's tool names (`{prefix}_{name}`; default the server's name,
    /// `""` for none).
    pub prefix: Option<String>,
    /// Leave the server's tools out of every user's `tools/list` (default `false`): they are
    /// found with `search_tools`, listed to each user who has one of them switched on (tool
    /// search on or off), and called by their names. With tool search on, one named in
    /// `pinned_tools` is listed as every pinned tool is.
    #[serde(default)]
    pub deferred: bool,
    /// Only these tools (by the server's names) are served; default all.
    pub allow: Option<Vec<String>>,
    /// These tools (by the server's names) are never served.
    #[serde(default)]
    pub block: Vec<String>,
}

impl std::fmt::Debug for UpstreamConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |values: &BTreeMap<String, String>| -> Vec<(String, String)> {
            values
                .iter()
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect()
        };
        let (env, headers) = (hidden(&self.env), hidden(&self.headers));
        f.debug_struct("UpstreamConfig")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &HiddenValues(&env))
            .field("cwd", &self.cwd)
            .field(
                "url",
                &self
                    .url
                    .as_deref()
                    .map(|url| redact_url(url, Redaction::Credentials)),
            )
            .field("headers", &HiddenValues(&headers))
            .field("timeout_ms", &self.timeout_ms)
            .field("prefix", &self.prefix)
            .field("deferred", &self.deferred)
            .field("allow", &self.allow)
            .field("block", &self.block)
            .finish()
    }
}

impl GatewayConfig {
    /// The tools listed for `user` when tool search is on for them; `None` when it is off.
    pub(crate) fn pinned_tools(&self, user: &str) -> Option<&[String]> {
        let entry = self.users.iter().find(|entry| entry.name == user);
        let on = entry
            .and_then(|entry| entry.tool_search)
            .unwrap_or(self.gateway.tool_search);
        on.then(|| {
            entry
                .and_then(|entry| entry.pinned_tools.as_deref())
                .unwrap_or(&self.gateway.pinned_tools)
        })
    }

    /// Whether any user may have tool search.
    pub(crate) fn any_tool_search(&self) -> bool {
        self.gateway.tool_search
            || self
                .users
                .iter()
                .any(|entry| entry.tool_search == Some(true))
    }

    /// Whether any server is deferred.
    pub(crate) fn any_deferred(&self) -> bool {
        self.servers.iter().any(|server| server.deferred)
    }

    /// Reads a configuration from TOML text.
    pub fn from_toml(text: &str) -> Result<Self, GatewayError> {
        let config: Self =
            toml::from_str(text).map_err(|error| GatewayError::Config(error.to_string()))?;
        config.check()?;
        Ok(config)
    }

    /// Refuses what would serve less safely than it reads: an empty `allowed_hosts`, which
    /// would admit every `Host`.
    pub(crate) fn check(&self) -> Result<(), GatewayError> {
        if self
            .gateway
            .allowed_hosts
            .as_ref()
            .is_some_and(Vec::is_empty)
        {
            return Err(GatewayError::Config(
                "`allowed_hosts` is empty, which would admit every `Host` (DNS rebinding): name \
                 the host names clients reach the gateway by, or leave it out for loopback only"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// Reads the configuration file at `path`; relative store and pin file paths are then
    /// taken from the file's folder.
    pub fn from_file(path: impl Into<PathBuf>) -> Result<Self, GatewayError> {
        let path = path.into();
        let text = std::fs::read_to_string(&path).map_err(|error| {
            GatewayError::Config(format!("cannot read {}: {error}", path.display()))
        })?;
        let mut config = Self::from_toml(&text)?;
        if let Some(folder) = path.parent() {
            config.gateway.resolve_paths(folder);
        }
        Ok(config)
    }
}

impl ServeConfig {
    fn resolve_paths(&mut self, folder: &std::path::Path) {
        if let Some(file) = self.store.strip_prefix("sqlite://") {
            if !file.is_empty() && !file.starts_with('/') && !file.starts_with(":memory:") {
                self.store = format!("sqlite://{}", folder.join(file).display());
            }
        }
        if let Some(pins) = &mut self.pins_file {
            if std::path::Path::new(pins.as_str()).is_relative() {
                *pins = folder.join(pins.as_str()).display().to_string();
            }
        }
    }
}

impl UpstreamConfig {
    /// The MCP client's configuration for this server.
    pub(crate) fn client_config(&self) -> Result<McpServerConfig, GatewayError> {
        let transport = match (&self.command, &self.url) {
            (Some(program), None) => McpTransportConfig::Command {
                program: program.clone(),
                args: self.args.clone(),
                env: self
                    .env
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
                cwd: self.cwd.clone(),
            },
            (None, Some(url)) => McpTransportConfig::Http {
                url: url.clone(),
                headers: self
                    .headers
                    .iter()
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect(),
            },
            _ => {
                return Err(GatewayError::Config(format!(
                    "server `{}` needs exactly one of `command` and `url`",
                    self.name
                )));
            }
        };
        let mut config = McpServerConfig::with_transport(transport)
            .name(self.name.clone())
            .defer_loading(self.deferred)
            .refuse_name_collisions();
        let prefix = self.prefix.clone().unwrap_or_else(|| self.name.clone());
        if !prefix.is_empty() {
            config = config.prefix(prefix);
        }
        if let Some(timeout) = self.timeout_ms {
            config = config.call_timeout(Duration::from_millis(timeout));
        }
        config.validate().map_err(|error| {
            let hint = match (&error, &self.prefix) {
                (McpClientError::InvalidPrefix { .. }, None) => {
                    " (the prefix is the server's name unless `prefix` names another)"
                }
                _ => "",
            };
            GatewayError::Config(format!("server `{}`: {error}{hint}", self.name))
        })?;
        Ok(config)
    }

    /// Whether the server's tool `remote` is served.
    pub(crate) fn admits(&self, remote: &str) -> bool {
        self.allow
            .as_ref()
            .is_none_or(|allow| allow.iter().any(|name| name == remote))
            && !self.block.iter().any(|name| name == remote)
    }
}

#[cfg(test)]
mod tests {
    use super::GatewayConfig;

    #[test]
    fn tool_search_and_pins_are_global_unless_a_user_says_otherwise() {
        let config = GatewayConfig::from_toml(
            "[gateway]\ntool_search = true\npinned_tools = [\"a\"]\n\n\
             [[users]]\nname = \"alice\"\ntoken_sha256 = \"00\"\n\n\
             [[users]]\nname = \"bob\"\ntoken_sha256 = \"11\"\ntool_search = false\n\n\
             [[users]]\nname = \"carol\"\ntoken_sha256 = \"22\"\npinned_tools = [\"b\", \"c\"]\n",
        )
        .unwrap();
        assert_eq!(config.pinned_tools("alice"), Some(&["a".to_owned()][..]));
        assert_eq!(config.pinned_tools("bob"), None);
        assert_eq!(
            config.pinned_tools("carol"),
            Some(&["b".to_owned(), "c".to_owned()][..])
        );
        // A user without an entry (stdio, anonymous) gets the global setting.
        assert_eq!(config.pinned_tools("local"), Some(&["a".to_owned()][..]));

        let off = GatewayConfig::from_toml(
            "[[users]]\nname = \"dave\"\ntoken_sha256 = \"33\"\ntool_search = true\n",
        )
        .unwrap();
        assert!(off.any_tool_search());
        assert_eq!(off.pinned_tools("dave"), Some(&[][..]));
        assert_eq!(off.pinned_tools("erin"), None);
        assert!(!GatewayConfig::default().any_tool_search());
    }
}
