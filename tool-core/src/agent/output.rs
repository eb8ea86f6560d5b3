//! Typed output: a turn that ends with a value of a Rust type instead of text
//! ([`Agent::chat_output`](super::Agent::chat_output)).
//!
//! In tool mode ([`OutputMode::Tool`]) the agent offers one more tool, the output tool
//! ([`OUTPUT_TOOL`]), whose parameters are the JSON Schema of the output type; the run ends
//! when the model calls it with a value that the schema, the type and the application's
//! validators accept. In native and prompted modes the model's text answer is the output,
//! asked for with the provider's structured-output form ([`ResponseFormat`]) or in the
//! instructions. Everything else is a turn like [`Agent::chat`](super::Agent::chat)'s: the
//! model may call other tools first.

use std::{
    fmt,
    sync::{Arc, Mutex, PoisonError},
};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{AgentError, AgentEvent, AgentResponse, TurnOptions, partial::partial_value};
use crate::{
    call::CallContext,
    context::{PendingCall, ToolContext},
    execute::{
        ExecuteError, describe_schema_errors, describe_serde_error, describe_serde_error_within,
        parse_arguments,
    },
    message::{Message, ToolCall},
    model::{RequestTools, ResponseFormat, ToolChoice},
    schema::{OptionalNulls, Provider},
    tool::ChatTool,
};

/// The name of the tool the model calls to give a typed output.
pub const OUTPUT_TOOL: &str = "final_result";

/// The result the model reads when its output is accepted.
const ACCEPTED_RESULT: &str = "Final result accepted.";

/// A value the application rejects, with the message the model reads.
type Validator<T> = Arc<dyn Fn(&T, &CallContext) -> Result<(), String> + Send + Sync>;

/// How a typed run asks the model for its output ([`OutputOptions::mode`]).
///
/// | mode | the request | the output |
/// |---|---|---|
/// | [`Tool`](Self::Tool) | one more tool, [`OUTPUT_TOOL`], whose parameters are the output's schema (for an enum whose variants each hold an object, one tool per variant, `final_result_<Variant>`) | the output tool's arguments |
/// | [`Native`](Self::Native) | the provider's structured-output form, [`ResponseFormat::JsonSchema`] (OpenAI `response_format` / Responses `text.format` with `json_schema`, strict where the schema allows; Gemini `responseJsonSchema`; Ollama `format`; Anthropic `output_config.format` when the client has structured outputs on) | the text answer |
/// | [`Prompted`](Self::Prompted) | the schema in the instructions (a system message), and the provider's JSON mode, [`ResponseFormat::JsonObject`], where it has one | the text answer |
///
/// The default ([`default_for`](Self::default_for)) is the tool mode for every provider: it
/// is the one form every wire accepts beside other tools (Gemini before version 3 refuses a
/// JSON response type together with function calling, and only recent Anthropic models take
/// its structured outputs). [`Native`](Self::Native) asked of an Anthropic client runs in the
/// tool mode unless the client has structured outputs on
/// (`AnthropicConfig::structured_outputs`; off by default, since older models answer 400).
/// There the schema goes adapted to what Anthropic accepts (bounds, lengths and patterns become
/// description notes), and the agent still validates the answer against the full schema, so a
/// bound Anthropic cannot enforce is checked and retried like any invalid output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputMode {
    /// An output tool the model calls with the value.
    Tool,
    /// The provider's own structured output; the text answer is the value.
    Native,
    /// The schema in the instructions (and JSON mode where the provider has one); the text
    /// answer is the value.
    Prompted,
}

impl OutputMode {
    /// The mode a run uses on `provider` unless [`OutputOptions::mode`] sets one: the tool mode,
    /// for every provider.
    pub fn default_for(provider: Provider) -> Self {
        let _ = provider;
        Self::Tool
    }

