//! The example's own tools, with titles, categories and icons so the tools popover has something
//! to show beside the built-in file tools. The icons are small inline SVG `data:` URLs, so the
//! page needs no network and no emoji font to draw them.

use std::{
    hash::{BuildHasher as _, Hasher as _},
    path::Path,
    time::{SystemTime, UNIX_EPOCH},
};

use tool_core::{
    ExecutableTool, HandlerTable, ToolContext, ToolContextOptions, ToolRegistry,
    builtin::{ReadFile, SaveSessionContext, WriteFile},
    config::{LoadReport, ToolConfig},
    tool,
};

/// The tools of one user, in the order the popover lists them: `read_file` and `write_file`
/// confined to the user's `scratch` folder, the built-in `save_session_context`, the example's
/// own tools, and the tools of `config`, whose builtin entries run this registry's file tools
/// (so they see the same folder). Returns the registry, why any built-in tool was not
/// registered, and what the configuration registered.
pub(crate) fn registry(
    scratch: &Path,
    config: Option<&ToolConfig>,
) -> (ToolRegistry, Vec<String>, Option<LoadReport>) {
    let registry = ToolRegistry::new();
    let files = ToolContext::with_options(ToolContextOptions::new().root_dir(scratch));
    let mut rejected = Vec::new();
    rejected.extend(registry.register(ReadFile::new(files.clone())).err());
    rejected.extend(registry.register(WriteFile::new(files.clone())).err());
    // Every chat's agent hands the tool its own conversation (and session file), so the context
    // given here is only used by callers that bring none, which this server has not.
    rejected.extend(registry.register(SaveSessionContext::new(files)).err());
    rejected.extend(registry.register_all(all()));
    let report =
        config.map(|config| config.register(&registry, &HandlerTable::builtins_from(&registry)));
    let rejected = rejected.iter().map(ToString::to_string).collect();
    (registry, rejected, report)
}

/// The cities `city_weather` knows, with their sample weather.
const WEATHER: &[(&str, &str)] = &[
    ("Paris", "light rain, 11 °C, wind 15 km/h from the west"),
    ("Tokyo", "clear sky, 18 °C, wind 5 km/h from the south"),
    ("Lagos", "thunderstorms, 29 °C, humidity 84 %"),
    ("Lima", "overcast, 19 °C, no rain expected"),
    ("Oslo", "snow showers, -2 °C, wind 20 km/h from the north"),
];

/// The example's tools, in the order the popover lists them (after the built-ins).
fn all() -> Vec<std::sync::Arc<dyn ExecutableTool>> {
    vec![
        std::sync::Arc::new(CityWeather),
        std::sync::Arc::new(RollDice),
        std::sync::Arc::new(CurrentTime),
        std::sync::Arc::new(WordCount),
    ]
}

/// Today's sample weather for a city, from a fixed table kept for demonstrations: Paris, Tokyo,
/// Lagos, Lima or Oslo. Any other city is an error.
#[tool(
    title = "City weather",
    category = "weather",
    icon = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Ccircle cx='6' cy='6' r='3' fill='%23e8a317'/%3E%3Cpath d='M5 14h7a2.5 2.5 0 0 0 0-5 3.5 3.5 0 0 0-6.6 1A2 2 0 0 0 5 14z' fill='%237f93b0'/%3E%3C/svg%3E",
    read_only
)]
pub(crate) async fn city_weather(
    /// The city's name, such as `Paris`.
    #[schemars(example = &"Paris")]
    city: String,
) -> Result<String, String> {
    WEATHER
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(city.trim()))
        .map(|(name, weather)| format!("{name}: {weather} (sample data)"))
        .ok_or_else(|| {
            let known: Vec<&str> = WEATHER.iter().map(|(name, _)| *name).collect();
            format!(
                "no weather for `{city}`; the cities known are {}",
                known.join(", ")
            )
        })
}

/// Roll dice and report each face and the total.
#[tool(
    title = "Roll dice",
    category = "games",
    icon = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect x='2' y='2' width='12' height='12' rx='2.5' fill='none' stroke='%23345' stroke-width='1.5'/%3E%3Ccircle cx='5.5' cy='5.5' r='1.2' fill='%23345'/%3E%3Ccircle cx='8' cy='8' r='1.2' fill='%23345'/%3E%3Ccircle cx='10.5' cy='10.5' r='1.2' fill='%23345'/%3E%3C/svg%3E"
)]
pub(crate) async fn roll_dice(
    /// How many faces each die has, from 2 to 100.
    #[schemars(range(min = 2, max = 100), example = 6)]
    sides: u32,
    /// How many dice to roll, from 1 to 10.
    #[schemars(range(min = 1, max = 10), example = 2)]
    count: u32,
) -> Result<String, String> {
    // The schema says so too, but a tool does not trust its caller to have checked.
    if !(2..=100).contains(&sides) || !(1..=10).contains(&count) {
        return Err(format!(
            "cannot roll {count} dice of {sides} sides: sides must be 2 to 100, count 1 to 10"
        ));
    }
    let faces: Vec<u64> = (0..count)
        .map(|_| random_u64() % u64::from(sides) + 1)
        .collect();
    let total: u64 = faces.iter().sum();
    let faces: Vec<String> = faces.iter().map(u64::to_string).collect();
    Ok(format!("rolled {} (total {total})", faces.join(", ")))
}

/// The current date and time in UTC, in RFC 3339 form.
#[tool(
    title = "Current time",
    category = "clock",
    icon = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Ccircle cx='8' cy='8' r='6' fill='none' stroke='%23345' stroke-width='1.5'/%3E%3Cpath d='M8 4.5V8l2.5 1.5' fill='none' stroke='%23345' stroke-width='1.5'/%3E%3C/svg%3E",
    read_only
)]
pub(crate) async fn current_time() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    rfc3339(seconds)
}

/// Count the words, lines and characters of a text.
#[tool(
    title = "Word count",
    category = "text",
    icon = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Cpath d='M2 3h12M2 7h12M2 11h8' stroke='%23345' stroke-width='2'/%3E%3C/svg%3E",
    read_only
)]
pub(crate) async fn word_count(
    /// The text to count.
    #[schemars(example = &"The quick brown fox jumps over the lazy dog.")]
    text: String,
) -> String {
    format!(
        "{} word(s), {} line(s), {} character(s)",
        text.split_whitespace().count(),
        text.lines().count(),
        text.chars().count()
    )
}

/// A random number from the standard library's randomly keyed hasher: enough for dice and ids,
/// without a dependency for it.
pub(crate) fn random_u64() -> u64 {
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos()),
    );
    hasher.finish()
}

/// `seconds` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339(seconds: u64) -> String {
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    let rest = seconds % 86_400;
    // Howard Hinnant's `civil_from_days`: the proleptic Gregorian date of a day number.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}
