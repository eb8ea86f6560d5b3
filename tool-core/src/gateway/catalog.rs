//! The gateway's catalog: every source's tools (each upstream server's, the local ones) put in
//! one registry, with names that collide refused from every side and upstream definitions
//! pinned.
//!
//! # Security boundary
//!
//! [`Catalog::sync`] decides what an upstream server's tools may become in the registry:
//!
//! - a name offered by two sources is served by neither (an error names both), so no server
//!   can shadow another's tool or a local one by choosing its name;
//! - with pinning on, a tool whose definition (description, input schema, title) differs from
//!   the one first served is withheld until an operator accepts it
//!   ([`Catalog::accept`]), so an upstream cannot change what a tool claims to do under users
//!   who already switched it on.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::broadcast;

use super::GatewayEvent;
use crate::{
    call::CallContext,
    mcp::{McpClient, McpStatus, McpToolInfo},
    registry::ToolRegistry,
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata},
};

/// The source name of tools defined in the gateway itself.
pub(crate) const LOCAL: &str = "local";

/// One tool a source offers.
#[derive(Clone)]
pub(crate) struct Offered {
    pub(crate) tool: Arc<dyn ExecutableTool>,
    /// The definition's hash, for upstream tools (pinned); `None` for local tools.
    pub(crate) fingerprint: Option<String>,
}

/// A definition change waiting for an operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Pending {
    pub(crate) server: String,
    pub(crate) pinned: String,
    pub(crate) offered: String,
}

/// What is pinned, as stored in the pins file: tool name to its server and definition hash.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct PinFile {
    tools: BTreeMap<String, Pin>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
struct Pin {
    server: String,
    sha256: String,
}

struct State {
    sources: BTreeMap<String, Vec<Offered>>,
    /// What the registry holds: name to (source, tool).
    served: HashMap<String, (String, Arc<dyn ExecutableTool>)>,
    /// Collisions already logged, so a resync does not repeat them.
    reported: BTreeSet<String>,
    pins: PinFile,
    pending: BTreeMap<String, Pending>,
}

/// See the [module docs](self).
pub(crate) struct Catalog {
    pub(crate) registry: Arc<ToolRegistry>,
    state: Mutex<State>,
    pin_file: Option<PathBuf>,
    pinning: bool,
    events: broadcast::Sender<GatewayEvent>,
}

