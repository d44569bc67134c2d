//! Stage 2 of the SVD as tasks: upper band to upper bidiagonal by bulge chasing
//! with bandwidth tiling (seed 000: Ringoot, Alomairy and Edelman,
//! "Accelerating Bidiagonalization of Banded Matrices through Memory-Aware
//! Bulge-Chasing on GPUs", 2025, §IV), one task per (pass, sweep, step).

use super::ge2gb::UpperBandHandle;
use super::reflectors::Gb2bdReflectorsHandle;
use super::GB2BD;
use crate::graph::{Footprint, Region, SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::band::gb2bd::grouping::{cross_pass_preds, PassGrouping};
use crate::linalg::band::gb2bd::storage::{BandStorage, SharedBandStore};
use crate::linalg::band::gb2bd::{
    chase_step, fine_preds_lag, num_sweeps, pass_pred, steps, task_footprint, Gb2bdReflectors,
    GbBandMut, Pass, SharedGb2bdReflectors, SharedUpperBand, SWEEP_LAG,
};
use crate::matrix::access::Access;
use crate::matrix::MatrixId;
use crate::pipeline::columns::Reduction;
use crate::pipeline::task::{check_owned, subgraph_of, with_access};
use crate::pipeline::ChaseGrain;
use crate::{Result, Scalar};
use std::ops::Range;
use std::sync::Arc;

/// A band the chase tasks work on: the working-precision band itself, or a
/// band stored in a narrower type that each task widens into an `f32` window
/// ([`crate::linalg::band::gb2bd::storage`]). One task body for both, so the
/// half-precision chase is the same DAG as the working-precision one.
pub(super) trait ChaseBand: Send + Sync + 'static {
    /// The arithmetic of [`chase_step`].
    type C: Scalar;
    /// Bytes of one stored entry (task costs).
    const ENTRY: usize;
    /// The id footprints use to name the band.
    fn id(&self) -> MatrixId;
    /// Order of the band.
    fn n(&self) -> usize;
    /// Runs `f` on a view of the window `rows x cols`, which the task's
    /// declared footprint writes.
    fn chase(
        &self,
        acc: &Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
        f: &mut dyn FnMut(&mut GbBandMut<'_, Self::C>),
    );
}

impl<T: Scalar> ChaseBand for SharedUpperBand<T> {
    type C = T;
    const ENTRY: usize = std::mem::size_of::<T>();
    fn id(&self) -> MatrixId {
        SharedUpperBand::id(self)
    }
    fn n(&self) -> usize {
        SharedUpperBand::n(self)
    }
    fn chase(
        &self,
        acc: &Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
        f: &mut dyn FnMut(&mut GbBandMut<'_, T>),
    ) {
        f(&mut self.write(acc, rows, cols));
    }
}

impl<S: BandStorage> ChaseBand for SharedBandStore<S> {
    type C = f32;
    const ENTRY: usize = std::mem::size_of::<S>();
    fn id(&self) -> MatrixId {
        SharedBandStore::id(self)
    }
    fn n(&self) -> usize {
        SharedBandStore::n(self)
    }
    fn chase(
        &self,
        acc: &Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
        f: &mut dyn FnMut(&mut GbBandMut<'_, f32>),
    ) {
        self.chase_f32(acc, rows, cols, |v| f(v));
    }
}

/// The chase tasks of one stage and their reflector store.
pub(super) struct Chase<C> {
    pub(super) ids: Vec<TaskId>,
    pub(super) store: Option<Arc<SharedGb2bdReflectors<C>>>,
}

/// The upper bidiagonal a reduction produces (diagonal and first
/// superdiagonal of the band storage), for [`super::singular_values()`]: final
/// once every task in `all_done` has run.
pub struct Bidiagonal<T> {
    pub(super) band: Arc<SharedUpperBand<T>>,
    /// The stage's exit tasks and the band copies it was fed by.
    pub(super) all_done: Vec<TaskId>,
    /// The reduction it comes from (`None`: given whole).
    pub(super) reduction: Option<Reduction>,
}

impl<T: Scalar> Bidiagonal<T> {
    /// An upper bidiagonal given whole (diagonal `d`, superdiagonal `e` of
    /// length `d.len() - 1`; `e` empty for an empty `d`), for the bidiagonal
    /// solvers alone: no task produces it.
    ///
    /// Errors: [`crate::Error::Shape`] for mismatched lengths,
    /// [`crate::Error::NonFinite`] for a non-finite entry (at its position in
    /// the matrix).
    pub fn from_vectors(d: Vec<T>, e: Vec<T>) -> Result<Self> {
        let n = d.len();
        if e.len() != n.saturating_sub(1) {
            return Err(crate::Error::Shape(format!(
                "bidiagonal of order {n} needs {} superdiagonal entries, got {}",
                n.saturating_sub(1),
                e.len()
            )));
        }
        if let Some(i) = d.iter().chain(&e).position(|x| !x.is_finite()) {
            let (row, col, x) = if i < n {
                (i, i, d[i])
            } else {
                (i - n, i - n + 1, e[i - n])
            };
            return Err(crate::Error::NonFinite {
                row,
                col,
                value: format!("{x}"),
            });
        }
        let mut band = crate::linalg::band::gb2bd::UpperBand::zeros(n, 1, 0);
        for (i, &x) in d.iter().enumerate() {
            band.set(i, i, x);
        }
        for (i, &x) in e.iter().enumerate() {
            band.set(i, i + 1, x);
        }
        Ok(Bidiagonal {
            band: Arc::new(SharedUpperBand::new(band)),
            all_done: Vec::new(),
            reduction: None,
        })
    }

    /// Order of the bidiagonal.
    pub fn n(&self) -> usize {
        self.band.n()
    }
}

/// What stage 2 leaves behind.
pub struct Gb2bdStage<T> {
    /// Entry and exit tasks.
    pub sub: SubGraph,
    /// The bidiagonal.
    pub bidiagonal: Bidiagonal<T>,
    /// The reflectors of every task, for the `Q2` back-transforms: `Some`
    /// from [`gb2bd_with_reflectors()`], `None` from [`gb2bd()`].
    pub reflectors: Option<Gb2bdReflectorsHandle<T>>,
}

/// Adds stage 2 (gb2bd): the passes of `band`'s schedule, one task per
/// (pass, sweep, step) with the footprint
/// [`crate::linalg::band::gb2bd::task_footprint`]. Edges: within a pass, task
/// `(r, s)` follows `(r, s-1)` and `(r-1, min(s+2, last))` (the lag of three,
/// seed 000 §IV-A, [`crate::linalg::band::gb2bd::fine_preds`]); across passes, the
/// one task of each earlier pass that [`crate::linalg::band::gb2bd::pass_pred`]
/// names (so a later pass starts on the columns the earlier ones finished);
/// and every task follows the stage-1 band copies whose columns it overlaps.
///
/// Errors: [`crate::Error::InvalidArgument`] for a band from another graph.
pub fn gb2bd<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: UpperBandHandle<T>,
) -> Result<Gb2bdStage<T>> {
    gb2bd_with_lag(g, band, SWEEP_LAG, false)
}

/// [`gb2bd()`] at grain `grain`, keeping the reflectors for the
/// back-transforms when `keep_reflectors` (as [`gb2bd_with_reflectors()`]).
/// With [`ChaseGrain::Grouped`] each pass is cut into super-tasks of
/// `sweeps` sweeps by `steps` skewed steps
/// ([`crate::linalg::band::gb2bd::grouping`]): super-task `(g, c)` runs its fine
/// tasks in order on one view of the bounding box of their band regions,
/// which it declares (with each task's reflector slots);
/// it follows `(g, c-1)` and `(g-1, c + ceil((3G - 1) / C))` of its pass,
/// the super-tasks of earlier passes that hold the fine tasks
/// [`crate::linalg::band::gb2bd::pass_pred`] names, and the band copies of
/// stage 1 whose columns it touches. The result is bitwise that of the fine
/// grain.
///
/// Errors: as [`gb2bd()`], and [`crate::Error::InvalidArgument`] for a zero
/// group or chunk.
pub fn gb2bd_with<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: UpperBandHandle<T>,
    grain: ChaseGrain,
    keep_reflectors: bool,
) -> Result<Gb2bdStage<T>> {
    match grain {
        ChaseGrain::Fine => gb2bd_with_lag(g, band, SWEEP_LAG, keep_reflectors),
        ChaseGrain::Grouped { sweeps, steps } => {
            gb2bd_grouped(g, band, sweeps, steps, keep_reflectors)
        }
    }
}

/// [`gb2bd()`] keeping the reflectors for the back-transforms: each task
/// writes its `(right, left)` reflectors into its own column of the pass's
/// slot matrices ([`SharedGb2bdReflectors`]), declared in its footprint, and
/// the stage's `reflectors` is `Some`.
///
/// Errors: as [`gb2bd()`].
pub fn gb2bd_with_reflectors<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: UpperBandHandle<T>,
) -> Result<Gb2bdStage<T>> {
    gb2bd_with_lag(g, band, SWEEP_LAG, true)
}

