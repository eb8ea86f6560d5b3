use std::collections::BTreeMap;

use tool_core::tool;

/// A string.
#[tool]
async fn text() -> String {
    String::new()
}

/// A static string.
#[tool]
async fn static_str() -> &'static str {
    ""
}

/// A number.
#[tool]
async fn number() -> f64 {
    1.5
}

/// A boolean.
#[tool]
async fn boolean() -> bool {
    true
}

/// A JSON value.
#[tool]
async fn json_value() -> serde_json::Value {
    serde_json::Value::Null
}

/// Any `Serialize` type.
#[tool]
async fn counts() -> BTreeMap<String, u32> {
    BTreeMap::new()
}

/// Nothing.
#[tool]
async fn nothing() {}

/// A result with a `Display` error.
#[tool]
async fn fallible() -> Result<Vec<u8>, std::fmt::Error> {
    Ok(Vec::new())
}

/// A result through an alias.
#[tool]
async fn aliased() -> std::io::Result<u8> {
    Ok(1)
}

fn main() {}
