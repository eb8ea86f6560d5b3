//! A registered tool ([`ToolEntry`]) and what is worked out from it once: its definition and
//! metadata when it is registered, its argument checks and provider formats when first needed.
//! [`ToolInfo`] is what listings show of it.

use std::{
    sync::{Arc, OnceLock},
    time::Duration,
};

use serde::Serialize;

use super::{RegistryError, RegistryOptions, checks};
use crate::{
    call::CallContext,
    execute::{
        ArgumentChecks, Call, ExecuteError, GuardedCall, Target, TextStart, guarded,
        parse_arguments,
    },
    schema::{
        Coercion, FormatOptions, Provider,
        list::{FormatCache, FormatResult},
    },
    tool::{ChatTool, ExecutableTool, JsonObject, TextCall, ToolError, ToolHints, ToolMetadata},
};

/// What a settings screen shows about a tool: its definition, metadata and enabled state.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
// Independent facts about one tool, each read on its own by a tool list (a popover, `/tools`).
#[allow(clippy::struct_excessive_bools)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// A human-readable title, when the tool has one.
    pub title: Option<String>,
    /// The tool's category.
    pub category: Option<String>,
    /// The tool's icon URL.
    pub icon: Option<String>,
    /// Whether the tool is enabled when registered.
    pub default_enabled: bool,
    /// Whether the tool is enabled now.
    pub enabled: bool,
    /// Behaviour hints.
    pub hints: ToolHints,
    /// Whether the tool is deferred: left out of an agent's requests until a search loads it
    /// (its [`ToolMetadata::defer_loading`], or the registry's
    /// [`RegistryOptions::defer_loading`]).
    pub deferred: bool,
    /// Whether a deferred tool has been loaded in the conversation (only an agent knows:
    /// [`Agent::list_tools`](crate::Agent::list_tools) sets it; `false` elsewhere).
    pub loaded: bool,
}

/// A registered tool with everything worked out from it once: definition and metadata when it
/// is registered; argument checks and provider formats when first needed.
pub(super) struct ToolEntry {
    tool: Arc<dyn ExecutableTool>,
    definition: ChatTool,
    /// `None` for the default metadata, the common case: most tools set none, and an entry
    /// that is small to allocate makes registering a thousand tools cheap.
    metadata: Option<Box<ToolMetadata>>,
    /// Allocated on first use, so registering a tool stays one small allocation.
    derived: OnceLock<Box<Derived>>,
}

/// [`ToolMetadata::default`], as a value entries can point to.
static DEFAULT_METADATA: ToolMetadata = ToolMetadata::DEFAULT;

/// What a [`ToolEntry`] works out from its definition when first asked.
#[derive(Default)]
struct Derived {
    arguments: ArgumentChecks,
    formats: FormatCache,
}

impl ToolEntry {
    /// Checks the tool's definition (see [`checks`]) and keeps what calls need.
    pub(super) fn new(tool: Arc<dyn ExecutableTool>) -> Result<Self, RegistryError> {
        let definition = tool.get_schema();
        checks::check_definition(tool.name(), &definition)?;
        let metadata = tool.metadata();
        Ok(Self {
            metadata: (metadata != DEFAULT_METADATA).then(|| Box::new(metadata)),
            definition,
            tool,
            derived: OnceLock::new(),
        })
    }

    /// The tool's name, shared with its definition.
    pub(super) fn name(&self) -> &Arc<str> {
        &self.definition.function.name
    }

    /// The tool's definition, as `get_schema()` gave it when it was registered.
    pub(super) fn definition(&self) -> &ChatTool {
        &self.definition
    }

    pub(super) fn metadata(&self) -> &ToolMetadata {
        self.metadata.as_deref().unwrap_or(&DEFAULT_METADATA)
    }

    pub(super) fn tool(&self) -> &dyn ExecutableTool {
        &*self.tool
    }

    /// The tool, shared.
    pub(super) fn tool_arc(&self) -> &Arc<dyn ExecutableTool> {
        &self.tool
    }

    fn derived(&self) -> &Derived {
        self.derived.get_or_init(Box::default)
    }

    /// Whether the tool is deferred in a registry with `options`.
    pub(super) fn is_deferred(&self, options: &RegistryOptions) -> bool {
        options.defer_loading || self.metadata().defer_loading
    }

    pub(super) fn info(&self, enabled: bool, options: &RegistryOptions) -> ToolInfo {
        let metadata = self.metadata();
        ToolInfo {
            name: self.name().to_string(),
            description: self.definition.function.description.to_string(),
            title: metadata.title.clone(),
            category: metadata.category.clone(),
            icon: metadata.icon.clone(),
            default_enabled: metadata.default_enabled,
            enabled,
            hints: metadata.hints,
            deferred: self.is_deferred(options),
            loaded: false,
        }
    }

