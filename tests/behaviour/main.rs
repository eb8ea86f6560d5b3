//! Behaviour tests of tool-core through its public API.

mod config_tools;
mod session_preferences;
mod session_toggles;
