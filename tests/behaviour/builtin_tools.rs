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

    let read = |path: &'static str| registry.execute("read_file", args(json!({"path": path})));
    assert_eq!(
        read("escape/secret.txt").await,
        "Error executing read_file: 'escape/secret.txt' goes through the symbolic link 'escape'; \
         the file tools do not follow symbolic links"
    );
    assert_eq!(
        read("link.txt").await,
        "Error executing read_file: 'link.txt' is a symbolic link; the file tools do not follow \
         symbolic links"
    );
    let text = registry
        .execute(
            "write_file",
            args(json!({"path": "escape/new.txt", "content": "x"})),
        )
        .await;
    assert_eq!(
        text,
        "Error executing write_file: 'escape/new.txt' goes through the symbolic link 'escape'; \
         the file tools do not follow symbolic links"
    );
    let text = registry
        .execute(
            "write_file",
            args(json!({"path": "link.txt", "content": "x"})),
        )
        .await;
    assert_eq!(
        text,
        "Error executing write_file: 'link.txt' is a symbolic link; the file tools do not follow \
         symbolic links"
    );
    assert!(!outer.path().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outer.path().join("secret.txt")).unwrap(),
        "secret"
    );
}

/// Links that stay inside the root are refused as well: the file tools follow no link at all,
/// so no check of where a link leads can be raced. The root itself may be reached through a
/// link, since the application chose it.
#[cfg(unix)]
#[tokio::test]
async fn symlinks_that_stay_inside_the_root_are_refused_too() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("real.txt"), "real").unwrap();
    std::fs::write(root.join("sub/inner.txt"), "inner").unwrap();
    std::os::unix::fs::symlink(root.join("real.txt"), root.join("alias.txt")).unwrap();
    std::os::unix::fs::symlink("sub", root.join("alias")).unwrap();
    std::os::unix::fs::symlink(&root, outer.path().join("root-link")).unwrap();
    let registry = create_default_tool_registry(context_in(&outer.path().join("root-link")));

    let read = |path: &'static str| registry.execute("read_file", args(json!({"path": path})));
    assert_eq!(
        read("alias.txt").await,
        "Error executing read_file: 'alias.txt' is a symbolic link; the file tools do not follow \
         symbolic links"
    );
    assert_eq!(
        read("alias/inner.txt").await,
        "Error executing read_file: 'alias/inner.txt' goes through the symbolic link 'alias'; \
         the file tools do not follow symbolic links"
    );
    assert_eq!(read("real.txt").await, "real");
    assert_eq!(read("sub/inner.txt").await, "inner");
    assert_eq!(read("sub/../real.txt").await, "real");
}

/// Swaps `root/dir`, a real directory, with a symbolic link to a directory outside the root,
/// atomically (`renameat2(RENAME_EXCHANGE)`), as fast as it can while the tools run: a check
/// made on the path and an open made later would see two different things.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_during_calls_never_leads_out() {
    use std::sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    };

    use rustix::fs::{CWD, RenameFlags, renameat_with};

    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    let secret = outer.path().join("secret");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(root.join("dir/f.txt"), "inside").unwrap();
    std::fs::write(secret.join("f.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(&secret, root.join("swap")).unwrap();
    let registry = create_default_tool_registry(context_in(&root));

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, dir, swap) = (stop.clone(), root.join("dir"), root.join("swap"));
        std::thread::spawn(move || {
            let mut swaps = 0_u64;
            while !stop.load(Ordering::Relaxed) && swaps < 100_000_000 {
                renameat_with(CWD, &dir, CWD, &swap, RenameFlags::EXCHANGE).unwrap();
                swaps += 1;
            }
            if swaps % 2 == 1 {
                renameat_with(CWD, &dir, CWD, &swap, RenameFlags::EXCHANGE).unwrap();
            }
        })
    };
    let mut escaped_reads = 0;
    for _ in 0..400 {
        let text = registry
            .execute("read_file", args(json!({"path": "dir/f.txt"})))
            .await;
        if text == "secret" {
            escaped_reads += 1;
        }
    }
    for i in 0..400 {
        registry
            .execute(
                "write_file",
                args(json!({"path": format!("dir/w{i}.txt"), "content": "written"})),
            )
            .await;
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();

    let mut landed_outside: Vec<_> = std::fs::read_dir(&secret)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "f.txt")
        .collect();
    landed_outside.sort();
    assert_eq!(
        (escaped_reads, landed_outside),
        (0, Vec::<String>::new()),
        "reads that returned the outside file, and files written outside"
    );
    assert_eq!(
        std::fs::read_to_string(secret.join("f.txt")).unwrap(),
        "secret"
    );
    // With the directory back in place, the same call reads it.
    let text = registry
        .execute("read_file", args(json!({"path": "dir/f.txt"})))
        .await;
    assert_eq!(text, "inside");
}

/// Opens the write end of a named pipe, again and again, until no reader waits on it: frees
/// any reader a failing test left blocked, so the test's runtime can shut down.
#[cfg(unix)]
struct ReleasePipe(std::path::PathBuf);

#[cfg(unix)]
impl Drop for ReleasePipe {
    fn drop(&mut self) {
        use rustix::fs::{CWD, Mode, OFlags, openat};

        let mut idle = 0;
        for _ in 0..2_000 {
            let opened = openat(
                CWD,
                &self.0,
                OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            );
            idle = if opened.is_ok() { 0 } else { idle + 1 };
            if idle > 50 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// A named pipe with no writer: opening it for reading blocks, and a writer could send without
/// end. `read_file` refuses it at once, every time, and leaves no thread behind: more calls
/// than the runtime has blocking threads (512) all return, and a plain read works after them.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_refuses_a_named_pipe_at_once_however_often_it_is_asked() {
    use rustix::fs::{CWD, Mode, mkfifoat};

    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("pipe");
    mkfifoat(CWD, &pipe, Mode::from_raw_mode(0o600)).unwrap();
    let _release = ReleasePipe(pipe);
    std::fs::write(dir.path().join("plain.txt"), "plain").unwrap();
    let registry = create_default_tool_registry(context_in(dir.path()));

    let calls = (0..520).map(|_| registry.execute("read_file", args(json!({"path": "pipe"}))));
    let results = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        futures::future::join_all(calls),
    )
    .await
    .expect("every read of the pipe answered");
    let refused = "Error executing read_file: 'pipe' is a named pipe, not a regular file";
    assert_eq!(
        results.iter().filter(|text| *text == refused).count(),
        520,
        "{:?}",
        results.first()
    );
    let text = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        registry.execute("read_file", args(json!({"path": "plain.txt"}))),
    )
    .await
    .expect("a plain read answered after the pipe reads");
    assert_eq!(text, "plain");
    let text = registry
        .execute("write_file", args(json!({"path": "pipe", "content": "x"})))
        .await;
    assert_eq!(
        text,
        "Error executing write_file: 'pipe' is a named pipe, not a regular file"
    );
}

/// Device files report a size of 0 and never end (`/dev/zero`) or are always empty
/// (`/dev/null`): they are refused before a byte is read.
#[cfg(unix)]
#[tokio::test]
async fn read_file_refuses_device_files() {
    let context = ToolContext::with_options(ToolContextOptions::new().root_dir("/dev"));
    let tool = ReadFile::new(context);
    for name in ["null", "zero", "urandom"] {
        let error = tool.execute(args(json!({"path": name}))).await.unwrap_err();
        assert_eq!(
            error.message(),
            format!("'{name}' is a character device, not a regular file")
        );
    }
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
