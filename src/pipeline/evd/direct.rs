//! The one-stage path of [`super::eigh`] for small and mid orders, with no task
//! graph: on the calling thread, its GEMM-rich parts split in two fixed halves
//! on the runtime's threads from order [`THREADS_FROM`] on
//! (LAPACK `dsyevd`'s one-stage sequence, below).
//! LAPACK `dsyevd`'s sequence: scale into the safe range, `dsytrd`
//! ([`crate::linalg::tridiagonal::sytrd::sytrd_on`]), then `dsterf` (values; from
//! [`EvdOptions::values_by_dc`] on, the values-only divide and conquer
//! [`crate::linalg::tridiagonal::stedc::values`] instead) or divide and conquer with QL/QR
//! leaves on the identity
//! ([`crate::linalg::tridiagonal::stedc::forked::stedc_identity`]) followed by `dormtr`
//! (vectors).
//! The same contract as the graph: values ascending and unscaled, vectors
//! orthonormal, errors as [`crate::Error`]s. Each phase (`sytrd`; `sterf`,
//! `stedc`, or `stebz` and `stein`; `ormtr`) runs through
//! [`crate::pipeline::phase::phase`]: the solve stops between phases with
//! [`crate::Error::Cancelled`] when the run it is a task of was cancelled,
//! and each phase is an event of the calling thread's phase trace, if any
//! ([`crate::trace::record_phases`]).

use super::{prepare, EvdJob, EvdOptions, SymmetricEigen};
use crate::linalg::par::Fork;
use crate::linalg::tridiagonal::stebz::Sturm;
use crate::linalg::tridiagonal::stedc::forked::stedc_identity;
use crate::linalg::tridiagonal::stedc::merge::APPLY_CHUNK;
use crate::linalg::tridiagonal::stedc::values::stedc_values;
use crate::linalg::tridiagonal::stein::stein_columns;
use crate::linalg::tridiagonal::sytrd::{
    ormtr_block_for, ormtr_on, sytrd_block_for, sytrd_on, SYTRD_CROSSOVER,
};
use crate::pipeline::phase::{phase, BACK_TRANSFORM, REDUCE, SOLVE};
use crate::pipeline::task::runtime_bytes;
use crate::runtime::{RunReport, Runtime};
use crate::{Result, Scalar};
use faer::Mat;
use std::time::Instant;

/// Below this many bytes the direct path allocates without asking the system
/// how much memory is free (reading `/proc` costs more than a tiny solve).
const UNCHECKED_BYTES: u64 = 16 << 20;

/// Order from which the one-stage path hands halves to the runtime's threads.
/// Below it every piece runs on the calling thread (the same pieces, so the
/// same bits): with vectors, the divide and conquer's root forks its halves,
/// its roots, its `z-hat` and its eigenvector product, and `ormtr` its
/// columns, each a wake-up of the helper for a few microseconds of work. A
/// 2-thread runtime against a 1-thread one, one-stage with vectors, f64, on
/// the Xeon (model 167), medians of 9 alternations, with the helper engaged:
/// 1.21x the time at n = 48, 1.11x at 64, 0.95x at 72, 0.91x at 80, 0.85x
/// at 128. Eigenvalues only split nothing before `sytrd`'s splits at 256.
pub const THREADS_FROM: usize = 72;

