//! The one-stage path of [`super::svd`] for small and mid sizes: LAPACK
//! `dgesdd`'s sequence without the two-stage graph. Scale into the safe range,
//! `dgebrd` ([`crate::linalg::bidiagonal::gebrd::gebrd_on`]), then dqds (values) or the
//! bidiagonal divide and conquer ([`super::bdsdc()`], as a graph on the
//! runtime) followed by `dormbr` for `U` and `V` (vectors). Below
//! [`SMALL_BELOW_VECTORS`] (vectors) or [`SMALL_BELOW_VALUES`] columns the whole SVD runs on the calling thread through
//! [`crate::linalg::small::gebrd_small::small_svd`] (unblocked `dgebd2`, then dqds,
//! bidiagonal QR or a serial divide and conquer): a graph run costs more than
//! such a problem.
//!
//! With vectors the two-stage path does about `4 n^3` more flops (`Q2_U`,
//! `Q2_V`) than this one; this one does half of its reduction's flops as
//! matrix-vector products. Which wins depends on the size and the machine:
//! [`super::SvdOptions::one_stage_for`] holds the measured crossovers.
//!
//! The same contract as the graph: values descending and unscaled, thin `U`
//! and `V^T` with orthonormal columns and rows, errors as [`crate::Error`]s,
//! the caller's matrix untouched. Every split of the work into tasks depends
//! on the shape only, so the bits do not depend on the runtime's threads.
//! Each phase (`gebrd`; `dqds` or `bdsdc`; `ormbr_q`, `ormbr_p`; below the
//! small sizes, `small_svd` as one) runs through
//! [`crate::pipeline::phase::phase`]: the solve stops between phases with
//! [`crate::Error::Cancelled`] when the run it is a task of was cancelled,
//! and each phase is an event of the calling thread's phase trace, if any
//! ([`crate::trace::record_phases`]).

use super::{bdsdc, prepare, Bidiagonal, SvdJob, SvdOptions, SvdOutput};
use crate::graph::TaskGraph;
use crate::linalg::bidiagonal::bdsdc::BdTree;
use crate::linalg::bidiagonal::gebrd::{gebrd_on, ormbr_p_on, ormbr_q_on, GEBRD_BLOCK};
use crate::linalg::small::gebrd_small::{small_svd, GebrdWorkspace};
use crate::pipeline::phase::{phase, BACK_TRANSFORM, REDUCE, SOLVE};
use crate::pipeline::task::runtime_bytes;
use crate::runtime::{RunReport, Runtime};
use crate::{Result, Scalar};
use faer::{Mat, MatRef};
use std::time::Instant;

/// Below this many columns (`min(m, n)`) the SVD with vectors runs serially
/// on the calling thread ([`small_svd`]). Measured on 2 threads (f64, AMD
/// EPYC AVX2, one run): 64: 1.1 ms serial against 1.3 ms blocked; 96: 2.7
/// against 2.5 ms.
pub const SMALL_BELOW_VECTORS: usize = 80;
/// [`SMALL_BELOW_VECTORS`] for singular values only (same run: 64: 0.30
/// against 0.55 ms; 96: 0.9 against 1.0 ms; 128: 1.9 both; 192: 5.6 against
/// 4.6 ms).
pub const SMALL_BELOW_VALUES: usize = 160;

/// Reflectors per compact-WY block of the `dormbr` back-transformations.
pub const ORMBR_BLOCK: usize = 32;

/// Below this many bytes the path allocates without asking the system how
/// much memory is free (reading `/proc` costs more than a small solve).
const UNCHECKED_BYTES: u64 = 16 << 20;

