//! Chrome traces (open in Perfetto, `ui.perfetto.dev`, or `chrome://tracing`).
//!
//! # Layout of the file
//!
//! The object form of the Trace Event Format,
//! `{"traceEvents":[ ... ],"displayTimeUnit":"ms","otherData":{...}}`, one event
//! per line, with the resolved level and the task count in `otherData`:
//!
//! * `M` metadata first: process 1 "cpu workers" with one thread per CPU worker
//!   (`cpu-0`, ...; thread id = worker index), process 2 "streams (host)" with one
//!   thread per stream lane (`stream-0`, ...; thread id = stream index).
//! * Then one complete (`X`) event per task (or per run of tasks, see
//!   [`TraceLevel::Stage`]), titled by the task name, with the arguments stage,
//!   name, lane, flops and bytes (and, at stage level, tasks). Times are
//!   microseconds from the start of the run with nanosecond digits, the same
//!   clock as [`crate::runtime::RunReport`].
//! * Last, the work tasks report they ran on a device
//!   ([`crate::graph::TaskContext::device_slice`]: kernels, library calls,
//!   transfers, timed by the device and placed on the host clock): process 3
//!   "devices", one thread per device track (`device-0`, ...), one `X` event
//!   per slice, category `device`. They are few (a handful per task that
//!   drives a device), so they are kept in memory and written at the end.
//!
//! Events on one track never overlap: a worker or lane runs one task at a time and
//! its events are stamped by the thread that ran them. Within a track, events
//! appear in the file in time order; the tracks' chunks are interleaved, not
//! sorted globally, which the Chrome format allows for `X` events (Perfetto and
//! `chrome://tracing` sort them when loading). A failed run's trace is closed
//! too, with the tasks that ran.
//!
//! # Streaming, with bounded memory
//!
//! A run of `n = 49152` has millions of tasks, so the trace is written while the
//! run goes and never read back. Every track (CPU worker or stream lane) has its
//! own buffer, touched only by the thread that owns the track; when it holds
//! [`TRACK_BUFFER`] bytes it is appended to the file under a lock, one
//! `write_all` per chunk so chunks from different tracks never interleave. At
//! stage level a track keeps only its current run of same-stage tasks (counts,
//! sums, and its stage and first name in reused strings). The writer's memory is
//! therefore about `tracks x TRACK_BUFFER`, independent of the number of tasks
//! (`tests/trace_memory.rs` measures it at 2M tasks). Finishing flushes the
//! buffers, closes the event array and writes `otherData`.
//!
//! # Why not `tracing-chrome`
//!
//! Earlier versions wrote CPU tasks through `tracing-chrome` and merged the stream
//! lanes in at the end by reading the whole file back. `tracing-chrome` cannot
//! place an event on a chosen track or at a chosen time (stream lanes need both),
//! sends every event through an unbounded channel to one writer thread (a lagging
//! writer grows without bound), and needed its subscriber to be the thread-local
//! default on the workers, which made `tracing`'s callsite interest depend on which
//! thread hit a span first (traces came out empty; `tests/trace_first_run.rs`).
//! Writing the few event kinds ourselves removes all three problems: the executor
//! hands each finished task to the trace session with the stamps it already
//! takes for the run report, on CPU workers and stream lanes alike.
//!
//! Every task still runs inside a `tracing` span named `task` (fields name, stage,
//! lane, flops, bytes). The trace no longer installs a subscriber on the worker
//! threads, so a subscriber of your own (set as the global default) sees those
//! spans, and the events your task bodies emit, whether or not a trace file is
//! written (`tests/trace/`). Events carry no source location: the file holds
//! only what the graph names (tasks, stages, lanes, costs).
//!
//! # Where the file goes
//!
//! [`crate::runtime::RuntimeBuilder::trace`] sets a runtime's default path,
//! which every run overwrites; [`crate::runtime::RunOptions::trace`] (with
//! [`crate::runtime::Runtime::run_with`] or `submit_with`) gives one run a file
//! of its own.

mod writer;

use crate::graph::{Cost, DeviceSink, Lane};
use crate::{Error, Result};
use parking_lot::Mutex;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use writer::{DeviceSlice, Track};

pub use writer::TRACK_BUFFER;

