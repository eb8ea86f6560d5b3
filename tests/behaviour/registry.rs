//! `ToolRegistry`: lifecycle, introspection, execution and its error strings, validation,
//! timeouts, panics, snapshots and change events (seeds 000, 001, 002).

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tool_core::{
    ChatTool, ExecutableTool, ExecuteError, JsonObject, RegistryError, RegistryEvent,
    RegistryOptions, ToolError, ToolMetadata, ToolRegistry, async_trait,
};

/// A hand-written tool whose behaviour each test picks.
struct TestTool {
    name: &'static str,
    description: &'static str,
    parameters: Value,
    metadata: ToolMetadata,
    behaviour: Behaviour,
    calls: Arc<AtomicUsize>,
}

#[derive(Clone, Copy)]
enum Behaviour {
    /// Returns the arguments as JSON text.
    Echo,
    /// Returns `Err("boom")`.
    Fail,
    /// Panics.
    Panic,
    /// Never finishes (waiting on a Tokio timer).
    Hang,
    /// Never finishes, needing no runtime to wait.
    Pending,
}

impl TestTool {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            description: "A tool for tests.",
            parameters: json!({
                "type": "object",
                "properties": { "city": { "type": "string" }, "days": { "type": "integer", "minimum": 1 } },
                "required": ["city"]
            }),
            metadata: ToolMetadata::default(),
            behaviour: Behaviour::Echo,
            calls: Arc::default(),
        }
    }

    fn behaving(mut self, behaviour: Behaviour) -> Self {
        self.behaviour = behaviour;
        self
    }

    fn with_metadata(mut self, metadata: ToolMetadata) -> Self {
        self.metadata = metadata;
        self
    }
}

#[async_trait]
impl ExecutableTool for TestTool {
    fn name(&self) -> &str {
        self.name
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(self.name, self.description, self.parameters.clone())
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match self.behaviour {
            Behaviour::Echo => Ok(Value::Object(args).to_string()),
            Behaviour::Fail => Err(ToolError::new("boom")),
            Behaviour::Panic => panic!("the tool fell over"),
            Behaviour::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok("too late".to_owned())
            }
            Behaviour::Pending => std::future::pending().await,
        }
    }

    fn metadata(&self) -> ToolMetadata {
        self.metadata.clone()
    }
}

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("test arguments must be an object, not {other}"),
    }
}

