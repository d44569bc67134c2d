//! The symmetric eigendecomposition as one task graph: sy2sb (dense -> band)
//! -> sb2st (band -> tridiagonal) -> sterf (values) or stedc (divide and
//! conquer) -> Q2 and Q1 back-transformations. One builder file per stage, named
//! for its LAPACK counterpart; each stage takes the typed output of the stage it
//! consumes and adds the edges that order it after its producers.
//!
//! ```
//! use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
//! use eigenflow::runtime::Runtime;
//! let a = faer::Mat::<f64>::from_fn(100, 100, |i, j| 1.0 / (1 + i + j) as f64);
//! let rt = Runtime::builder().threads(2).build();
//! let eig = eigh(a.as_ref(), EvdJob::Values, &EvdOptions::default(), &rt).unwrap();
//! assert!(eig.values.windows(2).all(|w| w[0] <= w[1]));
//! ```
//!
//! The same pipeline by hand, stage by stage:
//!
//! ```
//! use eigenflow::graph::TaskGraph;
//! use eigenflow::linalg::tridiagonal::stedc::DcParams;
//! use eigenflow::pipeline::evd::{back_transform_q1, back_transform_q2, sb2st, stedc, sy2sb, Sb2stGrain};
//! use eigenflow::runtime::Runtime;
//! let n = 64;
//! let a = eigenflow::gallery::random_symmetric_uniform::<f64>(n, 1);
//! let mut g = TaskGraph::new();
//! let s1 = sy2sb(&mut g, a.clone(), 8, 16)?;
//! let s2 = sb2st(&mut g, s1.band, Sb2stGrain::Fine, true)?;
//! let dc = stedc(&mut g, s2.tridiagonal, &DcParams::default(), 1.0)?;
//! let z = back_transform_q2(&mut g, s2.reflectors.unwrap(), dc.vectors, 4, 32)?;
//! let v = back_transform_q1(&mut g, s1.reflectors, z, 32)?;
//! let values = dc.values;
//! let mut vectors = v.into_result(); // only vectors of the input have a result
//! g.check_races()?;
//! Runtime::builder().threads(2).build().run(g)?;
//! let (lambda, v) = (values.get()?, vectors.get()?); // after the run only
//! let av = &a * v.col(0);
//! assert!((0..n).all(|i| (av[i] - lambda[0] * v[(i, 0)]).abs() < 1e-12));
//! # Ok::<(), eigenflow::Error>(())
//! ```

mod back_transform;
mod direct;
pub use direct::memory_bytes as one_stage_memory_bytes;
pub(crate) use direct::solve_serial;
pub mod hybrid;
mod memory;
mod options;
pub mod out_of_core;
mod sb2st;
mod select;
mod select_plan;
pub(crate) mod side;
mod stedc;
mod sterf;
mod sy2sb;
#[cfg(test)]
mod tests;

pub use crate::pipeline::columns::{ColumnBlocks, Reduction, VectorsResult};
pub use crate::pipeline::task::Slot;
pub use back_transform::{back_transform_q1, back_transform_q2};
pub use memory::{largest_fitting, memory_bytes, task_count};
pub use options::{
    one_stage_below_auto, ChaseGrain, EvdOptions, ONE_STAGE_BELOW_VALUES,
    ONE_STAGE_BELOW_VALUES_F32, ONE_STAGE_BELOW_VECTORS, ONE_STAGE_BELOW_VECTORS_IN_PLACE_Q2,
    VALUES_DC_FROM,
};
pub use sb2st::{sb2st, Q2Reflectors, Sb2stGrain, Sb2stStage, Tridiagonal};
pub use select::{select, SelectStage, Selection, SELECT};
pub use select_plan::{one_stage_below_selected, ONE_STAGE_BELOW_SELECTED_VECTORS};
pub use stedc::{basis, dc_scale, stedc, Eigenvectors, StedcStage};
pub use sterf::{stedc_values, sterf};
pub use sy2sb::{sy2sb, Band, Sy2sbReflectors, Sy2sbStage};

