//! How a run of the `evd`, `svd` and `batched_svd` examples is watched: its progress on
//! stderr, and SIGINT / SIGTERM turned into a cancellation of the run.

use eigenflow::runtime::{Progress, RunHandle};
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The number of the first SIGINT or SIGTERM received (0 while none was).
#[derive(Clone)]
pub struct Stop(Arc<AtomicUsize>);

impl Stop {
    /// From now on SIGINT and SIGTERM set the flag instead of killing the
    /// process (a second one still ends it at once, with 128 + its number).
    pub fn install() -> std::io::Result<Stop> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let signal = Arc::new(AtomicUsize::new(0));
        let again = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            let code = 128 + sig;
            signal_hook::flag::register_conditional_shutdown(sig, code, again.clone())
                .and_then(|_| signal_hook::flag::register(sig, again.clone()))
                .and_then(|_| {
                    signal_hook::flag::register_usize(sig, signal.clone(), sig as usize)
                })?;
        }
        Ok(Stop(signal))
    }

    /// The name of signal `sig` (SIGINT or SIGTERM, the two handled).
    pub fn name(sig: i32) -> &'static str {
        if sig == signal_hook::consts::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        }
    }

    /// The signal received, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }
}

/// Shows the run's progress on stderr until it finishes (cost-weighted, with
/// an ETA): a bar in a terminal, otherwise a line every 10 s; nothing with
/// `--quiet`. A SIGINT or SIGTERM asks the run to stop (no task starts after).
pub fn show_progress(
    handle: &RunHandle,
    progress: &Progress,
    quiet: bool,
    stop: &Stop,
    t0: Instant,
) {
    let finished = || handle.is_finished();
    let cancel = || handle.request_cancel();
    show_progress_until(finished, cancel, progress, quiet, stop, t0);
}

/// [`show_progress`] for a run known by `finished` (it says whether the run
/// is over) and stopped by `cancel` (called once, at the first SIGINT or
/// SIGTERM; a run that cannot be stopped passes a closure that does nothing).
pub fn show_progress_until(
    finished: impl Fn() -> bool,
    cancel: impl Fn(),
    progress: &Progress,
    quiet: bool,
    stop: &Stop,
    t0: Instant,
) {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(1000)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {percent:>3}% ETA {eta} {msg}",
        )
        .expect("valid template"),
    );
    // Without a terminal on stderr the bar is hidden: print a line every 10 s.
    let plain = !quiet && bar.is_hidden();
    let mut last_line = Instant::now();
    let mut cancelled = false;
    while !finished() {
        if !cancelled && stop.signal().is_some() {
            cancel();
            cancelled = true;
        }
        let fraction = progress.fraction();
        bar.set_position((fraction * 1000.0) as u64);
        let (done, total) = progress.tasks();
        bar.set_message(format!("{done}/{total} tasks"));
        if plain && last_line.elapsed() >= Duration::from_secs(10) {
            let elapsed = t0.elapsed().as_secs_f64();
            let eta = if fraction > 0.0 {
                elapsed * (1.0 - fraction) / fraction
            } else {
                f64::NAN
            };
            eprintln!("{:5.1}% of the estimated work, {done}/{total} tasks, {elapsed:.0} s elapsed, ETA {eta:.0} s", 100.0 * fraction);
            last_line = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bar.finish_and_clear();
}
