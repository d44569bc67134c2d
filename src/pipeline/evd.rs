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
use super::vectors::{self, DC, Q1, Q2};
use super::EvdOptions;
use crate::graph::TaskGraph;
use crate::graph::TaskId;
use crate::linalg::dc::DcParams;
use crate::matrix::{SharedBand, SharedMatrix, SymBand};
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
    /// Eigenvalues and eigenvectors.
    Vectors,
}

/// Result of [`eigh`].
#[derive(Debug)]
pub struct SymmetricEigen<T> {
    /// Eigenvalues, ascending.
    pub values: Vec<T>,
    /// Eigenvectors (column j belongs to `values[j]`), for [`EvdJob::Vectors`].
    pub vectors: Option<Mat<T>>,
    /// The run's timings (per task and per stage).
    pub report: RunReport,
}

/// The graph of one EVD and the slots its results land in.
pub struct EvdGraph<T> {
    /// The task graph; run it with any [`Runtime`].
    pub graph: TaskGraph<'static>,
    values: Arc<Mutex<Vec<T>>>,
    vectors: Option<Arc<SharedMatrix<T>>>,
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
                vectors: self.vectors,
                scale: self.scale,
            },
        )
    }
}

/// Where the eigenvalues of an [`EvdGraph`] land.
pub struct EvdValues<T> {
    values: Arc<Mutex<Vec<T>>>,
    vectors: Option<Arc<SharedMatrix<T>>>,
    scale: T,
}

impl<T: Scalar> EvdValues<T> {
    /// Eigenvalues, ascending and unscaled; call after the graph ran successfully.
    pub fn collect(&self) -> Vec<T> {
        self.values.lock().iter().map(|&x| x / self.scale).collect()
    }

    /// Eigenvalues and, for [`EvdJob::Vectors`], the eigenvectors; call after the
    /// graph ran successfully (and was dropped, which `Runtime::run` does).
    pub fn into_results(self) -> (Vec<T>, Option<Mat<T>>) {
        let values = self.collect();
        let vectors = self.vectors.map(|z| {
            Arc::try_unwrap(z)
                .ok()
                .expect("the graph has been run and dropped")
                .into_inner()
        });
        (values, vectors)
    }
}

/// Checks an owned input and scales it in place into the safe range like LAPACK
/// `dsyevd`: by `rmin / anrm` when `0 < anrm < rmin`, by `rmax / anrm` when
/// `anrm > rmax`, with `rmin = sqrt(safmin / eps)`, `rmax = sqrt(eps / safmin)`
/// and `anrm` the largest magnitude in the lower triangle. Returns the factor
/// and the largest magnitude after scaling.
fn prepare<T: Scalar>(a: &mut Mat<T>) -> Result<(T, T)> {
    check_square(a.nrows(), a.ncols())?;
    let n = a.nrows();
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
        return Ok((T::one(), anrm));
    };
    for j in 0..n {
        for i in j..n {
            a[(i, j)] *= scale;
        }
    }
    Ok((scale, anrm * scale))
}

