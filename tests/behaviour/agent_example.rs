//! The main example, run as a program: offline by default, tools from a configuration file,
//! `/enable` / `/disable` remembered across runs outside the model's reach, approval questions
//! that show what the tool will get, and nothing but printable text on the terminal.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use serde_json::{Value, json};

/// A run's directories: the root the model's file tools work in, in a temporary directory
/// that also holds the default state directory beside it (`ROOT-state`).
struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// Where the example keeps its preferences and session by default.
    state: PathBuf,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        Self {
            root,
            state: dir.path().join("root-state"),
            _dir: dir,
        }
    }

    /// `--root ROOT`, then `args`.
    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["--root", self.root.to_str().unwrap()];
        all.extend_from_slice(args);
        all
    }

    fn run(&self, args: &[&str], input: &str) -> String {
        run(&self.args(args), input)
    }
}

/// Runs the agent example with `args`, feeding `input` on stdin; returns its stdout.
fn run(args: &[&str], input: &str) -> String {
    run_with_env(args, input, &[])
}

/// Like [`run`], with environment variables set for the example.
fn run_with_env(args: &[&str], input: &str, env: &[(&str, &str)]) -> String {
    let output = spawn(args, input, env);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Runs the agent example to its end, offline unless `env` configures a provider.
pub(crate) fn spawn(args: &[&str], input: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agent_example"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Offline on purpose, whatever the machine running the tests has configured.
    for variable in [
        "TOOL_CORE_PROVIDER",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TOOL_CORE_OPENAI_API",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "OLLAMA_HOST",
        "TOOL_CORE_AGENT_ROOT",
        "TOOL_CORE_AGENT_STATE",
        "TOOL_CORE_STORE",
    ] {
        command.env_remove(variable);
    }
    command.envs(env.iter().copied());
    let mut child = command.spawn().expect("the agent example starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("the example reads its input");
    child.wait_with_output().expect("the example finishes")
}

fn tool_line<'a>(listing: &'a str, name: &str) -> &'a str {
    listing
        .lines()
        .find(|line| line.split_whitespace().any(|word| word == name))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{listing}"))
}

#[test]
fn the_example_runs_offline_on_the_test_model() {
    let workspace = Workspace::new();
    let stdout = workspace.run(&["What can you do?"], "");
    assert!(stdout.contains("offline test model"), "{stdout}");
    assert!(stdout.contains("-> read_file("), "{stdout}");
    assert!(
        stdout.contains("<- save_session_context: Session context saved"),
        "{stdout}"
    );
    assert!(workspace.state.join("session.json").exists());
}

#[test]
fn the_example_remembers_enable_and_disable_across_runs() {
    let workspace = Workspace::new();
    let stdout = workspace.run(&["--stdin"], "/disable write_file\n/tools\n/quit\n");
    assert!(stdout.contains("write_file is off"), "{stdout}");

    // A new process: the switch comes back from the preferences file.
    let stdout = workspace.run(&["--stdin"], "/tools\n");
    assert!(
        tool_line(&stdout, "write_file").contains("[off]"),
        "{stdout}"
    );
    assert!(
        tool_line(&stdout, "read_file").contains("[on ]"),
        "{stdout}"
    );

    let stdout = workspace.run(&["--stdin"], "/enable write_file\n");
    assert!(stdout.contains("write_file is on"), "{stdout}");
    let stdout = workspace.run(&["--stdin"], "/tools\n");
    assert!(
        tool_line(&stdout, "write_file").contains("[on ]"),
        "{stdout}"
    );
}

#[test]
fn the_example_loads_tools_from_a_configuration_file() {
    let workspace = Workspace::new();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/tools.toml");
    let config = config.display().to_string();
    let stdout = workspace.run(&["--tools-config", &config, "--stdin"], "/tools\n");
    assert!(stdout.contains("tool(s) loaded from"), "{stdout}");
    assert!(
        tool_line(&stdout, "get_weather").contains("[on ]"),
        "{stdout}"
    );
    assert!(
        tool_line(&stdout, "company_faq").contains("[off]"),
        "default_enabled = false in the file: {stdout}"
    );
}

