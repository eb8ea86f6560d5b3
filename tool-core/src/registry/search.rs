//! The registry's search index ([`SharedIndex`]): built at the first search, then kept up to
//! date one tool at a time as tools are registered and unregistered, and shared by every
//! snapshot, which finds only the tools it holds as enabled and deferred.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::entry::ToolEntry;
use crate::search::{SearchError, SearchMatches, ToolIndex};

/// Every registered tool, enabled or not, in one [`ToolIndex`], and the registry version it
/// is current with. Enabling, disabling and per-session switches change no posting: a
/// snapshot filters what the index finds.
#[derive(Default)]
pub(super) struct SharedIndex(RwLock<Live>);

#[derive(Default)]
struct Live {
    /// The registry's version after its last change.
    version: u64,
    /// `None` until a search needs it: a registry nobody searches pays nothing.
    index: Option<ToolIndex>,
}

impl SharedIndex {
    /// The registry, now at `version`, registered `entry` (or replaced the tool of its name).
    pub(super) fn inserted(&self, version: u64, entry: &ToolEntry) {
        let mut live = self.write();
        live.version = version;
        if let Some(index) = &mut live.index {
            index.upsert(entry.definition(), entry.metadata().title.as_deref());
        }
    }

    /// The registry, now at `version`, unregistered the tool `name`.
    pub(super) fn removed(&self, version: u64, name: &str) {
        let mut live = self.write();
        live.version = version;
        if let Some(index) = &mut live.index {
            index.remove(name);
        }
    }

    /// The registry is now at `version`, with the same tools (one was switched).
    pub(super) fn switched(&self, version: u64) {
        self.write().version = version;
    }

    /// Searches the index for the tools `keep` keeps. The snapshot at `version` holding
    /// `entries` builds the index when it is not built yet; when the registry has moved on
    /// since that snapshot, the snapshot's entries are searched in an index of their own,
    /// which is not kept.
    pub(super) fn search<'a>(
        &self,
        version: u64,
        entries: impl Iterator<Item = &'a ToolEntry>,
        query: &str,
        limit: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Result<SearchMatches, SearchError> {
        {
            let live = self.read();
            if let Some(index) = &live.index {
                return index.search_where(query, limit, keep);
            }
        }
        let mut live = self.write();
        let current = live.version == version;
        let index = match &mut live.index {
            Some(index) => index,
            slot => {
                let built = index_of(entries);
                if !current {
                    return built.search_where(query, limit, keep);
                }
                slot.insert(built)
            }
        };
        index.search_where(query, limit, keep)
    }

    /// How many postings the index's updates wrote so far (`None` before it is built).
    pub(super) fn postings_written(&self) -> Option<u64> {
        self.read().index.as_ref().map(ToolIndex::postings_written)
    }

    fn read(&self) -> RwLockReadGuard<'_, Live> {
        // Every update of `Live` leaves it whole (a version, or one tool's postings written
        // by `ToolIndex` before it returns), so a poisoned lock is still safe to use.
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Live> {
        self.0.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An index of `entries`, with their titles.
pub(super) fn index_of<'a>(entries: impl Iterator<Item = &'a ToolEntry>) -> ToolIndex {
    let mut index = ToolIndex::default();
    for entry in entries {
        index.upsert(entry.definition(), entry.metadata().title.as_deref());
    }
    index
}
