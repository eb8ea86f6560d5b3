//! Lenient arguments: opt-in reading of values of the wrong JSON type as the type the schema
//! asks for, per tool (`#[tool(lenient)]`, metadata, configuration) or per registry.

use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    ChatTool, ExecutableTool, JsonObject, RegistryOptions, ToolError, ToolMetadata, ToolRegistry,
    async_trait,
    config::{ConfigFormat, HandlerTable, ToolConfig},
    tool,
};

use crate::logs::capture;

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// What a forecast covers.
#[derive(Deserialize, schemars::JsonSchema)]
struct Window {
    /// The first hour.
    from: u8,
    /// The last hour.
    to: u8,
}

/// Plan a trip.
#[tool(lenient)]
async fn plan_trip(
    city: String,
    days: u32,
    stops: Vec<String>,
    window: Window,
    budget: Option<f64>,
    flexible: Option<bool>,
) -> String {
    let Window { from, to } = window;
    format!("{city} {days} {stops:?} {from}-{to}h {budget:?} {flexible:?}")
}

/// Plan a trip, strictly.
#[tool]
async fn plan_trip_strictly(
    city: String,
    days: u32,
    stops: Vec<String>,
    window: Window,
    budget: Option<f64>,
    flexible: Option<bool>,
) -> String {
    let Window { from, to } = window;
    format!("{city} {days} {stops:?} {from}-{to}h {budget:?} {flexible:?}")
}

/// Count, strictly even in a lenient registry.
#[tool(lenient = false)]
async fn count_strictly(count: u32) -> u32 {
    count
}

/// The drifted arguments a small model sends for `plan_trip`.
fn drifted() -> Value {
    json!({
        "city": "Oslo",
        "days": "3",
        "stops": "Bergen",
        "window": "{\"from\": \"8\", \"to\": 20.0}",
        "budget": "1200.5",
        "flexible": "true"
    })
}

const PLANNED: &str = r#"Oslo 3 ["Bergen"] 8-20h Some(1200.5) Some(true)"#;

#[tokio::test]
async fn a_lenient_macro_tool_reads_drifted_types_as_its_schema_says() {
    let registry = ToolRegistry::new();
    registry.register(PlanTrip).unwrap();
    assert_eq!(
        registry.execute("plan_trip", args(drifted())).await,
        PLANNED
    );
    // Well-typed arguments are untouched.
    let typed = json!({
        "city": "Oslo",
        "days": 3,
        "stops": ["Bergen"],
        "window": { "from": 8, "to": 20 },
        "budget": 1200.5,
        "flexible": true
    });
    assert_eq!(registry.execute("plan_trip", args(typed)).await, PLANNED);
}

#[tokio::test]
async fn without_leniency_the_same_arguments_fail_as_before() {
    let registry = ToolRegistry::new();
    registry.register(PlanTripStrictly).unwrap();
    assert_eq!(
        registry
            .execute("plan_trip_strictly", args(drifted()))
            .await,
        "Error: invalid arguments for plan_trip_strictly: \
         at /budget: expected a number or null, got \"1200.5\"; \
         at /days: expected an integer, got \"3\"; \
         at /flexible: expected a boolean or null, got \"true\"; \
         at /stops: expected an array, got \"Bergen\"; \
         at /window: expected an object, got \"{\\\"from\\\": \\\"8\\\", \\\"to\\\": 20.0}\""
    );
}

#[tokio::test]
async fn values_that_cannot_be_read_as_meant_still_fail_exactly() {
    let registry = ToolRegistry::new();
    registry.register(PlanTrip).unwrap();
    registry.register(PlanTripStrictly).unwrap();
    let mut wrong = drifted();
    wrong["days"] = json!("three");
    wrong["budget"] = json!(null);
    let lenient = registry.execute("plan_trip", args(wrong.clone())).await;
    assert_eq!(
        lenient,
        "Error: invalid arguments for plan_trip: at /days: expected an integer, got \"three\""
    );
    // The strict tool reports the same place among the ones leniency would have read.
    assert_eq!(
        registry.execute("plan_trip_strictly", args(wrong)).await,
        "Error: invalid arguments for plan_trip_strictly: \
         at /days: expected an integer, got \"three\"; \
         at /flexible: expected a boolean or null, got \"true\"; \
         at /stops: expected an array, got \"Bergen\"; \
         at /window: expected an object, got \"{\\\"from\\\": \\\"8\\\", \\\"to\\\": 20.0}\""
    );
}

