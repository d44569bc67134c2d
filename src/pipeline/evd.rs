//! The symmetric eigendecomposition as one task graph:
//! sy2sb (dense -> band) -> sb2st (band -> tridiagonal) -> tridiagonal solver.
//!
//! ```
//! use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
//! use eigenflow::runtime::Runtime;
//! let a = faer::Mat::<f64>::from_fn(100, 100, |i, j| 1.0 / (1 + i + j) as f64);
//! let rt = Runtime::builder().threads(2).build();
//! let eig = eigh(a.as_ref(), EvdJob::Values, &EvdOptions::default(), &rt).unwrap();
//! assert!(eig.values.windows(2).all(|w| w[0] <= w[1]));
//! ```

use super::stages::{self, SB2ST, SY2SB, TRIDIAG};
use super::EvdOptions;
use crate::graph::TaskGraph;
use crate::matrix::SharedMatrix;
use crate::runtime::{RunReport, Runtime};
use crate::{Error, Result, Scalar};
use faer::{Mat, MatRef};
use parking_lot::Mutex;
use std::sync::Arc;

/// What to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvdJob {
    /// Eigenvalues only.
    Values,
}

/// Result of [`eigh`].
#[derive(Debug)]
pub struct SymmetricEigen<T> {
    /// Eigenvalues, ascending.
    pub values: Vec<T>,
    /// The run's timings (per task and per stage).
    pub report: RunReport,
}

/// The graph of one EVD and the slots its results land in.
pub struct EvdGraph<T> {
    /// The task graph; run it with any [`Runtime`].
    pub graph: TaskGraph<'static>,
    values: Arc<Mutex<Vec<T>>>,
    /// The LAPACK-style scale factor applied to the input (eigenvalues are
    /// divided by it on collection).
    scale: T,
}

impl<T: Scalar> EvdGraph<T> {
    /// Splits into the graph (to run) and the slot its eigenvalues land in.
    pub fn into_parts(self) -> (TaskGraph<'static>, EvdValues<T>) {
        (
            self.graph,
            EvdValues {
                values: self.values,
                scale: self.scale,
            },
        )
    }
}

/// Where the eigenvalues of an [`EvdGraph`] land.
pub struct EvdValues<T> {
    values: Arc<Mutex<Vec<T>>>,
    scale: T,
}

impl<T: Scalar> EvdValues<T> {
    /// Eigenvalues, ascending and unscaled; call after the graph ran successfully.
    pub fn collect(&self) -> Vec<T> {
        self.values.lock().iter().map(|&x| x / self.scale).collect()
    }
}

/// Checks an owned input and scales it in place into the safe range like LAPACK
/// `dsyevd`: by `rmin / anrm` when `0 < anrm < rmin`, by `rmax / anrm` when
/// `anrm > rmax`, with `rmin = sqrt(safmin / eps)`, `rmax = sqrt(eps / safmin)`
/// and `anrm` the largest magnitude in the lower triangle. Returns the factor.
fn prepare<T: Scalar>(a: &mut Mat<T>) -> Result<T> {
    let n = a.nrows();
    if a.ncols() != n {
        return Err(Error::Shape(format!(
            "symmetric eigendecomposition needs a square matrix, got {} x {}",
            a.nrows(),
            a.ncols()
        )));
    }
    crate::matrix::check_finite(a.as_ref(), true)?;
    let mut anrm = T::zero();
    for j in 0..n {
        for i in j..n {
            anrm = anrm.max(a[(i, j)].abs());
        }
    }
    let smlnum = T::SAFE_MIN / T::EPS;
    let (rmin, rmax) = (smlnum.sqrt(), (T::one() / smlnum).sqrt());
    let scale = if anrm > T::zero() && anrm < rmin {
        rmin / anrm
    } else if anrm > rmax {
        rmax / anrm
    } else {
        return Ok(T::one());
    };
    for j in 0..n {
        for i in j..n {
            a[(i, j)] *= scale;
        }
    }
    Ok(scale)
}

