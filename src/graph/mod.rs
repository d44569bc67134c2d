//! The task graph: tasks (name, stage, lane, cost, footprint, body) and the edges
//! between them. Building is a few obvious calls, as in Taskflow:
//!
//! ```
//! use eigenflow::graph::{Task, TaskGraph};
//! let mut g = TaskGraph::new();
//! let a = g.task("a", |_| Ok(()));
//! let b = g.add(Task::new("b", |_| Ok(())).stage("demo"));
//! g.edge(a, b);
//! eigenflow::runtime::Runtime::builder().threads(2).build().run(g).unwrap();
//! ```
//!
//! The graph is machine independent: the runtime decides which thread or
//! stream runs each task. `petgraph` holds the structure while building;
//! a private plan flattens it into arrays for the scheduler's hot path.

mod dot;
mod flow;
mod outcome;
pub(crate) mod plan;
mod races;

pub use flow::Flow;
// The footprint is a fact about shared matrices (`matrix`, the layer below);
// tasks declare it, so the graph's API names it too.
pub use crate::matrix::{Footprint, Region};
pub(crate) use outcome::state_of;
pub use outcome::{RunOutcome, RunState};

use crate::{Error, Result};
use petgraph::graph::{DiGraph, NodeIndex};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Identifies a task inside one [`TaskGraph`].
///
/// An id carries the identity of the graph that created it, so an id of one graph
/// can never silently name a task of another: an edge naming a task of another
/// graph is refused when the graph is validated ([`Error::ForeignTask`]).
/// Graph identities are process-unique 64-bit tags that are never reused.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId {
    /// Tag of the graph that created the id.
    graph: u64,
    index: u32,
}

impl TaskId {
    pub(crate) fn new(graph: u64, index: u32) -> Self {
        TaskId { graph, index }
    }

    /// The task's index in its graph (tasks are numbered in creation order).
    pub fn index(self) -> usize {
        self.index as usize
    }
}

impl std::fmt::Debug for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TaskId({} of graph {})", self.index, self.graph)
    }
}

/// The next graph tag. A counter, not an address: a graph's address can be reused
/// after it is dropped, and an id outliving its graph must stay foreign.
static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

fn fresh_tag() -> u64 {
    // Relaxed: only uniqueness matters, which the atomic increment gives.
    NEXT_GRAPH.fetch_add(1, Ordering::Relaxed)
}

/// Where a task runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Any worker of the CPU pool.
    #[default]
    Cpu,
    /// In-order lane `i`: a CUDA stream on a GPU, else a queue drained by its own
    /// thread. Tasks on one stream run in creation order, as kernels launched on a
    /// CUDA stream do.
    Stream(usize),
}

impl std::fmt::Display for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lane::Cpu => write!(f, "cpu"),
            Lane::Stream(i) => write!(f, "stream-{i}"),
        }
    }
}

/// Cost hint of a task: used for critical-path priorities and stage summaries.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    /// Floating-point operations.
    pub flops: f64,
    /// Bytes moved.
    pub bytes: f64,
}

impl Cost {
    /// A cost of `flops` operations moving `bytes` bytes.
    pub fn new(flops: f64, bytes: f64) -> Self {
        Cost { flops, bytes }
    }

    /// Estimated seconds on one core: a roofline with 20 GF/s and 10 GB/s plus a
    /// fixed scheduling cost, so empty tasks still count on a chain.
    pub(crate) fn seconds(&self) -> f64 {
        (self.flops / 20e9).max(self.bytes / 10e9) + 1e-7
    }
}

/// Most stream lanes a graph may use (each is a thread of the runtime, or a
/// CUDA stream and its thread); the plan refuses more. The runtime re-exports
/// it as `runtime::MAX_STREAMS`.
pub const MAX_STREAMS: usize = 1024;

/// Whether the run executing a task has stopped ([`TaskContext::is_stopping`]):
/// implemented by the runtime (the run its calling thread executes), so that
/// the graph below it needs no part of the runtime.
pub(crate) trait StopFlag: Send + Sync + std::fmt::Debug {
    /// Whether the run has stopped (another task failed, or it was
    /// cancelled): no other task will start.
    fn stopped(&self) -> bool;
}

