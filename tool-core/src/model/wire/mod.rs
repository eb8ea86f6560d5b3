//! The HTTP plumbing the provider clients share: request bodies ([`body`]), stream framing
//! ([`framing`]), decoding frames into model events ([`decode`]), assembling an answer from
//! fragments ([`accumulate`]), and sending requests with timeouts and retries ([`http`]).

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
pub(crate) mod decode;
pub(crate) mod framing;
pub(crate) mod http;
pub(crate) mod prelude;