/// [`gb2bd()`] with another lag between consecutive sweeps: only 3 is
/// correct; the tests use 2 to check that the race checker catches it (it
/// races in the final pass, `b' = 1`). With `keep`, the reflectors are stored
/// as [`gb2bd_with_reflectors()`] says.
pub(super) fn gb2bd_with_lag<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: UpperBandHandle<T>,
    lag: usize,
    keep: bool,
) -> Result<Gb2bdStage<T>> {
    check_owned(g, "the band", band.feed.iter().map(|(_, t)| t))?;
    let UpperBandHandle {
        band,
        passes,
        feed,
        reduction,
        ..
    } = band;
    let chase = chase_fine(g, &band, &passes, &feed, lag, keep);
    Ok(finish(g, band, &feed, chase, reduction))
}

/// The fine-grain chase tasks of [`gb2bd_with_lag()`] on any [`ChaseBand`].
///
/// Each task declares its data once, its footprint (its window of the band
/// and its reflector slots), which the checked views and `check_races` use;
/// the edges are the lag rule and the pass rule, explicit, not derived from
/// the windows by a [`Flow`](crate::graph::Flow): a window meets the
/// leftovers of many earlier windows, and the derived edges, each implied by
/// the rules' few, made the chase alone at n = 1000 (bandwidth 32) hold
/// 513,195 edges for 16,064 tasks with vectors (one pass; the rules give
/// 31,098) and 1,078,767 for 47,219 values only (two passes; the rules give
/// 123,989). The band copies of stage 1 are not in a flow of this stage:
/// its handle (`feed`) orders them.
pub(super) fn chase_fine<B: ChaseBand>(
    g: &mut TaskGraph<'static>,
    band: &Arc<B>,
    passes: &[Pass],
    feed: &[(Range<usize>, TaskId)],
    lag: usize,
    keep: bool,
) -> Chase<B::C> {
    let n = band.n();
    let bid = band.id();
    let store = keep.then(|| Arc::new(SharedGb2bdReflectors::new(Gb2bdReflectors::new(n, passes))));
    let mut ids: Vec<TaskId> = Vec::new();
    // first[p][r]: index in `ids` of task (p, r, 0).
    let mut first: Vec<Vec<usize>> = Vec::with_capacity(passes.len());
    for (p, &pass) in passes.iter().enumerate() {
        let ns = num_sweeps(n, pass);
        let mut fp_first = Vec::with_capacity(ns);
        let (b, d) = (pass.b, pass.d());
        let cost = (4 * (d + 1) * (2 * b + d)) as f64;
        let bytes = (B::ENTRY * (d + 1) * (2 * b + d)) as f64;
        for r in 0..ns {
            fp_first.push(ids.len());
            for s in 0..steps(n, pass, r) {
                let (rows, cols) = task_footprint(n, pass, r, s);
                let body = {
                    let (band, store) = (band.clone(), store.clone());
                    let (rows, cols) = (rows.clone(), cols.clone());
                    move |acc: &Access<'_>| {
                        band.chase(acc, rows, cols, &mut |view| {
                            let out = store.as_ref().map(|st| st.slot_mut(acc, p, r, s));
                            chase_step(view, pass, r, s, out);
                        });
                        Ok(())
                    }
                };
                let mut fp = Footprint::new().write(Region::new(bid, rows, cols.clone()));
                if let Some(st) = &store {
                    for (m, rows, cols) in st.task_regions(p, r, s) {
                        fp = fp.write(Region::new(m, rows, cols));
                    }
                }
                let t = g.add(
                    Task::new(
                        format!("gb2bd.pass[{p}].sweep[{r}].step[{s}]"),
                        with_access(body),
                    )
                    .stage(GB2BD)
                    .cost(cost, bytes)
                    .footprint(fp),
                );
                g.succeed(t, &band_producers(feed, &cols));
                let here = |rr: usize, ss: usize| fp_first[rr] + ss;
                for (pr, ps) in fine_preds_lag(n, pass, r, s, lag).into_iter().flatten() {
                    g.edge(ids[here(pr, ps)], t);
                }
                for (q, &earlier) in passes[..p].iter().enumerate() {
                    if let Some((er, es)) = pass_pred(n, earlier, pass, r, s) {
                        g.edge(ids[first[q][er] + es], t);
                    }
                }
                ids.push(t);
            }
        }
        first.push(fp_first);
    }
    Chase { ids, store }
}

