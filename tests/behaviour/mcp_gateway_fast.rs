//! The stateless gateway's short way of `tools/call` (served before rmcp's per-request service)
//! against the long way (`fast_calls = false`): the same raw HTTP requests, to two gateways in
//! front of the same upstreams, get the same answers; the short way is taken; a client that
//! goes mid-call has its call cancelled upstream either way.

use std::{path::Path, time::Duration};

use serde_json::{Value, json};

use crate::{
    mcp_client::start_python_http,
    mcp_gateway::{
        ALICE, BOB, Gateway, LIMIT, config, eventually, python_server, python_upstream, runtime,
    },
    mcp_python::python,
    proxy_support::{Faulty, first_id},
};

/// What both gateways have in their `[gateway]` table.
const GATEWAY: &str = "stateless = true\nmax_request_bytes = 4096\nmax_concurrent_calls = 1";

/// The upstreams: the gateway tests' Python server (`py_`: echo, weather, redefine, slow) and
/// the client tests' (`sdk_`: fail, progress), both over stdio.
fn servers(python: &Path) -> String {
    format!(
        "{}{}",
        python_upstream(python, "python", "py", &[]),
        python_server(python, "server.py", "sdk", "prefix = \"sdk\"", &["stdio"]),
    )
}

/// A gateway in front of [`servers`], with the short way on or off, in a folder of its own.
fn gateway(python: &Path, fast: bool, dir: &Path) -> Gateway {
    let extra = format!("{GATEWAY}\nfast_calls = {fast}");
    Gateway::start_with(
        &config(dir, &extra, &servers(python)),
        &[],
        &[("RUST_LOG", "warn,rmcp=error,tool_core::gateway::fast=trace")],
    )
}

/// An answer as the test compares it: the status, the `Content-Type`, and the body (its JSON;
/// an event stream's messages, in order; else its text).
#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    content_type: Option<String>,
    body: Value,
}

fn body_of(content_type: Option<&str>, text: &str) -> Value {
    if content_type.is_some_and(|kind| kind.starts_with("text/event-stream")) {
        let messages: Vec<Value> = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter(|data| !data.trim().is_empty())
            .map(|data| serde_json::from_str(data.trim()).unwrap_or(Value::from(data.trim())))
            .collect();
        return Value::Array(messages);
    }
    let mut body = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
    // Each process lists its tools in an order of its own.
    if let Some(tools) = body
        .pointer_mut("/result/tools")
        .and_then(Value::as_array_mut)
    {
        tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    }
    body
}

/// A request: its headers besides the defaults (`None` drops a default) and its body.
struct Sent {
    what: &'static str,
    token: &'static str,
    headers: Vec<(&'static str, Option<&'static str>)>,
    body: String,
}

const DEFAULTS: [(&str, &str); 3] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", "2025-06-18"),
];

fn send(url: &str, sent: &Sent) -> Answer {
    let mut headers: Vec<(&str, Option<&str>)> = DEFAULTS
        .iter()
        .map(|(name, value)| (*name, Some(*value)))
        .collect();
    for (name, value) in &sent.headers {
        headers.retain(|(held, _)| held != name);
        headers.push((name, *value));
    }
    let mut request = crate::http_client::client()
        .post(url)
        .bearer_auth(sent.token)
        .timeout(LIMIT)
        .body(sent.body.clone());
    for (name, value) in headers {
        if let Some(value) = value {
            request = request.header(name, value);
        }
    }
    runtime().block_on(async move {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|value| value.to_str().unwrap().to_owned());
        let text = response.text().await.unwrap();
        Answer {
            status,
            body: body_of(content_type.as_deref(), &text),
            content_type,
        }
    })
}

