//! The runtime: runs a [`TaskGraph`] on a pool of CPU workers and in-order stream
//! lanes.
//!
//! * Ready tasks are found through flat atomic in-degree counters (no locks on the
//!   hot path). CPU workers keep a crossbeam work-stealing deque each; when a task
//!   finishes, the successors it makes ready are ordered by critical-path priority
//!   (longest remaining path by cost hint): the most urgent one runs next on the
//!   same worker, the rest are pushed so that the next most urgent is popped first.
//! * A stream lane runs its tasks in creation order on its own thread (a CUDA
//!   stream's semantics without a GPU); it waits for each task's predecessors,
//!   which is how cross-lane edges are honoured without a global barrier.
//! * Idle workers park on a condition variable (parking_lot) after a spin of at
//!   most 50 us (so back-to-back small runs need no wake-up system call).
//! * A task that returns `Err` or panics stops the run: no new task starts, the
//!   running ones finish, every thread leaves the run and `run` returns the first
//!   error (see [`Runtime::run`] for which errors name the task). A cancel through
//!   [`RunHandle::cancel`] stops the run the same way. The threads stay with the
//!   runtime: the next run on it works as usual.
//!
//! # Threads
//! Threads are persistent (issue 17: a run used to start and join its threads,
//! about 100 us per tiny run). A runtime starts its threads (a *crew*) at its
//! first run that has a task, not at build, keeps them across runs, and joins
//! them when its last clone is dropped. A thread that cannot start makes that
//! run fail with [`crate::Error::ThreadSpawn`] (the threads that did start are
//! joined, no task runs) and the next run tries again.
//!
//! * Without [`RuntimeBuilder::stack_size`] (the default), the thread that calls
//!   [`Runtime::run`] is CPU worker 0 (trace track `cpu-0`): it runs tasks
//!   itself, and workers 1.. are threads of the crew that join in when there is
//!   parallel work (several ready tasks) and leave when they find none. A run of
//!   a chain of tasks thus hands no work between threads, and a 1-thread
//!   runtime without stream lanes starts no thread at all.
//! * With a stack size, every CPU worker is a crew thread (named `cpu-k`) and
//!   every task body runs on a stack of that size; the caller waits.
//! * Stream lanes are crew threads (`stream-k`) in both cases.
//!
//! Runs from several threads at once on one runtime (or a run nested in a task
//! body) each take a crew of their own: an idle one, or a new one started for it
//! and kept afterwards (at most 4 idle crews are kept), so concurrent runs
//! proceed side by side and never wait for each other.

mod executor;
mod fork;
mod handle;
mod pool;
mod report;
mod team;
mod wake;

pub use handle::RunHandle;
pub(crate) use wake::current_stopping;

pub use report::{RunReport, StageSummary, TaskRecord};
pub use team::Team;

use crate::graph::TaskGraph;
use crate::linalg::par::run_caught;
use crate::trace::TraceLevel;
use crate::Result;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Most CPU worker threads a runtime runs: far above any core count this crate
/// targets, low enough that a mistyped count is refused rather than attempted.
pub const MAX_THREADS: usize = 1024;

pub use crate::graph::MAX_STREAMS;

/// The one rule for a CPU worker count, wherever it comes from (a
/// [`RuntimeBuilder::threads`] reaching a run, a fork-join of the one-stage
/// paths, the Python binding's `threads=`, the examples' `--threads`): at
/// least 1 and at most [`MAX_THREADS`]. Returns the count.
///
/// ```
/// use eigenflow::runtime::check_threads;
/// assert_eq!(check_threads(8usize)?, 8);
/// assert!(check_threads(1025usize).is_err());
/// assert!(check_threads(-1i64).is_err());
/// # Ok::<(), eigenflow::Error>(())
/// ```
///
/// # Errors
/// [`crate::Error::InvalidArgument`], with the one message for every path:
/// `threads = 1025: the runtime runs 1 to 1024 CPU worker threads`.
pub fn check_threads<N>(threads: N) -> Result<usize>
where
    N: TryInto<usize> + std::fmt::Display + Copy,
{
    match threads.try_into() {
        Ok(t) if (1..=MAX_THREADS).contains(&t) => Ok(t),
        _ => Err(crate::Error::InvalidArgument(format!(
            "threads = {threads}: the runtime runs 1 to {MAX_THREADS} CPU worker threads"
        ))),
    }
}

