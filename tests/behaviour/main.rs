//! Behaviour tests of tool-core through its public API.

mod loopback;
mod provider_anthropic;
mod provider_gemini;
mod provider_http;
mod provider_ollama;
mod provider_openai;
