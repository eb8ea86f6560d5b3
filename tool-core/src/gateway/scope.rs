//! What the sessions, their owners and their switches share (kept apart so that none of them
//! depends on another for it): the preference scope of a session's switches, the clock
//! sessions are timed by, and the sweeps of maps kept per user.

/// The start of the preference scope of a session's switches: `{this}{user}.{session id}`.
pub(crate) const SESSION_SCOPE: &str = "gateway-session.";

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// When a map of entries kept per user (or per session) is next swept of the ones that are
/// idle: once it holds `floor` entries, or twice as many as the last sweep left, whichever is
/// more. A sweep's cost is spread over the inserts before it, so keeping the map costs each
/// request O(1) amortized, and the map holds at most `floor` entries, or twice the ones in use.
pub(crate) struct Sweeps {
    floor: usize,
    next: usize,
}

impl Sweeps {
    /// Sweeps from `floor` entries on (at least 1).
    pub(crate) fn new(floor: usize) -> Self {
        let floor = floor.max(1);
        Self { floor, next: floor }
    }

    /// Before an insert into `map`: when due, keeps only the entries `keep` holds to; how
    /// many went.
    pub(crate) fn before_insert<K, V>(
        &mut self,
        map: &mut std::collections::HashMap<K, V>,
        keep: impl FnMut(&K, &mut V) -> bool,
    ) -> usize {
        if map.len() < self.next {
            return 0;
        }
        let before = map.len();
        map.retain(keep);
        self.next = map.len().saturating_mul(2).max(self.floor);
        before - map.len()
    }
}
