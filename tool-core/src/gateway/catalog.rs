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
//! - the gateway's own names ([`RESERVED`]) are never an upstream's: such a tool is refused
//!   (an error names its server) and the gateway's own tool is served;
//! - with pinning on, a tool whose definition (description, input schema, title) differs from
//!   the one first served is withheld until an operator accepts it
//!   ([`Catalog::accept`]), so an upstream cannot change what a tool claims to do under users
//!   who already switched it on.
//!
//! # Where pins are kept
//!
//! With an SQL preference store the pins are rows of that store (`tool_gateway_pins`), so every
//! gateway process sharing it serves the same definitions: a tool seen for the first time is
//! pinned with `INSERT … ON CONFLICT DO NOTHING` and the stored row is read back before the
//! tool is served (the first process to pin a tool wins), and an operator's acceptance replaces
//! the row and is announced to the other processes ([`Catalog::reload_pins`]). A definition
//! change is kept there too (`tool_gateway_pending`) until accepted, so an operator can accept
//! it through any process, also one whose own upstream still offers the old definition (which
//! that process then withholds in turn, as a change). With `pins_file`
//! they are kept in that JSON file instead (one process), and with the `memory:` store in memory
//! only. Stored state that does not parse is never overwritten quietly: a pins file that is not
//! valid JSON is renamed aside (`….corrupt`) with an error in the log, and a stored pin that is
//! not a SHA-256 matches no definition, so its tool is withheld until an operator accepts it.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::broadcast;

use super::{
    GatewayError, GatewayEvent,
    handler::{SEARCH_TOOLS, SET_TOOL_ENABLED},
};
use crate::{
    call::CallContext,
    mcp::{McpClient, McpStatus, McpToolInfo},
    registry::ToolRegistry,
    store::{PendingRow, PinRow, SqlStore},
    tool::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolMetadata},
};

/// The source name of tools defined in the gateway itself.
pub(crate) const LOCAL: &str = "local";

/// The names of the gateway's own tools, which no other tool may take.
pub(crate) const RESERVED: [&str; 2] = [SET_TOOL_ENABLED, SEARCH_TOOLS];

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
    /// Changes of `pending` not yet written to the store: a tool's new change, or (`None`) the
    /// change it no longer has, with the hash that change offered.
    unsaved: Vec<(String, Option<Pending>, String)>,
}

/// Where the pins are kept; see the [module docs](self).
pub(crate) enum PinStore {
    /// In memory only.
    Memory,
    /// In a JSON file, for one process.
    File(PathBuf),
    /// In the preference store, shared by the processes using it.
    Sql(SqlStore),
}

/// See the [module docs](self).
pub(crate) struct Catalog {
    pub(crate) registry: Arc<ToolRegistry>,
    state: Mutex<State>,
    store: PinStore,
    pinning: bool,
    events: broadcast::Sender<GatewayEvent>,
    /// Held while writing `unsaved` to the store, so the writes keep their order.
    saving: tokio::sync::Mutex<()>,
}

impl Catalog {
    /// A catalog with the pins kept in `store`, loaded from there.
    pub(crate) async fn new(
        registry: Arc<ToolRegistry>,
        pinning: bool,
        store: PinStore,
        events: broadcast::Sender<GatewayEvent>,
    ) -> Result<Self, GatewayError> {
        let pins = match &store {
            PinStore::Memory | PinStore::Sql(_) => PinFile::default(),
            PinStore::File(path) => read_pin_file(path)?,
        };
        let catalog = Self {
            registry,
            state: Mutex::new(State {
                sources: BTreeMap::new(),
                served: HashMap::new(),
                reported: BTreeSet::new(),
                pins,
                pending: BTreeMap::new(),
                unsaved: Vec::new(),
            }),
            store,
            pinning,
            events,
            saving: tokio::sync::Mutex::new(()),
        };
        if let PinStore::Sql(sql) = &catalog.store {
            let rows = sql
                .gateway_pins()
                .await
                .map_err(|error| GatewayError::Store(error.to_string()))?;
            catalog.take_pins(rows);
        }
        Ok(catalog)
    }

