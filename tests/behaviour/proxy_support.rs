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
    let target = backends.urls[index]
        .join(parts.uri.path_and_query().map_or("/", |path| path.as_str()))
        .unwrap();
    let mut outgoing = backends.http.request(parts.method, target);
    for (name, value) in &parts.headers {
        if !matches!(
            name.as_str(),
            "host" | "content-length" | "connection" | "transfer-encoding"
        ) {
            outgoing = outgoing.header(name, value);
        }
    }
    let answer = outgoing.body(body).send().await.unwrap();
    backends.answered[index].fetch_add(1, Ordering::SeqCst);
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
