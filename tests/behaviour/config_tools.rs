//! Tools defined in configuration files (seed 002): loading, validation, the implementation
//! types, metadata and errors.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use serde_json::{Value, json};
use tool_core::{
    ChatTool, ExecutableTool, JsonObject, ToolContext, ToolContextOptions, ToolError, ToolRegistry,
    async_trait,
    config::{
        ConfigError, ConfigFormat, EntryError, HTTP_NOT_SUPPORTED, HandlerTable, ToolConfig,
        load_tools,
    },
    registry::RegistryError,
};

fn args(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn city_parameters() -> Value {
    json!({
        "type": "object",
        "properties": { "city": { "type": "string" } },
        "required": ["city"]
    })
}

fn mock(name: &str, response: Value) -> Value {
    json!({
        "name": name,
        "description": format!("The {name} tool."),
        "type": "function",
        "handler": name,
        "parameters": { "type": "object", "properties": {} },
        "implementation": { "type": "mock", "mock_response": response }
    })
}

fn load(entries: Value, handlers: &HandlerTable) -> (ToolRegistry, tool_core::LoadReport) {
    let registry = ToolRegistry::new();
    let report = ToolConfig::from_value(json!({ "tools": entries }))
        .unwrap()
        .register(&registry, handlers);
    (registry, report)
}

#[tokio::test]
async fn configured_tools_of_every_kind_register_and_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "remember the milk").unwrap();
    let context = ToolContext::with_options(ToolContextOptions::new().root_dir(dir.path()));
    let handlers = HandlerTable::with_builtins(context).internal_fn("shout", |args| async move {
        let text = args["text"].as_str().unwrap_or_default().to_uppercase();
        Ok::<_, ToolError>(text)
    });
    let entries = json!([
        {
            "name": "get_weather",
            "description": "Get the weather for a city.",
            "type": "function",
            "handler": "get_weather",
            "parameters": city_parameters(),
            "implementation": { "type": "mock", "mock_response": { "temperature_c": 18 } }
        },
        {
            "name": "read_notes",
            "description": "Read a notes file.",
            "type": "function",
            "handler": "read_notes",
            "parameters": {
                "type": "object",
                "properties": { "path": { "type": "string" } },
                "required": ["path"]
            },
            "implementation": { "type": "builtin", "handler": "read_file" }
        },
        {
            "name": "broken",
            "type": "function",
            "handler": "broken",
            "parameters": { "type": "object" },
            "implementation": { "type": "mock", "mock_response": "x" }
        },
        {
            "name": "shout",
            "description": "Upper-case the text.",
            "type": "function",
            "handler": "shout",
            "parameters": {
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            },
            "implementation": { "type": "internal", "handler": "shout" }
        }
    ]);
    let (registry, report) = load(entries, &handlers);

    assert_eq!(report.registered, ["get_weather", "read_notes", "shout"]);
    assert_eq!(report.rejected.len(), 1);
    assert_eq!(report.rejected[0].name.as_deref(), Some("broken"));
    assert_eq!(
        report.rejected[0].error,
        EntryError::MissingField {
            field: "description"
        }
    );
    assert_eq!(
        registry.get_tool_names(),
        ["get_weather", "read_notes", "shout"]
    );
    assert!(!registry.has_tool("broken"));

    let schema = registry.get("get_weather").unwrap().get_schema();
    assert_eq!(schema.description(), "Get the weather for a city.");
    assert_eq!(schema.parameters(), &city_parameters());
    assert_eq!(
        registry
            .execute("get_weather", args(json!({ "city": "Oslo" })))
            .await,
        r#"{"temperature_c":18}"#
    );
    assert_eq!(
        registry
            .execute("read_notes", args(json!({ "path": "notes.txt" })))
            .await,
        "remember the milk"
    );
    assert_eq!(
        registry
            .execute("shout", args(json!({ "text": "hi" })))
            .await,
        "HI"
    );
}

