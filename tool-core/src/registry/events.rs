//! [`RegistryEvent`]: what [`ToolRegistry::subscribe`](super::ToolRegistry::subscribe)rs are told.

/// A change to a registry, sent to every [`subscribe`](super::ToolRegistry::subscribe)r.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryEvent {
    /// A tool was registered.
    Registered(String),
    /// A tool was unregistered.
    Unregistered(String),
    /// A disabled tool was enabled.
    Enabled(String),
    /// An enabled tool was disabled.
    Disabled(String),
}

impl RegistryEvent {
    /// The name of the tool that changed.
    pub fn name(&self) -> &str {
        match self {
            Self::Registered(name)
            | Self::Unregistered(name)
            | Self::Enabled(name)
            | Self::Disabled(name) => name,
        }
    }
}
