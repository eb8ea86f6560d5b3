//! The allocations of one registry call on each dispatch path (see the `registry` bench), after
//! the tool's caches are warm, beside the hand-written baselines': counted here, apart from the
//! timings, because counting makes every allocation dearer.
//!
//! Run with `cargo bench -p tool-core --bench dispatch_allocations`.

use tool_core::RegistryOptions;

#[path = "support/counting.rs"]
mod counting;
#[path = "support/dispatch.rs"]
mod dispatch_cases;
mod support;

use counting::allocations;
use dispatch_cases::{PATHS, cases, dispatch_on, registry, typed};

fn main() {
    println!("== registry: allocations per call, count (bytes) ==");
    let unchecked = registry(RegistryOptions::new().validate_arguments(false));
    let validated = registry(RegistryOptions::new());
    for case in cases() {
        let mut row = Vec::new();
        let (count, bytes) = allocations(|| typed(&case));
        row.push(format!("typed {count} ({bytes} B)"));
        let (count, bytes) = allocations(|| (case.baseline_value)(&case.text));
        row.push(format!("value {count} ({bytes} B)"));
        for (label, text_path, validate) in PATHS {
            // Warm the caches, then count one call.
            dispatch_on(&validated, &unchecked, (text_path, validate), &case);
            let (count, bytes) =
                allocations(|| dispatch_on(&validated, &unchecked, (text_path, validate), &case));
            let label = label.trim_start_matches("registry_");
            row.push(format!("{label} {count} ({bytes} B)"));
        }
        println!("dispatch/{}: {}", case.name, row.join(", "));
    }
}
