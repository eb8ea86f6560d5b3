//! Serving an axum [`Router`] over HTTP/1.1 with bounds a server facing untrusted clients needs
//! and `axum::serve` does not have: a cap on open connections and timeouts on reading a
//! request's head and its body.
//!
//! [`serve`] is what the MCP HTTP server ([`McpServer::start_http`](crate::mcp::McpServer::start_http))
//! and the web chat example run on. Its guarantees, for any client:
//!
//! - at most [`ServerLimits::max_connections`] connections are served at once; one accepted
//!   over the cap is answered `503 Service Unavailable` and closed at once, so sockets held
//!   open by slow or idle clients cannot use up the process's file descriptors;
//! - a connection whose request head (request line and headers) is not complete within
//!   [`ServerLimits::header_read_timeout`] of the server starting to wait for it is closed,
//!   unanswered; that includes a new connection that sends nothing and a kept-alive one idle
//!   between requests. A response being streamed (server-sent events) is not affected;
//! - a request body still short of its end [`ServerLimits::body_read_timeout`] after the
//!   server first waited for more of it fails to read (the handler sees a body error: axum's
//!   extractors answer `400`), and the connection is closed after the answer, so a client
//!   dripping a body, or sending none after its head, holds a connection for that long at most;
//! - once the shutdown signal fires, no connection is accepted, idle ones are closed, and
//!   [`serve`] returns when the last request in flight has been answered.
//!
//! Each request carries the client's address as axum's
//! [`ConnectInfo<SocketAddr>`](axum::extract::ConnectInfo) extension.
//!
//! ```no_run
//! use tool_core::http_server::{ServerLimits, serve};
//!
//! # async fn run() -> std::io::Result<()> {
//! let router = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let stop = async {
//!     let _ = tokio::signal::ctrl_c().await;
//! };
//! serve(listener, router, ServerLimits::default(), stop).await
//! # }
//! ```

use std::{
    future::Future,
    io,
    pin::{Pin, pin},
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use axum::{Router, http::Request};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::Semaphore,
};
use tokio_util::sync::CancellationToken;

/// The default [`ServerLimits::max_connections`]: 512, half the usual limit of 1,024 open
/// files, so files and outgoing connections keep room.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// The default [`ServerLimits::header_read_timeout`]: 10 seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The default [`ServerLimits::body_read_timeout`]: 10 seconds.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The bounds [`serve`] keeps; `Default` gives [`DEFAULT_MAX_CONNECTIONS`],
/// [`DEFAULT_HEADER_READ_TIMEOUT`] and [`DEFAULT_BODY_READ_TIMEOUT`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// The most connections served at once (at least 1); more are answered `503` and closed.
    pub max_connections: usize,
    /// How long a client may take to send a request's head (at least 1 ms); a connection
    /// still short of one then is closed.
    pub header_read_timeout: Duration,
    /// How long a request's body may keep the server waiting for its end (at least 1 ms),
    /// counted from the first time the server waits for more of it; reading it then fails.
    pub body_read_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
        }
    }
}

impl ServerLimits {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the most connections served at once (`0` is taken as 1).
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections;
        self
    }

    /// Sets how long a client may take to send a request's head.
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets how long a request's body may keep the server waiting for its end.
    #[must_use]
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }
}

/// What a connection over the cap is told before it is closed.
const OVER_CAPACITY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
    content-type: text/plain; charset=utf-8\r\n\
    retry-after: 1\r\n\
    connection: close\r\n\
    content-length: 44\r\n\r\n\
    the server has too many connections; retry\r\n";

/// The most connection slots: what [`Semaphore::acquire_many`] takes at once (a `u32`) and a
/// semaphore holds, whichever is smaller.
const MAX_PERMITS: usize = if Semaphore::MAX_PERMITS < u32::MAX as usize {
    Semaphore::MAX_PERMITS
} else {
    u32::MAX as usize
};