fn registry_with(names: &[&'static str]) -> ToolRegistry {
    let registry = ToolRegistry::new();
    for name in names {
        registry.register(TestTool::new(name)).unwrap();
    }
    registry
}

// --- lifecycle ------------------------------------------------------------------------------

#[test]
fn a_registered_tool_is_enabled_by_default() {
    let registry = ToolRegistry::new();
    registry.register(TestTool::new("weather")).unwrap();
    assert!(registry.has_tool("weather"));
    assert!(registry.is_tool_enabled("weather"), "enabled by default");
}

#[test]
fn a_tool_whose_metadata_says_disabled_is_registered_disabled() {
    let registry = ToolRegistry::new();
    registry
        .register(
            TestTool::new("weather").with_metadata(ToolMetadata::new().default_enabled(false)),
        )
        .unwrap();
    assert!(registry.has_tool("weather"));
    assert!(!registry.is_tool_enabled("weather"));
    assert!(registry.get_enabled_schemas().is_empty());
}

#[test]
fn unregister_removes_the_tool_and_keeps_the_others() {
    let registry = registry_with(&["a", "b"]);
    assert!(registry.unregister("a"));
    assert!(!registry.has_tool("a"));
    assert_eq!(registry.get_tool_names(), ["b"]);
}

#[test]
fn unregistering_an_unknown_name_changes_nothing() {
    let registry = registry_with(&["a"]);
    assert!(!registry.unregister("missing"));
    assert!(!registry.unregister("missing"));
    assert_eq!(registry.get_tool_names(), ["a"]);
}

#[test]
fn enable_puts_a_disabled_tool_back_among_the_enabled() {
    let registry = registry_with(&["a"]);
    assert!(registry.disable("a"));
    assert!(registry.enable("a"));
    assert!(registry.is_tool_enabled("a"));
    assert_eq!(registry.get_enabled_schemas()[0].name(), "a");
}

#[test]
fn a_disabled_tool_stays_registered_but_leaves_the_enabled_list() {
    let registry = registry_with(&["a", "b"]);
    assert!(registry.disable("a"));
    assert!(registry.has_tool("a"), "a disabled tool stays registered");
    let names: Vec<_> = registry
        .get_enabled_schemas()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(names, ["b"]);
}

#[test]
fn enable_and_disable_unknown_tools_report_false() {
    let registry = ToolRegistry::new();
    assert!(!registry.enable("missing"));
    assert!(!registry.disable("missing"));
}

#[test]
fn enabled_schemas_come_in_registration_order() {
    let registry = registry_with(&["c", "a", "b"]);
    assert!(registry.disable("a"));
    let names: Vec<_> = registry
        .get_enabled_schemas()
        .into_iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(names, ["c", "b"], "enabled tools in registration order");
}

#[tokio::test]
async fn executing_a_disabled_tool_says_it_is_not_available() {
    let registry = registry_with(&["a"]);
    assert!(registry.disable("a"));
    let text = registry.execute("a", args(json!({"city": "Oslo"}))).await;
    assert_eq!(text, "Error: tool 'a' is not available (it is disabled)");
    let outcome = registry
        .try_execute("a", args(json!({"city": "Oslo"})))
        .await;
    assert_eq!(
        outcome.unwrap_err().to_model_string(),
        "Error: tool 'a' is not available (it is disabled)"
    );
}

#[test]
fn len_and_is_empty_count_the_registered_tools() {
    let registry = ToolRegistry::new();
    assert_eq!(registry.len(), 0);
    assert!(registry.is_empty());
    let registry = registry_with(&["mock", "other"]);
    assert_eq!(registry.len(), 2);
    assert!(!registry.is_empty());
    assert!(registry.unregister("mock"));
    assert_eq!(registry.len(), 1);
}

// --- introspection ------------------------------------------------------------------------

#[test]
fn tool_names_list_every_tool_in_registration_order() {
    let registry = registry_with(&["zeta", "alpha", "mid"]);
    assert!(registry.disable("alpha"));
    assert_eq!(
        registry.get_tool_names(),
        ["zeta", "alpha", "mid"],
        "all tools, enabled or not, in registration order"
    );
}

#[test]
fn an_empty_registry_has_no_tool_names() {
    assert!(ToolRegistry::new().get_tool_names().is_empty());
}

#[test]
fn has_tool_is_true_for_a_registered_name() {
    assert!(registry_with(&["a"]).has_tool("a"));
}

#[test]
fn has_tool_is_false_for_an_unknown_name() {
    assert!(!registry_with(&["a"]).has_tool("b"));
}

#[test]
fn is_tool_enabled_is_true_for_an_enabled_tool() {
    assert!(registry_with(&["a"]).is_tool_enabled("a"));
}

#[test]
fn is_tool_enabled_is_false_for_a_disabled_tool() {
    let registry = registry_with(&["a"]);
    assert!(registry.disable("a"));
    assert!(!registry.is_tool_enabled("a"));
}

#[test]
fn is_tool_enabled_is_false_for_an_unknown_name() {
    assert!(!registry_with(&["a"]).is_tool_enabled("b"));
}

#[test]
fn a_chat_tool_serializes_to_the_openai_shape_and_back() {
    let schema = TestTool::new("weather").get_schema();
    assert_eq!(
        serde_json::to_value(&schema).unwrap(),
        json!({
            "type": "function",
            "function": {
                "name": "weather",
                "description": "A tool for tests.",
                "parameters": {
                    "type": "object",
                    "properties": { "city": { "type": "string" }, "days": { "type": "integer", "minimum": 1 } },
                    "required": ["city"]
                }
            }
        })
    );
    let back: ChatTool = serde_json::from_value(serde_json::to_value(&schema).unwrap()).unwrap();
    assert_eq!(back, schema);
}

#[test]
fn a_tools_schema_carries_the_tools_name() {
    let tool = TestTool::new("weather");
    assert_eq!(tool.get_schema().name(), tool.name());
}

#[tokio::test]
async fn arguments_are_an_untyped_json_object_passed_on_as_sent() {
    // The arguments are an untyped JSON object: any JSON value may sit under any key.
    let untyped: JsonObject = args(json!({"city": "Oslo", "extra": [1, {"nested": null}]}));
    let text = registry_with(&["echo"]).execute("echo", untyped).await;
    let echoed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        echoed,
        json!({"city": "Oslo", "extra": [1, {"nested": null}]})
    );
}

