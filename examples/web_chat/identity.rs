//! Who the user is: a cookie the server signs, so it takes only the users it issued.
//!
//! The cookie is `TOKEN.TAG`: `TOKEN` is 16 random bytes, `TAG` their HMAC-SHA-256 under a key
//! only the server has (`DATA/cookie.key`). The user's id, which names their folder and their
//! preferences, is the SHA-256 of the token: reading the folder names gives neither a cookie nor
//! a token.

use std::path::Path;

use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::{Digest as _, Sha256};

use crate::storage;

/// The bytes of a token and of the key.
const TOKEN_BYTES: usize = 16;
const KEY_BYTES: usize = 32;

/// Signs and checks user cookies.
pub(crate) struct Identity {
    /// HMAC-SHA-256 keyed with the server's key, before any input.
    keyed: Hmac<Sha256>,
}

/// A user the server issued: their id, and the cookie value that proves it.
pub(crate) struct Issued {
    pub(crate) id: String,
    pub(crate) cookie: String,
}

impl Identity {
    /// The key kept in `path`, made (readable by this user only) when the file is missing.
    pub(crate) fn load_or_create(path: &Path) -> Result<Self, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let mut key = [0; KEY_BYTES];
                getrandom::fill(&mut key)
                    .map_err(|error| format!("no random bytes for the cookie key: {error}"))?;
                storage::create_private_file(path, hex(&key).as_bytes())
                    .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
                return Self::with_key(&key);
            }
            Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
        };
        let key = unhex(text.trim())
            .and_then(|bytes| <[u8; KEY_BYTES]>::try_from(bytes).ok())
            .ok_or_else(|| {
                format!(
                    "{} is not a cookie key (64 hex digits); remove it to make a new one",
                    path.display()
                )
            })?;
        Self::with_key(&key)
    }

    fn with_key(key: &[u8; KEY_BYTES]) -> Result<Self, String> {
        let keyed = <Hmac<Sha256>>::new_from_slice(key)
            .map_err(|error| format!("the cookie key cannot be used: {error}"))?;
        Ok(Self { keyed })
    }

    /// A new user.
    pub(crate) fn issue(&self) -> Result<Issued, getrandom::Error> {
        let mut token = [0; TOKEN_BYTES];
        getrandom::fill(&mut token)?;
        let token = hex(&token);
        let tag = hex(&self.mac(&token).finalize().into_bytes());
        Ok(Issued {
            id: user_id(&token),
            cookie: format!("{token}.{tag}"),
        })
    }

    /// The id of the user whose cookie is `value`, when the server issued it; `None` for
    /// anything else (made up, altered, or signed with another key).
    pub(crate) fn verify(&self, value: &str) -> Option<String> {
        let (token, tag) = value.split_once('.')?;
        if token.len() != 2 * TOKEN_BYTES || unhex(token).is_none() {
            return None;
        }
        // The comparison takes the same time wherever the tags differ.
        self.mac(token).verify_slice(&unhex(tag)?).ok()?;
        Some(user_id(token))
    }

    fn mac(&self, token: &str) -> Hmac<Sha256> {
        let mut mac = self.keyed.clone();
        mac.update(token.as_bytes());
        mac
    }
}

/// The id of the user of `token`: the first half of its SHA-256, in hex.
fn user_id(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes())[..16])
}

/// Lowercase hex digits of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The bytes of lowercase or uppercase hex digits; `None` when `text` is not that.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
        .collect()
}
