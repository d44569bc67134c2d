//! The crate's one error type: every failure a caller can cause or observe has a variant.

use std::path::PathBuf;

/// Everything that can go wrong in eigenflow.
///
/// Graph validation, scheduling, numerical and I/O failures all land here, so a
/// pipeline run returns one `Result<_, Error>` whatever stage failed.
///
/// Messages stay short however large the graph: a variant that could list many
/// tasks lists the first few and counts the rest, and task names are cut at
/// [`MAX_NAME_CHARS`] characters.
///
/// New variants may be added in minor releases, so a `match` needs a `_` arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The task graph has a cycle (possibly through the implicit in-order edges of a
    /// stream lane); `tasks` names the first tasks on it.
    #[error("task graph has a cycle of {len} task(s): {}", listed(.tasks, *.len))]
    Cycle {
        /// Names of the first (at most [`MAX_LISTED`]) tasks on one cycle, in order.
        tasks: Vec<String>,
        /// Number of tasks on the cycle.
        len: usize,
    },
    /// An edge was added to a graph that does not hold both of its tasks: a
    /// [`crate::graph::TaskId`] is valid only in the graph that created it.
    #[error("edge {from} -> {to} names a task of another graph (a task id is valid only in the graph that created it)")]
    ForeignTask {
        /// The edge's source, described (index, and name if it is in this graph).
        from: String,
        /// The edge's target, described.
        to: String,
    },
    /// The same edge was added twice.
    #[error("duplicate edge {from} -> {to}")]
    DuplicateEdge {
        /// Name of the source task.
        from: String,
        /// Name of the target task.
        to: String,
    },
    /// A task was placed on a stream lane the runtime does not have.
    #[error("task `{task}` is on stream {stream}, but the runtime has {streams} stream lane(s)")]
    InvalidLane {
        /// Task name.
        task: String,
        /// Requested stream index.
        stream: usize,
        /// Configured number of streams.
        streams: usize,
    },
    /// A task body returned an error; the run was stopped.
    #[error("task `{task}` failed: {source}")]
    TaskFailed {
        /// Task name.
        task: String,
        /// The error the body returned.
        #[source]
        source: Box<Error>,
    },
    /// A task body panicked; the run was stopped.
    #[error("task `{task}` panicked: {message}")]
    TaskPanicked {
        /// Task name.
        task: String,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// Two tasks whose footprints overlap (with at least one write) are not ordered.
    #[error("race: tasks `{first}` and `{second}` touch overlapping regions ({region}) and are not ordered by the graph")]
    Race {
        /// First task.
        first: String,
        /// Second task.
        second: String,
        /// The overlapping region, human readable.
        region: String,
    },
    /// The runtime's live footprint checker saw two running tasks overlap.
    #[error("live footprint overlap: `{first}` and `{second}` ran at the same time on {region}")]
    LiveOverlap {
        /// Task that was running.
        first: String,
        /// Task that started.
        second: String,
        /// The overlapping region.
        region: String,
    },
    /// A non-finite entry in the input.
    #[error("input has a non-finite entry ({value}) at row {row}, column {col}")]
    NonFinite {
        /// Row of the first bad entry.
        row: usize,
        /// Column of the first bad entry.
        col: usize,
        /// The value, formatted.
        value: String,
    },
    /// One matrix of a batch failed (see [`crate::pipeline::batched`]):
    /// `source` says how, e.g. [`Error::NonFinite`] with the row and column
    /// inside that matrix, or [`Error::NoConvergence`].
    #[error("matrix {index} of the batch: {source}")]
    BatchItem {
        /// Index of the matrix in the batch.
        index: usize,
        /// What went wrong with it.
        #[source]
        source: Box<Error>,
    },
    /// Wrong shape or inconsistent dimensions.
    #[error("shape error: {0}")]
    Shape(String),
    /// An iterative method did not converge; no result is returned.
    #[error("{stage} did not converge: {detail}")]
    NoConvergence {
        /// Which solver.
        stage: &'static str,
        /// What failed to converge.
        detail: String,
    },
    /// The computation needs more memory than the machine has. The message
    /// gives the two figures with one decimal, or as many more as it takes to
    /// tell them apart.
    #[error(
        "needs {} GiB but {} GiB is available; {suggestion}",
        gib_apart(.needed_gib, .available_gib),
        gib_apart(.available_gib, .needed_gib)
    )]
    OutOfMemory {
        /// Bytes needed, in GiB.
        needed_gib: f64,
        /// Bytes available, in GiB.
        available_gib: f64,
        /// What would fit instead.
        suggestion: String,
    },
    /// An `.npy` file could not be read or written.
    #[error("{}: {reason}", .path.display())]
    Npy {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An I/O error.
    #[error("I/O error on {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A GPU was asked for but none is usable: this build has no `cuda`
    /// feature, the CUDA driver or NVRTC library is not on the loader path, or
    /// the driver reports no device. Present in every build, so that a CPU-only
    /// build reports a GPU request the same way (see [`crate::cuda`]).
    #[error("no usable GPU: {reason} (looked for: {looked_for})")]
    NoGpu {
        /// What was looked for: the feature, or the shared library names tried.
        looked_for: String,
        /// Why it is not usable.
        reason: String,
    },
    /// A result was asked for before the task graph that computes it ran
    /// successfully (or while a task of that graph still holds it).
    #[error("the task graph that computes this result has not run successfully")]
    NotRun,
    /// The matrix `B` of a generalized eigenproblem is not positive definite:
    /// its leading minor of order `minor` is not positive, so its Cholesky
    /// factorization stops at row `minor` (1-based; LAPACK `dsygv` reports it
    /// as `info = n + minor`). Raised before anything is returned; the caller's
    /// matrices are never modified.
    #[error("B is not positive definite: its leading minor of order {minor} is not positive")]
    NotPositiveDefinite {
        /// Order of the first leading minor that is not positive (1-based).
        minor: usize,
    },
    /// An argument is out of its valid range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The runtime could not start one of its threads (the operating system's
    /// thread limit, or a stack it cannot map). Every thread that did start was
    /// joined before this was returned.
    #[error("could not start the {what} thread: {source}")]
    ThreadSpawn {
        /// Which thread, e.g. `CPU worker 3`, `stream lane 0`, `submit`.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An error from outside eigenflow, typically returned by a task body of the
    /// caller's (an I/O or parse error, or any `Box<dyn Error + Send + Sync>`);
    /// the `From` conversions make `?` work in a task body. The runtime wraps it
    /// in [`Error::TaskFailed`], which names the task.
    #[error(transparent)]
    External(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The run was cancelled (see [`crate::runtime::RunHandle::cancel`]) before
    /// every task finished; the tasks that were running finished first.
    #[error("the run was cancelled")]
    Cancelled,
}

impl Error {
    /// Wraps any error of the caller's as [`Error::External`] (for `map_err` in
    /// a task body when no `From` conversion applies).
    pub fn external<E>(e: E) -> Self
    where
        E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    {
        Error::External(e.into())
    }
}

/// An I/O error without a path (a task body's `?`): [`Error::External`]
/// ([`Error::Io`] is for eigenflow's own file operations, and names the file).
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::External(Box::new(e))
    }
}

