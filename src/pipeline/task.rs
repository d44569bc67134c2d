//! What every stage builder shares: tasks whose bodies take checked views, and
//! the check that handles belong to the graph being built.

use crate::graph::{Footprint, Region, RunOutcome, SubGraph, Task, TaskContext, TaskGraph, TaskId};
use crate::matrix::access::Access;
use crate::{Error, Result, Scalar};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The body of a stage builder's task: `body` takes its views through an
/// [`Access`] checked against the footprint declared on the task (see
/// `matrix::access`).
pub(crate) fn with_access(
    body: impl FnOnce(&Access<'_>) -> Result<()> + Send + 'static,
) -> impl FnOnce(&TaskContext) -> Result<()> + Send + 'static {
    move |ctx| body(&Access::of(ctx.footprint.as_deref()))
}

/// Refuses a handle whose tasks belong to another graph than `g` (its edges
/// would order the wrong tasks).
pub(crate) fn check_owned<'t>(
    g: &TaskGraph<'_>,
    what: &str,
    ids: impl IntoIterator<Item = &'t TaskId>,
) -> Result<()> {
    if ids.into_iter().all(|&t| g.owns(t)) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} was produced in another task graph than the one being built"
        )))
    }
}

/// Entries and exits of a set of tasks, from the graph's edges among them.
pub(crate) fn subgraph_of(g: &TaskGraph<'_>, ids: &[TaskId]) -> SubGraph {
    let Some(first) = ids.first() else {
        return SubGraph::default();
    };
    let lo = first.index();
    let hi = ids.last().expect("nonempty").index() + 1;
    let (mut has_pred, mut has_succ) = (vec![false; hi - lo], vec![false; hi - lo]);
    for (u, v) in g.edges() {
        let inside = |t: usize| (lo..hi).contains(&t);
        if inside(u) && inside(v) {
            has_succ[u - lo] = true;
            has_pred[v - lo] = true;
        }
    }
    let pick = |flags: &[bool]| {
        ids.iter()
            .copied()
            .filter(|t| !flags[t.index() - lo])
            .collect()
    };
    SubGraph {
        entries: pick(&has_pred),
        exits: pick(&has_succ),
    }
}

/// Where a task graph leaves a vector it computes.
///
/// Readable once the run of the graph that computes it has succeeded
/// ([`Slot::get`]); [`Error::NotRun`] before the run, while it runs, and
/// after a run that failed or was cancelled, or a graph dropped unrun.
pub struct Slot<T> {
    pub(crate) cell: Arc<Mutex<Option<Vec<T>>>>,
    pub(crate) task: TaskId,
    pub(crate) outcome: RunOutcome,
}

impl<T> Slot<T> {
    /// The slot filled by `task` of `g` into `cell`.
    pub(crate) fn new(g: &TaskGraph<'_>, cell: Arc<Mutex<Option<Vec<T>>>>, task: TaskId) -> Self {
        Slot {
            cell,
            task,
            outcome: g.outcome(),
        }
    }
}

impl<T: Clone> Slot<T> {
    /// The value, once the run of its graph has succeeded; [`Error::NotRun`]
    /// otherwise (see [`Slot`]). Does not block, and does not consume the
    /// slot: read it again at will.
    pub fn get(&self) -> Result<Vec<T>> {
        self.outcome.check()?;
        self.cell.lock().clone().ok_or(Error::NotRun)
    }

    /// Blocks until the run of its graph has ended (useful when the run was
    /// submitted and its handle dropped), then answers as [`Slot::get`].
    /// Never call it from a task of the same graph.
    pub fn wait(&self) -> Result<Vec<T>> {
        self.outcome.wait()?;
        self.get()
    }

    /// Whether [`Slot::get`] would return the value now.
    pub fn is_ready(&self) -> bool {
        self.outcome.is_ready()
    }

    /// The task that fills the slot.
    pub fn task(&self) -> TaskId {
        self.task
    }
}

/// The values a graph computes, released only once the graph's completion
/// task (after every task that writes a result) has run: a run that failed part
/// way leaves them unreadable, not half written.
pub(crate) struct FinalValues<T> {
    values: Slot<T>,
    complete: Arc<AtomicBool>,
    /// The completion task (stages appended after the graph's results order
    /// themselves after it).
    task: TaskId,
    /// The input was multiplied by this before the reduction.
    scale: T,
}

impl<T: Scalar> FinalValues<T> {
    /// Adds the completion task `name` in stage `stage` after every task of
    /// `last`, for `values` computed on the input scaled by `scale`.
    pub(crate) fn after(
        g: &mut TaskGraph<'_>,
        name: &'static str,
        stage: &'static str,
        last: &[TaskId],
        values: Slot<T>,
        scale: T,
    ) -> Self {
        let complete = Arc::new(AtomicBool::new(false));
        let flag = complete.clone();
        let t = g.add(
            Task::new(name, move |_| {
                flag.store(true, Ordering::Release);
                Ok(())
            })
            .stage(stage),
        );
        let mut last = last.to_vec();
        last.sort_unstable();
        last.dedup();
        g.succeed(t, &last);
        FinalValues {
            values,
            complete,
            task: t,
            scale,
        }
    }

    /// The completion task: it follows every task that writes a result.
    pub(crate) fn task(&self) -> TaskId {
        self.task
    }

