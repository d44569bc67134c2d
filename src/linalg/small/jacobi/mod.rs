//! Blocked one-sided Jacobi SVD of one small dense matrix (seed 004,
//! Abdelfattah & Fasi, "An Efficient Batch Solver for the Singular Value
//! Decomposition on GPUs", 2026, §5).
//!
//! The columns of `A` (tall orientation; a wide input is transposed) are
//! split into an even number `l` of blocks of width `nb`. A sweep visits all
//! block pairs in Brent-Luk round-robin order ([`order`]); for each pair the
//! Gram matrix `[A_j A_k]^T [A_j A_k]` is formed (one GEMM), one sweep of
//! two-sided Jacobi ([`inner`]) gives an approximate eigenvector matrix `J`,
//! and `[A_j A_k] J`, `[V_j V_k] J` are written back (GEMM). The columns of
//! `A` converge to `U Sigma`, so `sigma` are their norms and `U` their
//! normalisation ([`JacobiState::finish`]).
//!
//! Parallelism lives outside: `pipeline::batched` runs many
//! matrices as chunk tasks; a kernel here is serial and deterministic.
//!
//! ```
//! use eigenflow::linalg::small::jacobi::{gesvj, JacobiParams};
//! let a = faer::Mat::<f64>::from_fn(6, 4, |i, j| 1.0 / (1 + i + j) as f64);
//! let svd = gesvj(a.as_ref(), true, &JacobiParams::default())?;
//! assert_eq!(svd.values.len(), 4);
//! assert!(svd.values.windows(2).all(|w| w[0] >= w[1]));
//! # Ok::<(), eigenflow::Error>(())
//! ```

pub mod inner;
pub mod order;
mod solver;
#[cfg(test)]
mod tests;

pub(crate) use solver::pow2_scale;
pub use solver::{JacobiState, JacobiStats, JacobiWorkspace, Status};

use crate::{Error, Result, Scalar};
use faer::{Mat, MatRef};

/// Tuning parameters of the blocked one-sided Jacobi solver.
#[derive(Clone, Debug, PartialEq)]
pub struct JacobiParams {
    /// Target block width `nb`. The block count is `ceil(n / block)`
    /// rounded up to even (at least 2), and the width is then shrunk to
    /// `ceil(n / l)` to pad as little as possible. Default 8: the inner
    /// solver's cost grows with the width (about `36 n^2 nb` flops per sweep,
    /// against `12 m n^2` for the Gram matrices and updates), and on the
    /// benchmark's 32 x 32 and 128 x 128 batches 8 was faster than 4 and 16
    /// (`benches/batched.rs --block`).
    pub block: usize,
    /// Rotation threshold at the end of the schedule, in multiples of the
    /// unit roundoff: the `k` of [004 §5.5], "typically 30". Default 30.
    pub tol_floor: f64,
    /// First threshold of the schedule, in multiples of the unit roundoff;
    /// `None` for MAGMA's `10^floor(0.3 log10(1/eps))` (1e4 in f64, 1e2 in
    /// f32). Divided by 10 per sweep down to `tol_floor`.
    pub tol_start: Option<f64>,
    /// Outer sweeps before a matrix is reported as not converged. Default
    /// 100 (MAGMA's limit).
    pub max_sweeps: usize,
    /// Sweeps of the inner two-sided Jacobi solver per block pair. Default 1
    /// (Design-2 of [004 §6.1]).
    pub inner_sweeps: usize,
    /// For a working matrix at least this many times taller than wide
    /// (`m >= qr_min_aspect n`, `m > n`, after a wide input is transposed),
    /// iterate on the `n x n` triangle `R` of a Householder QR `A = Q R` and
    /// form `U = Q U_R` at the end (the QR preconditioning of LAPACK
    /// `dgejsv`; the seed's tall case). A sweep then works on `n` rows
    /// instead of `m`, against about `2 m n^2` flops for the QR and, with
    /// vectors, `4 m n^2` for forming `U`. Default 3: one thread, uniform
    /// random batches, seconds without / with (same sweep counts), values
    /// and vectors: 2,000 x 40x32 0.607 / 0.607 and 0.659 / 0.694; 4,000 x
    /// 16x8 0.037 / 0.041 with vectors; 1,000 x 160x32 0.441 / 0.342 and
    /// 0.499 / 0.484; 200 x 512x64 0.933 / 0.478 and 1.038 / 0.783.
    /// `f64::INFINITY` turns it off; at least 1. (The CUDA batched Jacobi
    /// iterates on the full matrix whatever this says.)
    pub qr_min_aspect: f64,
}

