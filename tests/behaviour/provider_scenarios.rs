//! What every provider client does, one scenario at a time, run against each wire's recordings
//! (the rows of `provider_wires`) served on loopback: each scenario is a test per wire,
//! `provider_scenarios::<wire>::<scenario>`. What only one wire does is tested in its own file
//! (`provider_openai`, ...).

use std::time::Duration;

use serde_json::{Value, json};
use tool_core::model::{
    ChatModel, ChatRequest, FinishReason, Message, ModelEvent, ProviderError, ToolCall,
};

use crate::{
    loopback::{
        Collected, Recorded, Reply, Server, api_error, big_content, fast_retries, question_about,
        tools,
    },
    provider_wires::{Call, FAILURE, Sent, Setup, Tail, Wire},
};

/// Runs each scenario against each wire, as `<wire>::<scenario>`.
macro_rules! on_every_wire {
    (wires: [$($wire:ident),* $(,)?], scenarios: $scenarios:tt $(,)?) => {
        $( on_every_wire!(@wire $wire $scenarios); )*
    };
    (@wire $wire:ident [$($scenario:ident),* $(,)?]) => {
        mod $wire {
            $(
                #[tokio::test]
                async fn $scenario() {
                    super::$scenario(crate::provider_wires::$wire()).await;
                }
            )*
        }
    };
}

on_every_wire! {
    wires: [openai, responses, anthropic, gemini, ollama],
    scenarios: [
        streams_plain_text_and_sends_no_tools,
        streams_one_tool_call_and_sends_the_tools,
        streams_parallel_tool_calls_with_escaped_arguments,
        slow_chunked_stream_gives_the_same_events,
        multi_step_sends_the_calls_and_their_results_back,
        truncated_stream_is_an_error_after_the_text_so_far,
        error_mid_stream_carries_the_provider_message,
        answers_ending_for_another_reason_say_why,
        busy_then_success_honours_retry_after,
        busy_then_success_retries_at_once_without_retry_after,
        busy_every_time_is_unavailable_after_the_retries,
        rejected_request_is_typed_and_not_retried,
        chat_reads_whole_answers,
        five_megabyte_argument_in_one_event_arrives_whole,
        request_timeout_is_a_transport_error,
        stalled_stream_hits_the_read_timeout,
        key_and_extra_headers_reach_the_server,
        token_counts_have_one_meaning,
        results_of_failed_calls_are_sent_in_the_wire_form,
    ],
}

fn question() -> Vec<Message> {
    question_about("Paris")
}

/// Streams `request` to a server that answers with `reply`, through the wire's client.
async fn stream(wire: &Wire, reply: Reply, request: ChatRequest) -> (Collected, Server) {
    let server = Server::start(vec![reply]).await;
    let model = wire.client(&server, fast_retries());
    let collected = Collected::from(model.stream(request).await.unwrap()).await;
    (collected, server)
}

/// Asserts that `request` is what `sent` says.
fn assert_sent(wire: &Wire, request: &Recorded, sent: &Sent) {
    assert_eq!(request.uri, sent.uri, "{}", wire.provider);
    for (name, value) in &sent.headers {
        assert_eq!(request.header(name), *value, "{}: {name}", wire.provider);
    }
    let body = &request.json();
    for (pointer, expected) in &sent.body {
        assert_eq!(
            body.pointer(pointer),
            Some(expected),
            "{}: {pointer} in {body}",
            wire.provider
        );
    }
    for pointer in &sent.absent {
        assert_eq!(
            body.pointer(pointer),
            None,
            "{}: {pointer} in {body}",
            wire.provider
        );
    }
}

/// Asserts that the end of `body`'s message list is `tail`.
fn assert_tail(wire: &Wire, body: &Value, tail: &Tail) {
    let list = body
        .pointer(tail.list)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{}: no {} in {body}", wire.provider, tail.list));
    assert_eq!(
        list.get(tail.from..),
        Some(&tail.messages[..]),
        "{}: {}",
        wire.provider,
        tail.list
    );
}

/// Asserts that `calls` are the `expected` ones; ids the client made up (`call_…`) are
/// distinct.
fn assert_calls(wire: &Wire, calls: &[ToolCall], expected: &[Call]) {
    let provider = wire.provider;
    assert_eq!(calls.len(), expected.len(), "{provider}: {calls:?}");
    for (call, expected) in calls.iter().zip(expected) {
        match expected.id {
            Some(id) => assert_eq!(call.id, id, "{provider}"),
            None => assert!(
                call.id.starts_with("call_"),
                "{provider}: a made-up id: {}",
                call.id
            ),
        }
        assert_eq!(call.name, expected.name, "{provider}");
        assert_eq!(call.arguments, expected.arguments, "{provider}");
        assert_eq!(call.provider_metadata, expected.metadata, "{provider}");
    }
    for (i, call) in calls.iter().enumerate() {
        assert!(
            calls[..i].iter().all(|other| other.id != call.id),
            "{provider}: ids are distinct: {calls:?}"
        );
    }
}

