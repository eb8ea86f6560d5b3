//! Properties of the five stream decoders over the project's own transcripts
//! (`tests/transcripts/<wire>/`), whatever the chunking, and on damaged input.

use std::collections::HashMap;

use bytes::Bytes;
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::json;

use super::{
    ModelEvent, ModelStream,
    anthropic::Messages,
    gemini::GenerateContent,
    ollama::OllamaChat,
    openai::ChatCompletions,
    responses::Responses,
    wire::{client::decode_stream, framing},
};
use crate::message::Message;

const OPENAI: &[&[u8]] = &[
    include_bytes!("../../../tests/transcripts/openai/calls_all_index_0.sse"),
    include_bytes!("../../../tests/transcripts/openai/empty_choices.sse"),
    include_bytes!("../../../tests/transcripts/openai/error_event.sse"),
    include_bytes!("../../../tests/transcripts/openai/error_mid_stream.sse"),
    include_bytes!("../../../tests/transcripts/openai/final_answer.sse"),
    include_bytes!("../../../tests/transcripts/openai/id_then_name.sse"),
    include_bytes!("../../../tests/transcripts/openai/index_starts_at_1.sse"),
    include_bytes!("../../../tests/transcripts/openai/length.sse"),
    include_bytes!("../../../tests/transcripts/openai/no_done_marker.sse"),
    include_bytes!("../../../tests/transcripts/openai/parallel_tool_calls.sse"),
    include_bytes!("../../../tests/transcripts/openai/refusal.sse"),
    include_bytes!("../../../tests/transcripts/openai/text.sse"),
    include_bytes!("../../../tests/transcripts/openai/tool_call.sse"),
    include_bytes!("../../../tests/transcripts/openai/truncated.sse"),
    include_bytes!("../../../tests/transcripts/openai/whole_call_with_finish.sse"),
];
const RESPONSES: &[&[u8]] = &[
    include_bytes!("../../../tests/transcripts/responses/cached_reasoning.sse"),
    include_bytes!("../../../tests/transcripts/responses/content_filter.sse"),
    include_bytes!("../../../tests/transcripts/responses/error_mid_stream.sse"),
    include_bytes!("../../../tests/transcripts/responses/failed.sse"),
    include_bytes!("../../../tests/transcripts/responses/final_answer.sse"),
    include_bytes!("../../../tests/transcripts/responses/incomplete.sse"),
    include_bytes!("../../../tests/transcripts/responses/llama_server_tool_call.sse"),
    include_bytes!("../../../tests/transcripts/responses/parallel_tool_calls.sse"),
    include_bytes!("../../../tests/transcripts/responses/reasoning_tool_call.sse"),
    include_bytes!("../../../tests/transcripts/responses/refusal.sse"),
    include_bytes!("../../../tests/transcripts/responses/text.sse"),
    include_bytes!("../../../tests/transcripts/responses/tool_call.sse"),
    include_bytes!("../../../tests/transcripts/responses/truncated.sse"),
];
const ANTHROPIC: &[&[u8]] = &[
    include_bytes!("../../../tests/transcripts/anthropic/data_only_error.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/data_only_text.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/error_mid_stream.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/final_answer.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/max_tokens_in_tool_input.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/no_arguments.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/parallel_tool_use.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/refusal.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/server_tool.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/text.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/tool_use.sse"),
    include_bytes!("../../../tests/transcripts/anthropic/truncated.sse"),
];
const GEMINI: &[&[u8]] = &[
    include_bytes!("../../../tests/transcripts/gemini/calls_with_ids.sse"),
    include_bytes!("../../../tests/transcripts/gemini/error_event.sse"),
    include_bytes!("../../../tests/transcripts/gemini/error_mid_stream.sse"),
    include_bytes!("../../../tests/transcripts/gemini/final_answer.sse"),
    include_bytes!("../../../tests/transcripts/gemini/function_call.sse"),
    include_bytes!("../../../tests/transcripts/gemini/parallel_calls.sse"),
    include_bytes!("../../../tests/transcripts/gemini/partial_args.sse"),
    include_bytes!("../../../tests/transcripts/gemini/safety.sse"),
    include_bytes!("../../../tests/transcripts/gemini/text.sse"),
    include_bytes!("../../../tests/transcripts/gemini/truncated.sse"),
];
const OLLAMA: &[&[u8]] = &[
    include_bytes!("../../../tests/transcripts/ollama/call_in_done_line.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/calls_with_ids.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/content_in_done_line.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/error_after_200.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/final_answer.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/length.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/parallel_calls.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/text.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/tool_call.ndjson"),
    include_bytes!("../../../tests/transcripts/ollama/truncated.ndjson"),
];

type Decode = fn(futures::stream::Iter<std::vec::IntoIter<Result<Bytes, String>>>) -> ModelStream;

