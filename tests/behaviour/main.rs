//! Behaviour tests of tool-core through its public API.
mod provider_formats;