/// Where [`TaskContext::device_slice`] records: implemented by the trace of a
/// traced run, so that the graph below it needs no part of the trace.
pub(crate) trait DeviceSink: Send + Sync + std::fmt::Debug {
    /// Records `name` on device track `track` from `start` to `end` (host
    /// clock).
    fn record(&self, track: usize, name: &str, start: Instant, end: Instant);
}

/// What a task body sees when it runs.
#[derive(Clone, Debug)]
pub struct TaskContext {
    /// The task.
    pub task: TaskId,
    /// The lane it runs on.
    pub lane: Lane,
    /// Index of the CPU worker, or of the stream, running it.
    pub worker: usize,
    /// The task's declared footprint (what the crate's stage builders check
    /// their views against, see `matrix::access`).
    pub(crate) footprint: Option<Arc<Footprint>>,
    /// The stop flag of the run executing the task.
    pub(crate) stop: &'static dyn StopFlag,
    /// Where [`TaskContext::device_slice`] records, when the run is traced.
    pub(crate) device: Option<Arc<dyn DeviceSink>>,
}

impl TaskContext {
    /// Records work this task ran on a device (a kernel, a library call, a
    /// transfer), from `start` to `end` on the host's clock (device timings
    /// placed on it by the caller), as a slice on device track `track` of the
    /// run's trace (process "devices", see the `trace` module). Nothing when
    /// the run writes no trace.
    pub fn device_slice(&self, track: usize, name: &str, start: Instant, end: Instant) {
        if let Some(d) = &self.device {
            d.record(track, name, start, end);
        }
    }

    /// Whether the run executing this task has been stopped (another task failed,
    /// or the run was cancelled): no other task will start. A long task body may
    /// check this now and then and return early; its result is not used.
    ///
    /// Answers for the calling thread's run, so call it from the body's own thread
    /// (the runtime thread that runs the task); elsewhere it returns `false`.
    pub fn is_stopping(&self) -> bool {
        self.stop.stopped()
    }
}

/// A task body: runs once; an `Err` stops the run.
pub type TaskFn<'a> = Box<dyn FnOnce(&TaskContext) -> Result<()> + Send + 'a>;

/// A task before it is added to a graph.
pub struct Task<'a> {
    pub(crate) name: Cow<'static, str>,
    pub(crate) stage: Cow<'static, str>,
    pub(crate) lane: Lane,
    pub(crate) cost: Cost,
    pub(crate) footprint: Option<Arc<Footprint>>,
    pub(crate) body: Option<TaskFn<'a>>,
}

impl<'a> Task<'a> {
    /// A CPU task in stage `"default"`.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        body: impl FnOnce(&TaskContext) -> Result<()> + Send + 'a,
    ) -> Self {
        Task {
            name: name.into(),
            stage: Cow::Borrowed("default"),
            lane: Lane::Cpu,
            cost: Cost::default(),
            footprint: None,
            body: Some(Box::new(body)),
        }
    }

    /// Sets the stage (groups tasks in traces and summaries).
    pub fn stage(mut self, stage: impl Into<Cow<'static, str>>) -> Self {
        self.stage = stage.into();
        self
    }

    /// Sets the lane.
    pub fn lane(mut self, lane: Lane) -> Self {
        self.lane = lane;
        self
    }

    /// Sets the cost hint.
    pub fn cost(mut self, flops: f64, bytes: f64) -> Self {
        self.cost = Cost::new(flops, bytes);
        self
    }

    /// Declares the regions the task reads and writes.
    pub fn footprint(mut self, footprint: Footprint) -> Self {
        self.footprint = Some(Arc::new(footprint));
        self
    }
}

/// A group of tasks inside a larger graph, as a pipeline stage exposes it: connect
/// its `entries` after what it needs and its `exits` before what needs it.
#[derive(Clone, Debug, Default)]
pub struct SubGraph {
    /// Tasks with no predecessor inside the group.
    pub entries: Vec<TaskId>,
    /// Tasks with no successor inside the group.
    pub exits: Vec<TaskId>,
}

