//! The grouped grain of one gb2bd pass: super-tasks of `G` sweeps by `C`
//! skewed steps ([`crate::linalg::band::chase`]), and the edges between the
//! super-tasks of different passes.
//!
//! Inside a pass the fine DAG has the shape of the EVD's bulge chasing
//! (`(r, s-1) -> (r, s)`, `(r-1, min(s+2, last)) -> (r, s)`), so the shared
//! [`crate::linalg::band::chase::SweepGrouping`] applies unchanged. Across passes, fine task `(r, s)` of a
//! later pass follows the one task [`super::pass_pred`] names in each earlier
//! pass; the super-task follows the super-tasks that contain those tasks
//! ([`cross_pass_preds`]). Every fine edge is then inside one super-task (in
//! execution order) or implied by super-task edges, and the grouping adds no
//! cycle (cross-pass edges only point forward in the pass order).
//!
//! Super-tasks the grouped DAG leaves unordered have disjoint fine footprints
//! and, in every case the tests try (several schedules, group and chunk
//! sizes), disjoint bounding boxes too, so the pipeline declares one box per
//! super-task ([`PassGrouping::footprint`]).

use super::{num_sweeps, pass_pred, steps, task_footprint, Pass};
use crate::linalg::band::chase::{self, SweepShape, SWEEP_LAG};
use std::ops::Range;

/// The sweep DAG of one pass on an order-`n` band.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassShape {
    n: usize,
    pass: Pass,
}

impl SweepShape for PassShape {
    fn num_sweeps(&self) -> usize {
        num_sweeps(self.n, self.pass)
    }

    fn steps(&self, r: usize) -> usize {
        steps(self.n, self.pass, r)
    }

    fn footprint(&self, r: usize, s: usize) -> (Range<usize>, Range<usize>) {
        task_footprint(self.n, self.pass, r, s)
    }
}

/// Super-tasks of one pass: `G` sweeps by `C` skewed steps.
pub type PassGrouping = chase::SweepGrouping<PassShape>;

impl PassGrouping {
    /// The grouping of `pass` on an order-`n` band into groups of `group`
    /// sweeps and chunks of `chunk` skewed steps (both at least 1).
    pub fn new(n: usize, pass: Pass, group: usize, chunk: usize) -> Self {
        Self::with_lag(PassShape { n, pass }, group, chunk, SWEEP_LAG)
    }

    /// [`PassGrouping::new`] with a weaker cross-group edge (`lag < 3`):
    /// the tests' negative control.
    #[cfg(test)]
    pub(crate) fn new_with_lag(
        n: usize,
        pass: Pass,
        group: usize,
        chunk: usize,
        lag: usize,
    ) -> Self {
        Self::with_lag(PassShape { n, pass }, group, chunk, lag)
    }

    /// Order of the band.
    pub fn n(&self) -> usize {
        self.shape().n
    }

    /// The pass grouped.
    pub fn pass(&self) -> Pass {
        self.shape().pass
    }

    /// The fine tasks of super-task `(g, c)` and their footprint boxes.
    pub fn regions(
        &self,
        g: usize,
        c: usize,
    ) -> impl Iterator<Item = ((usize, usize), (Range<usize>, Range<usize>))> + '_ {
        self.tasks(g, c)
            .map(move |(r, s)| ((r, s), task_footprint(self.n(), self.pass(), r, s)))
    }
}

/// The super-tasks `(g', c')` of the `earlier` pass's grouping that super-task
/// `(g, c)` of `later` must follow, ascending and without repeats: those
/// containing the [`pass_pred`] of each of its fine tasks.
pub fn cross_pass_preds(
    earlier: &PassGrouping,
    later: &PassGrouping,
    g: usize,
    c: usize,
) -> Vec<(usize, usize)> {
    let n = later.n();
    let mut out: Vec<(usize, usize)> = later
        .tasks(g, c)
        .filter_map(|(r, s)| pass_pred(n, earlier.pass(), later.pass(), r, s))
        .map(|(r, s)| earlier.locate(r, s))
        .collect();
    out.sort_unstable();
    out.dedup();
    // Within the earlier pass, (g', c') follows (g', c' - 1): per group only
    // the latest chunk is needed.
    let mut keep: Vec<(usize, usize)> = Vec::with_capacity(out.len());
    for (gg, cc) in out {
        match keep.last_mut() {
            Some(last) if last.0 == gg => last.1 = cc,
            _ => keep.push((gg, cc)),
        }
    }
    keep
}
