//! Who a request belongs to: bearer tokens (kept as SHA-256 hashes), a trusted proxy's user
//! header, or the anonymous user of a loopback gateway.
//!
//! # Security boundary
//!
//! [`Users::identify`] is the one place an HTTP request gets a user. It guarantees:
//!
//! - a bearer token is accepted only when its SHA-256 equals a configured hash, compared in
//!   time that does not depend on where the hashes differ, against every user's hash;
//! - a wrong token is refused even when anonymous access is allowed;
//! - the proxy's user header is read only from the configured proxy addresses, only once (a
//!   request carrying it twice is refused), and only names that a preference store keeps
//!   (letters, digits, `-`, `_`, `.`);
//! - without credentials, a request gets the anonymous user only when the gateway listens on
//!   loopback, the operator named one, and the request comes straight from a client on this
//!   host: from a loopback address that is not a trusted proxy's, without a header a proxy
//!   adds to what it forwards ([`FORWARDED`]). A reverse proxy on the same host connects
//!   from loopback too; what it forwards from elsewhere is not the anonymous user's.

use std::{
    net::{IpAddr, SocketAddr},
    sync::atomic::{AtomicBool, Ordering},
};

use axum::http::{HeaderMap, HeaderName, header};
use sha2::{Digest, Sha256};

use super::{GatewayError, config::GatewayConfig};
use crate::store::is_valid_name;

/// A request's user, put in the request's extensions by the HTTP gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GatewayUser(pub(crate) String);

/// Why a request has no user.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No credentials.
    Missing,
    /// A token that matches no user, or an unusable proxy header.
    Invalid,
}

/// The headers a proxy adds to a request it forwards (RFC 7239 `Forwarded`, the common
/// `X-Forwarded-*` and `X-Real-IP`, and RFC 9110 `Via`): a request carrying one came through a
/// proxy, and is never the anonymous user's.
const FORWARDED: [HeaderName; 6] = [
    header::FORWARDED,
    HeaderName::from_static("x-forwarded-for"),
    HeaderName::from_static("x-forwarded-host"),
    HeaderName::from_static("x-forwarded-proto"),
    HeaderName::from_static("x-real-ip"),
    header::VIA,
];

/// The users of one gateway.
pub(crate) struct Users {
    tokens: Vec<(String, [u8; 32])>,
    proxy: Option<(Vec<IpAddr>, HeaderName)>,
    anonymous: Option<String>,
    admin: Option<[u8; 32]>,
    /// Whether a forwarded request without credentials was refused yet (said once in the log).
    forwarded_refused: AtomicBool,
}

impl Users {
    /// The users of `config`, for a gateway bound to `bound` (`None`: stdio only). Anonymous
    /// access is dropped, with a warning, off loopback.
    pub(crate) fn new(
        config: &GatewayConfig,
        bound: Option<SocketAddr>,
    ) -> Result<Self, GatewayError> {
        let mut tokens = Vec::new();
        for user in &config.users {
            check_user_name(&user.name)?;
            let hash = parse_hash(&user.token_sha256).ok_or_else(|| {
                GatewayError::Config(format!(
                    "user `{}`: `token_sha256` must be 64 hex digits",
                    user.name
                ))
            })?;
            tokens.push((user.name.clone(), hash));
        }
        let proxy = match &config.gateway.trusted_proxy {
            // Compared in their canonical form, as the peers: a server listening on `[::]`
            // sees an IPv4 client as `::ffff:a.b.c.d`.
            Some(proxy) => Some((
                proxy
                    .addresses
                    .iter()
                    .map(std::net::IpAddr::to_canonical)
                    .collect(),
                HeaderName::try_from(proxy.user_header.as_str()).map_err(|_| {
                    GatewayError::Config(format!(
                        "`trusted_proxy.user_header` `{}` is not a header name",
                        proxy.user_header
                    ))
                })?,
            )),
            None => None,
        };
        let mut anonymous = config.gateway.anonymous_user.clone();
        if let Some(name) = &anonymous {
            check_user_name(name)?;
            if bound.is_some_and(|addr| !addr.ip().is_loopback()) {
                tracing::warn!(
                    "the gateway listens beyond loopback: requests without credentials are \
                     refused, `anonymous_user` is ignored"
                );
                anonymous = None;
            }
        }
        let admin = match &config.gateway.admin_token_sha256 {
            Some(hash) => Some(parse_hash(hash).ok_or_else(|| {
                GatewayError::Config("`admin_token_sha256` must be 64 hex digits".to_owned())
            })?),
            None => None,
        };
        Ok(Self {
            tokens,
            proxy,
            anonymous,
            admin,
            forwarded_refused: AtomicBool::new(false),
        })
    }