/// Largest graph that [`TraceLevel::Auto`] traces task by task (2^20, about one
/// million tasks, a file of roughly 200 MB); larger graphs are traced by stage.
pub const AUTO_TASK_LIMIT: usize = 1 << 20;

/// How much a trace records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceLevel {
    /// [`TraceLevel::Task`] for graphs of up to [`AUTO_TASK_LIMIT`] tasks,
    /// [`TraceLevel::Stage`] above (default). The runtime decides when it knows
    /// the graph's size.
    #[default]
    Auto,
    /// One event per task.
    Task,
    /// One event per run of consecutive tasks of the same stage on a track
    /// (titled `stage xK` when it merges `K > 1` tasks; its flops and bytes are
    /// the sums and its `tasks` argument is `K`).
    Stage,
}

impl TraceLevel {
    /// The level used for a graph of `tasks` tasks: [`TraceLevel::Auto`] becomes
    /// task level up to [`AUTO_TASK_LIMIT`] tasks and stage level above; the
    /// explicit levels are kept.
    pub fn resolve(self, tasks: usize) -> TraceLevel {
        match self {
            TraceLevel::Auto if tasks <= AUTO_TASK_LIMIT => TraceLevel::Task,
            TraceLevel::Auto => TraceLevel::Stage,
            explicit => explicit,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            TraceLevel::Auto => "auto",
            TraceLevel::Task => "task",
            TraceLevel::Stage => "stage",
        }
    }
}

impl std::str::FromStr for TraceLevel {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(TraceLevel::Auto),
            "task" => Ok(TraceLevel::Task),
            "stage" => Ok(TraceLevel::Stage),
            _ => Err(Error::InvalidArgument(format!(
                "trace level `{s}`: expected `auto`, `task` or `stage`"
            ))),
        }
    }
}

/// The output file and the first write error, if any (reported by `finish`).
struct Sink {
    file: File,
    error: Option<std::io::Error>,
}

impl Sink {
    /// Appends a whole chunk; after a failure nothing more is written.
    fn append(&mut self, bytes: &[u8]) {
        if self.error.is_none() && !bytes.is_empty() {
            if let Err(e) = self.file.write_all(bytes) {
                self.error = Some(e);
            }
        }
    }
}

/// The device slices of one traced run, on the run's clock (`t0`).
pub(crate) struct DeviceSlices {
    t0: Instant,
    slices: Mutex<Vec<DeviceSlice>>,
}

impl std::fmt::Debug for DeviceSlices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSlices")
            .field("slices", &self.slices.lock().len())
            .finish()
    }
}

impl DeviceSink for DeviceSlices {
    /// Records `name` on device track `track` from `start` to `end` (a slice
    /// that began before the run starts at 0).
    fn record(&self, track: usize, name: &str, start: Instant, end: Instant) {
        let ns = |t: Instant| t.saturating_duration_since(self.t0).as_nanos() as u64;
        self.slices.lock().push(DeviceSlice {
            track,
            name: name.to_owned(),
            start: ns(start),
            end: ns(end.max(start)),
        });
    }
}

