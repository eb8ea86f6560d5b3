//! [`McpRegistration`]: a server's tools in a registry, kept in sync with the server's list.

use std::{
    collections::{HashMap, HashSet},
    fmt,
    sync::{Arc, Mutex, Weak},
};

use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{McpClient, McpToolInfo, connection::Shared, lock};
use crate::{
    call::CallContext,
    registry::ToolRegistry,
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata},
};

/// A server's tools registered in a registry, from [`McpClient::register_into`].
///
/// While it lives, the registry follows the server's tool list: tools the server adds are
/// registered, removed ones unregistered and changed ones replaced (keeping their enabled
/// state). [`close`](Self::close), or dropping it, unregisters the tools it registered (not
/// tools someone else registered since under the same name).
pub struct McpRegistration {
    client: McpClient,
    registry: Arc<ToolRegistry>,
    registered: Arc<Mutex<Registered>>,
    task: Option<JoinHandle<()>>,
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
}

/// The tools this registration put in the registry, by local name.
type Registered = HashMap<String, Arc<McpTool>>;

impl fmt::Debug for McpRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpRegistration")
            .field("client", &self.client)
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

impl McpRegistration {
    /// The local names of the tools this registration has in the registry now, in the server's
    /// order.
    pub fn tool_names(&self) -> Vec<String> {
        let registered = lock(&self.registered);
        self.client
            .tools()
            .into_iter()
            .map(|tool| tool.local_name)
            .filter(|name| registered.contains_key(name))
            .collect()
    }

    /// The client whose tools these are.
    pub fn client(&self) -> &McpClient {
        &self.client
    }

    /// Stops following the server's list and unregisters the tools. The connection stays
    /// open while other clones of the client live; see [`McpClient::close`].
    pub async fn close(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        // `Drop` unregisters the tools.
    }
}

impl Drop for McpRegistration {
    fn drop(&mut self) {
        self.stop.cancel();
        let registered = std::mem::take(&mut *lock(&self.registered));
        for (name, tool) in registered {
            unregister_if_ours(&self.registry, &name, &tool);
        }
    }
}

pub(super) fn register(client: McpClient, registry: Arc<ToolRegistry>) -> McpRegistration {
    let registered = Arc::new(Mutex::new(Registered::new()));
    let shared = client.shared().clone();
    let mut tools = shared.tools.subscribe();
    let current = tools.borrow_and_update().clone();
    sync(&shared, &registry, &registered, &current);

    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let shared = Arc::downgrade(&shared);
        let registry = registry.clone();
        let registered = registered.clone();
        let stop = stop.clone();
        async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = tools.changed() => if changed.is_err() { return },
                }
                let table = tools.borrow_and_update().clone();
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                sync(&shared, &registry, &registered, &table);
            }
        }
    });
    McpRegistration {
        client,
        registry,
        registered,
        task: Some(task),
        _stop_on_drop: stop.clone().drop_guard(),
        stop,
    }
}

/// Makes the registry hold exactly `table`'s tools among those this registration owns. A
/// tool the server changed is replaced with its enabled state: one the application disabled
/// comes back disabled.
fn sync(
    shared: &Arc<Shared>,
    registry: &ToolRegistry,
    registered: &Mutex<Registered>,
    table: &[McpToolInfo],
) {
    let mut registered = lock(registered);
    let wanted: HashMap<&str, &McpToolInfo> = table
        .iter()
        .map(|tool| (tool.local_name.as_str(), tool))
        .collect();
    let mut disabled = HashSet::new();
    registered.retain(|name, tool| {
        let wanted = wanted.get(name.as_str());
        let keep = wanted.is_some_and(|info| **info == tool.info);
        if !keep {
            if wanted.is_some() && is_ours(registry, name, tool) && !registry.is_tool_enabled(name)
            {
                disabled.insert(name.clone());
            }
            unregister_if_ours(registry, name, tool);
        }
        keep
    });
    for info in table {
        if registered.contains_key(&info.local_name) {
            continue;
        }
        let tool = Arc::new(McpTool {
            shared: Arc::downgrade(shared),
            info: info.clone(),
            enabled: !disabled.contains(&info.local_name),
        });
        match registry.register_arc(tool.clone()) {
            Ok(()) => {
                registered.insert(info.local_name.clone(), tool);
            }
            Err(error) => tracing::warn!(
                server = %shared.name(),
                tool = %info.remote_name,
                "the MCP tool is not registered: {error}"
            ),
        }
    }
}

/// Unregisters `name` if the registry still holds this very tool under it.
fn unregister_if_ours(registry: &ToolRegistry, name: &str, tool: &Arc<McpTool>) {
    if is_ours(registry, name, tool) {
        registry.unregister(name);
    }
}

/// Whether the registry holds this very tool under `name`.
fn is_ours(registry: &ToolRegistry, name: &str, tool: &Arc<McpTool>) -> bool {
    registry
        .get(name)
        .is_some_and(|current| std::ptr::addr_eq(Arc::as_ptr(&current), Arc::as_ptr(tool)))
}

/// One MCP tool as an [`ExecutableTool`]. It holds the connection weakly, so a registry never
/// keeps a server running.
struct McpTool {
    shared: Weak<Shared>,
    info: McpToolInfo,
    /// Whether it is registered enabled: `false` when it replaces a tool the application had
    /// disabled.
    enabled: bool,
}

impl McpTool {
    async fn call(
        &self,
        args: JsonObject,
        context: Option<CallContext>,
    ) -> Result<String, ToolError> {
        let Some(shared) = self.shared.upgrade() else {
            return Err(ToolError::new(
                "the MCP server is not connected: the client was closed",
            ));
        };
        shared
            .call(
                &self.info.local_name,
                &self.info.remote_name,
                args,
                context,
                false,
            )
            .await
    }
}

#[async_trait::async_trait]
impl ExecutableTool for McpTool {
    fn name(&self) -> &str {
        &self.info.local_name
    }

    fn get_schema(&self) -> ChatTool {
        self.info.definition.clone()
    }

    fn metadata(&self) -> ToolMetadata {
        let mut metadata = self.info.metadata.clone();
        metadata.default_enabled &= self.enabled;
        metadata
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        self.call(args, None).await
    }

    /// Like `execute`; the server's progress notifications for this call also reach
    /// `call`'s [`report_progress`](CallContext::report_progress), as `progress / total`
    /// (0 while the server gives no total).
    async fn execute_with(&self, args: JsonObject, call: CallContext) -> Result<String, ToolError> {
        self.call(args, Some(call)).await
    }
}