/// Bytes the one-stage path of [`super::eigh`] allocates for order `n` on
/// `threads` workers (`None` if the figure overflows `u64`): the
/// working copy, the eigenvectors, the D&C merge workspaces (`n ceil(n/2)`
/// words at the root, whose column halves each hold two temporaries of
/// [`APPLY_CHUNK`] columns, after the halves' `n^2 / 4`), the reduction's
/// workspaces and the runtime's own. Measured through `eigenflow::eigh` on 2
/// threads: peaks of 3.68, 3.13 and 2.81 n^2 words at n = 2000, 3000 and 4500
/// (figure 3.68, 3.32, 3.10).
pub fn memory_bytes<T: Scalar>(n: usize, job: EvdJob, threads: usize) -> Option<u64> {
    let n64 = n as u64;
    let nn = n64.checked_mul(n64)?;
    let words = match job {
        // The reduction's panel workspaces (`W`, and `L`, `R` of the split
        // SYR2K: about 300 n words) and the O(n) vectors.
        EvdJob::Values => nn.checked_add(n64.checked_mul(320)?)?,
        EvdJob::Vectors => [
            nn.checked_mul(2)?,
            n64.div_ceil(2).checked_mul(n64)?,
            // The two halves' merge workspaces, about n^2 / 8 words each, run
            // before the root's and may be kept by the allocator after.
            nn / 4,
            n64.checked_mul(4 * APPLY_CHUNK as u64)?,
            n64.checked_mul(320)?,
        ]
        .into_iter()
        .try_fold(0u64, u64::checked_add)?,
    };
    words
        .checked_mul(std::mem::size_of::<T>() as u64)?
        .checked_add(runtime_bytes(threads)?)
}

/// [`crate::Error::OutOfMemory`] when the direct solve of order `n` does not fit.
pub(super) fn admit<T: Scalar>(n: usize, job: EvdJob, threads: usize) -> Result<()> {
    let needed = memory_bytes::<T>(n, job, threads).unwrap_or(u64::MAX);
    if needed < UNCHECKED_BYTES {
        return Ok(());
    }
    let what = format!(
        "the {n} x {n} {} one-stage eigendecomposition",
        std::any::type_name::<T>()
    );
    crate::sysinfo::check_fits(needed, &what, |_| String::new())
}

/// Solves on the calling thread, with the large GEMM-rich parts (the SYR2K
/// updates of `sytrd`, the top of the divide and conquer, `ormtr`) split in two
/// fixed halves that run as two tasks on `rt` when it has several threads: the
/// same bits whatever `rt`'s size. `a` is the working copy: the symmetric
/// matrix in its lower triangle (strict upper part not read), checked square.
/// The report lists no tasks (the helper runs are not recorded).
pub(super) fn run<T: Scalar>(
    a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
) -> Result<SymmetricEigen<T>> {
    let start = Instant::now();
    let par = if a.nrows() >= THREADS_FROM {
        rt.fork()
    } else {
        Fork::Seq
    };
    let (d, vectors) = solve(a, job, opts, par)?;
    Ok(SymmetricEigen {
        values: d,
        vectors,
        report: RunReport {
            tasks: Vec::new(),
            wall: start.elapsed(),
            threads: 1,
            streams: 0,
        },
    })
}

/// The eigenvalues (ascending, unscaled) and eigenvectors of the working copy
/// `a` (lower triangle, checked square) on the calling thread alone, with no
/// fork at any order, and the default options: the solve of one matrix of
/// the batched EVD (whose parallelism is across matrices). The same bits as
/// [`run`] (whose forks do not change them).
pub(crate) fn solve_serial<T: Scalar>(a: Mat<T>, job: EvdJob) -> Result<(Vec<T>, Option<Mat<T>>)> {
    solve(a, job, &EvdOptions::default(), Fork::Seq)
}

/// [`run`]'s solve: scaling, the 2 x 2 rotation or the reduction and its
/// solver, unscaling; the halves forked through `par`.
fn solve<T: Scalar>(
    mut a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
    par: Fork<'_>,
) -> Result<(Vec<T>, Option<Mat<T>>)> {
    let (scale, _) = prepare(&mut a, opts.selection.is_some())?;
    let (mut d, vectors) = if a.nrows() == 2 && opts.selection.is_none() {
        phase("sym2x2", SOLVE, || {
            Ok(eigh_2x2(a[(0, 0)], a[(1, 0)], a[(1, 1)], job))
        })?
    } else {
        reduce_and_solve(&mut a, scale, job, opts, par)?
    };
    if scale != T::one() {
        for x in d.iter_mut() {
            *x /= scale;
        }
    }
    Ok((d, vectors))
}