/// Bytes the EVD of order `n` allocates (the working matrix included) on
/// `threads` worker threads, for checking that a run fits before starting it.
/// Each thread may hold one back-transformation workspace at a time.
///
/// `None` when the figure does not fit in a `u64` (an absurd `n` or option):
/// such a run can never fit, and a wrapped figure would claim it does.
///
/// ```
/// use eigenflow::pipeline::evd::memory_bytes;
/// use eigenflow::pipeline::{EvdJob, EvdOptions};
/// let o = EvdOptions::default();
/// // n = 1000, b = 32: n^2 + 7 n b + 2 n = 1,226,000 words.
/// assert_eq!(memory_bytes::<f64>(1000, EvdJob::Values, &o, 2), Some(9_808_000));
/// assert_eq!(memory_bytes::<f32>(1000, EvdJob::Values, &o, 2), Some(4_904_000));
/// // With vectors (b = 64, 125 columns per block): 5,672,040 words.
/// assert_eq!(memory_bytes::<f64>(1000, EvdJob::Vectors, &o, 2), Some(45_376_320));
/// assert_eq!(memory_bytes::<f64>(49152, EvdJob::Vectors, &o, 64), Some(100_874_575_872));
/// // n^2 alone overflows 64 bits.
/// assert_eq!(memory_bytes::<f64>(1 << 61, EvdJob::Values, &o, 1), None);
/// assert_eq!(memory_bytes::<f64>(usize::MAX, EvdJob::Vectors, &o, 1), None);
/// // 8 n^2 bytes overflow although n^2 words fit.
/// assert_eq!(memory_bytes::<f64>(1 << 31, EvdJob::Values, &o, 1), None);
/// // An absurd Q2 block or thread count overflows the workspace figure.
/// let huge_group = EvdOptions { q2_group: usize::MAX, ..EvdOptions::default() };
/// assert_eq!(memory_bytes::<f64>(1000, EvdJob::Vectors, &huge_group, 2), None);
/// assert_eq!(memory_bytes::<f64>(1000, EvdJob::Vectors, &o, usize::MAX), None);
/// ```
pub fn memory_bytes<T: Scalar>(
    n: usize,
    job: EvdJob,
    opts: &EvdOptions,
    threads: usize,
) -> Option<u64> {
    let b = opts.bandwidth_for(n, job) as u64;
    let n64 = n as u64;
    let nn = n64.checked_mul(n64)?;
    let nb = n64.checked_mul(b)?;
    let mut words = [
        nn,                  // the working matrix
        nb.checked_mul(4)?,  // V and X workspaces, two of each
        nb,                  // T factors
        nb.checked_mul(2)?,  // band with bulge room
        n64.checked_mul(2)?, // tridiagonal
    ]
    .into_iter()
    .try_fold(0u64, u64::checked_add)?;
    if job == EvdJob::Vectors {
        let col = opts.col_block_for(n).min(n);
        let group = opts.q2_group.max(1);
        // `workspace_len` computes in `usize` without checks: make sure an
        // upper bound of each of its terms fits first (`transposed_ld(kc) <=
        // kc + 24`).
        let b = b as usize;
        [
            col.checked_add(24)?.checked_mul(n)?,
            b.checked_add(group)?.checked_mul(group)?,
            group.checked_mul(group)?,
            col.checked_mul(group)?.checked_mul(2)?,
        ]
        .into_iter()
        .try_fold(0usize, usize::checked_add)?;
        let q2_work = crate::linalg::q2::workspace_len(n, b, group, col) as u64;
        words = [
            words,
            nn,                                            // eigenvectors
            (nn / 2).checked_add(nb)?,                     // stage-2 reflectors
            nn.checked_mul(2)?, // the root merge: deflated copy of Q and the k x k block
            n64.checked_mul(col as u64)?.checked_mul(3)?, // merge-product tiles and Q1 workspaces in flight
            (threads.max(1) as u64).checked_mul(q2_work)?, // one Q2 task per thread
        ]
        .into_iter()
        .try_fold(0u64, u64::checked_add)?;
    }
    words.checked_mul(std::mem::size_of::<T>() as u64)
}

/// Builds the EVD graph of the symmetric matrix `a` (lower triangle read; `a`
/// itself is never modified: the graph works on a copy).
pub fn evd_graph<T: Scalar>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<EvdGraph<T>> {
    let copy = lower_copy(a)?;
    evd_graph_owned(copy, job, opts)
}

