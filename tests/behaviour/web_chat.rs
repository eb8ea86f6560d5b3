//! The `web_chat` example, run as a program and spoken to over HTTP: a turn's events stream in,
//! switches leave tools out of the next request, `write_file` waits for the user's approval, and
//! chats, switches and calls waiting for approval survive a restart.

use std::{
    io::{BufRead as _, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::{Value, json};

/// The longest any one request or stream of a test may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// The tools the example registers, in registration order.
const TOOLS: [&str; 7] = [
    "read_file",
    "write_file",
    "save_session_context",
    "city_weather",
    "roll_dice",
    "current_time",
    "word_count",
];

/// A running `web_chat` example, killed when dropped.
pub(crate) struct WebChat {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
}

impl WebChat {
    /// Starts the example on a free loopback port with its data in `data`, offline unless `env`
    /// configures a provider.
    pub(crate) fn start(data: &Path, env: &[(&str, &str)]) -> Self {
        Self::start_with(data, &[], env)
    }

    /// Like [`start`](Self::start), with more command-line arguments.
    pub(crate) fn start_with(data: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = example(env);
        command
            .args(["--addr", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().expect("the web_chat example starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = sender.send(line);
            }
            // Keep reading so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let line = match receiver.recv_timeout(DEADLINE) {
            Ok(line) => line,
            Err(error) => {
                let _ = child.kill();
                panic!("the example printed no first line: {error}");
            }
        };
        let url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Self { child, url }
    }

    /// Starts the example with the tools of `examples/tools.toml` too.
    pub(crate) fn start_with_example_tools(data: &Path) -> Self {
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/tools.toml");
        let config = config.display().to_string();
        Self::start_with(data, &["--tools-config", &config], &[])
    }

    /// The port the example listens on.
    pub(crate) fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in {}", self.url))
    }
}

/// The example's command, offline unless `env` configures a provider.
pub(crate) fn example(env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_web_chat_example"));
    // Offline on purpose, whatever the machine running the tests has configured.
    for variable in [
        "TOOL_CORE_PROVIDER",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OLLAMA_HOST",
    ] {
        command.env_remove(variable);
    }
    command.envs(env.iter().copied());
    command
}

impl Drop for WebChat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One user of the page: an HTTP client that keeps the user cookie the server hands out.
pub(crate) struct Browser {
    http: reqwest::Client,
    url: String,
    /// The `name=value` pair of the user cookie, once the server has handed one out.
    pub(crate) cookie: Option<String>,
}

impl Browser {
    pub(crate) fn new(server: &WebChat) -> Self {
        Self {
            http: crate::http_client::builder()
                .timeout(DEADLINE)
                .build()
                .expect("a client"),
            url: server.url.clone(),
            cookie: None,
        }
    }

    /// The same user, against another server (after a restart).
    pub(crate) fn against(&self, server: &WebChat) -> Self {
        Self {
            url: server.url.clone(),
            cookie: self.cookie.clone(),
            http: self.http.clone(),
        }
    }

    async fn request(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> reqwest::Response {
        self.request_with(method, path, body, &[]).await
    }

    /// A request with more headers (`Host` and `Origin` replace what the client would send).
    pub(crate) async fn request_with(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the server answers");
        if let Some(set) = response.headers().get("set-cookie") {
            let set = set.to_str().expect("an ASCII cookie");
            let pair = set.split(';').next().unwrap_or_default();
            self.cookie = Some(pair.to_owned());
        }
        response
    }

    pub(crate) async fn json(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.json_with(method, path, body, &[]).await
    }

    /// Like [`json`](Self::json), with more headers.
    pub(crate) async fn json_with(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let response = self.request_with(method, path, body, headers).await;
        let status = response.status().as_u16();
        (status, response.json().await.expect("a JSON answer"))
    }

    pub(crate) async fn get(&mut self, path: &str) -> Value {
        let (status, body) = self.json(reqwest::Method::GET, path, None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    pub(crate) async fn new_chat(&mut self) -> String {
        let (status, body) = self.json(reqwest::Method::POST, "/api/chats", None).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["title"], "New chat");
        body["id"].as_str().expect("a chat id").to_owned()
    }

    pub(crate) async fn switch(&mut self, chat: &str, tool: &str, enabled: bool) -> Value {
        let (status, body) = self
            .json(
                reqwest::Method::PUT,
                &format!("/api/chats/{chat}/tools/{tool}"),
                Some(json!({ "enabled": enabled })),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Each tool's name and enabled state in a chat.
    pub(crate) async fn switches(&mut self, chat: &str) -> Vec<(String, bool)> {
        let body = self.get(&format!("/api/chats/{chat}/tools")).await;
        body["tools"]
            .as_array()
            .expect("a tool list")
            .iter()
            .map(|tool| {
                (
                    tool["name"].as_str().unwrap_or_default().to_owned(),
                    tool["enabled"].as_bool().expect("an enabled flag"),
                )
            })
            .collect()
    }

    /// Sends a message and reads the turn's events to the end of the stream.
    pub(crate) async fn send(&mut self, chat: &str, text: &str) -> Vec<(String, Value)> {
        self.events(
            &format!("/api/chats/{chat}/messages"),
            json!({ "text": text }),
        )
        .await
    }

    /// Answers the calls waiting for approval and reads the rest of the turn's events.
    pub(crate) async fn answer(&mut self, chat: &str, decisions: Value) -> Vec<(String, Value)> {
        self.events(
            &format!("/api/chats/{chat}/approvals"),
            json!({ "decisions": decisions }),
        )
        .await
    }

    /// Posts `body` and reads the answer's server-sent events to the end of the stream.
    async fn events(&mut self, path: &str, body: Value) -> Vec<(String, Value)> {
        let mut response = self.request(reqwest::Method::POST, path, Some(body)).await;
        assert_eq!(response.status().as_u16(), 200, "POST {path}");
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "a stream of server-sent events"
        );
        let mut body = Vec::new();
        let read = async {
            while let Some(chunk) = response.chunk().await.expect("the stream reads") {
                body.extend_from_slice(&chunk);
            }
        };
        tokio::time::timeout(DEADLINE, read)
            .await
            .expect("the turn ends in time");
        parse_events(&String::from_utf8(body).expect("UTF-8 events"))
    }
}

/// The `event:` name and JSON `data:` of each server-sent event.
fn parse_events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut name = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    name = Some(value.trim().to_owned());
                } else if let Some(value) = line.strip_prefix("data:") {
                    data = Some(serde_json::from_str(value.trim()).expect("JSON data"));
                }
            }
            Some((name?, data?))
        })
        .collect()
}

