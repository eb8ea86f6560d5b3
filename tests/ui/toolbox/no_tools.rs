use tool_core::toolbox;

struct Weather;

#[toolbox]
impl Weather {
    fn helper(&self) {}
}

fn main() {}
