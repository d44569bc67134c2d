//! One chunk task's work for the batched symmetric EVD: matrices `lo..hi`,
//! by Jacobi in SIMD lanes ([`crate::linalg::small::syevj`]) for small
//! orders or by the one-stage path per matrix
//! ([`crate::pipeline::evd::solve_serial`]) for larger ones.

use super::chunk::{name_matrix, ChunkDst, ChunkStats};
use super::{BatchRef, BatchedOptions};
use crate::linalg::small::syevj::{syevj_group, SyevjWorkspace, LANES};
use crate::pipeline::evd::EvdJob;
use crate::{Result, Scalar};
use faer::Mat;

/// How the batched EVD solves each matrix, chosen by the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EvdRoute {
    /// Cyclic Jacobi, [`LANES`] matrices at a time in SIMD lanes.
    Jacobi,
    /// `dsytrd`, then `dsterf` or divide and conquer and `dormtr`, one
    /// matrix at a time on the chunk's thread.
    OneStage,
}

impl EvdRoute {
    /// The route for order `n` under `opts`.
    pub(super) fn for_order(n: usize, opts: &BatchedOptions) -> EvdRoute {
        if n < opts.evd_jacobi_below {
            EvdRoute::Jacobi
        } else {
            EvdRoute::OneStage
        }
    }

    /// The name of its tasks and their stage.
    pub(super) fn name(self) -> &'static str {
        match self {
            EvdRoute::Jacobi => "syevj",
            EvdRoute::OneStage => "syevd",
        }
    }

    /// Matrices per group: a chunk of whole groups leaves no lanes idle.
    pub(super) fn group(self) -> usize {
        match self {
            EvdRoute::Jacobi => LANES,
            EvdRoute::OneStage => 1,
        }
    }

    /// Words of working set per matrix of order `n`: the input, the
    /// outputs and, for the one-stage path, its working copy and vectors.
    pub(super) fn words(self, n: usize, vectors: bool) -> usize {
        let out = n + if vectors { n * n } else { 0 };
        match self {
            EvdRoute::Jacobi => n * n + out + if vectors { 2 * n * n } else { n * n },
            EvdRoute::OneStage => n * n + out + if vectors { 3 * n * n } else { n * n },
        }
    }

    /// Flops per matrix of order `n`, a cost hint.
    pub(super) fn flops(self, n: usize, vectors: bool) -> f64 {
        let nf = n as f64;
        match self {
            EvdRoute::Jacobi => crate::linalg::small::syevj::flops(n, vectors),
            // dsytrd 4/3 n^3, with vectors about 8/3 n^3 more for the divide
            // and conquer and dormtr.
            EvdRoute::OneStage => nf * nf * nf * if vectors { 4.0 } else { 4.0 / 3.0 },
        }
    }
}

/// The EVD route's buffers, reused by the chunks of one batch.
#[derive(Default)]
pub(super) struct EvdScratch<T> {
    syevj: SyevjWorkspace<T>,
}

/// Solves matrices `lo..hi` of `batch` (square, lower triangles read) by
/// `route`: values (ascending, `n` per matrix) into `out.values`, with
/// `vectors` the eigenvectors (column-major `n x n` per matrix) into
/// `out.u`. A matrix that fails is listed in `stats.failed` with NaN in its
/// slots; the others are complete.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_evd<T: Scalar>(
    batch: &BatchRef<'_, T>,
    lo: usize,
    hi: usize,
    vectors: bool,
    route: EvdRoute,
    opts: &BatchedOptions,
    scratch: &mut EvdScratch<T>,
    stats: &mut ChunkStats,
    out: ChunkDst<'_, T>,
) {
    let n = batch.shape().0;
    let nn = if vectors { n * n } else { 0 };
    let group = route.group();
    let mut j = 0;
    while j < hi - lo {
        let count = group.min(hi - lo - j);
        let values = &mut out.values[j * n..(j + count) * n];
        let vecs = vectors.then(|| &mut out.u[j * nn..(j + count) * nn]);
        let first = lo + j;
        let res: Vec<Result<usize>> = match route {
            EvdRoute::Jacobi => {
                let a: Vec<_> = (first..first + count).map(|i| batch.matrix(i)).collect();
                syevj_group(&a, &mut scratch.syevj, values, vecs, &opts.syevj)
            }
            EvdRoute::OneStage => vec![one_stage(batch, first, values, vecs)],
        };
        for (i, r) in res.into_iter().enumerate() {
            let jj = j + i;
            match r {
                Ok(sweeps) => stats.sweeps[jj] = sweeps,
                Err(e) => {
                    // NaN in the matrix's slots, not whatever the reused
                    // buffers held before.
                    let nan = <T as num_traits::Float>::nan();
                    out.values[jj * n..(jj + 1) * n].fill(nan);
                    out.u[jj * nn..(jj + 1) * nn].fill(nan);
                    stats.failed.push((lo + jj, name_matrix(e, lo + jj)));
                }
            }
        }
        j += count;
    }
}

/// Matrix `i` of `batch` by the one-stage path: its values into `values`
/// and its vectors into `vectors`. Returns 0 sweeps (the route has none).
fn one_stage<T: Scalar>(
    batch: &BatchRef<'_, T>,
    i: usize,
    values: &mut [T],
    vectors: Option<&mut [T]>,
) -> Result<usize> {
    let a = batch.matrix(i);
    let n = a.nrows();
    // The working copy holds the lower triangle; the upper part is not read.
    let w = Mat::from_fn(n, n, |r, c| if r >= c { a[(r, c)] } else { T::zero() });
    let job = match vectors {
        Some(_) => EvdJob::Vectors,
        None => EvdJob::Values,
    };
    let (d, z) = crate::pipeline::evd::solve_serial(w, job)?;
    values.copy_from_slice(&d);
    if let (Some(out), Some(z)) = (vectors, z) {
        for (c, dst) in out.chunks_exact_mut(n).enumerate() {
            for (r, x) in dst.iter_mut().enumerate() {
                *x = z[(r, c)];
            }
        }
    }
    Ok(0)
}
