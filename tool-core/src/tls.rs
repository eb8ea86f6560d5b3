//! The TLS crypto provider of tool-core's HTTPS clients (the provider clients and the MCP
//! client over streamable HTTP).
//!
//! reqwest is built without a provider of its own (`rustls-no-provider`), so that tool-core
//! does not compile aws-lc-rs (a large C build) for every user: certificates are verified as
//! before (the platform's verifier and roots), with rustls' `ring` provider doing the crypto.
//! An application that installs another provider (aws-lc-rs, a FIPS build) before tool-core
//! builds its first client keeps it.

/// Makes sure rustls has a process-wide crypto provider, installing `ring` if none is installed
/// yet; call it before building a `reqwest` client, which would otherwise panic.
pub(crate) fn install_default_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing the race to another thread installing a provider is fine: one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