    /// The mode a run asked for runs in on a client: native output on a client without
    /// structured output ([`ChatModel::structured_output`](crate::model::ChatModel::structured_output),
    /// Anthropic unless turned on) is the tool mode.
    pub(super) fn on(self, structured_output: bool) -> Self {
        match self {
            Self::Native if !structured_output => Self::Tool,
            mode => mode,
        }
    }
}

/// Settings of one typed run ([`Agent::chat_output_with`](super::Agent::chat_output_with)).
///
/// ```
/// use tool_core::agent::OutputOptions;
///
/// let options = OutputOptions::<u32>::new()
///     .max_retries(2)
///     .validator(|n: &u32| if *n > 0 { Ok(()) } else { Err("give a positive number".into()) });
/// # let _ = options;
/// ```
pub struct OutputOptions<T> {
    pub(super) mode: Option<OutputMode>,
    pub(super) max_retries: u32,
    pub(super) validators: Vec<Validator<T>>,
    pub(super) turn: TurnOptions,
}

impl<T> Default for OutputOptions<T> {
    fn default() -> Self {
        Self {
            mode: None,
            max_retries: 1,
            validators: Vec::new(),
            turn: TurnOptions::default(),
        }
    }
}

impl<T> fmt::Debug for OutputOptions<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputOptions")
            .field("mode", &self.mode)
            .field("max_retries", &self.max_retries)
            .field("validators", &self.validators.len())
            .field("turn", &self.turn)
            .finish()
    }
}

impl<T> OutputOptions<T> {
    /// One retry for an invalid output, no validators, the agent's turn settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// How the model is asked for the output; [`OutputMode::default_for`] the agent's provider
    /// unless set.
    #[must_use]
    pub fn mode(mut self, mode: OutputMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// How many invalid outputs the model may correct (1 unless set): one more invalid output
    /// ends the run with [`AgentError::OutputRetriesExhausted`].
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Adds a check of the value after it has been deserialized: `Err(message)` rejects it, and
    /// the model reads the message and tries again (within [`max_retries`](Self::max_retries)).
    #[must_use]
    pub fn validator<F>(mut self, validator: F) -> Self
    where
        F: Fn(&T) -> Result<(), String> + Send + Sync + 'static,
    {
        self.validators
            .push(Arc::new(move |value, _: &CallContext| validator(value)));
        self
    }

    /// Like [`validator`](Self::validator), with what a tool gets of its call: the
    /// application's [`Deps`](crate::Deps) (the agent's and the turn's), the step and turn, the
    /// conversation so far, and the output call's id and tool name (for a text answer in
    /// native or prompted mode, an empty id and [`OUTPUT_TOOL`]).
    ///
    /// ```
    /// use tool_core::{CallContext, agent::OutputOptions};
    ///
    /// struct Stock(u32);
    ///
    /// let options = OutputOptions::<u32>::new().validator_with(|n: &u32, call: &CallContext| {
    ///     match call.dep::<Stock>() {
    ///         Ok(Stock(stock)) if n > stock => Err(format!("only {stock} are in stock")),
    ///         Ok(_) => Ok(()),
    ///         Err(missing) => Err(missing.to_string()),
    ///     }
    /// });
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn validator_with<F>(mut self, validator: F) -> Self
    where
        F: Fn(&T, &CallContext) -> Result<(), String> + Send + Sync + 'static,
    {
        self.validators.push(Arc::new(validator));
        self
    }

    /// The run's other settings (active tools, deps, tool choice).
    #[must_use]
    pub fn turn(mut self, options: TurnOptions) -> Self {
        self.turn = options;
        self
    }
}

/// The outcome of a typed run: the value and the turn that produced it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OutputResponse<T> {
    /// The value the model gave, accepted by its schema, its type and every validator.
    pub output: T,
    /// The turn: the text the model wrote alongside (often empty), the steps, the tool calls it
    /// ran (the output call is not counted), usage and finish reason.
    pub response: AgentResponse,
    /// How many invalid outputs the model corrected.
    pub output_retries: u32,
}

