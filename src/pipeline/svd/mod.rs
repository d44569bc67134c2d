//! The dense SVD as one task graph: ge2gb (dense -> upper band) -> gb2bd
//! (band -> bidiagonal, bandwidth-tiled bulge chasing) -> singular values of
//! the bidiagonal. One builder file per stage, named for its LAPACK
//! counterpart; each stage takes the typed output of the stage it consumes
//! and adds the edges that order it after its producers (`docs/ARCHITECTURE.md`).
//!
//! Singular values only for now ([`SvdJob::Values`]); the bidiagonal's values
//! come from dqds ([`dqds`], LAPACK `dlasq1`-class, high relative accuracy).
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
#[cfg(test)]
mod bdsdc_tests;
#[cfg(test)]
mod bt_tests;
pub mod dqds;
mod gb2bd;
mod ge2gb;
mod memory;
mod options;
mod reflectors;
#[cfg(test)]
mod tests;

pub use crate::pipeline::task::Slot;
pub use back_transform::{
    back_transform_q1u, back_transform_q1v, back_transform_q2u, back_transform_q2v, Q1U, Q1V, Q2U,
    Q2V,
};
pub use bdsdc::{bdsdc, BdsdcStage};
pub use dqds::singular_values;
pub use gb2bd::{gb2bd, gb2bd_with_reflectors, Bidiagonal, Gb2bdStage};
pub use ge2gb::{ge2gb, Ge2gbStage, UpperBandHandle};
pub use memory::{memory_bytes, task_count};
pub use options::SvdOptions;
pub use reflectors::{
    Gb2bdReflectorsHandle, Ge2gbReflectors, Q1uReflectors, Q1vReflectors, Q2uReflectors,
    Q2vReflectors,
};

use super::scale::safe_range_factor;
use crate::graph::{Task, TaskGraph};
use crate::runtime::{RunReport, Runtime};
use crate::{Error, Result, Scalar};
use faer::{Mat, MatRef};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Stage name of the dense-to-band reduction.
pub const GE2GB: &str = "ge2gb";
/// Stage name of the band-to-bidiagonal bulge chasing.
pub const GB2BD: &str = "gb2bd";
/// Stage name of the bidiagonal singular-value solver.
pub const BDSVD: &str = "bdsvd";

/// What to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvdJob {
    /// Singular values only.
    Values,
    /// Singular values and vectors: **not implemented yet**; [`svd`] and
    /// [`svd_graph`] return [`Error::InvalidArgument`].
    Vectors,
}

/// Result of [`svd`]: `A = U diag(values) V^T` with the thin factors.
#[derive(Debug)]
#[non_exhaustive]
pub struct Svd<T> {
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
}

/// Where the results of an [`SvdGraph`] land.
pub struct SvdValues<T> {
    values: Slot<T>,
    /// Set by the graph's last task: every result is complete.
    complete: Arc<AtomicBool>,
    /// The input was multiplied by this before the reduction.
    scale: T,
}

impl<T: Scalar> SvdValues<T> {
    /// Singular values, descending and unscaled, once the graph ran
    /// successfully; [`Error::NotRun`] before that (or after a run that failed).
    pub fn collect(&self) -> Result<Vec<T>> {
        if !self.complete.load(Ordering::Acquire) {
            return Err(Error::NotRun);
        }
        Ok(self
            .values
            .get()?
            .into_iter()
            .map(|x| x / self.scale)
            .collect())
    }
}

fn check_job(job: SvdJob) -> Result<()> {
    match job {
        SvdJob::Values => Ok(()),
        SvdJob::Vectors => Err(Error::InvalidArgument(
            "singular vectors are not implemented yet".into(),
        )),
    }
}

/// The working copy: `a` itself if tall or square, its transpose if wide (the
/// singular values are the same), checked for non-finite entries (reported at
/// their position in `a`) and scaled into the safe range. Returns the copy and
/// the factor it was scaled by.
fn prepare<T: Scalar>(a: MatRef<'_, T>) -> Result<(Mat<T>, T)> {
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
    let scale = safe_range_factor(anrm);
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
    check_job(job)?;
    memory::admit::<T>(a.nrows(), a.ncols(), opts)?;
    let (w, scale) = prepare(a)?;
    let n = w.ncols();
    let b = opts.bandwidth_for(n);
    let nb = opts.tile_for(n, b);
    let tw = opts.tile_width_for::<T>(b);
    let mut g = TaskGraph::new();
    let s1 = ge2gb(&mut g, w, b, nb, tw)?;
    let s2 = gb2bd(&mut g, s1.band)?;
    let values = singular_values(&mut g, s2.bidiagonal)?;
    let complete = Arc::new(AtomicBool::new(false));
    let flag = complete.clone();
    let t = g.add(Task::new("svd.complete", move |_| {
        flag.store(true, Ordering::Release);
        Ok(())
    }));
    g.succeed(t, &[values.task()]);
    Ok(SvdGraph {
        graph: g,
        results: SvdValues {
            values,
            complete,
            scale,
        },
    })
}

/// The singular values of `a` (`m x n`, any shape) by the two-stage
/// reduction, run as one task graph on `rt`; `a` is not modified. A wide `a`
/// is reduced through (a copy of) its transpose.
///
/// Errors: [`Error::InvalidArgument`] for [`SvdJob::Vectors`] (not
/// implemented yet), [`Error::OutOfMemory`] when the run does not fit in the
/// memory available (checked before anything is allocated, see
/// [`memory_bytes`]), [`Error::NonFinite`] naming the first non-finite entry
/// (column by column), and [`Error::NoConvergence`] if the bidiagonal solver
/// does not converge.
pub fn svd<T: Scalar>(
    a: MatRef<'_, T>,
    job: SvdJob,
    opts: &SvdOptions,
    rt: &Runtime,
) -> Result<Svd<T>> {
    let (graph, results) = svd_graph(a, job, opts)?.into_parts();
    let report = rt.run(graph)?;
    let values = results.collect()?;
    Ok(Svd {
        values,
        u: None,
        vt: None,
        report,
    })
}
