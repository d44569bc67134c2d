//! The eigenvectors of the rank-one problem of a merge: `u = (D - lambda)^{-1}
//! z-hat` (Gu and Eisenstat 1994; LAPACK `dlaed3`) and the factor that
//! normalises it, in loops that vectorise.

use crate::linalg::blas::simd::reduce_lanes;
use crate::scalar::Scalar;

simd_dispatch! {
    /// `u_i = z_i / (d_i - lambda)` for a root `lambda = d_origin + tau`, the
    /// differences formed as
    /// [`Root::delta`](crate::linalg::tridiagonal::stedc::secular::Root::delta)
    /// forms them, and the factor that scales `u` to unit norm
    /// ([`unit_scale`]). Compiled for AVX2 or AVX-512
    /// when the CPU has them (two divisions per entry, for every eigenvector
    /// of every merge); the same bits either way.
    pub(super) fn root_vector / root_vector_simd / root_vector_body (
        z: &[T],
        d: &[T],
        d_origin: T,
        tau: T,
        u: &mut [T]
    ) -> Option<T>
}

#[inline(always)]
fn root_vector_body<T: Scalar>(z: &[T], d: &[T], d_origin: T, tau: T, u: &mut [T]) -> Option<T> {
    for ((ui, &zi), &di) in u.iter_mut().zip(z).zip(d) {
        *ui = zi / ((di - d_origin) - tau);
    }
    unit_scale(u)
}

/// The factor that scales `u` to unit 2-norm, from the scaled sum of squares (no
/// overflow for huge entries); `None` if `u` is zero or not finite.
///
/// Both passes run in [`UNIT_LANES`] interleaved lanes in a fixed order, so
/// they vectorise and the sum of squares is not one chain of dependent
/// additions (it is formed once per eigenvector of every merge).
#[inline(always)]
pub(crate) fn unit_scale<T: Scalar>(u: &[T]) -> Option<T> {
    const L: usize = UNIT_LANES;
    let zero = T::zero();
    let (blocks, tail) = u.split_at(u.len() - u.len() % L);
    // The largest magnitude (max is exact: any order gives the same value)
    // and a NaN / infinity test as a sum: `0 x` is 0 for a finite x and NaN
    // otherwise, and a NaN stays in the sum (a max would drop it).
    let mut amax = [zero; L];
    let mut bad = [zero; L];
    for b in blocks.chunks_exact(L) {
        for l in 0..L {
            amax[l] = amax[l].max(b[l].abs());
            bad[l] += b[l] * zero;
        }
    }
    let (mut m, mut finite) = (zero, true);
    for l in 0..L {
        m = m.max(amax[l]);
        finite &= bad[l] == zero;
    }
    for &x in tail {
        finite &= x.is_finite();
        m = m.max(x.abs());
    }
    if m <= zero || !finite {
        return None;
    }
    let mut ss = [zero; L];
    for b in blocks.chunks_exact(L) {
        for l in 0..L {
            let y = b[l] / m;
            ss[l] += y * y;
        }
    }
    for (l, &x) in tail.iter().enumerate() {
        let y = x / m;
        ss[l] += y * y;
    }
    Some(T::one() / (m * reduce_lanes(ss).sqrt()))
}

/// Lanes of [`unit_scale`]'s sums.
const UNIT_LANES: usize = 8;
