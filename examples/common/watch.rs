//! How a run of the `evd`, `svd` and `batched_svd` examples is watched: its progress on
//! stderr, and SIGINT / SIGTERM turned into a cancellation of the run.

use eigenflow::runtime::{Progress, RunHandle};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the run is with its result set: a second signal ends it with 128 +
/// the signal's number while `RUNNING`, waits for the commit's outcome while
/// `COMMITTING`, and ends it with 0 once `COMMITTED` (see [`Stop::commit`]).
const RUNNING: u8 = 0;
const COMMITTING: u8 = 1;
const COMMITTED: u8 = 2;

/// The first SIGINT or SIGTERM received, and what a second one does.
#[derive(Clone)]
pub struct Stop {
    /// The number of the first signal (0 while none was).
    signal: Arc<AtomicUsize>,
    /// `RUNNING`, `COMMITTING` or `COMMITTED`.
    phase: Arc<AtomicU8>,
    /// A second signal came while `COMMITTING`.
    pending: Arc<AtomicBool>,
    /// What a second signal after the commit says, per signal (SIGINT, SIGTERM).
    committed_note: Arc<[String; 2]>,
}

impl Stop {
    /// From now on SIGINT and SIGTERM set the flag instead of killing the
    /// process. A second one still ends it at once: with 128 + its number
    /// before the result set into `output` is committed, with 0 and a line
    /// saying so after (the result is written: [`Stop::commit`]).
    pub fn install(output: Option<&Path>) -> std::io::Result<Stop> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let dir = output.map_or_else(String::new, |d| format!(" in {}", d.display()));
        let note = |sig| {
            format!(
                "stopped by {} after the new result{dir} was committed: it is written and complete\n",
                Stop::name(sig)
            )
        };
        let stop = Stop {
            signal: Arc::new(AtomicUsize::new(0)),
            phase: Arc::new(AtomicU8::new(RUNNING)),
            pending: Arc::new(AtomicBool::new(false)),
            committed_note: Arc::new([note(SIGINT), note(SIGTERM)]),
        };
        let again = Arc::new(AtomicBool::new(false));
        for (k, sig) in [SIGINT, SIGTERM].into_iter().enumerate() {
            let code = 128 + sig;
            let (again2, phase, pending) =
                (again.clone(), stop.phase.clone(), stop.pending.clone());
            let notes = stop.committed_note.clone();
            let second = move || {
                if !again2.load(Ordering::SeqCst) {
                    return;
                }
                match phase.load(Ordering::SeqCst) {
                    RUNNING => signal_hook::low_level::exit(code),
                    COMMITTING => pending.store(true, Ordering::SeqCst),
                    _ => {
                        let note = notes[k].as_bytes();
                        // SAFETY: write(2) of a buffer that outlives the
                        // call; async-signal-safe, as is _exit below.
                        unsafe { libc::write(2, note.as_ptr().cast(), note.len()) };
                        signal_hook::low_level::exit(0)
                    }
                }
            };
            // SAFETY: the action only loads and stores atomics, writes a
            // prepared buffer with write(2) and calls _exit, all
            // async-signal-safe.
            unsafe { signal_hook::low_level::register(sig, second) }
                .and_then(|_| signal_hook::flag::register(sig, again.clone()))
                .and_then(|_| {
                    signal_hook::flag::register_usize(sig, stop.signal.clone(), sig as usize)
                })?;
        }
        Ok(stop)
    }

    /// Runs `commit`, the commit of a result set (its switch is the moment
    /// the new result replaces the old one), so that a signal never ends the
    /// process with the status of a stopped run once the result is written:
    /// a second signal during `commit` waits for its outcome. When `commit`
    /// succeeded, such a signal (or any later one) ends the process at once
    /// with 0, saying that the result was committed; when it failed, the
    /// error is returned (a failed commit leaves the previous result).
    pub fn commit<R>(&self, commit: impl FnOnce() -> eigenflow::Result<R>) -> eigenflow::Result<R> {
        self.phase.store(COMMITTING, Ordering::SeqCst);
        let result = commit();
        let phase = if result.is_ok() { COMMITTED } else { RUNNING };
        self.phase.store(phase, Ordering::SeqCst);
        if phase == COMMITTED && self.pending.load(Ordering::SeqCst) {
            let k = usize::from(self.signal() != Some(signal_hook::consts::SIGINT));
            eprint!("{}", self.committed_note[k]);
            std::process::exit(0);
        }
        result
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
        match self.signal.load(Ordering::SeqCst) {
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
