//! Which requests reach the chat at all: the check every request passes first.
//!
//! The server has no login: whoever can send it requests is a user, runs turns on the configured
//! provider's key and uses the file tools. On the loopback interface that is this machine's
//! users, and web pages in their browsers. Two checks keep the pages out:
//!
//! - **Host.** A page on `attacker.example` that rebinds its name to `127.0.0.1` (DNS
//!   rebinding) talks to this server as its own origin, so the browser lets it read the
//!   answers; but its requests still say `Host: attacker.example`. Only the loopback names, the
//!   listening address itself, and the names given with `--allow-host` are served.
//! - **Origin.** A page elsewhere may still post a form or a `fetch` to
//!   `http://127.0.0.1:3000`; the browser then says where it comes from in `Origin`. A change
//!   (any method but `GET`, `HEAD` and `OPTIONS`) is taken only from the server's own page, or
//!   from clients that send no `Origin` (curl, scripts: not browsers).

use std::{net::SocketAddr, sync::Arc};

use axum::{
    Json,
    extract::{Request, State},
    http::{HeaderMap, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde_json::json;

/// The host names the server answers to, lowercase, IPv6 addresses in brackets.
pub(crate) struct AllowedHosts {
    names: Vec<String>,
}

impl AllowedHosts {
    /// The loopback names (`localhost`, `127.0.0.1`, `[::1]`), the address the server listens
    /// on when it is not a wildcard (`0.0.0.0`, `[::]`), and `extra` (names read by
    /// [`parse_host`]).
    pub(crate) fn new(address: SocketAddr, extra: &[String]) -> Self {
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        if !address.ip().is_unspecified() {
            names.push(match address {
                SocketAddr::V4(address) => address.ip().to_string(),
                SocketAddr::V6(address) => format!("[{}]", address.ip()),
            });
        }
        names.extend(extra.iter().cloned());
        let mut unique = Vec::new();
        for name in names {
            if !unique.contains(&name) {
                unique.push(name);
            }
        }
        Self { names: unique }
    }

    /// Whether the host part of `authority` (`name`, `name:port`, `[v6]:port`) is allowed.
    fn allows(&self, authority: &str) -> bool {
        host_name(authority).is_some_and(|name| self.names.contains(&name))
    }

    /// The names, as a sentence lists them: `a, b and c`.
    fn listed(&self) -> String {
        match self.names.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

/// Lets a request through only when it is for an allowed host and, if it changes something,
/// comes from the server's own page.
///
/// What it guarantees: every handler behind it sees requests whose `Host` (or, over HTTP/2, the
/// URI's authority) names an allowed host, and changes whose `Origin`, when there is one, is
/// `http://` or `https://` followed by that same host and port. Anything else is answered with
/// `403` and a JSON error, before a user is looked up or a cookie handed out.
pub(crate) async fn check(
    State(hosts): State<Arc<AllowedHosts>>,
    request: Request,
    next: Next,
) -> Response {
    let authority = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(ToString::to_string));
    let Some(authority) = authority else {
        return refuse("a request that names no host is refused".to_owned());
    };
    if !hosts.allows(&authority) {
        let shown = host_name(&authority).unwrap_or_else(|| authority.clone());
        return refuse(format!(
            "requests for the host `{shown}` are refused: this server answers to {} \
             (--allow-host adds a name)",
            hosts.listed()
        ));
    }
    let changes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if changes && let Some(origin) = foreign_origin(request.headers(), &authority) {
        return refuse(format!(
            "a change from `{origin}` is refused: this server takes changes from its own page only"
        ));
    }
    next.run(request).await
}

/// Reads a host name given on the command line (`chat.example`, `chat.example:8443`,
/// `192.168.1.5`, `[fd00::5]`): its host, as [`AllowedHosts`] compares it.
pub(crate) fn parse_host(text: &str) -> Result<String, String> {
    host_name(text).ok_or_else(|| {
        format!(
            "`{text}` is not a host name; give one such as chat.example, with no scheme or path"
        )
    })
}

/// The request's `Origin` when it is there and is not the page's own (`http://AUTHORITY` or
/// `https://AUTHORITY`).
fn foreign_origin(headers: &HeaderMap, authority: &str) -> Option<String> {
    let origin = headers.get(header::ORIGIN)?;
    let Ok(text) = origin.to_str() else {
        return Some(String::from_utf8_lossy(origin.as_bytes()).into_owned());
    };
    let own = ["http://", "https://"].iter().any(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(scheme))
            && text[scheme.len()..].eq_ignore_ascii_case(authority)
    });
    (!own).then(|| text.to_owned())
}

/// The host of an authority (`name`, `name:port`, `[v6]` or `[v6]:port`), lowercase, without a
/// final dot; `None` when it is not one.
fn host_name(authority: &str) -> Option<String> {
    let digits = |port: &str| !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit());
    let host = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let rest = &authority[end + 1..];
        if !(rest.is_empty() || rest.strip_prefix(':').is_some_and(digits)) {
            return None;
        }
        &authority[..=end]
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if digits(port) => host,
            Some(_) => return None,
            None => authority,
        }
    };
    let host = host.strip_suffix('.').unwrap_or(host);
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-._[]:".contains(&byte));
    valid.then(|| host.to_ascii_lowercase())
}

fn refuse(message: String) -> Response {
    (StatusCode::FORBIDDEN, Json(json!({ "error": message }))).into_response()
}