    /// Replaces what `source` offers and brings the registry in line. With the pins in the
    /// store, the tools seen for the first time are pinned there first, and served with the
    /// pin the store keeps (another process may have pinned them before).
    pub(crate) async fn offer(&self, source: &str, tools: Vec<Offered>) {
        if let (true, PinStore::Sql(sql)) = (self.pinning, &self.store) {
            let fresh: Vec<PinRow> = {
                let state = lock(&self.state);
                tools
                    .iter()
                    .filter_map(|offered| {
                        let fingerprint = offered.fingerprint.as_ref()?;
                        let tool = offered.tool.name();
                        (!state.pins.tools.contains_key(tool)).then(|| PinRow {
                            tool: tool.to_owned(),
                            server: source.to_owned(),
                            sha256: fingerprint.clone(),
                        })
                    })
                    .collect()
            };
            if !fresh.is_empty() {
                // On failure the tools are pinned in memory by `sync`, as without a store.
                match sql.gateway_pins_add(&fresh).await {
                    Ok(()) => self.reload_pins().await,
                    Err(error) => {
                        tracing::error!(%error, "cannot store the pins of new tool definitions");
                    }
                }
            }
        }
        let pinned_now = {
            let mut state = lock(&self.state);
            state.sources.insert(source.to_owned(), tools);
            self.sync(&mut state)
        };
        if pinned_now {
            self.save_pin_file();
        }
        self.save_pending().await;
    }

    /// With the pins in the store: writes there the changes of the waiting definition changes
    /// that `sync` made.
    async fn save_pending(&self) {
        let _saving = self.saving.lock().await;
        let unsaved = std::mem::take(&mut lock(&self.state).unsaved);
        let PinStore::Sql(sql) = &self.store else {
            return;
        };
        for (tool, change, offered) in unsaved {
            let saved = match change {
                Some(change) => {
                    sql.gateway_pending_put(&PendingRow {
                        tool,
                        server: change.server,
                        pinned: change.pinned,
                        offered: change.offered,
                    })
                    .await
                }
                None => sql.gateway_pending_remove(&tool, &offered).await,
            };
            if let Err(error) = saved {
                tracing::error!(%error, "cannot store a waiting definition change");
            }
        }
    }

    /// With the pins in the store: reads them again (another process pinned a tool or an
    /// operator accepted a change through it) and serves what they now allow.
    pub(crate) async fn reload_pins(&self) {
        let PinStore::Sql(sql) = &self.store else {
            return;
        };
        match sql.gateway_pins().await {
            Ok(rows) => {
                if self.take_pins(rows) {
                    let mut state = lock(&self.state);
                    self.sync(&mut state);
                }
                self.save_pending().await;
            }
            Err(error) => tracing::warn!(%error, "cannot read the stored pins"),
        }
    }

    /// Takes the stored pins over the ones in memory; whether any changed.
    fn take_pins(&self, rows: Vec<PinRow>) -> bool {
        let mut state = lock(&self.state);
        let mut changed = false;
        for row in rows {
            if !is_sha256(&row.sha256)
                && state
                    .reported
                    .insert(format!("pin:{}:{}", row.tool, row.sha256))
            {
                tracing::error!(
                    tool = %row.tool,
                    "the stored pin of the tool is not a SHA-256; it is kept, and the tool is \
                     withheld until an operator accepts its definition"
                );
            }
            let pin = Pin {
                server: row.server,
                sha256: row.sha256,
            };
            if state.pins.tools.get(&row.tool) != Some(&pin) {
                state.pins.tools.insert(row.tool, pin);
                changed = true;
            }
        }
        changed
    }

    /// The source serving `tool`, if it is served.
    pub(crate) fn source_of(&self, tool: &str) -> Option<String> {
        lock(&self.state)
            .served
            .get(tool)
            .map(|(source, _)| source.clone())
    }

    /// The definition changes waiting for an operator, by tool name: the ones this process
    /// saw, and, with the pins in the store, the ones the other processes sharing it saw.
    pub(crate) async fn pending(&self) -> BTreeMap<String, Pending> {
        let mut pending = self.stored_pending().await;
        pending.extend(lock(&self.state).pending.clone());
        pending
    }

