//! The MCP server, driven in process by the official Rust MCP client (`rmcp`) over an in-memory
//! duplex pipe and over streamable HTTP.
//!
//! Most tools are written by hand here, to fix their exact behaviour; the structured-output and
//! cancellation ones are `#[tool]` fns.

use std::{sync::Arc, time::Duration};

use rmcp::{
    ClientHandler, RoleClient, ServiceError, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientConfig, ErrorCode, ProtocolVersion,
        SubscriptionFilter, Tool,
    },
    service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RunningService},
    transport::StreamableHttpClientTransport,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tool_core::{
    ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata, ToolRegistry, async_trait,
    mcp::McpServer,
};

// ---------------------------------------------------------------------------------------------
// Tools

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to repeat.
    text: String,
}

struct Echo;

#[async_trait]
impl ExecutableTool for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "echo",
            "Repeat the text back.",
            tool_core::__private::schema_for::<EchoArgs>(),
        )
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let EchoArgs { text } = tool_core::__private::narrow("echo", args)?;
        Ok(text)
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new()
            .title("Echo")
            .icon("https://example.invalid/echo.png")
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    }
}

/// A tool with a fixed schema and a fixed behaviour, for the error cases.
struct Fixed {
    name: &'static str,
    parameters: Value,
    behaviour: Behaviour,
    metadata: ToolMetadata,
}

#[derive(Clone, Copy)]
enum Behaviour {
    Answer(&'static str),
    Fail(&'static str),
    Hang,
    Panic,
}

impl Fixed {
    fn new(name: &'static str, behaviour: Behaviour) -> Self {
        Self {
            name,
            parameters: json!({ "type": "object" }),
            behaviour,
            metadata: ToolMetadata::new(),
        }
    }
}

#[async_trait]
impl ExecutableTool for Fixed {
    fn name(&self) -> &str {
        self.name
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(self.name, "A test tool.", self.parameters.clone())
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        match self.behaviour {
            Behaviour::Answer(text) => Ok(text.to_owned()),
            Behaviour::Fail(message) => Err(ToolError::new(message)),
            Behaviour::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok("too late".to_owned())
            }
            Behaviour::Panic => panic!("the tool fell over"),
        }
    }

    fn metadata(&self) -> ToolMetadata {
        self.metadata.clone()
    }
}

fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(Echo).unwrap();
    registry
        .register(Fixed::new("fails", Behaviour::Fail("the disk is full")))
        .unwrap();
    let mut hangs = Fixed::new("hangs", Behaviour::Hang);
    hangs.metadata = ToolMetadata::new().timeout(Duration::from_millis(50));
    registry.register(hangs).unwrap();
    registry
        .register(Fixed::new("panics", Behaviour::Panic))
        .unwrap();
    registry
        .register(Fixed::new("ping", Behaviour::Answer("pong")))
        .unwrap();
    let mut hidden = Fixed::new("hidden", Behaviour::Answer("secret"));
    hidden.metadata = ToolMetadata::new().default_enabled(false);
    registry.register(hidden).unwrap();
    Arc::new(registry)
}

// ---------------------------------------------------------------------------------------------
// Client

/// An rmcp client that asks for a protocol version and reports `tools/list_changed`.
struct Client {
    version: ProtocolVersion,
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default().with_protocol_version(self.version.clone())
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }
}

struct Connected {
    client: RunningService<RoleClient, Client>,
    list_changed: mpsc::UnboundedReceiver<()>,
    server: tokio::task::JoinHandle<Result<(), tool_core::mcp::McpServerError>>,
}

async fn connect(server: &McpServer, version: ProtocolVersion) -> Connected {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn({
        let server = server.clone();
        async move {
            let (reader, writer) = tokio::io::split(server_io);
            server.serve_io(reader, writer).await
        }
    });
    let (sender, list_changed) = mpsc::unbounded_channel();
    let client = Client {
        version,
        list_changed: sender,
    }
    .serve(client_io)
    .await
    .unwrap();
    Connected {
        client,
        list_changed,
        server,
    }
}

async fn connect_latest(registry: &Arc<ToolRegistry>) -> Connected {
    connect(
        &McpServer::new(registry.clone()),
        ProtocolVersion::V_2025_11_25,
    )
    .await
}

