//! Behaviour tests of tool-core through its public API.

mod mcp_python;
mod mcp_server;
