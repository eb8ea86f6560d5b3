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
