//! What every HTTP provider client shares: timeouts, retries with exponential backoff that
//! honour `Retry-After`, and turning error responses into [`ProviderError`]s that carry the
//! provider's own message.

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::{Response, StatusCode, header::HeaderMap};
use serde_json::Value;

use crate::model::ProviderError;
use crate::schema::Provider;
use crate::secrets::{HiddenValues, Redaction, redact_url, same_origin_redirects};

/// Timeouts and retries of a provider client.
///
/// A request that gets a 429 or a 5xx, cannot connect, or loses its connection before any
/// answer (a kept-alive connection the server closed as the request went out) is sent again
/// up to [`max_retries`](Self::max_retries) times, as the providers' own SDKs do. Before each retry the client waits what the
/// provider asked for in `Retry-After` or `retry-after-ms` (seconds, milliseconds or an HTTP
/// date; a value that is negative or unreadable is ignored), or else a random time up to the
/// exponential backoff; never longer than [`max_backoff`](Self::max_backoff).
///
/// ```
/// use std::time::Duration;
/// use tool_core::model::HttpOptions;
///
/// let options = HttpOptions::default()
///     .max_retries(5)
///     .connect_timeout(Duration::from_secs(3));
/// assert_eq!(options.max_retries, 5);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The longest time to open a connection. Default 10 s.
    pub connect_timeout: Duration,
    /// The longest time for a whole non-streamed request, and for a streamed request to start
    /// answering. Default 10 min.
    pub request_timeout: Duration,
    /// The longest silence between two chunks of a streamed answer. Default 2 min.
    pub read_timeout: Duration,
    /// How many times a request that got a 429 or a 5xx (or could not connect) is sent again.
    /// Default 3.
    pub max_retries: u32,
    /// The longest wait before the first retry when the provider sends no `Retry-After`; it
    /// doubles on each retry, and the actual wait is drawn at random below it (full jitter).
    /// Default 500 ms.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts, `Retry-After` included. Default 30 s.
    pub max_backoff: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_mins(10),
            read_timeout: Duration::from_mins(2),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl HttpOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the connect timeout.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the request timeout.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the read timeout of streamed answers.
    #[must_use]
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Sets the number of retries.
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the first backoff delay.
    #[must_use]
    pub fn initial_backoff(mut self, delay: Duration) -> Self {
        self.initial_backoff = delay;
        self
    }

    /// Sets the cap on any wait between attempts.
    #[must_use]
    pub fn max_backoff(mut self, delay: Duration) -> Self {
        self.max_backoff = delay;
        self
    }

    /// The wait before retry number `retry` (1 for the first): the provider's `Retry-After` (or
    /// `retry-after-ms`) when it sent a usable one, otherwise a random wait between zero and the
    /// exponential backoff (`initial_backoff` doubled on each retry), so that many clients
    /// retrying at once spread out ("full jitter"); never more than
    /// [`max_backoff`](Self::max_backoff), whatever the header says.
    pub fn retry_delay(&self, retry: u32, headers: &HeaderMap) -> Duration {
        retry_after(headers, SystemTime::now())
            .unwrap_or_else(|| full_jitter(self.backoff_ceiling(retry), random_u64()))
            .min(self.max_backoff)
    }

    /// The exponential backoff before retry number `retry`, before jitter: `initial_backoff`
    /// doubled `retry - 1` times, capped by `max_backoff`.
    fn backoff_ceiling(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// A uniformly spread wait in `[0, ceiling]`, from a random number.
fn full_jitter(ceiling: Duration, random: u64) -> Duration {
    let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    match nanos.checked_add(1) {
        Some(range) => Duration::from_nanos(random % range),
        None => Duration::from_nanos(random),
    }
}

/// A random number for jitter: the standard library's per-process random hash keys mixed with a
/// counter and the clock (no cryptographic quality is needed to spread retries out).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};

    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(elapsed) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        hasher.write_u128(elapsed.as_nanos());
    }
    hasher.finish()
}