#[tokio::test]
async fn execute_passes_the_arguments_to_the_tool() {
    let text = registry_with(&["echo"])
        .execute("echo", args(json!({"city": "Oslo", "days": 3})))
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"city": "Oslo", "days": 3})
    );
}

#[tokio::test]
async fn try_execute_returns_the_tools_output() {
    let registry = registry_with(&["echo"]);
    let outcome = registry
        .try_execute("echo", args(json!({"city": "Oslo"})))
        .await;
    assert_eq!(outcome.unwrap(), r#"{"city":"Oslo"}"#);
}

#[tokio::test]
async fn a_tool_error_reads_error_executing_name_message() {
    let registry = ToolRegistry::new();
    registry
        .register(TestTool::new("weather").behaving(Behaviour::Fail))
        .unwrap();
    let text = registry
        .execute("weather", args(json!({"city": "Oslo"})))
        .await;
    assert_eq!(text, "Error executing weather: boom");
}

#[tokio::test]
async fn executing_an_unknown_tool_says_it_was_not_found() {
    let text = ToolRegistry::new().execute("ghost", args(json!({}))).await;
    assert_eq!(text, "Error: tool 'ghost' not found");
}

// --- registration rules and lookup --------------------------------------------------------

#[test]
fn a_duplicate_name_is_rejected_and_the_first_tool_stays() {
    let registry = ToolRegistry::new();
    registry.register(TestTool::new("weather")).unwrap();
    let mut second = TestTool::new("weather");
    second.description = "The second one.";
    let error = registry.register(second).unwrap_err();
    assert_eq!(
        error,
        RegistryError::Duplicate {
            name: "weather".to_owned()
        }
    );
    assert_eq!(
        error.to_string(),
        "a tool named `weather` is already registered"
    );
    assert_eq!(
        registry.get_enabled_schemas()[0].description(),
        "A tool for tests.",
        "the first tool stays"
    );
}

#[test]
fn register_rejects_invalid_names_descriptions_and_parameters() {
    let registry = ToolRegistry::new();

    let mut nameless = TestTool::new("");
    nameless.name = "";
    assert_eq!(
        registry.register(nameless).unwrap_err().to_string(),
        "invalid tool name ``: the name is empty"
    );

    for (bad, c) in [("has space", ' '), ("dot.name", '.'), ("slash/name", '/')] {
        assert_eq!(
            registry.register(TestTool::new(bad)).unwrap_err(),
            RegistryError::InvalidName {
                name: bad.to_owned(),
                reason: format!(
                    "{c:?} is not allowed; use only ASCII letters, digits, `_` and `-`"
                ),
            }
        );
    }
    let long: &'static str = Box::leak("x".repeat(65).into_boxed_str());
    assert_eq!(
        registry.register(TestTool::new(long)).unwrap_err(),
        RegistryError::InvalidName {
            name: long.to_owned(),
            reason: "the name is 65 characters long; at most 64 are allowed".to_owned(),
        }
    );
    let longest: &'static str = Box::leak("x".repeat(64).into_boxed_str());
    registry.register(TestTool::new(longest)).unwrap();

    let mut undescribed = TestTool::new("undescribed");
    undescribed.description = "  ";
    let error = registry.register(undescribed).unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `undescribed` has no description; describe what it does for the model"
    );

    let mut not_object = TestTool::new("not_object");
    not_object.parameters = json!({"type": "string"});
    let error = registry.register(not_object).unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool `not_object` has invalid parameters: the parameters' `type` must be \"object\", \
         not \"string\""
    );

    let mut untyped = TestTool::new("untyped");
    untyped.parameters = json!({"properties": {}});
    assert!(matches!(
        registry.register(untyped),
        Err(RegistryError::InvalidParameters { .. })
    ));

    let mut not_schema = TestTool::new("not_schema");
    not_schema.parameters = json!([1, 2]);
    assert!(matches!(
        registry.register(not_schema),
        Err(RegistryError::InvalidParameters { .. })
    ));

    assert_eq!(
        registry.get_tool_names(),
        [longest],
        "only the valid tool is registered"
    );
}

