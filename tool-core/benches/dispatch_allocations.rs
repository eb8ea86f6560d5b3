//! The allocations of one registry call on each dispatch path (see the `registry` bench), after
//! the tool's caches are warm, beside the hand-written baselines': counted here, apart from the
//! timings, because counting makes every allocation dearer.
//!
//! Run with `cargo bench -p tool-core --features mcp --bench dispatch_allocations` (`mcp` for
//! the peer's baseline, rmcp's tool router).

#[path = "support/counting.rs"]
mod counting;
#[path = "support/dispatch.rs"]
mod dispatch_cases;
#[path = "support/rmcp_router.rs"]
mod rmcp_router;
mod support;

use counting::allocations;
use dispatch_cases::{PATHS, Registries, cases, typed, value_dispatch};
use rmcp_router::RmcpRouter;

fn main() {
    println!("== registry: allocations per call, count (bytes) ==");
    let registries = Registries::new();
    let rmcp = RmcpRouter::for_cases();
    for case in cases() {
        let mut row = Vec::new();
        let (count, bytes) = allocations(|| typed(&case));
        row.push(format!("typed {count} ({bytes} B)"));
        let (count, bytes) = allocations(|| (case.baseline_value)(&case.text));
        row.push(format!("value {count} ({bytes} B)"));
        let (count, bytes) = allocations(|| value_dispatch(&case));
        row.push(format!("value_dispatch {count} ({bytes} B)"));
        rmcp.dispatch(case.name, &case.text);
        let (count, bytes) = allocations(|| rmcp.dispatch(case.name, &case.text));
        row.push(format!("rmcp_router {count} ({bytes} B)"));
        for (label, path, validate) in PATHS {
            // Warm the caches, then count one call.
            registries.dispatch((path, validate), &case);
            let (count, bytes) = allocations(|| registries.dispatch((path, validate), &case));
            let label = label.trim_start_matches("registry_");
            row.push(format!("{label} {count} ({bytes} B)"));
        }
        println!("dispatch/{}: {}", case.name, row.join(", "));
    }
}
