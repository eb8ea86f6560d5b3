use tool_core::{ExecutableTool, tool};

/// Delete a file.
#[tool(
    name = "delete_file",
    title = "Delete a file",
    category = "files",
    icon = "https://example.com/trash.svg",
    enabled = false,
    read_only = false,
    destructive,
    idempotent = true,
    open_world = false,
    sequential,
    timeout = "500ms",
    rename_struct = "DeleteFileTool",
)]
pub async fn remove(path: String) -> String {
    path
}

fn main() {
    let metadata = DeleteFileTool.metadata();
    assert!(!metadata.default_enabled);
    assert_eq!(metadata.timeout, Some(std::time::Duration::from_millis(500)));
}
