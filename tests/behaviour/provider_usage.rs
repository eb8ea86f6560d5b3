//! Token counts added up, and summed over an agent's turn. Each wire's counts, with prompt
//! caching and reasoning normalised to one meaning, streamed and not, are a scenario of
//! `provider_scenarios` (`token_counts_have_one_meaning`).

use tool_core::{Agent, AgentEvent, AgentOptions, model::Usage};

use std::time::Duration;

use futures::StreamExt as _;

use crate::{
    loopback::{Reply, Server},
    provider_wires::{self, client},
};

#[test]
fn usage_adds_every_count_and_saturates() {
    let a = Usage::new(10, 5)
        .cache_read_tokens(4)
        .cache_write_tokens(3)
        .reasoning_tokens(2);
    let b = Usage::new(100, 50)
        .cache_read_tokens(40)
        .cache_write_tokens(30)
        .reasoning_tokens(20);
    let expected = Usage::new(110, 55)
        .cache_read_tokens(44)
        .cache_write_tokens(33)
        .reasoning_tokens(22);
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
        .cache_read_tokens(824)
        .cache_write_tokens(61)
}

#[tokio::test]
async fn agent_chat_sums_every_count_over_the_steps_of_a_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(whole_cached_turn()).await;
    let agent = Agent::new(
        client(provider_wires::anthropic)(&server),
        AgentOptions::new().root_dir(dir.path()),
    );

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
                .cache_read_tokens(412)
                .cache_write_tokens(1200)
        )
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn agent_stream_reports_each_step_and_the_turn_sum() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(cached_turn()).await;
    let agent = Agent::new(
        client(provider_wires::anthropic)(&server),
        AgentOptions::new().root_dir(dir.path()),
    );

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
            Usage::new(415, 48).cache_read_tokens(412),
            Usage::new(475, 20)
                .cache_read_tokens(412)
                .cache_write_tokens(61),
        ]
    );
    let response = done.expect("the turn finished");
    assert_eq!(response.usage, Some(cached_turn_usage()));
    assert_eq!(steps.into_iter().sum::<Usage>(), cached_turn_usage());
}