const WIRES: [(&str, Decode, &[&[u8]]); 5] = [
    ("openai", decode_stream::<ChatCompletions, _, _, _>, OPENAI),
    ("responses", decode_stream::<Responses, _, _, _>, RESPONSES),
    ("anthropic", decode_stream::<Messages, _, _, _>, ANTHROPIC),
    ("gemini", decode_stream::<GenerateContent, _, _, _>, GEMINI),
    ("ollama", decode_stream::<OllamaChat, _, _, _>, OLLAMA),
];

/// What a stream yields: its events with ids renamed in order of appearance (Ollama and
/// Gemini calls get fresh ids on every run), then its error text, if any.
#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<ModelEvent>,
    error: Option<String>,
}

/// Decodes `chunks`, failing if the stream yields more items than the input could justify
/// or goes on after an error.
fn outcome(decode: Decode, chunks: Vec<Bytes>) -> Outcome {
    let bound = chunks.iter().map(Bytes::len).sum::<usize>() * 2 + 16;
    let body: Vec<Result<Bytes, String>> = chunks.into_iter().map(Ok).collect();
    let mut stream = decode(futures::stream::iter(body));
    let mut ids = HashMap::new();
    let mut events = Vec::new();
    let mut error = None;
    futures::executor::block_on(async {
        for _ in 0..bound {
            match stream.next().await {
                Some(Ok(event)) => events.push(renamed(event, &mut ids)),
                Some(Err(failure)) => {
                    error = Some(failure.to_string());
                    assert!(stream.next().await.is_none(), "items after the error");
                    return;
                }
                None => return,
            }
        }
        panic!("more than {bound} items");
    });
    let dones = events
        .iter()
        .filter(|event| matches!(event, ModelEvent::Done { .. }))
        .count();
    assert!(dones <= 1, "{dones} Done events");
    if dones == 1 {
        assert!(matches!(events.last(), Some(ModelEvent::Done { .. })));
        assert!(error.is_none());
    }
    Outcome { events, error }
}

fn renamed(mut event: ModelEvent, ids: &mut HashMap<String, String>) -> ModelEvent {
    let mut rename = |id: &mut String| {
        let next = format!("id{}", ids.len());
        let renamed = ids.entry(std::mem::take(id)).or_insert(next);
        id.clone_from(renamed);
    };
    match &mut event {
        ModelEvent::ToolCallStarted(start) => rename(&mut start.id),
        ModelEvent::ToolCallFinished { call, .. } => rename(&mut call.id),
        ModelEvent::Done {
            message: Message::Assistant { tool_calls, .. },
            ..
        } => tool_calls.iter_mut().for_each(|call| rename(&mut call.id)),
        _ => {}
    }
    event
}

