//! The built-in tools and `ToolContext` (seed 001), each tested on its own with a test context
//! in a temporary directory.

use std::path::Path;

use serde_json::{Value, json};
use tool_core::{
    ExecutableTool, JsonObject, Message, ToolContext, ToolContextOptions,
    builtin::{ReadFile, SaveSessionContext, WriteFile},
    context::SavedConversation,
    create_default_tool_registry,
};

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("test arguments must be an object, not {other}"),
    }
}

fn context_in(dir: &Path) -> ToolContext {
    ToolContext::with_options(
        ToolContextOptions::new()
            .system_prompt("You are a test.")
            .session_context_file_path(dir.join("session.json"))
            .root_dir(dir)
            .max_read_bytes(64),
    )
}

#[test]
fn the_default_registry_holds_the_three_builtin_tools_in_order() {
    let registry = create_default_tool_registry(ToolContext::default());
    assert_eq!(
        registry.get_tool_names(),
        ["read_file", "write_file", "save_session_context"]
    );
}

#[test]
fn the_builtin_tools_are_enabled() {
    let registry = create_default_tool_registry(ToolContext::default());
    let names: Vec<_> = registry
        .get_enabled_schemas()
        .into_iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(names, ["read_file", "write_file", "save_session_context"]);
}

#[test]
fn built_in_schemas_describe_their_arguments() {
    let registry = create_default_tool_registry(ToolContext::default());
    let schemas = registry.get_enabled_schemas();
    let read = schemas[0].parameters();
    assert_eq!(read["type"], "object");
    assert_eq!(read["required"], json!(["path"]));
    assert!(read["properties"]["encoding"].is_object());
    let write = schemas[1].parameters();
    assert_eq!(write["required"], json!(["path", "content"]));
    let save = schemas[2].parameters();
    assert_eq!(save["required"], json!(["reason"]));
}

#[tokio::test]
async fn read_file_returns_the_files_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello, world").unwrap();
    let tool = ReadFile::new(context_in(dir.path()));
    let text = tool
        .execute(args(json!({"path": "notes.txt"})))
        .await
        .unwrap();
    assert_eq!(text, "hello, world");
}

#[tokio::test]
async fn write_file_creates_parent_folders_and_replaces_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let tool = WriteFile::new(context_in(dir.path()));
    let text = tool
        .execute(args(
            json!({"path": "out/deep/file.txt", "content": "written"}),
        ))
        .await
        .unwrap();
    assert_eq!(text, "Successfully wrote 7 bytes to out/deep/file.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/deep/file.txt")).unwrap(),
        "written"
    );
    // Replacing leaves no temporary file behind.
    tool.execute(args(
        json!({"path": "out/deep/file.txt", "content": "again"}),
    ))
    .await
    .unwrap();
    let entries: Vec<_> = std::fs::read_dir(dir.path().join("out/deep"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(entries, ["file.txt"]);
}

#[tokio::test]
async fn save_session_context_writes_the_conversation_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let context = context_in(dir.path());
    context.push_message(Message::user("remember this"));
    context.add_note("a note");
    let tool = SaveSessionContext::new(context.clone());
    let text = tool
        .execute(args(json!({"reason": "checkpoint"})))
        .await
        .unwrap();
    let path = dir.path().join("session.json");
    assert_eq!(text, format!("Session context saved to {}", path.display()));
    let saved = SavedConversation::load(&path).unwrap();
    assert_eq!(saved.reason, "checkpoint");
    assert_eq!(saved.context, context.session_context());
    assert!(saved.saved_at.starts_with("20"), "{}", saved.saved_at);
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        raw["messages"][0],
        json!({"role": "user", "content": "remember this"})
    );
}

#[tokio::test]
async fn a_context_made_without_an_agent_drives_the_tools() {
    // No agent: a context made for the test drives the tool.
    let dir = tempfile::tempdir().unwrap();
    let context = context_in(dir.path());
    let registry = create_default_tool_registry(context.clone());
    let text = registry
        .execute("save_session_context", args(json!({"reason": "test"})))
        .await;
    assert_eq!(
        text,
        format!(
            "Session context saved to {}",
            context.session_context_file_path().display()
        )
    );
    assert_eq!(
        SavedConversation::load(context.session_context_file_path())
            .unwrap()
            .context
            .system_prompt,
        "You are a test."
    );
}

#[test]
fn a_tool_context_holds_its_prompt_and_file_path() {
    let context = ToolContext::new("Be brief.", "/tmp/ctx.json");
    assert_eq!(context.system_prompt(), "Be brief.");
    assert_eq!(context.session_context().system_prompt, "Be brief.");
    assert_eq!(
        context.session_context_file_path(),
        std::path::PathBuf::from("/tmp/ctx.json")
    );
}

