//! The crate's one error type: every failure a caller can cause or observe has a variant.

use std::path::PathBuf;

/// Everything that can go wrong in eigenflow.
///
/// Graph validation, scheduling, numerical and I/O failures all land here, so a
/// pipeline run returns one `Result<_, Error>` whatever stage failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The task graph has a cycle (possibly through the implicit in-order edges of a
    /// stream lane); `tasks` names tasks on it.
    #[error("task graph has a cycle through: {}", .tasks.join(" -> "))]
    Cycle {
        /// Names of tasks on one cycle, in order.
        tasks: Vec<String>,
    },
    /// An edge names a task id that does not exist in this graph.
    #[error("edge {from} -> {to} refers to a task that is not in the graph ({len} tasks)")]
    MissingTask {
        /// Source id of the edge.
        from: usize,
        /// Target id of the edge.
        to: usize,
        /// Number of tasks in the graph.
        len: usize,
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
    /// The computation needs more memory than the machine has.
    #[error("needs {needed_gib:.1} GiB but {available_gib:.1} GiB is available; {suggestion}")]
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
    /// A GPU was asked for but none is usable.
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    /// A result was asked for before the task graph that computes it ran
    /// successfully (or while a task of that graph still holds it).
    #[error("the task graph that computes this result has not run successfully")]
    NotRun,
    /// An argument is out of its valid range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// Shorthand for `Result<T, eigenflow::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
