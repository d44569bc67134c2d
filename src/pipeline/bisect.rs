//! The parallel bisection of the selective solvers (LAPACK `dstebz`, the
//! first half of `dstevx`): the selected eigenvalues of a symmetric
//! tridiagonal, cut into parts of consecutive indices, one task per part. The
//! selected EVD bisects the tridiagonal of stage 2, the top-k SVD the
//! Golub–Kahan tridiagonal of the bidiagonal; both build their parts here.

use crate::graph::{Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::tridiagonal::stebz::{split_indices, Sturm};
use crate::matrix::MatrixId;
use crate::{Error, Result, Scalar};
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::Arc;

/// Number of bisection tasks for `k` selected values: one per 64, at most 8
/// (a part of 64 values is about `60 n * 64` flops: well above a task's cost).
pub(crate) fn bisect_parts(k: usize) -> usize {
    (k / 64).clamp(1, 8)
}

/// The eigenvalues each part found, in part order: index order, ascending.
pub(crate) type PartValues<T> = Arc<Vec<Mutex<Option<Vec<T>>>>>;

/// How the bisection tasks of one selection are laid out in the graph.
pub(crate) struct BisectParts<'a> {
    /// Task name prefix (`"select"`, `"svd.select"`): tasks are `<prefix>.bisect[p]`.
    pub prefix: &'a str,
    /// Stage of the tasks in the trace and the stage table.
    pub stage: &'static str,
    /// Number of parts ([`bisect_parts`]).
    pub parts: usize,
    /// Modelled flops of one part.
    pub flops: f64,
    /// Modelled bytes one part reads.
    pub bytes: f64,
    /// The plan every part reads (one cell, written by `plan_task`).
    pub plan_id: MatrixId,
    /// The parts' results (`parts x 1` cells, part `p` writes row `p`).
    pub parts_id: MatrixId,
    /// The task that makes the plan.
    pub plan_task: TaskId,
}

/// Adds one bisection task per part after `layout.plan_task`. Each task gets
/// the Sturm sequence and the index range of the selection from `plan` (run
/// when the task runs, so the range may depend on the tridiagonal, as a
/// value range does), bisects its share of the range ([`split_indices`]: the
/// same cut in every task) and stores the values in its slot of the returned
/// [`PartValues`]. Returns the slots and the tasks.
pub(crate) fn add_bisections<T, F>(
    g: &mut TaskGraph<'static>,
    layout: &BisectParts<'_>,
    plan: F,
) -> (PartValues<T>, Vec<TaskId>)
where
    T: Scalar,
    F: Fn() -> Option<(Arc<Sturm<T>>, Range<usize>)> + Clone + Send + Sync + 'static,
{
    let parts = layout.parts;
    let results: PartValues<T> = Arc::new((0..parts).map(|_| Mutex::new(None)).collect());
    let mut tasks = Vec::with_capacity(parts);
    for p in 0..parts {
        let (plan, results) = (plan.clone(), results.clone());
        let body = move |_: &crate::graph::TaskContext| -> Result<()> {
            let (sturm, range) =
                plan().ok_or_else(|| Error::InvalidArgument("bisection before its plan".into()))?;
            let mine = split_indices(range.clone(), parts)
                .get(p)
                .cloned()
                .unwrap_or(range.end..range.end);
            *results[p].lock() = Some(sturm.bisect(mine, T::zero())?);
            Ok(())
        };
        let t = g.add(
            Task::new(format!("{}.bisect[{p}]", layout.prefix), body)
                .stage(layout.stage)
                .cost(layout.flops, layout.bytes)
                .footprint(
                    Footprint::new()
                        .read(Region::new(layout.plan_id, 0..1, 0..1))
                        .write(Region::new(layout.parts_id, p..p + 1, 0..1)),
                ),
        );
        g.succeed(t, &[layout.plan_task]);
        tasks.push(t);
    }
    (results, tasks)
}

/// The values of all parts in part order, taken out of their slots.
pub(crate) fn gather_parts<T>(results: &PartValues<T>) -> Vec<T> {
    let mut w = Vec::new();
    for r in results.iter() {
        w.extend(r.lock().take().unwrap_or_default());
    }
    w
}
