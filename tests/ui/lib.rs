//! Compile-time tests of `#[tool]` and `#[toolbox]`; the cases live beside this file.