/// Configuration of a [`Runtime`].
#[derive(Clone, Debug)]
pub struct RuntimeBuilder {
    threads: usize,
    streams: usize,
    stack_size: Option<usize>,
    stream_stack_size: Option<usize>,
    trace: Option<(PathBuf, TraceLevel)>,
    check_footprints: bool,
    shuffle_seed: Option<u64>,
    progress: Option<Arc<Progress>>,
    gpu_streams: bool,
}

/// Live progress of a run, shared with the caller (for progress bars and ETAs).
#[derive(Debug, Default)]
pub struct Progress {
    total_tasks: AtomicUsize,
    done_tasks: AtomicUsize,
    /// Estimated seconds of work (from cost hints), in nanoseconds.
    total_work: AtomicU64,
    done_work: AtomicU64,
}

impl Progress {
    /// A fresh counter.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Tasks finished and tasks in the run.
    pub fn tasks(&self) -> (usize, usize) {
        (
            self.done_tasks.load(Ordering::Relaxed),
            self.total_tasks.load(Ordering::Relaxed),
        )
    }

    /// Fraction of the estimated work (by cost hints) that is done, in `[0, 1]`.
    pub fn fraction(&self) -> f64 {
        let total = self.total_work.load(Ordering::Relaxed);
        if total == 0 {
            return 0.0;
        }
        (self.done_work.load(Ordering::Relaxed) as f64 / total as f64).min(1.0)
    }

    pub(crate) fn start(&self, tasks: usize, work_ns: u64) {
        self.done_tasks.store(0, Ordering::Relaxed);
        self.done_work.store(0, Ordering::Relaxed);
        self.total_tasks.store(tasks, Ordering::Relaxed);
        self.total_work.store(work_ns, Ordering::Relaxed);
    }

    pub(crate) fn task_done(&self, work_ns: u64) {
        self.done_tasks.fetch_add(1, Ordering::Relaxed);
        self.done_work.fetch_add(work_ns, Ordering::Relaxed);
    }
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            threads: crate::sysinfo::default_threads().min(MAX_THREADS),
            streams: 0,
            stack_size: None,
            stream_stack_size: None,
            trace: None,
            check_footprints: false,
            shuffle_seed: None,
            progress: None,
            gpu_streams: false,
        }
    }
}

impl RuntimeBuilder {
    /// Number of CPU worker threads (at least 1; default: the machine's cores). A
    /// count above [`MAX_THREADS`] is refused, by [`check_threads`], with
    /// [`crate::Error::InvalidArgument`] by every run, fork-join and pipeline
    /// call on the runtime, before anything is allocated or started.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Number of stream lanes (default 0). A run with more than [`MAX_STREAMS`] is
    /// refused with [`crate::Error::InvalidArgument`].
    pub fn streams(mut self, streams: usize) -> Self {
        self.streams = streams;
        self
    }

