//! The `web_chat` example's security boundaries, each tried from outside over real HTTP: a page
//! whose name was rebound to the loopback address, a change posted from another origin, one
//! user's file tools reaching another's files, a made-up user cookie, too many users or chats,
//! data folders others can read or created beforehand by someone else, and a configured alias
//! of `write_file` that would write without asking.

use std::{
    os::unix::fs::{MetadataExt as _, PermissionsExt as _},
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use reqwest::Method;
use serde_json::{Value, json};

use crate::web_chat::{
    Browser, WebChat, example, pending_write, result_of, scratch_file, user_dirs,
};

/// The longest the example may take to refuse to start.
const DEADLINE: Duration = Duration::from_secs(60);

/// The names a server started with no `--allow-host` answers to.
const LOOPBACK: &str = "localhost, 127.0.0.1 and [::1]";

/// What the server answers a request for a host it does not serve (`served` lists those it
/// does).
fn foreign_host(host: &str, served: &str) -> Value {
    json!({
        "error": format!(
            "requests for the host `{host}` are refused: this server answers to {served} \
             (--allow-host adds a name)"
        )
    })
}

/// What the server answers a change posted from another origin.
fn foreign_origin(origin: &str) -> Value {
    json!({
        "error": format!(
            "a change from `{origin}` is refused: this server takes changes from its own page only"
        )
    })
}

#[tokio::test]
async fn a_rebound_name_is_refused_and_so_is_a_change_from_another_origin() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    let port = server.port();
    let mut attacker = Browser::new(&server);

    // What a page on rebind.attacker.example sends once its name points at 127.0.0.1.
    let rebound = format!("rebind.attacker.example:{port}");
    for (method, path) in [
        (Method::GET, "/"),
        (Method::GET, "/api/chats"),
        (Method::POST, "/api/chats"),
    ] {
        let (status, body) = attacker
            .json_with(method.clone(), path, None, &[("host", &rebound)])
            .await;
        assert_eq!(
            (status, body),
            (403, foreign_host("rebind.attacker.example", LOOPBACK)),
            "{method} {path}"
        );
    }
    // Without a port, in capitals, or with a trailing dot, it is the same name.
    for host in ["rebind.attacker.example", "REBIND.attacker.example."] {
        let (status, _) = attacker
            .json_with(Method::GET, "/api/state", None, &[("host", host)])
            .await;
        assert_eq!(status, 403, "{host}");
    }
    assert!(user_dirs(data.path()).is_empty(), "no user was made");
    assert_eq!(attacker.cookie, None, "no cookie was handed out");

    // The loopback names are served, with or without the port.
    let mut user = Browser::new(&server);
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "LocalHost".to_owned(),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = user
            .json_with(Method::GET, "/api/state", None, &[("host", &host)])
            .await;
        assert_eq!(status, 200, "{host}: {body}");
    }

    // A change from another origin is refused, whatever its path; one from the page's own
    // origin, or from a client that sends none (curl, scripts), is taken.
    for origin in ["http://evil.example", "null", "http://127.0.0.1:1"] {
        let (status, body) = user
            .json_with(Method::POST, "/api/chats", None, &[("origin", origin)])
            .await;
        assert_eq!((status, body), (403, foreign_origin(origin)), "{origin}");
    }
    assert!(user_dirs(data.path()).is_empty(), "no user was made");
    let own = format!("http://127.0.0.1:{port}");
    let (status, body) = user
        .json_with(Method::POST, "/api/chats", None, &[("origin", &own)])
        .await;
    assert_eq!(status, 201, "{body}");
    let chat = body["id"].as_str().unwrap().to_owned();
    let (status, body) = user
        .json_with(
            Method::PUT,
            &format!("/api/chats/{chat}/tools/roll_dice"),
            Some(json!({ "enabled": false })),
            &[("origin", "http://evil.example")],
        )
        .await;
    assert_eq!((status, body), (403, foreign_origin("http://evil.example")));
    let (status, body) = user
        .json_with(
            Method::POST,
            &format!("/api/chats/{chat}/messages"),
            Some(json!({ "text": "hi" })),
            &[("origin", "http://evil.example")],
        )
        .await;
    assert_eq!((status, body), (403, foreign_origin("http://evil.example")));
    let tools = user.switches(&chat).await;
    assert!(tools.contains(&("roll_dice".to_owned(), true)), "{tools:?}");
    let saved = user.get(&format!("/api/chats/{chat}")).await;
    assert_eq!(saved["messages"], json!([]), "no turn ran");
    assert_eq!(user_dirs(data.path()).len(), 1);
}

