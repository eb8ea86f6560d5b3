//! Metadata from `#[tool(...)]`, context injection by `#[context]`, and `#[toolbox]` impls whose
//! methods share `&self` as their state.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::json;
use tool_core::{
    ExecutableTool, JsonObject, ToolContext, ToolMetadata, ToolRegistry, tool, toolbox,
};

fn args(value: serde_json::Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

/// Delete a file.
#[tool(
    name = "delete_file",
    title = "Delete a file",
    category = "files",
    icon = "https://example.com/trash.svg",
    enabled = false,
    destructive,
    idempotent = true,
    open_world = false,
    read_only = false,
    sequential,
    timeout = "30s",
    rename_struct = "DeleteFileTool"
)]
async fn remove(path: String) -> String {
    format!("deleted {path}")
}

/// Sleep far longer than allowed.
#[tool(timeout = "20ms")]
async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_secs(60)).await;
    "woke up"
}

/// No metadata at all.
#[tool]
async fn plain() -> &'static str {
    "plain"
}

#[test]
fn attribute_arguments_become_metadata() {
    let expected = ToolMetadata::new()
        .title("Delete a file")
        .category("files")
        .icon("https://example.com/trash.svg")
        .default_enabled(false)
        .destructive(true)
        .idempotent(true)
        .open_world(false)
        .read_only(false)
        .sequential(true)
        .timeout(Duration::from_secs(30));
    assert_eq!(DeleteFileTool.metadata(), expected);
    assert_eq!(Plain.metadata(), ToolMetadata::default());
}

#[tokio::test]
async fn enabled_false_registers_the_tool_disabled() {
    let registry = ToolRegistry::new();
    registry.register(DeleteFileTool).unwrap();
    assert!(registry.has_tool("delete_file"));
    assert!(!registry.is_tool_enabled("delete_file"));
    assert!(registry.get_enabled_schemas().is_empty());
    assert!(registry.enable("delete_file"));
    assert_eq!(
        registry
            .execute("delete_file", args(json!({"path": "a.txt"})))
            .await,
        "deleted a.txt"
    );
}

#[tokio::test]
async fn timeout_from_the_attribute_stops_the_tool() {
    let registry = ToolRegistry::new();
    registry.register(Slow).unwrap();
    assert_eq!(
        registry.execute("slow", args(json!({}))).await,
        "Error executing slow: timed out after 20ms"
    );
}

/// Read the agent's system prompt.
#[tool]
async fn system_prompt(#[context] ctx: &ToolContext) -> String {
    ctx.system_prompt()
}

/// Counts calls, shared between tools.
#[derive(Default)]
struct Counter {
    calls: AtomicUsize,
}

/// Count a call and say how many there were.
#[tool]
async fn count(
    /// How many calls to count
    by: usize,
    #[context] counter: Arc<Counter>,
) -> usize {
    counter.calls.fetch_add(by, Ordering::SeqCst) + by
}

#[tokio::test]
async fn context_by_reference_reads_live_state() {
    let context = ToolContext::new("You are terse.", "session.json");
    let registry = ToolRegistry::new();
    registry
        .register(SystemPrompt::new(context.clone()))
        .unwrap();
    assert_eq!(
        registry.execute("system_prompt", args(json!({}))).await,
        "You are terse."
    );
    context.set_system_prompt("You are verbose.");
    assert_eq!(
        registry.execute("system_prompt", args(json!({}))).await,
        "You are verbose."
    );
    let schema = registry.get("system_prompt").unwrap().get_schema();
    assert_eq!(schema.parameters()["properties"], json!({}));
}

#[tokio::test]
async fn owned_context_is_cloned_into_each_call_and_kept_out_of_the_schema() {
    let counter = Arc::new(Counter::default());
    let registry = ToolRegistry::new();
    registry.register(Count::new(counter.clone())).unwrap();
    assert_eq!(registry.execute("count", args(json!({"by": 2}))).await, "2");
    assert_eq!(registry.execute("count", args(json!({"by": 3}))).await, "5");
    assert_eq!(counter.calls.load(Ordering::SeqCst), 5);
    let schema = registry.get("count").unwrap().get_schema();
    assert_eq!(schema.parameters()["required"], json!(["by"]));
    assert!(schema.parameters()["properties"].get("counter").is_none());
}

/// A notebook the model can write to and read from.
#[derive(Default)]
struct Notebook {
    notes: std::sync::Mutex<Vec<String>>,
}

#[toolbox]
impl Notebook {
    /// Write a note.
    #[tool(name = "write_note")]
    async fn write(
        &self,
        /// The note's text
        text: String,
    ) -> usize {
        let mut notes = self.notes.lock().unwrap();
        notes.push(text);
        notes.len()
    }

    /// Read every note.
    #[tool(read_only)]
    async fn read_notes(&self) -> Vec<String> {
        self.notes.lock().unwrap().clone()
    }

    /// Not a tool: an ordinary method beside the tools.
    fn len(&self) -> usize {
        self.notes.lock().unwrap().len()
    }
}

#[tokio::test]
async fn toolbox_tools_share_self_as_state() {
    let notebook = Arc::new(Notebook::default());
    let registry = ToolRegistry::new();
    assert!(registry.register_all(notebook.clone().tools()).is_empty());
    assert_eq!(registry.get_tool_names(), ["write_note", "read_notes"]);

    assert_eq!(
        registry
            .execute("write_note", args(json!({"text": "buy milk"})))
            .await,
        "1"
    );
    assert_eq!(
        registry.execute("read_notes", args(json!({}))).await,
        r#"["buy milk"]"#
    );
    assert_eq!(notebook.len(), 1);

    let schema = registry.get("write_note").unwrap().get_schema();
    assert_eq!(schema.description(), "Write a note.");
    assert_eq!(
        schema.parameters()["properties"]["text"]["description"],
        "The note's text"
    );
    assert_eq!(
        registry.metadata("read_notes").unwrap().hints.read_only,
        Some(true)
    );
}

#[tokio::test]
async fn toolbox_methods_stay_callable() {
    let notebook = Notebook::default();
    assert_eq!(notebook.write("a".to_owned()).await, 1);
    assert_eq!(notebook.read_notes().await, ["a"]);
}