    /// [`Error::NotRun`] unless the graph ran to its completion task.
    pub(crate) fn check_complete(&self) -> Result<()> {
        if self.complete.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(Error::NotRun)
        }
    }

    /// The values, unscaled, once the graph ran successfully; [`Error::NotRun`]
    /// before that (or after a run that failed).
    pub(crate) fn get(&self) -> Result<Vec<T>> {
        self.check_complete()?;
        Ok(self
            .values
            .get()?
            .into_iter()
            .map(|x| x / self.scale)
            .collect())
    }
}

/// A divide-and-conquer merge's problem, shared by the merge's tasks
/// (deflate -> roots -> [order ->] lowner -> apply -> free) in the EVD's `stedc` and the
/// SVD's `bdsdc`. The graph orders them (footprints on the pseudo-matrix `id`);
/// the lock makes any order sound, and is never contended in a correct graph.
pub(crate) struct MergeSlot<P> {
    pub(crate) problem: parking_lot::RwLock<Option<P>>,
    pub(crate) id: crate::matrix::MatrixId,
}

impl<P> MergeSlot<P> {
    /// An empty slot (before the merge's deflation task) with a fresh id.
    pub(crate) fn new() -> Self {
        MergeSlot {
            problem: parking_lot::RwLock::new(None),
            id: crate::matrix::MatrixId::fresh(),
        }
    }
}

/// The merge problem of a slot, or an error for a merge step run before its
/// deflation (impossible in a correct graph).
pub(crate) fn deflated<P>(p: &Option<P>) -> Result<&P> {
    p.as_ref()
        .ok_or_else(|| Error::InvalidArgument("merge step before deflation".into()))
}

/// The entries of a column view with unit row stride (a row range of a merge
/// workspace, stored as an `N x 1` shared matrix) as a slice.
pub(crate) fn column_slice<T: Scalar>(v: faer::MatMut<'_, T>) -> &mut [T] {
    v.col_mut(0)
        .try_as_col_major_mut()
        .expect("the merge workspace is a column")
        .as_slice_mut()
}

/// [`column_slice`], shared.
pub(crate) fn column_slice_ref<T: Scalar>(v: faer::MatRef<'_, T>) -> &[T] {
    v.col(0)
        .try_as_col_major()
        .expect("the merge workspace is a column")
        .as_slice()
}

/// Bytes of graph bookkeeping per task in the memory figures: the task and its
/// footprint, its edges, the runtime's plan and per-task record (a generous
/// average).
pub(crate) const BYTES_PER_TASK: u64 = 640;

/// What a run holds besides its matrices and tasks on `threads` workers (worker
/// stacks, the allocator's per-thread arenas, progress and trace state), in the
/// memory figures: 4 MiB and 2 MiB per thread. Measured with the evd example at
/// n = 600 and 1000 on 1 and 2 threads, the resident peak exceeded the rest of
/// the figure by up to 3.4 MB. `None` on overflow.
pub(crate) fn runtime_bytes(threads: usize) -> Option<u64> {
    (2u64 << 20)
        .checked_mul(threads as u64)?
        .checked_add(4 << 20)
}

/// A step of a divide-and-conquer merge that runs as `count` tasks over the
/// ranges `i k / count..(i + 1) k / count` of `0..k` (the secular roots, the
/// entries of z-hat), `k` from the merge's problem: task `i` is named
/// `{name}[i]`, writes pseudo-row `first_row + i` of the slot and reads what
/// `reads` says.
pub(crate) struct MergeRanges {
    pub(crate) name: String,
    pub(crate) stage: &'static str,
    pub(crate) count: usize,
    pub(crate) first_row: usize,
    /// Flops and bytes of one task.
    pub(crate) cost: (f64, f64),
    pub(crate) reads: Footprint,
}

/// Adds the tasks of `spec`, each after `after`: task `i` runs `run(problem,
/// range i)` on the problem of `slot` unless `skip(access)` (a merge the stage
/// left out, as the SVD's of a zero bidiagonal). `k` gives the range's length
/// from the problem.
pub(crate) fn add_merge_ranges<P: Send + Sync + 'static>(
    g: &mut TaskGraph<'static>,
    slot: &Arc<MergeSlot<P>>,
    spec: MergeRanges,
    after: TaskId,
    skip: impl Fn(&Access<'_>) -> bool + Clone + Send + 'static,
    k: fn(&P) -> usize,
    run: fn(&P, std::ops::Range<usize>) -> Result<()>,
) -> Vec<TaskId> {
    let count = spec.count;
    (0..count)
        .map(|i| {
            let (slot_b, skip) = (slot.clone(), skip.clone());
            let body = with_access(move |acc| {
                if skip(acc) {
                    return Ok(());
                }
                let guard = slot_b.problem.read();
                let problem = deflated(&guard)?;
                let k = k(problem);
                run(problem, i * k / count..(i + 1) * k / count)
            });
            let row = spec.first_row + i;
            let t = g.add(
                Task::new(format!("{}[{i}]", spec.name), body)
                    .stage(spec.stage)
                    .cost(spec.cost.0, spec.cost.1)
                    .footprint(
                        spec.reads
                            .clone()
                            .write(Region::new(slot.id, row..row + 1, 0..1)),
                    ),
            );
            g.edge(after, t);
            t
        })
        .collect()
}