#[test]
fn a_schema_named_unlike_its_tool_is_rejected() {
    struct Liar;
    #[async_trait]
    impl ExecutableTool for Liar {
        fn name(&self) -> &str {
            "liar"
        }
        fn get_schema(&self) -> ChatTool {
            ChatTool::new(
                "other",
                "Says it is another tool.",
                json!({"type": "object"}),
            )
        }
        async fn execute(&self, _: JsonObject) -> Result<String, ToolError> {
            Ok(String::new())
        }
    }
    let error = ToolRegistry::new().register(Liar).unwrap_err();
    assert_eq!(
        error,
        RegistryError::NameMismatch {
            name: "liar".to_owned(),
            schema_name: "other".to_owned(),
        }
    );
}

#[test]
fn get_finds_a_tool_enabled_or_not() {
    let registry = registry_with(&["a", "b"]);
    let tool = registry.get("b").expect("b is registered");
    assert_eq!(tool.name(), "b");
    assert!(registry.disable("b"));
    assert!(
        registry.get("b").is_some(),
        "lookup finds disabled tools too"
    );
}

#[test]
fn get_of_an_unknown_name_is_none() {
    assert!(registry_with(&["a"]).get("missing").is_none());
}

#[test]
fn list_tools_shows_each_tools_metadata_and_state() {
    let registry = ToolRegistry::new();
    registry.register(TestTool::new("plain")).unwrap();
    registry
        .register(
            TestTool::new("fancy").with_metadata(
                ToolMetadata::new()
                    .title("Fancy tool")
                    .category("demo")
                    .icon("https://example.com/icon.png")
                    .default_enabled(false)
                    .read_only(true),
            ),
        )
        .unwrap();
    let tools = registry.list_tools();
    assert_eq!(tools.len(), 2);
    let plain = &tools[0];
    assert_eq!(plain.name, "plain");
    assert_eq!(plain.category, None);
    assert_eq!(plain.icon, None);
    assert!(plain.default_enabled && plain.enabled);
    let fancy = &tools[1];
    assert_eq!(fancy.title.as_deref(), Some("Fancy tool"));
    assert_eq!(fancy.category.as_deref(), Some("demo"));
    assert_eq!(fancy.icon.as_deref(), Some("https://example.com/icon.png"));
    assert!(!fancy.default_enabled && !fancy.enabled);
    assert_eq!(fancy.hints.read_only, Some(true));
    assert_eq!(fancy.description, "A tool for tests.");
}

// --- execution safety ------------------------------------------------------------------------

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_string_and_the_registry_stays_usable() {
    let registry = ToolRegistry::new();
    registry
        .register(TestTool::new("fragile").behaving(Behaviour::Panic))
        .unwrap();
    registry.register(TestTool::new("sturdy")).unwrap();
    let text = registry
        .execute("fragile", args(json!({"city": "Oslo"})))
        .await;
    assert_eq!(
        text,
        "Error executing fragile: tool panicked: the tool fell over"
    );
    // Still usable, for reads, writes and other tools.
    assert!(registry.disable("fragile"));
    let text = registry
        .execute("sturdy", args(json!({"city": "Oslo"})))
        .await;
    assert_eq!(text, r#"{"city":"Oslo"}"#);
}

/// A tool written without `async_trait`, to panic where an `async fn` cannot: while making its
/// future, or when its finished future is dropped.
struct RawTool {
    panic_on_call: bool,
}

/// A future that is ready at once and panics when dropped.
struct PanicsOnDrop;

impl std::future::Future for PanicsOnDrop {
    type Output = Result<String, ToolError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::task::Poll::Ready(Ok("done".to_owned()))
    }
}

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("dropped badly");
    }
}

impl ExecutableTool for RawTool {
    fn name(&self) -> &str {
        "raw"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new("raw", "A tool for tests.", json!({ "type": "object" }))
    }

    fn execute<'a, 'b>(
        &'a self,
        _args: JsonObject,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, ToolError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        assert!(!self.panic_on_call, "no future for you");
        Box::pin(PanicsOnDrop)
    }
}

