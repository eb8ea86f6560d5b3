//! What the gateway trusts and shows: an HTTP session is its user's alone (for every method,
//! in every gateway sharing the store, from the answer to its `initialize`), `/healthz` shows
//! upstream errors to the admin token only, `/healthz` and the admin API follow the MCP
//! endpoint's `Host` and `Origin` rules, a repeated proxy user header names nobody, an empty
//! `allowed_hosts` is refused, and a server's `Debug` hides its header and environment values.
//!
//! Gateways run in this process ([`McpGateway`] over real loopback HTTP); two gateways sharing
//! one SQLite store stand for two processes behind a load balancer, as sessions live in the
//! store. The session helpers are those of [`mcp_gateway`](crate::mcp_gateway).

use std::sync::{Arc, atomic::AtomicUsize};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tool_core::gateway::{GatewayConfig, GatewayError, GatewayHttpServer, McpGateway};

use crate::mcp_gateway::{
    ADMIN, ALICE, BOB, LIMIT, begin, call_request, config_text, initialize_only,
    initialize_request, initialized_notification, listed_tools, session_message, session_send,
};
use crate::mcp_server_access::Counted;

/// A gateway serving HTTP on a free loopback port, with one local tool, `count`.
pub(crate) struct Running {
    pub(crate) gateway: McpGateway,
    pub(crate) http: GatewayHttpServer,
}

impl Running {
    pub(crate) async fn start(text: &str) -> Self {
        let config = GatewayConfig::from_toml(text).unwrap();
        let count = Counted {
            name: "count",
            runs: Arc::new(AtomicUsize::new(0)),
            metadata: tool_core::ToolMetadata::new(),
        };
        let gateway = McpGateway::start(config, vec![Arc::new(count)])
            .await
            .unwrap();
        let http = gateway.start_http("127.0.0.1:0").await.unwrap();
        Self { gateway, http }
    }

    pub(crate) fn url(&self) -> String {
        self.http.url()
    }

    fn base(&self) -> String {
        format!("http://{}", self.http.local_addr())
    }
}

fn names(names: &[&str]) -> Result<Vec<String>, String> {
    Ok(names.iter().map(|name| (*name).to_owned()).collect())
}

/// Asserts that `listed` was answered `404`, as in a session the gateway does not know.
fn assert_unknown(listed: &Result<Vec<String>, String>, context: &str) {
    assert!(
        listed
            .as_ref()
            .is_err_and(|answer| answer.starts_with("404:")),
        "{context}: {listed:?}"
    );
}

