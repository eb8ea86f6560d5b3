#!/usr/bin/env bash
# Compile time of `#[tool]`: generates four crates under target/compile-bench/ (never committed)
# and times `cargo build` of each once its dependencies are built.
#
# - minimal:     the smallest typed dispatcher a user could write instead: the same 100 structs
#                deriving Deserialize + JsonSchema, and a `HashMap` from each name to its
#                description, schema and a boxed closure that deserializes and calls the fn;
# - hand:        100 args structs deriving Deserialize + JsonSchema, each with a hand-written
#                `ExecutableTool` impl (`#[async_trait]`), registered by hand;
# - macro_typed: the same 100 structs, each taken by a `#[tool]` fn (typed-struct form);
# - macro_plain: 100 `#[tool]` fns with the same fields as plain parameters.
#
# Usage: tool-macros/benches/compile_time.sh [tools=100] [runs=3]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
tools=${1:-100}
runs=${2:-3}
bench=$root/target/compile-bench
mkdir -p "$bench"

cat >"$bench/Cargo.toml" <<TOML
[workspace]
resolver = "3"
members = ["minimal", "hand", "macro_typed", "macro_plain"]

[workspace.dependencies]
tool-core = { path = "$root/tool-core" }
serde = { version = "1", features = ["derive"] }
schemars = "1"
serde_json = "1"

# The repository's settings, so the dependencies it already built are reused.
[profile.dev.package."*"]
debug = false
TOML
cp "$root/Cargo.lock" "$bench/Cargo.lock"

for name in minimal hand macro_typed macro_plain; do
    mkdir -p "$bench/$name/src"
    cat >"$bench/$name/Cargo.toml" <<TOML
[package]
name = "$name"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
tool-core.workspace = true
serde.workspace = true
schemars.workspace = true
serde_json.workspace = true
TOML
done

struct_of() {
    cat <<RS
/// Arguments of \`tool_$1\`.
#[derive(Deserialize, JsonSchema)]
pub struct Args$1 {
    /// The city.
    pub city: String,
    /// How many days ahead.
    pub days: u8,
    /// An optional note.
    pub note: Option<String>,
}
RS
}

{
    echo "//! $tools tools in a minimal typed dispatcher: derives, closures and a map."
    echo "use std::{collections::HashMap, future::Future, pin::Pin};"
    echo "use schemars::JsonSchema;"
    echo "use serde::Deserialize;"
    echo "type Reply = Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;"
    echo "type Handler = Box<dyn Fn(serde_json::Value) -> Reply + Send + Sync>;"
    echo "/// Each tool's description, schema and handler, by name."
    echo "pub type Dispatcher = HashMap<&'static str, (&'static str, serde_json::Value, Handler)>;"
    for i in $(seq 0 $((tools - 1))); do
        struct_of "$i"
        cat <<RS
async fn tool_$i(args: Args$i) -> String {
    format!("{} {} {:?} $i", args.city, args.days, args.note)
}
RS
    done
    echo "/// Every tool."
    echo "pub fn registry() -> Dispatcher {"
    echo "    let mut tools = Dispatcher::new();"
    for i in $(seq 0 $((tools - 1))); do
        cat <<RS
    tools.insert(
        "tool_$i",
        (
            "Tool number $i.",
            serde_json::to_value(schemars::schema_for!(Args$i)).unwrap_or_default(),
            Box::new(|value| {
                Box::pin(async move {
                    let args: Args$i = serde_json::from_value(value).map_err(|e| e.to_string())?;
                    Ok(tool_$i(args).await)
                })
            }),
        ),
    );
RS
    done
    echo "    tools"
    echo "}"
} >"$bench/minimal/src/lib.rs"