#[test]
fn every_clone_of_a_context_sees_its_live_state() {
    let context = ToolContext::new("Before.", "ctx.json");
    let tools_view = context.clone();
    context.push_message(Message::user("hi"));
    context.set_system_prompt("After.");
    assert_eq!(tools_view.system_prompt(), "After.");
    assert_eq!(tools_view.session_context().messages.len(), 1);
    context.clear();
    assert!(tools_view.session_context().messages.is_empty());
    assert_eq!(
        tools_view.system_prompt(),
        "After.",
        "clearing keeps the prompt"
    );
}

#[tokio::test]
async fn file_tools_cannot_escape_their_root() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(outer.path().join("secret.txt"), "secret").unwrap();
    let registry = create_default_tool_registry(context_in(&root));

    for path in [
        "../secret.txt".to_owned(),
        "a/../../secret.txt".to_owned(),
        outer.path().join("secret.txt").display().to_string(),
    ] {
        let text = registry
            .execute("read_file", args(json!({"path": path})))
            .await;
        assert!(
            text.starts_with("Error executing read_file:") && text.contains("outside"),
            "{path}: {text}"
        );
        let text = registry
            .execute("write_file", args(json!({"path": path, "content": "x"})))
            .await;
        assert!(text.contains("outside"), "{path}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(outer.path().join("secret.txt")).unwrap(),
        "secret"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_cannot_lead_out_of_the_root() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(outer.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outer.path(), root.join("escape")).unwrap();
    std::os::unix::fs::symlink(outer.path().join("secret.txt"), root.join("link.txt")).unwrap();
    let registry = create_default_tool_registry(context_in(&root));

    for path in ["escape/secret.txt", "link.txt"] {
        let text = registry
            .execute("read_file", args(json!({"path": path})))
            .await;
        assert!(text.contains("outside"), "{path}: {text}");
    }
    let text = registry
        .execute(
            "write_file",
            args(json!({"path": "escape/new.txt", "content": "x"})),
        )
        .await;
    assert!(text.contains("outside"), "{text}");
    assert!(!outer.path().join("new.txt").exists());
}

#[tokio::test]
async fn reads_are_limited_in_size() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), "x".repeat(65)).unwrap();
    std::fs::write(dir.path().join("fits.txt"), "x".repeat(64)).unwrap();
    let registry = create_default_tool_registry(context_in(dir.path()));
    let text = registry
        .execute("read_file", args(json!({"path": "big.txt"})))
        .await;
    assert_eq!(
        text,
        "Error executing read_file: 'big.txt' is 65 bytes, more than the read limit of 64 bytes"
    );
    let text = registry
        .execute("read_file", args(json!({"path": "fits.txt"})))
        .await;
    assert_eq!(text.len(), 64);
}

#[tokio::test]
async fn read_file_decodes_the_encodings_users_expect() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("latin1.txt"), [b'c', b'a', b'f', 0xe9]).unwrap();
    std::fs::write(dir.path().join("utf16.txt"), [b'h', 0, b'i', 0]).unwrap();
    std::fs::write(dir.path().join("bytes.bin"), [0xde, 0xad, 0xbe, 0xef]).unwrap();
    let registry = create_default_tool_registry(context_in(dir.path()));
    let read = |path: &'static str, encoding: Option<&'static str>| {
        let registry = &registry;
        async move {
            let mut value = json!({"path": path});
            if let Some(encoding) = encoding {
                value["encoding"] = json!(encoding);
            }
            registry.execute("read_file", args(value)).await
        }
    };
    assert_eq!(read("latin1.txt", Some("latin1")).await, "café");
    assert_eq!(read("latin1.txt", Some("ISO-8859-1")).await, "café");
    assert_eq!(read("utf16.txt", Some("utf-16le")).await, "hi");
    assert_eq!(read("bytes.bin", Some("hex")).await, "deadbeef");
    assert_eq!(read("bytes.bin", Some("base64")).await, "3q2+7w==");
    assert_eq!(
        read("latin1.txt", None).await,
        "Error executing read_file: 'latin1.txt' is not valid UTF-8; pass an `encoding` such as latin1 or base64"
    );
    let unknown = read("latin1.txt", Some("ebcdic-klingon")).await;
    assert!(
        unknown.starts_with("Error executing read_file: unknown encoding 'ebcdic-klingon'"),
        "{unknown}"
    );
}

#[tokio::test]
async fn reading_a_missing_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let registry = create_default_tool_registry(context_in(dir.path()));
    let text = registry
        .execute("read_file", args(json!({"path": "nope.txt"})))
        .await;
    assert_eq!(
        text,
        "Error executing read_file: cannot read 'nope.txt': no such file or directory"
    );
}
