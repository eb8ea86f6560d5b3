//! Where secrets may go. API keys, tokens and passwords travel in headers, in URLs and in a
//! child process's environment; this module keeps them out of messages and off other hosts.
//!
//! - [`redact_url`] is the one function that turns a URL into text for messages, `Debug` and
//!   logs. It guarantees that the password of the user part (and, with
//!   [`Redaction::Credentials`], the whole user part and every query value) is gone, whatever
//!   characters the password holds: `#`, `/`, `?`, `@` and `:` included, written raw as users
//!   do even though a URL should percent-encode them.
//! - [`Scrubber`] takes known secrets out of text written by someone else (an HTTP library's
//!   error that quotes the URL it failed on).
//! - [`same_origin_redirects`] is the redirect policy of every HTTP client that sends
//!   credentials: a redirect to another origin is an error, never followed, so no header or
//!   body reaches a host the application did not name.
//!
//! Architecture invariant: this module uses nothing of the crate, so every floor can use it.

use std::fmt::Write as _;

/// What replaces a secret in text.
pub(crate) const REDACTED: &str = "***";

/// How much of a URL [`redact_url`] hides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// A build with neither HTTP client hides passwords only (the database URLs of the stores).
#[cfg_attr(not(any(feature = "http", feature = "mcp-client")), allow(dead_code))]
pub(crate) enum Redaction {
    /// The password of the user part and the values of `password=` query parameters (database
    /// URLs, whose other parameters are settings worth seeing).
    Passwords,
    /// The whole user part (a user name can be a token, as in `https://TOKEN@host`), every
    /// query value and the fragment (web APIs put keys in the query).
    Credentials,
}

/// `url` with its secrets replaced by `***`, for messages and logs; see [`Redaction`].
///
/// The user part ends at the last `@` that is followed by something shaped like a host (up to
/// the next `/`, `?` or `#`), so a raw password holding those characters is found whole; when
/// the split is ambiguous, more is hidden rather than less.
pub(crate) fn redact_url(url: &str, redaction: Redaction) -> String {
    let parts = UrlParts::split(url);
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..parts.authority]);
    if let Some(user_end) = parts.user_end {
        let user = &url[parts.authority..user_end];
        match (redaction, user.split_once(':')) {
            (Redaction::Passwords, Some((name, _))) => {
                let _ = write!(out, "{name}:{REDACTED}");
            }
            (Redaction::Passwords, None) => out.push_str(user),
            (Redaction::Credentials, _) => out.push_str(REDACTED),
        }
        out.push('@');
        out.push_str(&url[user_end + 1..parts.path_end]);
    } else {
        out.push_str(&url[parts.authority..parts.path_end]);
    }
    if let Some(query) = parts.query(url) {
        out.push('?');
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _))
                    if redaction == Redaction::Credentials
                        || key.eq_ignore_ascii_case("password") =>
                {
                    format!("{key}={REDACTED}")
                }
                None if redaction == Redaction::Credentials && !param.is_empty() => {
                    REDACTED.to_owned()
                }
                _ => param.to_owned(),
            })
            .collect();
        out.push_str(&params.join("&"));
    }
    if let Some(fragment) = parts.fragment(url) {
        out.push('#');
        match redaction {
            Redaction::Passwords => out.push_str(fragment),
            Redaction::Credentials => out.push_str(REDACTED),
        }
    }
    out
}

/// Known secrets, taken out of text that came from elsewhere.
#[cfg(feature = "mcp-client")]
#[derive(Clone, Debug, Default)]
pub(crate) struct Scrubber {
    /// Each secret and what replaces it, longest first (so a secret that contains another is
    /// replaced whole).
    secrets: Vec<(String, String)>,
}

/// Shorter values are not treated as secrets: replacing them would garble every message.
#[cfg(feature = "mcp-client")]
const MIN_SECRET_LEN: usize = 4;

#[cfg(feature = "mcp-client")]
impl Scrubber {
    /// A scrubber that knows no secret yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds a secret value (a header's value; for `Bearer …` and `Basic …` the credentials
    /// alone too).
    pub(crate) fn secret(&mut self, value: &str) {
        self.replace(value, REDACTED);
        if let Some((scheme, credentials)) = value.split_once(' ') {
            if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("basic") {
                self.replace(credentials.trim(), REDACTED);
            }
        }
    }

