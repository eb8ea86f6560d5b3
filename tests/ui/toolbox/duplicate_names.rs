use tool_core::toolbox;

struct Weather;

#[toolbox]
impl Weather {
    /// Today's weather.
    #[tool(name = "weather")]
    async fn today(&self, city: String) -> String {
        city
    }

    /// Tomorrow's weather.
    #[tool(name = "weather")]
    async fn tomorrow(&self, city: String) -> String {
        city
    }
}

fn main() {}
