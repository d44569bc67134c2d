//! The dense SVD as one task graph: ge2gb (dense -> upper band) -> gb2bd
//! (band -> bidiagonal, bandwidth-tiled bulge chasing) -> singular values of
//! the bidiagonal. One builder file per stage, named for its LAPACK
//! counterpart; each stage takes the typed output of the stage it consumes
//! and adds the edges that order it after its producers (`docs/ARCHITECTURE.md`).
//!
//! Singular values only ([`SvdJob::Values`]) come from dqds on the bidiagonal
//! ([`dqds`], LAPACK `dlasq1`-class, high relative accuracy). With vectors
//! ([`SvdJob::Vectors`], LAPACK `dgesdd`-class) both reductions keep their
//! reflectors, the bidiagonal is solved by divide and conquer ([`bdsdc()`]),
//! and `U = Q1_U Q2_U U_bd`, `V = Q1_V Q2_V V_bd` are formed by column-block
//! tasks; the `U` chain and the `V` chain are independent and run
//! concurrently.
//!
//! ```
//! use eigenflow::pipeline::{svd, SvdJob, SvdOptions};
//! use eigenflow::runtime::Runtime;
//! let a = faer::Mat::<f64>::from_fn(120, 80, |i, j| 1.0 / (1 + i + j) as f64);
//! let rt = Runtime::builder().threads(2).build();
//! let s = svd(a.as_ref(), SvdJob::Values, &SvdOptions::auto(), &rt).unwrap();
//! assert_eq!(s.values.len(), 80);
//! assert!(s.values.windows(2).all(|w| w[0] >= w[1]));
//! ```
//!
//! The same pipeline by hand, stage by stage:
//!
//! ```
//! use eigenflow::graph::TaskGraph;
//! use eigenflow::pipeline::svd::{gb2bd, ge2gb, singular_values};
//! use eigenflow::runtime::Runtime;
//! let a = eigenflow::gallery::random_gaussian::<f64>(70, 50, 1);
//! let mut g = TaskGraph::new();
//! let s1 = ge2gb(&mut g, a, 8, 16, 3)?;
//! let s2 = gb2bd(&mut g, s1.band)?;
//! let values = singular_values(&mut g, s2.bidiagonal)?;
//! g.check_races()?;
//! Runtime::builder().threads(2).build().run(g)?;
//! assert_eq!(values.get()?.len(), 50);
//! # Ok::<(), eigenflow::Error>(())
//! ```

mod back_transform;
mod bdsdc;
mod direct;
pub mod dqds;
mod gb2bd;
mod gb2bd_half;
mod ge2gb;
mod geqrf;
pub mod hybrid;
mod memory;
mod options;
mod reflectors;
mod select;
#[cfg(test)]
mod tests;

use crate::pipeline::task::FinalValues;
pub use crate::pipeline::task::Slot;
pub use back_transform::{
    back_transform_q1u, back_transform_q1v, back_transform_q2u, back_transform_q2v, Q2Kernel, Q1U,
    Q1V, Q2U, Q2V,
};
pub use bdsdc::{bdsdc, BdsdcStage};
pub use direct::memory_bytes as one_stage_memory_bytes;
pub use dqds::singular_values;
pub use gb2bd::{gb2bd, gb2bd_with, gb2bd_with_reflectors, Bidiagonal, Gb2bdStage};
pub use ge2gb::{ge2gb, Ge2gbStage, UpperBandHandle};
pub use geqrf::{geqrf, GeqrfStage, RFactor, GEQRF};
pub use memory::{memory_bytes, task_count};
pub use options::{
    BandPrecision, SvdOptions, ONE_STAGE_BELOW_VALUES, ONE_STAGE_BELOW_VECTORS,
    ONE_STAGE_BELOW_VECTORS_F64,
};
pub use reflectors::{
    Gb2bdReflectorsHandle, Ge2gbReflectors, Q1uReflectors, Q1vReflectors, Q2uReflectors,
    Q2vReflectors,
};
pub use select::{select_bidiagonal, SvdSelectStage, SvdSelection};

