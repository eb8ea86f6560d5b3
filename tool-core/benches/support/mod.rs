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

/// A candidate against its baseline, measured in alternating rounds.
///
/// Criterion times one function after another, so a machine whose speed drifts between the
/// two (a shared virtual machine does) skews their ratio. Here each round times a batch of the
/// baseline and a batch of the candidate back to back, in alternating order, and the ratio is
/// the median over the rounds. Inputs are built before and outputs dropped after each timed
/// batch, as in criterion's `iter_batched`.
pub(crate) struct Paired {
    /// The median of the per-round ratios (candidate / baseline).
    pub median: f64,
    /// The first and third quartiles of the per-round ratios.
    pub quartiles: (f64, f64),
    /// How many rounds were timed.
    pub rounds: usize,
}

impl Paired {
    const ROUNDS: usize = 41;
    const BATCH: std::time::Duration = std::time::Duration::from_millis(4);

    /// Measures `candidate` against `baseline`, each output dropped as it is made (criterion's
    /// `iter`).
    pub(crate) fn measure<A, B>(
        mut candidate: impl FnMut() -> A,
        mut baseline: impl FnMut() -> B,
    ) -> Self {
        Self::rounds(|side, iterations| match side {
            Side::Candidate => time_loop(iterations, &mut candidate),
            Side::Baseline => time_loop(iterations, &mut baseline),
        })
    }

    /// Measures `candidate` against `baseline`, each given a fresh input from `setup`, inputs
    /// built before and outputs dropped after the timed batch (criterion's `iter_batched`).
    pub(crate) fn measure_batched<I, A, B>(
        mut setup: impl FnMut() -> I,
        mut candidate: impl FnMut(I) -> A,
        mut baseline: impl FnMut(I) -> B,
    ) -> Self {
        Self::rounds(|side, iterations| match side {
            Side::Candidate => time_batch(iterations, &mut setup, &mut candidate),
            Side::Baseline => time_batch(iterations, &mut setup, &mut baseline),
        })
    }

    fn rounds(mut time: impl FnMut(Side, usize) -> std::time::Duration) -> Self {
        // Enough iterations for a baseline batch to last about `BATCH`.
        let mut iterations = 1;
        loop {
            let elapsed = time(Side::Baseline, iterations);
            if elapsed >= Self::BATCH || iterations >= 1 << 24 {
                break;
            }
            let scale = Self::BATCH.as_secs_f64() / elapsed.as_secs_f64().max(1e-9);
            iterations =
                ((iterations as f64 * scale.clamp(1.5, 100.0)) as usize).max(iterations + 1);
        }
        let mut ratios: Vec<f64> = (0..Self::ROUNDS)
            .map(|round| {
                let (c, b) = if round % 2 == 0 {
                    let c = time(Side::Candidate, iterations);
                    (c, time(Side::Baseline, iterations))
                } else {
                    let b = time(Side::Baseline, iterations);
                    (time(Side::Candidate, iterations), b)
                };
                c.as_secs_f64() / b.as_secs_f64().max(1e-12)
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        let at = |fraction: f64| ratios[((ratios.len() - 1) as f64 * fraction).round() as usize];
        Self {
            median: at(0.5),
            quartiles: (at(0.25), at(0.75)),
            rounds: ratios.len(),
        }
    }
}

#[derive(Clone, Copy)]
enum Side {
    Candidate,
    Baseline,
}

fn time_loop<O>(iterations: usize, routine: &mut impl FnMut() -> O) -> std::time::Duration {
    let start = std::time::Instant::now();
    for _ in 0..iterations {
        std::hint::black_box(routine());
    }
    start.elapsed()
}

fn time_batch<I, O>(
    iterations: usize,
    setup: &mut impl FnMut() -> I,
    routine: &mut impl FnMut(I) -> O,
) -> std::time::Duration {
    let inputs: Vec<I> = (0..iterations).map(|_| setup()).collect();
    let start = std::time::Instant::now();
    let outputs: Vec<O> = inputs.into_iter().map(&mut *routine).collect();
    let elapsed = start.elapsed();
    drop(std::hint::black_box(outputs));
    elapsed
}

/// Prints a [`Paired`] measurement as `label: median Mx (quartiles Qx-Qx, N rounds)`.
pub(crate) fn print_paired(label: &str, paired: &Paired) {
    println!(
        "{label}: median {:.2}x (quartiles {:.2}x-{:.2}x, {} alternating rounds)",
        paired.median, paired.quartiles.0, paired.quartiles.1, paired.rounds
    );
}
