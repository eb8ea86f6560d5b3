//! Shared by the benches: read criterion's estimates back and print each benchmark's ratio to
//! its baseline.

#![allow(dead_code)]

use std::path::PathBuf;

/// Where criterion writes its results: `<target>/criterion`.
fn criterion_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(PathBuf::from(home));
    }
    // The bench binary is `<target>/<profile>/deps/<name>`.
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.join("criterion"))
}

/// The mean time in nanoseconds of `group/function` from the run that just finished.
pub(crate) fn mean_ns(group: &str, function: &str) -> Option<f64> {
    let path = criterion_dir()?
        .join(group.replace('/', "_"))
        .join(function.replace('/', "_"))
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["mean"]["point_estimate"].as_f64()
}

/// Prints `group: candidate = X ns, baseline = Y ns, ratio = X/Y` for each pair.
pub(crate) fn print_ratios(title: &str, pairs: &[(&str, &str, &str)]) {
    println!("\n== {title}: ratios to baselines (mean time; lower is better) ==");
    for (group, candidate, baseline) in pairs {
        match (mean_ns(group, candidate), mean_ns(group, baseline)) {
            (Some(c), Some(b)) => println!(
                "{group}: {candidate} = {} / {baseline} = {} -> {:.2}x",
                show(c),
                show(b),
                c / b
            ),
            _ => println!("{group}: {candidate} vs {baseline}: not measured in this run"),
        }
    }
}

fn show(ns: f64) -> String {
    if ns >= 1_000_000.0 {
        format!("{:.2} ms", ns / 1_000_000.0)
    } else if ns >= 1_000.0 {
        format!("{:.2} µs", ns / 1_000.0)
    } else {
        format!("{ns:.1} ns")
    }
}

/// Drives a future the way an executor's already-running task does: one poll, which is all a
/// tool that never waits needs, so the measurement is the dispatch and not an executor's
/// set-up. A future that does wait is handed to `block_on`.
pub(crate) fn run_now<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => futures::executor::block_on(future),
    }
}