/// The `id:` of the first event of an event stream.
fn first_event_id(body: &str) -> Option<String> {
    body.lines()
        .find_map(|line| line.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_session_id_is_unknown_to_every_method_on_every_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let text = config_text(dir.path(), "", "");
    let first = Running::start(&text).await;
    let second = Running::start(&text).await;
    let (url, other) = (first.url(), second.url());

    // Alice begins a session and switches `count` off in it only.
    let session = begin(&url, ALICE).await;
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "set_tool_enabled", "arguments": {"name": "count", "enabled": false, "scope": "session"}}
    });
    let switched = session_message(&url, ALICE, Some(&session), &call).await;
    assert_eq!(switched.status, 200, "{}", switched.body);
    assert_eq!(
        switched.message.as_ref().unwrap()["result"]["content"][0]["text"],
        "count is off",
        "{}",
        switched.body
    );
    let event = first_event_id(&switched.body).expect("the answer came as an event stream");
    assert_eq!(
        listed_tools(&url, ALICE, &session).await,
        names(&["set_tool_enabled"])
    );

    // Bob, with her session's id: resuming its stream (which would replay her call's result),
    // cancelling in it, listing its tools and ending it are answered as in no session, on
    // either gateway.
    for gateway in [&url, &other] {
        let resume = session_send(
            reqwest::Method::GET,
            gateway,
            BOB,
            Some(&session),
            &[("last-event-id", event.as_str())],
            None,
        )
        .await;
        assert_eq!(resume.status, 404, "{gateway}: {}", resume.body);
        assert!(!resume.body.contains("count is off"), "{}", resume.body);
        let cancel = json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "bob"}
        });
        let cancelled = session_message(gateway, BOB, Some(&session), &cancel).await;
        assert_eq!(cancelled.status, 404, "{gateway}: {}", cancelled.body);
        let listed = listed_tools(gateway, BOB, &session).await;
        assert_unknown(&listed, gateway);
        let ended = session_send(
            reqwest::Method::DELETE,
            gateway,
            BOB,
            Some(&session),
            &[],
            None,
        )
        .await;
        assert_eq!(ended.status, 404, "{gateway}: {}", ended.body);
    }

    // Alice's session goes on, with her switch, on both gateways.
    assert_eq!(
        listed_tools(&url, ALICE, &session).await,
        names(&["set_tool_enabled"])
    );
    assert_eq!(
        listed_tools(&other, ALICE, &session).await,
        names(&["set_tool_enabled"])
    );
    let resumed = session_send(
        reqwest::Method::GET,
        &url,
        ALICE,
        Some(&session),
        &[("last-event-id", event.as_str())],
        None,
    )
    .await;
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    // An unknown session is answered alike.
    let unknown = listed_tools(&url, ALICE, "no-such-session").await;
    assert_unknown(&unknown, "");
    // Her own `DELETE` ends it.
    let ended = session_send(
        reqwest::Method::DELETE,
        &url,
        ALICE,
        Some(&session),
        &[],
        None,
    )
    .await;
    assert!(ended.status < 300, "{}", ended.body);
    let after = listed_tools(&url, ALICE, &session).await;
    assert_unknown(&after, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_its_users_from_its_initialize_before_the_client_says_initialized() {
    let dir = tempfile::tempdir().unwrap();
    let text = config_text(dir.path(), "", "");
    let first = Running::start(&text).await;
    let second = Running::start(&text).await;
    let (url, other) = (first.url(), second.url());

    // Alice initializes but has not yet said `initialized`.
    let session = initialize_only(&url, ALICE).await;

    // Bob cannot take it over, on the other gateway (which would restore it from the store)
    // nor on hers.
    let listed = listed_tools(&other, BOB, &session).await;
    assert_unknown(&listed, "");
    let said = session_message(&url, BOB, Some(&session), &initialized_notification()).await;
    assert_eq!(said.status, 404, "{}", said.body);
    let listed = listed_tools(&url, BOB, &session).await;
    assert_unknown(&listed, "");

    // It stays hers, on both gateways.
    let said = session_message(&url, ALICE, Some(&session), &initialized_notification()).await;
    assert_eq!(said.status, 202, "{}", said.body);
    let all = names(&["count", "set_tool_enabled"]);
    assert_eq!(listed_tools(&url, ALICE, &session).await, all);
    assert_eq!(listed_tools(&other, ALICE, &session).await, all);
}

/// One raw HTTP/1.1 request to `addr`: the status of its answer and the answer.
async fn raw(addr: std::net::SocketAddr, request: String) -> (u16, String) {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    };
    let answer = tokio::time::timeout(LIMIT, exchange).await.unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"));
    (status, answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_shows_upstream_errors_to_the_admin_only_and_foreign_hosts_and_origins_are_refused()
{
    let dir = tempfile::tempdir().unwrap();
    // A server that says a secret on stderr and exits: its connection error carries that line.
    let servers = "[[servers]]\nname = \"leaky\"\ncommand = \"sh\"\n\
                   args = [\"-c\", \"echo leaked-secret-4711 >&2; exit 3\"]\n";
    let gateway = Running::start(&config_text(dir.path(), "", servers)).await;
    let addr = gateway.http.local_addr();
    let health = format!("{}/healthz", gateway.base());
    let client = crate::http_client::client();

    let public = client.get(&health).timeout(LIMIT).send().await.unwrap();
    assert_eq!(public.status().as_u16(), 200);
    let public = public.text().await.unwrap();
    let report: Value = serde_json::from_str(&public).unwrap();
    assert_eq!(
        report,
        json!({"status": "degraded", "servers": {"leaky": {"state": "connecting"}}}),
        "{public}"
    );
    assert!(!public.contains("leaked-secret"), "{public}");
    // The admin sees why.
    let admin = client
        .get(&health)
        .bearer_auth(ADMIN)
        .timeout(LIMIT)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(admin.contains("leaked-secret-4711"), "{admin}");

    // A foreign `Host` (DNS rebinding) or page `Origin` reaches neither `/healthz` nor the admin
    // API, and changes nothing.
    let (status, answer) = raw(
        addr,
        "GET /healthz HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n".to_owned(),
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    let switch_off = |host: &str, origin: &str| {
        format!(
            "PUT /admin/users/alice/tools/count HTTP/1.1\r\nHost: {host}\r\n{origin}\
             Authorization: Bearer {ADMIN}\r\nContent-Type: application/json\r\n\
             Content-Length: 18\r\nConnection: close\r\n\r\n{{\"enabled\": false}}"
        )
    };
    let (status, answer) = raw(addr, switch_off("evil.example", "")).await;
    assert_eq!(status, 403, "{answer}");
    let (status, answer) = raw(
        addr,
        switch_off(&addr.to_string(), "Origin: http://evil.example\r\n"),
    )
    .await;
    assert_eq!(status, 403, "{answer}");
    let alice: Value = client
        .get(format!("{}/admin/users/alice/tools", gateway.base()))
        .bearer_auth(ADMIN)
        .timeout(LIMIT)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        alice["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "count", "enabled": true})),
        "{alice}"
    );
    // The loopback page origin and name are admitted, as on the MCP endpoint.
    let (status, answer) = raw(
        addr,
        format!(
            "GET /healthz HTTP/1.1\r\nHost: localhost:{}\r\nOrigin: http://localhost:3000\r\n\
             Connection: close\r\n\r\n",
            addr.port()
        ),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_proxy_user_header_names_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let extra = "[gateway.trusted_proxy]\naddresses = [\"127.0.0.1\"]\nuser_header = \"x-user\"\n";
    let gateway = Running::start(&config_text(dir.path(), extra, "")).await;
    let initialize_as = |users: &'static [&'static str]| {
        let url = gateway.url();
        async move {
            let mut request = crate::http_client::client()
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .timeout(LIMIT)
                .body(initialize_request().to_string());
            for user in users {
                request = request.header("x-user", *user);
            }
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.headers().contains_key("mcp-session-id"),
            )
        }
    };
    assert_eq!(initialize_as(&["alice"]).await, (200, true));
    assert_eq!(initialize_as(&["alice", "bob"]).await, (401, false));
    assert_eq!(initialize_as(&["bob", "bob"]).await, (401, false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_allowed_hosts_list_is_refused() {
    let refused = GatewayConfig::from_toml("[gateway]\nallowed_hosts = []\n").unwrap_err();
    assert!(
        matches!(&refused, GatewayError::Config(message) if message.contains("`allowed_hosts` is empty")),
        "{refused}"
    );
    let mut config = GatewayConfig::default();
    config.gateway.store = "memory:".to_owned();
    config.gateway.allowed_hosts = Some(Vec::new());
    let refused = McpGateway::start(config, Vec::new()).await.unwrap_err();
    assert!(
        matches!(&refused, GatewayError::Config(message) if message.contains("`allowed_hosts` is empty")),
        "{refused}"
    );
    // A named host is kept.
    let named = GatewayConfig::from_toml("[gateway]\nallowed_hosts = [\"mcp.example\"]\n").unwrap();
    assert_eq!(
        named.gateway.allowed_hosts,
        Some(vec!["mcp.example".to_owned()])
    );
}

#[test]
fn a_servers_debug_output_hides_header_and_environment_values() {
    let config = GatewayConfig::from_toml(
        "[[servers]]\nname = \"local\"\ncommand = \"server\"\nenv = { API_KEY = \"env-secret-1\" }\n\n\
         [[servers]]\nname = \"remote\"\nurl = \"http://user:url-secret-3@127.0.0.1:9/mcp\"\n\
         headers = { Authorization = \"Bearer header-secret-2\" }\n",
    )
    .unwrap();
    for shown in [
        format!("{:?}", config.servers[0]),
        format!("{:?}", config.servers[1]),
        format!("{config:?}"),
        format!("{config:#?}"),
    ] {
        for secret in ["env-secret-1", "header-secret-2", "url-secret-3"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
    let local = format!("{:?}", config.servers[0]);
    assert!(
        local.contains("API_KEY") && local.contains("\"server\""),
        "{local}"
    );
    let remote = format!("{:?}", config.servers[1]);
    assert!(
        remote.contains("Authorization") && remote.contains("127.0.0.1:9"),
        "{remote}"
    );
}

/// A head announcing a body the client never sends, to a route that reads a body: the admin
/// API answers at once without the admin token, before waiting for any body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_refuses_a_request_without_the_token_before_reading_its_body() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Running::start(&config_text(dir.path(), "", "")).await;
    let addr = gateway.http.local_addr();
    for authorization in ["", "Authorization: Bearer not-the-admin-token\r\n"] {
        let head = format!(
            "PUT /admin/users/alice/tools/count HTTP/1.1\r\nHost: {addr}\r\n{authorization}\
             Content-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n"
        );
        // Waiting for the body first, the server would answer `400` once its body-read
        // timeout passed.
        let (status, answer) = raw(addr, head).await;
        assert_eq!(status, 401, "{answer}");
    }
}

/// Calls `tool` with `arguments` as the user of `token` in a self-contained 2026-07-28
/// request, which must be answered `200`: the answer's body.
async fn call(url: &str, token: &str, tool: &str, arguments: Value) -> String {
    let response = crate::http_client::client()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .timeout(LIMIT)
        .body(call_request(tool, arguments))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    body
}

/// A call of the gateway's own tool as `token`: the answer's body.
async fn set_tool_enabled(url: &str, token: &str, tool: &str, enabled: bool) -> String {
    let arguments = json!({"name": tool, "enabled": enabled});
    call(url, token, "set_tool_enabled", arguments).await
}

/// When the preference store fails, the client is told so, and nothing of the store's error
/// (which names the database's file and the failed statement); the operator's log has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_store_is_an_error_for_the_client_without_its_details() {
    use sqlx::Connection as _;
    let dir = tempfile::tempdir().unwrap();
    let gateway = Running::start(&config_text(dir.path(), "stateless = true", "")).await;
    let database = format!("sqlite://{}", dir.path().join("switches.db").display());
    let mut connection = sqlx::SqliteConnection::connect(&database).await.unwrap();
    sqlx::query("DROP TABLE tool_preferences")
        .execute(&mut connection)
        .await
        .unwrap();
    let answer = set_tool_enabled(&gateway.url(), ALICE, "count", false).await;
    assert!(answer.contains("its preference store failed"), "{answer}");
    for detail in ["switches.db", "sqlite", "tool_preferences", "no such table"] {
        assert!(!answer.contains(detail), "{detail} in {answer}");
    }
}

/// A switch an operator makes is the user's own switch, which the user may turn back with
/// `set_tool_enabled`, unless the operator switches `set_tool_enabled` off for them too: then
/// the tool stays off for that user, and the other users switch as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_locks_a_users_switches_by_switching_off_set_tool_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Running::start(&config_text(dir.path(), "stateless = true", "")).await;
    let url = gateway.url();
    let client = crate::http_client::client();
    let switch = |user: &str, tool: &str, enabled: bool| {
        client
            .put(format!(
                "{}/admin/users/{user}/tools/{tool}",
                gateway.base()
            ))
            .bearer_auth(ADMIN)
            .json(&json!({"enabled": enabled}))
            .timeout(LIMIT)
            .send()
    };
    let count = || call(&url, ALICE, "count", json!({}));

    // Switched off by the operator alone, the user turns it back on.
    assert_eq!(switch("alice", "count", false).await.unwrap().status(), 200);
    assert!(count().await.contains("-32602"));
    let answer = set_tool_enabled(&url, ALICE, "count", true).await;
    assert!(answer.contains("count is on"), "{answer}");
    assert!(!count().await.contains("-32602"));

    // With `set_tool_enabled` off too, the switch holds.
    assert_eq!(switch("alice", "count", false).await.unwrap().status(), 200);
    assert_eq!(
        switch("alice", "set_tool_enabled", false)
            .await
            .unwrap()
            .status(),
        200
    );
    let answer = set_tool_enabled(&url, ALICE, "count", true).await;
    assert!(answer.contains("-32602"), "{answer}");
    assert!(count().await.contains("-32602"));
    // Bob switches his own tools as before.
    let answer = set_tool_enabled(&url, BOB, "count", false).await;
    assert!(answer.contains("count is off"), "{answer}");
}