/// One item of [`Agent::stream_output_with`](super::Agent::stream_output_with)'s stream.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum OutputEvent<T> {
    /// An event of the turn, as [`Agent::stream_chat`](super::Agent::stream_chat) yields it (but for
    /// [`AgentEvent::Done`], which [`Done`](Self::Done) replaces).
    Agent(AgentEvent),
    /// The output's JSON so far, its open strings and brackets closed; sent after the event
    /// that brought more of it, when the view changed. Not validated.
    Partial(Value),
    /// The accepted output and the turn: the stream's last item.
    Done(OutputResponse<T>),
}

/// Follows the output's JSON through a turn's events.
pub(super) struct PartialOutput {
    mode: OutputMode,
    wrapped: bool,
    /// In tool mode, the output tools' names and the enum variant each gives (`None`: the
    /// output tool of a type that is not split).
    tools: Vec<(String, Option<String>)>,
    /// In tool mode, the position of the output call in the current answer, and its variant.
    call: Option<(usize, Option<String>)>,
    text: String,
    last: Option<Value>,
}

impl PartialOutput {
    /// The view of a typed turn in `mode`; `wrapped` when the value is the `value` member of
    /// the output's JSON, `tools` the output tools and their variants.
    fn new(mode: OutputMode, wrapped: bool, tools: Vec<(String, Option<String>)>) -> Self {
        Self {
            mode,
            wrapped,
            tools,
            call: None,
            text: String::new(),
            last: None,
        }
    }

    /// The new partial view, if `event` brought more of the output and the view changed.
    pub(super) fn see(&mut self, event: &AgentEvent) -> Option<Value> {
        match (self.mode, event) {
            (OutputMode::Tool, AgentEvent::ToolCallStarted(start)) => {
                let (_, variant) = self.tools.iter().find(|(name, _)| *name == start.name)?;
                self.call = Some((start.index, variant.clone()));
                self.restart();
                None
            }
            (OutputMode::Tool, AgentEvent::ToolCallDelta { index, arguments })
                if self.call.as_ref().is_some_and(|(call, _)| call == index) =>
            {
                self.text.push_str(arguments);
                self.view()
            }
            (OutputMode::Tool, _) => None,
            (_, AgentEvent::TextDelta(delta)) => {
                self.text.push_str(delta);
                self.view()
            }
            (_, AgentEvent::StepFinished { .. }) => {
                self.restart();
                None
            }
            _ => None,
        }
    }

    fn restart(&mut self) {
        self.text.clear();
        self.last = None;
    }

    fn view(&mut self) -> Option<Value> {
        let text = self.text.trim_start();
        // A Markdown fence's first line (```json) is not part of the value.
        let text = match text.strip_prefix("```") {
            Some(fenced) => fenced.split_once('\n').map_or("", |(_, rest)| rest),
            None => text,
        };
        let mut value = partial_value(text)?;
        if let Some((_, Some(variant))) = &self.call {
            // A variant's tool takes the variant's data, unwrapped.
            value = json!({ variant.as_str(): value });
        } else if self.wrapped {
            value = value.get("value")?.clone();
        }
        if self.last.as_ref() == Some(&value) {
            return None;
        }
        self.last = Some(value.clone());
        Some(value)
    }
}

/// The output a turn asks for, without its type: what [`run::turn`] needs.
pub(crate) trait OutputSpec: Send + Sync + fmt::Debug {
    /// The mode the run asks for its output in.
    fn mode(&self) -> OutputMode;
    /// The output's JSON Schema (an object's: a value that is not an object is wrapped).
    fn schema(&self) -> &Value;
    /// The tools a step offers in tool mode: the output tool, or one per variant of an enum.
    fn tools(&self) -> &[ChatTool];
    /// Checks the arguments of a call of the output tool `name` (or, in the other modes, the
    /// text answer); keeps the value when it is accepted, else returns the text the model reads.
    fn accept(&self, name: &str, arguments: &str, call: &CallContext) -> Result<(), String>;
    /// Counts a failure; `false` once the budget is used up.
    fn fail(&self) -> (u32, bool);
}