fn call(id: Value, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

fn sent(what: &'static str, body: Value) -> Sent {
    Sent {
        what,
        token: ALICE,
        headers: Vec::new(),
        body: body.to_string(),
    }
}

fn with(mut sent: Sent, name: &'static str, value: Option<&'static str>) -> Sent {
    sent.headers.push((name, value));
    sent
}

/// The requests both gateways are sent, in order.
fn requests() -> Vec<Sent> {
    let echo = || call(json!(1), "py_echo", json!({"text": "hi"}));
    let mut traced = echo();
    traced["params"]["_meta"] =
        json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"});
    let mut progress = call(json!(7), "sdk_progress", json!({"steps": 2}));
    progress["params"]["_meta"] = json!({"progressToken": "p-1"});
    let mut extra_member = echo();
    extra_member["extra"] = json!(true);
    let mut self_contained = echo();
    self_contained["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    vec![
        sent("a call", echo()),
        sent(
            "a string id",
            call(json!("call-1"), "py_echo", json!({"text": "a"})),
        ),
        sent(
            "a float id",
            call(json!(3.0), "py_echo", json!({"text": "b"})),
        ),
        with(
            sent("no version header", echo()),
            "mcp-protocol-version",
            None,
        ),
        with(
            sent("2024-11-05", echo()),
            "mcp-protocol-version",
            Some("2024-11-05"),
        ),
        with(
            sent("2025-11-25", echo()),
            "mcp-protocol-version",
            Some("2025-11-25"),
        ),
        with(
            with(
                sent("2026-07-28", self_contained),
                "mcp-protocol-version",
                Some("2026-07-28"),
            ),
            "mcp-method",
            Some("tools/call"),
        ),
        sent("a trace context", traced),
        sent("an extra member", extra_member),
        sent(
            "a tool error",
            call(json!(2), "sdk_fail", json!({"message": "it broke"})),
        ),
        sent("an unknown tool", call(json!(3), "nope", json!({}))),
        sent(
            "a switched-off tool",
            call(json!(4), "py_weather", json!({"city": "Oslo"})),
        ),
        sent(
            "bad arguments",
            call(json!(5), "py_echo", json!({"text": 5})),
        ),
        sent(
            "no arguments",
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                                    "params": {"name": "py_echo"}}),
        ),
        sent(
            "no name",
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                               "params": {"arguments": {}}}),
        ),
        sent(
            "not JSON-RPC 2.0",
            json!({"jsonrpc": "1.0", "id": 6, "method": "tools/call",
                                        "params": {"name": "py_echo"}}),
        ),
        Sent {
            what: "malformed JSON",
            token: ALICE,
            headers: Vec::new(),
            body: "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ".to_owned(),
        },
        sent(
            "a batch",
            json!([echo(), call(json!(2), "py_echo", json!({"text": "x"}))]),
        ),
        sent(
            "a notification",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ),
        sent(
            "tools/list",
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}),
        ),
        with(
            sent("JSON only accepted", echo()),
            "accept",
            Some("application/json"),
        ),
        with(sent("no Accept", echo()), "accept", None),
        with(
            sent("text/event-stream refused by weight", echo()),
            "accept",
            Some("application/json, text/event-stream;q=0"),
        ),
        with(sent("no Content-Type", echo()), "content-type", None),
        with(
            sent("a bad protocol version", echo()),
            "mcp-protocol-version",
            Some("1999-01-01"),
        ),
        with(
            sent("a foreign Origin", echo()),
            "origin",
            Some("https://evil.example"),
        ),
        with(
            sent("a loopback Origin", echo()),
            "origin",
            Some("http://localhost:3000"),
        ),
        with(sent("a foreign Host", echo()), "host", Some("evil.example")),
        with(sent("a malformed Host", echo()), "host", Some("a b")),
        sent(
            "an oversized body",
            call(json!(8), "py_echo", json!({"text": "x".repeat(5000)})),
        ),
        sent("progress", progress),
        sent(
            "set_tool_enabled",
            call(
                json!(10),
                "set_tool_enabled",
                json!({"name": "py_echo", "enabled": true}),
            ),
        ),
    ]
}

