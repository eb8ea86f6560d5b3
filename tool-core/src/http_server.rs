//! Serving an axum [`Router`] over HTTP/1.1 with bounds a server facing untrusted clients needs
//! and `axum::serve` does not have: a cap on open connections and a timeout on reading a
//! request's head.
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

use std::{future::Future, io, pin::pin, sync::Arc, time::Duration};

use axum::Router;
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

/// The bounds [`serve`] keeps; `Default` gives [`DEFAULT_MAX_CONNECTIONS`] and
/// [`DEFAULT_HEADER_READ_TIMEOUT`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// The most connections served at once (at least 1); more are answered `503` and closed.
    pub max_connections: usize,
    /// How long a client may take to send a request's head (at least 1 ms); a connection
    /// still short of one then is closed.
    pub header_read_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
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
    let slots = Arc::new(Semaphore::new(capacity));
    let closing = CancellationToken::new();
    let mut shutdown = pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
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
            serve_connection(stream, router, header_read_timeout, closing).await;
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

/// Serves one connection until it ends, or until `closing` and its request in flight is done.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    header_read_timeout: Duration,
    closing: CancellationToken,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let connection = builder
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(router))
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

    #[tokio::test]
    async fn limits_out_of_range_are_brought_into_it() {
        for limits in [
            ServerLimits::new().max_connections(0),
            ServerLimits::new().max_connections(usize::MAX),
            ServerLimits::new().header_read_timeout(Duration::ZERO),
        ] {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let served = serve(listener, Router::new(), limits, std::future::ready(()));
            served.await.unwrap();
        }
    }
}