/// The output tool's definition, validator and the value once accepted.
pub(super) struct TypedOutput<T> {
    pub(super) mode: OutputMode,
    tool: ChatTool,
    /// The schema's validator; `None` if the schema is not one the validator reads (the type
    /// then checks alone).
    validator: Option<jsonschema::Validator>,
    wrapped: bool,
    /// In tool mode, for an enum whose variants all hold an object: one output tool per
    /// variant. Empty otherwise.
    variants: Vec<Variant>,
    /// The tools a step offers in tool mode.
    offered: Vec<ChatTool>,
    max_retries: u32,
    validators: Vec<Validator<T>>,
    state: Mutex<State<T>>,
}

struct State<T> {
    value: Option<T>,
    failures: u32,
}

impl<T> fmt::Debug for TypedOutput<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedOutput")
            .field("mode", &self.mode)
            .field("tool", &self.tool.name())
            .field("wrapped", &self.wrapped)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

impl<T: JsonSchema + DeserializeOwned + Send> TypedOutput<T> {
    pub(super) fn new(mode: OutputMode, max_retries: u32, validators: Vec<Validator<T>>) -> Self {
        let schema = schema_of::<T>();
        let variants = match mode {
            OutputMode::Tool => variants(&schema).unwrap_or_default(),
            _ => Vec::new(),
        };
        let (parameters, wrapped) = output_parameters(schema);
        let validator = jsonschema::validator_for(&parameters).ok();
        let tool = ChatTool::new(
            OUTPUT_TOOL,
            "Give the final result of the task. Call this once, when you have the answer; its \
             arguments are the result.",
            parameters,
        );
        let offered = if variants.is_empty() {
            vec![tool.clone()]
        } else {
            variants
                .iter()
                .map(|variant| variant.tool.clone())
                .collect()
        };
        Self {
            mode,
            tool,
            validator,
            wrapped,
            variants,
            offered,
            max_retries,
            validators,
            state: Mutex::new(State {
                value: None,
                failures: 0,
            }),
        }
    }