#[tokio::test]
async fn allow_host_adds_a_name_the_server_answers_to() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start_with(data.path(), &["--allow-host", "chat.example"], &[]);
    let port = server.port();
    let mut user = Browser::new(&server);
    let host = format!("chat.example:{port}");
    let origin = format!("http://chat.example:{port}");
    let (status, body) = user
        .json_with(
            Method::POST,
            "/api/chats",
            None,
            &[("host", &host), ("origin", &origin)],
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // Other names are still refused.
    let (status, body) = user
        .json_with(
            Method::GET,
            "/api/chats",
            None,
            &[("host", "rebind.attacker.example")],
        )
        .await;
    assert_eq!(
        (status, body),
        (
            403,
            foreign_host(
                "rebind.attacker.example",
                "localhost, 127.0.0.1, [::1] and chat.example"
            )
        )
    );

    // A URL is not a host name: a usage error, not a name that never matches.
    let mut command = example(&[]);
    command.args([
        "--addr",
        "127.0.0.1:0",
        "--allow-host",
        "http://chat.example/",
    ]);
    let output = run_to_exit(command);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`http://chat.example/` is not a host name"),
        "{stderr}"
    );
}

#[tokio::test]
async fn each_user_s_file_tools_see_their_own_folder_only() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start(data.path(), &[]);
    // Ada writes `example` (the offline model's path for every file tool) in her folder.
    let mut ada = Browser::new(&server);
    let chat = ada.new_chat().await;
    let events = ada.send(&chat, "write it").await;
    let write = pending_write(&events);
    let events = ada
        .answer(&chat, json!([{ "id": write["id"], "decision": "approve" }]))
        .await;
    assert_eq!(result_of(&events, "write_file")["kind"], "success");
    assert_eq!(
        scratch_file(data.path(), "example").as_deref(),
        Some("example")
    );
    assert!(!data.path().join("scratch").exists(), "no shared folder");
    // The offline model reads `notes.txt` (the example `read_file`'s schema offers), which
    // every new user's folder holds; Ada's says something of her own.
    let [ada_dir] = user_dirs(data.path()).try_into().unwrap();
    std::fs::write(ada_dir.join("scratch/notes.txt"), "Ada's own notes").unwrap();

    // Bob's `read_file` reads his own notes, not Ada's.
    let mut bob = Browser::new(&server);
    let chat_of_bob = bob.new_chat().await;
    let events = bob.send(&chat_of_bob, "read it").await;
    let read = result_of(&events, "read_file");
    assert_eq!(read["kind"], "success", "{read}");
    assert_eq!(
        read["content"],
        "Buy milk. Call Ada about the tool registry.\n"
    );

    // Ada's reads hers, in her next turn.
    let events = ada.send(&chat, "read it").await;
    assert_eq!(
        (
            result_of(&events, "read_file")["kind"].clone(),
            result_of(&events, "read_file")["content"].clone()
        ),
        (json!("success"), json!("Ada's own notes"))
    );
    assert_eq!(user_dirs(data.path()).len(), 2);
}

/// The permission bits of `path`.
fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn data_folders_are_private_and_not_named_after_the_cookie() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    let server = WebChat::start(&data, &[]);
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;
    let events = user.send(&chat, "write it").await;
    let write = pending_write(&events);
    user.answer(&chat, json!([{ "id": write["id"], "decision": "approve" }]))
        .await;

    let dirs = user_dirs(&data);
    assert_eq!(dirs.len(), 1);
    let dir = &dirs[0];
    for folder in [
        data.clone(),
        data.join("users"),
        dir.clone(),
        dir.join("chats"),
        dir.join("sessions"),
        dir.join("scratch"),
    ] {
        assert_eq!(mode(&folder), 0o700, "{}", folder.display());
    }
    for file in [
        data.join("preferences.db"),
        dir.join("chats").join(format!("{chat}.json")),
        dir.join("sessions").join(format!("{chat}.json")),
        dir.join("scratch").join("example"),
    ] {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }

    // `ls` does not give the cookie away: the folder's name is no part of it, and as a cookie it
    // is not the user.
    let cookie = user.cookie.clone().expect("a cookie");
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert!(!cookie.contains(name), "{cookie} holds {name}");
    let mut thief = Browser::new(&server);
    thief.cookie = Some(format!("webchat_user={name}"));
    let (status, body) = thief.json(Method::GET, "/api/chats", None).await;
    assert_eq!((status, body), (200, json!({ "chats": [] })));
    assert_ne!(
        thief.cookie.as_deref(),
        Some(format!("webchat_user={name}").as_str()),
        "the server handed out a cookie of its own"
    );
}

#[tokio::test]
async fn a_data_folder_of_our_own_is_made_private() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = WebChat::start(&data, &[]);
    assert_eq!(mode(&data), 0o700);
    drop(server);
}

