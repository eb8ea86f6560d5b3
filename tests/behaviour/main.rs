//! Behaviour tests of tool-core through its public API.

mod loopback;
mod provider_anthropic;
mod provider_openai;