#[tokio::test]
async fn a_second_entry_with_a_taken_name_is_rejected_and_the_first_stays() {
    let entries = json!([
        mock("lookup", json!("first")),
        mock("lookup", json!("second"))
    ]);
    let (registry, report) = load(entries, &HandlerTable::new());

    assert_eq!(report.registered, ["lookup"]);
    assert_eq!(report.rejected.len(), 1);
    assert_eq!(report.rejected[0].index, 1);
    assert_eq!(
        report.rejected[0].error,
        EntryError::Registry(RegistryError::Duplicate {
            name: "lookup".to_owned()
        })
    );
    assert_eq!(registry.len(), 1);
    assert_eq!(registry.execute("lookup", JsonObject::new()).await, "first");
}

#[test]
fn a_config_tool_cannot_take_the_name_of_a_registered_tool() {
    let registry = tool_core::create_default_tool_registry(ToolContext::default());
    let report = ToolConfig::from_value(json!([mock("read_file", json!("shadow"))]))
        .unwrap()
        .register(&registry, &HandlerTable::new());
    assert!(report.registered.is_empty());
    assert!(matches!(
        report.rejected[0].error,
        EntryError::Registry(RegistryError::Duplicate { .. })
    ));
    assert_ne!(
        registry
            .get("read_file")
            .unwrap()
            .get_schema()
            .description(),
        "The read_file tool."
    );
}

#[test]
fn each_invalid_entry_is_rejected_with_the_error_naming_its_fault() {
    let valid = mock("valid", json!("ok"));
    let with = |change: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut entry = valid.as_object().unwrap().clone();
        change(&mut entry);
        Value::Object(entry)
    };
    type Check = Box<dyn Fn(&EntryError) -> bool>;
    let cases: Vec<(Value, Check)> = vec![
        (
            with(&|entry| {
                entry.remove("name");
            }),
            Box::new(|error| *error == EntryError::MissingField { field: "name" }),
        ),
        (
            with(&|entry| {
                entry.insert("description".into(), json!(""));
            }),
            Box::new(|error| {
                *error
                    == EntryError::MissingField {
                        field: "description",
                    }
            }),
        ),
        (
            with(&|entry| {
                entry.insert("name".into(), json!("not a valid name!"));
            }),
            Box::new(|error| {
                matches!(
                    error,
                    EntryError::Registry(RegistryError::InvalidName { .. })
                )
            }),
        ),
        (
            with(&|entry| {
                entry.insert("parameters".into(), json!({ "type": "string" }));
            }),
            Box::new(
                |error| matches!(error, EntryError::InvalidParameters { reason } if reason.contains("\"object\"")),
            ),
        ),
        (
            with(&|entry| {
                entry.insert("parameters".into(), json!(["city"]));
            }),
            Box::new(|error| matches!(error, EntryError::InvalidParameters { .. })),
        ),
        (
            with(&|entry| {
                entry.insert(
                    "parameters".into(),
                    json!({ "type": "object", "properties": { "city": { "type": "town" } } }),
                );
            }),
            Box::new(
                |error| matches!(error, EntryError::InvalidParameters { reason } if reason.contains("not a valid JSON Schema")),
            ),
        ),
        (
            with(&|entry| {
                entry.remove("parameters");
            }),
            Box::new(|error| {
                *error
                    == EntryError::MissingField {
                        field: "parameters",
                    }
            }),
        ),
        (
            with(&|entry| {
                entry.remove("type");
            }),
            Box::new(|error| *error == EntryError::MissingField { field: "type" }),
        ),
        (
            with(&|entry| {
                entry.insert("type".into(), json!("retrieval"));
            }),
            Box::new(|error| matches!(error, EntryError::NotAFunction { .. })),
        ),
        (
            with(&|entry| {
                entry.remove("handler");
            }),
            Box::new(|error| *error == EntryError::MissingField { field: "handler" }),
        ),
        (
            with(&|entry| {
                entry.remove("implementation");
            }),
            Box::new(|error| {
                *error
                    == EntryError::MissingField {
                        field: "implementation",
                    }
            }),
        ),
        (
            with(&|entry| {
                entry.insert("implementation".into(), json!({ "type": "grpc" }));
            }),
            Box::new(|error| {
                *error
                    == EntryError::UnknownImplementation {
                        kind: "grpc".to_owned(),
                    }
            }),
        ),
        (
            with(&|entry| {
                entry.insert("name".into(), json!(7));
            }),
            Box::new(|error| matches!(error, EntryError::WrongType { field: "name", .. })),
        ),
        (
            json!("get_weather"),
            Box::new(|error| matches!(error, EntryError::NotATable { .. })),
        ),
    ];
    let count = cases.len();
    let mut entries = vec![valid.clone()];
    entries.extend(cases.iter().map(|(entry, _)| entry.clone()));
    let (registry, report) = load(Value::Array(entries), &HandlerTable::new());

    assert_eq!(report.registered, ["valid"]);
    assert_eq!(registry.get_tool_names(), ["valid"]);
    assert_eq!(report.rejected.len(), count);
    for (rejected, (entry, check)) in report.rejected.iter().zip(&cases) {
        assert!(
            check(&rejected.error),
            "entry {entry} was rejected for the wrong reason: {}",
            rejected.error
        );
    }
}