async fn call(
    client: &RunningService<RoleClient, Client>,
    name: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(args) = args {
        params = params.with_arguments(args);
    }
    client.call_tool(params).await
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|tool| &*tool.name).collect()
}

/// Waits for the next `tools/list_changed`; fails the test if none comes within ten seconds.
async fn next_list_changed(list_changed: &mut mpsc::UnboundedReceiver<()>) {
    tokio::time::timeout(Duration::from_secs(10), list_changed.recv())
        .await
        .expect("no notifications/tools/list_changed arrived")
        .expect("the client stopped");
}

fn assert_invalid_params(error: ServiceError, expected_message: &str) {
    match error {
        ServiceError::McpError(error) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(error.message, expected_message);
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// tools/list

#[tokio::test]
async fn mcp_lists_enabled_tools_with_titles_annotations_and_icons() {
    let registry = registry();
    let connected = connect_latest(&registry).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    assert_eq!(names(&tools), ["echo", "fails", "hangs", "panics", "ping"]);

    let echo = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(echo["name"], "echo");
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["description"], "Repeat the text back.");
    assert_eq!(echo["inputSchema"]["type"], "object");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(
        echo["annotations"],
        json!({
            "title": "Echo",
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": true,
            "openWorldHint": false
        })
    );
    assert_eq!(
        echo["icons"],
        json!([{ "src": "https://example.invalid/echo.png", "mimeType": "image/png" }])
    );

    // A tool that takes no arguments gets a closed object schema and makes no claims.
    let ping = serde_json::to_value(&tools[4]).unwrap();
    assert_eq!(
        ping["inputSchema"],
        json!({ "type": "object", "additionalProperties": false })
    );
    assert!(ping.get("annotations").is_none(), "{ping}");
    assert!(ping.get("icons").is_none(), "{ping}");
    assert!(ping.get("title").is_none(), "{ping}");
    connected.client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// tools/call

#[tokio::test]
async fn mcp_call_returns_the_tool_result_as_text() {
    let registry = registry();
    let connected = connect_latest(&registry).await;
    let result = call(&connected.client, "echo", json!({ "text": "hello" }))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text_of(&result), "hello");
    assert_eq!(result.content.len(), 1);
    connected.client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_call_reports_tool_errors_invalid_arguments_timeouts_and_panics_as_is_error() {
    let registry = registry();
    let connected = connect_latest(&registry).await;
    let client = &connected.client;
    let cases = [
        (
            "fails",
            json!({}),
            "Error executing fails: the disk is full",
        ),
        (
            "echo",
            json!({ "text": 42 }),
            "Error: invalid arguments for echo: at /text: expected a string, got 42",
        ),
        (
            "echo",
            json!({}),
            "Error: invalid arguments for echo: missing required argument 'text'",
        ),
        (
            "hangs",
            json!({}),
            "Error executing hangs: timed out after 50ms",
        ),
        (
            "panics",
            json!({}),
            "Error executing panics: tool panicked: the tool fell over",
        ),
    ];
    for (name, args, expected) in cases {
        let result = call(client, name, args.clone()).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{name} {args}");
        assert_eq!(text_of(&result), expected, "{name} {args}");
    }
    // The server is still serving after all of that.
    let result = call(client, "ping", json!({})).await.unwrap();
    assert_eq!(text_of(&result), "pong");
    connected.client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_call_without_arguments_runs_a_tool_that_takes_none() {
    let registry = registry();
    let connected = connect_latest(&registry).await;
    let params = CallToolRequestParams::new("ping");
    let result = connected.client.call_tool(params).await.unwrap();
    assert_eq!(text_of(&result), "pong");
    connected.client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_call_of_an_unknown_or_disabled_tool_is_a_json_rpc_error() {
    let registry = registry();
    let connected = connect_latest(&registry).await;
    let error = call(&connected.client, "no_such_tool", json!({}))
        .await
        .unwrap_err();
    assert_invalid_params(error, "tool `no_such_tool` not found");
    let error = call(&connected.client, "hidden", json!({}))
        .await
        .unwrap_err();
    assert_invalid_params(error, "tool `hidden` is disabled");

    assert!(registry.enable("hidden"));
    let result = call(&connected.client, "hidden", json!({})).await.unwrap();
    assert_eq!(text_of(&result), "secret");
    connected.client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// notifications/tools/list_changed

#[tokio::test]
async fn mcp_sends_list_changed_after_disable_and_the_list_follows() {
    let registry = registry();
    let mut connected = connect_latest(&registry).await;
    let info = connected.client.peer_info().unwrap();
    let tools_capability = info.capabilities.tools.clone().unwrap();
    assert_eq!(tools_capability.list_changed, Some(true));

    assert!(registry.disable("echo"));
    next_list_changed(&mut connected.list_changed).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    assert_eq!(names(&tools), ["fails", "hangs", "panics", "ping"]);

    assert!(registry.enable("echo"));
    next_list_changed(&mut connected.list_changed).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    assert_eq!(names(&tools), ["echo", "fails", "hangs", "panics", "ping"]);
    connected.client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_sends_list_changed_after_register_and_unregister() {
    let registry = registry();
    let mut connected = connect_latest(&registry).await;

    registry
        .register(Fixed::new("added", Behaviour::Answer("new")))
        .unwrap();
    next_list_changed(&mut connected.list_changed).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    assert_eq!(names(&tools).last(), Some(&"added"));
    let result = call(&connected.client, "added", json!({})).await.unwrap();
    assert_eq!(text_of(&result), "new");

    assert!(registry.unregister("added"));
    next_list_changed(&mut connected.list_changed).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    assert!(!names(&tools).contains(&"added"));
    connected.client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_notifies_every_connected_client() {
    let registry = registry();
    let mut first = connect_latest(&registry).await;
    let mut second = connect_latest(&registry).await;
    assert!(registry.disable("ping"));
    next_list_changed(&mut first.list_changed).await;
    next_list_changed(&mut second.list_changed).await;
    first.client.cancel().await.unwrap();
    second.client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_session_ends_and_stops_watching_the_registry_when_the_client_leaves() {
    let registry = registry();
    let connected = connect_latest(&registry).await;
    // The forwarding task holds a registry subscription while the client is connected.
    assert_eq!(registry.subscriber_count(), 1);
    connected.client.cancel().await.unwrap();
    let served = tokio::time::timeout(Duration::from_secs(10), connected.server)
        .await
        .expect("the server did not notice the client leaving")
        .unwrap();
    served.unwrap();
    // Changes after the client left reach nobody and break nothing.
    let mut waited = 0;
    while registry.subscriber_count() > 0 && waited < 200 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    assert_eq!(registry.subscriber_count(), 0);
    assert!(registry.disable("ping"));
}

// ---------------------------------------------------------------------------------------------
// Protocol versions

#[tokio::test]
async fn mcp_negotiates_each_supported_protocol_version() {
    let registry = registry();
    let server = McpServer::new(registry);
    for version in [
        ProtocolVersion::V_2025_11_25,
        ProtocolVersion::V_2025_06_18,
        ProtocolVersion::V_2025_03_26,
        ProtocolVersion::V_2024_11_05,
    ] {
        let connected = connect(&server, version.clone()).await;
        let info = connected.client.peer_info().unwrap();
        assert_eq!(info.protocol_version, version);
        // Every version lists and calls tools.
        let tools = connected.client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), 5, "{version}");
        let result = call(&connected.client, "ping", json!({})).await.unwrap();
        assert_eq!(text_of(&result), "pong", "{version}");
        connected.client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn mcp_answers_an_initialize_asking_for_2026_07_28_with_2025_11_25() {
    // 2026-07-28 has no `initialize`: a client reaches it through `server/discover`.
    let registry = registry();
    let server = McpServer::new(registry);
    for asked in [ProtocolVersion::V_2026_07_28] {
        let connected = connect(&server, asked.clone()).await;
        let info = connected.client.peer_info().unwrap();
        assert_eq!(
            info.protocol_version,
            ProtocolVersion::V_2025_11_25,
            "asked for {asked}"
        );
        connected.client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn mcp_leaves_out_fields_the_negotiated_version_does_not_have() {
    let registry = registry();
    let server = McpServer::new(registry);

    let connected = connect(&server, ProtocolVersion::V_2025_03_26).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    let echo = serde_json::to_value(&tools[0]).unwrap();
    assert!(echo.get("title").is_none(), "{echo}");
    assert!(echo.get("icons").is_none(), "{echo}");
    assert_eq!(echo["annotations"]["title"], "Echo");
    connected.client.cancel().await.unwrap();

    let connected = connect(&server, ProtocolVersion::V_2025_06_18).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    let echo = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(echo["title"], "Echo");
    assert!(echo.get("icons").is_none(), "{echo}");
    connected.client.cancel().await.unwrap();

    let connected = connect(&server, ProtocolVersion::V_2024_11_05).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    let echo = serde_json::to_value(&tools[0]).unwrap();
    assert!(echo.get("title").is_none(), "{echo}");
    assert!(echo.get("annotations").is_none(), "{echo}");
    connected.client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Structured output (#[tool] fns returning a JsonSchema struct)

/// A point on the plane.
#[derive(serde::Serialize, JsonSchema)]
struct Point {
    /// Across.
    x: i64,
    /// Up.
    y: u32,
}

/// Make a point.
#[tool_core::tool(title = "Point")]
async fn make_point(
    /// Across.
    x: i64,
    /// Up.
    y: u32,
) -> Result<Point, String> {
    Ok(Point { x, y })
}

/// Say hello.
#[tool_core::tool]
async fn greet(
    /// Who.
    name: String,
) -> String {
    format!("hello {name}")
}

fn structured_registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(MakePoint).unwrap();
    registry.register(Greet).unwrap();
    Arc::new(registry)
}

#[tokio::test]
async fn mcp_lists_an_output_schema_and_returns_structured_content_from_2025_06_18() {
    let server = McpServer::new(structured_registry());
    let connected = connect(&server, ProtocolVersion::V_2025_06_18).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    let point = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(
        point["outputSchema"],
        json!({
            "type": "object",
            "description": "A point on the plane.",
            "properties": {
                "x": {"type": "integer", "description": "Across."},
                "y": {"type": "integer", "description": "Up.", "minimum": 0, "maximum": 4_294_967_295_u64}
            },
            "required": ["x", "y"]
        })
    );
    // No Rust-only formats in the input schema either.
    assert_eq!(
        point["inputSchema"]["properties"]["x"],
        json!({"type": "integer", "description": "Across."})
    );
    let greet = serde_json::to_value(&tools[1]).unwrap();
    assert!(greet.get("outputSchema").is_none(), "{greet}");

    let result = call(&connected.client, "make_point", json!({"x": -3, "y": 4}))
        .await
        .unwrap();
    assert_eq!(result.structured_content, Some(json!({"x": -3, "y": 4})));
    assert_eq!(text_of(&result), r#"{"x":-3,"y":4}"#);
    let result = call(&connected.client, "greet", json!({"name": "ada"}))
        .await
        .unwrap();
    assert_eq!(result.structured_content, None);
    assert_eq!(text_of(&result), "hello ada");
    connected.client.cancel().await.unwrap();

    let connected = connect(&server, ProtocolVersion::V_2025_03_26).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    assert!(tools[0].output_schema.is_none());
    let result = call(&connected.client, "make_point", json!({"x": 1, "y": 2}))
        .await
        .unwrap();
    assert_eq!(result.structured_content, None);
    assert_eq!(text_of(&result), r#"{"x":1,"y":2}"#);
    connected.client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// 2026-07-28: server/discover, self-contained requests, subscriptions/listen

async fn connect_discover<T, E, A>(transport: T) -> RunningService<RoleClient, Client>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let (sender, _list_changed) = mpsc::unbounded_channel();
    Client {
        version: ProtocolVersion::V_2026_07_28,
        list_changed: sender,
    }
    .serve_with_lifecycle(
        transport,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .unwrap()
}

async fn check_2026_07_28(client: &RunningService<RoleClient, Client>, registry: &ToolRegistry) {
    let info = client.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(names(&tools), ["make_point", "greet"]);
    assert_eq!(tools[0].title.as_deref(), Some("Point"));
    assert!(tools[0].output_schema.is_some());
    let result = call(client, "make_point", json!({"x": 5, "y": 6}))
        .await
        .unwrap();
    assert_eq!(result.structured_content, Some(json!({"x": 5, "y": 6})));

    let mut subscription = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    assert!(registry.disable("greet"));
    let notification = tokio::time::timeout(Duration::from_secs(10), subscription.next())
        .await
        .expect("no list_changed on the subscription")
        .unwrap();
    assert!(
        matches!(
            notification,
            Some(rmcp::model::ServerNotification::ToolListChangedNotification(_))
        ),
        "{notification:?}"
    );
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(names(&tools), ["make_point"]);
    let error = call(client, "greet", json!({"name": "x"}))
        .await
        .unwrap_err();
    assert_invalid_params(error, "tool `greet` is disabled");
    assert!(registry.enable("greet"));
}

#[tokio::test]
async fn mcp_serves_2026_07_28_through_discover_over_a_pipe() {
    let registry = structured_registry();
    let server = McpServer::new(registry.clone());
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let _server = tokio::spawn(async move {
        let (reader, writer) = tokio::io::split(server_io);
        server.serve_io(reader, writer).await
    });
    let client = connect_discover(client_io).await;
    check_2026_07_28(&client, &registry).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_serves_2026_07_28_through_discover_over_stateless_http() {
    let registry = structured_registry();
    let server = McpServer::with_options(
        registry.clone(),
        tool_core::mcp::McpOptions::new().stateless(true),
    );
    let http = server.start_http("127.0.0.1:0").await.unwrap();
    let client = connect_discover(StreamableHttpClientTransport::from_uri(http.url())).await;
    check_2026_07_28(&client, &registry).await;
    client.cancel().await.unwrap();
    http.shutdown().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Limits

#[tokio::test]
async fn mcp_stdio_answers_a_message_over_the_limit_with_an_error_and_goes_on() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let server = McpServer::with_options(
        structured_registry(),
        tool_core::mcp::McpOptions::new().max_line_bytes(1024),
    );
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(async move {
        let (reader, writer) = tokio::io::split(server_io);
        server.serve_io(reader, writer).await
    });
    let (reader, mut writer) = tokio::io::split(client_io);
    let mut lines = BufReader::new(reader).lines();
    let mut send = async |message: String| {
        writer.write_all(message.as_bytes()).await.unwrap();
        writer.write_all(b"\n").await.unwrap();
    };
    // The server's next message, within ten seconds.
    let mut receive = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string(),
    )
    .await;
    assert_eq!(receive().await["id"], 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()).await;
    // The id after the big arguments, as the TypeScript SDK writes it.
    send(
        json!({"method": "tools/call", "params": {"name": "greet",
        "arguments": {"name": "x".repeat(5000)}}, "jsonrpc": "2.0", "id": "big"})
        .to_string(),
    )
    .await;
    assert_eq!(
        receive().await,
        json!({"jsonrpc": "2.0", "id": "big", "error": {"code": -32600,
            "message": "the request is larger than the server's limit of 1024 bytes"}})
    );
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": "ada"}}})
        .to_string(),
    )
    .await;
    let answer = receive().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"]["content"][0]["text"], "hello ada");
    // Closing the client's side ends the server.
    drop(writer);
    drop(lines);
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the server did not stop when its client left")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn mcp_http_answers_a_body_over_the_limit_with_413() {
    let server = McpServer::with_options(
        structured_registry(),
        tool_core::mcp::McpOptions::new().max_request_bytes(2048),
    );
    let http = server.start_http("127.0.0.1:0").await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "x".repeat(4096), "version": "1"}}});
    let response = crate::http_client::client()
        .post(http.url())
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_initialize_names_the_server() {
    let registry = registry();
    let options = tool_core::mcp::McpOptions::new()
        .server("weather-tools", "2.1.0")
        .title("Weather tools")
        .instructions("Ask for the weather.");
    let server = McpServer::with_options(registry, options);
    let connected = connect(&server, ProtocolVersion::V_2025_11_25).await;
    let info = connected.client.peer_info().unwrap();
    let implementation = info.server_info.clone().unwrap();
    assert_eq!(implementation.name, "weather-tools");
    assert_eq!(implementation.version, "2.1.0");
    assert_eq!(implementation.title.as_deref(), Some("Weather tools"));
    assert_eq!(info.instructions.as_deref(), Some("Ask for the weather."));
    connected.client.cancel().await.unwrap();

    // Before 2025-06-18 there is no title.
    let connected = connect(&server, ProtocolVersion::V_2025_03_26).await;
    let info = connected.client.peer_info().unwrap();
    let implementation = info.server_info.clone().unwrap();
    assert_eq!(implementation.name, "weather-tools");
    assert_eq!(implementation.title, None);
    connected.client.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP

async fn connect_http(url: &str, version: ProtocolVersion) -> Connected {
    let (sender, list_changed) = mpsc::unbounded_channel();
    let client = Client {
        version,
        list_changed: sender,
    }
    .serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
    .await
    .unwrap();
    Connected {
        client,
        list_changed,
        server: tokio::spawn(async { Ok(()) }),
    }
}

#[tokio::test]
async fn mcp_over_http_lists_calls_and_notifies() {
    let registry = registry();
    let http = McpServer::new(registry.clone())
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    assert!(http.local_addr().ip().is_loopback());
    let url = http.url();
    assert_eq!(url, format!("http://{}/mcp", http.local_addr()));

    let mut connected = connect_http(&url, ProtocolVersion::V_2025_11_25).await;
    let info = connected.client.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    let tools = connected.client.list_all_tools().await.unwrap();
    assert_eq!(names(&tools), ["echo", "fails", "hangs", "panics", "ping"]);

    let result = call(&connected.client, "echo", json!({ "text": "over http" }))
        .await
        .unwrap();
    assert_eq!(text_of(&result), "over http");
    let result = call(&connected.client, "fails", json!({})).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let error = call(&connected.client, "nope", json!({}))
        .await
        .unwrap_err();
    assert_invalid_params(error, "tool `nope` not found");

    assert!(registry.disable("echo"));
    next_list_changed(&mut connected.list_changed).await;
    let tools = connected.client.list_all_tools().await.unwrap();
    assert!(!names(&tools).contains(&"echo"));

    connected.client.cancel().await.unwrap();
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_over_http_negotiates_older_versions() {
    let http = McpServer::new(registry())
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    for version in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_03_26] {
        let connected = connect_http(&http.url(), version.clone()).await;
        assert_eq!(
            connected.client.peer_info().unwrap().protocol_version,
            version
        );
        let result = call(&connected.client, "ping", json!({})).await.unwrap();
        assert_eq!(text_of(&result), "pong");
        connected.client.cancel().await.unwrap();
    }
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_serves_raw_json_rpc_initialize() {
    let http = McpServer::new(registry())
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let response = crate::http_client::client()
        .post(http.url())
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "raw", "version": "0" }
            }
        }))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    assert!(response.headers().contains_key("mcp-session-id"));
    let body = response.text().await.unwrap();
    // The answer comes as a server-sent event; its data line is the JSON-RPC response.
    let message: Value = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| !data.is_empty())
        .find_map(|data| serde_json::from_str(data).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body}"));
    assert_eq!(message["id"], 1);
    assert_eq!(message["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        message["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_rejects_foreign_host_headers() {
    let http = McpServer::new(registry())
        .start_http("127.0.0.1:0")
        .await
        .unwrap();
    let response = crate::http_client::client()
        .post(http.url())
        .header("Host", "attacker.invalid")
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error(), "{}", response.status());
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn mcp_http_serves_at_the_configured_path() {
    for (path, expected_suffix) in [("tools/mcp", "/tools/mcp"), ("/", "/")] {
        let options = tool_core::mcp::McpOptions::new().http_path(path);
        let http = McpServer::with_options(registry(), options)
            .start_http("127.0.0.1:0")
            .await
            .unwrap();
        let url = http.url();
        assert_eq!(
            url,
            format!("http://{}{expected_suffix}", http.local_addr())
        );
        let connected = connect_http(&url, ProtocolVersion::V_2025_11_25).await;
        let result = call(&connected.client, "ping", json!({})).await.unwrap();
        assert_eq!(text_of(&result), "pong", "{path}");
        connected.client.cancel().await.unwrap();
        http.shutdown().await.unwrap();
    }
}

/// Whether a `wait_for_cancel` call started, and whether its cancellation token fired.
static CALL_STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static CALL_CANCELLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Wait until the call is cancelled.
#[tool_core::tool]
async fn wait_for_cancel(call: &tool_core::CallContext) -> String {
    let token = call.cancellation().clone();
    // Watched apart from the call, which the server may drop as it cancels it.
    tokio::spawn(async move {
        token.cancelled().await;
        CALL_CANCELLED.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    CALL_STARTED.store(true, std::sync::atomic::Ordering::SeqCst);
    std::future::pending::<String>().await
}

/// Waits for `flag` to be set; fails the test after ten seconds.
async fn wait_for(flag: &std::sync::atomic::AtomicBool, what: &str) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !flag.load(std::sync::atomic::Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test]
async fn mcp_stdio_stops_when_the_client_leaves_and_cancels_running_calls() {
    let registry = ToolRegistry::new();
    registry.register(WaitForCancel).unwrap();
    let server = McpServer::new(Arc::new(registry));
    let connected = connect(&server, ProtocolVersion::V_2025_11_25).await;
    let Connected { client, server, .. } = connected;
    let peer = client.peer().clone();
    let running = tokio::spawn(async move {
        peer.call_tool(CallToolRequestParams::new("wait_for_cancel"))
            .await
    });
    // Wait for the call to start, then close the connection (as a stdio client closing stdin
    // does).
    wait_for(&CALL_STARTED, "the call did not start").await;
    assert!(!CALL_CANCELLED.load(std::sync::atomic::Ordering::SeqCst));
    let left = std::time::Instant::now();
    drop(client);
    wait_for(
        &CALL_CANCELLED,
        "the running call was not cancelled when the client left",
    )
    .await;
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server did not stop when its client left")
        .unwrap()
        .unwrap();
    // At once, not after the five seconds rmcp would wait for the call to answer.
    assert!(
        left.elapsed() < Duration::from_secs(3),
        "{:?}",
        left.elapsed()
    );
    assert!(running.await.unwrap().is_err());
}

#[tokio::test]
async fn mcp_applies_its_default_tool_timeout_to_tools_that_set_none() {
    let registry = ToolRegistry::new();
    registry
        .register(Fixed::new("hangs_forever", Behaviour::Hang))
        .unwrap();
    let options = tool_core::mcp::McpOptions::new().tool_timeout(Some(Duration::from_millis(100)));
    assert_eq!(
        tool_core::mcp::McpOptions::new().tool_timeout,
        Some(tool_core::mcp::DEFAULT_TOOL_TIMEOUT)
    );
    let server = McpServer::with_options(Arc::new(registry), options);
    let connected = connect(&server, ProtocolVersion::V_2025_11_25).await;
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        call(&connected.client, "hangs_forever", json!({})),
    )
    .await
    .expect("the default timeout did not stop the call")
    .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text_of(&result),
        "Error executing hangs_forever: timed out after 100ms"
    );
    connected.client.cancel().await.unwrap();
}

/// One raw JSON-RPC request in 2026-07-28's self-contained form to a stateless server; the
/// answer's JSON body.
async fn post_2026(url: &str, body: Value) -> (reqwest::StatusCode, Value) {
    let method = body["method"].as_str().unwrap().to_owned();
    let mut request = crate::http_client::client()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = body["params"]["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    let response = request.json(&body).send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    // A JSON answer, or one SSE `data:` line holding it.
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text)
        .trim()
        .to_owned();
    (
        status,
        serde_json::from_str(&json).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

#[tokio::test]
async fn mcp_stateless_http_answers_self_contained_requests_and_refuses_ones_without_meta() {
    let server = McpServer::with_options(
        structured_registry(),
        tool_core::mcp::McpOptions::new().stateless(true),
    );
    let http = server.start_http("127.0.0.1:0").await.unwrap();
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    // No initialize, no session: the request carries all it needs.
    let (status, answer) = post_2026(
        &http.url(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "greet", "arguments": {"name": "ada"}, "_meta": meta}}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["result"]["content"][0]["text"], "hello ada",
        "{answer}"
    );

    let (_, answer) = post_2026(
        &http.url(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    )
    .await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "Invalid params: request _meta is missing or has malformed required fields: \
         io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities"
    );

    let (_, answer) = post_2026(
        &http.url(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {"_meta": meta}}),
    )
    .await;
    let versions = answer["result"]["supportedVersions"].clone();
    assert_eq!(
        versions,
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ]),
        "{answer}"
    );
    http.shutdown().await.unwrap();
}
