use tool_core::{ExecutableTool, tool};

/// Count the days.
#[tool(lenient)]
async fn count_days(days: u32) -> u32 {
    days
}

/// Count the nights.
#[tool(lenient = true, read_only)]
async fn count_nights(nights: u32) -> u32 {
    nights
}

/// Count strictly.
#[tool(lenient = false)]
async fn count_strictly(count: u32) -> u32 {
    count
}

fn main() {
    assert_eq!(CountDays.metadata().lenient_arguments, Some(true));
    assert_eq!(CountNights.metadata().lenient_arguments, Some(true));
    assert_eq!(CountStrictly.metadata().lenient_arguments, Some(false));
}
