use tool_core::{ToolContext, toolbox};

struct Weather;

#[toolbox]
impl Weather {
    /// Today's weather.
    #[tool]
    async fn today(&self, #[context] ctx: &ToolContext, city: String) -> String {
        let _ = ctx;
        city
    }
}

fn main() {}