use super::scale::{safe_range_factor, selection_range_factor};
use crate::graph::{TaskGraph, TaskId};
use crate::pipeline::columns::{basis, ColumnBlocks, VectorsResult};
use crate::runtime::{RunReport, Runtime};
use crate::{Error, Result, Scalar};
use faer::{Mat, MatRef};

/// Stage name of the dense-to-band reduction.
pub const GE2GB: &str = "ge2gb";
/// Stage name of the band-to-bidiagonal bulge chasing.
pub const GB2BD: &str = "gb2bd";
/// Stage name of the bidiagonal singular-value solver (dqds for values, the
/// divide and conquer of LAPACK `dbdsdc` with vectors, or a selection's
/// bisection), named after its file `bdsdc.rs`.
pub const BDSDC: &str = "bdsdc";

/// What to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvdJob {
    /// Singular values only.
    Values,
    /// Singular values and the thin singular vectors `U` (`m x k`) and `V^T`
    /// (`k x n`), `k = min(m, n)`.
    Vectors,
}

/// Result of [`svd`]: `A = U diag(values) V^T` with the thin factors.
#[derive(Debug)]
#[non_exhaustive]
pub struct SvdOutput<T> {
    /// Singular values, descending (`k = min(m, n)` of them).
    pub values: Vec<T>,
    /// `U` (`m x k`, orthonormal columns; column `j` belongs to `values[j]`),
    /// for [`SvdJob::Vectors`].
    pub u: Option<Mat<T>>,
    /// `V^T` (`k x n`, orthonormal rows; row `j` belongs to `values[j]`), for
    /// [`SvdJob::Vectors`]: numpy's convention, so `u * diag(s) * vt`
    /// reconstructs `a`.
    pub vt: Option<Mat<T>>,
    /// The run's timings (per task and per stage).
    pub report: RunReport,
}

/// The graph of one SVD and where its results land.
pub struct SvdGraph<T> {
    /// The task graph; run it with any [`Runtime`].
    pub graph: TaskGraph<'static>,
    results: SvdValues<T>,
}

impl<T: Scalar> SvdGraph<T> {
    /// Splits into the graph (to run) and the handle its results land in.
    pub fn into_parts(self) -> (TaskGraph<'static>, SvdValues<T>) {
        (self.graph, self.results)
    }

    /// Runs the graph on `rt` and takes the results out.
    pub(crate) fn run_on(self, rt: &Runtime) -> Result<SvdOutput<T>> {
        let report = rt.run(self.graph)?;
        let (values, u, vt) = self.results.into_results()?;
        Ok(SvdOutput {
            values,
            u,
            vt,
            report,
        })
    }

    /// The graph `g` closed by an `svd.complete` task after `done` (every
    /// result task) that unscales the values by `scale` and marks the
    /// results complete; `transposed` when `g` factored the transpose.
    fn finish(
        mut g: TaskGraph<'static>,
        done: &[crate::graph::TaskId],
        values: Slot<T>,
        vectors: Option<(VectorsResult<T>, VectorsResult<T>)>,
        (scale, transposed): (T, bool),
    ) -> Self {
        // The stage of the last results it waits for (as the EVD's
        // `evd.complete`), not `Task::new`'s "default", which would show as a
        // stage of its own in the report and the trace.
        let stage = if vectors.is_some() {
            back_transform::Q1V
        } else {
            BDSDC
        };
        let values = FinalValues::after(&mut g, "svd.complete", stage, done, values, scale);
        SvdGraph {
            graph: g,
            results: SvdValues {
                values,
                vectors,
                transposed,
            },
        }
    }
}

/// Singular values (descending), thin `U` and `V^T`, as
/// [`SvdValues::into_results`] gives them.
pub type SvdFactors<T> = (Vec<T>, Option<Mat<T>>, Option<Mat<T>>);