/// The delay a response asks for in `retry-after-ms` (OpenAI) or `Retry-After` (seconds or an
/// HTTP date), measured from `now`. A number too large for a [`Duration`] saturates (the caller
/// caps it); a negative, non-numeric or otherwise unreadable value is ignored.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(millis) = header("retry-after-ms").and_then(|text| seconds(text, 1e-3)) {
        return Some(millis);
    }
    let value = header("retry-after")?;
    if let Some(delay) = seconds(value, 1.0) {
        return Some(delay);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A non-negative number of `unit`s (seconds: 1.0, milliseconds: 1e-3) as a duration,
/// saturating at [`Duration::MAX`] (`1e300`, `inf`, twenty nines); `None` for anything else.
fn seconds(text: &str, unit: f64) -> Option<Duration> {
    let number = text.parse::<f64>().ok()?;
    if number.is_nan() || number < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(number * unit).unwrap_or(Duration::MAX))
}

/// The HTTP side of a provider client: one `reqwest` client, the retry policy, and the headers
/// every request carries (the key among them, so `Debug` shows their names only). Redirects
/// are followed within the request's origin only (see
/// [`same_origin_redirects`](crate::secrets::same_origin_redirects)).
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    options: HttpOptions,
    provider: Provider,
    headers: Vec<(String, String)>,
    /// Whether streamed requests ask for `text/event-stream`.
    event_stream: bool,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("options", &self.options)
            .field("provider", &self.provider)
            .field("headers", &HiddenValues(&self.headers))
            .field("event_stream", &self.event_stream)
            .finish_non_exhaustive()
    }
}

impl Http {
    /// A client for `provider` sending `headers` with every request, and
    /// `Accept: text/event-stream` with streamed ones if `event_stream`.
    pub(crate) fn new(
        provider: Provider,
        options: HttpOptions,
        headers: Vec<(String, String)>,
        event_stream: bool,
    ) -> Result<Self, ProviderError> {
        crate::tls::install_default_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .redirect(same_origin_redirects())
            .user_agent(concat!("tool-core/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| {
                ProviderError::Config(format!("cannot build the {provider} HTTP client: {error}"))
            })?;
        Ok(Self {
            client,
            options,
            provider,
            headers,
            event_stream,
        })
    }