/// Bytes the one-stage SVD of an `m x n` matrix allocates on `threads`
/// workers: the working copy, the panel workspaces and, with vectors, `U`,
/// `V` (the bidiagonal's, transformed in place), the divide and conquer's
/// merge workspace and per-worker product tiles, `P`'s reflector store and
/// the transposed `V^T` returned.
pub fn memory_bytes<T: Scalar>(
    m: usize,
    n: usize,
    job: SvdJob,
    opts: &SvdOptions,
    threads: usize,
) -> Option<u64> {
    let (m, n) = (m.max(n) as u64, m.min(n) as u64);
    let nb = GEBRD_BLOCK as u64;
    let copy = m.checked_mul(n)?;
    // X, Y and the trailing GEMM's two operands (inner dimension 2 nb).
    let panel = m.checked_add(n)?.checked_mul(3 * nb)?;
    let words = match job {
        SvdJob::Values => [copy, panel, n.checked_mul(8)?]
            .into_iter()
            .try_fold(0u64, u64::checked_add)?,
        SvdJob::Vectors => {
            let nn = n.checked_mul(n)?;
            let w = BdTree::merge_words_per_row(n as usize, opts.bdsdc_params().leaf_size) as u64;
            let tile = opts.dc_tile.clamp(1, n.max(1) as usize) as u64;
            // During the divide and conquer: the copy, U_bd, V_bd, the merges'
            // workspace and per worker one apply task's products.
            let dc = [
                copy,
                nn.checked_mul(2)?,
                n.checked_add(1)?.checked_mul(w)?,
                (threads.max(1) as u64).checked_mul(n.checked_mul(tile)?.checked_mul(4)?)?,
            ]
            .into_iter()
            .try_fold(0u64, u64::checked_add)?;
            // Then: the copy, U (m x n), V_bd, P's reflector store and one
            // compact-WY workspace per half; at the end U, V and V^T.
            let back = [copy, copy, nn.checked_mul(2)?, n.checked_mul(4 * nb)?]
                .into_iter()
                .try_fold(0u64, u64::checked_add)?;
            // `back` covers the end too: U (m x n), V and V^T (n x n each).
            dc.max(back).checked_add(panel)?
        }
    };
    words
        .checked_mul(std::mem::size_of::<T>() as u64)?
        .checked_add(runtime_bytes(threads)?)
}

/// [`crate::Error::OutOfMemory`] when the one-stage SVD does not fit.
pub(super) fn admit<T: Scalar>(
    m: usize,
    n: usize,
    job: SvdJob,
    opts: &SvdOptions,
    threads: usize,
) -> Result<()> {
    let needed = memory_bytes::<T>(m, n, job, opts, threads).unwrap_or(u64::MAX);
    if needed < UNCHECKED_BYTES {
        return Ok(());
    }
    let what = super::memory::describe::<T>(m, n, job);
    crate::sysinfo::check_fits(needed, &format!("{what} (one-stage)"), |_| String::new())
}

/// The SVD of `a` by the one-stage path (module docs). The report lists no
/// tasks.
pub(super) fn run<T: Scalar>(
    a: MatRef<'_, T>,
    job: SvdJob,
    opts: &SvdOptions,
    rt: &Runtime,
) -> Result<SvdOutput<T>> {
    let start = Instant::now();
    let small = match job {
        SvdJob::Vectors => SMALL_BELOW_VECTORS,
        SvdJob::Values => SMALL_BELOW_VALUES,
    };
    let (values, u, vt) = if a.nrows().min(a.ncols()) < small {
        phase("small_svd", SOLVE, || solve_small(a, job))?
    } else {
        reduce_and_solve(a, job, opts, rt)?
    };
    Ok(SvdOutput {
        values,
        u,
        vt,
        report: RunReport {
            tasks: Vec::new(),
            wall: start.elapsed(),
            threads: 1,
            streams: 0,
        },
    })
}

type Factors<T> = (Vec<T>, Option<Mat<T>>, Option<Mat<T>>);

