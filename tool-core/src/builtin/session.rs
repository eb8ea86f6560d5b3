//! `save_session_context`: writes the conversation so far to the configured file.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    __private,
    call::CallContext,
    context::{SavedConversation, ToolContext},
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata},
};

/// Arguments of `save_session_context`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SaveSessionContextArgs {
    /// Why the context is being saved.
    pub reason: String,
}

/// The built-in `save_session_context` tool: writes the session context (system prompt,
/// messages, notes) with the reason and a timestamp to
/// [`ToolContext::session_context_file_path`], atomically. The file format is
/// [`SavedConversation`].
#[derive(Clone, Debug)]
pub struct SaveSessionContext {
    context: ToolContext,
}

impl SaveSessionContext {
    /// A `save_session_context` tool writing `context`'s session.
    pub fn new(context: ToolContext) -> Self {
        Self { context }
    }
}

#[async_trait::async_trait]
impl ExecutableTool for SaveSessionContext {
    fn name(&self) -> &'static str {
        "save_session_context"
    }

    fn get_schema(&self) -> ChatTool {
        static SCHEMA: OnceLock<ChatTool> = OnceLock::new();
        __private::chat_tool(
            &SCHEMA,
            "save_session_context",
            &[
                "Save the current session context (system prompt, conversation and notes) to \
                 the session file, with the reason for saving.",
            ],
            __private::schema_for::<SaveSessionContextArgs>,
        )
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata::new()
            .title("Save session context")
            .category("session")
            .read_only(false)
            .destructive(false)
            .open_world(false)
            .sequential(true)
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        save(&self.context, args).await
    }

    /// Saves the conversation of the chat that made the call, whichever registry this tool
    /// sits in; the context it was built with when the call comes with none.
    async fn execute_with(&self, args: JsonObject, call: CallContext) -> Result<String, ToolError> {
        save(call.conversation().unwrap_or(&self.context), args).await
    }
}

/// Writes `context`'s session to its session file.
async fn save(context: &ToolContext, args: JsonObject) -> Result<String, ToolError> {
    let args: SaveSessionContextArgs = __private::narrow("save_session_context", args)?;
    let path = context.session_context_file_path();
    let saved = SavedConversation::new(args.reason, context.session_context());
    let mut text = serde_json::to_string_pretty(&saved)
        .map_err(|error| ToolError::new(format!("cannot encode the session context: {error}")))?;
    text.push('\n');
    super::write_atomic(path.clone(), text.into_bytes())
        .await
        .map_err(|error| {
            ToolError::new(format!(
                "cannot write the session context to {}: {error}",
                path.display()
            ))
        })?;
    Ok(format!("Session context saved to {}", path.display()))
}