/// Serves `router` on `listener` within `limits` until `shutdown` completes, then stops
/// accepting, lets the requests in flight finish and returns. See the [module docs](self) for
/// what it guarantees.
///
/// Errors accepting a connection are logged and do not stop the server (when the process is
/// out of file descriptors it waits a second before accepting again), so this returns `Ok`
/// after a shutdown; the `io::Result` leaves room for failures to come.
pub async fn serve<F>(
    listener: TcpListener,
    router: Router,
    limits: ServerLimits,
    shutdown: F,
) -> io::Result<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    let capacity = limits.max_connections.clamp(1, MAX_PERMITS);
    let header_read_timeout = limits.header_read_timeout.max(Duration::from_millis(1));
    let body_read_timeout = limits.body_read_timeout.max(Duration::from_millis(1));
    let slots = Arc::new(Semaphore::new(capacity));
    let closing = CancellationToken::new();
    let mut shutdown = pin!(shutdown);
    let mut heartbeat = heartbeat(header_read_timeout);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
            _ = heartbeat.tick() => continue,
        };
        let (stream, peer) = match accepted {
            Ok((stream, peer)) => (stream, peer),
            Err(error) => {
                wait_after_accept_error(&error).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refuse(&stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router
            .clone()
            .layer(axum::Extension(axum::extract::ConnectInfo(peer)));
        let closing = closing.clone();
        tokio::spawn(async move {
            let service = WithBodyDeadline {
                inner: TowerToHyperService::new(router),
                timeout: body_read_timeout,
            };
            serve_connection(stream, service, header_read_timeout, closing).await;
            drop(slot);
        });
    }
    drop(listener);
    closing.cancel();
    // Every connection holds a slot until it ends: all of them back means all ended.
    let all = u32::try_from(capacity).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// A timer that keeps the runtime's next timer wake-up nearer than any connection's
/// header-read deadline.
///
/// Every request on a kept-alive connection arms a new header-read timer. When the runtime has
/// no timer due sooner, arming one must wake the thread parked on the I/O driver (an `eventfd`
/// write, and on a multi-threaded runtime a thread woken for nothing) so that it parks again
/// with the new deadline: that is one needless wake-up per request. With this timer due within
/// half the header-read timeout (for timeouts of 200 ms and more), a new header-read deadline
/// is never the runtime's nearest, and arming it wakes nobody. It costs one wake-up per half
/// timeout while the server runs.
fn heartbeat(header_read_timeout: Duration) -> tokio::time::Interval {
    let period = (header_read_timeout / 2).max(Duration::from_millis(100));
    let mut heartbeat = tokio::time::interval(period);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    heartbeat
}

/// Serves one connection until it ends, or until `closing` and its request in flight is done.
async fn serve_connection(
    stream: TcpStream,
    service: WithBodyDeadline,
    header_read_timeout: Duration,
    closing: CancellationToken,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let connection = builder
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    let mut connection = pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "an http connection ended with an error");
            }
            return;
        }
        () = closing.cancelled() => connection.as_mut().graceful_shutdown(),
    }
    if let Err(error) = connection.await {
        tracing::debug!(%error, "an http connection ended with an error");
    }
}

/// The router as hyper's service, with each request's body under [`BodyDeadline`].
struct WithBodyDeadline {
    inner: TowerToHyperService<Router>,
    timeout: Duration,
}

impl hyper::service::Service<Request<Incoming>> for WithBodyDeadline {
    type Response = <TowerToHyperService<Router> as hyper::service::Service<
        Request<BodyDeadline<Incoming>>,
    >>::Response;
    type Error = <TowerToHyperService<Router> as hyper::service::Service<
        Request<BodyDeadline<Incoming>>,
    >>::Error;
    type Future = <TowerToHyperService<Router> as hyper::service::Service<
        Request<BodyDeadline<Incoming>>,
    >>::Future;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let timeout = self.timeout;
        self.inner.call(request.map(|body| BodyDeadline {
            body,
            timeout,
            timer: None,
        }))
    }
}

