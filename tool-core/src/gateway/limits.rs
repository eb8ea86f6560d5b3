//! Per-user limits: a rate of requests of every kind and a rate of tool calls (calls per
//! minute, each a token bucket), the calls running at once on each server, and the streams
//! open at once. The running calls are counted per server so that calls hanging on one server
//! (until its timeout) do not hold back the user's calls to the others. (The sessions a user
//! holds are counted where sessions are made, in the MCP server's session cap.)
//!
//! A user's limits are kept from their first request while they are in use: once this process
//! holds `max_idle_users` users, a user with no call running and no stream open, whose buckets
//! have filled up again, is forgotten (amortized over new users, [`Sweeps`]). Their limits as
//! made on their next request are the ones forgotten: full buckets, nothing running.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{config::ServeConfig, scope::Sweeps};

/// The limits of every user.
pub(crate) struct Limits {
    calls_per_minute: u32,
    requests_per_minute: u32,
    concurrent: u32,
    streams: u32,
    users: Mutex<Users>,
}

/// The users whose limits are kept, and when they are next swept of the idle ones.
struct Users {
    limits: HashMap<String, UserLimits>,
    sweeps: Sweeps,
}

/// Requests that may start now (fractional: the bucket refills continuously).
struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl Bucket {
    fn full(per_minute: u32, now: Instant) -> Self {
        Self {
            tokens: f64::from(per_minute),
            refilled: now,
        }
    }

    /// Refills the bucket up to `now`; `Err` with the wait for the next token when it is
    /// empty.
    fn refill(&mut self, per_minute: u32, now: Instant) -> Result<(), Duration> {
        let capacity = f64::from(per_minute);
        let elapsed = now.saturating_duration_since(self.refilled);
        self.tokens = (self.tokens + elapsed.as_secs_f64() * capacity / 60.0).min(capacity);
        self.refilled = now;
        if self.tokens < 1.0 {
            return Err(Duration::from_secs_f64(
                (1.0 - self.tokens) * 60.0 / capacity,
            ));
        }
        Ok(())
    }

    /// Whether the bucket has filled up again by `now` (a full one is as good as a new one).
    fn is_full(&self, per_minute: u32, now: Instant) -> bool {
        let capacity = f64::from(per_minute);
        let elapsed = now.saturating_duration_since(self.refilled);
        self.tokens + elapsed.as_secs_f64() * capacity / 60.0 >= capacity
    }
}

struct UserLimits {
    calls: Bucket,
    requests: Bucket,
    /// The calls running, by server.
    running: HashMap<String, Arc<Semaphore>>,
    /// The streams open.
    streams: Arc<Semaphore>,
}

/// A request over its user's request rate: what to answer, and when to try again.
#[derive(Debug)]
pub(crate) struct OverRate {
    pub(crate) message: String,
    pub(crate) retry_after: Duration,
}

impl Limits {
    /// The limits `config` names (each at least 1).
    pub(crate) fn new(config: &ServeConfig) -> Self {
        Self {
            calls_per_minute: config.calls_per_minute.max(1),
            requests_per_minute: config.requests_per_minute.max(1),
            concurrent: config.max_concurrent_calls.max(1),
            streams: config.max_streams_per_user.max(1),
            users: Mutex::new(Users {
                limits: HashMap::new(),
                sweeps: Sweeps::new(config.max_idle_users),
            }),
        }
    }

    /// Whether `limits` are as a user's first request would make them: both buckets full, no
    /// call running and no stream open (each permit holds its semaphore).
    fn is_idle(&self, limits: &UserLimits, now: Instant) -> bool {
        limits.calls.is_full(self.calls_per_minute, now)
            && limits.requests.is_full(self.requests_per_minute, now)
            && Arc::strong_count(&limits.streams) == 1
            && limits
                .running
                .values()
                .all(|running| Arc::strong_count(running) == 1)
    }

    /// How many users' limits are kept.
    pub(crate) fn users(&self) -> usize {
        self.users
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .limits
            .len()
    }

    /// Runs `use_limits` on the limits of `user`, made on their first request (later requests
    /// find them without making a key).
    fn with_user<T>(
        &self,
        user: &str,
        now: Instant,
        use_limits: impl FnOnce(&mut UserLimits) -> T,
    ) -> T {
        let mut users = self.users.lock().unwrap_or_else(PoisonError::into_inner);
        let Users { limits, sweeps } = &mut *users;
        if let Some(limits) = limits.get_mut(user) {
            return use_limits(limits);
        }
        let _ = sweeps.before_insert(limits, |_, kept| !self.is_idle(kept, now));
        let limits = limits.entry(user.to_owned()).or_insert_with(|| UserLimits {
            calls: Bucket::full(self.calls_per_minute, now),
            requests: Bucket::full(self.requests_per_minute, now),
            running: HashMap::new(),
            streams: Arc::new(Semaphore::new(self.streams as usize)),
        });
        use_limits(limits)
    }

