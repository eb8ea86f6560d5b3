//! Behaviour tests of tool-core through its public API.

mod builtin_tools;
mod registry;
