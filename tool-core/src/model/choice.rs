//! [`ToolChoice`]: whether, and which, tool the model must call.

use serde::{Deserialize, Serialize};

use super::{ProviderError, RequestTools};

/// Whether the model may, must or must not call tools, and which one.
///
/// Set it on a request with [`ChatRequest::tool_choice`](super::ChatRequest::tool_choice).
/// Each client sends it in its provider's own form:
///
/// | choice | OpenAI `tool_choice` | Anthropic `tool_choice` | Gemini `toolConfig.functionCallingConfig` | Ollama `/api/chat` |
/// |---|---|---|---|---|
/// | `Auto` | not sent | not sent | not sent | not sent |
/// | `None` | `"none"` | `{"type":"none"}` | `{"mode":"NONE"}` | no `tools` sent |
/// | `Required` | `"required"` | `{"type":"any"}` | `{"mode":"ANY"}` | an error |
/// | `Tool(name)` | `{"type":"function","function":{"name":…}}` | `{"type":"tool","name":…}` | `{"mode":"ANY","allowedFunctionNames":[…]}` | an error |
/// | `Allowed` | `{"type":"allowed_tools","allowed_tools":{"mode":…,"tools":[…]}}` | an error | `{"mode":"VALIDATED"` (or `"ANY"` when required)`,"allowedFunctionNames":[…]}` | an error |
///
/// The OpenAI Responses client sends the Responses forms: `"none"`, `"required"`,
/// `{"type":"function","name":…}` and `{"type":"allowed_tools","mode":…,"tools":[…]}`.
///
/// - `Auto` is the provider's own default, so it sends nothing and leaves the request as it was.
/// - A request without tools carries no `tools` and no tool choice, whatever the choice; but
///   `Required` and `Tool(name)` cannot be honoured without tools, so they are a
///   [`ProviderError::Config`] before anything is sent, as is a `Tool(name)` naming a tool the
///   request does not offer.
/// - `Allowed` keeps every offered tool in the request (so a provider's prompt cache still hits)
///   and lets the model call only the named ones, or must call one of them when `required`.
///   Anthropic's Messages API and Ollama have no such choice, so there it is a
///   [`ProviderError::Config`] (offer only those tools instead).
/// - Ollama's native `/api/chat` has no tool choice at all. `None` is honoured by leaving the
///   tools out; `Required` and `Tool(name)` are a [`ProviderError::Config`] saying Ollama cannot
///   force a tool call, rather than a choice dropped without a word.
/// - The offline [`TestModel`](super::TestModel) honours it too (`None`: text only;
///   `Tool(name)`: that tool alone).
///
/// It serializes as `"auto"`, `"none"`, `"required"` or `{"tool": "name"}`, for saved state.
///
/// ```
/// use tool_core::model::{ChatRequest, Message, ToolChoice};
///
/// let request = ChatRequest::new(vec![Message::user("What is the weather in Paris?")])
///     .tool_choice(ToolChoice::tool("get_weather"));
/// assert_eq!(request.tool_choice, ToolChoice::Tool("get_weather".into()));
/// assert_eq!(ToolChoice::default(), ToolChoice::Auto);
///
/// let saved = serde_json::to_string(&request.tool_choice).unwrap();
/// assert_eq!(saved, r#"{"tool":"get_weather"}"#);
/// assert_eq!(serde_json::from_str::<ToolChoice>(r#""none""#).unwrap(), ToolChoice::None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides whether to call tools (the providers' default).
    #[default]
    Auto,
    /// The model must not call tools; it answers with text.
    None,
    /// The model must call at least one of the offered tools.
    Required,
    /// The model must call the tool with this name, which must be among the offered tools.
    Tool(String),
    /// The model may call only these tools (OpenAI's `allowed_tools`), each among the offered
    /// tools; the others stay in the request. See [`ToolChoice::allowed`].
    Allowed {
        /// The tools the model may call.
        tools: Vec<String>,
        /// Whether the model must call one of them (otherwise it may answer with text).
        required: bool,
    },
}

