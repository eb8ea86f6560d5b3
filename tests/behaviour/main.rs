//! Behaviour tests of tool-core through its public API.
mod macro_smoke;