/// Creates the trace file at `path`. Its directory must exist: a missing one
/// is refused with [`Error::InvalidArgument`] naming it (as the examples'
/// `--output` refuses a missing parent), not created, so a mistyped path
/// makes no directories anywhere.
fn create(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "trace file {}: its directory {} does not exist (create it first)",
                path.display(),
                dir.display()
            )));
        }
    }
    File::create(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A trace being recorded for one run.
pub(crate) struct TraceSession {
    path: PathBuf,
    device: Arc<DeviceSlices>,
    sink: Mutex<Sink>,
    /// CPU workers `0..threads`, then stream lanes. Each lock is taken only by the
    /// thread that owns the track (uncontended) and by `finish` after the join.
    tracks: Vec<Mutex<Track>>,
    threads: usize,
    footer: String,
}

impl TraceSession {
    /// Creates the file and writes the header and the track metadata. `tasks` is
    /// the graph's size, which resolves [`TraceLevel::Auto`].
    pub fn start(
        path: &Path,
        level: TraceLevel,
        (tasks, threads, streams): (usize, usize, usize),
        t0: Instant,
    ) -> Result<Self> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = create(path)?;
        let level = level.resolve(tasks);
        let header = writer::header(threads, streams);
        file.write_all(header.as_bytes()).map_err(io)?;
        let by_stage = level == TraceLevel::Stage;
        let tracks = (0..threads)
            .map(|w| Track::new(1, w, by_stage))
            .chain((0..streams).map(|s| Track::new(2, s, by_stage)))
            .map(Mutex::new)
            .collect();
        Ok(TraceSession {
            path: path.to_path_buf(),
            device: Arc::new(DeviceSlices {
                t0,
                slices: Mutex::new(Vec::new()),
            }),
            sink: Mutex::new(Sink { file, error: None }),
            tracks,
            threads,
            footer: writer::footer(level.as_str(), tasks),
        })
    }

    /// Records one finished task that ran on `lane` (worker or stream index
    /// `worker`) from `start` to `end`, nanoseconds from the start of the run.
    /// Called by the thread that ran the task, so each track is written in order.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        lane: Lane,
        worker: usize,
        name: &str,
        stage: &str,
        cost: Cost,
        start: u64,
        end: u64,
    ) {
        let index = match lane {
            Lane::Cpu => worker,
            Lane::Stream(s) => self.threads + s,
        };
        let Some(track) = self.tracks.get(index) else {
            debug_assert!(false, "no trace track for {lane} worker {worker}");
            return;
        };
        let mut track = track.lock();
        track.record(lane, name, stage, cost, start, end);
        if track.buffered() >= TRACK_BUFFER {
            self.sink.lock().append(track.bytes());
            track.clear();
        }
    }

    /// Where task bodies record device slices (handed to them in their
    /// [`crate::graph::TaskContext`]).
    pub fn device(&self) -> &Arc<DeviceSlices> {
        &self.device
    }

    /// The run failed: write what was recorded and close the JSON, so the
    /// trace of a failed run still opens. The run's error takes precedence over
    /// a write error here.
    pub fn abandon(self) {
        let _ = self.finish();
    }

    /// Writes the tracks' pending events and the closing `]}`. Returns the first
    /// write error of the whole run, if any.
    pub fn finish(self) -> Result<()> {
        let mut sink = self.sink.into_inner();
        for track in self.tracks {
            let mut track = track.into_inner();
            track.close_run();
            sink.append(track.bytes());
        }
        let mut slices = std::mem::take(&mut *self.device.slices.lock());
        sink.append(writer::device_events(&mut slices).as_bytes());
        sink.append(self.footer.as_bytes());
        match sink.error {
            None => Ok(()),
            Some(source) => Err(Error::Io {
                path: self.path,
                source,
            }),
        }
    }
}

/// The phase trace open on this thread ([`record_phases`]), if any.
struct PhaseTrace {
    path: PathBuf,
    file: File,
    track: Track,
    t0: Instant,
    phases: usize,
}

