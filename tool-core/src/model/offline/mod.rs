//! The models that need no network, so examples run anywhere and tests exercise tools and
//! agents offline: [`TestModel`] calls every offered tool with arguments valid for its schema,
//! [`ScriptedModel`] plays back a script and records what it was asked.

mod scripted;
mod test_model;

pub use scripted::{ScriptExhausted, ScriptedModel, ScriptedResponse};
pub use test_model::{TestModel, generate_arguments, generate_value};