/// A request body that fails with [`BodyTimedOut`] when its end has not come `timeout` after
/// the server first waited for more of it. A body that is there whole when it is read (most
/// are: they come in the packets of the head) arms no timer.
struct BodyDeadline<B> {
    body: B,
    timeout: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<B> hyper::body::Body for BodyDeadline<B>
where
    B: hyper::body::Body + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = B::Data;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        let timeout = this.timeout;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(timeout))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request body that did not arrive within [`ServerLimits::body_read_timeout`].
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
struct BodyTimedOut(Duration);

/// Tells a connection over the cap so, without waiting for it, and closes it (on drop).
fn refuse(stream: &TcpStream) {
    tracing::warn!("refused a connection: the server is at its connection limit");
    // A fresh socket's send buffer has room for these few bytes; if not, it is closed all the
    // same.
    let _ = stream.try_write(OVER_CAPACITY);
}

/// After a failed `accept`: errors about one connection need no pause; others (out of file
/// descriptors, above all) get a second before the next try, as `axum::serve` does.
async fn wait_after_accept_error(error: &io::Error) {
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accepting an http connection failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_over_capacity_answer_has_the_length_it_says() {
        let text = std::str::from_utf8(OVER_CAPACITY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let length = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length: "))
            .unwrap();
        assert_eq!(length.parse::<usize>().unwrap(), body.len());
    }

    /// The write-class system calls the thread named `name` made so far (`syscw` in Linux's
    /// `/proc/self/task/TID/io`).
    #[cfg(target_os = "linux")]
    fn writes_of(name: &str) -> u64 {
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            let path = task.unwrap().path();
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            if comm.trim_end() == name {
                let io = std::fs::read_to_string(path.join("io")).unwrap();
                return io
                    .lines()
                    .find_map(|line| line.strip_prefix("syscw:"))
                    .and_then(|count| count.trim().parse().ok())
                    .unwrap();
            }
        }
        panic!("no thread named {name}");
    }

    /// A request on a kept-alive connection arms the header-read timer for the next one; that
    /// must not wake the runtime's I/O driver (a write to its `eventfd`, and on a
    /// multi-threaded runtime a parked thread woken for nothing). Counted, not timed: the
    /// server's thread makes one write a request (the answer) with the heartbeat, two without.
    #[cfg(target_os = "linux")]
    #[test]
    fn arming_the_header_read_timer_does_not_wake_the_driver() {
        use std::io::{Read as _, Write as _};

        const REQUESTS: u64 = 100;
        const SERVER: &str = "hrt-server";
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        // The handler reads the body under a timeout longer than the header-read one, as the
        // gateway waits for an upstream under its call timeout: the runtime parks with that
        // timeout as its nearest timer, so the header-read deadline armed after the answer is
        // nearer still.
        let handler = |body: axum::body::Body| async move {
            let read = axum::body::to_bytes(body, 1024);
            let body = tokio::time::timeout(Duration::from_mins(1), read)
                .await
                .unwrap()
                .unwrap();
            body.len().to_string()
        };
        let router = Router::new().route("/", axum::routing::post(handler));
        let stop = CancellationToken::new();
        let serving = serve(
            listener,
            router,
            ServerLimits::default(),
            stop.clone().cancelled_owned(),
        );
        let server = std::thread::Builder::new()
            .name(SERVER.to_owned())
            .spawn(move || runtime.block_on(serving))
            .unwrap();

        let mut client = std::net::TcpStream::connect(addr).unwrap();
        client.set_nodelay(true).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let head = format!("POST / HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 4\r\n\r\nab");
        let mut call = || {
            client.write_all(head.as_bytes()).unwrap();
            // The server parks waiting for the rest of the body.
            std::thread::sleep(Duration::from_millis(1));
            client.write_all(b"cd").unwrap();
            let mut answer = Vec::new();
            let mut buffer = [0; 1024];
            while !answer.ends_with(b"\r\n\r\n4") {
                let read = client.read(&mut buffer).unwrap();
                assert!(read > 0, "the server closed the connection");
                answer.extend_from_slice(&buffer[..read]);
            }
        };
        // The first requests set up the connection and the timer wheel.
        for _ in 0..10 {
            call();
        }
        let before = writes_of(SERVER);
        for _ in 0..REQUESTS {
            call();
        }
        let writes = writes_of(SERVER) - before;
        stop.cancel();
        server.join().unwrap().unwrap();
        // One answer a request, with room for a stray wake-up of the runtime's own.
        assert!(
            writes < REQUESTS + REQUESTS / 2,
            "the server's thread made {writes} writes for {REQUESTS} requests"
        );
    }

    /// Serves a route that reads the whole body (as axum's `Bytes` extractor) and answers its
    /// length, with `body_read_timeout`; the server's address and its stop switch.
    async fn body_reader(body_read_timeout: Duration) -> (std::net::SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route(
            "/",
            axum::routing::post(|body: axum::body::Bytes| async move { body.len().to_string() }),
        );
        let stop = CancellationToken::new();
        let limits = ServerLimits::new().body_read_timeout(body_read_timeout);
        tokio::spawn(serve(
            listener,
            router,
            limits,
            stop.clone().cancelled_owned(),
        ));
        (addr, stop)
    }

    /// Sends `head`, then `body` one byte every `pause`, and reads the answer until the server
    /// closes the connection (within 10 s).
    async fn drip(addr: std::net::SocketAddr, head: &str, body: &[u8], pause: Duration) -> String {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let exchange = async {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream.write_all(head.as_bytes()).await.unwrap();
            let (mut reader, mut writer) = stream.into_split();
            let body = body.to_vec();
            let sender = tokio::spawn(async move {
                for byte in body {
                    tokio::time::sleep(pause).await;
                    if writer.write_all(&[byte]).await.is_err() {
                        break;
                    }
                }
                writer
            });
            let mut answer = Vec::new();
            let _ = reader.read_to_end(&mut answer).await;
            sender.abort();
            String::from_utf8_lossy(&answer).into_owned()
        };
        tokio::time::timeout(Duration::from_secs(10), exchange)
            .await
            .expect("the server held the connection for 10 s")
    }

    /// A client that sends a request's head and then no body, or drips one byte by byte, holds
    /// its connection for the body-read timeout at most; one that sends its body whole in time
    /// is served as before.
    #[tokio::test]
    async fn a_body_that_does_not_arrive_in_time_fails_and_the_connection_closes() {
        let (addr, stop) = body_reader(Duration::from_secs(1)).await;
        let head = |length: usize| {
            format!(
                "POST / HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {length}\r\n\r\n"
            )
        };
        // No body at all after the head.
        let answer = drip(addr, &head(100), b"", Duration::ZERO).await;
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer:?}");
        // A byte every 50 ms: each comes well within the timeout, but the whole body (100
        // bytes, 5 s) does not; read whole, it would be answered `200`.
        let answer = drip(addr, &head(100), &[b'x'; 100], Duration::from_millis(50)).await;
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer:?}");
        // A body that comes whole, a little after its head, is read.
        let answer = drip(addr, &head(3), b"abc", Duration::from_millis(20)).await;
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
        assert!(answer.ends_with("\r\n\r\n3"), "{answer:?}");
        stop.cancel();
    }

    #[tokio::test]
    async fn limits_out_of_range_are_brought_into_it() {
        for limits in [
            ServerLimits::new().max_connections(0),
            ServerLimits::new().max_connections(usize::MAX),
            ServerLimits::new().header_read_timeout(Duration::ZERO),
            ServerLimits::new().body_read_timeout(Duration::ZERO),
        ] {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let served = serve(listener, Router::new(), limits, std::future::ready(()));
            served.await.unwrap();
        }
    }
}
