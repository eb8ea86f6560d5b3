//! What a gateway keeps per user stays bounded: behind a `trusted_proxy`, whose user header
//! can name anyone, endless user names leave at most `max_idle_users` users in memory once
//! they are idle, while a user with an open stream keeps theirs (and is still told of their
//! switches), a user over their rate stays over it, and a forgotten user's switches come back
//! from the store as they were.
//!
//! And a gateway reads the owner of a session another gateway began from the store once, not
//! on every request, yet refuses the session as soon as it ended.
//!
//! Gateways run in this process ([`McpGateway`](tool_core::gateway::McpGateway) over real
//! loopback HTTP), so that the users they keep and the store reads can be counted.

use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::mcp_gateway::{
    ALICE, BOB, LIMIT, SESSION_VERSION, begin, call_request, config_text, eventually,
    jsonrpc_answer, listed_tools, post, post_as, stateless, stateless_request, switch_off_request,
    tool_names,
};
use crate::mcp_gateway_pins::Listener;
use crate::mcp_gateway_trust::Running;

/// The most users the gateway under test keeps in memory once they are idle.
const KEPT: usize = 100;

/// The proxy's user header.
const USER_HEADER: &str = "x-user";

/// A request of the user `name`, as the trusted proxy forwards it; the JSON-RPC answer.
fn as_proxied(url: &str, name: &str, body: String) -> Value {
    let (status, answer) = post(url, &[(USER_HEADER, name)], body);
    assert_eq!(status, 200, "{answer}");
    jsonrpc_answer(&answer).unwrap_or_else(|| panic!("no JSON-RPC answer: {answer}"))
}

/// Lists the tools of the users `names` through the proxy, eight at a time, each of which must
/// list `count`.
async fn list_as(url: &str, names: std::ops::Range<usize>) {
    let client = crate::http_client::client();
    let body = stateless_request("tools/list", json!({}));
    futures::stream::iter(names)
        .map(|n| {
            let request = client
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/list")
                .header(USER_HEADER, format!("user-{n}"))
                .timeout(LIMIT)
                .body(body.clone());
            async move {
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                let text = response.text().await.unwrap();
                assert_eq!(status, 200, "user-{n}: {text}");
                let answer = jsonrpc_answer(&text).unwrap();
                assert!(tool_names(&answer).contains(&"count".to_owned()), "{text}");
            }
        })
        .buffer_unordered(8)
        .collect::<()>()
        .await;
}

#[test]
fn endless_proxied_user_names_leave_a_bounded_count_of_users_in_memory() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = config_text(
        dir.path(),
        &format!(
            "stateless = true\nmax_idle_users = {KEPT}\ncalls_per_minute = 1\n\
             requests_per_minute = 6000000\n\
             [gateway.trusted_proxy]\naddresses = [\"127.0.0.1\"]\nuser_header = \"{USER_HEADER}\"\n"
        ),
        "",
    );
    let gateway = runtime.block_on(Running::start(&text));
    let url = gateway.url();

    // Alice listens; Bob switches `count` off (in the store); Greedy spends her one call a
    // minute and is refused the next.
    let listener = Listener::open(&url);
    let (status, answer) = post_as(&url, BOB, switch_off_request("count"));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("count is off"), "{answer}");
    let bobs = |url: &str| tool_names(&stateless(url, BOB, "tools/list", json!({})));
    assert_eq!(bobs(&url), ["set_tool_enabled"]);
    let greedy_calls = |url: &str| as_proxied(url, "greedy", call_request("count", json!({})));
    let first = greedy_calls(&url);
    assert!(first["result"].is_object(), "{first}");
    let over = |answer: &Value| {
        answer["error"]["code"] == -32003
            && answer["error"]["message"]
                .as_str()
                .is_some_and(|message| message.starts_with("rate limit: at most 1 tool calls"))
    };
    let refused = greedy_calls(&url);
    assert!(over(&refused), "{refused}");

    // A thousand other names later (sweeps of the idle users among them), Greedy is still
    // over her rate: her limits were kept.
    runtime.block_on(list_as(&url, 0..1_000));
    let (limits, switches) = gateway.gateway.users_in_memory();
    assert!(limits <= KEPT && switches <= KEPT, "{limits} {switches}");
    let refused = greedy_calls(&url);
    assert!(over(&refused), "{refused}");

    // Ten thousand names in all: once they are idle, at most `KEPT` users are kept.
    runtime.block_on(list_as(&url, 1_000..10_000));
    let (limits, switches) = gateway.gateway.users_in_memory();
    assert!(limits <= KEPT, "{limits} users' limits kept");
    assert!(switches <= KEPT, "{switches} users' switches kept");

    // Alice's switches were kept for her open stream, which is told of her switch.
    let (status, answer) = post_as(&url, ALICE, switch_off_request("count"));
    assert_eq!(status, 200, "{answer}");
    eventually("Alice's stream to be told of her switch", || {
        listener.notified() >= 1
    });
    // Bob's, forgotten, come back from the store as they were.
    assert_eq!(bobs(&url), ["set_tool_enabled"]);
    drop(listener);
    drop(gateway);
}

#[test]
fn a_session_another_gateway_began_is_read_from_the_store_once_and_refused_once_ended() {
    let Some(postgres) = crate::store_support::postgres() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (store, _) = runtime.block_on(postgres.create_database());
    let dir = tempfile::tempdir().unwrap();
    let text = config_text(dir.path(), "", "");
    let sqlite = text
        .lines()
        .find(|line| line.starts_with("store = "))
        .unwrap();
    let text = text.replace(sqlite, &format!("store = {store:?}"));
    let first = runtime.block_on(Running::start(&text));
    let second = runtime.block_on(Running::start(&text));
    let (url, other) = (first.url(), second.url());
    let both = Ok(vec!["count".to_owned(), "set_tool_enabled".to_owned()]);

    runtime.block_on(async {
        // Alice begins a session on the first gateway and uses it on the second: its owner is
        // read from the store there once.
        let session = begin(&url, ALICE).await;
        for _ in 0..20 {
            assert_eq!(listed_tools(&other, ALICE, &session).await, both);
        }
        assert_eq!(second.http.session_owner_reads(), 1);
        assert_eq!(first.http.session_owner_reads(), 0);

        // The second holds a stream of the session; she ends it through the first.
        let mut stream = crate::http_client::client()
            .get(&other)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", SESSION_VERSION)
            .header("mcp-session-id", &session)
            .bearer_auth(ALICE)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status().as_u16(), 200);
        let ended = crate::http_client::client()
            .delete(&url)
            .header("mcp-protocol-version", SESSION_VERSION)
            .header("mcp-session-id", &session)
            .bearer_auth(ALICE)
            .timeout(LIMIT)
            .send()
            .await
            .unwrap();
        assert_eq!(ended.status().as_u16(), 202);
        // Once the second learnt of the end (its stream ends), its gate no longer takes her
        // for the owner: the next request reads the store, which has no such session.
        let deadline = tokio::time::Instant::now() + LIMIT;
        while let Ok(Ok(Some(_))) = tokio::time::timeout_at(deadline, stream.chunk()).await {}
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stream did not end"
        );
        let listed = listed_tools(&other, ALICE, &session).await;
        assert!(
            listed
                .as_ref()
                .is_err_and(|answer| answer.starts_with("404:")),
            "{listed:?}"
        );
        assert_eq!(second.http.session_owner_reads(), 2);
    });
    drop((first, second));
}
