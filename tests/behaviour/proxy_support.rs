//! A loopback round-robin HTTP proxy, the ordinary load balancer in front of several server
//! processes in the tests that scale a server out.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use crate::mcp_python::background_runtime;

/// A loopback HTTP proxy that sends each request to the next of its backends in turn, as an
/// ordinary load balancer does (keeping the request's path, streaming the answer back as it
/// comes), and counts what each answered.
pub(crate) struct RoundRobin {
    pub(crate) url: String,
    state: Arc<Backends>,
    _runtime: tokio::runtime::Runtime,
}

struct Backends {
    urls: [reqwest::Url; 2],
    next: AtomicUsize,
    answered: [AtomicUsize; 2],
    /// Each request forwarded: the backend's index and what was asked (see
    /// [`RoundRobin::forwarded`]).
    forwarded: Mutex<Vec<(usize, String)>>,
    http: reqwest::Client,
}

impl RoundRobin {
    /// A proxy at `…/mcp` on a free loopback port in front of the servers at `urls` (their
    /// `/mcp` URLs; a request for another path goes to that path of the next server).
    pub(crate) fn start(urls: [String; 2]) -> Self {
        let runtime = background_runtime();
        let state = Arc::new(Backends {
            urls: urls.map(|url| reqwest::Url::parse(&url).unwrap()),
            next: AtomicUsize::new(0),
            answered: [AtomicUsize::new(0), AtomicUsize::new(0)],
            forwarded: Mutex::default(),
            http: crate::http_client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
        });
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let router = axum::Router::new()
            .fallback(forward)
            .with_state(state.clone());
        runtime.spawn(async move { axum::serve(listener, router).await });
        Self {
            url,
            state,
            _runtime: runtime,
        }
    }

    /// Asserts that both backends answered requests of the session (so no request depended on
    /// state one of them held), and starts counting afresh.
    pub(crate) fn check_both_answered(&self) {
        let answered: Vec<usize> = self
            .state
            .answered
            .iter()
            .map(|count| count.swap(0, Ordering::SeqCst))
            .collect();
        assert!(
            answered.iter().all(|count| *count >= 2),
            "each backend should answer at least two requests: {answered:?}"
        );
    }

    /// The index of the backend the next request goes to.
    pub(crate) fn next_backend(&self) -> usize {
        self.state.next.load(Ordering::SeqCst) % 2
    }

    /// Every request forwarded so far, in order: the backend's index, and the JSON-RPC method
    /// of its body (`METHOD /path` for a request without one).
    pub(crate) fn forwarded(&self) -> Vec<(usize, String)> {
        self.state.forwarded.lock().unwrap().clone()
    }
}

async fn forward(
    axum::extract::State(backends): axum::extract::State<Arc<Backends>>,
    request: axum::extract::Request,
) -> axum::response::Response {
    let index = backends.next.fetch_add(1, Ordering::SeqCst) % 2;
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20).await.unwrap();
    let asked = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|message| Some(message.get("method")?.as_str()?.to_owned()))
        .unwrap_or_else(|| format!("{} {}", parts.method, parts.uri.path()));
    backends.forwarded.lock().unwrap().push((index, asked));
    let response = relay(&backends.http, &backends.urls[index], parts, body).await;
    backends.answered[index].fetch_add(1, Ordering::SeqCst);
    response
}

/// Sends the request of `parts` and `body` to the same path at `server`, and streams its
/// answer back, as an ordinary proxy does.
async fn relay(
    http: &reqwest::Client,
    server: &reqwest::Url,
    parts: axum::http::request::Parts,
    body: axum::body::Bytes,
) -> axum::response::Response {
    let target = server
        .join(parts.uri.path_and_query().map_or("/", |path| path.as_str()))
        .unwrap();
    let mut outgoing = http.request(parts.method, target);
    for (name, value) in &parts.headers {
        if !matches!(
            name.as_str(),
            "host" | "content-length" | "connection" | "transfer-encoding"
        ) {
            outgoing = outgoing.header(name, value);
        }
    }
    let answer = outgoing.body(body).send().await.unwrap();
    let mut response = axum::response::Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if !matches!(
            name.as_str(),
            "content-length" | "connection" | "transfer-encoding"
        ) {
            response = response.header(name, value);
        }
    }
    // Streamed, so an event stream (a listen stream, a GET stream) reaches the client as the
    // server writes it.
    response
        .body(axum::body::Body::from_stream(answer.bytes_stream()))
        .unwrap()
}