/// The stage from its chase tasks on the working-precision `band`.
fn finish<T: Scalar>(
    g: &TaskGraph<'static>,
    band: Arc<SharedUpperBand<T>>,
    feed: &[(Range<usize>, TaskId)],
    chase: Chase<T>,
    reduction: Option<Reduction>,
) -> Gb2bdStage<T> {
    let sub = subgraph_of(g, &chase.ids);
    let mut all_done = sub.exits.clone();
    all_done.extend(feed.iter().map(|&(_, t)| t));
    // Every chase task precedes an exit (they were added in one run).
    let reflectors = chase.store.map(|store| Gb2bdReflectorsHandle {
        store,
        done: sub.exits.clone(),
        reduction,
    });
    Gb2bdStage {
        sub,
        bidiagonal: Bidiagonal {
            band,
            all_done,
            reduction,
        },
        reflectors,
    }
}

/// The grouped grain of [`gb2bd_with()`].
fn gb2bd_grouped<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: UpperBandHandle<T>,
    group: usize,
    chunk: usize,
    keep: bool,
) -> Result<Gb2bdStage<T>> {
    check_owned(g, "the band", band.feed.iter().map(|(_, t)| t))?;
    if group == 0 || chunk == 0 {
        return Err(crate::Error::InvalidArgument(format!(
            "gb2bd: groups of {group} sweeps x {chunk} steps"
        )));
    }
    let UpperBandHandle {
        band,
        passes,
        feed,
        reduction,
        ..
    } = band;
    let chase = chase_grouped(g, &band, &passes, &feed, group, chunk, keep);
    Ok(finish(g, band, &feed, chase, reduction))
}