    /// The user of a request with `headers` from `peer`; see the [module docs](self).
    pub(crate) fn identify(
        &self,
        headers: &HeaderMap,
        peer: Option<SocketAddr>,
    ) -> Result<GatewayUser, Refusal> {
        if headers.contains_key(header::AUTHORIZATION) {
            let token = bearer_token(headers).ok_or(Refusal::Invalid)?;
            let hash = sha256(token);
            // Every hash is compared, so the time taken does not tell which user came close.
            let mut found = None;
            for (name, expected) in &self.tokens {
                if same_hash(&hash, expected) {
                    found = Some(name);
                }
            }
            return found
                .map(|name| GatewayUser(name.clone()))
                .ok_or(Refusal::Invalid);
        }
        if let Some((addresses, header)) = &self.proxy {
            if let Some(value) = headers.get(header) {
                let from_proxy = peer.is_some_and(|peer| is_among(addresses, peer));
                // Repeated, the header names more than one user: none is trusted.
                if !from_proxy || headers.get_all(header).iter().nth(1).is_some() {
                    return Err(Refusal::Invalid);
                }
                let name = value.to_str().map_err(|_| Refusal::Invalid)?;
                if !is_user_name(name) {
                    return Err(Refusal::Invalid);
                }
                return Ok(GatewayUser(name.to_owned()));
            }
        }
        let anonymous = self.anonymous.as_ref().ok_or(Refusal::Missing)?;
        if !self.is_local_client(headers, peer) {
            if !self.forwarded_refused.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "refused a request without credentials that came through a proxy (or from a \
                     `trusted_proxy` address): `anonymous_user` is for clients on this host only"
                );
            }
            return Err(Refusal::Missing);
        }
        Ok(GatewayUser(anonymous.clone()))
    }

    /// Whether a request came straight from a client on this host: from a loopback address
    /// that is not a trusted proxy's, with none of the headers a proxy adds.
    fn is_local_client(&self, headers: &HeaderMap, peer: Option<SocketAddr>) -> bool {
        let Some(peer) = peer else { return false };
        let from_proxy = self
            .proxy
            .as_ref()
            .is_some_and(|(addresses, _)| is_among(addresses, peer));
        peer.ip().to_canonical().is_loopback()
            && !from_proxy
            && !FORWARDED.iter().any(|name| headers.contains_key(name))
    }

    /// Whether `headers` carry the admin API's token (never, without one configured).
    pub(crate) fn is_admin(&self, headers: &HeaderMap) -> bool {
        match (&self.admin, bearer_token(headers)) {
            (Some(expected), Some(token)) => same_hash(&sha256(token), expected),
            _ => false,
        }
    }
}

/// The SHA-256 of a token, as the configuration stores it (hex).
pub fn hash_token(token: &str) -> String {
    use std::fmt::Write as _;

    sha256(token)
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn parse_hash(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut hash = [0u8; 32];
    for (index, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(index * 2..index * 2 + 2)?, 16).ok()?;
    }
    Some(hash)
}

