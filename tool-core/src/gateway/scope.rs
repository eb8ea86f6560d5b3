//! What the sessions, their owners and their switches share (kept apart so that none of them
//! depends on another for it): the preference scope of a session's switches and the clock
//! sessions are timed by.

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