use crate::graph::{TaskGraph, TaskId};
use crate::linalg::tridiagonal::stedc::DcParams;
use crate::matrix::SharedMatrix;
use crate::runtime::{RunOptions, RunReport, Runtime};
use crate::{Error, Result, Scalar};
use faer::{Mat, MatRef};
use memory::{admit, check_selection, check_square};
use std::sync::Arc;

/// Stage name of the dense-to-band reduction.
pub const SY2SB: &str = "sy2sb";
/// Stage name of the bulge chasing.
pub const SB2ST: &str = "sb2st";
/// Stage name of the values-only tridiagonal eigensolver (LAPACK `dsterf`, or
/// the values-only divide and conquer), named after its file `sterf.rs`.
pub const STERF: &str = "sterf";
/// Stage name of the tridiagonal divide and conquer with vectors (LAPACK
/// `dstedc`), named after its file `stedc.rs`.
pub const STEDC: &str = "stedc";
/// Stage name of the Q2 back-transformation.
pub const Q2: &str = "q2";
/// Stage name of the Q1 back-transformation.
pub const Q1: &str = "q1";
// The bisection tasks of a selection run under STERF, its inverse
// iteration under SELECT.

/// What to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvdJob {
    /// Eigenvalues only.
    Values,
    /// Eigenvalues and eigenvectors.
    Vectors,
}

/// Result of [`eigh`].
#[derive(Debug)]
#[non_exhaustive]
pub struct SymmetricEigen<T> {
    /// Eigenvalues, ascending.
    pub values: Vec<T>,
    /// Eigenvectors (column j belongs to `values[j]`), for [`EvdJob::Vectors`].
    pub vectors: Option<Mat<T>>,
    /// The run's timings (per task and per stage).
    pub report: RunReport,
}

/// The graph of one EVD and where its results land.
pub struct EvdGraph<T> {
    /// The task graph; run it with any [`Runtime`].
    pub graph: TaskGraph<'static>,
    results: EvdValues<T>,
}

impl<T: Scalar> EvdGraph<T> {
    /// Splits into the graph (to run) and the handle its results land in.
    pub fn into_parts(self) -> (TaskGraph<'static>, EvdValues<T>) {
        (self.graph, self.results)
    }

    /// Runs the graph on `rt` under `run` and takes the results out.
    pub(crate) fn run_on(self, rt: &Runtime, run: &RunOptions) -> Result<SymmetricEigen<T>> {
        let report = rt.run_with(self.graph, run)?;
        let (values, vectors) = self.results.into_results()?;
        Ok(SymmetricEigen {
            values,
            vectors,
            report,
        })
    }
}

/// Where the results of an [`EvdGraph`] land.
pub struct EvdValues<T> {
    values: FinalValues<T>,
    vectors: Option<Arc<SharedMatrix<T>>>,
}

impl<T: Scalar> EvdValues<T> {
    /// The shared matrix the eigenvectors land in (`None` for values only),
    /// for stages appended after the EVD (the generalized problem's
    /// back-substitution).
    pub(crate) fn vectors_matrix(&self) -> Option<&Arc<SharedMatrix<T>>> {
        self.vectors.as_ref()
    }

    /// The EVD's completion task, which follows every task writing a result
    /// (the eigenvalues and every column block of the eigenvectors): stages
    /// appended after the EVD order themselves after it.
    pub(crate) fn complete_task(&self) -> TaskId {
        self.values.task()
    }

    /// Eigenvalues, ascending and unscaled, once the graph ran successfully;
    /// [`Error::NotRun`] before that (or after a run that failed).
    pub fn collect(&self) -> Result<Vec<T>> {
        self.values.get()
    }