#[test]
fn the_snapshot_reports_each_coercion_and_logs_it() {
    let registry = ToolRegistry::new();
    registry.register(PlanTrip).unwrap();
    registry.register(PlanTripStrictly).unwrap();
    let snapshot = registry.snapshot();

    let mut lenient = args(drifted());
    let (coercions, logs) = capture(|| snapshot.coerce_arguments("plan_trip", &mut lenient));
    let texts: Vec<String> = coercions.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        [
            r#"at /budget: "1200.5" read as the number 1200.5"#,
            r#"at /days: "3" read as the integer 3"#,
            r#"at /flexible: "true" read as the boolean true"#,
            r#"at /stops: "Bergen" read as a one-element array"#,
            r#"at /window: "{\"from\": \"8\", \"to\": 20.0}" read as an object"#,
            r#"at /window/from: "8" read as the integer 8"#,
            "at /window/to: 20.0 read as the integer 20",
        ]
    );
    assert_eq!(coercions[1].path, "/days");
    assert_eq!(coercions[1].from, r#""3""#);
    assert_eq!(coercions[1].to, "the integer 3");
    assert_eq!(
        Value::Object(lenient),
        json!({
            "city": "Oslo",
            "days": 3,
            "stops": ["Bergen"],
            "window": { "from": 8, "to": 20 },
            "budget": 1200.5,
            "flexible": true
        })
    );
    let logged: Vec<&str> = logs
        .lines()
        .filter(|line| line.contains("read as the type the schema asks for"))
        .collect();
    assert_eq!(logged.len(), 7, "{logs}");
    assert!(logged[1].contains(" INFO "), "{}", logged[1]);
    assert!(logged[1].contains("tool=\"plan_trip\""), "{}", logged[1]);
    assert!(logged[1].contains("path=/days"), "{}", logged[1]);

    // A strict tool and an unknown one: nothing changed, nothing reported.
    let mut strict = args(drifted());
    assert!(
        snapshot
            .coerce_arguments("plan_trip_strictly", &mut strict)
            .is_empty()
    );
    assert_eq!(Value::Object(strict), drifted());
    let mut unknown = args(drifted());
    assert!(
        snapshot
            .coerce_arguments("missing", &mut unknown)
            .is_empty()
    );
    assert_eq!(Value::Object(unknown), drifted());
}

/// A hand-written tool that returns its arguments as JSON text.
struct Echo {
    name: &'static str,
    metadata: ToolMetadata,
}

#[async_trait]
impl ExecutableTool for Echo {
    fn name(&self) -> &str {
        self.name
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            self.name,
            "Echo the arguments.",
            json!({
                "type": "object",
                "properties": {
                    "count": { "type": "integer", "minimum": 1 },
                    "ids": { "type": "array", "items": { "type": "integer" } }
                },
                "required": ["count"]
            }),
        )
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        Ok(Value::Object(args).to_string())
    }

    fn metadata(&self) -> ToolMetadata {
        self.metadata.clone()
    }
}

