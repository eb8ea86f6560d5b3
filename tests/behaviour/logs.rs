//! Capturing `tracing` output in tests.
//!
//! One global subscriber, installed once at `DEBUG`, writes into a per-thread buffer while a test
//! captures. Per-test scoped subscribers would race: tracing caches each call site's interest
//! and the global maximum level across threads, so a test capturing at `WARN` could hide the
//! `DEBUG` lines another test waits for.

use std::{cell::RefCell, io, sync::Once};

thread_local! {
    static BUFFER: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

struct ThreadBuffer;

impl io::Write for ThreadBuffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        BUFFER.with(|buffer| {
            if let Some(buffer) = buffer.borrow_mut().as_mut() {
                buffer.extend_from_slice(bytes);
            }
        });
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(|| ThreadBuffer)
            .finish();
        // Another global subscriber would only mean this binary set one elsewhere first.
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// Runs `run` on this thread and returns its result with everything it logged.
pub(crate) fn capture<T>(run: impl FnOnce() -> T) -> (T, String) {
    install();
    BUFFER.with(|buffer| *buffer.borrow_mut() = Some(Vec::new()));
    let result = run();
    let bytes = BUFFER.with(|buffer| buffer.borrow_mut().take().unwrap_or_default());
    (result, String::from_utf8_lossy(&bytes).into_owned())
}