    /// The outcome of the typed turn that ended with `response`.
    pub(super) fn finish(&self, response: AgentResponse) -> Result<OutputResponse<T>, AgentError> {
        if !response.pending_approvals.is_empty() {
            return Err(AgentError::AwaitingApproval {
                requests: response.pending_approvals,
            });
        }
        let (value, failures) = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            (state.value.take(), state.failures)
        };
        // A turn with an output spec ends well only once a value is accepted.
        let output = value.ok_or(AgentError::MaxSteps {
            steps: response.steps,
        })?;
        Ok(OutputResponse {
            output,
            response,
            output_retries: failures,
        })
    }

    /// The view of this output that [`stream_output_with`](super::Agent::stream_output_with)
    /// follows.
    pub(super) fn partial(&self) -> PartialOutput {
        let tools = if self.variants.is_empty() {
            vec![(OUTPUT_TOOL.to_owned(), None)]
        } else {
            self.variants
                .iter()
                .map(|variant| (variant.tool.name().to_owned(), Some(variant.tag.clone())))
                .collect()
        };
        PartialOutput::new(self.mode, self.wrapped, tools)
    }

    /// Reads the arguments of a call of the output tool `name` into a value that its schema,
    /// the type and the validators accept.
    fn check(&self, name: &str, arguments: &str, call: &CallContext) -> Result<T, ExecuteError> {
        let invalid = |message| ExecuteError::InvalidArguments {
            name: name.to_owned(),
            message,
        };
        let variant = self
            .variants
            .iter()
            .find(|variant| variant.tool.name() == name);
        let (tool, validator) = match variant {
            Some(variant) => (&variant.tool, &variant.validator),
            None => (&self.tool, &self.validator),
        };
        let mut args = parse_arguments(arguments).map_err(invalid)?;
        // Under OpenAI strict mode a model sends `null` for an optional field it leaves out.
        OptionalNulls::for_schema(tool.parameters()).drop_from(&mut args);
        let value = Value::Object(args);
        if let Some(validator) = validator {
            if !validator.is_valid(&value) {
                return Err(invalid(describe_schema_errors(validator, &value)));
            }
        }
        let output: T = if let Some(variant) = variant {
            // The variant's data is read as the enum, `{"Circle": {…}}`; an error's place is
            // told from the data the model sent.
            let outer = format!("/{}", variant.tag.replace('~', "~0").replace('/', "~1"));
            serde_path_to_error::deserialize(json!({ variant.tag.as_str(): value })).map_err(
                |error| {
                    invalid(describe_serde_error_within(
                        &outer,
                        error.path(),
                        error.inner(),
                    ))
                },
            )?
        } else {
            let serde_error = |error: serde_path_to_error::Error<serde_json::Error>| {
                invalid(describe_serde_error(error.path(), error.inner()))
            };
            // A wrapped value is read through its wrapper, so an error's place starts at
            // `/value`.
            if self.wrapped {
                serde_path_to_error::deserialize::<_, Wrapped<T>>(value)
                    .map_err(serde_error)?
                    .value
            } else {
                serde_path_to_error::deserialize(value).map_err(serde_error)?
            }
        };
        for validator in &self.validators {
            validator(&output, call).map_err(|message| ExecuteError::RetryRequested {
                name: name.to_owned(),
                message,
            })?;
        }
        Ok(output)
    }
}

impl<T: JsonSchema + DeserializeOwned + Send> OutputSpec for TypedOutput<T> {
    fn mode(&self) -> OutputMode {
        self.mode
    }

    fn schema(&self) -> &Value {
        self.tool.parameters()
    }

    fn tools(&self) -> &[ChatTool] {
        &self.offered
    }

    fn accept(&self, name: &str, arguments: &str, call: &CallContext) -> Result<(), String> {
        if self.mode != OutputMode::Tool {
            if let Err(error) = serde_json::from_str::<Value>(arguments) {
                return Err(format!(
                    "Error: the answer is not JSON ({error}); answer with only a JSON value that \
                     matches the schema"
                ));
            }
        }
        let output = self
            .check(name, arguments, call)
            .map_err(|error| match self.mode {
                OutputMode::Tool if self.variants.is_empty() => format!(
                    "{}; call {name} again with a corrected value",
                    error.to_model_string()
                ),
                OutputMode::Tool => format!(
                    "{}; call {name} again with a corrected value, or another of {}",
                    error.to_model_string(),
                    names(&self.offered, name)
                ),
                _ => match error {
                    ExecuteError::RetryRequested { message, .. } => format!(
                        "Error: the output was rejected: {message}; answer again with only the \
                     corrected JSON value"
                    ),
                    other => format!(
                        "Error: the answer is not a valid output: {}; answer again with only the \
                     corrected JSON value",
                        other.to_model_string().trim_start_matches(&format!(
                            "Error: invalid arguments for {OUTPUT_TOOL}: "
                        ))
                    ),
                },
            })?;
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .value = Some(output);
        Ok(())
    }

    fn fail(&self) -> (u32, bool) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.failures += 1;
        (state.failures, state.failures <= self.max_retries)
    }
}

/// One variant of an enum output, given through an output tool of its own
/// (`final_result_<Variant>`) whose arguments are the variant's data.
struct Variant {
    /// The variant's name in the enum's JSON (`{"Circle": {…}}`).
    tag: String,
    tool: ChatTool,
    validator: Option<jsonschema::Validator>,
}

/// The longest tool name every provider takes.
const MAX_TOOL_NAME: usize = 64;

