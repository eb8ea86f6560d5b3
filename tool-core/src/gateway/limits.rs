//! Per-user call limits: a rate (calls per minute, as a token bucket) and a number of calls
//! running at once on each server. The running calls are counted per server so that calls
//! hanging on one server (until its timeout) do not hold back the user's calls to the others.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The limits of every user.
pub(crate) struct Limits {
    per_minute: u32,
    concurrent: u32,
    users: Mutex<HashMap<String, UserLimits>>,
}

struct UserLimits {
    /// Calls that may start now (fractional: the bucket refills continuously).
    tokens: f64,
    refilled: Instant,
    /// The calls running, by server.
    running: HashMap<String, Arc<Semaphore>>,
}

impl Limits {
    pub(crate) fn new(per_minute: u32, concurrent: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            concurrent: concurrent.max(1),
            users: Mutex::new(HashMap::new()),
        }
    }

    /// Admits one call of `user` to `server`: a permit held while the call runs, or why it may
    /// not start.
    pub(crate) fn admit(&self, user: &str, server: &str) -> Result<OwnedSemaphorePermit, String> {
        let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let capacity = f64::from(self.per_minute);
        // A user's entry is made on their first call; later calls find it without making a
        // key.
        if !users.contains_key(user) {
            users.insert(
                user.to_owned(),
                UserLimits {
                    tokens: capacity,
                    refilled: now,
                    running: HashMap::new(),
                },
            );
        }
        let Some(limits) = users.get_mut(user) else {
            return Err("the call limits are unavailable".to_owned());
        };
        let elapsed = now.duration_since(limits.refilled);
        limits.tokens = (limits.tokens + elapsed.as_secs_f64() * capacity / 60.0).min(capacity);
        limits.refilled = now;
        if limits.tokens < 1.0 {
            let wait = Duration::from_secs_f64((1.0 - limits.tokens) * 60.0 / capacity);
            return Err(format!(
                "rate limit: at most {} tool calls per minute; retry in {} ms",
                self.per_minute,
                wait.as_millis().max(1)
            ));
        }
        if !limits.running.contains_key(server) {
            limits.running.insert(
                server.to_owned(),
                Arc::new(Semaphore::new(self.concurrent as usize)),
            );
        }
        let running = limits
            .running
            .get(server)
            .ok_or_else(|| "the call limits are unavailable".to_owned())?;
        let permit = running.clone().try_acquire_owned().map_err(|_| {
            format!(
                "concurrency limit: at most {} tool calls at once per user on one server; wait \
                 for one to end",
                self.concurrent
            )
        })?;
        limits.tokens -= 1.0;
        Ok(permit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_and_the_running_calls_are_limited_per_user() {
        let limits = Limits::new(3, 1);
        let first = limits.admit("a", "s").unwrap();
        assert!(
            limits
                .admit("a", "s")
                .unwrap_err()
                .starts_with("concurrency limit")
        );
        assert!(limits.admit("b", "s").is_ok());
        // Another server's calls are counted apart.
        let other = limits.admit("a", "t").unwrap();
        drop((first, other));
        let third = limits.admit("a", "s").unwrap();
        drop(third);
        assert!(
            limits
                .admit("a", "t")
                .unwrap_err()
                .starts_with("rate limit")
        );
    }
}