/// The events' text with each call id replaced by its position, so that streams whose ids
/// were made up can be compared.
fn without_ids(out: &Collected) -> String {
    let mut text = format!("{:?}", out.events);
    for (i, call) in out.calls().iter().enumerate() {
        text = text.replace(&format!("{:?}", call.id), &format!("\"<call {i}>\""));
    }
    text
}

async fn streams_plain_text_and_sends_no_tools(wire: Wire) {
    let (out, server) = stream(
        &wire,
        (wire.streamed)(wire.text.recording),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), wire.text.text);
    let (message, finish) = out.done();
    assert_eq!(message, &Message::assistant(wire.text.text));
    assert_eq!(finish, &FinishReason::Stop);
    assert_eq!(out.usage(), Some(wire.text.usage));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_sent(&wire, &requests[0], &wire.text.sent);
    let body = requests[0].json();
    for key in ["/tools", "/tool_choice", "/toolConfig"] {
        assert_eq!(
            body.pointer(key),
            None,
            "{}: {key} in {body}",
            wire.provider
        );
    }
}

async fn streams_one_tool_call_and_sends_the_tools(wire: Wire) {
    let request = ChatRequest::new(question()).tools(tools());
    // The provider format of the tools, as a list: Gemini's is one object, which its request
    // puts in a list of one.
    let expected_tools =
        match serde_json::from_str(request.tools.provider_json(wire.provider).get()).unwrap() {
            Value::Array(tools) => Value::Array(tools),
            one => json!([one]),
        };
    let case = &wire.tool_call;
    let (out, server) = stream(&wire, (wire.streamed)(case.recording), request).await;

    assert_eq!(out.text(), case.text);
    let calls = out.calls();
    assert_calls(&wire, &calls, &case.calls);
    assert_eq!(
        out.starts(),
        vec![(0, calls[0].id.clone(), calls[0].name.clone())]
    );
    assert_eq!(out.argument_deltas(0), calls[0].arguments);
    assert_eq!(out.ended_calls(), calls);
    assert_eq!(out.done().1, &FinishReason::ToolCalls);
    assert_eq!(out.usage(), case.usage);

    let body = server.requests()[0].json();
    assert_eq!(
        body.pointer("/tools").map(nested),
        Some(expected_tools),
        "{}",
        wire.provider
    );
    assert_eq!(body.pointer("/tool_choice"), None, "{body}");
    assert_eq!(body.pointer("/toolConfig"), None, "{body}");
}

/// A list of tools with the Responses API's flat function tools
/// (`{"type":"function","name",…,"strict":false}`) in the Chat Completions shape they were made
/// from, and the other wires' tools as they are.
fn nested(tools: &Value) -> Value {
    let Some(tools) = tools.as_array() else {
        return tools.clone();
    };
    let nest = |tool: &Value| match tool.as_object() {
        Some(flat) if flat.get("type") == Some(&json!("function")) && flat.contains_key("name") => {
            assert_eq!(
                flat.get("strict"),
                Some(&json!(false)),
                "strict is always set"
            );
            let mut function = flat.clone();
            function.remove("type");
            function.remove("strict");
            json!({ "type": "function", "function": function })
        }
        _ => tool.clone(),
    };
    tools.iter().map(nest).collect()
}

async fn streams_parallel_tool_calls_with_escaped_arguments(wire: Wire) {
    let case = &wire.parallel_calls;
    let (out, _server) = stream(
        &wire,
        (wire.streamed)(case.recording),
        ChatRequest::new(question()).tools(tools()),
    )
    .await;
    assert_eq!(out.text(), case.text);
    let calls = out.calls();
    assert_calls(&wire, &calls, &case.calls);
    for (index, call) in calls.iter().enumerate() {
        assert_eq!(
            out.argument_deltas(index),
            call.arguments,
            "{}",
            wire.provider
        );
    }
    assert_eq!(out.ended_calls(), calls);
    assert_eq!(out.done().1, &FinishReason::ToolCalls);
    assert_eq!(out.usage(), case.usage);
}

