//! Configuration variables as every part of the model clients reads them: a blank value is no
//! value. [`from_env`](super::from_env) and each provider configuration's `from_env` look them
//! up here.

/// Reads a variable of the process environment.
pub(crate) fn process_vars(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A variable's value, `None` when unset or blank.
pub(crate) fn var(vars: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    vars(name)
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}
