//! The model's argument text straight into a tool's typed arguments: `ToolRegistry::execute_text`
//! gives what `execute` gives on the parsed object, result and error texts alike, while a
//! `#[tool]` reads its arguments from the text itself and only the keywords its type cannot
//! check are validated.

use std::sync::{
    Mutex,
    atomic::{AtomicUsize, Ordering},
};

use serde::{Deserialize, Deserializer};
use tool_core::{
    CallContext, ChatTool, ExecutableTool, JsonObject, RegistryOptions, TextCall, ToolError,
    ToolRegistry, async_trait, tool,
};

/// Add two integers.
#[tool]
async fn add(a: i64, b: i64, scale: Option<i64>) -> i64 {
    (a + b) * scale.unwrap_or(1)
}

/// Arguments of `forecast`, with bounds serde does not enforce.
#[derive(Deserialize, schemars::JsonSchema)]
struct ForecastArgs {
    /// The city.
    #[schemars(length(min = 2))]
    city: String,
    /// How many days ahead.
    #[schemars(range(min = 1, max = 14))]
    days: u8,
}

/// Get the forecast.
#[tool]
async fn forecast(#[args] args: ForecastArgs) -> String {
    format!("{} days in {}", args.days, args.city)
}

/// Ping.
#[tool]
async fn ping() -> &'static str {
    "pong"
}

/// The type name of the deserializer each `ProbeArgs` was read with.
static DESERIALIZERS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// Arguments that note which deserializer read them.
#[derive(schemars::JsonSchema)]
struct ProbeArgs {
    #[allow(dead_code)]
    text: String,
}

impl<'de> Deserialize<'de> for ProbeArgs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Plain {
            text: String,
        }
        DESERIALIZERS
            .lock()
            .unwrap()
            .push(std::any::type_name::<D>());
        Plain::deserialize(deserializer).map(|plain| ProbeArgs { text: plain.text })
    }
}

/// Note how the arguments were read.
#[tool]
async fn probe(#[args] args: ProbeArgs) -> String {
    args.text
}

/// Arguments whose `Deserialize` panics.
#[derive(schemars::JsonSchema)]
struct Explosive {
    #[allow(dead_code)]
    fuse: String,
}

impl<'de> Deserialize<'de> for Explosive {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("the fuse was lit");
    }
}

/// Explode while reading the arguments.
#[tool]
async fn explode(#[args] args: Explosive) -> String {
    args.fuse
}

/// A hand-written tool that takes objects only, counting its calls.
struct Echo {
    calls: AtomicUsize,
}

#[async_trait]
impl ExecutableTool for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "echo",
            "Echo the text.",
            serde_json::json!({
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 5}},
                "required": ["text"]
            }),
        )
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(args["text"].as_str().unwrap_or_default().to_owned())
    }
}

fn registry(options: RegistryOptions) -> ToolRegistry {
    let registry = ToolRegistry::with_options(options);
    registry.register(Add).unwrap();
    registry.register(Forecast).unwrap();
    registry.register(Ping).unwrap();
    registry.register(Probe).unwrap();
    registry.register(Explode).unwrap();
    registry
        .register(Echo {
            calls: AtomicUsize::new(0),
        })
        .unwrap();
    registry
}

/// What `execute` gives for `text` parsed the way an agent parses it.
async fn through_object(registry: &ToolRegistry, name: &str, text: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(text.trim()) {
        Ok(serde_json::Value::Object(args)) => registry.execute(name, args).await,
        _ => registry.execute_text(name, text).await,
    }
}