/// The names of the tools called, in the order the calls started.
pub(crate) fn called(events: &[(String, Value)]) -> Vec<&str> {
    events
        .iter()
        .filter(|(name, _)| name == "tool_call_started")
        .map(|(_, data)| data["name"].as_str().unwrap_or_default())
        .collect()
}

pub(crate) fn result_of<'a>(events: &'a [(String, Value)], tool: &str) -> &'a Value {
    events
        .iter()
        .find(|(name, data)| name == "tool_result" && data["name"] == tool)
        .map(|(_, data)| data)
        .unwrap_or_else(|| panic!("no result of {tool} in {events:?}"))
}

#[tokio::test]
async fn a_turn_streams_tool_calls_their_results_and_the_reply() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let mut user = Browser::new(&server);
    let state = user.get("/api/state").await;
    assert_eq!(state["offline"], true);
    let chat = user.new_chat().await;

    let events = user.send(&chat, "What can you do?").await;
    // The offline test model calls every offered tool once, in registration order.
    assert_eq!(called(&events), TOOLS);
    // Each call's arguments arrive in pieces that add up to the finished call.
    for (index, tool) in TOOLS.iter().enumerate() {
        let streamed: String = events
            .iter()
            .filter(|(name, data)| name == "tool_call_delta" && data["index"] == index)
            .map(|(_, data)| data["arguments"].as_str().unwrap_or_default())
            .collect();
        let finished = events
            .iter()
            .find(|(name, data)| name == "tool_call_finished" && data["name"] == *tool)
            .map(|(_, data)| data["arguments"].as_str().unwrap_or_default())
            .unwrap_or_else(|| panic!("{tool} did not finish"));
        assert_eq!(streamed, finished, "{tool}");
    }
    assert_eq!(
        result_of(&events, "city_weather"),
        &json!({
            "id": result_of(&events, "city_weather")["id"],
            "name": "city_weather",
            // The example the tool's schema offers, so the offline run shows it working.
            "content": "Paris: light rain, 11 °C, wind 15 km/h from the west (sample data)",
            "is_error": false,
            "kind": "success",
        })
    );
    assert_eq!(result_of(&events, "word_count")["is_error"], false);
    assert_eq!(result_of(&events, "word_count")["kind"], "success");
    assert_eq!(
        result_of(&events, "word_count")["content"],
        "9 word(s), 1 line(s), 44 character(s)"
    );

    // `write_file` waits for the user: the turn stops with the call pending.
    let write = pending_write(&events);
    assert!(
        !events
            .iter()
            .any(|(name, data)| name == "tool_result" && data["name"] == "write_file"),
        "write_file did not run"
    );
    let (last, done) = events.last().expect("events");
    assert_eq!(last, "done");
    assert_eq!(done["pending_approvals"], json!([write]));
    assert_eq!(done["steps"], 1);
    assert_eq!(done["tool_calls"], 6);
    assert_eq!(done["text"], "");

    let events = user
        .answer(&chat, json!([{ "id": write["id"], "decision": "approve" }]))
        .await;
    assert_eq!(result_of(&events, "write_file")["kind"], "success");
    let (last, done) = events.last().expect("events");
    assert_eq!(last, "done");
    assert_eq!(done["pending_approvals"], json!([]));
    // One turn: its counts go on from the step that waited for approval.
    assert_eq!(done["steps"], 2);
    assert_eq!(done["tool_calls"], 7);
    let text: String = events
        .iter()
        .filter(|(name, _)| name == "text")
        .map(|(_, data)| data["delta"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(text, done["text"].as_str().unwrap());
    assert!(
        text.starts_with("(test model) I called 7 tool(s)"),
        "{text}"
    );

    // The chat is named after its first message and keeps the conversation.
    let saved = user.get(&format!("/api/chats/{chat}")).await;
    assert_eq!(saved["title"], "What can you do?");
    assert_eq!(saved["pending_approvals"], json!([]));
    let messages = saved["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": "What can you do?"})
    );
    let weather = messages
        .iter()
        .find(|message| message["role"] == "tool" && message["name"] == "city_weather")
        .expect("the weather result is kept");
    assert_eq!(weather["is_error"], false);
    assert_eq!(
        messages.last().unwrap()["content"],
        done["text"],
        "the reply is the last message"
    );
}