/// A stream cut into 3-byte pieces decodes to the same events (ids made up by the client
/// aside).
async fn slow_chunked_stream_gives_the_same_events(wire: Wire) {
    let recording = wire.parallel_calls.recording;
    let request = ChatRequest::new(question()).tools(tools());
    let (whole, _a) = stream(&wire, (wire.streamed)(recording), request.clone()).await;
    let slow = (wire.streamed)(recording).chunked(3, Duration::from_millis(1));
    let (chunked, _b) = stream(&wire, slow, request).await;
    assert!(
        whole
            .events
            .iter()
            .any(|e| matches!(e, ModelEvent::Done { .. })),
        "{}",
        wire.provider
    );
    assert_eq!(without_ids(&chunked), without_ids(&whole));
}

async fn multi_step_sends_the_calls_and_their_results_back(wire: Wire) {
    let case = &wire.multi_step;
    let server = Server::start(vec![
        (wire.streamed)(case.call),
        (wire.streamed)(case.answer),
    ])
    .await;
    let model = wire.client(&server, fast_retries());
    let mut messages = question();
    let first = Collected::from(
        model
            .stream(ChatRequest::new(messages.clone()).tools(tools()))
            .await
            .unwrap(),
    )
    .await;
    messages.push(first.done().0.clone());
    for call in first.calls() {
        messages.push(Message::tool_result(
            &call.id,
            &call.name,
            format!("result of {}", call.name),
        ));
    }
    let second = Collected::from(
        model
            .stream(ChatRequest::new(messages).tools(tools()))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(second.text(), case.text);
    assert_eq!(
        second.done(),
        (&Message::assistant(case.text), &FinishReason::Stop)
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_tail(&wire, &requests[1].json(), &case.sent);
}

async fn truncated_stream_is_an_error_after_the_text_so_far(wire: Wire) {
    let case = &wire.truncated;
    let (out, _server) = stream(
        &wire,
        (wire.streamed)(case.recording),
        ChatRequest::new(question()),
    )
    .await;
    assert_eq!(out.text(), case.text);
    assert!(
        !out.events
            .iter()
            .any(|e| matches!(e, ModelEvent::Done { .. })),
        "{}",
        wire.provider
    );
    let error = out.error.expect("the stream ended early");
    assert_eq!(
        error.to_string(),
        format!(
            "the {} stream ended early after {} bytes and {} events",
            wire.provider, case.bytes, case.events
        )
    );
    match error {
        ProviderError::Truncated {
            provider,
            bytes,
            events,
            incomplete_call: None,
            cause: None,
        } => assert_eq!(
            (provider, bytes, events),
            (wire.provider, Some(case.bytes), case.events)
        ),
        other => panic!("{}: {other:?}", wire.provider),
    }
}

async fn error_mid_stream_carries_the_provider_message(wire: Wire) {
    assert!(!wire.stream_errors.is_empty(), "{}", wire.provider);
    for case in &wire.stream_errors {
        let (out, _server) = stream(
            &wire,
            (wire.streamed)(case.recording),
            ChatRequest::new(question()),
        )
        .await;
        assert_eq!(out.text(), case.text, "{}", wire.provider);
        let (status, code, message) = api_error(wire.provider, out.error);
        assert_eq!(status, None);
        assert_eq!(code.as_deref(), case.code, "{}", wire.provider);
        assert_eq!(message, case.message);
    }
}

/// Length limits, refusals and safety stops end the answer with the text so far.
async fn answers_ending_for_another_reason_say_why(wire: Wire) {
    assert!(!wire.finishes.is_empty(), "{}", wire.provider);
    for case in &wire.finishes {
        let (out, _server) = stream(
            &wire,
            (wire.streamed)(case.recording),
            ChatRequest::new(question()),
        )
        .await;
        assert_eq!(
            out.done(),
            (&Message::assistant(case.text), &case.finish),
            "{}",
            wire.provider
        );
    }
}

async fn busy_then_success_honours_retry_after(wire: Wire) {
    let server = Server::start(vec![
        Reply::error(wire.busy.status, wire.busy.body).header("retry-after", "1"),
        (wire.streamed)(wire.text.recording),
    ])
    .await;
    // Without Retry-After the client would wait ten minutes; the test's own timeout fails it.
    let patient = fast_retries()
        .initial_backoff(Duration::from_secs(600))
        .max_backoff(Duration::from_secs(600));
    let model = wire.client(&server, patient);
    let out = tokio::time::timeout(Duration::from_secs(60), async {
        Collected::from(model.stream(ChatRequest::new(question())).await.unwrap()).await
    })
    .await
    .expect("the retry waited for Retry-After, not the backoff");
    assert_eq!(out.text(), wire.text.text);
    assert_eq!(server.requests().len(), 2);
}

async fn busy_then_success_retries_at_once_without_retry_after(wire: Wire) {
    for status in [429, wire.busy.status] {
        let server = Server::start(vec![
            Reply::error(status, wire.busy.body),
            (wire.streamed)(wire.text.recording),
        ])
        .await;
        let model = wire.client(&server, fast_retries());
        let out = Collected::from(model.stream(ChatRequest::new(question())).await.unwrap()).await;
        assert_eq!(out.text(), wire.text.text, "{} {status}", wire.provider);
        assert_eq!(server.requests().len(), 2);
    }
}

async fn busy_every_time_is_unavailable_after_the_retries(wire: Wire) {
    let server = Server::start(vec![Reply::error(wire.busy.status, wire.busy.body); 3]).await;
    let model = wire.client(&server, fast_retries().max_retries(2));
    let error = model.chat(ChatRequest::new(question())).await.unwrap_err();
    match error {
        ProviderError::Unavailable {
            provider,
            status,
            attempts,
            message,
        } => {
            assert_eq!(
                (provider, status, attempts),
                (wire.provider, wire.busy.status, 3)
            );
            assert_eq!(message, wire.busy.message);
        }
        other => panic!("{}: {other:?}", wire.provider),
    }
    assert_eq!(server.requests().len(), 3);
}

async fn rejected_request_is_typed_and_not_retried(wire: Wire) {
    let case = &wire.rejected;
    for streamed in [true, false] {
        let server = Server::start(vec![
            Reply::error(case.status, case.body),
            (wire.streamed)(wire.text.recording),
        ])
        .await;
        let model = wire.client(&server, fast_retries());
        let request = ChatRequest::new(question());
        let error = if streamed {
            model.stream(request).await.err()
        } else {
            model.chat(request).await.err()
        };
        let (status, code, message) = api_error(wire.provider, error);
        assert_eq!(status, Some(case.status));
        assert_eq!(code.as_deref(), case.code, "{}", wire.provider);
        assert_eq!(message, case.message);
        assert_eq!(
            server.requests().len(),
            1,
            "{} streamed={streamed}",
            wire.provider
        );
    }
}

async fn chat_reads_whole_answers(wire: Wire) {
    assert!(!wire.whole.is_empty(), "{}", wire.provider);
    for case in &wire.whole {
        let server = Server::start(vec![Reply::json(case.recording)]).await;
        let response = wire
            .client(&server, fast_retries())
            .chat(ChatRequest::new(question()).tools(tools()))
            .await
            .unwrap();
        let Message::Assistant {
            content,
            tool_calls,
            ..
        } = &response.message
        else {
            panic!("{}: not an assistant message", wire.provider);
        };
        assert_eq!(content, case.text);
        assert_calls(&wire, tool_calls, &case.calls);
        assert_eq!(response.finish_reason, case.finish);
        assert_eq!(response.usage, case.usage, "{}", wire.provider);
        let request = &server.requests()[0];
        assert_sent(&wire, request, &wire.whole_request);
    }
}

async fn five_megabyte_argument_in_one_event_arrives_whole(wire: Wire) {
    let arguments = json!({ "path": "big.txt", "content": big_content() }).to_string();
    let body = (wire.big_call)(&arguments);
    let reply = (wire.streamed)(b"")
        .body(body)
        .chunked(16 * 1024, Duration::ZERO);
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        stream(&wire, reply, ChatRequest::new(question()).tools(tools())),
    )
    .await
    .expect("the stream finished")
    .0;
    let calls = out.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].name, "write_file");
    assert_eq!(calls[0].arguments, arguments);
}

