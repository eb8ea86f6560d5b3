//! Behaviour and compile-time tests of `tool-core`; the tests live in `behaviour/` and `ui/`.

pub mod store_writers;