/// One output tool per variant, when `schema` is an enum's in serde's default (externally
/// tagged) form whose every variant holds an object, `{"Circle": {"radius": …}}`: the tool
/// `final_result_Circle` takes the object. `None` for any other schema (a struct, an enum of
/// names, an enum with a variant that holds no object, a variant name a tool name cannot
/// carry): the one output tool takes it whole.
fn variants(schema: &Value) -> Option<Vec<Variant>> {
    let root = schema.as_object()?;
    let branches = root
        .get("oneOf")
        .or_else(|| root.get("anyOf"))?
        .as_array()?;
    let definitions = root.get("$defs").and_then(Value::as_object);
    if branches.len() < 2 {
        return None;
    }
    branches
        .iter()
        .map(|branch| {
            let branch = branch.as_object()?;
            let properties = branch.get("properties")?.as_object()?;
            let [(tag, data)] = properties.iter().collect::<Vec<_>>()[..] else {
                return None;
            };
            if branch.get("required") != Some(&json!([tag])) {
                return None;
            }
            let name = format!("{OUTPUT_TOOL}_{tag}");
            let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if name.len() > MAX_TOOL_NAME || !tag.chars().all(allowed) {
                return None;
            }
            let mut parameters = resolve(data, definitions)?.clone();
            if parameters.get("type").and_then(Value::as_str) != Some("object") {
                return None;
            }
            parameters.remove("title");
            if let Some(definitions) = definitions {
                // The data's own references still point into the enum's definitions.
                parameters
                    .entry("$defs")
                    .or_insert_with(|| Value::Object(definitions.clone()));
            }
            let parameters = Value::Object(parameters);
            let mut description = format!(
                "Give the final result of the task as a {tag}. Call one final_result tool once, \
                 when you have the answer; its arguments are the result."
            );
            let documented = branch
                .get("description")
                .or_else(|| data.get("description"))
                .and_then(Value::as_str);
            if let Some(documented) = documented {
                description = format!("{documented}\n\n{description}");
            }
            Some(Variant {
                tag: tag.clone(),
                validator: jsonschema::validator_for(&parameters).ok(),
                tool: ChatTool::new(name, description, parameters),
            })
        })
        .collect()
}

/// The object schema `schema` is, or the definition it refers to (`{"$ref": "#/$defs/A"}`).
fn resolve<'a>(
    schema: &'a Value,
    definitions: Option<&'a Map<String, Value>>,
) -> Option<&'a Map<String, Value>> {
    let schema = schema.as_object()?;
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => definitions?
            .get(reference.strip_prefix("#/$defs/")?)?
            .as_object(),
        None => Some(schema),
    }
}

/// A value whose schema is not an object's, as the output tool takes it.
#[derive(serde::Deserialize)]
#[serde(bound = "T: DeserializeOwned")]
struct Wrapped<T> {
    value: T,
}

/// `T`'s JSON Schema, with its definitions under `$defs`.
fn schema_of<T: JsonSchema>() -> Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// The output tool's parameters for the output's `schema`, and whether the value is wrapped in
/// `{"value": …}` (its schema is not an object's).
fn output_parameters(schema: Value) -> (Value, bool) {
    let Value::Object(mut root) = schema else {
        return (wrap(Value::Bool(true), Map::new()), true);
    };
    root.remove("$schema");
    if root.get("type").and_then(Value::as_str) == Some("object") {
        return (Value::Object(root), false);
    }
    let definitions = match root.remove("$defs") {
        Some(Value::Object(definitions)) => definitions,
        _ => Map::new(),
    };
    root.remove("title");
    (wrap(Value::Object(root), definitions), true)
}

fn wrap(value: Value, definitions: Map<String, Value>) -> Value {
    let mut root = json!({
        "type": "object",
        "properties": { "value": value },
        "required": ["value"],
        "additionalProperties": false,
    });
    if !definitions.is_empty() {
        root["$defs"] = Value::Object(definitions);
    }
    root
}

