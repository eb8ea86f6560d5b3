//! The OpenAI adapter: the canonical schema minus `$schema` and the root `title`, and the
//! opt-in strict form.

use serde_json::Value;

/// The canonical schema as OpenAI (and Anthropic, and Ollama) take it.
pub(super) fn parameters(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
        root.remove("title");
    }
    schema
}

/// The schema in the form OpenAI's `strict: true` accepts, or why the tool cannot be strict.
pub(super) fn strict_parameters(schema: &Value) -> Result<Value, String> {
    let _ = schema;
    Err("strict mode is not supported yet".to_owned())
}
