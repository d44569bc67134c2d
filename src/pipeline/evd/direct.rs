//! The one-stage path of [`super::eigh`] for small and mid orders: on the
//! calling thread, with no task graph (`research/small-mid-evd.md` §1, §3).
//! LAPACK `dsyevd`'s sequence: scale into the safe range, `dsytrd`
//! ([`crate::linalg::sytrd::sytrd`]), then `dsterf` (values) or divide and
//! conquer with QL/QR leaves on the identity followed by `dormtr` (vectors).
//! The same contract as the graph: values ascending and unscaled, vectors
//! orthonormal, errors as [`crate::Error`]s.

use super::{prepare, EvdJob, EvdOptions, SymmetricEigen};
use crate::linalg::stebz::Sturm;
use crate::linalg::stedc::serial::{
    scale_block, sort_eigenpairs, split_blocks, tridiag_eigvecs, unscale_block,
};
use crate::linalg::stedc::DcParams;
use crate::linalg::stein::stein_columns;
use crate::linalg::sytrd::{ormtr, sytrd, ORMTR_BLOCK, SYTRD_BLOCK, SYTRD_CROSSOVER};
use crate::runtime::RunReport;
use crate::{Result, Scalar};
use faer::Mat;
use std::time::Instant;

/// Below this many bytes the direct path allocates without asking the system
/// how much memory is free (reading `/proc` costs more than a tiny solve).
const UNCHECKED_BYTES: u64 = 16 << 20;

/// Bytes the direct path allocates for order `n`: the working copy, the
/// eigenvectors and the D&C workspace (a copy of the largest block), plus
/// `O(n)` vectors.
pub(super) fn memory_bytes<T: Scalar>(n: usize, job: EvdJob) -> Option<u64> {
    let n64 = n as u64;
    let nn = n64.checked_mul(n64)?;
    let words = match job {
        EvdJob::Values => nn.checked_add(n64.checked_mul(4)?)?,
        EvdJob::Vectors => nn.checked_mul(3)?.checked_add(n64.checked_mul(64)?)?,
    };
    words.checked_mul(std::mem::size_of::<T>() as u64)
}

/// [`crate::Error::OutOfMemory`] when the direct solve of order `n` does not fit.
pub(super) fn admit<T: Scalar>(n: usize, job: EvdJob) -> Result<()> {
    let needed = memory_bytes::<T>(n, job).unwrap_or(u64::MAX);
    if needed < UNCHECKED_BYTES {
        return Ok(());
    }
    let what = format!(
        "the {n} x {n} {} one-stage eigendecomposition",
        std::any::type_name::<T>()
    );
    crate::sysinfo::check_fits(needed, &what, |_| String::new())
}

/// Solves on the calling thread. `a` is the working copy: the symmetric
/// matrix in its lower triangle (strict upper part not read), checked square.
pub(super) fn run<T: Scalar>(
    mut a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
) -> Result<SymmetricEigen<T>> {
    let start = Instant::now();
    let (scale, _) = prepare(&mut a)?;
    let n = a.nrows();
    let m = n.saturating_sub(1);
    let (mut d, mut e, mut tau) = (vec![T::zero(); n], vec![T::zero(); m], vec![T::zero(); m]);
    sytrd(
        a.as_mut(),
        SYTRD_BLOCK,
        SYTRD_CROSSOVER,
        &mut d,
        &mut e,
        &mut tau,
    );
    let vectors = if let Some(sel) = &opts.selection {
        // The selective path on the one-stage tridiagonal: bisection
        // (dstebz), inverse iteration (dstein) and dormtr on the k columns.
        let sturm = Sturm::new(&d, &e)?;
        let range = sel.resolve(&sturm, scale)?;
        let w = sturm.bisect(range, T::zero())?;
        let z = match job {
            EvdJob::Values => None,
            EvdJob::Vectors => {
                let mut z = stein_columns(&d, &e, &w, 0..w.len())?;
                ormtr(a.as_ref(), &tau, z.as_mut(), ORMTR_BLOCK);
                Some(z)
            }
        };
        d = w;
        z
    } else {
        match job {
            EvdJob::Values => {
                crate::linalg::sterf::sterf(&mut d, &mut e)?;
                None
            }
            EvdJob::Vectors => {
                let mut z = tridiagonal_vectors(&mut d, &mut e, opts.leaf_size)?;
                ormtr(a.as_ref(), &tau, z.as_mut(), ORMTR_BLOCK);
                Some(z)
            }
        }
    };
    if scale != T::one() {
        for x in d.iter_mut() {
            *x /= scale;
        }
    }
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

/// Eigenvalues (ascending, in `d`) and eigenvectors of the symmetric
/// tridiagonal `(d, e)`, LAPACK `dstedc` with `compz = 'I'`: split into
/// unreduced blocks, each scaled by its max-norm and solved by implicit QL/QR
/// when it has at most `leaf_size` rows, by the serial divide and conquer
/// otherwise; its vectors go straight into the block's diagonal block of the
/// identity (no product with the identity). `e` is overwritten.
fn tridiagonal_vectors<T: Scalar>(d: &mut [T], e: &mut [T], leaf_size: usize) -> Result<Mat<T>> {
    let n = d.len();
    let mut z = Mat::<T>::identity(n, n);
    let blocks = split_blocks(d, e);
    let params = DcParams {
        leaf_size: leaf_size.max(1),
        ..DcParams::default()
    };
    for blk in &blocks {
        let (s, t) = (blk.start, blk.end);
        let m = t - s;
        if m == 1 {
            continue;
        }
        let nrm = scale_block(&mut d[s..t], &mut e[s..t - 1]);
        if nrm == T::zero() {
            continue;
        }
        let zb = z.as_mut().submatrix_mut(s, s, m, m);
        if m <= params.leaf_size {
            crate::linalg::steqr::steqr(&mut d[s..t], &mut e[s..t - 1], zb)?;
        } else {
            let q = tridiag_eigvecs(&mut d[s..t], &e[s..t - 1], &params)?;
            let mut zb = zb;
            zb.copy_from(&q);
        }
        unscale_block(&mut d[s..t], nrm);
    }
    if blocks.len() > 1 {
        sort_eigenpairs(d, z.as_mut());
    }
    Ok(z)
}