/// [`small_svd`] on the calling thread, after the check for non-finite
/// entries that it leaves to its caller.
fn solve_small<T: Scalar>(a: MatRef<'_, T>, job: SvdJob) -> Result<Factors<T>> {
    crate::matrix::check_finite(a, false)?;
    let (m, n) = (a.nrows(), a.ncols());
    let k = m.min(n);
    if k == 0 {
        let vectors = job == SvdJob::Vectors;
        return Ok((
            Vec::new(),
            vectors.then(|| Mat::zeros(m, 0)),
            vectors.then(|| Mat::zeros(0, n)),
        ));
    }
    let mut ws = GebrdWorkspace::new();
    let mut values = vec![T::zero(); k];
    if job == SvdJob::Values {
        small_svd(a, &mut ws, &mut values, None)?;
        return Ok((values, None, None));
    }
    let (mut u, mut vt) = (vec![T::zero(); m * k], vec![T::zero(); k * n]);
    small_svd(a, &mut ws, &mut values, Some((&mut u, &mut vt)))?;
    let u = MatRef::from_column_major_slice(&u, m, k).to_owned();
    let vt = MatRef::from_column_major_slice(&vt, k, n).to_owned();
    Ok((values, Some(u), Some(vt)))
}

/// `dgebrd`, then dqds, or the bidiagonal divide and conquer and `dormbr`.
fn reduce_and_solve<T: Scalar>(
    a: MatRef<'_, T>,
    job: SvdJob,
    opts: &SvdOptions,
    rt: &Runtime,
) -> Result<Factors<T>> {
    let transposed = a.nrows() < a.ncols();
    let (mut w, scale) = prepare(a, false)?;
    let (m, n) = (w.nrows(), w.ncols());
    let z = T::zero();
    let (mut d, mut e) = (vec![z; n], vec![z; n.saturating_sub(1)]);
    let (mut tauq, mut taup) = (vec![z; n], vec![z; n]);
    phase("gebrd", REDUCE, || {
        gebrd_on(
            w.as_mut(),
            GEBRD_BLOCK,
            &mut d,
            &mut e,
            &mut tauq,
            &mut taup,
            rt.fork(),
        )
    })?;
    let unscale = |s: Vec<T>| -> Vec<T> { s.into_iter().map(|x| x / scale).collect() };
    if job == SvdJob::Values {
        let s = phase("dqds", SOLVE, || {
            crate::linalg::bidiagonal::dqds::singular_values(&d, &e)
        })?;
        return Ok((unscale(s), None, None));
    }
    let (values, ub, vb) = phase("bdsdc", SOLVE, || {
        let mut g = TaskGraph::new();
        let st = bdsdc(
            &mut g,
            Bidiagonal::from_vectors(d, e)?,
            &opts.bdsdc_params(),
        )?;
        // The bidiagonal was given whole: its vectors are this path's to
        // back-transform (with `dormbr` below).
        let (values, mut ub, mut vb) = (
            st.values,
            st.u.into_result_given_whole()?,
            st.v.into_result_given_whole()?,
        );
        rt.run(g)?;
        Ok((values.get()?, ub.get()?, vb.get()?))
    })?;
    let s = unscale(values);
    // U = Q [U_bd; 0], V = P V_bd.
    let mut u = Mat::<T>::zeros(m, n);
    u.as_mut().subrows_mut(0, n).copy_from(ub);
    phase("ormbr_q", BACK_TRANSFORM, || {
        ormbr_q_on(w.as_ref(), &tauq, u.as_mut(), ORMBR_BLOCK, rt.fork())
    })?;
    let mut v = vb;
    phase("ormbr_p", BACK_TRANSFORM, || {
        ormbr_p_on(w.as_ref(), &taup, v.as_mut(), ORMBR_BLOCK, rt.fork())
    })?;
    drop(w);
    // A wide a was reduced as a^T = U' S V'^T: U = V', V^T = U'^T.
    let (u, vt) = if transposed {
        (v, u.transpose().to_owned())
    } else {
        (u, v.transpose().to_owned())
    };
    Ok((s, Some(u), Some(vt)))
}