#[tokio::test]
async fn a_mock_tool_returns_its_mock_response_as_text() {
    let entries = json!([
        mock("text", json!("sunny, 21°C")),
        mock("object", json!({ "temperature": 21, "conditions": ["sun"] })),
        mock("number", json!(42)),
        mock("nothing", Value::Null),
        {
            "name": "no_response",
            "description": "Forgot its response.",
            "type": "function",
            "handler": "no_response",
            "parameters": { "type": "object" },
            "implementation": { "type": "mock" }
        }
    ]);
    let (registry, report) = load(entries, &HandlerTable::new());

    assert_eq!(report.registered, ["text", "object", "number", "nothing"]);
    assert_eq!(
        report.rejected[0].error,
        EntryError::MissingField {
            field: "implementation.mock_response"
        }
    );
    assert_eq!(
        registry.execute("text", JsonObject::new()).await,
        "sunny, 21°C"
    );
    let object = registry.execute("object", JsonObject::new()).await;
    assert_eq!(
        serde_json::from_str::<Value>(&object).unwrap(),
        json!({ "temperature": 21, "conditions": ["sun"] })
    );
    assert_eq!(registry.execute("number", JsonObject::new()).await, "42");
    assert_eq!(registry.execute("nothing", JsonObject::new()).await, "null");
}

#[tokio::test]
async fn a_builtin_entry_runs_the_named_framework_tool() {
    let dir = tempfile::tempdir().unwrap();
    let session_file = dir.path().join("session.json");
    let context = ToolContext::with_options(
        ToolContextOptions::new()
            .root_dir(dir.path())
            .session_context_file_path(&session_file),
    );
    let handlers = HandlerTable::with_builtins(context);
    let builtin = |name: &str, handler: &str, parameters: Value| {
        json!({
            "name": name,
            "description": format!("{name} via {handler}"),
            "type": "function",
            "handler": handler,
            "parameters": parameters,
            "implementation": { "type": "builtin", "handler": handler }
        })
    };
    let path_and_content = json!({
        "type": "object",
        "properties": { "path": { "type": "string" }, "content": { "type": "string" } },
        "required": ["path", "content"]
    });
    let path_only = json!({
        "type": "object",
        "properties": { "path": { "type": "string" } },
        "required": ["path"]
    });
    let reason = json!({
        "type": "object",
        "properties": { "reason": { "type": "string" } },
        "required": ["reason"]
    });
    let entries = json!([
        builtin("save_note", "write_file", path_and_content),
        builtin("load_note", "read_file", path_only.clone()),
        builtin("checkpoint", "save_session_context", reason),
        builtin("wipe", "delete_everything", path_only.clone()),
        {
            "name": "no_handler",
            "description": "Builtin without a handler.",
            "type": "function",
            "handler": "no_handler",
            "parameters": path_only,
            "implementation": { "type": "builtin" }
        }
    ]);
    let (registry, report) = load(entries, &handlers);

    assert_eq!(report.registered, ["save_note", "load_note", "checkpoint"]);
    assert!(matches!(
        &report.rejected[0].error,
        EntryError::UnknownHandler { kind: "builtin", handler, .. } if handler == "delete_everything"
    ));
    assert_eq!(
        report.rejected[1].error,
        EntryError::MissingField {
            field: "implementation.handler"
        }
    );

    let written = registry
        .execute(
            "save_note",
            args(json!({ "path": "note.txt", "content": "hello" })),
        )
        .await;
    assert_eq!(written, "Successfully wrote 5 bytes to note.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("note.txt")).unwrap(),
        "hello"
    );
    assert_eq!(
        registry
            .execute("load_note", args(json!({ "path": "note.txt" })))
            .await,
        "hello"
    );
    let saved = registry
        .execute("checkpoint", args(json!({ "reason": "test" })))
        .await;
    assert!(saved.starts_with("Session context saved to"), "{saved}");
    assert!(session_file.exists());

    // With no metadata in the entry, the builtin's own metadata applies.
    let info = registry
        .list_tools()
        .into_iter()
        .find(|tool| tool.name == "load_note")
        .unwrap();
    assert_eq!(info.category.as_deref(), Some("files"));
    assert_eq!(info.hints.read_only, Some(true));
}