/// The `approval_requested` event of the turn's `write_file` call: its id, name and arguments.
pub(crate) fn pending_write(events: &[(String, Value)]) -> Value {
    let requests: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "approval_requested")
        .map(|(_, data)| data)
        .collect();
    assert_eq!(requests.len(), 1, "{events:?}");
    let request = requests[0].clone();
    assert_eq!(request["name"], "write_file");
    assert_eq!(
        request["arguments"],
        r#"{"content":"example","path":"example"}"#
    );
    request
}

#[tokio::test]
async fn a_switch_leaves_the_tool_out_and_survives_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let mut user = Browser::new(&server);
    let first = user.new_chat().await;
    let all_on: Vec<(String, bool)> = TOOLS.iter().map(|name| (name.to_string(), true)).collect();
    assert_eq!(user.switches(&first).await, all_on);

    let answer = user.switch(&first, "city_weather", false).await;
    assert_eq!(
        answer,
        json!({"name": "city_weather", "enabled": false, "warning": null})
    );
    let events = user.send(&first, "hello").await;
    let mut without: Vec<&str> = TOOLS.to_vec();
    without.retain(|name| *name != "city_weather");
    assert_eq!(called(&events), without);
    let write = pending_write(&events);
    let events = user
        .answer(
            &first,
            json!([{ "id": write["id"], "decision": "approve" }]),
        )
        .await;

    // The switch is the user's preference now: a new chat starts with the tool off.
    let second = user.new_chat().await;
    let expected_off: Vec<(String, bool)> = TOOLS
        .iter()
        .map(|name| (name.to_string(), *name != "city_weather"))
        .collect();
    assert_eq!(user.switches(&second).await, expected_off);
    // Switching it back on in the second chat leaves the first chat's switch alone.
    user.switch(&second, "city_weather", true).await;
    assert_eq!(user.switches(&first).await, expected_off);
    assert_eq!(user.switches(&second).await, all_on);

    // Another user has neither the chats nor the preferences.
    let mut stranger = Browser::new(&server);
    let (status, _) = stranger
        .json(reqwest::Method::GET, &format!("/api/chats/{first}"), None)
        .await;
    assert_eq!(status, 404);
    let theirs = stranger.new_chat().await;
    assert_eq!(stranger.switches(&theirs).await, all_on);

    // The switches are kept in the SQLite database, not in files.
    assert!(data.path().join("preferences.db").is_file());
    assert!(preference_files(data.path()).is_empty());

    drop(server);
    let server = WebChat::start(data.path(), &[]);
    let mut user = user.against(&server);
    let chats = user.get("/api/chats").await;
    let listed: Vec<(&str, &str)> = chats["chats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|chat| {
            (
                chat["id"].as_str().unwrap(),
                chat["title"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [(second.as_str(), "New chat"), (first.as_str(), "hello")],
        "newest first"
    );
    assert_eq!(user.switches(&first).await, expected_off);
    assert_eq!(user.switches(&second).await, all_on);
    let saved = user.get(&format!("/api/chats/{first}")).await;
    assert_eq!(saved["messages"][0]["content"], "hello");
    assert_eq!(
        saved["messages"].as_array().unwrap().last().unwrap()["content"],
        events.last().unwrap().1["text"]
    );
    // The restored chat goes on from its conversation, still without the tool.
    let events = user.send(&first, "and again").await;
    assert_eq!(called(&events), without);
    let write = pending_write(&events);
    user.answer(
        &first,
        json!([{ "id": write["id"], "decision": "approve" }]),
    )
    .await;
    let saved = user.get(&format!("/api/chats/{first}")).await;
    assert_eq!(
        saved["messages"].as_array().unwrap().len(),
        2 * 9,
        "two turns of six tool calls each"
    );
}

#[tokio::test]
async fn the_tool_list_has_categories_and_icons() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;
    let tools = user.get(&format!("/api/chats/{chat}/tools")).await;
    let shown: Vec<(&str, &str, &str)> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            (
                tool["name"].as_str().unwrap(),
                tool["category"].as_str().unwrap_or("-"),
                tool["icon"].as_str().map_or("-", |icon| {
                    if icon.starts_with("data:image/svg+xml,") {
                        "svg"
                    } else {
                        icon
                    }
                }),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("read_file", "files", "-"),
            ("write_file", "files", "-"),
            ("save_session_context", "session", "-"),
            ("city_weather", "weather", "svg"),
            ("roll_dice", "games", "svg"),
            ("current_time", "clock", "svg"),
            ("word_count", "text", "svg"),
        ]
    );
    for tool in tools["tools"].as_array().unwrap() {
        assert!(!tool["description"].as_str().unwrap().is_empty(), "{tool}");
    }
}

