//! What every provider client shares: retries and their limits, transport errors, redirects
//! and secrets, and picking a client from the environment.

use std::{collections::HashMap, time::Duration};

use tool_core::{
    Provider,
    model::{
        self, AnthropicClient, AnthropicConfig, ChatModel, ChatRequest, GeminiClient, GeminiConfig,
        HttpOptions, Message, OllamaClient, OllamaConfig, OpenAiClient, OpenAiConfig,
        ProviderError,
    },
};

use crate::loopback::{Collected, Reply, Server, closed_address, fast_retries};

const TEXT: &[u8] = include_bytes!("../transcripts/openai/text.sse");
const DOWN: &[u8] =
    br#"{"error":{"message":"upstream is down","type":"server_error","code":null}}"#;

fn client(base: &str, http: HttpOptions) -> OpenAiClient {
    OpenAiClient::new(
        OpenAiConfig::default()
            .api_key("sk-test")
            .base_url(format!("{base}/v1"))
            .http(http),
    )
    .unwrap()
}

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::user("hello")])
}

fn patient() -> HttpOptions {
    HttpOptions::default()
        .initial_backoff(Duration::from_secs(600))
        .max_backoff(Duration::from_secs(600))
}

#[tokio::test]
async fn server_errors_are_retried_then_reported_as_unavailable() {
    let server = Server::start(vec![
        Reply::error(503, DOWN),
        Reply::error(502, DOWN),
        Reply::error(503, DOWN),
        Reply::sse(TEXT),
    ])
    .await;
    let model = client(server.url(), fast_retries().max_retries(2));
    let error = model
        .stream(hello())
        .await
        .err()
        .expect("every attempt failed");
    match error {
        ProviderError::Unavailable {
            provider: Provider::OpenAi,
            status: 503,
            attempts: 3,
            message,
        } => assert_eq!(message, "upstream is down"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_server_error_then_success_is_retried() {
    let server = Server::start(vec![Reply::error(500, DOWN), Reply::sse(TEXT)]).await;
    let model = client(server.url(), fast_retries());
    let out = Collected::from(model.stream(hello()).await.unwrap()).await;
    assert_eq!(out.text(), "The capital of France is Paris.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_as_a_past_http_date_means_retry_now() {
    let server = Server::start(vec![
        Reply::error(429, DOWN).header("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
        Reply::sse(TEXT),
    ])
    .await;
    let model = client(server.url(), patient());
    let out = tokio::time::timeout(Duration::from_secs(60), async {
        Collected::from(model.stream(hello()).await.unwrap()).await
    })
    .await
    .expect("the HTTP date was honoured");
    assert_eq!(out.text(), "The capital of France is Paris.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retry_after_is_capped_by_max_backoff() {
    let server = Server::start(vec![
        Reply::error(429, DOWN).header("retry-after", "3600"),
        Reply::sse(TEXT),
    ])
    .await;
    let http = HttpOptions::default().max_backoff(Duration::from_millis(100));
    let model = client(server.url(), http);
    let out = tokio::time::timeout(Duration::from_secs(60), async {
        Collected::from(model.stream(hello()).await.unwrap()).await
    })
    .await
    .expect("the hour-long Retry-After was capped");
    assert_eq!(out.text(), "The capital of France is Paris.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error_after_retries() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let model = client(&format!("http://{address}"), fast_retries().max_retries(1));
    let error = model.chat(hello()).await.unwrap_err();
    assert!(
        matches!(
            error,
            ProviderError::Transport {
                provider: Provider::OpenAi,
                ..
            }
        ),
        "{error:?}"
    );
}

/// Every provider's client, at `base`, with a key and an extra header, and no retries.
fn every_client(base: &str) -> Vec<Box<dyn ChatModel>> {
    let http = || fast_retries().max_retries(0);
    vec![
        Box::new(
            OpenAiClient::new(
                OpenAiConfig::default()
                    .api_key("sk-SECRET")
                    .base_url(format!("{base}/v1"))
                    .header("x-extra", "XSECRET")
                    .http(http()),
            )
            .unwrap(),
        ),
        Box::new(
            AnthropicClient::new(
                AnthropicConfig::default()
                    .api_key("ak-SECRET")
                    .base_url(base)
                    .header("x-extra", "XSECRET")
                    .http(http()),
            )
            .unwrap(),
        ),
        Box::new(
            GeminiClient::new(
                GeminiConfig::default()
                    .api_key("gk-SECRET")
                    .base_url(format!("{base}/v1beta"))
                    .header("x-extra", "XSECRET")
                    .http(http()),
            )
            .unwrap(),
        ),
        Box::new(
            OllamaClient::new(
                OllamaConfig::default()
                    .api_key("ok-SECRET")
                    .base_url(base)
                    .header("x-extra", "XSECRET")
                    .http(http()),
            )
            .unwrap(),
        ),
    ]
}

/// A provider URL that redirects to another origin (another port on loopback) gets an error,
/// and the other origin gets nothing: not the key (`authorization`, `x-api-key`,
/// `x-goog-api-key`), not the extra headers, not the body.
#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_by_every_provider() {
    let other = Server::start(vec![]).await;
    let location = format!("{}/elsewhere", other.url());
    let redirect = Reply::error(307, b"").header("location", &location);
    let redirecting = Server::start(vec![redirect; 8]).await;
    for model in every_client(redirecting.url()) {
        for streamed in [false, true] {
            let error = if streamed {
                model.stream(hello()).await.err()
            } else {
                model.chat(hello()).await.err()
            };
            let message = error.expect("the redirect is refused").to_string();
            let expected = format!("refused to follow a redirect from {}/", redirecting.url());
            assert!(message.contains(&expected), "{message}");
            assert!(
                message.contains(&format!(" to {location}: another origin")),
                "{message}"
            );
        }
    }
    assert_eq!(redirecting.requests().len(), 8);
    assert!(other.requests().is_empty(), "{:?}", other.requests());
}

/// Within the origin, a redirect is followed, with the key and the body.
#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let server = Server::start(vec![
        Reply::error(307, b"").header("location", "/v2/chat/completions"),
        Reply::sse(TEXT),
    ])
    .await;
    let model = client(server.url(), fast_retries());
    let out = Collected::from(model.stream(hello()).await.unwrap()).await;
    assert_eq!(out.text(), "The capital of France is Paris.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].uri, "/v2/chat/completions");
    assert_eq!(requests[1].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(requests[1].body, requests[0].body);
}

/// `Debug` of every configuration and client shows where it goes, not its secrets: the key,
/// the extra headers' values, and the base URL's password (whatever characters it holds) and
/// query values.
#[test]
fn debug_output_hides_keys_headers_and_url_credentials() {
    let base = "http://alice:pa#ss/w?rd@127.0.0.1:1/api?key=QSECRET";
    let openai = OpenAiConfig::default().api_key("sk-SECRET").base_url(base);
    let anthropic = AnthropicConfig::default()
        .api_key("ak-SECRET")
        .base_url(base);
    let gemini = GeminiConfig::default().api_key("gk-SECRET").base_url(base);
    let ollama = OllamaConfig::default().api_key("ok-SECRET").base_url(base);
    let configs = [
        format!("{openai:?}"),
        format!("{anthropic:?}"),
        format!("{gemini:?}"),
        format!("{ollama:?}"),
    ];
    let clients = [
        format!(
            "{:?}",
            OpenAiClient::new(openai.header("x-extra", "XSECRET")).unwrap()
        ),
        format!(
            "{:?}",
            AnthropicClient::new(anthropic.header("x-extra", "XSECRET")).unwrap()
        ),
        format!(
            "{:?}",
            GeminiClient::new(gemini.header("x-extra", "XSECRET")).unwrap()
        ),
        format!(
            "{:?}",
            OllamaClient::new(ollama.header("x-extra", "XSECRET")).unwrap()
        ),
    ];
    for debug in configs.iter().chain(&clients) {
        for secret in ["SECRET", "pa#ss", "w?rd"] {
            assert!(!debug.contains(secret), "{secret} in {debug}");
        }
        assert!(debug.contains("***@127.0.0.1:1/api?key=***"), "{debug}");
    }
    for debug in &clients {
        assert!(debug.contains(r#"("x-extra", "***")"#), "{debug}");
    }
}

/// A transport error quotes the URL it failed on without its query values.
#[tokio::test]
async fn transport_errors_quote_the_url_without_its_secrets() {
    let address = closed_address();
    for model in every_client(&format!("http://{address}/x?key=QSECRET&")) {
        let message = model.chat(hello()).await.unwrap_err().to_string();
        assert!(message.contains(&address.to_string()), "{message}");
        assert!(!message.contains("QSECRET"), "{message}");
        assert!(!message.contains("SECRET"), "{message}");
    }
}

/// The warning logged before a retry quotes the URL without its query values too.
#[test]
fn retry_logs_quote_the_url_without_its_secrets() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let address = closed_address();
    let model = client(
        &format!("http://{address}/x?key=QSECRET&"),
        fast_retries().max_retries(1),
    );
    let (error, logs) = crate::logs::capture(|| runtime.block_on(model.chat(hello())));
    assert!(error.is_err());
    assert!(logs.contains("connection failed; retrying"), "{logs}");
    assert!(logs.contains(&address.to_string()), "{logs}");
    assert!(!logs.contains("QSECRET"), "{logs}");
}

/// Any `Retry-After` a busy provider sends, however large, negative, fractional or malformed,
/// becomes a wait of at most `max_backoff` (or is ignored): the request is retried once and
/// succeeds, streamed and not, on every provider. A value like `1e300` used to panic while
/// being turned into a `Duration`.
#[tokio::test]
async fn hostile_retry_after_headers_never_panic_and_are_bounded_on_every_provider() {
    let headers = [
        ("retry-after", "1e300"),
        ("retry-after", "99999999999999999999"),
        ("retry-after", "inf"),
        ("retry-after", "-3"),
        ("retry-after", "0.5e-3"),
        ("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"),
        ("retry-after", "tomorrow-ish"),
        ("retry-after-ms", "1e300"),
        ("retry-after-ms", "-1"),
    ];
    // A cap the test can wait for: without it an hour-long header would stall it.
    let http = fast_retries().max_backoff(Duration::from_millis(20));
    for wire in crate::provider_wires::all() {
        for streamed in [true, false] {
            for (name, value) in headers {
                let success = if streamed {
                    (wire.streamed)(wire.text.recording)
                } else {
                    Reply::json(wire.whole[0].recording)
                };
                let server =
                    Server::start(vec![Reply::error(429, DOWN).header(name, value), success]).await;
                let model = wire.client(&server, http.clone());
                let what = format!("{} streamed={streamed} {name}: {value}", wire.provider);
                let outcome = tokio::time::timeout(Duration::from_secs(20), async {
                    if streamed {
                        let collected = Collected::from(model.stream(hello()).await?).await;
                        collected.error.map_or(Ok(()), Err)
                    } else {
                        model.chat(hello()).await.map(drop)
                    }
                })
                .await
                .unwrap_or_else(|_| panic!("{what}: the retry waited too long"));
                assert!(outcome.is_ok(), "{what}: {outcome:?}");
                assert_eq!(server.requests().len(), 2, "{what}");
            }
        }
    }
}

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn chosen(pairs: &[(&str, &str)]) -> Option<(Provider, String)> {
    model::from_vars(&vars(pairs))
        .unwrap()
        .map(|model| (model.provider(), model.model_name().to_owned()))
}

#[test]
fn no_provider_configured_gives_none() {
    assert_eq!(chosen(&[]), None);
    assert_eq!(
        chosen(&[("OPENAI_API_KEY", "  ")]),
        None,
        "blank values do not count"
    );
}

#[test]
fn the_first_configured_provider_is_chosen() {
    let all = [
        ("OPENAI_API_KEY", "sk"),
        ("ANTHROPIC_API_KEY", "ant"),
        ("GEMINI_API_KEY", "gm"),
        ("OLLAMA_HOST", "localhost"),
    ];
    assert_eq!(chosen(&all).unwrap().0, Provider::OpenAi);
    assert_eq!(chosen(&all[1..]).unwrap().0, Provider::Anthropic);
    assert_eq!(chosen(&all[2..]).unwrap().0, Provider::Gemini);
    assert_eq!(chosen(&all[3..]).unwrap().0, Provider::Ollama);
    assert_eq!(
        chosen(&[
            ("OPENAI_BASE_URL", "http://localhost:8000/v1"),
            ("OPENAI_MODEL", "qwen")
        ]),
        Some((Provider::OpenAi, "qwen".to_owned()))
    );
}

#[test]
fn tool_core_provider_chooses_explicitly() {
    assert_eq!(
        chosen(&[
            ("TOOL_CORE_PROVIDER", "Ollama"),
            ("OPENAI_API_KEY", "sk"),
            ("OLLAMA_MODEL", "qwen3"),
        ]),
        Some((Provider::Ollama, "qwen3".to_owned()))
    );
    assert_eq!(
        chosen(&[
            ("TOOL_CORE_PROVIDER", "gemini"),
            ("GOOGLE_API_KEY", "gm"),
            ("GEMINI_MODEL", "gemini-2.5-pro")
        ]),
        Some((Provider::Gemini, "gemini-2.5-pro".to_owned()))
    );
}

#[test]
fn an_unusable_explicit_choice_is_an_error() {
    let unknown = model::from_vars(&vars(&[("TOOL_CORE_PROVIDER", "cohere")])).err();
    assert!(
        matches!(&unknown, Some(ProviderError::Config(message)) if message.contains("cohere")),
        "{unknown:?}"
    );
    let keyless = model::from_vars(&vars(&[("TOOL_CORE_PROVIDER", "anthropic")])).err();
    assert!(
        matches!(&keyless, Some(ProviderError::Config(message)) if message.contains("ANTHROPIC_API_KEY")),
        "{keyless:?}"
    );
}

#[test]
fn configs_read_their_variables() {
    let config = OpenAiConfig::from_vars(&vars(&[
        ("OPENAI_API_KEY", "sk-env"),
        ("OPENAI_BASE_URL", "https://openrouter.ai/api/v1"),
        ("OPENAI_MODEL", "openai/gpt-4o"),
    ]));
    assert_eq!(config.endpoint.api_key.as_deref(), Some("sk-env"));
    assert_eq!(config.endpoint.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(config.endpoint.model, "openai/gpt-4o");
    let defaults = OpenAiConfig::from_vars(&vars(&[]));
    assert_eq!(defaults, OpenAiConfig::default());
    let ollama = model::OllamaConfig::from_vars(&vars(&[("OLLAMA_HOST", "0.0.0.0:9999")]));
    assert_eq!(ollama.endpoint.base_url, "http://0.0.0.0:9999");
}

#[test]
fn every_config_reads_its_own_variables_over_its_defaults() {
    use model::{AnthropicConfig, GeminiConfig, OllamaConfig};

    let endpoint = |e: &model::Endpoint| {
        (
            e.api_key.clone(),
            e.base_url.clone(),
            e.model.clone(),
            e.headers.len(),
            e.http == HttpOptions::default(),
        )
    };
    let owned = |key: Option<&str>, base: &str, model: &str| {
        (
            key.map(str::to_owned),
            base.to_owned(),
            model.to_owned(),
            0,
            true,
        )
    };
    let none = vars(&[]);
    assert_eq!(
        endpoint(&OpenAiConfig::from_vars(&none).endpoint),
        owned(None, "https://api.openai.com/v1", "gpt-4o-mini")
    );
    assert!(OpenAiConfig::default().include_usage);
    assert_eq!(
        endpoint(&AnthropicConfig::from_vars(&none).endpoint),
        owned(None, "https://api.anthropic.com", "claude-sonnet-4-5")
    );
    let anthropic = AnthropicConfig::default();
    assert_eq!(
        (
            anthropic.max_tokens,
            anthropic.version.as_str(),
            anthropic.beta.len()
        ),
        (4096, "2023-06-01", 0)
    );
    assert_eq!(
        endpoint(&GeminiConfig::from_vars(&none).endpoint),
        owned(
            None,
            "https://generativelanguage.googleapis.com/v1beta",
            "gemini-2.5-flash"
        )
    );
    assert_eq!(
        endpoint(&OllamaConfig::from_vars(&none).endpoint),
        owned(None, "http://localhost:11434", "llama3.2")
    );

    let anthropic = AnthropicConfig::from_vars(&vars(&[
        ("ANTHROPIC_API_KEY", "ant-env"),
        ("ANTHROPIC_BASE_URL", "http://proxy.test"),
        ("ANTHROPIC_MODEL", "claude-haiku-4-5"),
        ("OPENAI_API_KEY", "sk-not-mine"),
    ]));
    assert_eq!(
        endpoint(&anthropic.endpoint),
        owned(Some("ant-env"), "http://proxy.test", "claude-haiku-4-5")
    );
    // `GEMINI_API_KEY` wins over `GOOGLE_API_KEY`, which is read when it is alone or the
    // other is blank.
    let gemini = |pairs: &[(&str, &str)]| GeminiConfig::from_vars(&vars(pairs)).endpoint;
    assert_eq!(
        gemini(&[("GEMINI_API_KEY", "gm"), ("GOOGLE_API_KEY", "gg")]).api_key,
        Some("gm".to_owned())
    );
    assert_eq!(
        gemini(&[("GEMINI_API_KEY", " "), ("GOOGLE_API_KEY", "gg")]).api_key,
        Some("gg".to_owned())
    );
    assert_eq!(
        endpoint(&gemini(&[
            ("GOOGLE_API_KEY", " gg "),
            ("GEMINI_BASE_URL", "http://vertex.test/v1"),
            ("GEMINI_MODEL", "tunedModels/mine"),
        ])),
        owned(Some("gg"), "http://vertex.test/v1", "tunedModels/mine")
    );
    let ollama = OllamaConfig::from_vars(&vars(&[
        ("OLLAMA_HOST", "https://ollama.example"),
        ("OLLAMA_MODEL", "qwen3"),
        ("OLLAMA_API_KEY", "ol-key"),
    ]));
    assert_eq!(
        endpoint(&ollama.endpoint),
        owned(Some("ol-key"), "https://ollama.example", "qwen3")
    );
    assert_eq!(
        OllamaConfig::default().host("[::1]").endpoint.base_url,
        "http://[::1]:11434"
    );
}

/// A kept-alive connection the server closes after reading the next request, without an
/// answer (as servers do when a keep-alive times out or a count runs out while the request
/// is on its way): the request is sent again on a new connection and succeeds.
#[tokio::test]
async fn a_request_on_a_kept_alive_connection_the_server_closed_is_sent_again() {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads one request (headers and a `content-length` body); false when the peer closed.
    async fn read_request(stream: &mut tokio::net::TcpStream) -> bool {
        let mut data = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = data.windows(4).position(|window| window == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .map_or(0, |value| value.trim().parse().unwrap());
                if data.len() >= end + 4 + length {
                    return true;
                }
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(read) => data.extend_from_slice(&chunk[..read]),
            }
        }
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let connections = Arc::new(AtomicUsize::new(0));
    let (seen, opened) = (requests.clone(), connections.clone());
    let server = tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            opened.fetch_add(1, Ordering::SeqCst);
            let seen = seen.clone();
            tokio::spawn(async move {
                while read_request(&mut stream).await {
                    if seen.fetch_add(1, Ordering::SeqCst) == 1 {
                        // The second request: closed unanswered.
                        return;
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                         content-length: {}\r\nconnection: keep-alive\r\n\r\n",
                        TEXT.len()
                    );
                    stream.write_all(head.as_bytes()).await.unwrap();
                    stream.write_all(TEXT).await.unwrap();
                }
            });
        }
    });
    let model = client(&format!("http://{address}"), fast_retries().max_retries(1));
    for _ in 0..2 {
        let out = Collected::from(model.stream(hello()).await.unwrap()).await;
        assert_eq!(out.text(), "The capital of France is Paris.");
    }
    assert_eq!(requests.load(Ordering::SeqCst), 3);
    assert_eq!(connections.load(Ordering::SeqCst), 2);
    server.abort();
}