impl Catalog {
    pub(crate) fn new(
        registry: Arc<ToolRegistry>,
        pinning: bool,
        pin_file: Option<PathBuf>,
        events: broadcast::Sender<GatewayEvent>,
    ) -> Self {
        let pins = pin_file
            .as_ref()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| match serde_json::from_slice(&bytes) {
                Ok(pins) => Some(pins),
                Err(error) => {
                    tracing::error!(%error, "the gateway's pins file is not valid; starting with no pins");
                    None
                }
            })
            .unwrap_or_default();
        Self {
            registry,
            state: Mutex::new(State {
                sources: BTreeMap::new(),
                served: HashMap::new(),
                reported: BTreeSet::new(),
                pins,
                pending: BTreeMap::new(),
            }),
            pin_file,
            pinning,
            events,
        }
    }

    /// Replaces what `source` offers and brings the registry in line.
    pub(crate) fn offer(&self, source: &str, tools: Vec<Offered>) {
        let mut state = lock(&self.state);
        state.sources.insert(source.to_owned(), tools);
        self.sync(&mut state);
    }

    /// The source serving `tool`, if it is served.
    pub(crate) fn source_of(&self, tool: &str) -> Option<String> {
        lock(&self.state)
            .served
            .get(tool)
            .map(|(source, _)| source.clone())
    }

    /// The definition changes waiting for an operator, by tool name.
    pub(crate) fn pending(&self) -> BTreeMap<String, Pending> {
        lock(&self.state).pending.clone()
    }

    /// Accepts the pending change of `tool`: its new definition is pinned and served. `false`
    /// when no change of it is pending.
    pub(crate) fn accept(&self, tool: &str) -> bool {
        let mut state = lock(&self.state);
        let Some(pending) = state.pending.remove(tool) else {
            return false;
        };
        tracing::info!(tool, server = %pending.server, "an operator accepted the tool's new definition");
        state.pins.tools.insert(
            tool.to_owned(),
            Pin {
                server: pending.server,
                sha256: pending.offered,
            },
        );
        self.save_pins(&state.pins);
        self.sync(&mut state);
        true
    }

    fn sync(&self, state: &mut State) {
        let mut offers: BTreeMap<String, Vec<(String, Offered)>> = BTreeMap::new();
        for (source, tools) in &state.sources {
            for offered in tools {
                offers
                    .entry(offered.tool.name().to_owned())
                    .or_default()
                    .push((source.clone(), offered.clone()));
            }
        }
        let mut wanted: HashMap<String, (String, Offered)> = HashMap::new();
        let mut pins_changed = false;
        for (name, mut offers) in offers {
            if offers.len() > 1 {
                let sources: Vec<&str> = offers.iter().map(|(source, _)| source.as_str()).collect();
                let key = format!("{name}:{}", sources.join(","));
                if state.reported.insert(key) {
                    tracing::error!(
                        tool = %name,
                        servers = %sources.join(", "),
                        "tool name collision: `{name}` is offered by {}; it is served from none of them \
                         (give the servers different prefixes)",
                        sources.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(" and ")
                    );
                    let _ = self.events.send(GatewayEvent::NameCollision {
                        tool: name.clone(),
                        servers: sources.iter().map(|s| (*s).to_owned()).collect(),
                    });
                }
                continue;
            }
            let Some((source, offered)) = offers.pop() else {
                continue;
            };
            if let (true, Some(fingerprint)) = (self.pinning, &offered.fingerprint) {
                if !self.check_pin(state, &name, &source, fingerprint, &mut pins_changed) {
                    continue;
                }
            }
            wanted.insert(name, (source, offered));
        }
        if pins_changed {
            self.save_pins(&state.pins);
        }
        // Take out what changed or went, then put in what is new.
        let served = std::mem::take(&mut state.served);
        for (name, (source, tool)) in served {
            let keep = wanted
                .get(&name)
                .is_some_and(|(_, offered)| Arc::ptr_eq(&offered.tool, &tool));
            if keep {
                state.served.insert(name, (source, tool));
            } else if self
                .registry
                .get(&name)
                .is_some_and(|current| Arc::ptr_eq(&current, &tool))
            {
                self.registry.unregister(&name);
            }
        }
        for (name, (source, offered)) in wanted {
            if state.served.contains_key(&name) {
                continue;
            }
            match self.registry.register_arc(offered.tool.clone()) {
                Ok(()) => {
                    state.served.insert(name, (source, offered.tool));
                }
                Err(error) => {
                    tracing::error!(tool = %name, server = %source, "the tool is not served: {error}");
                }
            }
        }
    }

    /// Whether `name` may be served with `fingerprint`: pinned now if it never was, withheld
    /// (and reported once) if it differs from its pin.
    fn check_pin(
        &self,
        state: &mut State,
        name: &str,
        source: &str,
        fingerprint: &str,
        pins_changed: &mut bool,
    ) -> bool {
        let Some(pin) = state.pins.tools.get(name) else {
            state.pins.tools.insert(
                name.to_owned(),
                Pin {
                    server: source.to_owned(),
                    sha256: fingerprint.to_owned(),
                },
            );
            *pins_changed = true;
            return true;
        };
        if pin.sha256 == fingerprint {
            state.pending.remove(name);
            return true;
        }
        let pending = Pending {
            server: source.to_owned(),
            pinned: pin.sha256.clone(),
            offered: fingerprint.to_owned(),
        };
        if state.pending.get(name) != Some(&pending) {
            tracing::warn!(
                tool = %name,
                server = %source,
                pinned = %pending.pinned,
                offered = %pending.offered,
                "the upstream changed the tool's definition; it is withheld until an operator \
                 accepts the change"
            );
            let _ = self.events.send(GatewayEvent::DefinitionChanged {
                tool: name.to_owned(),
                server: source.to_owned(),
            });
            state.pending.insert(name.to_owned(), pending);
        }
        false
    }

    fn save_pins(&self, pins: &PinFile) {
        let Some(path) = &self.pin_file else { return };
        let text = match serde_json::to_vec_pretty(pins) {
            Ok(text) => text,
            Err(error) => {
                tracing::error!(%error, "cannot encode the gateway's pins");
                return;
            }
        };
        // Written beside and renamed, so a crash leaves the old file or the new one.
        let temporary = path.with_extension("json.tmp");
        let written =
            std::fs::write(&temporary, text).and_then(|()| std::fs::rename(&temporary, path));
        if let Err(error) = written {
            tracing::error!(%error, path = %path.display(), "cannot save the gateway's pins");
        }
    }
}

/// The SHA-256 (hex) of what a tool claims: its description, input schema and title, with
/// object keys sorted so the hash depends on the content alone.
pub(crate) fn fingerprint(info: &McpToolInfo) -> String {
    use std::fmt::Write as _;

    let claim = serde_json::json!({
        "description": info.definition.description(),
        "inputSchema": info.definition.parameters(),
        "title": info.metadata.title,
    });
    let mut text = String::new();
    canonical(&claim, &mut text);
    Sha256::digest(text.as_bytes())
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// One upstream tool served by the gateway: calls go to its server through the client, and
/// answer "temporarily unavailable" while the server is not connected.
pub(crate) struct UpstreamTool {
    pub(crate) client: McpClient,
    pub(crate) server: String,
    pub(crate) info: McpToolInfo,
}

impl UpstreamTool {
    async fn call(&self, args: JsonObject) -> Result<String, ToolError> {
        if let McpStatus::Disconnected { reason } = self.client.status() {
            return Err(ToolError::new(format!(
                "the tool `{}` is temporarily unavailable: its MCP server '{}' is not connected \
                 ({reason}); the gateway is reconnecting, try again later",
                self.info.local_name, self.server
            )));
        }
        self.client.call(&self.info.local_name, args).await
    }
}

#[async_trait::async_trait]
impl ExecutableTool for UpstreamTool {
    fn name(&self) -> &str {
        &self.info.local_name
    }

    fn get_schema(&self) -> ChatTool {
        self.info.definition.clone()
    }

    fn metadata(&self) -> ToolMetadata {
        self.info.metadata.clone()
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        self.call(args).await
    }

    async fn execute_with(
        &self,
        args: JsonObject,
        _call: CallContext,
    ) -> Result<String, ToolError> {
        self.call(args).await
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The catalog's state is changed whole under the lock.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