/// `From` conversions into [`Error::External`] for the standard library's
/// errors a task body meets most (parsing and conversions), so that `?` works on
/// them directly. A blanket `impl<E: std::error::Error> From<E>` is impossible
/// (it would overlap `From<Error> for Error`); anything else goes through
/// `Box<dyn Error + Send + Sync>` or [`Error::external`].
macro_rules! external_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::External(Box::new(e))
            }
        }
    )*};
}

external_from!(
    std::num::ParseIntError,
    std::num::ParseFloatError,
    std::num::TryFromIntError,
    std::str::ParseBoolError,
    std::str::Utf8Error,
    std::string::FromUtf8Error,
    std::fmt::Error,
);

impl From<Box<dyn std::error::Error + Send + Sync + 'static>> for Error {
    fn from(e: Box<dyn std::error::Error + Send + Sync + 'static>) -> Self {
        Error::External(e)
    }
}

/// Task names in error messages are cut to this many characters.
pub const MAX_NAME_CHARS: usize = 80;

/// Error messages list at most this many tasks, then count the others.
pub const MAX_LISTED: usize = 8;

/// `name`, cut to [`MAX_NAME_CHARS`] characters (with an ellipsis if it was cut),
/// for error messages.
pub(crate) fn short_name(name: &str) -> String {
    match name.char_indices().nth(MAX_NAME_CHARS) {
        None => name.to_string(),
        Some((end, _)) => format!("{}...", &name[..end]),
    }
}

/// The text of a panic payload (a `&str` or `String`), for error messages.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// `gib` with one decimal, or with as many more (up to 12) as it takes to
/// tell it from `other` (so that "needs 0.11 GiB but 0.10 GiB" never reads
/// "needs 0.1 GiB but 0.1 GiB").
fn gib_apart(gib: &f64, other: &f64) -> String {
    let mut digits = 1;
    while digits < 12 && gib != other && format!("{gib:.digits$}") == format!("{other:.digits$}") {
        digits += 1;
    }
    format!("{gib:.digits$}")
}

/// `a -> b -> c ... and N more`: the listed names of a sequence of `len` items.
fn listed(names: &[String], len: usize) -> String {
    let mut s = names.join(" -> ");
    if len > names.len() {
        s.push_str(&format!(" -> ... and {} more", len - names.len()));
    }
    s
}

/// Shorthand for `Result<T, eigenflow::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