    /// The tool in `provider`'s format, converted once.
    pub(super) fn format(&self, provider: Provider, options: &FormatOptions) -> &FormatResult {
        self.derived()
            .formats
            .get(&self.definition, provider, options)
    }

    /// Prepares the arguments (see [`ArgumentChecks::prepare`]) and starts the tool
    /// ([`ExecutableTool::execute_object`], under the panic guard); a call still running is
    /// awaited by the caller, so a registry call is one small state machine around the tool's
    /// own future, and a call that finished at once is handed out as it is.
    pub(super) fn call(
        &self,
        args: JsonObject,
        context: Option<CallContext>,
        options: &RegistryOptions,
        default_timeout: Option<Duration>,
    ) -> Result<Call<'_>, ExecuteError> {
        let args = self.derived().arguments.prepare(
            self.tool(),
            self.name(),
            &self.definition.function.parameters,
            args,
            self.is_lenient(options),
            options.validate_arguments,
        )?;
        self.start_object(args, context, options, default_timeout)
    }

    /// Starts the tool on arguments ready for it (see [`call`](Self::call)).
    #[inline]
    fn start_object(
        &self,
        args: JsonObject,
        context: Option<CallContext>,
        options: &RegistryOptions,
        default_timeout: Option<Duration>,
    ) -> Result<Call<'_>, ExecuteError> {
        let tool = self.tool();
        match guarded(self.name(), || tool.execute_object(args, context))? {
            TextCall::Finished(result) => Ok(Call::finished(self.name(), result)),
            TextCall::Started(call) => Ok(Call::Running(GuardedCall::started(
                self.target(options, default_timeout),
                call,
            ))),
            TextCall::Refused(_) | TextCall::Unsupported(_) => Err(ExecuteError::Failed {
                name: self.name().to_string(),
                error: ToolError::new("the tool refused arguments given as an object"),
            }),
        }
    }

    /// Starts the tool on the model's argument text: straight into its typed arguments when it
    /// reads text and is not lenient (see [`ArgumentChecks::start_text`]), else parsed into an
    /// object and run as [`call`](Self::call) does.
    #[inline]
    pub(super) fn call_text(
        &self,
        text: &str,
        context: Option<CallContext>,
        options: &RegistryOptions,
        default_timeout: Option<Duration>,
    ) -> Result<Call<'_>, ExecuteError> {
        let context = if self.is_lenient(options) {
            context
        } else {
            match self.derived().arguments.start_text(
                self.tool(),
                self.name(),
                &self.definition.function.parameters,
                text,
                context,
                options.validate_arguments,
            )? {
                TextStart::Tool(TextCall::Finished(result)) => {
                    return Ok(Call::finished(self.name(), result));
                }
                TextStart::Tool(TextCall::Started(call)) => {
                    let target = self.target(options, default_timeout);
                    return Ok(Call::Running(GuardedCall::started(target, call)));
                }
                TextStart::Checked(args, context) => {
                    return self.start_object(args, context, options, default_timeout);
                }
                TextStart::Tool(TextCall::Refused(context) | TextCall::Unsupported(context)) => {
                    context
                }
            }
        };
        let args = parse_arguments(text).map_err(|message| ExecuteError::InvalidArguments {
            name: self.name().to_string(),
            message,
        })?;
        self.call(args, context, options, default_timeout)
    }

    /// Where a call of this tool goes, with its own timeout, else the caller's, else the
    /// registry's.
    #[inline]
    fn target(&self, options: &RegistryOptions, default_timeout: Option<Duration>) -> Target<'_> {
        Target {
            name: self.name(),
            timeout: self
                .metadata()
                .timeout
                .or(default_timeout)
                .or(options.default_timeout),
        }
    }

    /// Lenient arguments, when the tool or the registry asks for them, with what was changed.
    pub(super) fn coerce(&self, args: &mut JsonObject, options: &RegistryOptions) -> Vec<Coercion> {
        if !self.is_lenient(options) {
            return Vec::new();
        }
        ArgumentChecks::coerce(self.name(), &self.definition.function.parameters, args)
    }

    /// Whether the tool reads arguments leniently: its own choice, else the registry's.
    pub(super) fn is_lenient(&self, options: &RegistryOptions) -> bool {
        self.metadata()
            .lenient_arguments
            .unwrap_or(options.lenient_arguments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_default_metadata_is_the_default() {
        assert_eq!(DEFAULT_METADATA, ToolMetadata::default());
    }
}