async fn request_timeout_is_a_transport_error(wire: Wire) {
    let server = Server::start(vec![
        (wire.streamed)(wire.text.recording).delayed(Duration::from_secs(30)),
    ])
    .await;
    let http = fast_retries().request_timeout(Duration::from_millis(200));
    let error = wire
        .client(&server, http)
        .stream(ChatRequest::new(question()))
        .await
        .err()
        .expect("the server never answered in time");
    match error {
        ProviderError::Transport { provider, message } => {
            assert_eq!(provider, wire.provider);
            assert_eq!(message, "no answer within 200ms (request timeout)");
        }
        other => panic!("{}: {other:?}", wire.provider),
    }
}

async fn stalled_stream_hits_the_read_timeout(wire: Wire) {
    let server = Server::start(vec![
        (wire.streamed)(wire.text.recording).chunked(64, Duration::from_secs(30)),
    ])
    .await;
    let http = fast_retries().read_timeout(Duration::from_millis(200));
    let stream = wire
        .client(&server, http)
        .stream(ChatRequest::new(question()))
        .await
        .unwrap();
    let out = Collected::from(stream).await;
    // The response had started (its headers came at once), so the stall before the first
    // piece of the body cuts the stream off.
    match out.error {
        Some(ProviderError::Truncated {
            provider,
            bytes: Some(0),
            events: 0,
            incomplete_call: None,
            cause: Some(cause),
        }) => {
            assert_eq!(provider, wire.provider);
            assert!(cause.ends_with("(timed out)"), "{cause}");
        }
        other => panic!(
            "{}: expected a stream that ended early, got {other:?}",
            wire.provider
        ),
    }
}