#[tokio::test]
async fn bad_requests_are_answered_with_errors() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;

    let (status, body) = user
        .json(
            reqwest::Method::PUT,
            &format!("/api/chats/{chat}/tools/no_such_tool"),
            Some(json!({ "enabled": false })),
        )
        .await;
    assert_eq!(
        (status, body),
        (404, json!({"error": "no tool named `no_such_tool`"}))
    );
    let (status, body) = user
        .json(
            reqwest::Method::POST,
            "/api/chats/0123456789abcdef/messages",
            Some(json!({ "text": "hi" })),
        )
        .await;
    assert_eq!(
        (status, body),
        (404, json!({"error": "no chat `0123456789abcdef`"}))
    );
    let (status, body) = user
        .json(
            reqwest::Method::POST,
            &format!("/api/chats/{chat}/messages"),
            Some(json!({ "text": "   " })),
        )
        .await;
    assert_eq!(
        (status, body),
        (400, json!({"error": "the message is empty"}))
    );
}

#[tokio::test]
async fn a_provider_error_is_an_error_event() {
    // A provider that refuses every request, on the loopback interface.
    let provider = axum::Router::new().fallback(|| async {
        (
            axum::http::StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})),
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, provider).await });

    let data = tempfile::tempdir().unwrap();
    let base = format!("http://{address}/v1");
    let server = WebChat::start(
        data.path(),
        &[("OPENAI_API_KEY", "sk-wrong"), ("OPENAI_BASE_URL", &base)],
    );
    let mut user = Browser::new(&server);
    let state = user.get("/api/state").await;
    assert_eq!(state["offline"], false);
    assert_eq!(state["provider"], "openai");
    let chat = user.new_chat().await;
    let events = user.send(&chat, "hello").await;
    assert_eq!(events.len(), 1, "{events:?}");
    let (name, data) = &events[0];
    assert_eq!(name, "error");
    let message = data["message"].as_str().unwrap();
    assert!(
        message.contains("401") && message.contains("Incorrect API key provided"),
        "{message}"
    );
    serving.abort();
}