    /// POSTs `body` (JSON) to `url` with this request's own `headers` after the client's,
    /// retrying 429s, 5xx, failed connections and connections lost before any answer,
    /// and returns the first successful response. A non-streamed request is bounded by the
    /// request timeout as a whole; a streamed one only until its headers arrive (its body by the
    /// read timeout between chunks).
    pub(crate) async fn post(
        &self,
        url: &str,
        body: Bytes,
        headers: &[(&'static str, String)],
        streaming: bool,
    ) -> Result<Response, ProviderError> {
        let provider = self.provider;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let mut request = self
                .client
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            for (name, value) in &self.headers {
                request = request.header(name, value);
            }
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            if streaming && self.event_stream {
                request = request.header(reqwest::header::ACCEPT, "text/event-stream");
            }
            if !streaming {
                request = request.timeout(self.options.request_timeout);
            }
            let sent = tokio::time::timeout(self.options.request_timeout, request.send()).await;
            let retries_left = attempt <= self.options.max_retries;
            let response = match sent {
                Ok(Ok(response)) => response,
                // A request that got no answer, its own timeout aside, may go again: a pooled
                // connection the server closed as it went out is the common case.
                Ok(Err(error))
                    if retries_left
                        && (error.is_connect() || (error.is_request() && !error.is_timeout())) =>
                {
                    let delay = self.options.retry_delay(attempt, &HeaderMap::new());
                    let error = describe(&error);
                    tracing::warn!(%provider, %error, ?delay, attempt, "connection failed; retrying");
                    tokio::time::sleep(delay).await;
                    continue;
                }
                Ok(Err(error)) => return Err(transport(provider, &error)),
                Err(_) => {
                    return Err(ProviderError::Transport {
                        provider,
                        message: format!(
                            "no answer within {:?} (request timeout)",
                            self.options.request_timeout
                        ),
                    });
                }
            };
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let retryable = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
            if retryable && retries_left {
                let delay = self.options.retry_delay(attempt, response.headers());
                tracing::warn!(%provider, status = status.as_u16(), ?delay, attempt, "provider busy; retrying");
                drop(response);
                tokio::time::sleep(delay).await;
                continue;
            }
            let text = response.text().await.unwrap_or_default();
            let (code, message) = error_details(&text, status);
            return Err(if retryable {
                ProviderError::Unavailable {
                    provider,
                    status: status.as_u16(),
                    attempts: attempt,
                    message,
                }
            } else {
                ProviderError::Api {
                    provider,
                    status: Some(status.as_u16()),
                    code,
                    message,
                }
            });
        }
    }

    /// Reads a non-streamed body, failing with the error it carries if it is an error object.
    pub(crate) async fn body(&self, response: Response) -> Result<Bytes, ProviderError> {
        let provider = self.provider;
        let bytes = response
            .bytes()
            .await
            .map_err(|error| transport(provider, &error))?;
        match api_error_in(provider, &bytes) {
            Some(error) => Err(error),
            None => Ok(bytes),
        }
    }
}

/// A request's JSON body.
pub(crate) fn write_json(body: &impl serde::Serialize) -> Result<Bytes, ProviderError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|error| ProviderError::Config(format!("cannot encode the request: {error}")))
}

/// Reads a non-streamed JSON answer of `provider`.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    provider: Provider,
    body: &[u8],
) -> Result<T, ProviderError> {
    serde_json::from_slice(body).map_err(|error| ProviderError::Protocol {
        provider,
        message: format!("cannot read the response: {error}"),
    })
}

/// A `reqwest` failure as a transport error.
pub(crate) fn transport(provider: Provider, error: &reqwest::Error) -> ProviderError {
    ProviderError::Transport {
        provider,
        message: describe(error),
    }
}

/// A streamed response's body, its errors described with their causes (`reqwest` alone says
/// only "error decoding response body", not that the connection was reset or timed out).
pub(crate) fn body_stream(
    response: Response,
) -> impl futures::Stream<Item = Result<Bytes, String>> + Send + 'static {
    use futures::TryStreamExt;
    response.bytes_stream().map_err(|error| describe(&error))
}

/// A `reqwest` error and its chain of causes, as one line, the URL it quotes without its
/// credentials and query values.
fn describe(error: &reqwest::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    if error.is_timeout() {
        message.push_str(" (timed out)");
    }
    match error.url() {
        Some(url) => message.replace(
            url.as_str(),
            &redact_url(url.as_str(), Redaction::Credentials),
        ),
        None => message,
    }
}

/// The error a successful-status body carries (`{"error": ...}`), if any.
pub(crate) fn api_error_in(provider: Provider, body: &[u8]) -> Option<ProviderError> {
    let value: Value = serde_json::from_slice(body).ok()?;
    // Only an explicit `error` member: a successful body has a `message` of its own (Ollama).
    let object = match &value {
        Value::Array(items) if items.len() == 1 => &items[0],
        other => other,
    };
    object.get("error")?;
    let (code, message) = error_from_value(&value)?;
    Some(ProviderError::Api {
        provider,
        status: None,
        code,
        message,
    })
}