/// The step's tools, with the output tool added when the turn asks for an output.
pub(super) fn offer(output: Option<&dyn OutputSpec>, tools: RequestTools) -> RequestTools {
    let Some(output) = output.filter(|output| output.mode() == OutputMode::Tool) else {
        return tools;
    };
    // A registry tool of the same name is shadowed: a request never names a tool twice.
    let mut definitions: Vec<ChatTool> = tools
        .definitions()
        .iter()
        .filter(|tool| !is_output(output, tool.name()))
        .cloned()
        .collect();
    definitions.extend(output.tools().iter().cloned());
    RequestTools::from_definitions(definitions)
}

/// The step's tool choice, with the output tools added to an allowed list in tool mode: the
/// model must always be able to give the output.
pub(super) fn choice(output: Option<&dyn OutputSpec>, choice: ToolChoice) -> ToolChoice {
    match (
        output.filter(|output| output.mode() == OutputMode::Tool),
        choice,
    ) {
        (
            Some(output),
            ToolChoice::Allowed {
                mut tools,
                required,
            },
        ) => {
            for tool in output.tools() {
                if !tools.iter().any(|name| name == tool.name()) {
                    tools.push(tool.name().to_owned());
                }
            }
            ToolChoice::Allowed { tools, required }
        }
        (_, choice) => choice,
    }
}

/// The model's calls apart from the output tool's, and the output tool's.
pub(super) fn split(
    output: Option<&dyn OutputSpec>,
    calls: Vec<ToolCall>,
) -> (Vec<ToolCall>, Vec<ToolCall>) {
    let Some(output) = output.filter(|output| output.mode() == OutputMode::Tool) else {
        return (calls, Vec::new());
    };
    calls
        .into_iter()
        .partition(|call| !is_output(output, &call.name))
}

/// Whether `name` is one of the output tools.
fn is_output(output: &dyn OutputSpec, name: &str) -> bool {
    output.tools().iter().any(|tool| tool.name() == name)
}

/// The names of `tools` but `except`, for a message: `a`, `a or b`, `a, b or c`.
fn names(tools: &[ChatTool], except: &str) -> String {
    let names: Vec<&str> = tools
        .iter()
        .map(ChatTool::name)
        .filter(|name| *name != except)
        .collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The output calls of a step whose other calls wait for approval, as pending calls that
/// already have their result: the output is not judged, the model gives it again later.
pub(super) fn not_judged(outputs: &[ToolCall]) -> impl Iterator<Item = PendingCall> + '_ {
    outputs.iter().map(|call| PendingCall {
        call: call.clone(),
        needs_approval: false,
        result: Some(Message::tool_error(
            &call.id,
            &call.name,
            "Error: not accepted yet; other calls of this step wait for approval. Give the \
             result again once they are answered",
        )),
    })
}

