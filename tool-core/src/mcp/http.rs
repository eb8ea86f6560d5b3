//! Streamable HTTP serving: an axum router around `rmcp`'s tower service.

use std::{io, net::SocketAddr, sync::Arc};

use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use tokio::{net::ToSocketAddrs, task::JoinHandle};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{McpServer, McpServerError};

/// A running streamable HTTP MCP server, from [`McpServer::start_http`]. Dropping it shuts the
/// server down.
#[derive(Debug)]
pub struct McpHttpServer {
    addr: SocketAddr,
    path: String,
    stop: CancellationToken,
    task: JoinHandle<io::Result<()>>,
    _stop_on_drop: DropGuard,
}

impl McpHttpServer {
    /// The address the server is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the MCP endpoint, for example `http://127.0.0.1:8080/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Closes every session, stops accepting connections and waits for the server to stop.
    pub async fn shutdown(self) -> Result<(), McpServerError> {
        self.stop.cancel();
        self.wait().await
    }

    /// Serves until the server fails (a server that never fails serves for the life of the
    /// process); [`McpServer::serve_http`](super::McpServer::serve_http) is bind then wait.
    pub async fn wait(self) -> Result<(), McpServerError> {
        let Self {
            task,
            _stop_on_drop,
            ..
        } = self;
        task.await
            .map_err(McpServerError::Task)?
            .map_err(McpServerError::Http)
    }
}

pub(super) async fn start(
    server: &McpServer,
    addr: impl ToSocketAddrs + std::fmt::Debug,
) -> Result<McpHttpServer, McpServerError> {
    let shown = format!("{addr:?}");
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| McpServerError::Bind {
            addr: shown.trim_matches('"').to_owned(),
            source,
        })?;
    let addr = listener.local_addr().map_err(McpServerError::Http)?;

    let options = server.options();
    let allowed_hosts = options.allowed_hosts.clone().unwrap_or_else(|| {
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ];
        let ip = addr.ip();
        if !ip.is_unspecified() && !ip.is_loopback() {
            hosts.push(ip.to_string());
        }
        hosts
    });
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts)
        .with_max_request_body_bytes(options.max_request_bytes)
        // Stateless: no session, and plain JSON answers where no notification comes first.
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless)
        .with_cancellation_token(stop.child_token());
    let factory = {
        let server = server.clone();
        move || Ok(server.handler())
    };
    let service =
        StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
    let path = normalized_path(&options.http_path);
    // axum nests nothing at the root; a root endpoint is the fallback of an empty router.
    let router = if path == "/" {
        axum::Router::new().fallback_service(service)
    } else {
        axum::Router::new().nest_service(&path, service)
    };

    let task = tokio::spawn({
        let stop = stop.clone();
        async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await
        }
    });
    Ok(McpHttpServer {
        addr,
        path,
        _stop_on_drop: stop.clone().drop_guard(),
        stop,
        task,
    })
}

fn normalized_path(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    format!("/{trimmed}")
}
