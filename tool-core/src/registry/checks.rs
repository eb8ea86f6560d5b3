//! What [`ToolRegistry::register`](super::ToolRegistry::register) accepts: a valid name, a
//! description, parameters whose root is an object schema. [`RegistryError`] says why not.

use serde_json::Value;

use crate::tool::ChatTool;

/// Why a tool could not be registered. The registry is unchanged when this is returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Another tool already has this name; the first one stays registered.
    #[error("a tool named `{name}` is already registered")]
    Duplicate {
        /// The name in use.
        name: String,
    },
    /// The name does not match `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("invalid tool name `{name}`: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The tool has an empty description.
    #[error("tool `{name}` has no description; describe what it does for the model")]
    MissingDescription {
        /// The tool's name.
        name: String,
    },
    /// `get_schema().function.name` differs from `name()`.
    #[error("tool `{name}` returns a schema named `{schema_name}`; the two names must be equal")]
    NameMismatch {
        /// `name()`.
        name: String,
        /// The schema's function name.
        schema_name: String,
    },
    /// The parameters are not a JSON Schema object with `"type": "object"`.
    #[error("tool `{name}` has invalid parameters: {reason}")]
    InvalidParameters {
        /// The tool's name.
        name: String,
        /// What is wrong with them.
        reason: String,
    },
}

/// The bytes a tool name may have, as a table: one load per byte (this runs for every
/// registered tool).
static NAME_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 256 {
        // `byte` < 256, so the cast keeps its value.
        #[allow(clippy::cast_possible_truncation)]
        let b = byte as u8;
        table[byte] = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        byte += 1;
    }
    table
};

/// Checks what `register` requires of a tool named `name` with `definition`: a valid name that
/// the definition repeats, a description, and parameters whose root is an object schema.
pub(super) fn check_definition(name: &str, definition: &ChatTool) -> Result<(), RegistryError> {
    validate_name(name)?;
    if &*definition.function.name != name {
        return Err(RegistryError::NameMismatch {
            name: name.to_owned(),
            schema_name: definition.function.name.to_string(),
        });
    }
    if definition
        .function
        .description
        .chars()
        .all(char::is_whitespace)
    {
        return Err(RegistryError::MissingDescription {
            name: name.to_owned(),
        });
    }
    validate_parameters(&definition.function.parameters).map_err(|reason| {
        RegistryError::InvalidParameters {
            name: name.to_owned(),
            reason,
        }
    })
}

/// Checks a tool name against `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn validate_name(name: &str) -> Result<(), RegistryError> {
    let allowed = |byte: u8| NAME_BYTES[usize::from(byte)];
    if !name.is_empty() && name.len() <= 64 && name.bytes().all(allowed) {
        return Ok(());
    }
    let reason = if name.is_empty() {
        "the name is empty".to_owned()
    } else if name.len() > 64 {
        format!(
            "the name is {} characters long; at most 64 are allowed",
            name.len()
        )
    } else {
        let c = name
            .chars()
            .find(|c| !(c.is_ascii() && allowed(*c as u8)))
            .unwrap_or_default();
        format!("{c:?} is not allowed; use only ASCII letters, digits, `_` and `-`")
    };
    Err(RegistryError::InvalidName {
        name: name.to_owned(),
        reason,
    })
}

/// Checks that `parameters` is an object schema, in one pass over its keys (this runs for
/// every registered tool).
fn validate_parameters(parameters: &Value) -> Result<(), String> {
    let Some(schema) = parameters.as_object() else {
        return Err(format!(
            "the parameters must be a JSON Schema object, not {}",
            crate::schema::excerpt(parameters)
        ));
    };
    let mut has_type = false;
    for (key, value) in schema {
        match key.as_str() {
            "type" => match value {
                Value::String(kind) if kind == "object" => has_type = true,
                other => {
                    return Err(format!(
                        "the parameters' `type` must be \"object\", not {other}"
                    ));
                }
            },
            "properties" if !value.is_object() => {
                return Err("`properties` must be an object".to_owned());
            }
            "required"
                if !value
                    .as_array()
                    .is_some_and(|names| names.iter().all(Value::is_string)) =>
            {
                return Err("`required` must be an array of property names".to_owned());
            }
            _ => {}
        }
    }
    if has_type {
        Ok(())
    } else {
        Err("the parameters have no `type`; it must be \"object\"".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_byte_table_allows_exactly_letters_digits_underscore_and_dash() {
        for byte in 0..=u8::MAX {
            let expected = byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-';
            assert_eq!(NAME_BYTES[usize::from(byte)], expected, "byte {byte}");
        }
    }
}
