//! Throughput of each provider's stream decoder (framing, JSON, tool-call accumulation, events)
//! on a large generated stream, against a baseline in the same run: plain `serde_json` parsing
//! of every JSON payload of the same bytes into a `Value`. Also a stream holding one 1 MB tool
//! call in 8-byte fragments, to show accumulation stays linear, and on every wire one
//! `write_file` call whose 5 MB `content` comes in a single event (in Responses, repeated by the
//! events that close the call and the response, as the API sends it), delivered in 1 KB and in
//! 16 KB chunks (framing must not re-scan an unfinished line for every chunk).
//!
//! Run with `cargo bench -p tool-core --bench stream_parsers`; a summary of MB/s, ratios and
//! allocations (count and bytes of one decode, and of one baseline run) is printed at the end.
//! Filter the cases by name as usual (`-- 5mb`).

use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput};
use futures::{StreamExt, executor::block_on};
use serde_json::{Value, json};

#[path = "support/counting.rs"]
mod counting;
mod support;
use counting::allocations;
use tool_core::{
    __bench::{decode_anthropic, decode_gemini, decode_ollama, decode_openai, decode_responses},
    model::{ModelEvent, ModelStream},
};

/// The size of the chunks the body is delivered in (as a socket would).
const CHUNK: usize = 16 * 1024;
/// Text deltas and tool calls per generated stream.
const TEXT_DELTAS: usize = 12_000;
const CALLS: usize = 300;
const FRAGMENTS_PER_CALL: usize = 12;

type Decode =
    fn(futures::stream::Iter<std::vec::IntoIter<Result<Bytes, std::io::Error>>>) -> ModelStream;

struct Case {
    name: String,
    body: Bytes,
    /// The size of the chunks the body is delivered in.
    chunk: usize,
    decode: Decode,
    /// The JSON payloads' framing, for the baseline.
    framing: Framing,
}

#[derive(Clone, Copy)]
enum Framing {
    Sse,
    Ndjson,
}

fn words(i: usize) -> String {
    const WORDS: [&str; 8] = [
        "the ",
        "quick ",
        "brown ",
        "fox ",
        "jumps ",
        "over ",
        "\"lazy\" ",
        "dogs. ",
    ];
    format!("{}{}", WORDS[i % 8], WORDS[(i * 7 + 3) % 8])
}

fn arguments(call: usize) -> String {
    json!({
        "path": format!("notes/\"draft\" {call}.txt"),
        "content": format!("line one\nline two of call {call}, café ünïcödé"),
        "overwrite": call.is_multiple_of(2)
    })
    .to_string()
}

/// Splits `text` into `n` pieces on char boundaries.
fn fragments(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(n);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn sse_line(data: &Value) -> String {
    format!("data: {data}\n\n")
}

fn openai_body(text_deltas: usize, calls: usize, fragments_per_call: usize) -> String {
    let chunk = |delta: Value, finish: Value| {
        sse_line(&json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_731_000_000,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_bench",
            "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }]
        }))
    };
    let mut body = chunk(json!({ "role": "assistant", "content": "" }), Value::Null);
    for i in 0..text_deltas {
        body.push_str(&chunk(json!({ "content": words(i) }), Value::Null));
    }
    for call in 0..calls {
        body.push_str(&chunk(
            json!({ "tool_calls": [{ "index": call, "id": format!("call_{call}"), "type": "function",
                                      "function": { "name": "write_file", "arguments": "" } }] }),
            Value::Null,
        ));
        for fragment in fragments(&arguments(call), fragments_per_call) {
            body.push_str(&chunk(
                json!({ "tool_calls": [{ "index": call, "function": { "arguments": fragment } }] }),
                Value::Null,
            ));
        }
    }
    body.push_str(&chunk(json!({}), json!("tool_calls")));
    body.push_str("data: [DONE]\n\n");
    body
}

/// An OpenAI Responses event, as `event:` and `data:` lines.
fn responses_event(data: &Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap_or_default()
    )
}

/// A Responses `function_call` output item.
fn responses_call(call: usize, arguments: &str, status: &str) -> Value {
    json!({ "id": format!("fc_{call}"), "type": "function_call", "status": status,
            "arguments": arguments, "call_id": format!("call_{call}"), "name": "write_file" })
}

