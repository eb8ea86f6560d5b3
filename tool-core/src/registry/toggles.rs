//! [`ToolToggles`]: one chat session's overrides of the registry's enabled state.

use std::{
    collections::HashMap,
    sync::{Arc, PoisonError, RwLock},
};

use super::{RegistrySnapshot, ToolRegistry};

/// Per-session tool toggles over a shared registry: a map of tool name to on/off that overrides
/// the registry's enabled state for one chat session only. Tools without an override keep the
/// registry's state. Cloning shares the same toggles.
///
/// ```
/// use tool_core::{ToolContext, ToolToggles, create_default_tool_registry};
///
/// let registry = create_default_tool_registry(ToolContext::default());
/// let session = ToolToggles::new();
/// session.set("write_file", false);
/// assert!(!session.snapshot(&registry).is_enabled("write_file"));
/// assert!(registry.is_tool_enabled("write_file"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ToolToggles {
    overrides: Arc<RwLock<Overrides>>,
}

#[derive(Debug, Default)]
struct Overrides {
    map: HashMap<String, bool>,
    generation: u64,
    /// The last snapshot built: (registry id, registry version, generation, snapshot), so a
    /// turn with nothing changed reuses its provider JSON. The id, not the registry's address:
    /// a registry allocated where a dropped one was would otherwise get its stale snapshot.
    cached: Option<(u64, u64, u64, Arc<RegistrySnapshot>)>,
}

impl Overrides {
    fn changed(&mut self) {
        self.generation += 1;
        self.cached = None;
    }
}

impl ToolToggles {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Turns a tool on or off for this session.
    pub fn set(&self, name: impl Into<String>, enabled: bool) {
        let mut overrides = self.write();
        overrides.map.insert(name.into(), enabled);
        overrides.changed();
    }

    /// Removes a session override; the registry's state applies again.
    pub fn reset(&self, name: &str) {
        let mut overrides = self.write();
        if overrides.map.remove(name).is_some() {
            overrides.changed();
        }
    }

    /// The override for a tool, if any.
    pub fn get(&self, name: &str) -> Option<bool> {
        self.read().map.get(name).copied()
    }

    /// Every override.
    pub fn overrides(&self) -> HashMap<String, bool> {
        self.read().map.clone()
    }

    /// Replaces every override at once (used to hydrate from stored preferences).
    pub fn replace_all(&self, map: HashMap<String, bool>) {
        let mut overrides = self.write();
        overrides.map = map;
        overrides.changed();
    }

    /// The registry as this session sees it: the overrides applied to the registry's state.
    /// Reused (an `Arc` clone) while neither the registry nor the overrides change.
    pub fn snapshot(&self, registry: &ToolRegistry) -> Arc<RegistrySnapshot> {
        let registry_id = registry.id;
        {
            let overrides = self.read();
            if overrides.map.is_empty() {
                return registry.snapshot();
            }
            if let Some((cached_id, version, generation, snapshot)) = &overrides.cached {
                if *cached_id == registry_id
                    && *version == registry.version()
                    && *generation == overrides.generation
                {
                    return snapshot.clone();
                }
            }
        }
        let mut overrides = self.write();
        let snapshot =
            Arc::new(registry.snapshot_with(|name, _, enabled| {
                overrides.map.get(name).copied().unwrap_or(enabled)
            }));
        let generation = overrides.generation;
        overrides.cached = Some((
            registry_id,
            snapshot.version(),
            generation,
            snapshot.clone(),
        ));
        snapshot
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Overrides> {
        self.overrides
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Overrides> {
        self.overrides
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