    /// Adds the secrets of a URL: the URL itself (as written, and as HTTP libraries print it)
    /// becomes its [`Credentials`](Redaction::Credentials) redaction, and its user part and
    /// query, wherever they appear alone, `***`.
    pub(crate) fn url(&mut self, url: &str) {
        let redacted = redact_url(url, Redaction::Credentials);
        self.replace(url, &redacted);
        if let Ok(mut parsed) = reqwest::Url::parse(url) {
            self.replace(parsed.as_str(), &redacted);
            let _ = parsed.set_password(None);
            let _ = parsed.set_username("");
            self.replace(parsed.as_str(), &redacted);
            if let Some(query) = parsed.query() {
                self.replace(query, REDACTED);
            }
        }
        let parts = UrlParts::split(url);
        if let Some(user_end) = parts.user_end {
            let user = &url[parts.authority..user_end];
            self.replace(user, REDACTED);
            for part in user.splitn(2, ':') {
                self.replace(part, REDACTED);
                self.replace(&percent_decoded(part), REDACTED);
            }
        }
        if let Some(query) = parts.query(url) {
            self.replace(query, REDACTED);
        }
    }

    /// `text` with every known secret replaced.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (secret, replacement) in &self.secrets {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), replacement);
            }
        }
        text
    }

    fn replace(&mut self, secret: &str, replacement: &str) {
        if secret.len() < MIN_SECRET_LEN
            || secret == replacement
            || self.secrets.iter().any(|(known, _)| known == secret)
        {
            return;
        }
        self.secrets
            .push((secret.to_owned(), replacement.to_owned()));
        self.secrets
            .sort_by_key(|(secret, _)| std::cmp::Reverse(secret.len()));
    }
}

/// Name-value pairs (headers, environment variables) for `Debug`: the names, each with `***`
/// for its value.
#[cfg(any(feature = "http", feature = "mcp-client"))]
pub(crate) struct HiddenValues<'a>(pub(crate) &'a [(String, String)]);

#[cfg(any(feature = "http", feature = "mcp-client"))]
impl std::fmt::Debug for HiddenValues<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| (name, REDACTED)))
            .finish()
    }
}

/// The redirect policy of the HTTP clients that send credentials (the provider clients and the
/// MCP client): redirects within the origin of the request (scheme, host and port) are
/// followed, up to ten; a redirect to another origin fails the request with a
/// [`CrossOriginRedirect`] error instead of replaying its headers (`x-api-key`,
/// `x-goog-api-key`, custom ones, which `reqwest` would keep) and its body to a host the
/// application did not name.
#[cfg(any(feature = "http", feature = "mcp-client"))]
pub(crate) fn same_origin_redirects() -> reqwest::redirect::Policy {
    const MAX_REDIRECTS: usize = 10;
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first() else {
            return attempt.follow();
        };
        if first.origin() != attempt.url().origin() {
            let error = CrossOriginRedirect {
                from: redact_url(first.as_str(), Redaction::Credentials),
                to: redact_url(attempt.url().as_str(), Redaction::Credentials),
            };
            return attempt.error(error);
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        attempt.follow()
    })
}

/// A redirect that [`same_origin_redirects`] refused.
#[cfg(any(feature = "http", feature = "mcp-client"))]
#[derive(Debug, thiserror::Error)]
#[error(
    "refused to follow a redirect from {from} to {to}: another origin must not receive the \
     request's credentials; configure the new address instead"
)]
pub(crate) struct CrossOriginRedirect {
    from: String,
    to: String,
}

/// Where the parts of a URL begin and end, as byte offsets.
struct UrlParts {
    /// Where the authority begins (after `scheme://`; 0 when there is none).
    authority: usize,
    /// The `@` that ends the user part, if there is one.
    user_end: Option<usize>,
    /// Where the host and path end: at the `?` of the query, the `#` of the fragment, or the
    /// end.
    path_end: usize,
    /// The `#` of the fragment, if there is one.
    fragment_start: Option<usize>,
}

impl UrlParts {
    fn split(url: &str) -> Self {
        let authority = url.find("://").map_or(0, |at| at + 3);
        let rest = &url[authority..];
        let user_end = (authority > 0)
            .then(|| {
                rest.match_indices('@')
                    .rev()
                    .map(|(at, _)| at)
                    .find(|&at| looks_like_host(host_of(&rest[at + 1..])))
                    .map(|at| authority + at)
            })
            .flatten();
        let host_start = user_end.map_or(authority, |at| at + 1);
        let path_end = url[host_start..]
            .find(['?', '#'])
            .map_or(url.len(), |at| host_start + at);
        let fragment_start = url[path_end..].find('#').map(|at| path_end + at);
        Self {
            authority,
            user_end,
            path_end,
            fragment_start,
        }
    }