    /// Eigenvalues and, for [`EvdJob::Vectors`], the eigenvectors, once the
    /// graph ran successfully and was dropped ([`Runtime::run`] drops it);
    /// [`Error::NotRun`] otherwise.
    pub fn into_results(self) -> Result<(Vec<T>, Option<Mat<T>>)> {
        let values = self.collect()?;
        let vectors = match self.vectors {
            Some(z) => {
                // The completion flag above says the run succeeded.
                let mut z = VectorsResult::of(z, None).get()?;
                // A value-range selection allocates up to n columns; keep those
                // of the eigenvalues found.
                if z.ncols() > values.len() {
                    let n = z.nrows();
                    z.truncate(n, values.len());
                }
                Some(z)
            }
            None => None,
        };
        Ok((values, vectors))
    }
}

/// Column `j` of the owned `a` as a slice.
fn lower_col<T>(a: MatRef<'_, T>, j: usize) -> &[T] {
    a.col(j).try_as_col_major().expect("owned").as_slice()
}

/// Checks an owned input and scales it in place into the safe range like LAPACK
/// `dsyevd`: by `rmin / anrm` when `0 < anrm < rmin`, by `rmax / anrm` when
/// `anrm > rmax`, with `rmin = sqrt(safmin / eps)`, `rmax = sqrt(eps / safmin)`
/// and `anrm` the largest magnitude in the lower triangle; for a selection
/// (`selective`), into the narrower range of `dsyevx`
/// ([`crate::pipeline::scale::selection_range_factor`]), which inverse
/// iteration needs. Returns the factor and the largest magnitude after
/// scaling.
fn prepare<T: Scalar>(a: &mut Mat<T>, selective: bool) -> Result<(T, T)> {
    check_square(a.nrows(), a.ncols())?;
    let n = a.nrows();
    // One pass over the lower triangle's column slices (the working copy is
    // owned, so contiguous): the largest magnitude and whether all are finite.
    let (mut anrm, mut finite) = (T::zero(), true);
    for j in 0..n {
        let (m, f) = crate::matrix::scan::max_abs_finite(&lower_col(a.as_ref(), j)[j..]);
        anrm = anrm.max(m);
        finite &= f;
    }
    if !finite {
        crate::matrix::check_finite(a.as_ref(), true)?;
    }
    let scale = if selective {
        crate::pipeline::scale::selection_range_factor(anrm)
    } else {
        crate::pipeline::scale::safe_range_factor(anrm)
    };
    if scale == T::one() {
        return Ok((scale, anrm));
    }
    for j in 0..n {
        let c = a.col_mut(j).try_as_col_major_mut().expect("owned");
        for x in &mut c.as_slice_mut()[j..] {
            *x *= scale;
        }
    }
    Ok((scale, anrm * scale))
}

use crate::pipeline::task::FinalValues;

/// Builds the EVD graph of the symmetric matrix `a` (the triangle
/// [`EvdOptions::side`] is read; `a` itself is never modified: the graph works
/// on a copy).
///
/// Errors: as [`eigh`], without the run.
pub fn evd_graph<T: Scalar>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<EvdGraph<T>> {
    admit::<T>(a.nrows(), a.ncols(), job, opts, None, false)?;
    side::check_finite_side(a, opts.side)?;
    build(side::lower_copy(a, opts.side), job, opts)
}

