//! Behaviour tests of tool-core through its public API.
mod macro_narrowing;
mod macro_output;
mod macro_schema;
mod macro_tools;