    fn query<'a>(&self, url: &'a str) -> Option<&'a str> {
        let end = self.fragment_start.unwrap_or(url.len());
        url[self.path_end..end].strip_prefix('?')
    }

    fn fragment<'a>(&self, url: &'a str) -> Option<&'a str> {
        self.fragment_start.map(|at| &url[at + 1..])
    }
}

/// The host (and port) at the start of what follows an `@`.
fn host_of(after_at: &str) -> &str {
    after_at
        .find(['/', '?', '#'])
        .map_or(after_at, |end| &after_at[..end])
}

/// Whether `text` could be a host and port (`db.example:5432`, `[::1]:80`, or empty as in
/// `postgres://user@/db`): no `@`, `&`, `=`, blank or other character a host never holds.
fn looks_like_host(text: &str) -> bool {
    text.bytes().all(|byte| {
        byte.is_ascii_alphanumeric()
            || matches!(byte, b'.' | b'-' | b'_' | b':' | b'[' | b']' | b'%' | b'~')
    })
}

/// `%XX` sequences decoded, when they form UTF-8; the text as it is otherwise.
#[cfg(feature = "mcp-client")]
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let decoded = (bytes[at] == b'%')
            .then(|| text.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        if let Some(byte) = decoded {
            out.push(byte);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_with_any_character_are_redacted() {
        let cases = [
            (
                "postgres://alice:s3cr@t@db.example:5432/tools?sslmode=require",
                "postgres://alice:***@db.example:5432/tools?sslmode=require",
            ),
            (
                "postgres://alice:pa#ss@db/tools",
                "postgres://alice:***@db/tools",
            ),
            (
                "postgres://alice:pa/ss@db/tools",
                "postgres://alice:***@db/tools",
            ),
            (
                "postgres://alice:pa?ss@db/tools?sslmode=require",
                "postgres://alice:***@db/tools?sslmode=require",
            ),
            (
                "postgres://alice:a/b?c#d@e:f@db:5432/tools#frag",
                "postgres://alice:***@db:5432/tools#frag",
            ),
            (
                "postgres://alice@db/tools?password=hunter2&application_name=x",
                "postgres://alice@db/tools?password=***&application_name=x",
            ),
            ("postgres:///tools?host=/tmp", "postgres:///tools?host=/tmp"),
            ("postgres://alice:pw@/tools", "postgres://alice:***@/tools"),
            ("sqlite://a/b.db", "sqlite://a/b.db"),
            ("prefs.json", "prefs.json"),
        ];
        for (url, expected) in cases {
            assert_eq!(redact_url(url, Redaction::Passwords), expected, "{url}");
        }
    }

    #[test]
    fn credentials_hide_the_user_part_the_query_and_the_fragment() {
        let cases = [
            (
                "https://alice:pa#ss/w?rd@mcp.example:8443/mcp?token=abc&x=1#top",
                "https://***@mcp.example:8443/mcp?token=***&x=***#***",
            ),
            (
                "https://ghp_TOKEN@github.example/mcp",
                "https://***@github.example/mcp",
            ),
            ("http://127.0.0.1:3001/mcp", "http://127.0.0.1:3001/mcp"),
            ("http://h/mcp?key", "http://h/mcp?***"),
            // An `@` in the query that could end a user part: more is hidden, not less.
            ("http://h:8080/mcp?e=a@b", "http://***@b"),
        ];
        for (url, expected) in cases {
            assert_eq!(redact_url(url, Redaction::Credentials), expected, "{url}");
        }
    }

    #[cfg(feature = "mcp-client")]
    #[test]
    fn the_scrubber_takes_urls_and_secrets_out_of_foreign_text() {
        let mut scrubber = Scrubber::new();
        scrubber.url("http://alice:pa%23ss@127.0.0.1:1/mcp?token=QSECRET");
        scrubber.secret("Bearer HSECRET");
        scrubber.secret("ab");
        let text = "error sending request for url (http://127.0.0.1:1/mcp?token=QSECRET): \
                    user alice:pa#ss, header HSECRET, token=QSECRET, ab";
        let clean = scrubber.scrub(text);
        for secret in ["QSECRET", "pa#ss", "pa%23ss", "HSECRET"] {
            assert!(!clean.contains(secret), "{clean}");
        }
        assert!(
            clean.starts_with(
                "error sending request for url (http://***@127.0.0.1:1/mcp?token=***)"
            ),
            "{clean}"
        );
        assert!(clean.ends_with(", ab"), "{clean}");
    }
}