/// Compares two hashes in time that does not depend on their contents.
fn same_hash(given: &[u8; 32], expected: &[u8; 32]) -> bool {
    given
        .iter()
        .zip(expected)
        .fold(0u8, |differ, (a, b)| differ | (a ^ b))
        == 0
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(char::is_whitespace)?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A user name the preference stores keep as part of a scope.
pub(crate) fn is_user_name(name: &str) -> bool {
    name.len() <= 64 && is_valid_name(name)
}

fn check_user_name(name: &str) -> Result<(), GatewayError> {
    if is_user_name(name) {
        Ok(())
    } else {
        Err(GatewayError::Config(format!(
            "invalid user name `{}`: use 1 to 64 ASCII letters, digits, `-`, `_` or `.`, not \
             starting with `.`",
            name.escape_debug()
        )))
    }
}

/// Whether `peer` has one of `addresses` (canonical: IPv4 ones as IPv4).
fn is_among(addresses: &[std::net::IpAddr], peer: SocketAddr) -> bool {
    addresses.contains(&peer.ip().to_canonical())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn config(text: &str) -> GatewayConfig {
        GatewayConfig::from_toml(text).unwrap()
    }

    fn with(name: &str, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::try_from(name).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
        headers
    }

    #[test]
    fn tokens_are_matched_by_hash_and_wrong_ones_refused() {
        let text = format!(
            "[gateway]\nanonymous_user = \"guest\"\n[[users]]\nname = \"alice\"\ntoken_sha256 = \"{}\"\n",
            hash_token("a-secret")
        );
        let loopback = Some("127.0.0.1:1".parse().unwrap());
        let users = Users::new(&config(&text), loopback).unwrap();
        assert_eq!(
            users.identify(&with("authorization", "Bearer a-secret"), None),
            Ok(GatewayUser("alice".to_owned()))
        );
        assert_eq!(
            users.identify(&with("authorization", "Bearer a-secreT"), None),
            Err(Refusal::Invalid)
        );
        assert_eq!(
            users.identify(&HeaderMap::new(), loopback),
            Ok(GatewayUser("guest".to_owned()))
        );
        let public = Users::new(&config(&text), Some("10.0.0.1:1".parse().unwrap())).unwrap();
        assert_eq!(
            public.identify(&HeaderMap::new(), loopback),
            Err(Refusal::Missing)
        );
    }

    #[test]
    fn the_anonymous_user_is_for_clients_on_this_host_only() {
        let text = "[gateway]\nanonymous_user = \"guest\"\n\
                    [gateway.trusted_proxy]\naddresses = [\"127.0.0.2\"]\nuser_header = \"x-user\"\n";
        let users = Users::new(&config(text), Some("127.0.0.1:1".parse().unwrap())).unwrap();
        let guest = Ok(GatewayUser("guest".to_owned()));
        for local in ["127.0.0.1:5000", "[::1]:5000", "[::ffff:127.0.0.1]:5000"] {
            assert_eq!(
                users.identify(&HeaderMap::new(), Some(local.parse().unwrap())),
                guest,
                "{local}"
            );
        }
        let local = Some("127.0.0.1:5000".parse().unwrap());
        for name in [
            "forwarded",
            "x-forwarded-for",
            "x-forwarded-host",
            "x-forwarded-proto",
            "x-real-ip",
            "via",
        ] {
            assert_eq!(
                users.identify(&with(name, "203.0.113.7"), local),
                Err(Refusal::Missing),
                "{name}"
            );
        }
        // Not from loopback, from the proxy (also as an IPv4-mapped IPv6 address, as a server
        // listening on `[::]` sees it), or from nowhere known: nobody.
        for peer in [
            Some("10.0.0.3:5000"),
            Some("127.0.0.2:5000"),
            Some("[::ffff:127.0.0.2]:5000"),
            None,
        ] {
            let peer = peer.map(|peer| peer.parse().unwrap());
            assert_eq!(
                users.identify(&HeaderMap::new(), peer),
                Err(Refusal::Missing),
                "{peer:?}"
            );
        }
        // The proxy's user header still names its user.
        assert_eq!(
            users.identify(&with("x-user", "bob"), Some("127.0.0.2:1".parse().unwrap())),
            Ok(GatewayUser("bob".to_owned()))
        );
    }

    #[test]
    fn the_user_header_counts_only_from_the_proxy() {
        let users = Users::new(
            &config(
                "[gateway.trusted_proxy]\naddresses = [\"127.0.0.2\"]\nuser_header = \"x-user\"\n",
            ),
            None,
        )
        .unwrap();
        let proxy = Some("127.0.0.2:5000".parse().unwrap());
        let other = Some("127.0.0.3:5000".parse().unwrap());
        assert_eq!(
            users.identify(&with("x-user", "bob"), proxy),
            Ok(GatewayUser("bob".to_owned()))
        );
        assert_eq!(
            users.identify(&with("x-user", "bob"), other),
            Err(Refusal::Invalid)
        );
        // The proxy as a server listening on `[::]` sees it; a proxy configured by its
        // IPv4-mapped address is the same proxy.
        let mapped = Some("[::ffff:127.0.0.2]:5000".parse().unwrap());
        assert_eq!(
            users.identify(&with("x-user", "bob"), mapped),
            Ok(GatewayUser("bob".to_owned()))
        );
        let by_mapped = Users::new(
            &config(
                "[gateway.trusted_proxy]\naddresses = [\"::ffff:127.0.0.2\"]\nuser_header = \"x-user\"\n",
            ),
            None,
        )
        .unwrap();
        assert_eq!(
            by_mapped.identify(&with("x-user", "bob"), proxy),
            Ok(GatewayUser("bob".to_owned()))
        );
        assert_eq!(
            users.identify(&with("x-user", "../bob"), proxy),
            Err(Refusal::Invalid)
        );
    }

    #[test]
    fn hashes_must_be_hex() {
        assert!(parse_hash(&hash_token("x")).is_some());
        assert!(parse_hash("zz").is_none());
        assert!(parse_hash(&"é".repeat(32)).is_none());
    }
}