/// Puts the results of the last step in the order of its calls: the output calls' results were
/// added after those of the calls that ran first.
fn results_in_call_order(context: &ToolContext) {
    let messages = context.session_context().messages;
    let Some(step) = messages
        .iter()
        .rposition(|message| matches!(message, Message::Assistant { .. }))
    else {
        return;
    };
    let Message::Assistant { tool_calls, .. } = &messages[step] else {
        return;
    };
    let position = |message: &Message| match message {
        Message::Tool { tool_call_id, .. } => tool_calls
            .iter()
            .position(|call| call.id == *tool_call_id)
            .unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let mut results = messages[step + 1..].to_vec();
    if results.is_sorted_by_key(position) {
        return;
    }
    results.sort_by_key(position);
    context.truncate_messages(step + 1);
    context.extend_messages(results);
}

/// How a step went for the output.
pub(super) enum Judged {
    /// The turn ends: an output was accepted, or none was asked for.
    Done,
    /// The model tries again at the next step.
    Again,
    /// The output retry budget is used up.
    Failed(AgentError),
}

/// Judges a step's output calls (the other calls have run), or its text when it made no call:
/// each output call gets its result; a text answer where an output was required is an invalid
/// output. `call_context` gives the validators the context of a call (id, tool name).
pub(super) fn judge(
    output: Option<&dyn OutputSpec>,
    context: &ToolContext,
    call_context: &dyn Fn(&str, &str) -> CallContext,
    text: &str,
    outputs: &[ToolCall],
) -> Judged {
    let Some(output) = output else {
        return Judged::Done;
    };
    let mut accepted = false;
    let mut last = None;
    for call in outputs {
        if accepted {
            context.push_message(Message::tool_error(
                &call.id,
                &call.name,
                "Error: not used; an earlier final result was accepted",
            ));
            continue;
        }
        match output.accept(
            &call.name,
            &call.arguments,
            &call_context(&call.id, &call.name),
        ) {
            Ok(()) => {
                accepted = true;
                context.push_message(Message::tool_result(&call.id, &call.name, ACCEPTED_RESULT));
            }
            Err(error) => {
                context.push_message(Message::tool_error(&call.id, &call.name, error.clone()));
                last = Some((call.arguments.to_string(), error));
            }
        }
    }
    if !outputs.is_empty() {
        results_in_call_order(context);
    }
    if accepted {
        return Judged::Done;
    }
    let (last_output, last_error) = if let Some(last) = last {
        last
    } else {
        let error = if output.mode() == OutputMode::Tool {
            format!(
                "Error: a plain text answer is not accepted here; give the result by calling \
                 {}",
                names(output.tools(), "")
            )
        } else {
            // The text answer is the output.
            match output.accept(
                OUTPUT_TOOL,
                without_fence(text),
                &call_context("", OUTPUT_TOOL),
            ) {
                Ok(()) => return Judged::Done,
                Err(error) => error,
            }
        };
        context.push_message(Message::user(error.clone()));
        (text.to_owned(), error)
    };
    let (failures, within_budget) = output.fail();
    if within_budget {
        tracing::debug!(failures, "the model gave an invalid output");
        Judged::Again
    } else {
        tracing::warn!(failures, "the model used up its output retries");
        Judged::Failed(AgentError::OutputRetriesExhausted {
            failures,
            last_output,
            last_error,
        })
    }
}

/// The form of the answer a request asks for: the output's schema in native mode, JSON mode in
/// prompted mode.
pub(super) fn response_format(output: Option<&dyn OutputSpec>) -> Option<ResponseFormat> {
    let output = output?;
    match output.mode() {
        OutputMode::Native => Some(ResponseFormat::json_schema(
            OUTPUT_TOOL,
            output.schema().clone(),
        )),
        OutputMode::Prompted => Some(ResponseFormat::JsonObject),
        _ => None,
    }
}

/// The request's messages, with the output's schema added to the instructions in prompted mode
/// (to the leading system message, or as one when there is none).
pub(super) fn instruct(
    output: Option<&dyn OutputSpec>,
    mut messages: Vec<Message>,
) -> Vec<Message> {
    let Some(output) = output.filter(|output| output.mode() == OutputMode::Prompted) else {
        return messages;
    };
    let instructions = format!(
        "Always respond with a JSON value that matches this JSON Schema, and nothing else (no \
         prose, no code fence):\n{}",
        output.schema()
    );
    match messages.first_mut() {
        Some(Message::System { content }) => {
            *content = format!("{content}\n\n{instructions}");
        }
        _ => messages.insert(0, Message::system(instructions)),
    }
    messages
}

/// A text answer without the Markdown code fence a model may put around its JSON.
fn without_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(inner) = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
    else {
        return trimmed;
    };
    // The fence's first line may name the language (`json`).
    inner
        .split_once('\n')
        .map_or(inner, |(first, rest)| {
            if first.trim().chars().all(char::is_alphanumeric) {
                rest
            } else {
                inner
            }
        })
        .trim()
}