#[tokio::test]
async fn tools_from_a_configuration_file_join_the_list() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start_with_example_tools(data.path());
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;
    let names: Vec<String> = user
        .switches(&chat)
        .await
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names[..TOOLS.len()], TOOLS);
    for configured in ["get_weather", "company_faq", "read_note", "write_note"] {
        assert!(names.iter().any(|name| name == configured), "{names:?}");
    }
}

#[test]
fn help_lists_every_flag_and_a_misspelt_flag_is_a_usage_error() {
    let output = example(&[])
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .expect("the example runs");
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "--addr <ADDR>",
        "127.0.0.1:3000]",
        "--data <DIR>",
        "--tools-config <FILE>",
        "OPENAI_API_KEY",
        "OLLAMA_HOST",
        "TOOL_CORE_PROVIDER",
        "--allow-host <HOST>",
        "--max-users <N>",
        "[default: 100]",
        "--max-chats <N>",
        // The security defaults, and what an address other than loopback needs.
        "Security:",
        "Host",
        "Origin",
        "no authentication",
        "0700",
        "0600",
    ] {
        assert!(help.contains(expected), "no {expected:?} in:\n{help}");
    }

    let output = example(&[])
        .args(["--adr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .expect("the example runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("a similar argument exists: '--addr'"),
        "{stderr}"
    );
}

/// The folders of the users under `data`.
pub(crate) fn user_dirs(data: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(data.join("users")) else {
        return Vec::new();
    };
    let mut dirs: Vec<std::path::PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// The text of a file the tools of the only user wrote in their scratch folder, if it exists.
pub(crate) fn scratch_file(data: &Path, name: &str) -> Option<String> {
    let found: Vec<String> = user_dirs(data)
        .iter()
        .filter_map(|dir| std::fs::read_to_string(dir.join("scratch").join(name)).ok())
        .collect();
    assert!(found.len() <= 1, "{name} is in several users' folders");
    found.into_iter().next()
}

#[tokio::test]
async fn an_approved_write_runs_and_a_denied_one_does_not() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;

    let events = user.send(&chat, "write it").await;
    let write = pending_write(&events);
    // Nothing is written while the call waits, and the chat says what waits.
    assert_eq!(scratch_file(data.path(), "example"), None);
    let saved = user.get(&format!("/api/chats/{chat}")).await;
    assert_eq!(saved["pending_approvals"], json!([write]));
    // A new message must wait for the answer.
    let (status, body) = user
        .json(
            reqwest::Method::POST,
            &format!("/api/chats/{chat}/messages"),
            Some(json!({ "text": "never mind" })),
        )
        .await;
    assert_eq!(
        (status, body),
        (
            409,
            json!({"error": "tool calls wait for your approval; answer them first"})
        )
    );
    // Answers must name exactly the waiting calls.
    let (status, body) = user
        .json(
            reqwest::Method::POST,
            &format!("/api/chats/{chat}/approvals"),
            Some(json!({ "decisions": [{ "id": "call_unknown", "decision": "approve" }] })),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"],
        format!(
            "answer every call waiting for approval exactly once: {}",
            write["id"].as_str().unwrap()
        )
    );

    let events = user
        .answer(
            &chat,
            json!([{ "id": write["id"], "decision": "deny", "reason": "not in my scratch folder" }]),
        )
        .await;
    assert_eq!(
        result_of(&events, "write_file"),
        &json!({
            "id": write["id"],
            "name": "write_file",
            "content": "Error: the user denied this call of write_file: not in my scratch folder",
            "is_error": true,
            "kind": "denied",
        })
    );
    assert_eq!(scratch_file(data.path(), "example"), None);
    let (last, done) = events.last().expect("events");
    assert_eq!(last, "done");
    assert_eq!(done["pending_approvals"], json!([]));
    // The denial is kept in the conversation as a failed result.
    let saved = user.get(&format!("/api/chats/{chat}")).await;
    let denied = saved["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool" && message["name"] == "write_file")
        .expect("the denial is kept");
    assert_eq!(denied["is_error"], true);
    assert_eq!(
        denied["content"],
        "Error: the user denied this call of write_file: not in my scratch folder"
    );
    // Nothing waits any more.
    let (status, _) = user
        .json(
            reqwest::Method::POST,
            &format!("/api/chats/{chat}/approvals"),
            Some(json!({ "decisions": [] })),
        )
        .await;
    assert_eq!(status, 409);

    // The next turn asks again, and this time the user approves.
    let events = user.send(&chat, "write it after all").await;
    let write = pending_write(&events);
    let events = user
        .answer(&chat, json!([{ "id": write["id"], "decision": "approve" }]))
        .await;
    assert_eq!(result_of(&events, "write_file")["is_error"], false);
    assert_eq!(result_of(&events, "write_file")["kind"], "success");
    assert_eq!(
        scratch_file(data.path(), "example").as_deref(),
        Some("example")
    );
}