impl ToolChoice {
    /// The model must call the tool with this name.
    pub fn tool(name: impl Into<String>) -> Self {
        Self::Tool(name.into())
    }

    /// The model may call only the tools named here (it may also answer with text); the other
    /// offered tools stay in the request, so a provider's prompt cache still hits.
    ///
    /// ```
    /// use tool_core::model::ToolChoice;
    ///
    /// let choice = ToolChoice::allowed(["get_weather", "read_file"]);
    /// assert_eq!(
    ///     serde_json::to_string(&choice).unwrap(),
    ///     r#"{"allowed":{"tools":["get_weather","read_file"],"required":false}}"#
    /// );
    /// ```
    pub fn allowed<I, S>(tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::allowed_with(tools, false)
    }

    /// The model must call one of the tools named here; the other offered tools stay in the
    /// request.
    pub fn required_one_of<I, S>(tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::allowed_with(tools, true)
    }

    fn allowed_with<I, S>(tools: I, required: bool) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Allowed {
            tools: tools.into_iter().map(Into::into).collect(),
            required,
        }
    }

    /// Checks that `tools` can honour the choice: `Required` needs at least one tool, and
    /// `Tool(name)` needs a tool of that name. `Auto` and `None` fit any tools.
    ///
    /// ```
    /// use tool_core::{ChatTool, model::{RequestTools, ToolChoice}};
    /// use serde_json::json;
    ///
    /// let weather = ChatTool::new("get_weather", "Current weather.", json!({ "type": "object" }));
    /// let tools = RequestTools::from_definitions(vec![weather]);
    /// assert!(ToolChoice::tool("get_weather").check(&tools).is_ok());
    /// assert_eq!(
    ///     ToolChoice::tool("get_time").check(&tools).unwrap_err().to_string(),
    ///     "tool choice names `get_time`, which is not among the request's tools (get_weather)",
    /// );
    /// ```
    pub fn check(&self, tools: &RequestTools) -> Result<(), ProviderError> {
        match self {
            Self::Required if tools.is_empty() => Err(ProviderError::Config(String::from(
                "tool choice `required` needs tools, and the request has none",
            ))),
            Self::Auto | Self::None | Self::Required => Ok(()),
            Self::Tool(name) if tools.is_empty() => Err(ProviderError::Config(format!(
                "tool choice names `{name}`, and the request has no tools"
            ))),
            Self::Tool(name) => offered(tools, std::slice::from_ref(name)),
            Self::Allowed { tools: allowed, .. } if allowed.is_empty() => Err(
                ProviderError::Config(String::from("tool choice `allowed` names no tools")),
            ),
            Self::Allowed { .. } if tools.is_empty() => Err(ProviderError::Config(String::from(
                "tool choice `allowed` names tools, and the request has none",
            ))),
            Self::Allowed { tools: allowed, .. } => offered(tools, allowed),
        }
    }

    /// Fails with [`ProviderError::Config`] for an `Allowed` choice, which the wire `provider`
    /// has no form for.
    #[cfg(feature = "anthropic")]
    pub(crate) fn reject_allowed(&self, provider: &str) -> Result<(), ProviderError> {
        match self {
            Self::Allowed { .. } => Err(ProviderError::Config(format!(
                "{provider} has no tool choice that limits the callable tools; offer only the \
                 allowed ones instead"
            ))),
            _ => Ok(()),
        }
    }
}

/// Checks that every name in `names` is an offered tool.
fn offered(tools: &RequestTools, names: &[String]) -> Result<(), ProviderError> {
    let offered = tools.names();
    match names
        .iter()
        .find(|name| !offered.iter().any(|tool| tool == name))
    {
        None => Ok(()),
        Some(name) => Err(ProviderError::Config(format!(
            "tool choice names `{name}`, which is not among the request's tools ({})",
            offered.join(", ")
        ))),
    }
}