/// The key goes in the wire's header; extra headers go with every request; without a key, a
/// wire that needs one refuses to build a client and names the variable, and the others send
/// no key header.
async fn key_and_extra_headers_reach_the_server(wire: Wire) {
    let server = Server::start(vec![(wire.streamed)(wire.text.recording); 2]).await;
    let setup = Setup {
        headers: vec![
            ("HTTP-Referer", "https://example.com/app"),
            ("x-trace", "t-1"),
        ],
        ..Setup::with(fast_retries())
    };
    let model = wire.connect(&server, setup).unwrap();
    Collected::from(model.stream(ChatRequest::new(question())).await.unwrap())
        .await
        .done();
    let request = &server.requests()[0];
    assert_eq!(request.header(wire.key.header), Some(wire.key.value));
    assert_eq!(
        request.header("http-referer"),
        Some("https://example.com/app")
    );
    assert_eq!(request.header("x-trace"), Some("t-1"));

    let keyless = Setup {
        key: false,
        ..Setup::with(fast_retries())
    };
    match (wire.connect(&server, keyless), wire.key.required) {
        (Err(ProviderError::Config(message)), Some(variable)) => {
            assert!(message.contains(variable), "{message}");
        }
        (Ok(model), None) => {
            Collected::from(model.stream(ChatRequest::new(question())).await.unwrap())
                .await
                .done();
            let request = &server.requests()[1];
            assert_eq!(request.header(wire.key.header), None);
            assert_eq!(request.header("http-referer"), None);
        }
        (Err(error), _) => panic!("{}: {error:?}", wire.provider),
        (Ok(_), Some(variable)) => panic!("{}: built without {variable}", wire.provider),
    }
}

/// Cached and reasoning tokens are parts of the input and output counts on every wire,
/// streamed and not.
async fn token_counts_have_one_meaning(wire: Wire) {
    assert!(!wire.usage.is_empty(), "{}", wire.provider);
    for case in &wire.usage {
        let usage = if case.streamed {
            let (out, _server) = stream(
                &wire,
                (wire.streamed)(case.recording),
                ChatRequest::new(question()),
            )
            .await;
            out.done();
            if let Some(text) = case.text {
                assert_eq!(out.text(), text);
            }
            out.usage()
        } else {
            let server = Server::start(vec![Reply::json(case.recording)]).await;
            let response = wire
                .client(&server, fast_retries())
                .chat(ChatRequest::new(question()))
                .await
                .unwrap();
            response.usage
        };
        let usage = usage.unwrap_or_else(|| panic!("{}: no usage", wire.provider));
        assert_eq!(usage, case.usage, "{}", wire.provider);
        assert_eq!(usage.total_input_tokens(), case.usage.input_tokens);
        assert_eq!(
            usage.uncached_input_tokens(),
            case.uncached_input,
            "{}",
            wire.provider
        );
        assert_eq!(usage.total_tokens(), case.total, "{}", wire.provider);
    }
}

/// A conversation whose last step made two calls: the first succeeded, the second failed.
pub(crate) fn one_ok_one_failed() -> ChatRequest {
    let mut messages = question();
    messages.push(Message::assistant_with_calls(
        "",
        vec![
            ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#),
            ToolCall::new("call_2", "read_file", r#"{"path":"missing.txt"}"#),
        ],
    ));
    messages.push(Message::tool_result("call_1", "get_weather", "18°C"));
    messages.push(Message::tool_error("call_2", "read_file", FAILURE));
    ChatRequest::new(messages)
}

/// A failed call's result is flagged where the wire's format has a place for it, and is the
/// error text alone where it has none.
async fn results_of_failed_calls_are_sent_in_the_wire_form(wire: Wire) {
    let (out, server) = stream(
        &wire,
        (wire.streamed)(wire.text.recording),
        one_ok_one_failed(),
    )
    .await;
    out.done();
    assert_tail(&wire, &server.requests()[0].json(), &wire.failed_results);
}