    /// Stack size in bytes of each CPU worker thread. Task bodies run on these
    /// stacks: with a size set every CPU worker is a thread of the runtime's
    /// own. Without one (the default) the calling thread is worker 0, so task
    /// bodies run on its stack or on the other workers' (the standard library's
    /// default, 2 MiB unless `RUST_MIN_STACK` says otherwise); see the
    /// [module documentation](self). A size the system cannot provide makes runs
    /// fail with [`crate::Error::ThreadSpawn`].
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Stack size in bytes of each stream-lane thread (default: as for
    /// [`Self::stack_size`]). Separate from the workers' because a lane driving a
    /// GPU stream only launches kernels and needs little stack.
    pub fn stream_stack_size(mut self, bytes: usize) -> Self {
        self.stream_stack_size = Some(bytes);
        self
    }

    /// Writes a Chrome trace of every run to `path` (opens in Perfetto); every
    /// run overwrites it. For one file per run, give each run its own path with
    /// [`Runtime::run_with`] and [`RunOptions::trace`], which take precedence
    /// over this default.
    pub fn trace(mut self, path: impl Into<PathBuf>, level: TraceLevel) -> Self {
        self.trace = Some((path.into(), level));
        self
    }

    /// Debug option: record the footprints of running tasks and fail the run with
    /// [`crate::Error::LiveOverlap`] when two running tasks conflict.
    pub fn check_footprints(mut self, on: bool) -> Self {
        self.check_footprints = on;
        self
    }

    /// Testing option: replace priority order by a random ready order seeded by
    /// `seed` (results of a correct graph must not change).
    pub fn shuffle(mut self, seed: Option<u64>) -> Self {
        self.shuffle_seed = seed;
        self
    }

    /// Reports progress of every run into `progress`.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Backs the stream lanes by CUDA streams on GPU 0 (issue 13; see
    /// [`crate::cuda`]): opened at the first run, one stream per lane, and
    /// reached by task bodies through `Runtime::gpu_lanes` (feature `cuda`).
    /// Without a usable GPU, or in a build without the `cuda` feature, every
    /// run returns [`crate::Error::NoGpu`] before any task starts.
    pub fn gpu_streams(mut self, on: bool) -> Self {
        self.gpu_streams = on;
        self
    }

    /// The runtime. Starts no thread: its threads start at the first run that
    /// has a task (see the [module documentation](self)), so a thread that
    /// cannot start is reported by that run.
    pub fn build(self) -> Runtime {
        let shape = pool::CrewShape {
            threads: self.threads,
            streams: self.streams,
            stack_size: self.stack_size,
            stream_stack_size: self.stream_stack_size,
        };
        Runtime {
            cfg: self,
            pool: Arc::new(pool::Pool::new(shape)),
            #[cfg(feature = "cuda")]
            gpu: Arc::default(),
        }
    }
}

/// Options of one run ([`Runtime::run_with`], [`Runtime::submit_with`]): what
/// differs from run to run on one runtime, as opposed to the runtime's own
/// configuration in [`RuntimeBuilder`].
///
/// ```
/// use eigenflow::graph::TaskGraph;
/// use eigenflow::runtime::{RunOptions, Runtime};
/// use eigenflow::trace::TraceLevel;
///
/// let rt = Runtime::builder().threads(2).build();
/// let dir = std::env::temp_dir().join(format!("eigenflow-doc-runopts-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?; // a trace's directory must exist
/// for step in 0..2 {
///     let mut g = TaskGraph::new();
///     g.task(format!("step{step}"), |_| Ok(()));
///     // One trace file per run, on one runtime.
///     let path = dir.join(format!("step{step}.json"));
///     rt.run_with(g, &RunOptions::new().trace(&path, TraceLevel::Task))?;
///     assert!(path.exists());
/// }
/// # std::fs::remove_dir_all(dir).ok();
/// # Ok::<(), eigenflow::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// Where this run's Chrome trace goes and at which level; `None` (the
    /// default) falls back to the runtime's [`RuntimeBuilder::trace`], if any.
    pub trace: Option<(PathBuf, TraceLevel)>,
}

impl RunOptions {
    /// Options that change nothing: the run behaves as [`Runtime::run`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes this run's Chrome trace to `path` at `level`, instead of the
    /// runtime's default trace path (if it has one).
    pub fn trace(mut self, path: impl Into<PathBuf>, level: TraceLevel) -> Self {
        self.trace = Some((path.into(), level));
        self
    }
}

/// Runs task graphs on persistent threads: started at the first run with a
/// task, parked when idle, joined when the last clone is dropped. Cheap to
/// clone; clones share the threads.
#[derive(Clone, Debug)]
pub struct Runtime {
    cfg: RuntimeBuilder,
    pool: Arc<pool::Pool>,
    /// The CUDA streams of the lanes, opened at the first run (feature `cuda`).
    #[cfg(feature = "cuda")]
    gpu: Arc<parking_lot::Mutex<Option<Arc<crate::cuda::GpuLanes>>>>,
}

impl Default for Runtime {
    /// [`Runtime::builder`]`().build()`.
    fn default() -> Self {
        Runtime::builder().build()
    }
}

impl Runtime {
    /// A builder with defaults (all cores, no stream lane, no trace).
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Number of CPU worker threads.
    pub fn threads(&self) -> usize {
        self.cfg.threads
    }

    /// Number of stream lanes.
    pub fn streams(&self) -> usize {
        self.cfg.streams
    }

    /// Whether the stream lanes are CUDA streams
    /// ([`RuntimeBuilder::gpu_streams`]) rather than host threads.
    pub fn gpu_streams(&self) -> bool {
        self.cfg.gpu_streams
    }

