//! The LAPACK-style scaling of an input into the safe range, shared by the
//! pipelines.

use crate::Scalar;

/// The factor that brings a matrix whose largest magnitude is `anrm` into the
/// safe range, as LAPACK `dsyevd`/`dgesdd` do: `rmin / anrm` when
/// `0 < anrm < rmin`, `rmax / anrm` when `anrm > rmax`, 1 otherwise, with
/// `rmin = sqrt(safmin / eps)`, `rmax = sqrt(eps / safmin)`. Squares and
/// products of entries of the scaled matrix then neither overflow nor lose
/// everything to underflow.
pub(crate) fn safe_range_factor<T: Scalar>(anrm: T) -> T {
    let smlnum = T::SAFE_MIN / T::EPS;
    let (rmin, rmax) = (smlnum.sqrt(), (T::one() / smlnum).sqrt());
    factor_into(anrm, rmin, rmax)
}

/// The factor for the selective solvers (bisection and inverse iteration),
/// as LAPACK `dsyevx`/`dsyevr` choose it: the range of
/// [`safe_range_factor`] with its upper end lowered to
/// `min(sqrt(bignum), 1 / sqrt(sqrt(safmin)))` (about `8e76` in f64, `3e9`
/// in f32).
///
/// Why lower: inverse iteration scales its right-hand side to
/// `n ||T||_1 max(eps, |u_nn|)` before the solve (`dstein`), which is of the
/// order `||T||^2`; at `rmax = sqrt(eps / safmin)` (1e146 in f64, 3e15 in
/// f32) that overflows, and the iteration cannot converge.
pub(crate) fn selection_range_factor<T: Scalar>(anrm: T) -> T {
    let smlnum = T::SAFE_MIN / T::EPS;
    let rmin = smlnum.sqrt();
    let rmax = (T::one() / smlnum)
        .sqrt()
        .min(T::one() / T::SAFE_MIN.sqrt().sqrt());
    factor_into(anrm, rmin, rmax)
}

/// `rmin / anrm` below `rmin`, `rmax / anrm` above `rmax`, else 1.
fn factor_into<T: Scalar>(anrm: T, rmin: T, rmax: T) -> T {
    if anrm > T::zero() && anrm < rmin {
        rmin / anrm
    } else if anrm > rmax {
        rmax / anrm
    } else {
        T::one()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_range_is_lapacks() {
        // dsyevx: rmax = min(sqrt(bignum), 1/sqrt(sqrt(safmin))).
        let f = selection_range_factor(1e152f64);
        assert!((f * 1e152 - 1.0 / f64::MIN_POSITIVE.sqrt().sqrt()).abs() < 1e62);
        assert!(f * 1e152 < 1e77);
        let g = selection_range_factor(1e16f32);
        assert!(g * 1e16 < 4e9 && g * 1e16 > 2e9);
        assert_eq!(selection_range_factor(1.0f64), 1.0);
        assert!(safe_range_factor(1e152f64) * 1e152 > 1e140);
    }
}
