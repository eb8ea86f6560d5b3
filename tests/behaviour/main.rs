//! Behaviour tests of tool-core through its public API.

mod agent_loop;
mod agent_seeds;
mod agent_session;
mod agent_stream;
mod agent_support;
mod agent_test_model;