    /// The definition changes waiting in the store (none without one).
    async fn stored_pending(&self) -> BTreeMap<String, Pending> {
        let PinStore::Sql(sql) = &self.store else {
            return BTreeMap::new();
        };
        match sql.gateway_pending().await {
            Ok(rows) => rows
                .into_iter()
                .map(|row| {
                    let change = Pending {
                        server: row.server,
                        pinned: row.pinned,
                        offered: row.offered,
                    };
                    (row.tool, change)
                })
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "cannot read the stored definition changes");
                BTreeMap::new()
            }
        }
    }

    /// Accepts the pending change of `tool` (seen by this process, or by another sharing the
    /// store): its new definition is pinned (in the store first, when the pins are there) and
    /// served. `false` when no change of it is pending.
    pub(crate) async fn accept(&self, tool: &str) -> Result<bool, GatewayError> {
        let seen = lock(&self.state).pending.get(tool).cloned();
        let pending = match seen {
            Some(pending) => Some(pending),
            None => self.stored_pending().await.remove(tool),
        };
        let Some(pending) = pending else {
            return Ok(false);
        };
        if let PinStore::Sql(sql) = &self.store {
            sql.gateway_pin_replace(&PinRow {
                tool: tool.to_owned(),
                server: pending.server.clone(),
                sha256: pending.offered.clone(),
            })
            .await
            .map_err(|error| GatewayError::Store(error.to_string()))?;
        }
        tracing::info!(tool, server = %pending.server, "an operator accepted the tool's new definition");
        {
            let mut state = lock(&self.state);
            state.pending.remove(tool);
            state.pins.tools.insert(
                tool.to_owned(),
                Pin {
                    server: pending.server,
                    sha256: pending.offered,
                },
            );
            self.sync(&mut state);
        }
        self.save_pin_file();
        self.save_pending().await;
        Ok(true)
    }

    /// Brings the registry in line with the sources and the pins; whether a tool was pinned
    /// (seen for the first time).
    fn sync(&self, state: &mut State) -> bool {
        let mut offers: BTreeMap<String, Vec<(String, Offered)>> = BTreeMap::new();
        for (source, tools) in &state.sources {
            for offered in tools {
                let name = offered.tool.name();
                if source != LOCAL && RESERVED.contains(&name) {
                    if state.reported.insert(format!("reserved:{source}:{name}")) {
                        tracing::error!(
                            tool = %name,
                            server = %source,
                            "the server `{source}` offers a tool named `{name}`, a name of the \
                             gateway's own tools; it is not served (give the server a prefix)"
                        );
                    }
                    continue;
                }
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
        pins_changed
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
            if let Some(gone) = state.pending.remove(name) {
                state.unsaved.push((name.to_owned(), None, gone.offered));
            }
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
            state.unsaved.push((
                name.to_owned(),
                Some(pending.clone()),
                pending.offered.clone(),
            ));
            state.pending.insert(name.to_owned(), pending);
        }
        false
    }

    /// With a pins file: writes the pins to it.
    fn save_pin_file(&self) {
        let PinStore::File(path) = &self.store else {
            return;
        };
        let pins = lock(&self.state).pins.clone();
        let text = match serde_json::to_vec_pretty(&pins) {
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

/// The pins in the file at `path`: none when it is missing; a file that does not parse is
/// renamed aside (never overwritten) and the gateway starts with no pins, or, when it cannot
/// be moved, does not start.
fn read_pin_file(path: &Path) -> Result<PinFile, GatewayError> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(PinFile::default());
    };
    match serde_json::from_slice(&bytes) {
        Ok(pins) => Ok(pins),
        Err(error) => {
            let aside = path.with_extension("json.corrupt");
            match std::fs::rename(path, &aside) {
                Ok(()) => tracing::error!(
                    %error,
                    kept = %aside.display(),
                    "the gateway's pins file is not valid; it is kept aside and every tool is \
                     pinned again as first served"
                ),
                Err(rename) => {
                    return Err(GatewayError::Config(format!(
                        "the pins file {} is not valid ({error}) and cannot be moved aside \
                         ({rename}); move it away to start with no pins",
                        path.display()
                    )));
                }
            }
            Ok(PinFile::default())
        }
    }
}

/// Whether `text` is a SHA-256 as [`fingerprint`] writes it.
fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
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
    /// The call, with `call`'s context (the server's progress reaches the gateway's client).
    async fn call(&self, args: JsonObject, call: CallContext) -> Result<String, ToolError> {
        if let McpStatus::Disconnected { reason } = self.client.status() {
            return Err(ToolError::new(format!(
                "the tool `{}` is temporarily unavailable: its MCP server '{}' is not connected \
                 ({reason}); the gateway is reconnecting, try again later",
                self.info.local_name, self.server
            )));
        }
        self.client
            .call_with(&self.info.local_name, args, call)
            .await
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
        let call = CallContext::new(String::new(), self.info.local_name.clone());
        self.call(args, call).await
    }

    async fn execute_with(&self, args: JsonObject, call: CallContext) -> Result<String, ToolError> {
        self.call(args, call).await
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The catalog's state is changed whole under the lock.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
