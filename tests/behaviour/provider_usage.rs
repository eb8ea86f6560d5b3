//! Token counts with prompt caching and reasoning, normalised to one meaning for every
//! provider, streamed and not, and summed over an agent's turn.

use tool_core::{
    Agent, AgentEvent, AgentOptions,
    model::{ChatModel, ChatRequest, Message, Usage},
};

use std::time::Duration;

use futures::StreamExt as _;

use crate::{
    loopback::{Reply, Server, question_about, stream_once},
    provider_anthropic::client as anthropic,
    provider_gemini::client as gemini,
    provider_ollama::client as ollama,
    provider_openai::client as openai,
};

fn question() -> ChatRequest {
    ChatRequest::new(question_about("Paris"))
}

/// The usage of a non-streamed answer to `reply`.
async fn chat_usage<M: ChatModel>(reply: Reply, connect: impl FnOnce(&Server) -> M) -> Usage {
    let server = Server::start(vec![reply]).await;
    let response = connect(&server).chat(question()).await.unwrap();
    response.usage.expect("the answer reports usage")
}

#[tokio::test]
async fn anthropic_stream_counts_cache_reads_in_the_input() {
    let (out, _server) = stream_once(
        Reply::sse(include_bytes!(
            "../transcripts/anthropic/cached_tool_use.sse"
        )),
        question(),
        anthropic,
    )
    .await;
    out.done();
    // 3 uncached input tokens, 412 read from the cache; `message_delta` repeats the input
    // counts beside the final output count.
    let usage = out.usage().unwrap();
    assert_eq!(usage, Usage::new(415, 48).with_cache_read_tokens(412));
    assert_eq!(usage.total_input_tokens(), 415);
    assert_eq!(usage.uncached_input_tokens(), 3);
}

#[tokio::test]
async fn anthropic_stream_keeps_the_start_cache_counts_when_the_delta_has_only_output() {
    let (out, _server) = stream_once(
        Reply::sse(include_bytes!(
            "../transcripts/anthropic/cached_final_answer.sse"
        )),
        question(),
        anthropic,
    )
    .await;
    assert_eq!(out.text(), "That file does not exist.");
    assert_eq!(
        out.usage(),
        Some(
            Usage::new(475, 20)
                .with_cache_read_tokens(412)
                .with_cache_write_tokens(61)
        )
    );
}

#[tokio::test]
async fn anthropic_chat_counts_cache_writes_in_the_input() {
    let usage = chat_usage(
        Reply::json(include_bytes!(
            "../transcripts/anthropic/message_cache_write.json"
        )),
        anthropic,
    )
    .await;
    assert_eq!(usage, Usage::new(1204, 35).with_cache_write_tokens(1200));
    assert_eq!(usage.uncached_input_tokens(), 4);
    assert_eq!(usage.total_tokens(), 1239);
}

#[tokio::test]
async fn openai_stream_reports_cached_and_reasoning_tokens() {
    let (out, _server) = stream_once(
        Reply::sse(include_bytes!("../transcripts/openai/cached_reasoning.sse")),
        question(),
        openai,
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("Paris."));
    // OpenAI's prompt count already includes the cached tokens, and its completion count the
    // reasoning tokens.
    let usage = out.usage().unwrap();
    assert_eq!(
        usage,
        Usage::new(1250, 340)
            .with_cache_read_tokens(1152)
            .with_reasoning_tokens(256)
    );
    assert_eq!(usage.total_tokens(), 1590);
    assert_eq!(usage.uncached_input_tokens(), 98);
}

#[tokio::test]
async fn openai_chat_reports_cached_and_reasoning_tokens() {
    let usage = chat_usage(
        Reply::json(include_bytes!(
            "../transcripts/openai/completion_cached_reasoning.json"
        )),
        openai,
    )
    .await;
    assert_eq!(
        usage,
        Usage::new(2006, 150)
            .with_cache_read_tokens(1920)
            .with_reasoning_tokens(128)
    );
}

#[tokio::test]
async fn openai_compatible_reasoning_counted_beside_completion_is_added_to_the_output() {
    let (out, _server) = stream_once(
        Reply::sse(include_bytes!(
            "../transcripts/openai/reasoning_beside_completion.sse"
        )),
        question(),
        openai,
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("Paris."));
    // total_tokens 150 = 90 prompt + 12 completion + 48 reasoning: the server counted the
    // reasoning outside `completion_tokens`.
    let usage = out.usage().unwrap();
    assert_eq!(
        usage,
        Usage::new(90, 60)
            .with_cache_read_tokens(64)
            .with_reasoning_tokens(48)
    );
    assert_eq!(usage.total_tokens(), 150);
}

#[tokio::test]
async fn gemini_stream_reports_cached_content_and_thoughts() {
    let (out, _server) = stream_once(
        Reply::sse(include_bytes!("../transcripts/gemini/cached_thoughts.sse")),
        question(),
        gemini,
    )
    .await;
    assert_eq!(out.done().0, &Message::assistant("Paris."));
    // 12 answer tokens and 85 thought tokens are the output; the thoughts are its reasoning.
    let usage = out.usage().unwrap();
    assert_eq!(
        usage,
        Usage::new(2100, 97)
            .with_cache_read_tokens(2048)
            .with_reasoning_tokens(85)
    );
    assert_eq!(usage.total_tokens(), 2197);
}