/// Runs the example on one question against a loopback server that answers with `transcript`,
/// with `env` and `OPENAI_BASE_URL` naming the server; checks that the answer came from the
/// server, and returns its stdout and the one request the server received.
async fn ask_the_server(
    transcript: &'static [u8],
    env: &'static [(&'static str, &'static str)],
) -> (String, crate::loopback::Recorded) {
    let server =
        crate::loopback::Server::start(vec![crate::loopback::Reply::sse(transcript)]).await;
    let base_url = format!("{}/v1", server.url());
    let workspace = Workspace::new();
    let stdout = tokio::task::spawn_blocking(move || {
        let mut vars = vec![("OPENAI_BASE_URL", base_url.as_str())];
        vars.extend_from_slice(env);
        run_with_env(
            &workspace.args(&["What is the capital of France?"]),
            "",
            &vars,
        )
    })
    .await
    .unwrap();
    assert!(!stdout.contains("offline test model"), "{stdout}");
    assert!(
        stdout.contains("The capital of France is Paris."),
        "{stdout}"
    );
    let mut requests = server.requests();
    assert_eq!(requests.len(), 1);
    (stdout, requests.remove(0))
}

/// The names of the tools a request body offers, found under `key` in each.
fn offered_tools(body: &serde_json::Value, key: &str) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            tool.pointer(key)
                .and_then(|name| name.as_str())
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_uses_the_provider_configured_in_the_environment() {
    let (stdout, request) = ask_the_server(
        include_bytes!("../transcripts/openai/text.sse"),
        &[
            ("OPENAI_API_KEY", "sk-test"),
            ("OPENAI_MODEL", "gpt-4o-mini"),
        ],
    )
    .await;
    assert!(stdout.contains("(openai)"), "{stdout}");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    let body = request.json();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(
        offered_tools(&body, "/function/name"),
        ["read_file", "write_file", "save_session_context"]
    );
}

/// `TOOL_CORE_OPENAI_API=responses` makes the example speak the Responses API to a compatible
/// server (whose base URL alone would mean Chat Completions): flat tools, `store: false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_speaks_the_responses_api_when_the_environment_asks() {
    let (_, request) = ask_the_server(
        include_bytes!("../transcripts/responses/text.sse"),
        &[
            ("OPENAI_MODEL", "gpt-4o-mini"),
            ("TOOL_CORE_OPENAI_API", "responses"),
        ],
    )
    .await;
    assert_eq!(request.uri, "/v1/responses");
    let body = request.json();
    assert_eq!(body["store"], false);
    assert_eq!(
        offered_tools(&body, "/name"),
        ["read_file", "write_file", "save_session_context"]
    );
}

/// The names of the files in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The files the example's tools left in the root, beside the note every run writes.
fn written_files(root: &Path) -> Vec<String> {
    let mut names = files_in(root);
    names.retain(|name| name != "notes.txt");
    names
}

#[test]
fn the_example_asks_before_writing_and_a_denied_write_leaves_no_file() {
    let workspace = Workspace::new();
    let stdout = workspace.run(&["write something"], "n\n");
    assert!(
        stdout
            .contains(r#"Allow write_file {"content":"example","path":"example"}? [y/N] (denied)"#),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "!! write_file: Error: the user denied this call of write_file: the user said no"
        ),
        "{stdout}"
    );
    assert!(written_files(&workspace.root).is_empty());
    // No answer at all (end of input) is a no too.
    let stdout = workspace.run(&["write something"], "");
    assert!(stdout.contains("(denied)"), "{stdout}");
    assert!(written_files(&workspace.root).is_empty());
}

#[test]
fn the_example_writes_once_the_user_approves() {
    let workspace = Workspace::new();
    let stdout = workspace.run(&["write something"], "y\n");
    assert!(
        stdout.contains("<- write_file: Successfully wrote 7 bytes to example"),
        "{stdout}"
    );
    assert_eq!(written_files(&workspace.root), ["example"]);
    assert_eq!(
        std::fs::read_to_string(workspace.root.join("example")).unwrap(),
        "example"
    );
    // The counts cover the whole turn, the calls before the approval included.
    assert!(stdout.contains("[2 step(s), 3 tool call(s), "), "{stdout}");
}