#[tokio::test]
async fn a_call_waiting_for_approval_survives_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;
    let events = user.send(&chat, "write it").await;
    let write = pending_write(&events);
    drop(server);

    let server = WebChat::start(data.path(), &[]);
    let mut user = user.against(&server);
    let saved = user.get(&format!("/api/chats/{chat}")).await;
    assert_eq!(saved["pending_approvals"], json!([write]));
    // The other calls of the step ran; their results wait beside the conversation.
    let ran: Vec<&str> = saved["pending_results"]
        .as_array()
        .expect("the results held")
        .iter()
        .map(|result| result["name"].as_str().unwrap_or_default())
        .collect();
    let mut others = TOOLS.to_vec();
    others.retain(|name| *name != "write_file");
    assert_eq!(ran, others);
    let events = user
        .answer(&chat, json!([{ "id": write["id"], "decision": "approve" }]))
        .await;
    assert_eq!(result_of(&events, "write_file")["kind"], "success");
    assert_eq!(
        scratch_file(data.path(), "example").as_deref(),
        Some("example")
    );
    let (last, done) = events.last().expect("events");
    assert_eq!(last, "done");
    assert!(
        done["text"]
            .as_str()
            .unwrap()
            .starts_with("(test model) I called 7 tool(s)"),
        "{done}"
    );
}