/// The grouped chase tasks of [`gb2bd_grouped()`] on any [`ChaseBand`]
/// (`group`, `chunk` positive).
///
/// Explicit edges, as at the fine grain: a super-task's footprint is the
/// bounding box of its steps' windows, wider than what it touches, and the
/// edges derived from the boxes were 8,823 (rules: 1,518) with vectors and
/// 35,403 (rules: 20,106) values only for the chase alone at n = 1000,
/// bandwidth 32, groups of 4 sweeps by 8 steps.
pub(super) fn chase_grouped<B: ChaseBand>(
    g: &mut TaskGraph<'static>,
    band: &Arc<B>,
    passes: &[Pass],
    feed: &[(Range<usize>, TaskId)],
    group: usize,
    chunk: usize,
    keep: bool,
) -> Chase<B::C> {
    let n = band.n();
    let bid = band.id();
    let store = keep.then(|| Arc::new(SharedGb2bdReflectors::new(Gb2bdReflectors::new(n, passes))));
    let groupings: Vec<Arc<PassGrouping>> = passes
        .iter()
        .map(|&pass| Arc::new(PassGrouping::new(n, pass, group, chunk)))
        .collect();
    let mut ids: Vec<TaskId> = Vec::new();
    // first[p][g]: index in `ids` of super-task (p, g, 0).
    let mut first: Vec<Vec<usize>> = Vec::with_capacity(passes.len());
    for (p, &pass) in passes.iter().enumerate() {
        let grouping = &groupings[p];
        let (b, d) = (pass.b, pass.d());
        let step_cost = (4 * (d + 1) * (2 * b + d)) as f64;
        let step_bytes = (B::ENTRY * (d + 1) * (2 * b + d)) as f64;
        let mut fp_first = Vec::with_capacity(grouping.num_groups());
        for gi in 0..grouping.num_groups() {
            fp_first.push(ids.len());
            for c in 0..grouping.num_chunks(gi) {
                // One box per super-task: boxes of super-tasks the grouped DAG
                // leaves unordered are disjoint (tested in linalg::band::gb2bd).
                let window = grouping.footprint(gi, c);
                let count = grouping.tasks(gi, c).count();
                let mut fp = Footprint::new();
                if let Some((rows, cols)) = &window {
                    fp = fp.write(Region::new(bid, rows.clone(), cols.clone()));
                }
                if let Some(st) = &store {
                    for (r, s) in grouping.tasks(gi, c) {
                        for (m, rows, cols) in st.task_regions(p, r, s) {
                            fp = fp.write(Region::new(m, rows, cols));
                        }
                    }
                }
                let body = {
                    let (band, store, grouping) = (band.clone(), store.clone(), grouping.clone());
                    let window = window.clone();
                    move |acc: &Access<'_>| {
                        let Some((rows, cols)) = window else {
                            return Ok(());
                        };
                        band.chase(acc, rows, cols, &mut |view| {
                            for (r, s) in grouping.tasks(gi, c) {
                                let out = store.as_ref().map(|st| st.slot_mut(acc, p, r, s));
                                chase_step(view, pass, r, s, out);
                            }
                        });
                        Ok(())
                    }
                };
                let t = g.add(
                    Task::new(
                        format!("gb2bd.pass[{p}].group[{gi}].chunk[{c}]"),
                        with_access(body),
                    )
                    .stage(GB2BD)
                    .cost(step_cost * count as f64, step_bytes * count as f64)
                    .footprint(fp),
                );
                if let Some((_, cols)) = &window {
                    g.succeed(t, &band_producers(feed, cols));
                }
                for (pg, pc) in grouping.preds(gi, c).into_iter().flatten() {
                    g.edge(ids[fp_first[pg] + pc], t);
                }
                for (q, earlier) in groupings[..p].iter().enumerate() {
                    for (qg, qc) in cross_pass_preds(earlier, grouping, gi, c) {
                        g.edge(ids[first[q][qg] + qc], t);
                    }
                }
                ids.push(t);
            }
        }
        first.push(fp_first);
    }
    Chase { ids, store }
}

/// The tasks of `feed` (contiguous ascending column blocks) that write band
/// columns overlapping `cols`.
pub(super) fn band_producers(feed: &[(Range<usize>, TaskId)], cols: &Range<usize>) -> Vec<TaskId> {
    let lo = feed.partition_point(|(c, _)| c.end <= cols.start);
    feed[lo..]
        .iter()
        .take_while(|(c, _)| c.start < cols.end)
        .map(|&(_, t)| t)
        .collect()
}