/// The `response.completed` event: the whole output again, and the usage.
fn responses_completed(output: Vec<Value>) -> String {
    responses_event(&json!({ "type": "response.completed", "response": {
        "id": "resp_bench", "object": "response", "status": "completed", "model": "gpt-4o-2024-08-06",
        "output": output, "error": null, "incomplete_details": null,
        "usage": { "input_tokens": 100, "input_tokens_details": { "cached_tokens": 0 },
                   "output_tokens": 5000, "output_tokens_details": { "reasoning_tokens": 0 },
                   "total_tokens": 5100 } } }))
}

fn responses_body() -> String {
    let mut body = responses_event(&json!({ "type": "response.created", "response": {
        "id": "resp_bench", "object": "response", "status": "in_progress", "output": [] } }));
    body.push_str(&responses_event(
        &json!({ "type": "response.output_item.added",
        "output_index": 0, "item": { "id": "msg_bench", "type": "message",
        "status": "in_progress", "content": [], "role": "assistant" } }),
    ));
    let mut text = String::new();
    for i in 0..TEXT_DELTAS {
        let delta = words(i);
        text.push_str(&delta);
        body.push_str(&responses_event(
            &json!({ "type": "response.output_text.delta",
            "item_id": "msg_bench", "output_index": 0, "content_index": 0, "delta": delta }),
        ));
    }
    let message = json!({ "id": "msg_bench", "type": "message", "status": "completed",
        "content": [{ "type": "output_text", "annotations": [], "text": text }], "role": "assistant" });
    body.push_str(&responses_event(
        &json!({ "type": "response.output_text.done",
        "item_id": "msg_bench", "output_index": 0, "content_index": 0, "text": text }),
    ));
    body.push_str(&responses_event(
        &json!({ "type": "response.output_item.done",
        "output_index": 0, "item": message }),
    ));
    let mut output = vec![message];
    for call in 0..CALLS {
        let index = call + 1;
        let arguments = arguments(call);
        body.push_str(&responses_event(
            &json!({ "type": "response.output_item.added",
            "output_index": index, "item": responses_call(call, "", "in_progress") }),
        ));
        for fragment in fragments(&arguments, FRAGMENTS_PER_CALL) {
            body.push_str(&responses_event(
                &json!({ "type": "response.function_call_arguments.delta",
                "item_id": format!("fc_{call}"), "output_index": index, "delta": fragment }),
            ));
        }
        body.push_str(&responses_event(
            &json!({ "type": "response.function_call_arguments.done",
            "item_id": format!("fc_{call}"), "output_index": index, "arguments": arguments }),
        ));
        let item = responses_call(call, &arguments, "completed");
        body.push_str(&responses_event(
            &json!({ "type": "response.output_item.done",
            "output_index": index, "item": item }),
        ));
        output.push(item);
    }
    body.push_str(&responses_completed(output));
    body
}

fn anthropic_body() -> String {
    let event = |data: Value| {
        format!(
            "event: {}\ndata: {data}\n\n",
            data["type"].as_str().unwrap_or_default()
        )
    };
    let mut body = event(json!({ "type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": null, "usage": { "input_tokens": 100, "output_tokens": 1 } } }));
    body.push_str(&event(json!({ "type": "content_block_start", "index": 0,
        "content_block": { "type": "text", "text": "" } })));
    for i in 0..TEXT_DELTAS {
        body.push_str(&event(json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "text_delta", "text": words(i) } })));
    }
    body.push_str(&event(json!({ "type": "content_block_stop", "index": 0 })));
    for call in 0..CALLS {
        let index = call + 1;
        body.push_str(&event(json!({ "type": "content_block_start", "index": index,
            "content_block": { "type": "tool_use", "id": format!("toolu_{call}"), "name": "write_file", "input": {} } })));
        for fragment in fragments(&arguments(call), FRAGMENTS_PER_CALL) {
            body.push_str(&event(
                json!({ "type": "content_block_delta", "index": index,
                "delta": { "type": "input_json_delta", "partial_json": fragment } }),
            ));
        }
        body.push_str(&event(
            json!({ "type": "content_block_stop", "index": index }),
        ));
    }
    body.push_str(&event(json!({ "type": "message_delta",
        "delta": { "stop_reason": "tool_use", "stop_sequence": null }, "usage": { "output_tokens": 5000 } })));
    body.push_str(&event(json!({ "type": "message_stop" })));
    body
}

