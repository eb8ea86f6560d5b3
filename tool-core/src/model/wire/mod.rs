//! The HTTP plumbing the provider clients share: their settings ([`endpoint`]), one client over
//! a wire protocol ([`client`]), request bodies ([`body`]), stream framing ([`framing`]),
//! decoding frames into model events ([`decode`]), assembling an answer from fragments
//! ([`accumulate`]), and sending requests with timeouts and retries ([`http`]).
//!
//! Architecture invariant: nothing here names a provider client. A client module
//! (`model/openai.rs`, …) implements [`client::Wire`] and [`decode::Decoder`] with its own
//! types and plugs them in; the plumbing stays generic over them.

// Shared by the provider clients; a build with only some of them leaves parts unused.
#![cfg_attr(
    not(all(
        feature = "openai",
        feature = "ollama",
        feature = "gemini",
        feature = "anthropic"
    )),
    allow(dead_code, unused_imports)
)]

pub(crate) mod accumulate;
pub(crate) mod body;
pub(crate) mod client;
pub(crate) mod decode;
pub(crate) mod endpoint;
pub(crate) mod framing;
pub(crate) mod http;
pub(crate) mod prelude;

/// Records the provider's id and model of an answer on the current span: the agent's `chat`
/// span, which declares `gen_ai.response.id` and `gen_ai.response.model` (`otel` feature).
#[cfg(feature = "otel")]
pub(crate) fn record_response(id: Option<&str>, model: Option<&str>) {
    let span = tracing::Span::current();
    if let Some(id) = id {
        span.record("gen_ai.response.id", id);
    }
    if let Some(model) = model {
        span.record("gen_ai.response.model", model);
    }
}
