//! Exact scaling by powers of two: the tridiagonal and bidiagonal solvers
//! (`sterf`, `dqds`, the bidiagonal divide and conquer) scale their input into
//! a safe range and back by `2^k`, which changes no bit of the mantissas (as
//! LAPACK's `dlascl` does when its factor is a power of two).

use crate::Scalar;

/// `floor(log2 |x|)` for finite nonzero `x` (exact, from the binary representation).
pub(crate) fn exponent(x: f64) -> i32 {
    let (mant, exp, _) = num_traits::Float::integer_decode(x);
    exp as i32 + (63 - mant.leading_zeros() as i32)
}

/// Multiplies by `2^k` in two steps whose factors are representable in `T` (exact
/// unless a result is subnormal).
pub(crate) fn scale_pow2<T: Scalar>(x: &mut [T], k: i32) {
    let k1 = k / 2;
    let (f1, f2) = (T::of(2f64.powi(k1)), T::of(2f64.powi(k - k1)));
    for v in x.iter_mut() {
        *v = *v * f1 * f2;
    }
}
