//! The main example: lists the default tools and runs `write_file` then `read_file` in a
//! temporary directory. (The agent with a model replaces this once it lands.)

use tool_core::{ToolContext, ToolContextOptions, create_default_tool_registry};

#[tokio::main]
async fn main() {
    let dir = std::env::temp_dir().join("tool-core-example");
    let context = ToolContext::with_options(ToolContextOptions::new().root_dir(&dir));
    if let Err(error) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {error}", dir.display());
        return;
    }
    let registry = create_default_tool_registry(context);
    for tool in registry.list_tools() {
        println!(
            "[{}] {} - {}",
            if tool.enabled { "on" } else { "off" },
            tool.name,
            tool.description
        );
    }
    let args = serde_json::json!({ "path": "hello.txt", "content": "hello" });
    if let serde_json::Value::Object(args) = args {
        println!("{}", registry.execute("write_file", args).await);
    }
    let args = serde_json::json!({ "path": "hello.txt" });
    if let serde_json::Value::Object(args) = args {
        println!("{}", registry.execute("read_file", args).await);
    }
}
