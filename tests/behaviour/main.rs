//! Behaviour tests of tool-core through its public API.

mod agent_example;
mod agent_loop;
mod agent_seeds;
mod agent_session;
mod agent_stream;
mod agent_support;
mod agent_test_model;
mod builtin_tools;
mod config_tools;
mod logs;
mod loopback;
mod macro_narrowing;
mod macro_output;
mod macro_schema;
mod macro_tools;
mod mcp_python;
mod mcp_server;
mod provider_anthropic;
mod provider_formats;
mod provider_gemini;
mod provider_http;
mod provider_ollama;
mod provider_openai;
mod registry;
mod session_preferences;
mod session_toggles;