#[tokio::test]
async fn save_session_context_saves_the_conversation_of_the_chat_that_called_it() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let mut user = Browser::new(&server);
    let first = user.new_chat().await;
    let second = user.new_chat().await;
    let mut saved_to = Vec::new();
    for (chat, text) in [(&first, "first chat here"), (&second, "second chat here")] {
        let events = user.send(chat, text).await;
        let result = result_of(&events, "save_session_context");
        assert_eq!(result["kind"], "success", "{result}");
        saved_to.push(result["content"].as_str().unwrap().to_owned());
    }
    for ((chat, text), result) in [(&first, "first chat here"), (&second, "second chat here")]
        .into_iter()
        .zip(&saved_to)
    {
        let path = result
            .strip_prefix("Session context saved to ")
            .unwrap_or_else(|| panic!("{result}"));
        let path = Path::new(path);
        assert_eq!(
            path.file_name().and_then(|name| name.to_str()),
            Some(format!("{chat}.json").as_str())
        );
        assert!(path.starts_with(data.path().join("users")), "{path:?}");
        assert_eq!(
            path.parent().and_then(Path::file_name),
            Some(std::ffi::OsStr::new("sessions"))
        );
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("the session file"))
                .expect("JSON");
        let users: Vec<&str> = file["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|message| message["role"] == "user")
            .map(|message| message["content"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(users, [text], "{path:?} holds its own chat only");
    }
}

#[tokio::test]
async fn a_configured_tool_that_needs_approval_waits_too() {
    let data = tempfile::tempdir().unwrap();
    let config = data.path().join("tools.toml");
    std::fs::write(
        &config,
        r#"
[[tools]]
name = "launch_rocket"
description = "Launch the rocket."
type = "function"
handler = "launch_rocket"
implementation = { type = "mock", mock_response = "launched" }
metadata = { needs_approval = true }

[tools.parameters]
type = "object"
properties = {}
"#,
    )
    .unwrap();
    let config = config.display().to_string();
    let server = WebChat::start_with(data.path(), &["--tools-config", &config], &[]);
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;

    let events = user.send(&chat, "go").await;
    let waiting: Vec<&str> = events
        .iter()
        .filter(|(name, _)| name == "approval_requested")
        .map(|(_, data)| data["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(waiting, ["write_file", "launch_rocket"]);
    let saved = user.get(&format!("/api/chats/{chat}")).await;
    let ids: Vec<&str> = saved["pending_approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|request| request["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);

    // Both are answered at once: one denied, one approved.
    let events = user
        .answer(
            &chat,
            json!([
                { "id": ids[1], "decision": "deny" },
                { "id": ids[0], "decision": "approve" },
            ]),
        )
        .await;
    assert_eq!(
        result_of(&events, "launch_rocket")["content"],
        "Error: the user denied this call of launch_rocket"
    );
    assert_eq!(result_of(&events, "launch_rocket")["kind"], "denied");
    assert_eq!(result_of(&events, "write_file")["kind"], "success");
    assert_eq!(
        scratch_file(data.path(), "example").as_deref(),
        Some("example")
    );
}

/// The per-user preference files under `data`.
fn preference_files(data: &Path) -> Vec<std::path::PathBuf> {
    let Ok(users) = std::fs::read_dir(data.join("users")) else {
        return Vec::new();
    };
    users
        .flatten()
        .map(|user| user.path().join("preferences.json"))
        .filter(|path| path.is_file())
        .collect()
}

#[tokio::test]
async fn with_store_files_each_user_has_a_preferences_file() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start_with(data.path(), &["--store", "files"], &[]);
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;
    user.switch(&chat, "roll_dice", false).await;
    let files = preference_files(data.path());
    assert_eq!(files.len(), 1);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(saved["tools"]["roll_dice"]["enabled"], false, "{saved}");
    assert!(!data.path().join("preferences.db").exists());
}

/// A configuration file in `data` adding `flip_coin`, a deferred tool; its path.
pub(crate) fn deferred_tool_config(data: &Path) -> String {
    let config = data.join("tools.toml");
    std::fs::write(
        &config,
        r#"
[[tools]]
name = "flip_coin"
description = "Flip a coin and say which side is up."
type = "function"
handler = "flip_coin"
implementation = { type = "mock", mock_response = "heads" }
metadata = { defer_loading = true }

[tools.parameters]
type = "object"
properties = {}
"#,
    )
    .unwrap();
    config.display().to_string()
}

#[tokio::test]
async fn searches_are_events_and_the_tool_list_says_which_tools_are_deferred() {
    let data = tempfile::tempdir().unwrap();
    let config = deferred_tool_config(data.path());
    let server = WebChat::start_with(data.path(), &["--tools-config", &config], &[]);
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;

    let listed = |tools: &Value, name: &str| -> (bool, bool) {
        let tool = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {tools}"))
            .clone();
        (
            tool["deferred"].as_bool().unwrap(),
            tool["loaded"].as_bool().unwrap(),
        )
    };
    let tools = user.get(&format!("/api/chats/{chat}/tools")).await;
    assert_eq!(listed(&tools, "flip_coin"), (true, false));
    assert_eq!(listed(&tools, "read_file"), (false, false));

    // The offline model calls every offered tool, the search tool among them: the page gets
    // the search as an event of its own.
    let events = user.send(&chat, "hello").await;
    assert!(called(&events).contains(&"search_tools"), "{events:?}");
    let search = events
        .iter()
        .find(|(name, _)| name == "tool_search")
        .map(|(_, data)| data.clone())
        .unwrap_or_else(|| panic!("no tool_search event in {events:?}"));
    assert!(search["query"].is_string(), "{search}");
    assert!(search["matches"].is_array(), "{search}");
    assert!(search["loaded"].is_array(), "{search}");
    let loaded = search["loaded"]
        .as_array()
        .unwrap()
        .contains(&json!("flip_coin"));
    let tools = user.get(&format!("/api/chats/{chat}/tools")).await;
    assert_eq!(listed(&tools, "flip_coin"), (true, loaded));
}
