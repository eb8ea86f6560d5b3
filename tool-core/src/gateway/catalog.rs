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
//! - with pinning on, a tool whose definition (description, input and output schemas, title,
//!   annotations: see [`fingerprint`]) differs from the one first served is withheld until an
//!   operator accepts it
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
//!
//! # Pins of the former format
//!
//! Pins written before they covered the output schema and the annotations hash the
//! description, input schema and title alone; pins written before they covered the icon hash
//! everything else ([`Fingerprint::former`]). A stored pin equal to such a hash of the
//! definition offered now is taken over: pinned again in the current format, with a log line,
//! and the tool stays served. This leaves one gap that no check can close: a former pin never
//! recorded the parts it left out, so a change of only those made while the gateway was being
//! upgraded cannot be told from the definition first served, and is taken over with it
//! (withholding every tool that has them instead would withhold unchanged tools after every
//! upgrade). Every process sharing a store should run the same version: an older one withholds
//! the tools a newer one pinned again.

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
    /// The definition's hashes, for upstream tools (pinned); `None` for local tools.
    pub(crate) fingerprint: Option<Fingerprint>,
}

/// What an upstream tool's definition is pinned by; see [`fingerprint`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    /// The SHA-256 of all a client relies on, pinned.
    pub(crate) sha256: String,
    /// The SHA-256s of the former formats: description, input schema and title alone; and,
    /// for a tool with an icon, everything but the icon. A pin equal to one is taken over in
    /// the current format, whatever the parts it left out are now (the former pin never
    /// recorded them; see the [module docs](self#pins-of-the-former-format)).
    pub(crate) former: Vec<String>,
}

/// A definition change waiting for an operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Pending {
    pub(crate) server: String,
    pub(crate) pinned: String,
    pub(crate) offered: String,
}

/// What [`Catalog::accept`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PinAccept {
    /// The change is accepted: its definition is pinned and served.
    Accepted,
    /// No change of the tool is pending.
    NotPending,
    /// The change pending is not the one the operator named: nothing was accepted. Its
    /// definition's SHA-256.
    Other(String),
}

/// What [`Catalog::drop_pin`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PinDrop {
    /// The pin is gone.
    Dropped,
    /// A source offers the tool: its pin stays.
    Offered,
    /// A change of the tool's definition waits for an operator (another process sharing the
    /// store withholds it): its pin stays.
    Waiting,
    /// The tool has no pin.
    Unknown,
}

/// What is pinned, as stored in the pins file: tool name to its server and definition hash.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
struct PinFile {
    tools: BTreeMap<String, Pin>,
}

impl PinFile {
    /// How many pins the tools of each source hold.
    fn held_by_source(&self) -> HashMap<String, usize> {
        let mut held = HashMap::new();
        for pin in self.tools.values() {
            *held.entry(pin.server.clone()).or_default() += 1;
        }
        held
    }
}

/// What one [`Catalog::sync`] pinned: the tools it pinned, whether it took a pin of a former
/// format over, and how many pins each source holds, counted as it goes.
struct NewPins {
    added: Vec<PinRow>,
    taken_over: bool,
    held: HashMap<String, usize>,
}

impl NewPins {
    /// Whether the pins changed.
    fn changed(&self) -> bool {
        !self.added.is_empty() || self.taken_over
    }
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
    /// Pins of the former format taken over and not yet written to the store: the tool, the
    /// former pin and the current one.
    taken_over: Vec<(String, String, String)>,
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
    /// The most pins the tools of one source hold.
    max_pins: usize,
    events: broadcast::Sender<GatewayEvent>,
    /// Held while writing `unsaved` to the store, so the writes keep their order.
    saving: tokio::sync::Mutex<()>,
}