#[test]
fn the_short_way_answers_every_request_as_the_long_way_does() {
    let Some(python) = python() else { return };
    let (fast_dir, slow_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let fast = gateway(python, true, fast_dir.path());
    let slow = gateway(python, false, slow_dir.path());
    for gateway in [&fast, &slow] {
        gateway.switch("alice", "py_weather", false);
    }
    for request in requests() {
        let (short, long) = (send(&fast.url, &request), send(&slow.url, &request));
        assert_eq!(short, long, "{}", request.what);
        assert_ne!(short.status, 0, "{}", request.what);
    }

    // A withheld tool: its definition changed upstream.
    for gateway in [&fast, &slow] {
        send(
            &gateway.url,
            &sent("redefine", call(json!(1), "py_redefine", json!({}))),
        );
        eventually("the change to be pending", || {
            let (_, pins) = gateway.admin(reqwest::Method::GET, "/admin/pins", None);
            pins["pending"]["py_weather"]["server"] == "python"
        });
    }
    let mut withheld = sent(
        "withheld",
        call(json!(1), "py_weather", json!({"city": "Oslo"})),
    );
    withheld.token = BOB;
    let (short, long) = (send(&fast.url, &withheld), send(&slow.url, &withheld));
    assert_eq!(short, long);
    assert_eq!(short.body["error"]["code"], -32602, "{short:?}");

    // Over the call limit (one at a time on a server): Bob's call while his slow one runs.
    let mut slow_call = sent("slow", call(json!(1), "py_slow", json!({"seconds": 4})));
    slow_call.token = BOB;
    let slow_call = &slow_call;
    std::thread::scope(|scope| {
        let running: Vec<_> = [&fast, &slow]
            .map(|gateway| scope.spawn(move || send(&gateway.url, slow_call)))
            .into_iter()
            .collect();
        std::thread::sleep(Duration::from_millis(1500));
        let mut over = sent(
            "over the limit",
            call(json!(2), "py_echo", json!({"text": "n"})),
        );
        over.token = BOB;
        let (short, long) = (send(&fast.url, &over), send(&slow.url, &over));
        assert_eq!(short, long);
        assert_eq!(short.body["error"]["code"], -32003, "{short:?}");
        let answers: Vec<Answer> = running
            .into_iter()
            .map(|call| call.join().unwrap())
            .collect();
        assert_eq!(answers[0], answers[1]);
        assert_eq!(answers[0].body["result"]["content"][0]["text"], "slept");
    });
}

#[test]
fn the_expected_answers_come_the_short_way() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let fast = gateway(python, true, dir.path());
    let answer = |request: &Sent| send(&fast.url, request);
    let echo = answer(&sent(
        "a call",
        call(json!(1), "py_echo", json!({"text": "hi"})),
    ));
    assert_eq!(echo.status, 200);
    assert_eq!(echo.content_type.as_deref(), Some("application/json"));
    assert_eq!(echo.body["result"]["content"][0]["text"], "hi", "{echo:?}");
    let mut progress = call(json!(7), "sdk_progress", json!({"steps": 2}));
    progress["params"]["_meta"] = json!({"progressToken": "p-1"});
    let progress = answer(&sent("progress", progress));
    let methods: Vec<&str> = progress
        .body
        .as_array()
        .unwrap_or_else(|| panic!("{progress:?}"))
        .iter()
        .map(|message| message["method"].as_str().unwrap_or("answer"))
        .collect();
    assert_eq!(
        methods,
        ["notifications/progress", "notifications/progress", "answer"],
        "{progress:?}"
    );
    let oversized = answer(&sent(
        "an oversized body",
        call(json!(8), "py_echo", json!({"text": "x".repeat(5000)})),
    ));
    assert_eq!(
        (oversized.status, oversized.body),
        (
            413,
            json!("Payload Too Large: request body exceeds 4096 bytes")
        )
    );
}