struct Counter {
    calls: Arc<AtomicUsize>,
}

#[async_trait]
impl ExecutableTool for Counter {
    fn name(&self) -> &str {
        "counter"
    }

    fn get_schema(&self) -> ChatTool {
        ChatTool::new(
            "counter",
            "Count calls.",
            json!({ "type": "object", "properties": {} }),
        )
    }

    async fn execute(&self, _args: JsonObject) -> Result<String, ToolError> {
        let calls = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(format!("call {calls}"))
    }
}

#[tokio::test]
async fn an_internal_entry_runs_the_function_the_application_registered() {
    let calls = Arc::new(AtomicUsize::new(0));
    let handlers = HandlerTable::with_builtins(ToolContext::default())
        .internal_fn("lookup_order", |args| async move {
            match args.get("order_id").and_then(Value::as_i64) {
                Some(id) if id > 0 => Ok(format!("order {id}: shipped")),
                _ => Err(ToolError::new("no such order")),
            }
        })
        .internal_tool(
            "count_calls",
            Arc::new(Counter {
                calls: calls.clone(),
            }),
        );
    let internal = |name: &str, handler: &str, parameters: Value| {
        json!({
            "name": name,
            "description": format!("{name} via {handler}"),
            "type": "function",
            "handler": handler,
            "parameters": parameters,
            "implementation": { "type": "internal", "handler": handler }
        })
    };
    let order = json!({
        "type": "object",
        "properties": { "order_id": { "type": "integer" } },
        "required": ["order_id"]
    });
    let entries = json!([
        internal("order_status", "lookup_order", order),
        internal("tally", "count_calls", json!({ "type": "object" })),
        internal("missing", "not_registered", json!({ "type": "object" })),
        // Builtin and internal handlers are separate tables.
        internal("sneaky_read", "read_file", json!({ "type": "object" })),
    ]);
    let (registry, report) = load(entries, &handlers);

    assert_eq!(report.registered, ["order_status", "tally"]);
    let unknown: Vec<&str> = report
        .rejected
        .iter()
        .map(|rejected| match &rejected.error {
            EntryError::UnknownHandler {
                kind: "internal",
                handler,
                ..
            } => handler.as_str(),
            other => panic!("unexpected rejection: {other}"),
        })
        .collect();
    assert_eq!(unknown, ["not_registered", "read_file"]);

    assert_eq!(
        registry
            .execute("order_status", args(json!({ "order_id": 7 })))
            .await,
        "order 7: shipped"
    );
    assert_eq!(
        registry
            .execute("order_status", args(json!({ "order_id": -1 })))
            .await,
        "Error executing order_status: no such order"
    );
    assert_eq!(registry.execute("tally", JsonObject::new()).await, "call 1");
    assert_eq!(registry.execute("tally", JsonObject::new()).await, "call 2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // The entry's definition is what the model sees, not the handler tool's.
    let schema = registry.get("tally").unwrap().get_schema();
    assert_eq!(schema.name(), "tally");
    assert_eq!(schema.description(), "tally via count_calls");
}

#[test]
fn an_http_entry_is_rejected_as_not_yet_supported() {
    let entries = json!([{
        "name": "fetch_page",
        "description": "Fetch a web page.",
        "type": "function",
        "handler": "fetch_page",
        "parameters": { "type": "object", "properties": { "url": { "type": "string" } } },
        "implementation": { "type": "http", "url": "https://example.com", "method": "GET" }
    }]);
    let (registry, report) = load(entries, &HandlerTable::new());

    assert!(report.registered.is_empty());
    assert_eq!(report.rejected.len(), 1);
    assert_eq!(report.rejected[0].error, EntryError::HttpNotSupported);
    assert_eq!(
        report.rejected[0].error.to_string(),
        "HTTP tools not yet supported (coming in v2)"
    );
    assert_eq!(
        HTTP_NOT_SUPPORTED,
        "HTTP tools not yet supported (coming in v2)"
    );
    assert!(!registry.has_tool("fetch_page"));
    assert!(registry.is_empty());
}

#[test]
fn invalid_entries_are_logged_and_skipped_while_the_rest_load() {
    let mut http = mock("fetch_page", Value::Null);
    http["implementation"] = json!({ "type": "http", "url": "https://example.com" });
    let mut bad_schema = mock("bad_schema", json!("x"));
    bad_schema["parameters"] = json!({ "type": "array" });
    let entries = json!([
        mock("first", json!("1")),
        http,
        bad_schema,
        mock("second", json!("2"))
    ]);

    let ((registry, report), logs) = crate::logs::capture(|| load(entries, &HandlerTable::new()));

    assert_eq!(registry.get_tool_names(), ["first", "second"]);
    assert_eq!(report.rejected.len(), 2);
    let errors: Vec<&str> = logs.lines().filter(|line| line.contains("ERROR")).collect();
    assert_eq!(errors.len(), 2, "{logs}");
    assert!(errors[0].contains("fetch_page"), "{logs}");
    assert!(
        errors[0].contains("HTTP tools not yet supported (coming in v2)"),
        "{logs}"
    );
    assert!(errors[1].contains("bad_schema"), "{logs}");
    assert!(errors[1].contains("must be \\\"object\\\"") || errors[1].contains("\"object\""));
}

#[tokio::test]
async fn config_tool_arguments_are_validated_against_their_schema() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let handlers = HandlerTable::new().internal_fn("weather", move |args| {
        let seen = seen.clone();
        async move {
            seen.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(format!("weather in {}", args["city"]))
        }
    });
    let entries = json!([{
        "name": "get_weather",
        "description": "Get the weather.",
        "type": "function",
        "handler": "weather",
        "parameters": city_parameters(),
        "implementation": { "type": "internal", "handler": "weather" }
    }]);
    let (registry, _) = load(entries, &handlers);

    let wrong_type = registry
        .execute("get_weather", args(json!({ "city": 42 })))
        .await;
    assert_eq!(
        wrong_type,
        "Error: invalid arguments for get_weather: at /city: expected a string, got 42"
    );
    let missing = registry.execute("get_weather", JsonObject::new()).await;
    assert_eq!(
        missing,
        "Error: invalid arguments for get_weather: missing required argument 'city'"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler must not run");
    assert_eq!(
        registry
            .execute("get_weather", args(json!({ "city": "Oslo" })))
            .await,
        "weather in \"Oslo\""
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn metadata_has_defaults_and_unknown_metadata_keys_are_rejected() {
    let mut described = mock("described", json!("x"));
    described["metadata"] = json!({
        "title": "Described",
        "icon": "https://example.com/icon.svg",
        "category": "demo",
        "default_enabled": false,
        "hints": { "read_only": true }
    });
    let mut camel = mock("camel", json!("x"));
    camel["metadata"] = json!({ "defaultEnabled": false });
    let mut typo = mock("typo", json!("x"));
    typo["metadata"] = json!({ "colour": "red" });
    let entries = json!([mock("plain", json!("x")), described, camel, typo]);
    let (registry, report) = load(entries, &HandlerTable::new());

    assert_eq!(report.registered, ["plain", "described", "camel"]);
    assert!(matches!(
        &report.rejected[0].error,
        EntryError::InvalidMetadata { reason } if reason.contains("colour")
    ));
    let tools = registry.list_tools();
    let plain = &tools[0];
    assert_eq!(plain.name, "plain");
    assert!(plain.default_enabled);
    assert!(plain.enabled);
    assert_eq!(plain.icon, None);
    assert_eq!(plain.category, None);
    assert_eq!(plain.title, None);
    let described = &tools[1];
    assert!(!described.default_enabled);
    assert!(!described.enabled);
    assert_eq!(described.title.as_deref(), Some("Described"));
    assert_eq!(
        described.icon.as_deref(),
        Some("https://example.com/icon.svg")
    );
    assert_eq!(described.category.as_deref(), Some("demo"));
    assert_eq!(described.hints.read_only, Some(true));
    assert!(!tools[2].default_enabled);
    assert_eq!(registry.get_enabled_schemas().len(), 1);
}

const TOML_CONFIG: &str = r#"
[[tools]]
name = "get_weather"
description = "Get the weather for a city."
type = "function"
handler = "get_weather"
implementation = { type = "mock", mock_response = { temperature_c = 18 } }
metadata = { category = "weather", default_enabled = false }

[tools.parameters]
type = "object"
required = ["city"]

[tools.parameters.properties.city]
type = "string"
"#;

const JSON_CONFIG: &str = r#"{
  "tools": [
    {
      "name": "get_weather",
      "description": "Get the weather for a city.",
      "type": "function",
      "handler": "get_weather",
      "parameters": {
        "type": "object",
        "properties": { "city": { "type": "string" } },
        "required": ["city"]
      },
      "implementation": { "type": "mock", "mock_response": { "temperature_c": 18 } },
      "metadata": { "category": "weather", "default_enabled": false }
    }
  ]
}"#;

#[tokio::test]
async fn tools_load_from_toml_and_json_files_alike() {
    let dir = tempfile::tempdir().unwrap();
    let toml_path = dir.path().join("tools.toml");
    let json_path = dir.path().join("tools.JSON");
    std::fs::write(&toml_path, TOML_CONFIG).unwrap();
    std::fs::write(&json_path, JSON_CONFIG).unwrap();

    let from_toml = ToolRegistry::new();
    let report = load_tools(&from_toml, &toml_path, &HandlerTable::new()).unwrap();
    assert!(report.is_clean());
    let from_json = ToolRegistry::new();
    let report = load_tools(&from_json, &json_path, &HandlerTable::new()).unwrap();
    assert!(report.is_clean());

    let schema = |registry: &ToolRegistry| registry.get("get_weather").unwrap().get_schema();
    assert_eq!(schema(&from_toml), schema(&from_json));
    assert_eq!(schema(&from_toml).parameters(), &city_parameters());
    assert_eq!(from_toml.list_tools(), from_json.list_tools());
    assert!(!from_toml.is_tool_enabled("get_weather"));
    assert!(from_toml.enable("get_weather"));
    assert_eq!(
        from_toml
            .execute("get_weather", args(json!({ "city": "Oslo" })))
            .await,
        r#"{"temperature_c":18}"#
    );

    // The format can be named explicitly, whatever the extension, and text parsed directly.
    let odd = dir.path().join("tools.conf");
    std::fs::write(&odd, TOML_CONFIG).unwrap();
    assert!(matches!(
        ToolConfig::from_file(&odd),
        Err(ConfigError::UnknownFormat { .. })
    ));
    assert_eq!(
        ToolConfig::from_file_as(&odd, ConfigFormat::Toml)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        ToolConfig::parse(JSON_CONFIG, ConfigFormat::Json)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn parse_error_names_the_path_and_position() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("tools.json");
    std::fs::write(&json_path, "{\n  \"tools\": [\n    { \"name\": }\n  ]\n}\n").unwrap();
    let error = ToolConfig::from_file(&json_path).unwrap_err();
    match &error {
        ConfigError::Parse {
            source_name,
            format,
            line,
            column,
            ..
        } => {
            assert_eq!(source_name, &json_path.display().to_string());
            assert_eq!(*format, ConfigFormat::Json);
            assert_eq!((*line, *column), (3, 15));
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(&json_path.display().to_string()),
        "{message}"
    );
    assert!(message.contains("line 3, column 15"), "{message}");

    let toml_path = dir.path().join("tools.toml");
    std::fs::write(&toml_path, "[[tools]]\nname = \"a\"\ndescription = \n").unwrap();
    match ToolConfig::from_file(&toml_path).unwrap_err() {
        ConfigError::Parse {
            source_name,
            format,
            line,
            ..
        } => {
            assert_eq!(source_name, toml_path.display().to_string());
            assert_eq!(format, ConfigFormat::Toml);
            assert_eq!(line, 3);
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn unreadable_or_misshapen_configuration_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let error = ToolConfig::from_file(&missing).unwrap_err();
    assert!(matches!(&error, ConfigError::Read { path, .. } if path == &missing));
    assert!(error.to_string().contains("missing.toml"));

    assert!(matches!(
        ToolConfig::from_value(json!({ "tool": [] })),
        Err(ConfigError::Shape { .. })
    ));
    assert!(matches!(
        ToolConfig::from_value(json!({ "tools": "get_weather" })),
        Err(ConfigError::Shape { .. })
    ));
    assert!(matches!(
        ToolConfig::from_value(json!(3)),
        Err(ConfigError::Shape { .. })
    ));
    assert!(ToolConfig::from_value(json!([])).unwrap().is_empty());
}

#[tokio::test]
async fn sample_config_loads_with_the_default_handlers() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
        .join("tools.toml");
    let dir = tempfile::tempdir().unwrap();
    let context = ToolContext::with_options(ToolContextOptions::new().root_dir(dir.path()));
    let registry = tool_core::create_default_tool_registry(context.clone());
    let report = load_tools(&registry, &path, &HandlerTable::with_builtins(context)).unwrap();
    assert!(report.is_clean(), "{:?}", report.rejected);
    assert!(report.registered.len() >= 3, "{:?}", report.registered);
    for name in &report.registered {
        assert!(registry.has_tool(name));
    }
}

#[tokio::test]
async fn builtin_handlers_can_come_from_the_registry_they_join() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("todo.txt"), "water the plants").unwrap();
    let context = ToolContext::with_options(ToolContextOptions::new().root_dir(dir.path()));
    let registry = tool_core::create_default_tool_registry(context);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
        .join("tools.toml");

    let handlers = HandlerTable::builtins_from(&registry);
    assert!(handlers.has_builtin("read_file") && handlers.has_builtin("write_file"));
    assert!(!handlers.has_internal("read_file"));
    let report = load_tools(&registry, &path, &handlers).unwrap();

    assert!(report.is_clean(), "{:?}", report.rejected);
    assert_eq!(
        registry
            .execute("read_note", args(json!({ "path": "todo.txt" })))
            .await,
        "water the plants"
    );
    assert!(
        !HandlerTable::builtins_from(&ToolRegistry::new()).has_builtin("read_file"),
        "an empty registry has no builtins to lend"
    );
}

#[test]
fn sample_configs_in_toml_and_json_define_the_same_tools() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples");
    let load = |file: &str| {
        let registry = ToolRegistry::new();
        let report = load_tools(
            &registry,
            examples.join(file),
            &HandlerTable::with_builtins(ToolContext::default()),
        )
        .unwrap();
        assert!(report.is_clean(), "{file}: {:?}", report.rejected);
        registry
    };
    let from_toml = load("tools.toml");
    let from_json = load("tools.json");
    assert_eq!(from_toml.list_tools(), from_json.list_tools());
    assert_eq!(
        from_toml.get_enabled_schemas(),
        from_json.get_enabled_schemas()
    );
    assert!(from_toml.len() >= 4);
}

#[test]
fn metadata_asks_for_approval_and_sets_a_retry_budget() {
    let mut guarded = mock("guarded", json!("x"));
    guarded["metadata"] = json!({ "needs_approval": true, "max_retries": 4 });
    let mut camel = mock("camel", json!("x"));
    camel["metadata"] = json!({ "needsApproval": true, "maxRetries": 0 });
    let entries = json!([mock("plain", json!("x")), guarded, camel]);
    let (registry, report) = load(entries, &HandlerTable::new());
    assert_eq!(report.registered, ["plain", "guarded", "camel"]);
    let snapshot = registry.snapshot();
    let facts = |name: &str| {
        let metadata = snapshot.metadata(name).unwrap();
        (metadata.needs_approval, metadata.max_retries)
    };
    assert_eq!(facts("plain"), (false, None));
    assert_eq!(facts("guarded"), (true, Some(4)));
    assert_eq!(facts("camel"), (true, Some(0)));
}
