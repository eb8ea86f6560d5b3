//! A call's arguments made ready for the tool: read leniently when the tool allows it, the
//! `null`s OpenAI strict mode sends for optional fields dropped, and checked against the tool's
//! JSON Schema, with messages that say where and what is wrong.

use std::sync::OnceLock;

use serde_json::Value;

use super::{ExecuteError, describe_schema_errors};
use crate::{
    schema::{Coercion, OptionalNulls},
    tool::{JsonObject, ToolError},
};

/// What a tool's argument checks work out from its parameter schema once: the validator and the
/// plan for optional `null`s. Built on the first call that needs each.
#[derive(Default)]
pub(crate) struct ArgumentChecks {
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    optional_nulls: OnceLock<OptionalNulls>,
}

impl ArgumentChecks {
    /// The arguments for the tool `name` with `parameters`: coerced when `lenient`, optional
    /// `null`s dropped, validated when `validate`.
    pub(crate) fn prepare(
        &self,
        name: &str,
        parameters: &Value,
        mut args: JsonObject,
        lenient: bool,
        validate: bool,
    ) -> Result<JsonObject, ExecuteError> {
        if lenient {
            Self::coerce(name, parameters, &mut args);
        }
        // Under OpenAI strict mode a model sends `null` for an optional field it leaves out.
        self.optional_nulls
            .get_or_init(|| OptionalNulls::for_schema(parameters))
            .drop_from(&mut args);
        if validate {
            self.validate(name, parameters, args)
        } else {
            Ok(args)
        }
    }

    /// Reads arguments of the wrong JSON type as the type `parameters` asks for, logging and
    /// returning what changed.
    pub(crate) fn coerce(name: &str, parameters: &Value, args: &mut JsonObject) -> Vec<Coercion> {
        crate::schema::coerce_logged(name, parameters, args)
    }

    fn validate(
        &self,
        name: &str,
        parameters: &Value,
        args: JsonObject,
    ) -> Result<JsonObject, ExecuteError> {
        let validator = self
            .validator
            .get_or_init(|| {
                jsonschema::validator_for(parameters).map_err(|error| error.to_string())
            })
            .as_ref()
            .map_err(|error| ExecuteError::Failed {
                name: name.to_owned(),
                error: ToolError::new(format!(
                    "the tool's parameter schema is not a valid JSON Schema: {error}"
                )),
            })?;
        // The arguments move into a `Value` and back out; nothing is cloned.
        let value = Value::Object(args);
        if validator.is_valid(&value) {
            return Ok(match value {
                Value::Object(args) => args,
                _ => JsonObject::new(),
            });
        }
        Err(ExecuteError::InvalidArguments {
            name: name.to_owned(),
            message: describe_schema_errors(validator, &value),
        })
    }
}