#[tokio::test]
async fn gemini_chat_reports_cached_content_and_thoughts() {
    let usage = chat_usage(
        Reply::json(include_bytes!(
            "../transcripts/gemini/unary_cached_content.json"
        )),
        gemini,
    )
    .await;
    assert_eq!(
        usage,
        Usage::new(4120, 43)
            .with_cache_read_tokens(4096)
            .with_reasoning_tokens(40)
    );
    assert_eq!(usage.total_tokens(), 4163);
}

#[tokio::test]
async fn ollama_reports_prompt_and_eval_counts_streamed_and_not() {
    let (out, _server) = stream_once(
        Reply::ndjson(include_bytes!("../transcripts/ollama/text.ndjson")),
        question(),
        ollama,
    )
    .await;
    assert_eq!(out.usage(), Some(Usage::new(169, 15)));

    let usage = chat_usage(
        Reply::json(include_bytes!("../transcripts/ollama/chat_tool_call.json")),
        ollama,
    )
    .await;
    assert_eq!(usage, Usage::new(122, 33));
}

#[test]
fn usage_adds_every_count_and_saturates() {
    let a = Usage::new(10, 5)
        .with_cache_read_tokens(4)
        .with_cache_write_tokens(3)
        .with_reasoning_tokens(2);
    let b = Usage::new(100, 50)
        .with_cache_read_tokens(40)
        .with_cache_write_tokens(30)
        .with_reasoning_tokens(20);
    let expected = Usage::new(110, 55)
        .with_cache_read_tokens(44)
        .with_cache_write_tokens(33)
        .with_reasoning_tokens(22);
    assert_eq!(a + b, expected);
    let mut sum = a;
    sum += b;
    assert_eq!(sum, expected);
    assert_eq!([a, b].into_iter().sum::<Usage>(), expected);
    assert_eq!(
        Usage::new(u64::MAX, 1) + Usage::new(1, 1),
        Usage::new(u64::MAX, 2)
    );
}

#[test]
fn usage_serialized_before_the_breakdown_existed_still_loads() {
    let old: Usage = serde_json::from_str(r#"{"input_tokens": 7, "output_tokens": 2}"#).unwrap();
    assert_eq!(old, Usage::new(7, 2));
    let text = serde_json::to_string(&Usage::new(7, 2)).unwrap();
    assert_eq!(text, r#"{"input_tokens":7,"output_tokens":2}"#);
}

/// The non-streamed answers of a two-step Anthropic turn that reads and writes the cache: a
/// tool call, then the final answer.
pub(crate) fn whole_cached_turn() -> Vec<Reply> {
    vec![
        Reply::json(include_bytes!(
            "../transcripts/anthropic/message_cached_tool_use.json"
        )),
        Reply::json(include_bytes!(
            "../transcripts/anthropic/message_cache_write.json"
        )),
    ]
}

fn cached_turn() -> Vec<Reply> {
    vec![
        Reply::sse(include_bytes!(
            "../transcripts/anthropic/cached_tool_use.sse"
        )),
        Reply::sse(include_bytes!(
            "../transcripts/anthropic/cached_final_answer.sse"
        )),
    ]
}

/// Streamed step 1 (415 in, 412 of them cached; 48 out) plus step 2 (475 in, 412 cached and
/// 61 written; 20 out).
fn cached_turn_usage() -> Usage {
    Usage::new(890, 68)
        .with_cache_read_tokens(824)
        .with_cache_write_tokens(61)
}

#[tokio::test]
async fn agent_chat_sums_every_count_over_the_steps_of_a_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(whole_cached_turn()).await;
    let agent = Agent::new(anthropic(&server), AgentOptions::new().root_dir(dir.path()));

    let response = tokio::time::timeout(
        Duration::from_secs(30),
        agent.chat("What is in missing.txt?"),
    )
    .await
    .expect("the turn finished")
    .unwrap();

    assert_eq!(response.text, "Noted.");
    assert_eq!(response.steps, 2);
    // Step 1: 3 uncached + 412 read, 48 out. Step 2: 4 uncached + 1200 written, 35 out.
    assert_eq!(
        response.usage,
        Some(
            Usage::new(1619, 83)
                .with_cache_read_tokens(412)
                .with_cache_write_tokens(1200)
        )
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn agent_stream_reports_each_step_and_the_turn_sum() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(cached_turn()).await;
    let agent = Agent::new(anthropic(&server), AgentOptions::new().root_dir(dir.path()));

    let mut stream = agent.stream_chat("What is in missing.txt?");
    let mut steps = Vec::new();
    let mut done = None;
    // Bounded: a turn of two steps yields a few dozen events.
    for _ in 0..200 {
        let next = tokio::time::timeout(Duration::from_secs(30), stream.next());
        match next.await.expect("the stream went on") {
            Some(Ok(AgentEvent::Usage(usage))) => steps.push(usage),
            Some(Ok(AgentEvent::Done(response))) => done = Some(response),
            Some(Ok(_)) => {}
            Some(Err(error)) => panic!("the turn failed: {error}"),
            None => break,
        }
    }

    assert_eq!(
        steps,
        [
            Usage::new(415, 48).with_cache_read_tokens(412),
            Usage::new(475, 20)
                .with_cache_read_tokens(412)
                .with_cache_write_tokens(61),
        ]
    );
    let response = done.expect("the turn finished");
    assert_eq!(response.usage, Some(cached_turn_usage()));
    assert_eq!(steps.into_iter().sum::<Usage>(), cached_turn_usage());
}