fn gemini_body() -> String {
    let response = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({ "content": { "parts": parts, "role": "model" }, "index": 0 });
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        format!(
            "data: {}\r\n\r\n",
            json!({ "candidates": [candidate],
                    "usageMetadata": { "promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110 },
                    "modelVersion": "gemini-2.5-flash", "responseId": "bench" })
        )
    };
    let mut body = String::new();
    for i in 0..TEXT_DELTAS {
        body.push_str(&response(json!([{ "text": words(i) }]), None));
    }
    for call in 0..CALLS {
        let args: Value = serde_json::from_str(&arguments(call)).unwrap_or_default();
        body.push_str(&response(
            json!([{ "functionCall": { "name": "write_file", "args": args }, "thoughtSignature": "CiQBcsjafQ2ReVx4lWfK0sg7" }]),
            None,
        ));
    }
    body.push_str(&response(json!([{ "text": "" }]), Some("STOP")));
    body
}

fn ollama_body() -> String {
    let line = |message: Value, done: bool| {
        let mut line = json!({ "model": "llama3.2", "created_at": "2025-07-07T20:22:19.184789Z",
                               "message": message, "done": done });
        if done {
            line["done_reason"] = json!("stop");
            line["prompt_eval_count"] = json!(100);
            line["eval_count"] = json!(5000);
        }
        format!("{line}\n")
    };
    let mut body = String::new();
    for i in 0..TEXT_DELTAS {
        body.push_str(&line(
            json!({ "role": "assistant", "content": words(i) }),
            false,
        ));
    }
    for call in 0..CALLS {
        let args: Value = serde_json::from_str(&arguments(call)).unwrap_or_default();
        body.push_str(&line(
            json!({ "role": "assistant", "content": "",
                    "tool_calls": [{ "function": { "name": "write_file", "arguments": args } }] }),
            false,
        ));
    }
    body.push_str(&line(json!({ "role": "assistant", "content": "" }), true));
    body
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "openai".into(),
            chunk: CHUNK,
            body: Bytes::from(openai_body(TEXT_DELTAS, CALLS, FRAGMENTS_PER_CALL)),
            decode: decode_openai,
            framing: Framing::Sse,
        },
        Case {
            name: "responses".into(),
            chunk: CHUNK,
            body: Bytes::from(responses_body()),
            decode: decode_responses,
            framing: Framing::Sse,
        },
        Case {
            name: "anthropic".into(),
            chunk: CHUNK,
            body: Bytes::from(anthropic_body()),
            decode: decode_anthropic,
            framing: Framing::Sse,
        },
        Case {
            name: "gemini".into(),
            chunk: CHUNK,
            body: Bytes::from(gemini_body()),
            decode: decode_gemini,
            framing: Framing::Sse,
        },
        Case {
            name: "ollama".into(),
            chunk: CHUNK,
            body: Bytes::from(ollama_body()),
            decode: decode_ollama,
            framing: Framing::Ndjson,
        },
    ]
}

fn chunks(case: &Case) -> Vec<Bytes> {
    let (body, size) = (&case.body, case.chunk);
    (0..body.len())
        .step_by(size)
        .map(|at| body.slice(at..(at + size).min(body.len())))
        .collect()
}

/// Decodes the body and checks the answer is complete; returns the number of events.
fn decode(case: &Case, chunks: &[Bytes]) -> usize {
    let chunks: Vec<Result<Bytes, std::io::Error>> = chunks.iter().cloned().map(Ok).collect();
    block_on(async {
        let mut stream = (case.decode)(futures::stream::iter(chunks));
        let mut count = 0;
        let mut done = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(ModelEvent::Done { .. }) => done = true,
                Ok(_) => {}
                Err(error) => panic!("{}: {error}", case.name),
            }
            count += 1;
        }
        assert!(done, "{}: no Done", case.name);
        count
    })
}

/// The baseline: every JSON payload of the same bytes parsed into a `serde_json::Value`.
fn baseline(case: &Case) -> usize {
    let text = std::str::from_utf8(&case.body).unwrap_or_default();
    let mut count = 0;
    for line in text.split('\n') {
        let payload = match case.framing {
            Framing::Sse => match line.trim_end_matches('\r').strip_prefix("data: ") {
                Some(payload) if payload != "[DONE]" => payload,
                _ => continue,
            },
            Framing::Ndjson if !line.is_empty() => line,
            Framing::Ndjson => continue,
        };
        let value: Value = serde_json::from_str(payload).unwrap_or_default();
        count += usize::from(!value.is_null());
    }
    count
}

