use std::sync::Arc;

use tool_core::{ToolRegistry, tool, toolbox};

struct Weather {
    unit: String,
}

#[toolbox]
impl Weather {
    /// Today's temperature in a city.
    #[tool]
    async fn temperature(&self, city: String) -> String {
        format!("20 {} in {city}", self.unit)
    }

    /// Tomorrow's forecast.
    #[tool(name = "forecast", read_only)]
    async fn tomorrow(&self) -> Result<String, String> {
        Ok(self.unit.clone())
    }

    /// An ordinary method stays as it is.
    fn unit(&self) -> &str {
        &self.unit
    }
}

/// A free tool beside the toolbox uses the same `tool` import.
#[tool]
async fn ping() -> &'static str {
    "pong"
}

fn main() {
    let weather = Arc::new(Weather { unit: "C".to_owned() });
    assert_eq!(weather.unit(), "C");
    let registry = ToolRegistry::new();
    assert!(registry.register_all(weather.tools()).is_empty());
    registry.register(Ping).unwrap();
    assert_eq!(registry.get_tool_names(), ["temperature", "forecast", "ping"]);
}