impl Catalog {
    /// A catalog with the pins kept in `store`, loaded from there; at most `max_pins` for the
    /// tools of each source.
    pub(crate) async fn new(
        registry: Arc<ToolRegistry>,
        pinning: bool,
        max_pins: usize,
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
                taken_over: Vec::new(),
            }),
            store,
            pinning,
            max_pins,
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
    /// pin the store keeps (another process may have pinned them before); and the stored
    /// changes of the tools `source` now offers as pinned are forgotten (its upstream took
    /// them back): `true` then, for the other processes sharing the store to be told, so that
    /// those still seeing such a change record it again ([`reload_pins`](Self::reload_pins)).
    pub(crate) async fn offer(&self, source: &str, tools: Vec<Offered>) -> bool {
        if let (true, PinStore::Sql(sql)) = (self.pinning, &self.store) {
            let fresh: Vec<PinRow> = {
                let state = lock(&self.state);
                let mut held = state.pins.held_by_source().remove(source).unwrap_or(0);
                tools
                    .iter()
                    .filter_map(|offered| {
                        let fingerprint = offered.fingerprint.as_ref()?;
                        let tool = offered.tool.name();
                        if state.pins.tools.contains_key(tool) || held >= self.max_pins {
                            return None;
                        }
                        held += 1;
                        Some(PinRow {
                            tool: tool.to_owned(),
                            server: source.to_owned(),
                            sha256: fingerprint.sha256.clone(),
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
        if pinned_now.changed() {
            self.save_pin_file();
        }
        self.save_pending().await;
        self.forget_taken_back(source).await
    }

    /// With the pins in the store: forgets the stored changes of the tools `source` serves as
    /// pinned, which this process does not see as changed (its upstream took the change back,
    /// maybe while no process ran); whether any was forgotten.
    async fn forget_taken_back(&self, source: &str) -> bool {
        let (true, PinStore::Sql(sql)) = (self.pinning, &self.store) else {
            return false;
        };
        let stored = match sql.gateway_pending().await {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(%error, "cannot read the stored definition changes");
                return false;
            }
        };
        let taken_back: Vec<PendingRow> = {
            let state = lock(&self.state);
            stored
                .into_iter()
                .filter(|change| {
                    change.server == source
                        && !state.pending.contains_key(&change.tool)
                        && state
                            .served
                            .get(&change.tool)
                            .is_some_and(|(server, _)| server == source)
                })
                .collect()
        };
        let mut forgot = false;
        for change in taken_back {
            match sql
                .gateway_pending_remove(&change.tool, &change.offered)
                .await
            {
                Ok(()) => {
                    tracing::info!(
                        tool = %change.tool,
                        server = %source,
                        "the upstream offers the tool's pinned definition again; its waiting \
                         change is forgotten"
                    );
                    forgot = true;
                }
                Err(error) => tracing::error!(%error, "cannot forget a waiting definition change"),
            }
        }
        forgot
    }

    /// With the pins in the store: writes there the changes of the waiting definition changes
    /// and the pins taken over that `sync` made.
    async fn save_pending(&self) {
        let _saving = self.saving.lock().await;
        let (unsaved, taken_over) = {
            let mut state = lock(&self.state);
            (
                std::mem::take(&mut state.unsaved),
                std::mem::take(&mut state.taken_over),
            )
        };
        let PinStore::Sql(sql) = &self.store else {
            return;
        };
        for (tool, former, current) in taken_over {
            if let Err(error) = sql.gateway_pin_take_over(&tool, &former, &current).await {
                tracing::error!(%error, "cannot store a pin taken over in the current format");
            }
        }
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

    /// With the pins in the store: stores `pinned`, pins this process holds that the store
    /// lacks (made by a [`sync`](Self::sync) outside [`offer`](Self::offer), which stores them
    /// first, or kept by [`take_pins`](Self::take_pins)).
    async fn store_new_pins(&self, pinned: &[PinRow]) {
        let PinStore::Sql(sql) = &self.store else {
            return;
        };
        if pinned.is_empty() {
            return;
        }
        if let Err(error) = sql.gateway_pins_add(pinned).await {
            tracing::error!(%error, "cannot store the pins this process holds");
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
                let (changed, kept) = self.take_pins(rows);
                if !kept.is_empty() {
                    for pin in &kept {
                        tracing::warn!(
                            tool = %pin.tool,
                            server = %pin.server,
                            "the tool's pin was dropped through a process whose servers do not \
                             offer it, but a server of this one does: the pin is kept and stored \
                             again"
                        );
                    }
                    self.store_new_pins(&kept).await;
                }
                let pinned = {
                    let mut state = lock(&self.state);
                    let pinned = if changed {
                        self.sync(&mut state).added
                    } else {
                        Vec::new()
                    };
                    // The changes this process sees are recorded again: another process whose
                    // upstream offers the pinned definition may have forgotten them.
                    let seen: Vec<_> = state
                        .pending
                        .iter()
                        .map(|(tool, change)| {
                            (tool.clone(), Some(change.clone()), change.offered.clone())
                        })
                        .collect();
                    state.unsaved.extend(seen);
                    pinned
                };
                self.store_new_pins(&pinned).await;
                self.save_pending().await;
            }
            Err(error) => tracing::warn!(%error, "cannot read the stored pins"),
        }
    }

    /// Takes the stored pins over the ones in memory: whether any changed, and the pins no
    /// longer stored that are kept all the same, for a source of this process offers their
    /// tools (an operator dropped one through a process whose servers do not offer it;
    /// forgetting it would accept whatever definition is offered next). The others no longer
    /// stored are forgotten.
    fn take_pins(&self, rows: Vec<PinRow>) -> (bool, Vec<PinRow>) {
        let mut guard = lock(&self.state);
        let state = &mut *guard;
        let stored: BTreeSet<&str> = rows.iter().map(|row| row.tool.as_str()).collect();
        let offered: BTreeSet<&str> = state
            .sources
            .values()
            .flatten()
            .map(|offered| offered.tool.name())
            .collect();
        let before = state.pins.tools.len();
        let mut kept = Vec::new();
        state.pins.tools.retain(|tool, pin| {
            if stored.contains(tool.as_str()) {
                return true;
            }
            let offers = offered.contains(tool.as_str());
            if offers {
                kept.push(PinRow {
                    tool: tool.clone(),
                    server: pin.server.clone(),
                    sha256: pin.sha256.clone(),
                });
            }
            offers
        });
        let mut changed = state.pins.tools.len() != before;
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
        (changed, kept)
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
    /// served. With `offered`, only when the pending change's SHA-256 is that one (the change
    /// the operator reviewed, not one the upstream made since).
    pub(crate) async fn accept(
        &self,
        tool: &str,
        offered: Option<&str>,
    ) -> Result<PinAccept, GatewayError> {
        let seen = lock(&self.state).pending.get(tool).cloned();
        let pending = match seen {
            Some(pending) => Some(pending),
            None => self.stored_pending().await.remove(tool),
        };
        let Some(pending) = pending else {
            return Ok(PinAccept::NotPending);
        };
        if offered.is_some_and(|offered| offered != pending.offered) {
            return Ok(PinAccept::Other(pending.offered));
        }
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
        Ok(PinAccept::Accepted)
    }

    /// Forgets the pin of `tool` (in the store first, when the pins are there): an operator
    /// pruning the pins of tools no server offers any more. Refused while a source of this
    /// process offers the tool, served or withheld, or while a change of it waits in the store
    /// (a process sharing it withholds the tool): forgetting its pin would accept whatever is
    /// offered next. A process sharing the store whose source offers the tool keeps its pin
    /// and stores it again ([`take_pins`](Self::take_pins)).
    pub(crate) async fn drop_pin(&self, tool: &str) -> Result<PinDrop, GatewayError> {
        // Pins another process stored since this one last read them.
        self.reload_pins().await;
        if let PinStore::Sql(sql) = &self.store {
            let waiting = sql
                .gateway_pending()
                .await
                .map_err(|error| GatewayError::Store(error.to_string()))?;
            if waiting.iter().any(|change| change.tool == tool) {
                return Ok(PinDrop::Waiting);
            }
        }
        {
            let state = lock(&self.state);
            let offered = state
                .sources
                .values()
                .flatten()
                .any(|offered| offered.tool.name() == tool);
            if offered {
                return Ok(PinDrop::Offered);
            }
            if !state.pins.tools.contains_key(tool) {
                return Ok(PinDrop::Unknown);
            }
        }
        if let PinStore::Sql(sql) = &self.store {
            sql.gateway_pin_delete(tool)
                .await
                .map_err(|error| GatewayError::Store(error.to_string()))?;
        }
        let pinned = {
            let mut state = lock(&self.state);
            state.pins.tools.remove(tool);
            state.pending.remove(tool);
            // A tool withheld while its server held `max_pins` may be pinned now.
            self.sync(&mut state)
        };
        self.store_new_pins(&pinned.added).await;
        tracing::info!(tool, "an operator dropped the tool's pin");
        self.save_pin_file();
        Ok(PinDrop::Dropped)
    }

    /// Brings the registry in line with the sources and the pins; what it pinned.
    fn sync(&self, state: &mut State) -> NewPins {
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
        let mut new_pins = NewPins {
            added: Vec::new(),
            taken_over: false,
            held: state.pins.held_by_source(),
        };
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
                if !self.check_pin(state, &name, &source, fingerprint, &mut new_pins) {
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
        new_pins
    }

    /// Whether `name` may be served with `fingerprint`: pinned now if it never was (while its
    /// source holds fewer than `max_pins`; withheld, and reported, when it holds that many),
    /// withheld (and reported once) if it differs from its pin.
    fn check_pin(
        &self,
        state: &mut State,
        name: &str,
        source: &str,
        fingerprint: &Fingerprint,
        new_pins: &mut NewPins,
    ) -> bool {
        let Some(pin) = state.pins.tools.get(name) else {
            let full = format!("pins-full:{source}");
            let held = new_pins.held.entry(source.to_owned()).or_default();
            if *held >= self.max_pins {
                if state.reported.insert(full) {
                    tracing::error!(
                        server = %source,
                        tool = %name,
                        max_pins_per_server = self.max_pins,
                        "the server's tools hold as many pins as `max_pins_per_server` allows: \
                         its new tools are withheld until an operator drops the pins of tools \
                         it no longer offers (DELETE /admin/pins/{{tool}})"
                    );
                }
                return false;
            }
            *held += 1;
            state.reported.remove(&full);
            state.pins.tools.insert(
                name.to_owned(),
                Pin {
                    server: source.to_owned(),
                    sha256: fingerprint.sha256.clone(),
                },
            );
            new_pins.added.push(PinRow {
                tool: name.to_owned(),
                server: source.to_owned(),
                sha256: fingerprint.sha256.clone(),
            });
            return true;
        };
        let mut pinned = pin.sha256.clone();
        if fingerprint.former.contains(&pinned) && pinned != fingerprint.sha256 {
            tracing::info!(
                tool = %name,
                server = %source,
                "the tool's pin, of the former format, is taken over in the current one"
            );
            let server = pin.server.clone();
            let former = std::mem::replace(&mut pinned, fingerprint.sha256.clone());
            state
                .taken_over
                .push((name.to_owned(), former, fingerprint.sha256.clone()));
            state.pins.tools.insert(
                name.to_owned(),
                Pin {
                    server,
                    sha256: fingerprint.sha256.clone(),
                },
            );
            new_pins.taken_over = true;
        }
        if pinned == fingerprint.sha256 {
            if let Some(gone) = state.pending.remove(name) {
                state.unsaved.push((name.to_owned(), None, gone.offered));
            }
            return true;
        }
        let pending = Pending {
            server: source.to_owned(),
            pinned,
            offered: fingerprint.sha256.clone(),
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

/// The SHA-256s (hex) of what a tool claims, with object keys sorted so each depends on the
/// content alone: everything a client relies on (its description, input schema, output
/// schema, title, annotations as the server declared them, whether the gateway trusts them
/// or not, and the icon the gateway shows), and the former formats' (description, input
/// schema and title; and, with an icon, all but the icon).
pub(crate) fn fingerprint(info: &McpToolInfo) -> Fingerprint {
    let first = serde_json::json!({
        "description": info.definition.description(),
        "inputSchema": info.definition.parameters(),
        "title": info.metadata.title,
    });
    let mut claim = serde_json::json!({
        "fingerprint": 2,
        "description": info.definition.description(),
        "inputSchema": info.definition.parameters(),
        "outputSchema": info.output_schema,
        "title": info.metadata.title,
        "annotations": info.annotations,
    });
    let mut former = vec![sha256_hex(&first)];
    // Without an icon, the claim is the same as before the icon counted: its pin stays.
    if let Some(icon) = &info.metadata.icon {
        former.push(sha256_hex(&claim));
        claim["icon"] = Value::String(icon.clone());
    }
    Fingerprint {
        sha256: sha256_hex(&claim),
        former,
    }
}

fn sha256_hex(claim: &Value) -> String {
    use std::fmt::Write as _;

    let mut text = String::new();
    canonical(claim, &mut text);
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
        // Why the server is down stays out of the answer: the reason may name its command
        // line or its last words on stderr, which the operator sees in the log and `/healthz`.
        if let McpStatus::Disconnected { .. } = self.client.status() {
            return Err(ToolError::new(format!(
                "the tool `{}` is temporarily unavailable: its MCP server '{}' is not \
                 connected; the gateway is reconnecting, try again later",
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