/// `dsytrd`, then `dsterf` (values), D&C and `dormtr` (vectors), or bisection
/// and inverse iteration for a selection, on the scaled working copy `a`:
/// the (scaled) eigenvalues ascending and the eigenvectors.
fn reduce_and_solve<T: Scalar>(
    a: &mut Mat<T>,
    scale: T,
    job: EvdJob,
    opts: &EvdOptions,
    par: Fork<'_>,
) -> Result<(Vec<T>, Option<Mat<T>>)> {
    let n = a.nrows();
    let m = n.saturating_sub(1);
    let (mut d, mut e, mut tau) = (vec![T::zero(); n], vec![T::zero(); m], vec![T::zero(); m]);
    phase("sytrd", REDUCE, || {
        sytrd_on(
            a.as_mut(),
            sytrd_block_for(n),
            SYTRD_CROSSOVER,
            &mut d,
            &mut e,
            &mut tau,
            par,
        )
    })?;
    let ormtr = |z: &mut Mat<T>| {
        phase("ormtr", BACK_TRANSFORM, || {
            ormtr_on(a.as_ref(), &tau, z.as_mut(), ormtr_block_for(n), par)
        })
    };
    let vectors = if let Some(sel) = &opts.selection {
        // The selective path on the one-stage tridiagonal: bisection
        // (dstebz), inverse iteration (dstein) and dormtr on the k columns.
        let w = phase("stebz", SOLVE, || {
            let sturm = Sturm::new(&d, &e)?;
            let range = sel.resolve(&sturm, scale)?;
            sturm.bisect(range, T::zero())
        })?;
        let z = match job {
            EvdJob::Values => None,
            EvdJob::Vectors => {
                let mut z = phase("stein", SOLVE, || stein_columns(&d, &e, &w, 0..w.len()))?;
                ormtr(&mut z)?;
                Some(z)
            }
        };
        d = w;
        z
    } else {
        match job {
            EvdJob::Values if opts.values_by_dc(n) => {
                phase("stedc_values", SOLVE, || {
                    stedc_values(&mut d, &mut e, opts.leaf_size, par)
                })?;
                None
            }
            EvdJob::Values => {
                phase("sterf", SOLVE, || {
                    crate::linalg::tridiagonal::sterf::sterf(&mut d, &mut e)
                })?;
                None
            }
            EvdJob::Vectors => {
                let mut z = phase("stedc", SOLVE, || {
                    stedc_identity(&mut d, &mut e, opts.leaf_size, par)
                })?;
                ormtr(&mut z)?;
                Some(z)
            }
        }
    };
    Ok((d, vectors))
}

/// The eigenvalues (ascending) and, for [`EvdJob::Vectors`], the orthonormal
/// eigenvectors of the symmetric 2 x 2 matrix `[[p, q], [q, r]]` (already
/// scaled into the safe range), by the one Jacobi rotation of
/// [`crate::linalg::tridiagonal::sterf::sym2x2`]. Each eigenvalue carries an error of a
/// few ulps of `||A||`, as the reduction's would, at a fraction of its cost
/// (a 2 x 2 call is dominated by its fixed costs).
fn eigh_2x2<T: Scalar>(p: T, q: T, r: T, job: EvdJob) -> (Vec<T>, Option<Mat<T>>) {
    let (l0, l1, c, s) = crate::linalg::tridiagonal::sterf::sym2x2(p, q, r);
    // Column k of the rotation J = [[c, s], [-s, c]] is the eigenvector of
    // the eigenvalue k of sym2x2.
    let (mut v0, mut v1) = ([c, -s], [s, c]);
    let (mut lo, mut hi) = (l0, l1);
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
        std::mem::swap(&mut v0, &mut v1);
    }
    let vectors = match job {
        EvdJob::Values => None,
        EvdJob::Vectors => Some(Mat::from_fn(
            2,
            2,
            |i, j| if j == 0 { v0[i] } else { v1[i] },
        )),
    };
    (vec![lo, hi], vectors)
}
