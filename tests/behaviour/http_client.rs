//! HTTP clients for the tests' own requests. reqwest is built here without a crypto provider of
//! its own (tool-core turns on `rustls-no-provider`), and tool-core installs `ring` only when it
//! builds its first client: a test that makes its own client first installs it the same way,
//! so no test depends on which test ran before it.

/// A client builder, with rustls' process-wide crypto provider installed.
pub(crate) fn builder() -> reqwest::ClientBuilder {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may win the race to install one: one is installed either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::builder()
}

/// A client with reqwest's defaults.
pub(crate) fn client() -> reqwest::Client {
    builder().build().expect("an HTTP client")
}
