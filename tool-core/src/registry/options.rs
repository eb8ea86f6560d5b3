//! [`RegistryOptions`]: how a registry prepares arguments and times calls.

use std::time::Duration;

#[allow(unused_imports)]
use crate::tool::ToolMetadata;

/// Settings of a [`ToolRegistry`](super::ToolRegistry). `Default` validates arguments, keeps them strict and sets no
/// timeout.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RegistryOptions {
    /// Validate arguments against each tool's JSON Schema before the tool runs (default `true`).
    pub validate_arguments: bool,
    /// The timeout of tools that set none in their metadata (default: none).
    pub default_timeout: Option<Duration>,
    /// Read arguments of the wrong JSON type as the type the schema asks for, for every tool
    /// whose [`ToolMetadata::lenient_arguments`] is `None` (default `false`).
    pub lenient_arguments: bool,
    /// Defer every tool of this registry, whatever its metadata says (default `false`): an
    /// agent leaves their definitions out of its requests and offers a `search_tools` tool
    /// instead, loading what the model finds (see [`ToolMetadata::defer_loading`] to defer
    /// single tools).
    pub defer_loading: bool,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        Self {
            validate_arguments: true,
            default_timeout: None,
            lenient_arguments: false,
            defer_loading: false,
        }
    }
}

impl RegistryOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns schema validation of arguments on or off.
    #[must_use]
    pub fn validate_arguments(mut self, validate: bool) -> Self {
        self.validate_arguments = validate;
        self
    }

    /// Sets the timeout of tools that set none themselves.
    #[must_use]
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Turns lenient arguments on or off for the tools that do not choose themselves (see
    /// [`schema::coerce_arguments`](crate::schema::coerce_arguments)).
    #[must_use]
    pub fn lenient_arguments(mut self, lenient: bool) -> Self {
        self.lenient_arguments = lenient;
        self
    }

    /// Defers every tool of the registry, or none but those whose metadata asks for it (see
    /// [`defer_loading`](Self::defer_loading)).
    #[must_use]
    pub fn defer_loading(mut self, defer: bool) -> Self {
        self.defer_loading = defer;
        self
    }
}