/// A directed acyclic graph of tasks.
pub struct TaskGraph<'a> {
    pub(crate) g: DiGraph<Task<'a>, (), u32>,
    /// This graph's process-unique tag, carried by every [`TaskId`] it hands out.
    tag: u64,
    /// The first edge naming a task of another graph, reported by validation.
    bad_edge: Option<(TaskId, TaskId)>,
    /// This graph's outcome, cloned into the result handles built from it.
    outcome: RunOutcome,
    /// The outcomes this graph settles: its own and those of the graphs
    /// appended to it. The runtime takes them to settle when the run ends;
    /// whatever is left when the graph drops settles as never run.
    unsettled: Vec<RunOutcome>,
}

impl Drop for TaskGraph<'_> {
    fn drop(&mut self) {
        for o in self.unsettled.drain(..) {
            o.settle(RunState::NotRun);
        }
    }
}

impl Default for TaskGraph<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> TaskGraph<'a> {
    /// An empty graph.
    pub fn new() -> Self {
        Self::with_capacity(0, 0)
    }

    /// An empty graph with room for `tasks` tasks and `edges` edges.
    pub fn with_capacity(tasks: usize, edges: usize) -> Self {
        let outcome = RunOutcome::new();
        TaskGraph {
            g: DiGraph::with_capacity(tasks, edges),
            tag: fresh_tag(),
            bad_edge: None,
            unsettled: vec![outcome.clone()],
            outcome,
        }
    }

    /// The outcome of this graph's run, for result handles: it settles when
    /// the run ends (or the graph drops unrun), see [`RunOutcome`]. A graph
    /// appended to another settles with that one.
    pub fn outcome(&self) -> RunOutcome {
        self.outcome.clone()
    }

    /// The outcomes to settle when the run ends, taken out so that dropping
    /// the graph no longer settles them.
    pub(crate) fn take_outcomes(&mut self) -> Vec<RunOutcome> {
        std::mem::take(&mut self.unsettled)
    }

    /// Adds a task and returns its id.
    pub fn add(&mut self, task: Task<'a>) -> TaskId {
        TaskId::new(self.tag, self.g.add_node(task).index() as u32)
    }

    /// Whether `id` names a task of this graph (ids of another graph, including
    /// the ids a graph had before it was [appended](Self::append), do not).
    pub fn owns(&self, id: TaskId) -> bool {
        id.graph == self.tag && id.index() < self.g.node_count()
    }

    /// The id of this graph's task with creation index `index`, if there is one.
    pub fn task_id(&self, index: usize) -> Option<TaskId> {
        (index < self.g.node_count()).then(|| TaskId::new(self.tag, index as u32))
    }

    /// The petgraph node of `id`.
    ///
    /// # Panics
    /// If `id` is not a task of this graph (see [`Self::owns`]).
    fn node(&self, id: TaskId) -> NodeIndex<u32> {
        assert!(self.owns(id), "{id:?} is not a task of this graph");
        NodeIndex::new(id.index())
    }

    /// Adds a CPU task named `name` with body `body`.
    pub fn task(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        body: impl FnOnce(&TaskContext) -> Result<()> + Send + 'a,
    ) -> TaskId {
        self.add(Task::new(name, body))
    }

    /// Adds the edge `from -> to`: `to` starts after `from` finished.
    ///
    /// An id of another graph is not wired to anything: the first such edge is
    /// reported by validation ([`Error::ForeignTask`] from [`Self::validate`] and at
    /// `run`), not here, so building stays a sequence of infallible calls.
    pub fn edge(&mut self, from: TaskId, to: TaskId) {
        if !self.owns(from) || !self.owns(to) {
            self.bad_edge.get_or_insert((from, to));
            return;
        }
        self.g
            .add_edge(NodeIndex::new(from.index()), NodeIndex::new(to.index()), ());
    }

    /// `from` precedes every task of `to`.
    pub fn precede(&mut self, from: TaskId, to: &[TaskId]) {
        for &t in to {
            self.edge(from, t);
        }
    }

    /// `to` succeeds every task of `from`.
    pub fn succeed(&mut self, to: TaskId, from: &[TaskId]) {
        for &f in from {
            self.edge(f, to);
        }
    }

    /// Edges from every exit of `before` to every entry of `after`.
    pub fn chain(&mut self, before: &SubGraph, after: &SubGraph) {
        for &a in &before.exits {
            self.precede(a, &after.entries);
        }
    }

    /// Moves all tasks and edges of `other` into this graph and returns them as a
    /// [`SubGraph`] (its entries and exits, as ids of this graph). Ids that
    /// `other` handed out before are foreign to this graph: translate them with
    /// their [`TaskId::index`] plus the length this graph had before the call, via
    /// [`Self::task_id`].
    pub fn append(&mut self, mut other: TaskGraph<'a>) -> SubGraph {
        let offset = self.g.node_count() as u32;
        // The handles built from `other` now wait for this graph's run.
        self.unsettled.extend(other.take_outcomes());
        if let Some((f, t)) = other.bad_edge {
            // Re-tag the endpoints that were `other`'s own; a foreign one stays foreign.
            let retag = |id: TaskId| {
                if id.graph == other.tag {
                    TaskId::new(self.tag, id.index + offset)
                } else {
                    id
                }
            };
            let bad = (retag(f), retag(t));
            self.bad_edge.get_or_insert(bad);
        }
        let (nodes, edges) = std::mem::take(&mut other.g).into_nodes_edges();
        let mut has_pred = vec![false; nodes.len()];
        let mut has_succ = vec![false; nodes.len()];
        for e in &edges {
            has_succ[e.source().index()] = true;
            has_pred[e.target().index()] = true;
        }
        for node in nodes {
            self.g.add_node(node.weight);
        }
        for e in edges {
            self.g.add_edge(
                NodeIndex::new(e.source().index() + offset as usize),
                NodeIndex::new(e.target().index() + offset as usize),
                (),
            );
        }
        let tag = self.tag;
        let ids = |flags: Vec<bool>| {
            flags
                .iter()
                .enumerate()
                .filter(|(_, &f)| !f)
                .map(|(i, _)| TaskId::new(tag, i as u32 + offset))
                .collect()
        };
        SubGraph {
            entries: ids(has_pred),
            exits: ids(has_succ),
        }
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.g.node_count()
    }

    /// Whether the graph has no task.
    pub fn is_empty(&self) -> bool {
        self.g.node_count() == 0
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.g.edge_count()
    }

    /// All edges as `(from, to)` task indices, in insertion order.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        use petgraph::visit::EdgeRef;
        self.g
            .edge_references()
            .map(|e| (e.source().index(), e.target().index()))
    }

    /// Name of a task.
    ///
    /// # Panics
    /// If `id` is not a task of this graph (see [`Self::owns`]).
    pub fn name(&self, id: TaskId) -> &str {
        &self.g[self.node(id)].name
    }

    /// Stage of a task.
    ///
    /// # Panics
    /// If `id` is not a task of this graph (see [`Self::owns`]).
    pub fn stage_of(&self, id: TaskId) -> &str {
        &self.g[self.node(id)].stage
    }

    /// Lane of a task.
    ///
    /// # Panics
    /// If `id` is not a task of this graph (see [`Self::owns`]).
    pub fn lane_of(&self, id: TaskId) -> Lane {
        self.g[self.node(id)].lane
    }

    /// Name of the task with index `v` (which must exist), cut for error messages.
    pub(crate) fn short_name(&self, v: usize) -> String {
        crate::error::short_name(&self.g[NodeIndex::new(v)].name)
    }

    /// Checks the graph for a runtime with `streams` stream lanes: every edge
    /// names tasks of this graph, no edge is duplicated, every stream lane exists,
    /// `streams` is at most [`MAX_STREAMS`], and there is no cycle
    /// (counting the in-order edges of each stream lane).
    pub fn validate(&self, streams: usize) -> Result<()> {
        plan::Plan::build(self, streams).map(|_| ())
    }

    /// The first edge that named a task of another graph, as an error.
    pub(crate) fn bad_edge(&self) -> Option<Error> {
        let describe = |id: TaskId| {
            if self.owns(id) {
                format!("task {} `{}`", id.index(), self.short_name(id.index()))
            } else {
                format!("task {} of another graph", id.index())
            }
        };
        self.bad_edge.map(|(from, to)| Error::ForeignTask {
            from: describe(from),
            to: describe(to),
        })
    }

    /// This graph's tag (for the ids the runtime hands to task bodies).
    pub(crate) fn tag(&self) -> u64 {
        self.tag
    }
}