/// A loopback HTTP proxy in front of one MCP server over streamable HTTP that plays, on the
/// test's word, what goes wrong between a client and a real server: a session the server has
/// ended (`404 Not Found` for its requests) and an error status for a call. It notes each
/// request it answers (see [`Faulty::seen`]).
pub(crate) struct Faulty {
    pub(crate) url: String,
    state: Arc<Faults>,
    serving: tokio::task::JoinHandle<()>,
}

/// One request [`Faulty`] answered.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Seen {
    /// The JSON-RPC method of its body, or `METHOD /path` for a request without one.
    pub(crate) asked: String,
    /// The JSON-RPC id of a request, or the `requestId` of a `notifications/cancelled`.
    pub(crate) id: Option<serde_json::Value>,
    /// The HTTP status answered.
    pub(crate) status: u16,
}

/// The id of the first of `seen` that asked `method` (see [`Seen::id`]).
pub(crate) fn first_id(seen: &[Seen], method: &str) -> Option<serde_json::Value> {
    seen.iter()
        .find(|seen| seen.asked == method)
        .and_then(|seen| seen.id.clone())
}

#[derive(Default)]
struct FaultState {
    /// The session ids the server gave so far.
    sessions: Vec<String>,
    /// The session ids answered `404 Not Found`.
    ended: Vec<String>,
    /// The status, content type and body the next `tools/call` is answered with, instead of
    /// the server's.
    next_call: Option<(u16, &'static str, String)>,
    seen: Vec<Seen>,
}

struct Faults {
    server: reqwest::Url,
    http: reqwest::Client,
    state: Mutex<FaultState>,
}

impl Faulty {
    /// The proxy at `…/mcp` on a free loopback port in front of the server at `url`, served
    /// by the test's runtime.
    pub(crate) async fn start(url: &str) -> Self {
        let state = Arc::new(Faults {
            server: reqwest::Url::parse(url).unwrap(),
            http: crate::http_client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            state: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let router = axum::Router::new().fallback(play).with_state(state.clone());
        let serving = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self {
            url,
            state,
            serving,
        }
    }

    /// From now on every request of the sessions the server gave so far is answered
    /// `404 Not Found`, as a server answers once it has ended a session.
    pub(crate) fn end_sessions(&self) {
        let mut state = self.state.state.lock().unwrap();
        let sessions = state.sessions.clone();
        state.ended.extend(sessions);
    }

    /// The next `tools/call` is answered with `status` and `body` (of `content_type`), and
    /// never reaches the server.
    pub(crate) fn fail_next_call(&self, status: u16, content_type: &'static str, body: &str) {
        self.state.state.lock().unwrap().next_call = Some((status, content_type, body.to_owned()));
    }

    /// The requests answered so far, in order, leaving out the `GET` streams.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.state.state.lock().unwrap().seen.clone()
    }
}

impl Drop for Faulty {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

async fn play(
    axum::extract::State(faults): axum::extract::State<Arc<Faults>>,
    request: axum::extract::Request,
) -> axum::response::Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 << 20).await.unwrap();
    let message = serde_json::from_slice::<serde_json::Value>(&body).ok();
    let asked = message
        .as_ref()
        .and_then(|message| Some(message.get("method")?.as_str()?.to_owned()))
        .unwrap_or_else(|| format!("{} {}", parts.method, parts.uri.path()));
    let id = message.as_ref().and_then(|message| {
        message
            .get("id")
            .or_else(|| message.get("params")?.get("requestId"))
            .cloned()
    });
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let listen = parts.method == axum::http::Method::GET;
    let played = {
        let mut state = faults.state.lock().unwrap();
        if session
            .as_ref()
            .is_some_and(|session| state.ended.contains(session))
        {
            Some((404, "text/plain", String::new()))
        } else if asked == "tools/call" {
            state.next_call.take()
        } else {
            None
        }
    };
    let response = match played {
        Some((status, content_type, text)) => axum::response::Response::builder()
            .status(status)
            .header("content-type", content_type)
            .body(axum::body::Body::from(text))
            .unwrap(),
        None => relay(&faults.http, &faults.server, parts, body).await,
    };
    let mut state = faults.state.lock().unwrap();
    if let Some(given) = response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
    {
        if !state.sessions.iter().any(|known| known == given) {
            state.sessions.push(given.to_owned());
        }
    }
    if !listen {
        let status = response.status().as_u16();
        state.seen.push(Seen { asked, id, status });
    }
    response
}