/// Like [`evd_graph`], but takes the matrix by value and works in its storage
/// (no copy: the way to reach the largest n that fits in memory). With
/// [`Side::Upper`](faer::Side::Upper) the upper triangle is first mirrored into
/// the lower one in place.
pub fn evd_graph_owned<T: Scalar>(
    a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<EvdGraph<T>> {
    admit::<T>(a.nrows(), a.ncols(), job, opts, None, true)?;
    build(owned_lower(a, opts)?, job, opts)
}

/// The owned input with its [`EvdOptions::side`] triangle in the lower one
/// (checked finite first, so an error names the entry as the caller stored it).
fn owned_lower<T: Scalar>(mut a: Mat<T>, opts: &EvdOptions) -> Result<Mat<T>> {
    side::check_finite_side(a.as_ref(), opts.side)?;
    side::to_lower_in_place(a.as_mut(), opts.side);
    Ok(a)
}

/// The stage grain of the options.
fn grain(opts: &EvdOptions) -> Sb2stGrain {
    if opts.fine_stage2 {
        Sb2stGrain::Fine
    } else {
        Sb2stGrain::Grouped {
            sweeps: opts.sweep_group.max(1),
            steps: opts.step_chunk.max(1),
        }
    }
}

fn build<T: Scalar>(a: Mat<T>, job: EvdJob, opts: &EvdOptions) -> Result<EvdGraph<T>> {
    if let Some(sel) = &opts.selection {
        return select::build(a, job, opts, sel);
    }
    build_reduced(reduce_to_tridiagonal(a, job, opts)?, job, opts)
}

/// The EVD graph, built into `g`, of the symmetric matrix whose lower triangle
/// `a` will hold once the task `gate` has run (the generalized problem's `C`,
/// computed in the same graph; see `pipeline::sygv`): every task of the
/// reduction is ordered after `gate`. `anrm` estimates the largest magnitude
/// of `a` (for the divide and conquer's power-of-two scaling); `a` is not
/// scaled into the safe range, as [`prepare`] would, because its entries do
/// not exist yet.
pub(crate) fn build_after<T: Scalar>(
    g: TaskGraph<'static>,
    a: Arc<SharedMatrix<T>>,
    gate: TaskId,
    anrm: T,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<EvdGraph<T>> {
    let r = reduce_shared(g, a, Some(gate), (T::one(), anrm), job, opts)?;
    match &opts.selection {
        Some(sel) => select::build_reduced(r, job, opts, sel),
        None => build_reduced(r, job, opts),
    }
}

/// [`build`] from the reduction on, without a selection.
fn build_reduced<T: Scalar>(r: Reduced<T>, job: EvdJob, opts: &EvdOptions) -> Result<EvdGraph<T>> {
    let Reduced {
        g,
        scale,
        anrm,
        q1,
        s2,
        ..
    } = r;
    let q1 = move |g: &mut TaskGraph<'static>, z, col| back_transform_q1(g, q1, z, col);
    solve_tridiagonal(g, s2, q1, (scale, anrm), job, opts)
}

/// The graph from stage 2's output on: the tridiagonal solver and, with
/// vectors, the Q2 back-transformation, then `q1` (given the graph, `Q2 Z`
/// and the column block; the CPU's tasks or the hybrid path's device task)
/// before the completion task. `(scale, anrm)` are [`prepare`]'s.
fn solve_tridiagonal<T: Scalar>(
    mut g: TaskGraph<'static>,
    s2: Sb2stStage<T>,
    q1: impl FnOnce(
        &mut TaskGraph<'static>,
        Eigenvectors<T, basis::Band>,
        usize,
    ) -> Result<Eigenvectors<T, basis::Dense>>,
    (scale, anrm): (T, T),
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<EvdGraph<T>> {
    let n = s2.tridiagonal.n();
    if job == EvdJob::Values {
        let values = if opts.values_by_dc(n) {
            stedc_values(&mut g, s2.tridiagonal, opts.leaf_size)?
        } else {
            sterf(&mut g, s2.tridiagonal)?
        };
        let last = [values.task()];
        return Ok(finish(g, &last, values, None, scale));
    }
    let params = DcParams {
        leaf_size: opts.leaf_size.max(1),
        col_tile: opts.dc_tile.max(1),
    };
    let dc = stedc(&mut g, s2.tridiagonal, &params, dc_scale(anrm))?;
    let refl = s2
        .reflectors
        .ok_or_else(|| Error::InvalidArgument("no reflectors".into()))?;
    let col = opts.col_block_for(n);
    let z = back_transform::back_transform_q2_windowed(
        &mut g,
        refl,
        dc.vectors,
        opts.q2_group.max(1),
        col,
        opts.q2_window_kib.saturating_mul(1024),
    )?;
    let z = q1(&mut g, z, col)?;
    let mut last: Vec<TaskId> = z.tasks().copied().collect();
    last.push(dc.values.task());
    Ok(finish(g, &last, dc.values, Some(z.z), scale))
}

/// The head every two-stage EVD graph shares: `a` checked and scaled
/// ([`prepare`]), reduced to a band (stage 1, [`sy2sb()`]) and the band to a
/// tridiagonal (stage 2, [`sb2st()`], keeping its reflectors when `job` wants
/// vectors).
struct Reduced<T> {
    g: TaskGraph<'static>,
    scale: T,
    anrm: T,
    /// The order of `a`.
    n: usize,
    /// Stage 1's reflectors, for the Q1 back-transformation.
    q1: Sy2sbReflectors<T>,
    /// Stage 2: the tridiagonal and, with vectors, its reflectors.
    s2: Sb2stStage<T>,
}

fn reduce_to_tridiagonal<T: Scalar>(
    mut a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<Reduced<T>> {
    let (scale, anrm) = prepare(&mut a, opts.selection.is_some())?;
    let n = a.nrows();
    let b = opts.bandwidth_for(n, job);
    let nb = opts.tile_for(n, b);
    let mut g = TaskGraph::new();
    let s1 = sy2sb(&mut g, a, b, nb)?;
    let s2 = sb2st(&mut g, s1.band, grain(opts), job == EvdJob::Vectors)?;
    Ok(Reduced {
        g,
        scale,
        anrm,
        n,
        q1: s1.reflectors,
        s2,
    })
}

/// [`reduce_to_tridiagonal`] on a shared matrix whose entries the task `gate`
/// (when given) finishes: the two stages are added to `g`, and each of their
/// tasks without a predecessor is ordered after `gate`.
fn reduce_shared<T: Scalar>(
    mut g: TaskGraph<'static>,
    a: Arc<SharedMatrix<T>>,
    gate: Option<TaskId>,
    (scale, anrm): (T, T),
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<Reduced<T>> {
    let n = a.nrows();
    let b = opts.bandwidth_for(n, job);
    let nb = opts.tile_for(n, b);
    let first = g.len();
    let s1 = sy2sb::sy2sb_shared(&mut g, a, b, nb);
    if let Some(gate) = gate {
        order_after(&mut g, gate, first);
    }
    let s2 = sb2st(&mut g, s1.band, grain(opts), job == EvdJob::Vectors)?;
    Ok(Reduced {
        g,
        scale,
        anrm,
        n,
        q1: s1.reflectors,
        s2,
    })
}

/// Orders after `gate` every task from index `first` on that has no
/// predecessor among the graph's edges (so, by the paths from them, every
/// task from `first` on).
fn order_after(g: &mut TaskGraph<'static>, gate: TaskId, first: usize) {
    let mut has_pred = vec![false; g.len().saturating_sub(first)];
    for (_, v) in g.edges() {
        if v >= first {
            has_pred[v - first] = true;
        }
    }
    let heads: Vec<TaskId> = (first..g.len())
        .filter(|&t| !has_pred[t - first])
        .filter_map(|t| g.task_id(t))
        .collect();
    g.precede(gate, &heads);
}

/// The tail every EVD graph shares: an `evd.complete` task after `last`
/// (every result task) that marks the results complete, and the graph with
/// the handle its results land in.
fn finish<T: Scalar>(
    mut g: TaskGraph<'static>,
    last: &[TaskId],
    values: Slot<T>,
    vectors: Option<Arc<SharedMatrix<T>>>,
    scale: T,
) -> EvdGraph<T> {
    let stage = if vectors.is_some() { Q1 } else { STERF };
    let values = FinalValues::after(&mut g, "evd.complete", stage, last, values, scale);
    EvdGraph {
        graph: g,
        results: EvdValues { values, vectors },
    }
}

/// The symmetric eigendecomposition of `a` (the triangle [`EvdOptions::side`]
/// is read, the lower one by default; the other is ignored) by the two-stage
/// reduction, run as one task graph on `rt`; below the crossover
/// [`EvdOptions::one_stage_below`] instead by the one-stage reduction, with no
/// graph: on the calling thread, its large GEMM-rich parts split in two fixed
/// halves run on `rt`'s threads (the same bits on any thread count; the report
/// then has no tasks). This is the
/// configurable form; [`crate::eigh`] is the one-call form on a default runtime.
///
/// Errors: [`Error::Shape`] for a non-square input, [`Error::NonFinite`] naming
/// the first non-finite entry of the triangle read, [`Error::OutOfMemory`] when
/// the run does not fit in the memory available (checked before anything is
/// allocated), [`Error::NoConvergence`] if the tridiagonal solver does not
/// converge, and [`Error::InvalidArgument`] for an [`EvdOptions::selection`]
/// that does not fit the order (`k > n`, a reversed or too long index range, a
/// NaN bound or `lo > hi`). With a selection, the eigenvalues and the `n x k`
/// eigenvectors are those selected (see [`Selection`]).
pub fn eigh<T: Scalar>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
) -> Result<SymmetricEigen<T>> {
    rt.check_threads()?;
    if one_stage::<T>(a.nrows(), a.ncols(), job, opts) {
        check_selection(a.nrows(), opts)?;
        direct::admit::<T>(a.nrows(), job, rt.threads())?;
        side::check_finite_side(a, opts.side)?;
        return direct::run(side::lower_copy(a, opts.side), job, opts, rt);
    }
    admit::<T>(a.nrows(), a.ncols(), job, opts, Some(rt.threads()), false)?;
    side::check_finite_side(a, opts.side)?;
    run(side::lower_copy(a, opts.side), job, opts, rt)
}

/// Whether [`eigh`]/[`eigh_owned`] take the one-stage path: a square input
/// below the options' crossover ([`EvdOptions::one_stage_for`]).
fn one_stage<T: Scalar>(m: usize, n: usize, job: EvdJob, opts: &EvdOptions) -> bool {
    m == n && opts.one_stage_for::<T>(n, job)
}

/// Like [`eigh`], consuming the matrix (no copy). On an error before the run
/// (shape, non-finite entry, memory), the matrix is dropped unchanged.
pub fn eigh_owned<T: Scalar>(
    a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
) -> Result<SymmetricEigen<T>> {
    rt.check_threads()?;
    if one_stage::<T>(a.nrows(), a.ncols(), job, opts) {
        check_selection(a.nrows(), opts)?;
        direct::admit::<T>(a.nrows(), job, rt.threads())?;
        return direct::run(owned_lower(a, opts)?, job, opts, rt);
    }
    admit::<T>(a.nrows(), a.ncols(), job, opts, Some(rt.threads()), true)?;
    run(owned_lower(a, opts)?, job, opts, rt)
}

fn run<T: Scalar>(
    a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
) -> Result<SymmetricEigen<T>> {
    build(a, job, opts)?.run_on(rt, &RunOptions::new())
}

/// Seconds of the two-stage reduction (sy2sb and sb2st overlap in time).
pub fn reduction_seconds(report: &RunReport) -> f64 {
    report.span_of(&[SY2SB, SB2ST]).as_secs_f64()
}

/// Seconds per stage of a finished EVD run: sy2sb, sb2st (band extraction
/// included), then tridiag (values) or dc, q2, q1 (vectors); each the span from its first task's start to its last
/// task's end.
pub fn stage_seconds(report: &RunReport) -> Vec<(&'static str, f64)> {
    [SY2SB, SB2ST, STERF, STEDC, SELECT, Q2, Q1]
        .into_iter()
        .map(|s| (s, report.stage_span(s).as_secs_f64()))
        .filter(|&(s, t)| t > 0.0 || [SY2SB, SB2ST].contains(&s))
        .collect()
}