#[test]
fn a_stateless_call_is_served_before_rmcp_and_only_with_the_short_way_on() {
    let Some(python) = python() else { return };
    let served = "a stateless tools/call served before rmcp";
    for fast in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let gateway = gateway(python, fast, dir.path());
        let echo = send(
            &gateway.url,
            &sent("a call", call(json!(1), "py_echo", json!({"text": "hi"}))),
        );
        assert_eq!(echo.body["result"]["content"][0]["text"], "hi", "{echo:?}");
        // What goes to rmcp is not served here.
        send(
            &gateway.url,
            &sent(
                "tools/list",
                json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}),
            ),
        );
        let log = gateway.log();
        assert_eq!(log.matches(served).count(), usize::from(fast), "{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_mid_call_has_the_call_cancelled_upstream_either_way() {
    let Some(python) = python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_python/misbehaving_server.py");
    let upstream = start_python_http(python, &script, &["http"]);
    for fast in [true, false] {
        let front = Faulty::start(&upstream.url).await;
        let dir = tempfile::tempdir().unwrap();
        let servers = format!("[[servers]]\nname = \"h\"\nurl = {:?}\n\n", front.url);
        let extra = format!("stateless = true\nfast_calls = {fast}");
        let gateway = Gateway::start_with(&config(dir.path(), &extra, &servers), &[], &[]);
        let before = front.seen().len();
        let gone = crate::http_client::client()
            .post(&gateway.url)
            .bearer_auth(ALICE)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .timeout(Duration::from_secs(2))
            .body(call(json!(1), "h_silent", json!({})).to_string())
            .send()
            .await;
        assert!(gone.is_err(), "the silent call answered: {gone:?}");
        let deadline = std::time::Instant::now() + LIMIT;
        let (id, cancelled) = loop {
            let seen = front.seen();
            let call = first_id(&seen[before..], "tools/call");
            let cancelled = first_id(&seen[before..], "notifications/cancelled");
            if let (Some(call), Some(cancelled)) = (&call, &cancelled) {
                break (call.clone(), cancelled.clone());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "fast {fast}: {seen:?}\n{}",
                gateway.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(id, cancelled, "fast {fast}");
    }
}

/// The trace the client's `_meta` names: the gateway's spans of a call taken the short way
/// continue it as the long way's do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_taken_the_short_way_continues_the_clients_trace() {
    use crate::otel_support::{INTERNAL, SERVER_KIND, named, only_child, start_receiver};

    let (url, received) = start_receiver();
    let dir = tempfile::tempdir().unwrap();
    let servers = format!(
        "[[servers]]\nname = \"example\"\nprefix = \"ex\"\ncommand = {:?}\n\n",
        crate::mcp_python::SERVER
    );
    let gateway = Gateway::start_with(
        &config(dir.path(), "stateless = true", &servers),
        &["--otlp", url.as_str()],
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("RUST_LOG", "warn,rmcp=error,tool_core::gateway::fast=trace"),
        ],
    );
    let (trace, parent) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let mut body = call(json!(1), "ex_add", json!({"a": 2, "b": 3}));
    body["params"]["_meta"] = json!({"traceparent": format!("00-{trace}-{parent}-01")});
    let answer = tokio::task::spawn_blocking({
        let url = gateway.url.clone();
        move || send(&url, &sent("traced", body))
    })
    .await
    .unwrap();
    assert_eq!(
        answer.body["result"]["content"][0]["text"], "5",
        "{answer:?}"
    );
    assert!(
        gateway
            .log()
            .contains("a stateless tools/call served before rmcp"),
        "{}",
        gateway.log()
    );
    let spans = received
        .wait_for(LIMIT, |spans| {
            spans
                .iter()
                .any(|(service, span)| service == "mcp_gateway" && span.name == "gateway_call")
        })
        .await;
    let served = named(&spans, "mcp_gateway", "tools/call ex_add");
    let hex = |bytes: &[u8]| -> String { bytes.iter().map(|b| format!("{b:02x}")).collect() };
    assert_eq!(served.kind, SERVER_KIND);
    assert_eq!(hex(&served.trace_id), trace);
    assert_eq!(hex(&served.parent_span_id), parent);
    let (_, call_span) = only_child(&spans, &served, "gateway_call");
    assert_eq!(call_span.kind, INTERNAL);
}