/// Where the results of an [`SvdGraph`] land.
pub struct SvdValues<T> {
    values: FinalValues<T>,
    /// `U` and `V` of the working matrix (`a` or, for a wide `a`, its
    /// transpose), with vectors.
    vectors: Option<(VectorsResult<T>, VectorsResult<T>)>,
    /// The working matrix is `a^T`: its `U` is `a`'s `V` and conversely.
    transposed: bool,
}

impl<T: Scalar> SvdValues<T> {
    /// Singular values, descending and unscaled, once the graph ran
    /// successfully; [`Error::NotRun`] before that (or after a run that failed).
    pub fn collect(&self) -> Result<Vec<T>> {
        self.values.get()
    }

    /// Singular values (as [`SvdValues::collect`]) and, for
    /// [`SvdJob::Vectors`], the thin `U` (`m x k`) and `V^T` (`k x n`) of the
    /// input, once the graph ran successfully and was dropped;
    /// [`Error::NotRun`] before that.
    pub fn into_results(self) -> Result<SvdFactors<T>> {
        let values = self.collect()?;
        let Some((mut u, mut v)) = self.vectors else {
            return Ok((values, None, None));
        };
        let (u, v) = (u.get()?, v.get()?);
        // a = U S V^T; for a wide a the graph factored a^T = U' S V'^T, so
        // U = V' and V^T = U'^T.
        let (u, vt) = if self.transposed {
            (v, u.transpose().to_owned())
        } else {
            (u, v.transpose().to_owned())
        };
        Ok((values, Some(u), Some(vt)))
    }
}

/// The working copy: `a` itself if tall or square, its transpose if wide (the
/// singular values are the same), checked for non-finite entries (reported at
/// their position in `a`) and scaled into the safe range; for a selection
/// (`selective`), into the narrower range that inverse iteration needs, as
/// LAPACK `dgesvdx` scales (see
/// [`crate::pipeline::scale::selection_range_factor`]). Returns the copy and
/// the factor it was scaled by.
fn prepare<T: Scalar>(a: MatRef<'_, T>, selective: bool) -> Result<(Mat<T>, T)> {
    crate::matrix::check_finite(a, false)?;
    let mut w = if a.nrows() >= a.ncols() {
        a.to_owned()
    } else {
        a.transpose().to_owned()
    };
    let mut anrm = T::zero();
    for j in 0..w.ncols() {
        for i in 0..w.nrows() {
            anrm = anrm.max(w[(i, j)].abs());
        }
    }
    let scale = if selective {
        selection_range_factor(anrm)
    } else {
        safe_range_factor(anrm)
    };
    if scale != T::one() {
        for j in 0..w.ncols() {
            for i in 0..w.nrows() {
                w[(i, j)] *= scale;
            }
        }
    }
    Ok((w, scale))
}