#[tokio::test]
async fn a_lenient_registry_applies_to_every_tool_that_does_not_choose() {
    let registry = ToolRegistry::with_options(RegistryOptions::new().lenient_arguments(true));
    registry
        .register(Echo {
            name: "echo",
            metadata: ToolMetadata::new(),
        })
        .unwrap();
    registry
        .register(Echo {
            name: "echo_strict",
            metadata: ToolMetadata::new().lenient_arguments(false),
        })
        .unwrap();
    registry.register(CountStrictly).unwrap();

    let drifted = json!({ "count": "2", "ids": "7" });
    assert_eq!(
        registry.execute("echo", args(drifted.clone())).await,
        r#"{"count":2,"ids":[7]}"#
    );
    assert_eq!(
        registry.try_execute("echo", args(drifted.clone())).await,
        Ok(r#"{"count":2,"ids":[7]}"#.to_owned())
    );
    assert_eq!(
        registry
            .snapshot()
            .execute("echo", args(drifted.clone()))
            .await,
        r#"{"count":2,"ids":[7]}"#
    );
    assert_eq!(
        registry.execute("echo_strict", args(drifted)).await,
        "Error: invalid arguments for echo_strict: at /count: expected an integer, got \"2\"; \
         at /ids: expected an array, got \"7\""
    );
    assert_eq!(
        registry
            .execute("count_strictly", args(json!({ "count": "2" })))
            .await,
        "Error: invalid arguments for count_strictly: at /count: expected an integer, got \"2\""
    );
    // Coercion happens before validation, whose constraints still hold.
    assert_eq!(
        registry
            .execute("echo", args(json!({ "count": "0" })))
            .await,
        "Error: invalid arguments for echo: at /count: expected a number >= 1, got 0"
    );
}

#[tokio::test]
async fn the_default_registry_and_tools_stay_strict() {
    let registry = ToolRegistry::new();
    assert!(!registry.options().lenient_arguments);
    registry
        .register(Echo {
            name: "echo",
            metadata: ToolMetadata::new(),
        })
        .unwrap();
    let mut drifted = args(json!({ "count": "2" }));
    assert!(
        registry
            .snapshot()
            .coerce_arguments("echo", &mut drifted)
            .is_empty()
    );
    assert_eq!(
        registry.execute("echo", drifted).await,
        "Error: invalid arguments for echo: at /count: expected an integer, got \"2\""
    );
}

#[tokio::test]
async fn leniency_also_helps_a_registry_that_does_not_validate() {
    // Without schema validation, the typed arguments are where a drifted type would fail.
    let registry = ToolRegistry::with_options(
        RegistryOptions::new()
            .validate_arguments(false)
            .lenient_arguments(true),
    );
    registry.register(PlanTripStrictly).unwrap();
    assert_eq!(
        registry
            .execute("plan_trip_strictly", args(drifted()))
            .await,
        PLANNED
    );
}

#[tokio::test]
async fn a_configured_tool_is_lenient_when_its_metadata_says_so() {
    let handlers = HandlerTable::new().internal_fn("echo", |args: JsonObject| async move {
        Ok::<_, ToolError>(Value::Object(args).to_string())
    });
    let config = ToolConfig::parse(
        r#"
        [[tools]]
        name = "lenient_echo"
        description = "Echo the arguments."
        type = "function"
        handler = "echo"
        parameters = { type = "object", properties = { days = { type = "integer" }, tags = { type = "array", items = { type = "string" } } }, required = ["days"] }
        implementation = { type = "internal", handler = "echo" }
        metadata = { lenient_arguments = true }

        [[tools]]
        name = "strict_echo"
        description = "Echo the arguments."
        type = "function"
        handler = "echo"
        parameters = { type = "object", properties = { days = { type = "integer" } }, required = ["days"] }
        implementation = { type = "internal", handler = "echo" }
        "#,
        ConfigFormat::Toml,
    )
    .unwrap();
    let registry = ToolRegistry::new();
    let report = config.register(&registry, &handlers);
    assert_eq!(report.registered, ["lenient_echo", "strict_echo"]);
    assert_eq!(
        registry
            .metadata("lenient_echo")
            .and_then(|metadata| metadata.lenient_arguments),
        Some(true)
    );

    assert_eq!(
        registry
            .execute("lenient_echo", args(json!({ "days": "30", "tags": "sea" })))
            .await,
        r#"{"days":30,"tags":["sea"]}"#
    );
    assert_eq!(
        registry
            .execute("lenient_echo", args(json!({ "days": "a month" })))
            .await,
        "Error: invalid arguments for lenient_echo: at /days: expected an integer, got \"a month\""
    );
    assert_eq!(
        registry
            .execute("strict_echo", args(json!({ "days": "30" })))
            .await,
        "Error: invalid arguments for strict_echo: at /days: expected an integer, got \"30\""
    );
}

#[test]
fn the_configuration_key_is_also_read_in_camel_case_and_must_be_a_boolean() {
    let entry = |metadata: Value| {
        json!({ "tools": [{
            "name": "echo",
            "description": "Echo.",
            "type": "function",
            "handler": "echo",
            "parameters": { "type": "object", "properties": {} },
            "implementation": { "type": "mock", "mock_response": "ok" },
            "metadata": metadata
        }] })
    };
    let registry = ToolRegistry::new();
    let report = ToolConfig::from_value(entry(json!({ "lenientArguments": false })))
        .unwrap()
        .register(&registry, &HandlerTable::new());
    assert_eq!(report.registered, ["echo"]);
    assert_eq!(
        registry.metadata("echo").unwrap().lenient_arguments,
        Some(false)
    );

    let report = ToolConfig::from_value(entry(json!({ "lenient_arguments": "yes" })))
        .unwrap()
        .register(&ToolRegistry::new(), &HandlerTable::new());
    assert!(report.registered.is_empty());
    assert_eq!(report.rejected.len(), 1);
}
