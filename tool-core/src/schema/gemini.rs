//! The Gemini adapter: the OpenAPI 3.0 subset `functionDeclarations` accept.

use serde_json::Value;

/// The canonical schema as Gemini takes it, or why it cannot.
pub(super) fn parameters(tool: &str, schema: &Value) -> Result<Value, String> {
    let _ = tool;
    Ok(super::openai::parameters(schema))
}
