//! The tools a search loaded are part of the conversation: saved with it in every store,
//! restored on resume, and still offered when another provider's model takes the conversation
//! over.

use std::time::Duration;

use serde_json::Value;
use tool_core::{
    Agent, AgentOptions,
    context::SavedConversation,
    model::{ScriptedModel, ScriptedResponse},
    store::ConversationKey,
};

use crate::{
    store_support::{Backend, Stores},
    tool_choice::{ALL, link},
    tool_search::{names, registry, search},
};

/// An agent that searched for `query` and answered: the tool found is loaded.
async fn searched(query: &str) -> Agent {
    let model = ScriptedModel::new([search("s1", query), ScriptedResponse::text("Ready.")]);
    let agent = Agent::new(
        model,
        AgentOptions::new().registry(registry()).search_results(1),
    );
    agent.chat("get ready").await.unwrap();
    agent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_loaded_tools_are_saved_and_resumed_on_every_store() {
    for backend in [
        Backend::Memory,
        Backend::File,
        Backend::Sqlite,
        Backend::Postgres,
    ] {
        let Some(stores) = Stores::new(backend).await else {
            continue;
        };
        let first = searched("send an email").await;
        assert_eq!(first.loaded_tools(), ["send_email"]);
        assert_eq!(first.conversation().loaded_tools, ["send_email"]);
        let key = ConversationKey::new("alice", "monday").unwrap();
        let saved = SavedConversation::new("end of day", first.conversation());
        stores
            .conversations()
            .await
            .save(&key, &saved)
            .await
            .unwrap();
        drop(first);

        // A restarted process opens the store anew and resumes the conversation.
        let loaded = stores
            .conversations()
            .await
            .load(&key)
            .await
            .unwrap()
            .expect("the conversation is stored");
        assert_eq!(loaded, saved, "{backend:?}");
        let model = ScriptedModel::new([ScriptedResponse::text("Sent.")]);
        let resumed = Agent::new(model.clone(), AgentOptions::new().registry(registry()));
        resumed.context().replace(loaded.context);
        assert_eq!(resumed.loaded_tools(), ["send_email"], "{backend:?}");
        resumed.chat("send it").await.unwrap();
        assert_eq!(
            names(&model.requests()[0]),
            ["get_time", "search_tools", "send_email"],
            "{backend:?}"
        );

        // A new conversation starts with nothing loaded.
        resumed.clear_context();
        assert!(resumed.loaded_tools().is_empty());
        assert!(resumed.conversation().loaded_tools.is_empty());
    }
}

#[tokio::test]
async fn a_resumed_session_file_brings_its_loaded_tools_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.json");
    let first = searched("weather forecast city").await;
    let saved = SavedConversation::new("later", first.conversation());
    std::fs::write(&path, serde_json::to_string_pretty(&saved).unwrap()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let document: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        document["loaded_tools"],
        serde_json::json!(["weather_forecast"])
    );

    let model = ScriptedModel::new([ScriptedResponse::text("Sunny.")]);
    let resumed = Agent::resume(
        model.clone(),
        AgentOptions::new().registry(registry()),
        &path,
    )
    .unwrap();
    resumed.chat("weather?").await.unwrap();
    assert_eq!(
        names(&model.requests()[0]),
        ["get_time", "search_tools", "weather_forecast"]
    );
    // Loading another conversation replaces the loaded tools with its own (none here).
    let plain = dir.path().join("plain.json");
    let empty = SavedConversation::new("empty", tool_core::Conversation::default());
    std::fs::write(&plain, serde_json::to_string(&empty).unwrap()).unwrap();
    resumed.load_context(&plain).unwrap();
    assert!(resumed.loaded_tools().is_empty());
}

/// A conversation taken over by another provider's model (a new agent on the same context)
/// keeps offering what was loaded, in every wire's request body.
#[tokio::test]
async fn the_loaded_tools_survive_a_provider_switch_mid_conversation() {
    for provider in ALL {
        let first = searched("translate a text").await;
        let link = link(provider, false).await;
        let second = Agent::with_model(
            link.model.into(),
            AgentOptions::new()
                .registry(registry())
                .context(first.context().clone())
                .max_steps(1),
        );
        assert_eq!(second.loaded_tools(), ["translate_text"]);
        let outcome = tokio::time::timeout(Duration::from_secs(20), second.chat("translate it"))
            .await
            .expect("an answer in time");
        assert!(
            !matches!(outcome, Err(tool_core::AgentError::Model(_))),
            "{provider}: {outcome:?}"
        );
        let requests = link.server.requests();
        let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
        let text = body.to_string();
        if provider == tool_core::Provider::Anthropic {
            // Anthropic's own search: every deferred tool stays deferred, the loaded one too,
            // which the search's reference in the history loads.
            let tools = body["tools"].as_array().unwrap();
            let names: Vec<&str> = tools
                .iter()
                .map(|tool| tool["name"].as_str().unwrap())
                .collect();
            assert_eq!(
                names,
                [
                    "get_time",
                    "tool_search_tool_bm25",
                    "create_directory",
                    "send_email",
                    "weather_forecast",
                    "translate_text"
                ],
                "{text}"
            );
            assert!(
                tools[2..]
                    .iter()
                    .all(|tool| tool["defer_loading"] == Value::Bool(true)),
                "{text}"
            );
            assert_eq!(
                body["messages"][2]["content"][0]["content"],
                serde_json::json!([{ "type": "tool_reference", "tool_name": "translate_text" }]),
                "{text}"
            );
            continue;
        }
        for offered in ["\"get_time\"", "\"search_tools\"", "\"translate_text\""] {
            assert!(
                text.contains(offered),
                "{provider}: {offered} not in {text}"
            );
        }
        assert!(!text.contains("send_email"), "{provider}: {text}");
    }
}

/// A saved document is input: its `loaded_tools` can only bring back deferred tools that exist
/// and are enabled for this session; other names are ignored.
#[tokio::test]
async fn a_saved_loaded_set_never_offers_a_switched_off_or_unknown_tool() {
    let context: tool_core::Conversation = serde_json::from_value(serde_json::json!({
        "system_prompt": "",
        "loaded_tools": ["send_email", "no_such_tool", "get_time", "weather_forecast", "search_tools"]
    }))
    .unwrap();
    let toggles = tool_core::ToolToggles::new();
    toggles.set("send_email", false);
    let model = ScriptedModel::new([ScriptedResponse::text("Hello.")]);
    let agent = Agent::new(
        model.clone(),
        AgentOptions::new().registry(registry()).toggles(toggles),
    );
    agent.context().replace(context);
    agent.chat("hello").await.unwrap();
    assert_eq!(
        names(&model.requests()[0]),
        ["get_time", "search_tools", "weather_forecast"]
    );
}
