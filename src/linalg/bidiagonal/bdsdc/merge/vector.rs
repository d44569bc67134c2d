//! The coefficient vectors of a root of the bidiagonal merge's secular
//! equation (the right and left singular vectors of the rank-one problem,
//! Gu and Eisenstat 1995), normalised, in loops that vectorise.

use crate::linalg::tridiagonal::stedc::merge::unit_scale;
use crate::scalar::Scalar;

simd_dispatch! {
    /// The coefficient vectors of the root `sigma` (`d_origin + tau`) of the
    /// SVD's secular equation: `y_i = zhat_i / ((d_i - sigma)(d_i +
    /// sigma))`, the factors formed as [`Root::diff_sum`](crate::linalg::tridiagonal::stedc::secular::Root::diff_sum) forms them, and
    /// `x_i = d_i y_i` with `x_0 = -1`; returns the factors that scale `y`
    /// and `x` to unit norm ([`unit_scale`]). Compiled for AVX2 or AVX-512
    /// when the CPU has them (a division per entry, for every singular
    /// vector of every merge); the same bits either way.
    pub(super) fn svd_root_vectors / svd_root_vectors_simd / svd_root_vectors_body (
        zhat: &[T],
        d: &[T],
        d_origin: T,
        tau: T,
        y: &mut [T],
        x: &mut [T]
    ) -> (Option<T>, Option<T>)
}

#[inline(always)]
fn svd_root_vectors_body<T: Scalar>(
    zhat: &[T],
    d: &[T],
    d_origin: T,
    tau: T,
    y: &mut [T],
    x: &mut [T],
) -> (Option<T>, Option<T>) {
    for (((yi, xi), &zi), &di) in y.iter_mut().zip(x.iter_mut()).zip(zhat).zip(d) {
        let (a, b) = ((di - d_origin) - tau, (di + d_origin) + tau);
        *yi = zi / (a * b);
        *xi = di * *yi;
    }
    x[0] = -T::one();
    (unit_scale(y), unit_scale(x))
}