#[test]
fn with_yes_the_example_approves_without_asking_and_the_repl_reads_answers_from_stdin() {
    let workspace = Workspace::new();
    let stdout = workspace.run(&["--yes", "write something"], "");
    assert!(!stdout.contains("Allow write_file"), "{stdout}");
    assert!(
        stdout.contains("(approved by --yes) write_file"),
        "{stdout}"
    );
    assert_eq!(written_files(&workspace.root), ["example"]);

    // In the REPL the next input line answers; the line after it is a command again.
    let workspace = Workspace::new();
    let stdout = workspace.run(&["--stdin"], "write it\nno\n/tools\n/quit\n");
    assert!(stdout.contains("(denied)"), "{stdout}");
    assert!(stdout.contains("[on ] write_file"), "{stdout}");
    assert!(written_files(&workspace.root).is_empty());
}

#[test]
fn the_example_uses_an_mcp_servers_tools_like_its_own() {
    let Some(everything) = crate::mcp_client_everything::everything() else {
        return;
    };
    let workspace = Workspace::new();
    let server = format!("node {}", everything.display());
    // Two of the reference server's tools reach outside this machine or take ten seconds.
    let stdout = workspace.run(
        &["--stdin", "--yes", "--mcp", &server],
        "/disable gzip-file-as-resource\n/disable trigger-long-running-operation\n\
         /disable get-env\n/tools\nuse every tool\n/quit\n",
    );
    assert!(stdout.contains("MCP server node "), "{stdout}");
    let listed = |name: &str| {
        stdout
            .lines()
            .find(|line| line.starts_with('[') && line.split_whitespace().any(|word| word == name))
            .unwrap_or_else(|| panic!("{name} is not listed:\n{stdout}"))
            .to_owned()
    };
    assert!(listed("get-sum").starts_with("[on ]"));
    assert!(listed("gzip-file-as-resource").starts_with("[off]"));
    // An MCP server's annotations are not trusted: each call of its tools is approved first
    // (here by --yes).
    assert!(
        stdout.contains(r#"(approved by --yes) get-sum {"a":1,"b":1}"#),
        "{stdout}"
    );
    assert!(stdout.contains("-> get-sum({\"a\":1,\"b\":1})"), "{stdout}");
    assert!(
        stdout.contains("<- get-sum: The sum of 1 and 1 is 2."),
        "{stdout}"
    );
    assert!(stdout.contains("<- echo: Echo: example"), "{stdout}");
    assert!(!stdout.contains("-> gzip-file-as-resource"), "{stdout}");
}

#[test]
fn past_its_search_budget_the_example_defers_tools_and_search_shows_what_the_model_reads() {
    let workspace = Workspace::new();
    // Within the default budget: nothing is deferred, so there is nothing to search.
    let stdout = workspace.run(&["--stdin"], "/tools\n/search save\n/quit\n");
    assert!(!stdout.contains("(deferred)"), "{stdout}");
    assert!(
        stdout.contains("no tool is deferred: every tool is offered to the model"),
        "{stdout}"
    );

    // Past a budget of one tool: all but the file tools are deferred.
    let stdout = workspace.run(
        &["--stdin", "--search-budget", "1"],
        "/tools\n/search save the conversation\n/search\n/quit\n",
    );
    assert!(
        tool_line(&stdout, "save_session_context").ends_with("(deferred)"),
        "{stdout}"
    );
    assert!(!tool_line(&stdout, "read_file").contains("(deferred)"));
    assert!(!tool_line(&stdout, "write_file").contains("(deferred)"));
    assert!(
        stdout.contains(
            "search_tools would answer:\nLoaded; call them like any other tool:\n\
             - save_session_context: "
        ),
        "{stdout}"
    );
    // An empty query gets the search's own error, as the model would.
    assert!(
        stdout.contains("search_tools would answer:\nError executing search_tools: "),
        "{stdout}"
    );
}

#[test]
fn an_mcp_server_that_cannot_start_stops_the_example_with_the_reason() {
    let workspace = Workspace::new();
    let output = spawn(
        &workspace.args(&["--mcp", "/nonexistent/mcp-server --flag", "hi"]),
        "",
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot use the MCP server"), "{stderr}");
    let output = spawn(&workspace.args(&["--mcp", "'unclosed", "hi"]), "", &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).starts_with("--mcp \"'unclosed\": "),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_example_remembers_switches_in_an_sqlite_store() {
    let workspace = Workspace::new();
    let database = workspace.state.with_file_name("data").join("prefs.db");
    let url = format!("sqlite://{}", database.display());
    workspace.run(
        &["--stdin", "--store", &url],
        "/disable write_file\n/quit\n",
    );
    assert!(database.is_file());
    assert!(!workspace.state.join("tool-preferences.json").exists());
    let stdout = workspace.run(&["--stdin", "--store", &url], "/tools\n/quit\n");
    assert!(
        tool_line(&stdout, "write_file").contains("[off] write_file"),
        "{stdout}"
    );
    assert!(
        tool_line(&stdout, "read_file").contains("[on ] read_file"),
        "{stdout}"
    );

    let output = spawn(
        &workspace.args(&["--store", "mysql://nowhere/db", "hi"]),
        "",
        &[],
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("cannot open the preference store: "),
        "{stderr}"
    );
}

#[test]
fn the_example_keeps_its_switches_and_session_outside_the_models_root() {
    let workspace = Workspace::new();
    workspace.run(&["--stdin"], "/disable write_file\n/save\n/quit\n");
    assert!(workspace.state.join("tool-preferences.json").is_file());
    assert!(workspace.state.join("session.json").is_file());
    assert_eq!(files_in(&workspace.root), ["notes.txt"]);

    // A preferences file the model wrote in its root changes nothing.
    std::fs::write(
        workspace.root.join("tool-preferences.json"),
        r#"{"write_file": true}"#,
    )
    .unwrap();
    let stdout = workspace.run(&["--stdin"], "/tools\n");
    assert!(
        tool_line(&stdout, "write_file").contains("[off]"),
        "{stdout}"
    );

    // The files that say what the model may do are refused inside its root.
    let root = workspace.root.to_str().unwrap();
    let inside = |name: &str| workspace.root.join(name).display().to_string();
    let config = inside("tools.toml");
    std::fs::write(&config, "").unwrap();
    let store = format!("sqlite://{}", inside("prefs.db"));
    let refused = |flag: &str, path: &str, shown: &str| {
        let output = spawn(&["--root", root, flag, path, "hi"], "", &[]);
        assert_eq!(output.status.code(), Some(1), "{flag} {path}");
        assert_eq!(
            String::from_utf8_lossy(&output.stderr).trim_end(),
            format!(
                "{flag} {shown} is inside --root {root}, where the model's file tools could \
                 rewrite it; choose a path outside that directory"
            )
        );
        assert_eq!(String::from_utf8_lossy(&output.stdout), "", "{flag}");
    };
    for (flag, path) in [
        ("--state", inside("state")),
        ("--prefs", inside("prefs.json")),
        ("--session", inside("session.json")),
        ("--tools-config", config.clone()),
    ] {
        refused(flag, &path, &path);
    }
    refused("--store", &store, &inside("prefs.db"));
    // The same through `..` and through a symbolic link to the root.
    let dotted = format!("{root}/sub/../prefs.json");
    refused("--prefs", &dotted, &dotted);
    let link = workspace.state.with_file_name("link");
    std::os::unix::fs::symlink(&workspace.root, &link).unwrap();
    let linked = link.join("prefs.json").display().to_string();
    refused("--prefs", &linked, &linked);
}

/// An OpenAI-compatible provider on loopback answering with `replies`, one per request, and
/// its base URL.
async fn provider(replies: Vec<crate::loopback::Reply>) -> (crate::loopback::Server, String) {
    let server = crate::loopback::Server::start(replies).await;
    let base_url = format!("{}/v1", server.url());
    (server, base_url)
}

/// A streamed Chat Completions answer: `delta`, then the finish reason.
fn openai_stream(delta: Value, finish_reason: &str) -> crate::loopback::Reply {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        })
    };
    crate::loopback::Reply::sse_owned(format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(delta, Value::Null),
        chunk(json!({}), json!(finish_reason))
    ))
}