#[tokio::test]
async fn a_tool_that_panics_while_making_its_future_becomes_an_error_string() {
    let registry = ToolRegistry::new();
    registry
        .register(RawTool {
            panic_on_call: true,
        })
        .unwrap();
    let text = registry.execute("raw", JsonObject::new()).await;
    assert_eq!(
        text,
        "Error executing raw: tool panicked: no future for you"
    );
    assert!(registry.has_tool("raw"));
}

#[tokio::test]
async fn a_tool_whose_future_panics_when_dropped_becomes_an_error_string() {
    let registry = ToolRegistry::new();
    registry
        .register(RawTool {
            panic_on_call: false,
        })
        .unwrap();
    let outcome = registry.try_execute("raw", JsonObject::new()).await;
    match outcome {
        Err(ExecuteError::Panicked { name, message }) => {
            assert_eq!((name.as_str(), message.as_str()), ("raw", "dropped badly"));
        }
        other => panic!("expected a panic outcome, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_hung_tool_times_out_with_its_own_timeout() {
    let registry = ToolRegistry::new();
    registry
        .register(
            TestTool::new("slow")
                .behaving(Behaviour::Hang)
                .with_metadata(ToolMetadata::new().timeout(Duration::from_secs(30))),
        )
        .unwrap();
    let outcome = registry
        .try_execute("slow", args(json!({"city": "Oslo"})))
        .await;
    assert_eq!(
        outcome,
        Err(ExecuteError::TimedOut {
            name: "slow".to_owned(),
            after: Duration::from_secs(30)
        })
    );
    let text = registry
        .execute("slow", args(json!({"city": "Oslo"})))
        .await;
    assert_eq!(text, "Error executing slow: timed out after 30s");
}

#[tokio::test(start_paused = true)]
async fn the_registry_default_timeout_applies_to_tools_without_one() {
    let registry = ToolRegistry::with_options(
        RegistryOptions::new().default_timeout(Duration::from_millis(250)),
    );
    registry
        .register(TestTool::new("slow").behaving(Behaviour::Hang))
        .unwrap();
    let text = registry
        .execute("slow", args(json!({"city": "Oslo"})))
        .await;
    assert_eq!(text, "Error executing slow: timed out after 250ms");
}

#[test]
fn a_tool_that_finishes_at_once_needs_no_timer_for_its_timeout() {
    // Outside any Tokio runtime: a timer would need one, and none is made for a tool that
    // returns from its first poll.
    let registry =
        ToolRegistry::with_options(RegistryOptions::new().default_timeout(Duration::from_secs(1)));
    registry.register(TestTool::new("weather")).unwrap();
    let text =
        futures::executor::block_on(registry.execute("weather", args(json!({"city": "Oslo"}))));
    assert_eq!(text, r#"{"city":"Oslo"}"#);
}

#[test]
fn a_timeout_outside_a_tokio_runtime_is_an_error_string_not_a_crash() {
    let registry =
        ToolRegistry::with_options(RegistryOptions::new().default_timeout(Duration::from_secs(1)));
    registry
        .register(TestTool::new("slow").behaving(Behaviour::Pending))
        .unwrap();
    let text = futures::executor::block_on(registry.execute("slow", args(json!({"city": "Oslo"}))));
    assert!(
        text.starts_with("Error executing slow: tool panicked: ") && text.contains("runtime"),
        "{text}"
    );
    assert!(registry.has_tool("slow"));
}

#[tokio::test]
async fn arguments_are_validated_before_the_tool_runs() {
    let tool = TestTool::new("weather");
    let calls = tool.calls.clone();
    let registry = ToolRegistry::new();
    registry.register(tool).unwrap();

    let text = registry.execute("weather", args(json!({"city": 42}))).await;
    assert_eq!(
        text,
        "Error: invalid arguments for weather: at /city: expected a string, got 42"
    );
    let text = registry.execute("weather", args(json!({"days": 2}))).await;
    assert_eq!(
        text,
        "Error: invalid arguments for weather: missing required argument 'city'"
    );
    let text = registry
        .execute("weather", args(json!({"city": "Oslo", "days": 0})))
        .await;
    assert_eq!(
        text,
        "Error: invalid arguments for weather: at /days: expected a number >= 1, got 0"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the tool never ran");

    let outcome = registry
        .try_execute("weather", args(json!({"city": true})))
        .await;
    assert!(
        matches!(&outcome, Err(ExecuteError::InvalidArguments { name, message })
            if name == "weather" && message == "at /city: expected a string, got true"),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn validation_can_be_turned_off() {
    let tool = TestTool::new("weather");
    let calls = tool.calls.clone();
    let registry = ToolRegistry::with_options(RegistryOptions::new().validate_arguments(false));
    registry.register(tool).unwrap();
    let text = registry.execute("weather", args(json!({"city": 42}))).await;
    assert_eq!(text, r#"{"city":42}"#);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn try_execute_tells_each_outcome_apart() {
    let registry = ToolRegistry::new();
    registry.register(TestTool::new("ok")).unwrap();
    registry
        .register(TestTool::new("fails").behaving(Behaviour::Fail))
        .unwrap();
    registry.register(TestTool::new("off")).unwrap();
    assert!(registry.disable("off"));
    let city = || args(json!({"city": "Oslo"}));

    assert_eq!(
        registry.try_execute("ok", city()).await.unwrap(),
        r#"{"city":"Oslo"}"#
    );
    match registry.try_execute("fails", city()).await {
        Err(ExecuteError::Failed { name, error }) => {
            assert_eq!(name, "fails");
            assert_eq!(error.message(), "boom");
        }
        other => panic!("expected a tool failure, got {other:?}"),
    }
    match registry.try_execute("off", city()).await {
        Err(ExecuteError::Disabled { name }) => assert_eq!(name, "off"),
        other => panic!("expected a disabled tool, got {other:?}"),
    }
    match registry.try_execute("nope", city()).await {
        Err(ExecuteError::NotFound { name }) => assert_eq!(name, "nope"),
        other => panic!("expected an unknown tool, got {other:?}"),
    }
    match registry.try_execute("ok", args(json!({}))).await {
        Err(ExecuteError::InvalidArguments { name, message }) => {
            assert_eq!(name, "ok");
            assert_eq!(message, "missing required argument 'city'");
        }
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

// --- sharing, snapshots and change events ----------------------------------------------------

#[tokio::test]
async fn the_registry_is_shared_and_changed_from_several_tasks() {
    let registry = Arc::new(ToolRegistry::new());
    let names: Vec<&'static str> = (0..32)
        .map(|i| &*Box::leak(format!("tool_{i}").into_boxed_str()))
        .collect();
    let tasks: Vec<_> = names
        .iter()
        .map(|&name| {
            let registry = registry.clone();
            tokio::spawn(async move {
                registry.register(TestTool::new(name)).unwrap();
                registry.execute(name, args(json!({"city": name}))).await
            })
        })
        .collect();
    for (task, name) in tasks.into_iter().zip(&names) {
        assert_eq!(task.await.unwrap(), format!(r#"{{"city":"{name}"}}"#));
    }
    assert_eq!(registry.len(), 32);
}

#[test]
fn register_accepts_shared_tools() {
    let registry = ToolRegistry::new();
    let shared: Arc<dyn ExecutableTool> = Arc::new(TestTool::new("shared"));
    registry.register_arc(shared.clone()).unwrap();
    assert!(Arc::ptr_eq(&registry.get("shared").unwrap(), &shared));
    let errors = registry.register_all([
        Arc::new(TestTool::new("one")) as Arc<dyn ExecutableTool>,
        Arc::new(TestTool::new("shared")),
    ]);
    assert_eq!(
        errors.len(),
        1,
        "the duplicate is reported, the other registered"
    );
    assert_eq!(registry.get_tool_names(), ["shared", "one"]);
}

#[test]
fn a_snapshot_is_reused_until_something_changes() {
    let registry = registry_with(&["a", "b"]);
    let first = registry.snapshot();
    assert!(Arc::ptr_eq(&first, &registry.snapshot()));
    assert!(registry.disable("a"));
    let second = registry.snapshot();
    assert!(!Arc::ptr_eq(&first, &second));
    assert!(second.version() > first.version());
    // The old snapshot keeps what it saw.
    assert_eq!(first.enabled_names(), ["a", "b"]);
    assert_eq!(second.enabled_names(), ["b"]);
}

#[tokio::test]
async fn a_snapshot_runs_the_tools_it_lists() {
    let registry = registry_with(&["a"]);
    let snapshot = registry.snapshot();
    assert!(registry.disable("a"));
    registry.register(TestTool::new("late")).unwrap();
    assert_eq!(
        snapshot.execute("a", args(json!({"city": "Oslo"}))).await,
        r#"{"city":"Oslo"}"#,
        "enabled when the snapshot was taken"
    );
    assert_eq!(
        snapshot
            .execute("late", args(json!({"city": "Oslo"})))
            .await,
        "Error: tool 'late' not found"
    );
}

#[tokio::test]
async fn subscribers_see_every_change() {
    let registry = ToolRegistry::new();
    let mut events = registry.subscribe();
    registry.register(TestTool::new("a")).unwrap();
    assert!(registry.disable("a"));
    assert!(registry.disable("a")); // no change, no event
    assert!(registry.enable("a"));
    registry.unregister("a");
    registry.unregister("a"); // no change, no event
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    assert_eq!(
        seen,
        [
            RegistryEvent::Registered("a".to_owned()),
            RegistryEvent::Disabled("a".to_owned()),
            RegistryEvent::Enabled("a".to_owned()),
            RegistryEvent::Unregistered("a".to_owned()),
        ]
    );
}

#[test]
fn register_all_keeps_order_reports_each_rejection_and_announces_each_tool() {
    let registry = registry_with(&["taken"]);
    let mut events = registry.subscribe();
    let version = registry.version();
    let mut nameless = TestTool::new("nameless");
    nameless.description = "  ";
    let errors = registry.register_all([
        Arc::new(TestTool::new("one")) as Arc<dyn ExecutableTool>,
        Arc::new(TestTool::new("taken")),
        Arc::new(TestTool::new("bad name")),
        Arc::new(TestTool::new("two")),
        Arc::new(TestTool::new("one")),
        Arc::new(nameless),
    ]);
    let kinds: Vec<(&str, &str)> = errors
        .iter()
        .map(|error| match error {
            RegistryError::Duplicate { name } => ("duplicate", name.as_str()),
            RegistryError::InvalidName { name, .. } => ("invalid name", name.as_str()),
            RegistryError::MissingDescription { name } => ("no description", name.as_str()),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("duplicate", "taken"),
            ("invalid name", "bad name"),
            ("duplicate", "one"),
            ("no description", "nameless"),
        ],
        "the rejections, in the collection's order"
    );
    assert_eq!(registry.get_tool_names(), ["taken", "one", "two"]);
    assert_eq!(registry.version(), version + 2, "one change per tool added");
    assert_eq!(
        events.try_recv().ok(),
        Some(RegistryEvent::Registered("one".to_owned()))
    );
    assert_eq!(
        events.try_recv().ok(),
        Some(RegistryEvent::Registered("two".to_owned()))
    );
    assert!(events.try_recv().is_err());
}

#[test]
fn a_subscriber_that_joins_a_filled_registry_sees_the_changes_after_it() {
    let registry = registry_with(&["a", "b"]);
    assert!(registry.disable("a"));
    let mut events = registry.subscribe();
    assert_eq!(registry.subscriber_count(), 1);
    assert!(registry.enable("a"));
    registry.register(TestTool::new("c")).unwrap();
    assert_eq!(
        events.try_recv().ok(),
        Some(RegistryEvent::Enabled("a".to_owned()))
    );
    assert_eq!(
        events.try_recv().ok(),
        Some(RegistryEvent::Registered("c".to_owned()))
    );
    assert!(events.try_recv().is_err(), "nothing from before it joined");
    drop(events);
    assert_eq!(registry.subscriber_count(), 0);
    assert!(registry.disable("b")); // nobody listens: no error, no panic
    assert!(!registry.is_tool_enabled("b"));
}

#[test]
fn session_toggles_reuse_their_snapshot_until_something_changes() {
    let registry = registry_with(&["a", "b"]);
    let toggles = tool_core::ToolToggles::new();
    toggles.set("a", false);
    let first = toggles.snapshot(&registry);
    assert_eq!(first.enabled_names(), ["b"]);
    assert!(Arc::ptr_eq(&first, &toggles.snapshot(&registry)));
    toggles.set("a", true);
    let second = toggles.snapshot(&registry);
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(second.enabled_names(), ["a", "b"]);
    assert!(registry.disable("b"));
    assert_eq!(toggles.snapshot(&registry).enabled_names(), ["a"]);
    assert!(
        registry.is_tool_enabled("a"),
        "the registry itself is untouched"
    );
}
