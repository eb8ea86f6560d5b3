use tool_core::toolbox;

struct Weather;

#[toolbox]
impl Weather {
    /// Today's weather.
    #[tool]
    async fn today(city: String) -> String {
        city
    }
}

fn main() {}