/// Runs the example to its end (it must stop on its own within the deadline).
fn run_to_exit(mut command: Command) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example runs");
    let deadline = Instant::now() + DEADLINE;
    loop {
        if child.try_wait().expect("the example's status").is_some() {
            return child.wait_with_output().expect("the example's output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the example did not stop");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_data_folder_that_belongs_to_someone_else_is_refused() {
    let parent = tempfile::tempdir().unwrap();
    let root = std::fs::metadata("/").unwrap().uid();
    let me = std::fs::metadata(parent.path()).unwrap().uid();
    // Someone else's folder: one given away to `nobody` when these tests run as root, the root
    // folder otherwise.
    let (foreign, owner) = if me == 0 {
        let foreign = parent.path().join("planted");
        std::fs::create_dir(&foreign).unwrap();
        std::os::unix::fs::chown(&foreign, Some(65_534), Some(65_534)).unwrap();
        (foreign, 65_534)
    } else {
        (Path::new("/").to_owned(), root)
    };
    let mut command = example(&[]);
    command
        .args(["--addr", "127.0.0.1:0", "--data"])
        .arg(&foreign);
    let output = run_to_exit(command);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim(),
        format!(
            "the data folder {} belongs to another user (uid {owner}); choose one of your own \
             with --data",
            foreign.display()
        )
    );
    assert!(output.stdout.is_empty(), "it did not listen");
    if me == 0 {
        assert_eq!(
            std::fs::read_dir(&foreign).unwrap().count(),
            0,
            "nothing was written in it"
        );
    }
}

#[tokio::test]
async fn user_ids_come_from_the_server_and_creation_is_capped() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start_with(data.path(), &["--max-users", "2", "--max-chats", "2"], &[]);
    // A made-up cookie is not taken: the server hands out one of its own and makes no folder
    // of the made-up name.
    let mut first = Browser::new(&server);
    let made_up = "webchat_user=aaaaaaaaaaaaaaaaaaaaaaaa";
    first.cookie = Some(made_up.to_owned());
    first.new_chat().await;
    assert_ne!(first.cookie.as_deref(), Some(made_up));
    assert!(!data.path().join("users/aaaaaaaaaaaaaaaaaaaaaaaa").exists());

    // Two chats each, then a clear refusal.
    first.new_chat().await;
    let (status, body) = first.json(Method::POST, "/api/chats", None).await;
    assert_eq!(
        (status, body),
        (
            429,
            json!({"error": "you have 2 chats, the most this server allows (--max-chats)"})
        )
    );
    assert_eq!(
        first.get("/api/chats").await["chats"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Two users, then a clear refusal; reading makes no user.
    let mut second = Browser::new(&server);
    second.new_chat().await;
    let mut third = Browser::new(&server);
    assert_eq!(third.get("/api/chats").await, json!({ "chats": [] }));
    let (status, body) = third.json(Method::POST, "/api/chats", None).await;
    assert_eq!(
        (status, body),
        (
            429,
            json!({"error": "this server has 2 users, the most it allows (--max-users)"})
        )
    );
    assert_eq!(user_dirs(data.path()).len(), 2);

    // The caps hold after a restart, which restores both users.
    drop(server);
    let server = WebChat::start_with(data.path(), &["--max-users", "2", "--max-chats", "2"], &[]);
    let mut third = Browser::new(&server);
    let (status, _) = third.json(Method::POST, "/api/chats", None).await;
    assert_eq!(status, 429);
    let mut first = first.against(&server);
    assert_eq!(
        first.get("/api/chats").await["chats"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let (status, _) = first.json(Method::POST, "/api/chats", None).await;
    assert_eq!(status, 429);
}

#[tokio::test]
async fn a_configured_alias_of_write_file_asks_before_it_writes() {
    let data = tempfile::tempdir().unwrap();
    let server = WebChat::start_with_example_tools(data.path());
    let mut user = Browser::new(&server);
    let chat = user.new_chat().await;
    // `write_note` runs the built-in `write_file` under another name; it starts switched off.
    user.switch(&chat, "write_note", true).await;
    let events = user.send(&chat, "take a note").await;
    let waiting: Vec<&str> = events
        .iter()
        .filter(|(name, _)| name == "approval_requested")
        .map(|(_, data)| data["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(waiting, ["write_file", "write_note"]);
    assert_eq!(
        scratch_file(data.path(), "example"),
        None,
        "nothing written yet"
    );
    let saved = user.get(&format!("/api/chats/{chat}")).await;
    let ids: Vec<Value> = saved["pending_approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|request| json!({ "id": request["id"], "decision": "deny" }))
        .collect();
    let events = user.answer(&chat, Value::Array(ids)).await;
    assert_eq!(result_of(&events, "write_note")["kind"], "denied");
    assert_eq!(
        scratch_file(data.path(), "example"),
        None,
        "nothing written"
    );
}