/// A copy of the lower triangle of a square `a` (the strict upper part zero).
fn lower_copy<T: Scalar>(a: MatRef<'_, T>) -> Result<Mat<T>> {
    check_square(a.nrows(), a.ncols())?;
    Ok(Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        if i >= j {
            a[(i, j)]
        } else {
            T::zero()
        }
    }))
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
    let (scale, anrm) = prepare(&mut copy)?;
    let n = copy.nrows();
    let b = opts.bandwidth_for(n, job);
    let nb = opts.tile_for(n, b);
    let vectors = job == EvdJob::Vectors;
    let mut g = TaskGraph::new();
    // Stage 1 copies each finished column block of the band out, and stage 2
    // chases the top of the band while stage 1 still reduces the bottom.
    let band = Arc::new(SharedBand::new(SymBand::zeros(n, b)));
    let (s1, feed) = stages::sy2sb_into_band(
        &mut g,
        Arc::new(SharedMatrix::new(copy)),
        b,
        nb,
        band.clone(),
    );
    let s2 = stages::sb2st(&mut g, band, b, opts, vectors, &feed);
    // What the tridiagonal solver waits for: all of stage 2 and every band copy.
    let mut reduced: Vec<TaskId> = s2.sub.exits.clone();
    reduced.extend(feed.iter().map(|&(_, t)| t));
    if !vectors {
        let (solve, values) = stages::tridiagonal_values(&mut g, s2.band.clone());
        g.succeed(solve, &reduced);
        return Ok(EvdGraph {
            graph: g,
            values,
            vectors: None,
            scale,
        });
    }
    let params = DcParams {
        leaf_size: opts.leaf_size,
        col_tile: opts.dc_tile,
    };
    // Each leaf of the D&C waits only for the band columns it reads.
    let dc = vectors::divide_and_conquer(
        &mut g,
        s2.band.clone(),
        &params,
        vectors::dc_scale(anrm),
        |end| s2.columns_final(end, &feed),
    );
    let refl = s2.reflectors.expect("stored for vectors");
    let q2 = vectors::back_transform_q2(
        &mut g,
        refl,
        dc.z.clone(),
        b,
        opts.q2_group,
        opts.col_block_for(n),
    );
    g.chain(&dc.sub, &q2);
    let q1 = vectors::back_transform_q1(
        &mut g,
        s1.a.clone(),
        s1.t.clone(),
        b,
        s1.panels,
        dc.z.clone(),
        opts.col_block_for(n),
    );
    // Column block j of Q1 needs stage 1 and column block j of Q2 Z (both stages
    // use the same column blocks, in the same order).
    debug_assert!(q2.exits.is_empty() || q2.exits.len() == q1.exits.len());
    for (j, &t) in q1.entries.iter().enumerate() {
        g.succeed(t, &s1.sub.exits);
        if let Some(&p) = q2.exits.get(j) {
            g.edge(p, t);
        }
    }
    if q2.exits.is_empty() {
        // No sweep (n <= 2): nothing orders the Q1 tasks after D&C otherwise.
        for &t in &q1.exits {
            g.succeed(t, &dc.sub.exits);
        }
    }
    Ok(EvdGraph {
        graph: g,
        values: dc.values,
        vectors: Some(dc.z),
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
    let copy = lower_copy(a)?;
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
    let (values, vectors) = slot.into_results();
    Ok(SymmetricEigen {
        values,
        vectors,
        report,
    })
}

/// Seconds of the two-stage reduction (sy2sb and sb2st overlap in time).
pub fn reduction_seconds(report: &RunReport) -> f64 {
    report.span_of(&[SY2SB, SB2ST]).as_secs_f64()
}

/// Seconds per stage of a finished EVD run: sy2sb, sb2st (band extraction
/// included), then tridiag (values) or dc, q2, q1 (vectors); each the span from its first task's start to its last
/// task's end.
pub fn stage_seconds(report: &RunReport) -> Vec<(&'static str, f64)> {
    [SY2SB, SB2ST, TRIDIAG, DC, Q2, Q1]
        .into_iter()
        .map(|s| (s, report.stage_span(s).as_secs_f64()))
        .filter(|&(s, t)| t > 0.0 || [SY2SB, SB2ST].contains(&s))
        .collect()
}
