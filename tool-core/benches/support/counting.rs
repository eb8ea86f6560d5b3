//! Counts allocations: a bench that includes this module (`#[path = "support/counting.rs"]`)
//! runs on `stats_alloc`'s instrumented allocator, which makes every allocation a little dearer;
//! benches that compare times against baselines leave it out.

use std::alloc::System;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The allocations (count, bytes asked for) that `run` makes; a reallocation counts as one,
/// with the bytes it added.
pub(crate) fn allocations<R>(run: impl FnOnce() -> R) -> (usize, usize) {
    let region = Region::new(GLOBAL);
    std::hint::black_box(run());
    let stats = region.change();
    (
        stats.allocations + stats.reallocations,
        stats.bytes_allocated + usize::try_from(stats.bytes_reallocated).unwrap_or(0),
    )
}