{
    echo "//! $tools hand-written tools."
    echo "use schemars::JsonSchema;"
    echo "use serde::Deserialize;"
    echo "use tool_core::{ChatTool, ExecutableTool, JsonObject, ToolError, ToolRegistry, async_trait};"
    for i in $(seq 0 $((tools - 1))); do
        struct_of "$i"
        cat <<RS
async fn tool_$i(args: Args$i) -> String {
    format!("{} {} {:?} $i", args.city, args.days, args.note)
}

/// Tool number $i.
pub struct Tool$i;

#[async_trait]
impl ExecutableTool for Tool$i {
    fn name(&self) -> &str {
        "tool_$i"
    }

    fn get_schema(&self) -> ChatTool {
        let schema = serde_json::to_value(schemars::schema_for!(Args$i)).unwrap_or_default();
        ChatTool::new("tool_$i", "Tool number $i.", schema)
    }

    async fn execute(&self, args: JsonObject) -> Result<String, ToolError> {
        let args: Args$i = serde_json::from_value(serde_json::Value::Object(args))
            .map_err(|error| ToolError::invalid_arguments(error.to_string()))?;
        Ok(tool_$i(args).await)
    }
}
RS
    done
    echo "/// Every tool."
    echo "pub fn registry() -> ToolRegistry {"
    echo "    let registry = ToolRegistry::new();"
    for i in $(seq 0 $((tools - 1))); do echo "    let _ = registry.register(Tool$i);"; done
    echo "    registry"
    echo "}"
} >"$bench/hand/src/lib.rs"

{
    echo "//! $tools tools taking an args struct."
    echo "use schemars::JsonSchema;"
    echo "use serde::Deserialize;"
    echo "use tool_core::{ToolRegistry, tool};"
    for i in $(seq 0 $((tools - 1))); do
        struct_of "$i"
        cat <<RS
/// Tool number $i.
#[tool]
pub async fn tool_$i(#[args] args: Args$i) -> String {
    format!("{} {} {:?} $i", args.city, args.days, args.note)
}
RS
    done
    echo "/// Every tool."
    echo "pub fn registry() -> ToolRegistry {"
    echo "    let registry = ToolRegistry::new();"
    for i in $(seq 0 $((tools - 1))); do echo "    let _ = registry.register(Tool$i);"; done
    echo "    registry"
    echo "}"
} >"$bench/macro_typed/src/lib.rs"

{
    echo "//! $tools tools taking plain parameters."
    echo "use tool_core::{ToolRegistry, tool};"
    for i in $(seq 0 $((tools - 1))); do
        cat <<RS
/// Tool number $i.
#[tool]
pub async fn tool_$i(
    /// The city.
    city: String,
    /// How many days ahead.
    days: u8,
    /// An optional note.
    note: Option<String>,
) -> String {
    format!("{} {} {:?} $i", city, days, note)
}
RS
    done
    echo "/// Every tool."
    echo "pub fn registry() -> ToolRegistry {"
    echo "    let registry = ToolRegistry::new();"
    for i in $(seq 0 $((tools - 1))); do echo "    let _ = registry.register(Tool$i);"; done
    echo "    registry"
    echo "}"
} >"$bench/macro_plain/src/lib.rs"


export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target} CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
cd "$bench"
echo "building dependencies..." >&2
cargo build --offline --workspace --quiet 2>&1 | grep -v '^warning' >&2 || true

# Interleave the crates within each run, so a change in machine load hits all of them alike.
# Each build is timed by the CPU time (user + system) of cargo and rustc, which other work on a
# shared machine disturbs less than wall time; wall time is shown beside it.
declare -A best wall
TIMEFORMAT='%U %S %R'
for _ in $(seq "$runs"); do
    for name in minimal hand macro_typed macro_plain; do
        touch "$name/src/lib.rs"
        if ! times=$({ time cargo build --offline --quiet -p "$name" >"$bench/$name.log" 2>&1; } 2>&1); then
            cat "$bench/$name.log" >&2
            exit 1
        fi
        read -r user sys real <<<"$times"
        took=$(echo "$user + $sys" | bc)
        if [ -z "${best[$name]:-}" ] || [ "$(echo "$took < ${best[$name]}" | bc)" = 1 ]; then
            best[$name]=$took
            wall[$name]=$real
        fi
    done
done

echo "cargo build of $tools tools, best of $runs by CPU time (dependencies prebuilt, CARGO_INCREMENTAL=0):"
for name in minimal hand macro_typed macro_plain; do
    printf '  %-12s %6.2fs CPU (%6.2fs wall)  %.2fx minimal  %.2fx hand\n' "$name" "${best[$name]}" \
        "${wall[$name]}" "$(echo "${best[$name]} / ${best[minimal]}" | bc -l)" \
        "$(echo "${best[$name]} / ${best[hand]}" | bc -l)"
done