#[tokio::test]
async fn text_and_object_give_the_same_result_and_the_same_error_texts() {
    let cases = [
        ("add", r#"{"a": 2, "b": 3}"#, "5"),
        ("add", r#" {"a": 2, "b": 3, "scale": null} "#, "5"),
        ("add", r#"{"a": 2, "b": 3, "scale": 10}"#, "50"),
        (
            "add",
            r#"{"a": 2, "b": "3"}"#,
            r#"Error: invalid arguments for add: at /b: expected an integer, got "3""#,
        ),
        (
            "add",
            r#"{"a": 2}"#,
            "Error: invalid arguments for add: missing required argument 'b'",
        ),
        (
            "forecast",
            r#"{"city": "Oslo", "days": 3}"#,
            "3 days in Oslo",
        ),
        (
            "forecast",
            r#"{"city": "Oslo", "days": 30}"#,
            "Error: invalid arguments for forecast: at /days: expected a number <= 14, got 30",
        ),
        (
            "forecast",
            r#"{"city": "O", "days": 0}"#,
            "Error: invalid arguments for forecast: at /city: \"O\" is shorter than 2 characters; at /days: expected a number >= 1, got 0",
        ),
        (
            "forecast",
            r#"{"city": 7, "days": 300}"#,
            "Error: invalid arguments for forecast: at /city: expected a string, got 7; at /days: expected a number <= 14, got 300",
        ),
        // A typed tool known to read text: the bounds are checked on the parsed object, which
        // the tool then reads.
        (
            "forecast",
            r#"{"city": "Bergen", "days": 14}"#,
            "14 days in Bergen",
        ),
        (
            "forecast",
            r#"{"city": "Bergen", "days": 3.5}"#,
            "Error: invalid arguments for forecast: at /days: expected an integer, got 3.5",
        ),
        ("ping", "", "pong"),
        ("ping", "null", "pong"),
        ("ping", r#"{"unused": [1, 2]}"#, "pong"),
        ("echo", r#"{"text": "hi"}"#, "hi"),
        (
            "echo",
            r#"{"text": "too long"}"#,
            r#"Error: invalid arguments for echo: at /text: "too long" is longer than 5 characters"#,
        ),
    ];
    let registry = registry(RegistryOptions::new());
    for (name, text, expected) in cases {
        assert_eq!(
            registry.execute_text(name, text).await,
            expected,
            "{name} {text}"
        );
        assert_eq!(
            through_object(&registry, name, text).await,
            expected,
            "{name} {text}"
        );
    }
}

#[tokio::test]
async fn text_that_is_not_an_object_is_refused_with_the_agent_s_words() {
    let registry = registry(RegistryOptions::new());
    assert_eq!(
        registry.execute_text("add", "[2, 3]").await,
        "Error: invalid arguments for add: the arguments must be a JSON object, got [2,3]; send an object with the tool's parameters"
    );
    assert_eq!(
        registry.execute_text("ping", "[]").await,
        "Error: invalid arguments for ping: the arguments must be a JSON object, got []; send an object with the tool's parameters"
    );
    let broken = registry.execute_text("add", r#"{"a": 2, "b": "#).await;
    assert!(
        broken.starts_with(
            "Error: invalid arguments for add: the arguments are not valid JSON (EOF while parsing"
        ),
        "{broken}"
    );
    assert_eq!(
        registry.execute_text("nope", "{}").await,
        "Error: tool 'nope' not found"
    );
}

#[tokio::test]
async fn a_typed_tool_reads_the_text_itself_and_the_object_path_reads_a_value() {
    let registry = registry(RegistryOptions::new());
    DESERIALIZERS.lock().unwrap().clear();
    assert_eq!(
        registry.execute_text("probe", r#"{"text": "a"}"#).await,
        "a"
    );
    let args = serde_json::json!({"text": "b"});
    assert_eq!(
        registry
            .execute("probe", args.as_object().unwrap().clone())
            .await,
        "b"
    );
    let seen = DESERIALIZERS.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    // Both read the root as an object only (`ObjectOnly`), from the text and from a `Value`
    // (in place, its strings moved out: `Taking`).
    assert!(
        seen[0].starts_with(
            "tool_core::__private::object_only::ObjectOnly<&mut serde_json::de::Deserializer<serde_json::read::StrRead"
        ),
        "{seen:?}"
    );
    assert_eq!(
        seen[1],
        "tool_core::__private::object_only::ObjectOnly<tool_core::__private::taking::Taking<'_, '_>>",
        "{seen:?}"
    );
}

#[tokio::test]
async fn a_hand_written_tool_takes_the_object_path_and_is_validated_whole() {
    let echo = Echo {
        calls: AtomicUsize::new(0),
    };
    assert!(matches!(
        echo.execute_text("{}", None),
        TextCall::Unsupported(None)
    ));
    let registry = registry(RegistryOptions::new());
    for _ in 0..3 {
        assert_eq!(
            registry.execute_text("echo", r#"{"text": "ok"}"#).await,
            "ok"
        );
    }
    assert_eq!(
        registry.execute_text("echo", r#"{"text": 5}"#).await,
        "Error: invalid arguments for echo: at /text: expected a string, got 5"
    );
}

#[tokio::test]
async fn without_validation_the_text_goes_straight_to_the_tool() {
    let registry = registry(RegistryOptions::new().validate_arguments(false));
    // The bounds are the schema's; the type lets them through.
    assert_eq!(
        registry
            .execute_text("forecast", r#"{"city": "O", "days": 30}"#)
            .await,
        "30 days in O"
    );
    assert_eq!(
        registry.execute_text("add", r#"{"a": 2, "b": "3"}"#).await,
        "Error: invalid arguments for add: at /b: expected an integer, got \"3\""
    );
}

#[tokio::test]
async fn a_panic_while_reading_the_arguments_is_a_tool_panic() {
    let registry = registry(RegistryOptions::new());
    assert_eq!(
        registry
            .execute_text("explode", r#"{"fuse": "short"}"#)
            .await,
        "Error executing explode: tool panicked: the fuse was lit"
    );
    // The registry is still usable.
    assert_eq!(
        registry.execute_text("add", r#"{"a": 1, "b": 1}"#).await,
        "2"
    );
}

#[tokio::test]
async fn a_lenient_tool_reads_text_through_its_coercions() {
    let registry = ToolRegistry::new();
    registry.register(LenientAdd).unwrap();
    assert_eq!(
        registry
            .execute_text("lenient_add", r#"{"a": "2", "b": 3}"#)
            .await,
        "5"
    );
}

/// Add two integers, leniently.
#[tool(lenient)]
async fn lenient_add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::test]
async fn a_tool_reading_its_call_gets_the_context_on_the_text_path() {
    /// Say which call this is.
    #[tool]
    async fn whoami(call: &CallContext, greeting: String) -> String {
        format!("{greeting} from {} ({})", call.tool_name(), call.call_id())
    }
    let registry = ToolRegistry::new();
    registry.register(Whoami).unwrap();
    assert_eq!(
        registry
            .snapshot()
            .try_execute_text_with(
                "whoami",
                r#"{"greeting": "hi"}"#,
                CallContext::new("call_7", "whoami")
            )
            .await,
        Ok("hi from whoami (call_7)".to_owned())
    );
    assert_eq!(
        registry
            .execute_text("whoami", r#"{"greeting": "hi"}"#)
            .await,
        "hi from whoami ()"
    );
    let snapshot = registry.snapshot();
    assert_eq!(
        snapshot
            .try_execute_text_with(
                "whoami",
                "{\"greeting\":\"yo\"}",
                CallContext::new("c", "whoami")
            )
            .await,
        Ok("yo from whoami (c)".to_owned())
    );
}

/// Wait, then answer.
#[tool(timeout = "50ms")]
async fn slow_echo(text: String, wait_ms: u64) -> String {
    tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
    text
}

#[tokio::test]
async fn a_tool_that_waits_runs_to_its_end_or_its_timeout_on_the_text_path() {
    let registry = ToolRegistry::new();
    registry.register(SlowEcho).unwrap();
    let snapshot = registry.snapshot();
    let (finished, in_snapshot) = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        futures::future::join(
            registry.execute_text("slow_echo", r#"{"text": "late", "wait_ms": 5}"#),
            snapshot.execute_text("slow_echo", r#"{"text": "later", "wait_ms": 5}"#),
        ),
    )
    .await
    .unwrap();
    assert_eq!((finished.as_str(), in_snapshot.as_str()), ("late", "later"));
    let stopped = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        registry.try_execute_text("slow_echo", r#"{"text": "never", "wait_ms": 2000}"#),
    )
    .await
    .unwrap();
    assert_eq!(
        stopped,
        Err(tool_core::ExecuteError::TimedOut {
            name: "slow_echo".to_owned(),
            after: std::time::Duration::from_millis(50),
        })
    );
}

#[test]
fn a_tool_whose_body_never_waits_finishes_when_its_text_call_is_made() {
    let call = Add.execute_text(r#"{"a": 1, "b": 2}"#, None);
    assert!(
        matches!(&call, TextCall::Finished(Ok(text)) if text == "3"),
        "{call:?}"
    );
    let call = SlowEcho.execute_text(r#"{"text": "x", "wait_ms": 1}"#, None);
    assert!(matches!(call, TextCall::Started(_)), "{call:?}");
    let call = Add.execute_text(r#"{"a": "1", "b": 2}"#, None);
    assert!(matches!(call, TextCall::Refused(None)), "{call:?}");
}

#[tokio::test]
async fn a_snapshot_runs_text_calls_at_its_own_version() {
    let registry = registry(RegistryOptions::new());
    let snapshot = registry.snapshot();
    assert!(registry.disable("add"));
    // The snapshot still has `add` enabled; the registry does not.
    assert_eq!(
        snapshot.execute_text("add", r#"{"a": 2, "b": 3}"#).await,
        "5"
    );
    assert_eq!(
        registry.execute_text("add", r#"{"a": 2, "b": 3}"#).await,
        "Error: tool 'add' is not available (it is disabled)"
    );
    // Errors read as on the registry.
    assert_eq!(
        snapshot.execute_text("add", r#"{"a": 2, "b": "3"}"#).await,
        "Error: invalid arguments for add: at /b: expected an integer, got \"3\""
    );
    assert_eq!(
        snapshot.execute_text("nope", "{}").await,
        "Error: tool 'nope' not found"
    );
}

/// Label something.
#[tool]
async fn label(labels: std::collections::BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A key given twice is refused, wherever it is and whichever path the text takes: serde_json
/// keeps the last one, so a reader of the text (or an approval prompt showing the first) would
/// see other arguments than the tool gets.
#[tokio::test]
async fn a_key_given_twice_is_refused_on_every_path() {
    let twice = |name: &str, key: &str| {
        format!(
            "Error: invalid arguments for {name}: the key \"{key}\" is given more than once; \
             send each key once"
        )
    };
    for options in [
        RegistryOptions::new(),
        RegistryOptions::new().validate_arguments(false),
        RegistryOptions::new().lenient_arguments(true),
    ] {
        let registry = registry(options.clone());
        registry.register(Label).unwrap();
        // A typed tool: its own fields, and a map inside them.
        assert_eq!(
            registry
                .execute_text("add", r#"{"a": 2, "b": 3, "a": 5}"#)
                .await,
            twice("add", "a"),
            "{options:?}"
        );
        assert_eq!(
            registry
                .execute_text("label", r#"{"labels": {"path": "a.txt", "path": "b.txt"}}"#)
                .await,
            twice("label", "path"),
            "{options:?}"
        );
        // A hand-written tool, which takes the object path.
        assert_eq!(
            registry
                .execute_text("echo", r#"{"text": "shown", "text": "run"}"#)
                .await,
            twice("echo", "text"),
            "{options:?}"
        );
        // The same keys in different objects are fine.
        assert_eq!(
            registry
                .execute_text("label", r#"{"labels": {"a": "1", "b": "2"}}"#)
                .await,
            "a=1,b=2"
        );
    }
}

/// How many times `CountedArgs` were read, whatever came of it.
static COUNTED_READS: AtomicUsize = AtomicUsize::new(0);

/// Arguments with a bound serde does not enforce, counting how often they are read.
#[derive(schemars::JsonSchema)]
struct CountedArgs {
    /// How many.
    #[schemars(range(min = 1, max = 9))]
    n: u8,
    /// What of.
    label: String,
}

impl<'de> Deserialize<'de> for CountedArgs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Plain {
            n: u8,
            label: String,
        }
        COUNTED_READS.fetch_add(1, Ordering::SeqCst);
        Plain::deserialize(deserializer).map(|plain| CountedArgs {
            n: plain.n,
            label: plain.label,
        })
    }
}

/// Count things.
#[tool]
async fn counted(#[args] args: CountedArgs) -> String {
    format!("{} {}", args.n, args.label)
}

/// Arguments that arrive as an object only (an MCP client's, `ToolRegistry::execute`) are
/// checked as text is: a typed tool's own type checks the types and required fields, and only
/// the bound is validated before it; the model reads the same message as on the text path.
#[tokio::test]
async fn an_object_is_validated_only_for_what_the_typed_arguments_cannot_check() {
    // A registry that never sees text, as an MCP server's; and one that sees only text.
    let objects = ToolRegistry::new();
    objects.register(Counted).unwrap();
    let texts = ToolRegistry::new();
    texts.register(Counted).unwrap();
    let invalid = "Error: invalid arguments for counted: ";
    let cases = [
        (r#"{"n": 3, "label": "pears"}"#, "3 pears".to_owned(), 1),
        // Wrong types and missing fields: the typed arguments refuse them, and the schema says
        // why, in the words full validation would use.
        (
            r#"{"n": "3", "label": "pears"}"#,
            format!(r#"{invalid}at /n: expected an integer, got "3""#),
            1,
        ),
        (
            r#"{"label": "pears"}"#,
            format!("{invalid}missing required argument 'n'"),
            1,
        ),
        // The bound: validated before the tool, which never reads the arguments.
        (
            r#"{"n": 30, "label": "pears"}"#,
            format!("{invalid}at /n: expected a number <= 9, got 30"),
            0,
        ),
        // Both: every problem is named, as full validation names them.
        (
            r#"{"n": 30, "label": 5}"#,
            format!(
                "{invalid}at /label: expected a string, got 5; at /n: expected a number <= 9, got 30"
            ),
            0,
        ),
    ];
    for (text, expected, reads) in cases {
        let args: JsonObject = serde_json::from_str(text).unwrap();
        let before = COUNTED_READS.load(Ordering::SeqCst);
        assert_eq!(objects.execute("counted", args).await, expected, "{text}");
        let read = COUNTED_READS.load(Ordering::SeqCst) - before;
        assert_eq!(read, reads, "{text}: times the typed arguments were read");
        assert_eq!(
            texts.execute_text("counted", text).await,
            expected,
            "{text}"
        );
    }
}

/// Keep some data.
#[tool]
async fn store(data: serde_json::Value) -> String {
    data.to_string()
}

/// Where a shipment goes: a struct flattened into the arguments.
#[derive(Deserialize, schemars::JsonSchema)]
struct Destination {
    street: String,
    city: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct ShipArgs {
    name: String,
    #[serde(flatten)]
    destination: Destination,
}

/// Ship something.
#[tool]
async fn ship(#[args] args: ShipArgs) -> String {
    format!(
        "{} to {}, {}",
        args.name, args.destination.street, args.destination.city
    )
}

/// Arguments with a map flattened into them: every key but `name`.
#[derive(Deserialize, schemars::JsonSchema)]
struct TagArgs {
    name: String,
    #[serde(flatten)]
    tags: std::collections::BTreeMap<String, String>,
}

/// Tag something.
#[tool]
async fn tag(#[args] args: TagArgs) -> String {
    format!("{}: {:?}", args.name, args.tags)
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Item {
    id: i64,
}

/// Deliver items: nested structs and an array of them, every key named.
#[tool]
async fn deliver(destination: Option<Destination>, items: Option<Vec<Item>>) -> String {
    format!(
        "{} {}",
        destination.map_or_else(String::new, |to| to.city),
        items.map_or(0, |items| items.iter().map(|item| item.id).sum::<i64>())
    )
}

/// Count rows: an array of maps.
#[tool]
async fn rows(rows: Vec<std::collections::BTreeMap<String, i64>>) -> usize {
    rows.len()
}

#[derive(Debug, Deserialize, schemars::JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
enum Color {
    Red,
    Blue,
}

/// Count colors: a map whose keys are an enum's names, whose schema lists them as properties.
#[tool]
async fn count(counts: std::collections::BTreeMap<Color, u32>) -> String {
    format!("{counts:?}")
}

/// A hand-written tool that reads the model's text itself, with the schema it is given.
struct RawText {
    name: &'static str,
    parameters: serde_json::Value,
    texts: Mutex<Vec<String>>,
}

#[async_trait]
impl ExecutableTool for RawText {
    fn name(&self) -> &str {
        self.name
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(self.name, "Read the text.", self.parameters.clone())
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        Ok(serde_json::Value::Object(args).to_string())
    }

    fn execute_text<'a>(&'a self, text: &str, _call: Option<CallContext>) -> TextCall<'a> {
        self.texts.lock().unwrap().push(text.to_owned());
        TextCall::Finished(Ok(text.to_owned()))
    }
}

/// The answer to a key given twice.
fn given_twice(name: &str, key: &str) -> String {
    format!(
        "Error: invalid arguments for {name}: the key \"{key}\" is given more than once; send \
         each key once"
    )
}

#[test]
fn serde_s_derive_refuses_a_struct_field_given_twice_and_so_does_a_typed_tool() {
    let error =
        serde_json::from_str::<ForecastArgs>(r#"{"city": "Oslo", "days": 3, "city": "Rome"}"#)
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
    assert!(
        error.starts_with("duplicate field `city` at line 1"),
        "{error}"
    );
    // A flattened struct's fields too.
    let error = serde_json::from_str::<ShipArgs>(
        r#"{"name": "box", "street": "Main St", "city": "Oslo", "street": "Side St"}"#,
    )
    .err()
    .map(|error| error.to_string())
    .unwrap_or_default();
    assert!(error.starts_with("duplicate field `street`"), "{error}");
    // A `#[tool]` refuses such text itself, without running.
    let call = Add.execute_text(r#"{"a": 1, "b": 2, "a": 5}"#, None);
    assert!(matches!(call, TextCall::Refused(None)), "{call:?}");
    let call = Ship.execute_text(
        r#"{"name": "box", "street": "Main St", "city": "Oslo", "street": "Side St"}"#,
        None,
    );
    assert!(matches!(call, TextCall::Refused(None)), "{call:?}");
    // A map or a JSON value keeps the last.
    let call = Label.execute_text(r#"{"labels": {"path": "a.txt", "path": "b.txt"}}"#, None);
    assert!(
        matches!(&call, TextCall::Finished(Ok(text)) if text == "path=b.txt"),
        "{call:?}"
    );
}

/// Wherever a key given twice could make a tool read other arguments than a person reads, it
/// is refused: a struct's field, a map's key, a JSON value's key, a flattened struct's or map's,
/// in nested objects and in arrays of objects, for typed tools, hand-written ones and
/// configured ones, on every path the text can take.
#[tokio::test]
async fn a_key_given_twice_is_refused_wherever_a_tool_could_read_it() {
    let cases = [
        ("add", r#"{"a": 2, "b": 3, "a": 5}"#, "a"),
        (
            "add",
            r#"{"a": 2, "b": 3, "scale": null, "scale": 10}"#,
            "scale",
        ),
        (
            "label",
            r#"{"labels": {"path": "a.txt", "path": "b.txt"}}"#,
            "path",
        ),
        (
            "label",
            r#"{"labels": {"a": "1"}, "labels": {"b": "2"}}"#,
            "labels",
        ),
        (
            "store",
            r#"{"data": {"path": "a.txt", "path": "b.txt"}}"#,
            "path",
        ),
        ("store", r#"{"data": [{"x": {"y": 1, "y": 2}}]}"#, "y"),
        ("store", r#"{"data": 1, "data": 2}"#, "data"),
        (
            "ship",
            r#"{"name": "box", "street": "Main St", "city": "Oslo", "street": "Side St"}"#,
            "street",
        ),
        (
            "ship",
            r#"{"name": "box", "street": "a", "city": "b", "name": "c"}"#,
            "name",
        ),
        (
            "tag",
            r#"{"name": "box", "color": "red", "color": "blue"}"#,
            "color",
        ),
        ("tag", r#"{"name": "box", "name": "crate"}"#, "name"),
        (
            "deliver",
            r#"{"destination": {"street": "a", "city": "b", "city": "c"}}"#,
            "city",
        ),
        (
            "deliver",
            r#"{"items": [{"id": 1}, {"id": 2, "id": 3}]}"#,
            "id",
        ),
        ("rows", r#"{"rows": [{"a": 1}, {"a": 2, "a": 3}]}"#, "a"),
        (
            "count",
            r#"{"counts": {"Red": 1, "Blue": 2, "Red": 3}}"#,
            "Red",
        ),
        ("echo", r#"{"text": "shown", "text": "run"}"#, "text"),
        (
            "forecast",
            r#"{"city": "Oslo", "days": 3, "days": 30}"#,
            "days",
        ),
    ];
    for options in [
        RegistryOptions::new(),
        RegistryOptions::new().validate_arguments(false),
        RegistryOptions::new().lenient_arguments(true),
    ] {
        let registry = registry(options.clone());
        for tool in [
            std::sync::Arc::new(Label) as std::sync::Arc<dyn ExecutableTool>,
            std::sync::Arc::new(Store),
            std::sync::Arc::new(Ship),
            std::sync::Arc::new(Tag),
            std::sync::Arc::new(Deliver),
            std::sync::Arc::new(Rows),
            std::sync::Arc::new(Count),
        ] {
            registry.register_arc(tool).unwrap();
        }
        for (name, text, key) in cases {
            // Twice: the first call learns whether the tool reads text.
            for _ in 0..2 {
                assert_eq!(
                    registry.execute_text(name, text).await,
                    given_twice(name, key),
                    "{name} {text} {options:?}"
                );
                assert_eq!(
                    registry.snapshot().execute_text(name, text).await,
                    given_twice(name, key),
                    "{name} {text} {options:?}"
                );
            }
        }
        // The same keys in different objects are fine.
        for (name, text, expected) in [
            ("label", r#"{"labels": {"a": "1", "b": "2"}}"#, "a=1,b=2"),
            (
                "store",
                r#"{"data": {"data": {"data": 1}}}"#,
                r#"{"data":{"data":1}}"#,
            ),
            (
                "ship",
                r#"{"name": "box", "street": "Main St", "city": "Oslo"}"#,
                "box to Main St, Oslo",
            ),
            (
                "tag",
                r#"{"name": "box", "color": "red"}"#,
                r#"box: {"color": "red"}"#,
            ),
            (
                "deliver",
                r#"{"destination": {"street": "a", "city": "b"}, "items": [{"id": 1}, {"id": 2}]}"#,
                "b 3",
            ),
            ("rows", r#"{"rows": [{"a": 1}, {"a": 2}]}"#, "2"),
            (
                "count",
                r#"{"counts": {"Red": 1, "Blue": 2}}"#,
                "{Red: 1, Blue: 2}",
            ),
        ] {
            assert_eq!(
                registry.execute_text(name, text).await,
                expected,
                "{options:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_configured_tool_refuses_a_key_given_twice() {
    let registry = ToolRegistry::new();
    let report = tool_core::config::ToolConfig::from_value(serde_json::json!({
        "tools": [{
            "name": "get_weather",
            "description": "Get the weather for a city.",
            "type": "function",
            "handler": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            },
            "implementation": {"type": "mock", "mock_response": "sunny"}
        }]
    }))
    .unwrap()
    .register(&registry, &tool_core::config::HandlerTable::new());
    assert_eq!(report.registered, ["get_weather"]);
    for _ in 0..2 {
        assert_eq!(
            registry
                .execute_text("get_weather", r#"{"city": "Oslo", "city": "Rome"}"#)
                .await,
            given_twice("get_weather", "city")
        );
    }
    assert_eq!(
        registry
            .execute_text("get_weather", r#"{"city": "Oslo"}"#)
            .await,
        "sunny"
    );
}

/// A tool that reads text promises that its typed arguments refuse a field given twice, as
/// serde's derive does (see `ExecutableTool::execute_text`): where its schema names every key,
/// the text goes to it as it came; where the schema leaves an object's keys open, a key given
/// twice is refused before the tool is asked.
#[tokio::test]
async fn a_hand_written_text_reader_gets_repeated_keys_only_where_its_schema_names_every_key() {
    let text = r#"{"text": "shown", "text": "run"}"#;
    let closed = RawText {
        name: "closed",
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        }),
        texts: Mutex::new(Vec::new()),
    };
    let open = |name, parameters| RawText {
        name,
        parameters,
        texts: Mutex::new(Vec::new()),
    };
    let registry = ToolRegistry::new();
    let closed = std::sync::Arc::new(closed);
    registry.register_arc(closed.clone()).unwrap();
    let opens = [
        open("object", serde_json::json!({"type": "object"})),
        open(
            "map",
            serde_json::json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "additionalProperties": {"type": "string"}
            }),
        ),
        open(
            "value",
            serde_json::json!({"type": "object", "properties": {"text": {}}}),
        ),
    ]
    .map(std::sync::Arc::new);
    for tool in &opens {
        registry.register_arc(tool.clone()).unwrap();
    }
    assert_eq!(registry.execute_text("closed", text).await, text);
    assert_eq!(*closed.texts.lock().unwrap(), [text]);
    for tool in &opens {
        assert_eq!(
            registry.execute_text(tool.name, text).await,
            given_twice(tool.name, "text")
        );
        assert!(tool.texts.lock().unwrap().is_empty(), "{}", tool.name);
        let once = r#"{"text": "run"}"#;
        assert_eq!(registry.execute_text(tool.name, once).await, once);
    }
}