/// A long tool call's stream: the arguments of one call, ~1 MB, in 8-character fragments
/// (about 130,000 fragments appended to one buffer).
fn long_call_case() -> Case {
    let big: String = (0..40_000)
        .map(|i| format!("\"k{i}\": \"v\\\"{i}\\\"\", "))
        .collect();
    let arguments = format!("{{{big}\"end\": true}}");
    let chunk = |delta: Value, finish: Value| {
        sse_line(
            &json!({ "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                          "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] }),
        )
    };
    let mut body = chunk(
        json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": "call_long", "type": "function",
                 "function": { "name": "write_file", "arguments": "" } }] }),
        Value::Null,
    );
    let chars: Vec<char> = arguments.chars().collect();
    for piece in chars.chunks(8) {
        let piece: String = piece.iter().collect();
        body.push_str(&chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": piece } }] }),
            Value::Null,
        ));
    }
    body.push_str(&chunk(json!({}), json!("tool_calls")));
    body.push_str("data: [DONE]\n\n");
    Case {
        name: "openai_one_long_call".into(),
        chunk: CHUNK,
        body: Bytes::from(body),
        decode: decode_openai,
        framing: Framing::Sse,
    }
}

/// The arguments of a `write_file` call whose `content` is 5 MB of text with escapes.
fn big_arguments() -> String {
    let line = "line \"quoted\" with a back\\slash, tab\t and café ünïcödé\n";
    let content = line.repeat(5 * 1024 * 1024 / line.len() + 1);
    json!({ "path": "big.txt", "content": content }).to_string()
}

/// One 5 MB call in a single event on each wire, in 1 KB and 16 KB chunks.
fn big_call_cases() -> Vec<Case> {
    let arguments = big_arguments();
    let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
    let openai = {
        let call = json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [{ "index": 0,
            "id": "call_big", "type": "function",
            "function": { "name": "write_file", "arguments": arguments } }] } }] });
        let finish =
            json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] });
        format!("data: {call}\n\ndata: {finish}\n\ndata: [DONE]\n\n")
    };
    // As the Responses API streams it: the arguments in one delta, then again in the
    // arguments' `.done`, the item's `.done` and `response.completed`.
    let responses = {
        let events = [
            json!({ "type": "response.output_item.added", "output_index": 0,
                    "item": responses_call(0, "", "in_progress") }),
            json!({ "type": "response.function_call_arguments.delta", "item_id": "fc_0",
                    "output_index": 0, "delta": arguments }),
            json!({ "type": "response.function_call_arguments.done", "item_id": "fc_0",
                    "output_index": 0, "arguments": arguments }),
            json!({ "type": "response.output_item.done", "output_index": 0,
                    "item": responses_call(0, &arguments, "completed") }),
        ];
        let mut body: String = events.iter().map(responses_event).collect();
        body.push_str(&responses_completed(vec![responses_call(
            0,
            &arguments,
            "completed",
        )]));
        body
    };
    let anthropic = {
        let start = json!({ "type": "content_block_start", "index": 0, "content_block":
            { "type": "tool_use", "id": "toolu_big", "name": "write_file", "input": {} } });
        let delta = json!({ "type": "content_block_delta", "index": 0,
            "delta": { "type": "input_json_delta", "partial_json": arguments } });
        let stop = json!({ "type": "content_block_stop", "index": 0 });
        let end = json!({ "type": "message_delta", "delta": { "stop_reason": "tool_use" } });
        format!(
            "event: content_block_start\ndata: {start}\n\nevent: content_block_delta\ndata: {delta}\n\n\
             event: content_block_stop\ndata: {stop}\n\nevent: message_delta\ndata: {end}\n\n\
             event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        )
    };
    let gemini = {
        let response = json!({ "candidates": [{ "index": 0, "finishReason": "STOP", "content":
            { "role": "model", "parts": [{ "functionCall": { "name": "write_file", "args": args } }] } }] });
        format!("data: {response}\r\n\r\n")
    };
    let ollama = {
        let line = json!({ "model": "llama3.2", "message": { "role": "assistant", "content": "",
            "tool_calls": [{ "function": { "name": "write_file", "arguments": args } }] },
            "done": true, "done_reason": "stop" });
        format!("{line}\n")
    };
    let wires: [(&str, String, Decode, Framing); 5] = [
        ("openai", openai, decode_openai, Framing::Sse),
        ("responses", responses, decode_responses, Framing::Sse),
        ("anthropic", anthropic, decode_anthropic, Framing::Sse),
        ("gemini", gemini, decode_gemini, Framing::Sse),
        ("ollama", ollama, decode_ollama, Framing::Ndjson),
    ];
    let mut cases = Vec::new();
    for (wire, body, decode, framing) in wires {
        let body = Bytes::from(body);
        for (label, chunk) in [("1k", 1024), ("16k", 16 * 1024)] {
            cases.push(Case {
                name: format!("{wire}_5mb_call_{label}"),
                body: body.clone(),
                chunk,
                decode,
                framing,
            });
        }
    }
    cases
}