thread_local! {
    static PHASES: std::cell::RefCell<Option<PhaseTrace>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` on the calling thread with a Chrome trace open at `path` for the
/// solves that run without a task graph: the one-stage paths of
/// [`crate::pipeline::eigh`], [`crate::pipeline::eigh_owned`] and
/// [`crate::pipeline::svd()`] below their crossovers. Each phase such a solve
/// runs on this thread (the reduction, the tridiagonal or bidiagonal solve,
/// each back-transformation) becomes one complete (`X`) event on track
/// `cpu-0` of process "cpu workers", titled by its LAPACK name (`sytrd`,
/// `stedc`, `ormtr`, `gebrd`, `bdsdc`, `ormbr_q`, ...) with its stage
/// (`reduce`, `solve`, `back_transform`) as for a task, times in
/// microseconds from the start of `f`; `otherData` says
/// `"trace_level":"phase"` and counts the phases as `tasks`. Task graphs
/// that `f` runs are not recorded here (give them their own file with
/// [`crate::runtime::RunOptions::trace`]), so a call above the crossover
/// leaves a trace without events. The file is closed when `f` returns,
/// whatever it returns; a run nested inside (another `record_phases` on the
/// same thread) keeps the outer file.
///
/// ```
/// use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
/// use eigenflow::runtime::Runtime;
/// let a = faer::Mat::<f64>::from_fn(100, 100, |i, j| 1.0 / (1.0 + i.abs_diff(j) as f64));
/// let path = std::env::temp_dir().join(format!("eigenflow-doc-phases-{}.json", std::process::id()));
/// let rt = Runtime::builder().threads(2).build();
/// let r = eigenflow::trace::record_phases(&path, || {
///     eigh(a.as_ref(), EvdJob::Vectors, &EvdOptions::auto(), &rt)
/// })?;
/// let text = std::fs::read_to_string(&path).unwrap();
/// assert!(text.contains("\"sytrd\"") && text.contains("\"ormtr\""));
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), eigenflow::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] if the directory of `path` does not exist (it
/// is not created), [`Error::Io`] if the file cannot be created or written
/// (`f` does not run when the file cannot be created); otherwise `f`'s own
/// error, which takes precedence over a write error at the close.
pub fn record_phases<R>(path: impl AsRef<Path>, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let path = path.as_ref();
    if PHASES.with(|p| p.borrow().is_some()) {
        return f();
    }
    let mut file = create(path)?;
    file.write_all(writer::header(1, 0).as_bytes())
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    PHASES.with(|p| {
        *p.borrow_mut() = Some(PhaseTrace {
            path: path.to_path_buf(),
            file,
            track: Track::new(1, 0, false),
            t0: Instant::now(),
            phases: 0,
        })
    });
    /// Closes the file when `f` returns ([`Open::close`]) or unwinds (drop).
    struct Open(bool);
    impl Open {
        fn close(mut self) -> Result<()> {
            self.0 = true;
            close_phases()
        }
    }
    impl Drop for Open {
        fn drop(&mut self) {
            if !self.0 {
                let _ = close_phases();
            }
        }
    }
    let open = Open(false);
    let result = f();
    let closed = open.close();
    let r = result?;
    closed.map(|()| r)
}

/// Writes the open phase trace's events and footer, and closes it.
fn close_phases() -> Result<()> {
    let Some(mut t) = PHASES.with(|p| p.borrow_mut().take()) else {
        return Ok(());
    };
    let footer = writer::footer("phase", t.phases);
    let written = t
        .file
        .write_all(t.track.bytes())
        .and_then(|()| t.file.write_all(footer.as_bytes()));
    written.map_err(|source| Error::Io {
        path: t.path,
        source,
    })
}

/// Records one phase of a graph-free solve, from `start` to now, into the
/// phase trace open on this thread ([`record_phases`]); nothing without one.
pub(crate) fn record_phase(name: &str, stage: &str, start: Instant) {
    PHASES.with(|p| {
        if let Some(t) = p.borrow_mut().as_mut() {
            let ns = |i: Instant| i.saturating_duration_since(t.t0).as_nanos() as u64;
            let (s, e) = (ns(start), ns(Instant::now()));
            t.track
                .record(Lane::Cpu, name, stage, Cost::default(), s, e);
            t.phases += 1;
            if t.track.buffered() >= TRACK_BUFFER {
                // A write error here shows again at the close.
                if t.file.write_all(t.track.bytes()).is_ok() {
                    t.track.clear();
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_level_switches_to_stage_above_the_limit() {
        assert_eq!(TraceLevel::Auto.resolve(0), TraceLevel::Task);
        assert_eq!(TraceLevel::Auto.resolve(AUTO_TASK_LIMIT), TraceLevel::Task);
        assert_eq!(
            TraceLevel::Auto.resolve(AUTO_TASK_LIMIT + 1),
            TraceLevel::Stage
        );
        // Explicit levels are kept whatever the size.
        assert_eq!(TraceLevel::Task.resolve(usize::MAX), TraceLevel::Task);
        assert_eq!(TraceLevel::Stage.resolve(1), TraceLevel::Stage);
        assert_eq!(TraceLevel::default(), TraceLevel::Auto);
    }

    #[test]
    fn levels_parse() {
        for (s, l) in [
            ("auto", TraceLevel::Auto),
            ("task", TraceLevel::Task),
            ("stage", TraceLevel::Stage),
        ] {
            assert_eq!(s.parse::<TraceLevel>().unwrap(), l);
            assert_eq!(l.as_str(), s);
        }
        assert!("tasks".parse::<TraceLevel>().is_err());
    }
}
