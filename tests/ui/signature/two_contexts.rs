use tool_core::{ToolContext, tool};

struct Database;

/// Save a note.
#[tool]
async fn save_note(#[context] ctx: &ToolContext, #[context] db: &Database, note: String) -> String {
    let _ = (ctx, db);
    note
}

fn main() {}