/// The provider's error code and message from an error body. Every provider's shape is read:
///
/// - OpenAI and compatible servers: `{"error": {"message", "type", "code"}}`, or
///   `{"error": "text"}`, or `{"detail": ...}`, or `{"message": ...}`;
/// - Ollama: `{"error": "text"}`;
/// - Gemini: `{"error": {"code", "message", "status"}}`, possibly inside a one-element array;
/// - Anthropic: `{"type": "error", "error": {"type", "message"}}`.
///
/// A body that is none of these is quoted as it is (shortened).
pub(crate) fn error_details(body: &str, status: StatusCode) -> (Option<String>, String) {
    let parsed = serde_json::from_str::<Value>(body).ok();
    if let Some(details) = parsed.as_ref().and_then(error_from_value) {
        return details;
    }
    let text = body.trim();
    if text.is_empty() {
        let reason = status.canonical_reason().unwrap_or("no message");
        return (None, reason.to_lowercase());
    }
    let mut text: String = text.chars().take(500).collect();
    if text.len() < body.trim().len() {
        text.push('…');
    }
    (None, text)
}

/// The code and message of an error JSON value, if it is one.
pub(crate) fn error_from_value(value: &Value) -> Option<(Option<String>, String)> {
    let value = match value {
        Value::Array(items) if items.len() == 1 => &items[0],
        other => other,
    };
    let object = value.as_object()?;
    let as_code = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    match object.get("error") {
        Some(Value::String(message)) => return Some((None, message.clone())),
        Some(Value::Object(error)) => {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| Value::Object(error.clone()).to_string(), str::to_owned);
            // The most specific name first: OpenAI's string `code`, Gemini's `status`,
            // Anthropic's `type`; a numeric code last.
            let code = ["code", "status", "type"]
                .iter()
                .find_map(|key| error.get(*key).and_then(Value::as_str).map(str::to_owned))
                .or_else(|| error.get("code").and_then(as_code));
            return Some((code, message));
        }
        _ => {}
    }
    let message = match object.get("detail").or_else(|| object.get("message"))? {
        Value::String(message) => message.clone(),
        Value::Object(_) => return None,
        other => other.to_string(),
    };
    let code = object.get("code").and_then(as_code);
    Some((code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                reqwest::header::HeaderValue::from_str(value).unwrap(),
            );
        }
        headers
    }

    #[test]
    fn retry_after_in_seconds_date_and_millis() {
        // 1_445_412_480 is Wed, 21 Oct 2015 07:28:00 GMT.
        let now = SystemTime::UNIX_EPOCH + Duration::from_mins(24_090_208);
        let cases = [
            (vec![("retry-after", "7")], Some(Duration::from_secs(7))),
            (
                vec![("retry-after", " 0.25 ")],
                Some(Duration::from_millis(250)),
            ),
            (
                vec![("retry-after", "Wed, 21 Oct 2015 07:28:30 GMT")],
                Some(Duration::from_secs(30)),
            ),
            (
                vec![("retry-after", "Wed, 21 Oct 2015 07:00:00 GMT")],
                Some(Duration::ZERO),
            ),
            (vec![("retry-after", "soon")], None),
            (
                vec![("retry-after", "7"), ("retry-after-ms", "1500")],
                Some(Duration::from_millis(1500)),
            ),
            (
                vec![("retry-after", "7"), ("retry-after-ms", "soon")],
                Some(Duration::from_secs(7)),
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(retry_after(&headers(&pairs), now), expected, "{pairs:?}");
        }
    }

    #[test]
    fn hostile_retry_after_values_saturate_or_are_ignored() {
        let now = SystemTime::now();
        let huge = [
            ("retry-after", "1e300"),
            ("retry-after", "99999999999999999999"),
            ("retry-after", "inf"),
            ("retry-after", "1.9e19"),
            ("retry-after-ms", "1e300"),
            ("retry-after-ms", "99999999999999999999999"),
        ];
        for pair in huge {
            assert_eq!(
                retry_after(&headers(&[pair]), now),
                Some(Duration::MAX),
                "{pair:?}"
            );
        }
        let ignored = [
            ("retry-after", "-1"),
            ("retry-after", "-1e300"),
            ("retry-after", "NaN"),
            ("retry-after", ""),
            ("retry-after", "1e"),
            ("retry-after", "0x10"),
            ("retry-after-ms", "-5"),
        ];
        for pair in ignored {
            assert_eq!(retry_after(&headers(&[pair]), now), None, "{pair:?}");
        }
        let options = HttpOptions::default().max_backoff(Duration::from_secs(5));
        for pair in huge {
            assert_eq!(
                options.retry_delay(1, &headers(&[pair])),
                Duration::from_secs(5),
                "{pair:?}"
            );
        }
        // A header value that is not visible ASCII is not text: ignored, backoff used.
        let mut opaque = HeaderMap::new();
        opaque.insert(
            "retry-after",
            reqwest::header::HeaderValue::from_bytes(b"\xff\xfe").unwrap(),
        );
        assert_eq!(retry_after(&opaque, now), None);
        assert!(options.retry_delay(1, &opaque) <= Duration::from_millis(500));
    }

    #[test]
    fn backoff_ceiling_doubles_and_is_capped() {
        let options = HttpOptions::default()
            .initial_backoff(Duration::from_secs(1))
            .max_backoff(Duration::from_secs(5));
        let ceilings: Vec<u64> = [1, 2, 3, 4, 40, u32::MAX]
            .into_iter()
            .map(|n| options.backoff_ceiling(n).as_secs())
            .collect();
        assert_eq!(ceilings, vec![1, 2, 4, 5, 5, 5]);
        let none = HeaderMap::new();
        for retry in 1..=6 {
            let delay = options.retry_delay(retry, &none);
            assert!(
                delay <= options.backoff_ceiling(retry),
                "{retry}: {delay:?}"
            );
        }
        let headers = headers(&[("retry-after", "3600")]);
        assert_eq!(options.retry_delay(1, &headers), Duration::from_secs(5));
    }

    #[test]
    fn full_jitter_spreads_over_the_whole_range() {
        let ceiling = Duration::from_secs(1);
        assert_eq!(full_jitter(ceiling, 0), Duration::ZERO);
        assert_eq!(full_jitter(ceiling, 1_000_000_000), ceiling);
        assert_eq!(full_jitter(ceiling, 1_000_000_001), Duration::ZERO);
        assert_eq!(full_jitter(Duration::ZERO, u64::MAX), Duration::ZERO);
        assert!(full_jitter(Duration::MAX, u64::MAX) <= Duration::MAX);
        // Drawn waits land in every tenth of the range: clients retrying together spread out.
        let mut tenths = [0u32; 10];
        for _ in 0..1000 {
            let wait = full_jitter(ceiling, random_u64());
            assert!(wait <= ceiling);
            let tenth = usize::try_from(wait.as_millis() / 100).unwrap().min(9);
            tenths[tenth] += 1;
        }
        assert!(tenths.iter().all(|&n| n > 20), "{tenths:?}");
    }

    #[test]
    fn error_bodies_of_every_provider() {
        let cases = [
            (
                r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
                Some("invalid_api_key"),
                "Incorrect API key",
            ),
            (r#"{"error":"model not found"}"#, None, "model not found"),
            (
                r#"[{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}]"#,
                Some("INVALID_ARGUMENT"),
                "API key not valid",
            ),
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                Some("overloaded_error"),
                "Overloaded",
            ),
            (r#"{"detail":"Not Found"}"#, None, "Not Found"),
            ("upstream exploded", None, "upstream exploded"),
        ];
        for (body, code, message) in cases {
            let (got_code, got_message) = error_details(body, StatusCode::BAD_REQUEST);
            assert_eq!(got_code.as_deref(), code, "{body}");
            assert_eq!(got_message, message, "{body}");
        }
        assert_eq!(
            error_details("", StatusCode::SERVICE_UNAVAILABLE).1,
            "service unavailable"
        );
    }
}