    /// Admits one HTTP request of `user`, of any kind, or says why it may not be served.
    pub(crate) fn admit_request(&self, user: &str) -> Result<(), OverRate> {
        let now = Instant::now();
        let per_minute = self.requests_per_minute;
        self.with_user(user, now, |limits| {
            limits.requests.refill(per_minute, now).map_err(|wait| OverRate {
                message: format!(
                    "rate limit: at most {per_minute} requests per minute per user; retry in {} ms",
                    wait.as_millis().max(1)
                ),
                retry_after: wait,
            })?;
            limits.requests.tokens -= 1.0;
            Ok(())
        })
    }

    /// Gives back the request [`admit_request`](Self::admit_request) admitted, which the MCP
    /// server then refused unserved (for its `Host` or `Origin`): a web page cannot spend a
    /// user's requests.
    pub(crate) fn refund_request(&self, user: &str) {
        let now = Instant::now();
        let capacity = f64::from(self.requests_per_minute);
        self.with_user(user, now, |limits| {
            limits.requests.tokens = (limits.requests.tokens + 1.0).min(capacity);
        });
    }

    /// Opens one stream of `user`: a permit held while the stream is open, or why it may not
    /// open.
    pub(crate) fn open_stream(&self, user: &str) -> Result<OwnedSemaphorePermit, String> {
        let streams = self.with_user(user, Instant::now(), |limits| limits.streams.clone());
        streams.try_acquire_owned().map_err(|_| {
            format!(
                "stream limit: at most {} open streams at once per user; close one first",
                self.streams
            )
        })
    }

    /// Admits one call of `user` to `server`: a permit held while the call runs, or why it may
    /// not start.
    pub(crate) fn admit(&self, user: &str, server: &str) -> Result<OwnedSemaphorePermit, String> {
        let now = Instant::now();
        self.with_user(user, now, |limits| {
            if let Err(wait) = limits.calls.refill(self.calls_per_minute, now) {
                return Err(format!(
                    "rate limit: at most {} tool calls per minute; retry in {} ms",
                    self.calls_per_minute,
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
                    "concurrency limit: at most {} tool calls at once per user on one server; \
                     wait for one to end",
                    self.concurrent
                )
            })?;
            limits.calls.tokens -= 1.0;
            Ok(permit)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(toml: &str) -> Limits {
        Limits::new(
            &super::super::GatewayConfig::from_toml(toml)
                .unwrap()
                .gateway,
        )
    }

    #[test]
    fn the_rate_and_the_running_calls_are_limited_per_user() {
        let limits = limits("[gateway]\ncalls_per_minute = 3\nmax_concurrent_calls = 1\n");
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

    #[test]
    fn requests_and_streams_are_limited_per_user_and_a_refund_gives_one_back() {
        let limits = limits("[gateway]\nrequests_per_minute = 2\nmax_streams_per_user = 1\n");
        limits.admit_request("a").unwrap();
        limits.admit_request("a").unwrap();
        let over = limits.admit_request("a").unwrap_err();
        assert!(
            over.message
                .starts_with("rate limit: at most 2 requests per minute per user; retry in "),
            "{over:?}"
        );
        assert!(over.retry_after > Duration::from_secs(25), "{over:?}");
        assert!(over.retry_after <= Duration::from_secs(30), "{over:?}");
        limits.admit_request("b").unwrap();
        limits.refund_request("a");
        limits.admit_request("a").unwrap();
        assert!(limits.admit_request("a").is_err());
        // A refund never fills the bucket past its size.
        limits.refund_request("b");
        limits.refund_request("b");
        limits.admit_request("b").unwrap();
        limits.admit_request("b").unwrap();
        assert!(limits.admit_request("b").is_err());

        let stream = limits.open_stream("a").unwrap();
        assert_eq!(
            limits.open_stream("a").unwrap_err(),
            "stream limit: at most 1 open streams at once per user; close one first"
        );
        let others = limits.open_stream("b").unwrap();
        drop(stream);
        let again = limits.open_stream("a").unwrap();
        drop((others, again));
    }

    #[test]
    fn idle_users_are_forgotten_and_users_in_use_or_over_their_rate_are_kept() {
        let limits = limits(
            "[gateway]\ncalls_per_minute = 1\nmax_streams_per_user = 1\nmax_idle_users = 8\n",
        );
        drop(limits.admit("greedy", "s").unwrap());
        let stream = limits.open_stream("watching").unwrap();
        let call = limits.admit("calling", "s").unwrap();
        for n in 0..1_000 {
            // A stream opened and closed leaves the user idle.
            drop(limits.open_stream(&format!("user-{n}")).unwrap());
            assert!(limits.users() <= 8, "{} users after {n}", limits.users());
        }
        assert!(
            limits
                .admit("greedy", "s")
                .unwrap_err()
                .starts_with("rate limit")
        );
        assert_eq!(
            limits.open_stream("watching").unwrap_err(),
            "stream limit: at most 1 open streams at once per user; close one first"
        );
        drop((stream, call));
    }
}