/// Bytes the EVD of order `n` allocates (the working matrix included), for
/// checking that a run fits before starting it.
pub fn memory_bytes<T: Scalar>(n: usize, job: EvdJob, opts: &EvdOptions) -> u64 {
    let EvdJob::Values = job;
    let b = opts.bandwidth_for(n) as u64;
    let n = n as u64;
    let words = n * n           // the working matrix
        + 4 * n * b             // V and X workspaces, two of each
        + n * b                 // T factors
        + 2 * b * n             // band with bulge room
        + 2 * n; // tridiagonal
    words * std::mem::size_of::<T>() as u64
}

/// Builds the EVD graph of the symmetric matrix `a` (lower triangle read; `a`
/// itself is never modified: the graph works on a copy).
pub fn evd_graph<T: Scalar>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<EvdGraph<T>> {
    check_square(a.nrows(), a.ncols())?;
    let copy = Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        if i >= j {
            a[(i, j)]
        } else {
            T::zero()
        }
    });
    evd_graph_owned(copy, job, opts)
}

fn check_square(m: usize, n: usize) -> Result<()> {
    if m == n {
        Ok(())
    } else {
        Err(Error::Shape(format!(
            "symmetric eigendecomposition needs a square matrix, got {m} x {n}"
        )))
    }
}

/// Like [`evd_graph`], but takes the matrix by value and works in its storage
/// (no copy: the way to reach the largest n that fits in memory).
pub fn evd_graph_owned<T: Scalar>(
    mut copy: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<EvdGraph<T>> {
    let EvdJob::Values = job;
    let scale = prepare(&mut copy)?;
    let n = copy.nrows();
    let b = opts.bandwidth_for(n);
    let nb = opts.tile_for(n, b);
    let mut g = TaskGraph::new();
    let s1 = stages::sy2sb(&mut g, Arc::new(SharedMatrix::new(copy)), b, nb);
    let (extract, band) = stages::extract_band(&mut g, s1.a.clone(), b);
    g.succeed(extract, &s1.sub.exits);
    let s2 = stages::sb2st(&mut g, band, b, opts, false);
    g.precede(extract, &s2.sub.entries);
    let (solve, values) = stages::tridiagonal_values(&mut g, s2.band.clone());
    if s2.sub.exits.is_empty() {
        g.edge(extract, solve);
    } else {
        g.succeed(solve, &s2.sub.exits);
    }
    Ok(EvdGraph {
        graph: g,
        values,
        scale,
    })
}

/// Eigenvalues of the symmetric matrix `a` (lower triangle read) by the
/// two-stage reduction, run as one task graph on `rt`.
///
/// Errors: [`Error::Shape`] for a non-square input, [`Error::NonFinite`] naming
/// the first non-finite entry of the lower triangle, and a task failure wrapping
/// [`Error::NoConvergence`] if the tridiagonal solver does not converge.
pub fn eigh<T: Scalar>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
) -> Result<SymmetricEigen<T>> {
    check_square(a.nrows(), a.ncols())?;
    let copy = Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        if i >= j {
            a[(i, j)]
        } else {
            T::zero()
        }
    });
    eigh_owned(copy, job, opts, rt)
}

/// Like [`eigh`], consuming the matrix (no copy).
pub fn eigh_owned<T: Scalar>(
    a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
) -> Result<SymmetricEigen<T>> {
    let (graph, slot) = evd_graph_owned(a, job, opts)?.into_parts();
    let report = rt.run(graph)?;
    let values = slot.collect();
    Ok(SymmetricEigen { values, report })
}

/// Seconds per stage of a finished EVD run: sy2sb, sb2st (band extraction
/// included), tridiag; each the span from its first task's start to its last
/// task's end.
pub fn stage_seconds(report: &RunReport) -> [(&'static str, f64); 3] {
    [SY2SB, SB2ST, TRIDIAG].map(|s| (s, report.stage_span(s).as_secs_f64()))
}
