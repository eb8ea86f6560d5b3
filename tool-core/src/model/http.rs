//! What every HTTP provider client shares: timeouts, retries with exponential backoff that
//! honour `Retry-After`, and turning error responses into [`ProviderError`]s that carry the
//! provider's own message.

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

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::{Response, StatusCode, header::HeaderMap};
use serde_json::Value;

use super::ProviderError;
use crate::schema::Provider;

/// Timeouts and retries of a provider client.
///
/// ```
/// use std::time::Duration;
/// use tool_core::model::HttpOptions;
///
/// let options = HttpOptions::default()
///     .with_max_retries(5)
///     .with_connect_timeout(Duration::from_secs(3));
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
    /// The wait before the first retry when the provider sends no `Retry-After`; it doubles on
    /// each retry. Default 500 ms.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts, `Retry-After` included. Default 30 s.
    pub max_backoff: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            read_timeout: Duration::from_secs(120),
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
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the request timeout.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets the read timeout of streamed answers.
    #[must_use]
    pub fn with_read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Sets the number of retries.
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the first backoff delay.
    #[must_use]
    pub fn with_initial_backoff(mut self, delay: Duration) -> Self {
        self.initial_backoff = delay;
        self
    }

    /// Sets the cap on any wait between attempts.
    #[must_use]
    pub fn with_max_backoff(mut self, delay: Duration) -> Self {
        self.max_backoff = delay;
        self
    }

    /// The wait before retry number `retry` (1 for the first): the provider's `Retry-After` (or
    /// `retry-after-ms`) when it sent one, otherwise the exponential backoff; never more than
    /// [`max_backoff`](Self::max_backoff).
    pub fn retry_delay(&self, retry: u32, headers: &HeaderMap) -> Duration {
        let delay = retry_after(headers, SystemTime::now()).unwrap_or_else(|| {
            let factor = 2u32.saturating_pow(retry.saturating_sub(1));
            self.initial_backoff.saturating_mul(factor)
        });
        delay.min(self.max_backoff)
    }
}

/// The delay a response asks for in `retry-after-ms` (OpenAI) or `Retry-After` (seconds or an
/// HTTP date), measured from `now`.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
    };
    if let Some(millis) = header("retry-after-ms").and_then(seconds) {
        return Some(millis / 1000);
    }
    let value = header("retry-after")?;
    if let Some(delay) = seconds(value) {
        return Some(delay);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The HTTP side of a provider client: one `reqwest` client and the retry policy.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    client: reqwest::Client,
    options: HttpOptions,
    provider: Provider,
}

impl Http {
    pub(crate) fn new(provider: Provider, options: HttpOptions) -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .user_agent(concat!("tool-core/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| {
                ProviderError::Config(format!("cannot build the {provider} HTTP client: {error}"))
            })?;
        Ok(Self {
            client,
            options,
            provider,
        })
    }

    /// POSTs `body` (JSON) to `url` with `headers`, retrying 429s, 5xx and failed connections,
    /// and returns the first successful response. A non-streamed request is bounded by the
    /// request timeout as a whole; a streamed one only until its headers arrive (its body by the
    /// read timeout between chunks).
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Bytes,
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
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            if !streaming {
                request = request.timeout(self.options.request_timeout);
            }
            let sent = tokio::time::timeout(self.options.request_timeout, request.send()).await;
            let retries_left = attempt <= self.options.max_retries;
            let response = match sent {
                Ok(Ok(response)) => response,
                Ok(Err(error)) if retries_left && error.is_connect() => {
                    let delay = self.options.retry_delay(attempt, &HeaderMap::new());
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

    /// Reads a non-streamed JSON body.
    pub(crate) async fn json<T: serde::de::DeserializeOwned>(
        &self,
        response: Response,
    ) -> Result<T, ProviderError> {
        let bytes = self.body(response).await?;
        serde_json::from_slice(&bytes).map_err(|error| ProviderError::Protocol {
            provider: self.provider,
            message: format!("cannot read the response: {error}"),
        })
    }
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

/// A `reqwest` error and its chain of causes, as one line.
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
    message
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
                .map(str::to_owned)
                .unwrap_or_else(|| Value::Object(error.clone()).to_string());
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

    #[test]
    fn retry_after_in_seconds_date_and_millis() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(42));
        headers.insert("retry-after", later.parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(42)));
        headers.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(
            retry_after(&headers, now),
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let options = HttpOptions::default()
            .with_initial_backoff(Duration::from_secs(1))
            .with_max_backoff(Duration::from_secs(5));
        let none = HeaderMap::new();
        let delays: Vec<u64> = (1..=4)
            .map(|n| options.retry_delay(n, &none).as_secs())
            .collect();
        assert_eq!(delays, vec![1, 2, 4, 5]);
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "3600".parse().unwrap());
        assert_eq!(options.retry_delay(1, &headers), Duration::from_secs(5));
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