impl Default for JacobiParams {
    fn default() -> Self {
        JacobiParams {
            block: 8,
            tol_floor: 30.0,
            tol_start: None,
            max_sweeps: 100,
            inner_sweeps: 1,
            qr_min_aspect: 3.0,
        }
    }
}

impl JacobiParams {
    /// Checks the ranges (block width at least 1, floor at least 1, at
    /// least one sweep of each kind).
    pub fn validate(&self) -> Result<()> {
        if self.block == 0 || self.max_sweeps == 0 || self.inner_sweeps == 0 {
            return Err(Error::InvalidArgument(
                "JacobiParams: block, max_sweeps and inner_sweeps must be at least 1".into(),
            ));
        }
        // Written so that NaN fails too.
        let ok = |t: f64| t >= 1.0;
        if !ok(self.tol_floor) || self.tol_start.is_some_and(|t| !ok(t)) {
            return Err(Error::InvalidArgument(
                "JacobiParams: tolerances must be at least 1 (in units of eps)".into(),
            ));
        }
        if !ok(self.qr_min_aspect) {
            return Err(Error::InvalidArgument(
                "JacobiParams: qr_min_aspect must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// `(l, nb)` for a matrix with `n` columns (tall orientation): the even
/// block count and the block width [`JacobiState`] uses.
pub fn blocking_for(n: usize, params: &JacobiParams) -> (usize, usize) {
    solver::blocking(n, params)
}

/// The SVD of one matrix by [`gesvj`].
#[derive(Clone, Debug)]
pub struct JacobiSvd<T> {
    /// Singular values, descending (`k = min(m, n)`).
    pub values: Vec<T>,
    /// `m x k` left singular vectors, if asked for.
    pub u: Option<Mat<T>>,
    /// `k x n` right singular vectors (transposed), if asked for.
    pub vt: Option<Mat<T>>,
    /// The iteration's counters.
    pub stats: JacobiStats,
}

/// The thin SVD of one `m x n` matrix by blocked one-sided Jacobi.
///
/// Errors: [`Error::Shape`] for an empty matrix, [`Error::NonFinite`] for a
/// NaN or infinite entry, [`Error::NoConvergence`] if the sweep limit is hit,
/// [`Error::InvalidArgument`] for bad parameters.
pub fn gesvj<T: Scalar>(
    a: MatRef<'_, T>,
    vectors: bool,
    params: &JacobiParams,
) -> Result<JacobiSvd<T>> {
    params.validate()?;
    let (m, n) = (a.nrows(), a.ncols());
    if m == 0 || n == 0 {
        return Err(Error::Shape(format!("empty {m} x {n} matrix")));
    }
    crate::matrix::check_finite(a, false)?;
    let mut st = JacobiState::new(a, vectors, params);
    let mut ws = JacobiWorkspace::new();
    if st.run(&mut ws) != Status::Converged {
        return Err(Error::NoConvergence {
            stage: "jacobi",
            detail: format!("{} sweeps without convergence", st.stats().sweeps),
        });
    }
    let k = m.min(n);
    let mut values = vec![T::zero(); k];
    let (mut u, mut vt) = if vectors {
        (Some(Mat::zeros(m, k)), Some(Mat::zeros(k, n)))
    } else {
        (None, None)
    };
    let (mut ub, mut vb) = (vec![T::zero(); m * k], vec![T::zero(); k * n]);
    st.finish(
        &mut values,
        vectors.then_some(&mut ub[..]),
        vectors.then_some(&mut vb[..]),
    );
    if let (Some(u), Some(vt)) = (u.as_mut(), vt.as_mut()) {
        u.copy_from(MatRef::from_column_major_slice(&ub, m, k));
        vt.copy_from(MatRef::from_column_major_slice(&vb, k, n));
    }
    Ok(JacobiSvd {
        values,
        u,
        vt,
        stats: st.stats(),
    })
}
