use std::sync::Arc;

use tool_core::{ExecutableTool, ToolContext, tool};

struct Database {
    url: String,
}

/// Save a note into the session.
#[tool]
async fn save_note(#[context] ctx: &ToolContext, note: String) -> String {
    ctx.add_note(note);
    "saved".to_owned()
}

/// Query the database.
#[tool]
async fn query(sql: String, #[context] db: Arc<Database>) -> String {
    format!("{} on {}", sql, db.url)
}

fn main() {
    let tool = SaveNote::new(ToolContext::new("prompt", "session.json"));
    assert_eq!(tool.name(), "save_note");
    let tool = Query::new(Arc::new(Database { url: "db://".to_owned() }));
    assert_eq!(tool.name(), "query");
}