    /// Runs `a` and `b`, in parallel when the runtime has several CPU workers
    /// (`rayon::join`'s contract). With one worker they run in turn on the
    /// calling thread; with [`RuntimeBuilder::stack_size`] or GPU stream lanes
    /// set, as a graph of two tasks; otherwise the calling thread takes one
    /// half and a parked or spinning worker the other, with no graph built (a
    /// few microseconds less per call, for kernels that fork once per column;
    /// see `runtime/fork.rs`). If no worker comes in time the caller runs
    /// both. Both halves finish (or never start) before it returns; after an
    /// error in the first half run in turn, the second does not start.
    ///
    /// # Errors
    /// The first error of a half; a panic in a half becomes
    /// [`Error::TaskPanicked`](crate::Error::TaskPanicked) (task `join`);
    /// [`Error::ThreadSpawn`](crate::Error::ThreadSpawn) if the threads cannot
    /// start (nothing runs then).
    pub fn join<'s>(
        &self,
        a: impl FnOnce() -> Result<()> + Send + 's,
        b: impl FnOnce() -> Result<()> + Send + 's,
    ) -> Result<()> {
        self.check_threads()?;
        if self.cfg.threads <= 1 {
            run_caught(a)?;
            return run_caught(b);
        }
        if self.pool.inline() && !self.cfg.gpu_streams {
            return fork::join_inline(&self.pool, a, b);
        }
        let mut g = TaskGraph::new();
        g.task("join.a", move |_| a());
        g.task("join.b", move |_| b());
        self.run(g).map(|_| ())
    }

    /// Runs `f` with a [`Team`]: a fork-join scope in which one CPU worker stays
    /// engaged until `f` returns, so that each [`Team::join`] inside costs a
    /// few cache-line transfers instead of a helper's wake-up, and the helper
    /// always takes the second half (its operands stay in its cache from one
    /// split to the next). For kernels that split hundreds of times in a row
    /// (`dsytrd`'s symmetric product per column). The helper spins while the
    /// scope is open, so keep the scope to the splitting kernel. With one
    /// worker the halves run in turn; with [`RuntimeBuilder::stack_size`] or
    /// GPU stream lanes set, each split goes through [`Runtime::join`].
    ///
    /// ```
    /// use eigenflow::runtime::Runtime;
    /// let rt = Runtime::builder().threads(2).build();
    /// let mut x = vec![0.0f64; 1000];
    /// rt.team(|team| {
    ///     for step in 0..100 {
    ///         let (lo, hi) = x.split_at_mut(600);
    ///         team.join(
    ///             || Ok(lo.iter_mut().for_each(|v| *v += step as f64)),
    ///             || Ok(hi.iter_mut().for_each(|v| *v -= step as f64)),
    ///         )?;
    ///     }
    ///     Ok(())
    /// })?;
    /// assert_eq!((x[0], x[999]), (4950.0, -4950.0));
    /// # Ok::<(), eigenflow::Error>(())
    /// ```
    ///
    /// # Errors
    /// `f`'s own; [`Error::ThreadSpawn`](crate::Error::ThreadSpawn) if the
    /// threads cannot start (`f` does not run then).
    pub fn team<R>(&self, f: impl FnOnce(&Team<'_>) -> Result<R>) -> Result<R> {
        self.check_threads()?;
        if self.cfg.threads <= 1 {
            return f(&Team::serial());
        }
        if self.pool.inline() && !self.cfg.gpu_streams {
            return team::team_inline(&self.pool, f);
        }
        f(&Team::through_join(self))
    }

    /// Validates and runs `graph`, blocking until every task finished or one
    /// failed. Task bodies may borrow from the caller's stack. Without
    /// [`RuntimeBuilder::stack_size`] the calling thread works as CPU worker 0.
    ///
    /// # Errors
    /// * Validation: [`Error::ForeignTask`](crate::Error::ForeignTask),
    ///   [`Error::DuplicateEdge`](crate::Error::DuplicateEdge),
    ///   [`Error::InvalidLane`](crate::Error::InvalidLane),
    ///   [`Error::Cycle`](crate::Error::Cycle); and
    ///   [`Error::InvalidArgument`](crate::Error::InvalidArgument) for more than
    ///   [`MAX_THREADS`] workers or [`MAX_STREAMS`] lanes. No task runs.
    /// * [`Error::NoGpu`](crate::Error::NoGpu) with
    ///   [`RuntimeBuilder::gpu_streams`] and no usable GPU; no task runs.
    /// * [`Error::ThreadSpawn`](crate::Error::ThreadSpawn) if a worker or lane
    ///   thread cannot start (at the runtime's first run with a task, or when
    ///   concurrent runs need another set of threads); the threads that did
    ///   start are joined first and no task runs.
    /// * A task body's error, by this rule: errors about the computation or its
    ///   data, which already say what failed (`NoConvergence`, `NonFinite`,
    ///   `Shape`, `OutOfMemory`, `Npy`, `Io`, `InvalidArgument`, `NoGpu`), reach
    ///   the caller as themselves; any other error a body returns (a graph or
    ///   runtime error of a nested run, say) is wrapped in
    ///   [`Error::TaskFailed`](crate::Error::TaskFailed) naming the task. A panic
    ///   becomes [`Error::TaskPanicked`](crate::Error::TaskPanicked). Only the
    ///   first failure is returned; tasks already running finish, no other starts.
    /// * [`Error::Cancelled`](crate::Error::Cancelled) for a submitted run
    ///   cancelled before it finished.
    pub fn run(&self, graph: TaskGraph<'_>) -> Result<RunReport> {
        self.check_threads()?;
        self.check_gpu()?;
        executor::run(&self.cfg, &self.pool, graph, self.cfg.trace.as_ref(), None)
    }

    /// [`Self::run`] with options for this run only: with
    /// [`RunOptions::trace`] set, the trace of this run goes to that path
    /// (the runtime's default trace path, if any, is left alone), so runs on
    /// one runtime can each keep a file of their own. Errors are those of
    /// [`Self::run`].
    pub fn run_with(&self, graph: TaskGraph<'_>, options: &RunOptions) -> Result<RunReport> {
        self.check_threads()?;
        self.check_gpu()?;
        let trace = options.trace.as_ref().or(self.cfg.trace.as_ref());
        executor::run(&self.cfg, &self.pool, graph, trace, None)
    }

    /// Runs `graph` on a background thread. The handle is a `Future` (await it
    /// from any async runtime) and can also be waited on with
    /// [`RunHandle::wait`] or stopped with [`RunHandle::cancel`]. Compute never
    /// runs on the awaiting executor's threads. Errors are those of
    /// [`Self::run`]; if the background thread itself cannot start, the handle
    /// returns [`Error::ThreadSpawn`](crate::Error::ThreadSpawn).
    pub fn submit(&self, graph: TaskGraph<'static>) -> RunHandle {
        self.submit_with(graph, &RunOptions::default())
    }

    /// [`Self::submit`] with options for this run only (see [`Self::run_with`]).
    pub fn submit_with(&self, graph: TaskGraph<'static>, options: &RunOptions) -> RunHandle {
        let rt = self.clone();
        let trace = options.trace.clone().or_else(|| rt.cfg.trace.clone());
        RunHandle::spawn(move |cancel| {
            rt.check_threads()?;
            rt.check_gpu()?;
            executor::run(&rt.cfg, &rt.pool, graph, trace.as_ref(), Some(cancel))
        })
    }

    /// [`check_threads`] of this runtime's CPU worker count: what every run,
    /// fork-join and pipeline call checks first, so that a count out of
    /// range gets the same error on every path (and not, say, a memory
    /// figure computed for that many threads).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for more than [`MAX_THREADS`].
    pub fn check_threads(&self) -> Result<()> {
        check_threads(self.cfg.threads).map(drop)
    }

    /// With [`RuntimeBuilder::gpu_streams`], opens the lanes' CUDA streams
    /// (once) or returns [`crate::Error::NoGpu`]; nothing otherwise.
    fn check_gpu(&self) -> Result<()> {
        if !self.cfg.gpu_streams {
            return Ok(());
        }
        #[cfg(feature = "cuda")]
        {
            self.gpu_lanes().map(drop)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(crate::cuda::no_feature())
        }
    }

    /// The CUDA streams of this runtime's lanes (one per lane, GPU 0), opened
    /// at the first call and shared by clones. [`crate::Error::NoGpu`] without
    /// a usable GPU. Untested without a GPU beyond that error path.
    #[cfg(feature = "cuda")]
    pub fn gpu_lanes(&self) -> Result<Arc<crate::cuda::GpuLanes>> {
        let mut slot = self.gpu.lock();
        if let Some(l) = slot.as_ref() {
            return Ok(Arc::clone(l));
        }
        let lanes = Arc::new(crate::cuda::GpuLanes::open(0, self.cfg.streams)?);
        *slot = Some(Arc::clone(&lanes));
        Ok(lanes)
    }
}
