//! HTTPS: the provider and MCP clients speak TLS with rustls' `ring` provider (installed by
//! tool-core when the process has none) and verify the server's certificate against the
//! platform's roots.
//!
//! `tests/tls/` holds a test authority (`ca.pem`) and a certificate it issued for `localhost`
//! and `127.0.0.1` (`localhost.pem`, key `localhost.key`), valid until 2126; they were made
//! with `openssl req -x509` (P-256) and trust nothing but themselves.

use tool_core::{
    ProviderError,
    mcp::{McpClient, McpClientError, McpServerConfig},
    model::ChatRequest,
};

use crate::{
    loopback::{Reply, Server, fast_retries, question_about},
    provider_wires,
};

/// What rustls says of a certificate issued by an authority the client does not trust.
const UNTRUSTED: &str = "invalid peer certificate: UnknownIssuer";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_is_reached_over_https_when_its_certificate_is_trusted() {
    let server = Server::start_tls(vec![Reply::sse(include_bytes!(
        "../transcripts/openai/text.sse"
    ))])
    .await;
    let base_url = format!("{}/v1", server.url());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    // A process of its own, so that the trusted roots can be the test authority alone
    // (SSL_CERT_FILE) and that no crypto provider is installed before tool-core's clients.
    let output = tokio::task::spawn_blocking(move || {
        crate::agent_example::spawn(
            &["--root", &root, "What is the capital of France?"],
            "",
            &[
                ("OPENAI_API_KEY", "sk-test"),
                ("OPENAI_BASE_URL", &base_url),
                ("OPENAI_MODEL", "gpt-4o-mini"),
                (
                    "SSL_CERT_FILE",
                    concat!(env!("CARGO_MANIFEST_DIR"), "/tls/ca.pem"),
                ),
                ("SSL_CERT_DIR", ""),
            ],
        )
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("The capital of France is Paris."),
        "{stdout}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn every_provider_refuses_a_server_whose_certificate_it_does_not_trust() {
    for wire in provider_wires::all() {
        let server = Server::start_tls(vec![(wire.streamed)(b"")]).await;
        let model = wire.client(&server, fast_retries());
        let error = model
            .chat(ChatRequest::new(question_about("Paris")))
            .await
            .unwrap_err();
        let ProviderError::Transport { provider, message } = &error else {
            panic!(
                "{:?}: expected a transport error, got {error:?}",
                wire.provider
            );
        };
        assert_eq!(*provider, wire.provider);
        assert!(message.ends_with(UNTRUSTED), "{message}");
        assert!(server.requests().is_empty(), "{:?}", wire.provider);
    }
}

#[tokio::test]
async fn an_mcp_server_whose_certificate_is_not_trusted_is_refused() {
    let server = Server::start_tls(Vec::new()).await;
    let url = format!("{}/mcp", server.url());
    let error = McpClient::connect(McpServerConfig::url(&url).name("remote"))
        .await
        .expect_err("the handshake fails");
    let McpClientError::Handshake {
        server: name,
        reason,
    } = &error
    else {
        panic!("expected a handshake error, got {error:?}");
    };
    assert_eq!(name, "remote");
    // rmcp's error names the request, not the certificate; that no request reached the server
    // shows the handshake was refused.
    assert!(
        reason.contains(&format!("error sending request for url ({url})")),
        "{reason}"
    );
    assert!(server.requests().is_empty());
}