/// Builds the SVD graph of `a` (`a` itself is never modified: the graph works
/// on a copy, of the transpose for a wide `a`).
///
/// Errors: as [`svd`], without the run.
pub fn svd_graph<T: Scalar>(
    a: MatRef<'_, T>,
    job: SvdJob,
    opts: &SvdOptions,
) -> Result<SvdGraph<T>> {
    memory::admit::<T>(a.nrows(), a.ncols(), job, opts)?;
    let half = opts.band_precision != BandPrecision::Same;
    if half && job == SvdJob::Vectors {
        return Err(Error::InvalidArgument(
            "half-precision band storage is for singular values only".into(),
        ));
    }
    let sel = match &opts.selection {
        Some(s) => Some(s.indices(a.nrows().min(a.ncols()))?),
        None => None,
    };
    if half && sel.is_some() {
        return Err(Error::InvalidArgument(
            "half-precision band storage is not combined with a selection".into(),
        ));
    }
    let transposed = a.nrows() < a.ncols();
    let (mut w, scale) = prepare(a, sel.is_some())?;
    let scale = gb2bd_half::fit_half_range(&mut w, scale, opts.band_precision)?;
    let n = w.ncols();
    let b = opts.bandwidth_for(n);
    let nb = opts.tile_for(n, b);
    let tw = opts.tile_width_for::<T>(b, job);
    let mut g = TaskGraph::new();
    // Tall: QR first, then the two-stage reduction of R (geqrf.rs).
    let (s1, q0) = if geqrf::use_qr(w.nrows(), n, opts.qr_ratio_for(job)) {
        let s0 = geqrf(&mut g, w, b, nb)?;
        (s0.r.ge2gb(&mut g, b, nb, tw)?, Some(s0.reflectors))
    } else {
        (ge2gb(&mut g, w, b, nb, tw)?, None)
    };
    let (values, vectors, last) = match (job, sel) {
        (SvdJob::Values, Some(sel)) => {
            let s2 = gb2bd_with(&mut g, s1.band, opts.grain(), false)?;
            let st = select_bidiagonal(&mut g, s2.bidiagonal, sel, false, 1)?;
            let last = vec![st.values.task()];
            (st.values, None, last)
        }
        (SvdJob::Vectors, Some(sel)) => {
            let q1 = s1.reflectors.split();
            let s2 = gb2bd_with(&mut g, s1.band, opts.grain(), true)?;
            let q2 = q2_of(s2.reflectors)?;
            let cb = select::col_block(opts, n, sel.len());
            let st = select_bidiagonal(&mut g, s2.bidiagonal, sel, true, cb)?;
            let bd = st
                .vectors
                .ok_or_else(|| Error::InvalidArgument("selection kept no vectors".into()))?;
            let group = opts.q2_kernel();
            let first = st.values.task();
            let (vectors, last) = add_back_transforms(&mut g, q1, q2, q0, bd, (group, cb), first)?;
            (st.values, Some(vectors), last)
        }
        (SvdJob::Values, None) => {
            let bidiagonal = if half {
                gb2bd_half::gb2bd_half(&mut g, s1.band, opts.grain(), opts.band_precision)?
            } else {
                gb2bd_with(&mut g, s1.band, opts.grain(), false)?.bidiagonal
            };
            let values = singular_values(&mut g, bidiagonal)?;
            let last = vec![values.task()];
            (values, None, last)
        }
        (SvdJob::Vectors, None) => {
            let q1 = s1.reflectors.split();
            let s2 = gb2bd_with(&mut g, s1.band, opts.grain(), true)?;
            let q2 = q2_of(s2.reflectors)?;
            let bd = bdsdc(&mut g, s2.bidiagonal, &opts.bdsdc_params())?;
            let (group, cb) = (opts.q2_kernel(), opts.col_block_for(n));
            let first = bd.values.task();
            let (vectors, last) =
                add_back_transforms(&mut g, q1, q2, q0, (bd.u, bd.v), (group, cb), first)?;
            (bd.values, Some(vectors), last)
        }
    };
    Ok(SvdGraph::finish(
        g,
        &last,
        values,
        vectors,
        (scale, transposed),
    ))
}

/// `U` and `V` of the working matrix.
type VectorPair<T> = (VectorsResult<T>, VectorsResult<T>);

/// The `Q2` reflectors of a stage 2 that kept them, split into the `U` and
/// `V` sides.
fn q2_of<T: Scalar>(
    q2: Option<Gb2bdReflectorsHandle<T>>,
) -> Result<(Q2uReflectors<T>, Q2vReflectors<T>)> {
    Ok(q2
        .ok_or_else(|| Error::InvalidArgument("gb2bd kept no reflectors".into()))?
        .split())
}

