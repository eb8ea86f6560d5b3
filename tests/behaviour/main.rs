//! Behaviour tests of tool-core through its public API.
