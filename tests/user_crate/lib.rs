//! The README's typed tools and streaming loop, written as a user writes them with only
//! `tool-core`, `tokio` and `serde` in `Cargo.toml`.

use tool_core::{schemars, tool};

/// The arguments of `get_weather`, deriving `JsonSchema` through `use tool_core::schemars;`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct WeatherArgs {
    /// The city, such as `Paris`.
    pub city: String,
}

/// Get the current weather for a city.
#[tool(read_only)]
pub async fn get_weather(#[args] args: WeatherArgs) -> String {
    format!("sunny in {}", args.city)
}

/// The arguments of `get_time`, deriving `JsonSchema` with the crate named on the struct
/// instead of a `use`.
#[derive(serde::Deserialize, tool_core::schemars::JsonSchema)]
#[schemars(crate = "tool_core::schemars")]
pub struct TimeArgs {
    /// The time zone, such as `Europe/Paris`.
    pub zone: String,
}

/// Get the time in a time zone.
#[tool(read_only)]
pub async fn get_time(#[args] args: TimeArgs) -> String {
    format!("noon in {}", args.zone)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tool_core::futures::StreamExt;
    use tool_core::{Agent, AgentEvent, AgentOptions, ToolRegistry, model::TestModel};

    use super::{GetTime, GetWeather};

    #[tokio::test]
    async fn the_readme_streaming_loop_runs_on_the_re_exports() {
        let registry = Arc::new(ToolRegistry::new());
        registry.register(GetWeather).unwrap();
        registry.register(GetTime).unwrap();
        let agent = Agent::new(TestModel::new(), AgentOptions::new().registry(registry));
        let mut events = agent.stream_chat("Weather and time?");
        let mut results = Vec::new();
        let mut steps = None;
        while let Some(event) = events.next().await {
            match event.unwrap() {
                AgentEvent::ToolResult { name, content, .. } => {
                    results.push(format!("{name}: {content}"));
                }
                AgentEvent::Done(reply) => steps = Some(reply.steps),
                _ => {}
            }
        }
        assert_eq!(
            results,
            ["get_weather: sunny in example", "get_time: noon in example"]
        );
        assert_eq!(steps, Some(2));
    }
}