/// Adds the back-transformations of the bidiagonal's vectors `(ubd, vbd)`
/// (LAPACK `dgesdd`'s `dormbr` calls), in column blocks of `cb`: the `U`
/// chain `U = Q1_U Q2_U U_bd` (then `Q0 [U; 0]` after a QR pre-reduction
/// `q0`), then the `V` chain `V = Q1_V Q2_V V_bd`. Returns the results and
/// the tasks the graph's completion waits for: `values` (the task of the
/// singular values), then every task of `U`, then of `V`.
fn add_back_transforms<T: Scalar>(
    g: &mut TaskGraph<'static>,
    (q1u, q1v): (Q1uReflectors<T>, Q1vReflectors<T>),
    (q2u, q2v): (Q2uReflectors<T>, Q2vReflectors<T>),
    q0: Option<Q1uReflectors<T, basis::Dense>>,
    (ubd, vbd): (
        ColumnBlocks<T, basis::Reduced>,
        ColumnBlocks<T, basis::Reduced>,
    ),
    (group, cb): (Q2Kernel, usize),
    values: TaskId,
) -> Result<(VectorPair<T>, Vec<TaskId>)> {
    let u = back_transform_q2u(g, q2u, ubd, group, cb)?;
    let mut u = back_transform_q1u(g, q1u, u, cb)?;
    if let Some(q0) = q0 {
        u = back_transform_q1u(g, q0, u, cb)?;
    }
    let v = back_transform_q2v(g, q2v, vbd, group, cb)?;
    let v = back_transform_q1v(g, q1v, v, cb)?;
    let mut last = vec![values];
    last.extend(u.tasks().chain(v.tasks()).copied());
    Ok(((u.into_result(), v.into_result()), last))
}

/// The singular values of `a` (`m x n`, any shape) and, for
/// [`SvdJob::Vectors`], its thin singular vectors, by the two-stage
/// reduction run as one task graph on `rt`, or below the options' crossover
/// ([`SvdOptions::one_stage_for`]) by the one-stage reduction (`dgesdd`'s
/// sequence, its large parts split in two tasks on `rt`); `a` is not
/// modified. A wide `a` is reduced through (a copy of) its transpose.
///
/// ```
/// use eigenflow::pipeline::{svd, SvdJob, SvdOptions};
/// use eigenflow::runtime::Runtime;
/// let a = faer::Mat::<f64>::from_fn(50, 70, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
/// let rt = Runtime::builder().threads(2).build();
/// let r = svd(a.as_ref(), SvdJob::Vectors, &SvdOptions::auto(), &rt).unwrap();
/// let (u, vt) = (r.u.unwrap(), r.vt.unwrap());
/// assert_eq!((u.nrows(), u.ncols(), vt.nrows(), vt.ncols()), (50, 50, 50, 70));
/// let s = faer::Mat::<f64>::from_fn(50, 50, |i, j| if i == j { r.values[i] } else { 0.0 });
/// let err = (&u * &s * &vt - &a).norm_max();
/// assert!(err < 1e-10 * a.norm_max());
/// ```
///
/// Errors: [`Error::OutOfMemory`] when the run does not fit in the
/// memory available (checked before anything is allocated, see
/// [`memory_bytes`]), [`Error::NonFinite`] naming the first non-finite entry
/// (column by column), and [`Error::NoConvergence`] if the bidiagonal solver
/// does not converge.
pub fn svd<T: Scalar>(
    a: MatRef<'_, T>,
    job: SvdJob,
    opts: &SvdOptions,
    rt: &Runtime,
) -> Result<SvdOutput<T>> {
    rt.check_threads()?;
    if opts.one_stage_for::<T>(a.nrows(), a.ncols(), job) {
        direct::admit::<T>(a.nrows(), a.ncols(), job, opts, rt.threads())?;
        return direct::run(a, job, opts, rt);
    }
    svd_graph(a, job, opts)?.run_on(rt)
}

/// Seconds per stage of a finished SVD run, in pipeline order, for the
/// stages that ran: ge2gb, gb2bd, then bdsvd (dqds, or the divide and
/// conquer with vectors) and with vectors q2u, q1u, q2v, q1v; each the span
/// from its first task's start to its last task's end (spans may overlap).
pub fn stage_seconds(report: &RunReport) -> Vec<(&'static str, f64)> {
    [GEQRF, GE2GB, GB2BD, BDSDC, Q2U, Q1U, Q2V, Q1V]
        .into_iter()
        .map(|s| (s, report.stage_span(s).as_secs_f64()))
        .filter(|&(s, t)| t > 0.0 || [GE2GB, GB2BD].contains(&s))
        .collect()
}