/// `body` cut at the given points (positions are taken modulo the length, and sorted).
fn split(body: &[u8], points: &[usize]) -> Vec<Bytes> {
    let mut points: Vec<usize> = points.iter().map(|p| p % (body.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut at = 0;
    for point in points.into_iter().chain([body.len()]) {
        chunks.push(Bytes::copy_from_slice(&body[at..point]));
        at = point;
    }
    chunks
}

fn transcript() -> impl Strategy<Value = (usize, usize)> {
    (0..WIRES.len()).prop_flat_map(|wire| (Just(wire), 0..WIRES[wire].2.len()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn any_chunking_gives_the_events_of_the_whole_body(
        (wire, index) in transcript(),
        points in prop::collection::vec(any::<usize>(), 0..24),
    ) {
        let (name, decode, bodies) = WIRES[wire];
        let body = bodies[index];
        let whole = outcome(decode, vec![Bytes::from_static(body)]);
        let chunked = outcome(decode, split(body, &points));
        prop_assert_eq!(chunked, whole, "{} transcript {}", name, index);
    }

    #[test]
    fn damaged_transcripts_end_with_events_or_an_error(
        (wire, index) in transcript(),
        cut in any::<usize>(),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        points in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let (_, decode, bodies) = WIRES[wire];
        let mut body = bodies[index].to_vec();
        body.truncate(cut % (body.len() + 1));
        for (at, byte) in flips {
            if !body.is_empty() {
                let at = at % body.len();
                body[at] = byte;
            }
        }
        let out = outcome(decode, split(&body, &points));
        let done = matches!(out.events.last(), Some(ModelEvent::Done { .. }));
        prop_assert!(done || out.error.is_some());
    }

    #[test]
    fn arbitrary_bytes_never_panic_or_hang(
        wire in 0..WIRES.len(),
        body in prop::collection::vec(any::<u8>(), 0..512),
        points in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let out = outcome(WIRES[wire].1, split(&body, &points));
        let done = matches!(out.events.last(), Some(ModelEvent::Done { .. }));
        prop_assert!(done || out.error.is_some());
    }
}

/// One `write_file` call whose 1 MB arguments come in a single event, on `wire`.
fn one_large_call(wire: &str, arguments: &str) -> String {
    let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    match wire {
        "openai" => {
            let call = json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [{
                "index": 0, "id": "call_1", "type": "function",
                "function": { "name": "write_file", "arguments": arguments } }] } }] });
            let finish =
                json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] });
            format!("data: {call}\n\ndata: {finish}\n\ndata: [DONE]\n\n")
        }
        "responses" => {
            let item = |arguments: &str| {
                json!({ "id": "fc_1", "type": "function_call", "call_id": "call_1",
                    "name": "write_file", "arguments": arguments })
            };
            let events = [
                json!({ "type": "response.output_item.added", "output_index": 0, "item": item("") }),
                json!({ "type": "response.function_call_arguments.delta", "output_index": 0,
                    "item_id": "fc_1", "delta": arguments }),
                json!({ "type": "response.function_call_arguments.done", "output_index": 0,
                    "item_id": "fc_1", "arguments": arguments }),
                json!({ "type": "response.output_item.done", "output_index": 0, "item": item(arguments) }),
                json!({ "type": "response.completed", "response": { "status": "completed",
                    "output": [item(arguments)] } }),
            ];
            events.iter().fold(String::new(), |body, event| {
                body + "data: " + &event.to_string() + "\n\n"
            })
        }
        "anthropic" => {
            let start = json!({ "type": "content_block_start", "index": 0, "content_block":
                { "type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {} } });
            let delta = json!({ "type": "content_block_delta", "index": 0,
                "delta": { "type": "input_json_delta", "partial_json": arguments } });
            let stop = json!({ "type": "content_block_stop", "index": 0 });
            let end = json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" } });
            format!(
                "data: {start}\n\ndata: {delta}\n\ndata: {stop}\n\ndata: {end}\n\n\
                 data: {{\"type\":\"message_stop\"}}\n\n"
            )
        }
        "gemini" => {
            let response = json!({ "candidates": [{ "index": 0, "finishReason": "STOP",
                "content": { "parts": [{ "functionCall": { "name": "write_file", "args": args } }] } }] });
            format!("data: {response}\r\n\r\n")
        }
        _ => {
            let line = json!({ "message": { "role": "assistant", "content": "",
                "tool_calls": [{ "function": { "name": "write_file", "arguments": args } }] },
                "done": true, "done_reason": "stop" });
            format!("{line}\n")
        }
    }
}

/// The bytes of text and arguments the events carry.
fn payload(events: &[ModelEvent]) -> usize {
    events
        .iter()
        .map(|event| match event {
            ModelEvent::TextDelta(text) => text.len(),
            ModelEvent::ToolCallDelta { arguments, .. } => arguments.len(),
            ModelEvent::ToolCallFinished { call, .. } => call.arguments.len(),
            ModelEvent::Done {
                message:
                    Message::Assistant {
                        content,
                        tool_calls,
                        ..
                    },
                ..
            } => content.len() + tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>(),
            _ => 0,
        })
        .sum()
}

#[test]
fn one_large_event_costs_linear_work_on_every_wire() {
    let content = "a \"quoted\" back\\slash, café\n".repeat(1 << 20 >> 5);
    let arguments = json!({ "content": content, "path": "big.txt" }).to_string();
    for (name, decode, _) in WIRES {
        let body = Bytes::from(one_large_call(name, &arguments));
        for size in [1, 1024, 16 * 1024] {
            let chunks: Vec<Bytes> = (0..body.len())
                .step_by(size)
                .map(|at| body.slice(at..(at + size).min(body.len())))
                .collect();
            // The framer: bytes scanned and copied.
            let pieces = chunks
                .iter()
                .cloned()
                .map(Ok::<_, String>)
                .collect::<Vec<_>>();
            let mut frames = match name {
                "ollama" => framing::ndjson(futures::stream::iter(pieces)),
                _ => framing::sse(futures::stream::iter(pieces)),
            };
            while futures::executor::block_on(frames.next()).is_some() {}
            let work = frames.work();
            assert!(
                work <= 6 * body.len(),
                "{name}, {size}-byte chunks: framing work {work} for {} bytes",
                body.len()
            );
            // The decoder: each argument byte reaches the events a bounded number of times
            // (a delta, the call's end, the final message).
            let out = outcome(decode, chunks);
            assert_eq!(out.error, None, "{name}");
            let carried = payload(&out.events);
            assert!(
                carried <= 4 * body.len(),
                "{name}, {size}-byte chunks: {carried} bytes of events for {}",
                body.len()
            );
            let Some(ModelEvent::Done {
                message: Message::Assistant { tool_calls, .. },
                ..
            }) = out.events.last()
            else {
                panic!("{name}: no Done");
            };
            assert_eq!(tool_calls.len(), 1, "{name}");
            assert_eq!(tool_calls[0].arguments, arguments, "{name}");
        }
    }
}
