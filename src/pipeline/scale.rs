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
    if anrm > T::zero() && anrm < rmin {
        rmin / anrm
    } else if anrm > rmax {
        rmax / anrm
    } else {
        T::one()
    }
}
