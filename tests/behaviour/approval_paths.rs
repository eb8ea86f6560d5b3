//! An approval predicate on a path sees it as the file tools resolve it: `drafts/../notes.txt`
//! is `notes.txt`, outside `drafts/`, so the documented "ask outside drafts/" predicate asks.

use tool_core::{
    Agent, AgentOptions, ToolCall,
    agent::{ApprovalPolicy, resolved_path},
    model::{ScriptedModel, ScriptedResponse},
};

use crate::agent_support::waiting;

#[test]
fn resolved_paths_apply_dots_and_refuse_escapes() {
    let resolved = |path: &str| resolved_path(path).map(|path| path.display().to_string());
    assert_eq!(resolved("drafts/a.txt").as_deref(), Some("drafts/a.txt"));
    assert_eq!(
        resolved("./drafts//b/../a.txt").as_deref(),
        Some("drafts/a.txt")
    );
    assert_eq!(
        resolved("drafts/../notes.txt").as_deref(),
        Some("notes.txt")
    );
    assert_eq!(resolved("drafts/../../x"), None);
    assert_eq!(resolved("../x"), None);
    assert_eq!(resolved("/etc/passwd"), None);
    assert_eq!(resolved(".").as_deref(), Some(""));
}

#[tokio::test]
async fn the_documented_drafts_predicate_asks_for_a_path_that_climbs_out_of_drafts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("drafts")).unwrap();
    std::fs::write(dir.path().join("drafts/a.txt"), "draft").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "secret").unwrap();
    let paths = [
        "drafts/a.txt",
        "./drafts/b/../a.txt",
        "drafts/../notes.txt",
        "drafts/../../notes.txt",
        "/drafts/a.txt",
    ];
    let calls = paths.iter().enumerate().map(|(index, path)| {
        ToolCall::new(
            format!("c{index}"),
            "read_file",
            serde_json::json!({ "path": path }).to_string(),
        )
    });
    let model = ScriptedModel::new([
        ScriptedResponse::tool_calls(calls),
        ScriptedResponse::text("done"),
    ]);
    // The predicate of `ApprovalPolicy`'s documentation: any call with a `path` outside
    // `drafts/`, as the file tools resolve it.
    let policy = ApprovalPolicy::new().when(|_call, arguments| {
        arguments
            .and_then(|args| args.get("path"))
            .is_some_and(|path| {
                !path
                    .as_str()
                    .and_then(resolved_path)
                    .is_some_and(|path| path.starts_with("drafts"))
            })
    });
    let agent = Agent::new(
        model,
        AgentOptions::new().root_dir(dir.path()).approval(policy),
    );
    let pending = waiting(agent.chat("read the drafts").await);
    let asked: Vec<&str> = pending
        .iter()
        .map(|request| &*request.call.arguments)
        .collect();
    assert_eq!(
        asked,
        [
            r#"{"path":"drafts/../notes.txt"}"#,
            r#"{"path":"drafts/../../notes.txt"}"#,
            r#"{"path":"/drafts/a.txt"}"#,
        ]
    );
}