fn all_cases() -> Vec<Case> {
    let mut cases = cases();
    cases.push(long_call_case());
    cases.extend(big_call_cases());
    cases
}

fn bench(c: &mut Criterion, cases: &[Case]) {
    for case in cases {
        let chunks = chunks(case);
        let mut group = c.benchmark_group(format!("stream_parsers/{}", case.name));
        group.throughput(Throughput::Bytes(case.body.len() as u64));
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(3));
        group.bench_function("decoder", |b| b.iter(|| decode(case, &chunks)));
        group.bench_function("serde_json_value_baseline", |b| b.iter(|| baseline(case)));
        group.finish();
    }
}

/// MB/s of `run` over `bytes`, best of a few timed rounds.
fn throughput(bytes: usize, mut run: impl FnMut() -> usize) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        std::hint::black_box(run());
        best = best.min(start.elapsed().as_secs_f64());
    }
    bytes as f64 / best / 1e6
}

fn summary(cases: &[Case]) {
    println!(
        "\nstream parser throughput: MB/s best of 5; ratio = the decoder's throughput over the \
         baseline's, median (quartiles) of 41 alternating rounds; allocations of one run"
    );
    println!(
        "{:<24} {:>6} {:>6} {:>8} {:>8} {:>19} {:>16} {:>16}",
        "stream",
        "chunk",
        "MB",
        "decoder",
        "baseline",
        "ratio",
        "decoder allocs",
        "baseline allocs"
    );
    for case in cases {
        let chunks = chunks(case);
        let parser = throughput(case.body.len(), || decode(case, &chunks));
        let raw = throughput(case.body.len(), || baseline(case));
        // Paired measures time (candidate / baseline); its inverse is the throughput ratio.
        let paired = support::Paired::measure(|| decode(case, &chunks), || baseline(case));
        let (count, bytes) = allocations(|| decode(case, &chunks));
        let (base_count, base_bytes) = allocations(|| baseline(case));
        println!(
            "{:<24} {:>6} {:>6.2} {:>8.1} {:>8.1} {:>5.2}x ({:.2}-{:.2}) {:>7} {:>6.1}MB {:>7} {:>6.1}MB",
            case.name,
            case.chunk,
            case.body.len() as f64 / 1e6,
            parser,
            raw,
            1.0 / paired.median,
            1.0 / paired.quartiles.1,
            1.0 / paired.quartiles.0,
            count,
            bytes as f64 / 1e6,
            base_count,
            base_bytes as f64 / 1e6,
        );
    }
    println!(
        "(above 1 is faster than the baseline; allocations = count and bytes asked for in one \
         run, the decoder's including one Vec of input chunks)"
    );
}

fn main() {
    let mut cases = all_cases();
    // The summary covers the cases criterion's filter (the first free argument) selects; the
    // value of an option such as `--measurement-time 2` is not a filter.
    const TAKES_VALUE: [&str; 7] = [
        "--warm-up-time",
        "--measurement-time",
        "--sample-size",
        "--profile-time",
        "--save-baseline",
        "--baseline",
        "--noise-threshold",
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filter = args
        .iter()
        .enumerate()
        .find(|(at, arg)| {
            !arg.starts_with('-') && (*at == 0 || !TAKES_VALUE.contains(&args[at - 1].as_str()))
        })
        .map(|(_, arg)| arg.clone())
        .unwrap_or_default();
    cases.retain(|case| case.name.contains(&filter));
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion, &cases);
    criterion.final_summary();
    summary(&cases);
}