fn text_reply(text: &str) -> crate::loopback::Reply {
    openai_stream(json!({"role": "assistant", "content": text}), "stop")
}

fn tool_call_reply(name: &str, arguments: &str) -> crate::loopback::Reply {
    openai_stream(
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "index": 0, "id": "call_1", "type": "function",
            "function": {"name": name, "arguments": arguments}
        }]}),
        "tool_calls",
    )
}

/// Runs the example with `args` against a loopback provider answering with `replies`, feeding
/// `input` on stdin; returns its stdout.
async fn run_on_provider(
    workspace: &Workspace,
    replies: Vec<crate::loopback::Reply>,
    args: &[&str],
    input: &str,
) -> String {
    let (_server, base_url) = provider(replies).await;
    let args: Vec<String> = workspace
        .args(args)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let input = input.to_owned();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_with_env(
            &args,
            &input,
            &[
                ("OPENAI_API_KEY", "sk-test"),
                ("OPENAI_BASE_URL", &base_url),
                ("OPENAI_MODEL", "gpt-4o-mini"),
            ],
        )
    })
    .await
    .unwrap()
}

/// The approval question in `stdout`.
fn prompt(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|line| line.starts_with("Allow "))
        .unwrap_or_else(|| panic!("no question in:\n{stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_question_shows_every_argument_the_tool_will_get() {
    let workspace = Workspace::new();
    // A long value first: the path after it is shown all the same, and the cut says so.
    let content = "x".repeat(600);
    let arguments = json!({"content": content, "path": "elsewhere.txt"}).to_string();
    let stdout = run_on_provider(
        &workspace,
        vec![
            tool_call_reply("write_file", &arguments),
            text_reply("not written"),
        ],
        &["write a file"],
        "n\n",
    )
    .await;
    assert_eq!(
        prompt(&stdout),
        format!(
            r#"Allow write_file {{"content":"{}[cut: 302 more characters],"path":"elsewhere.txt"}}? [y/N] (denied)"#,
            "x".repeat(299)
        )
    );
    assert!(written_files(&workspace.root).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_given_twice_never_reaches_the_tool_even_when_approved() {
    // The question used to show the first `path` and the write went to the last.
    let workspace = Workspace::new();
    let arguments = r#"{"path": "shown.txt", "content": "x", "path": "hidden.txt"}"#;
    let stdout = run_on_provider(
        &workspace,
        vec![
            tool_call_reply("write_file", arguments),
            text_reply("I will send each key once"),
        ],
        &["write a file"],
        "y\n",
    )
    .await;
    assert!(
        stdout.contains(
            "!! write_file: Error: invalid arguments for write_file: the key \"path\" is given \
             more than once; send each key once"
        ),
        "{stdout}"
    );
    assert!(written_files(&workspace.root).is_empty());
    // Arguments that cannot be read never reach the tool, so nobody is asked about them.
    assert!(!stdout.contains("Allow "), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_prints_no_terminal_control_sequences() {
    // A tool result holding escape sequences: a window title, a screen clear, a carriage return.
    let workspace = Workspace::new();
    std::fs::create_dir_all(&workspace.root).unwrap();
    std::fs::write(
        workspace.root.join("notes.txt"),
        "\u{1b}]0;owned\u{7}\u{1b}[2Jhidden\rshown\ttabbed\nnext line",
    )
    .unwrap();
    let stdout = workspace.run(&["read it"], "");
    assert!(
        stdout.contains(r"<- read_file: \x1b]0;owned\x07\x1b[2Jhidden\rshown	tabbed next line"),
        "{stdout}"
    );
    assert_printable(&stdout);

    // The model's text, and the arguments of a call it makes.
    let workspace = Workspace::new();
    let stdout = run_on_provider(
        &workspace,
        vec![
            tool_call_reply(
                "write_file",
                &json!({"path": "a\u{1b}[8m.txt", "content": "\u{202e}txt.exe"}).to_string(),
            ),
            text_reply("\u{1b}]0;owned\u{7}Hello \u{1b}[31mred\u{1b}[0m\u{9b}2J\nbye"),
        ],
        &["hello"],
        "n\n",
    )
    .await;
    assert!(
        stdout.contains(r"\x1b]0;owned\x07Hello \x1b[31mred\x1b[0m\x9b2J"),
        "{stdout}"
    );
    assert!(stdout.contains(r#""path":"a\u001b[8m.txt""#), "{stdout}");
    assert!(
        stdout.contains(r#""content":"\u{202e}txt.exe""#),
        "{stdout}"
    );
    assert_printable(&stdout);
}

/// No control characters but newlines and tabs, and no bidirectional controls.
fn assert_printable(stdout: &str) {
    let bad: Vec<char> = stdout
        .chars()
        .filter(|c| {
            (c.is_control() && !matches!(c, '\n' | '\t'))
                || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(bad.is_empty(), "{bad:?} reached the terminal:\n{stdout}");
}
