//! The lane arithmetic of the Jacobi sweep (module `lanes`): one
//! interleaved element, `[T; L]` (one entry per matrix of the group), as one
//! SIMD value.
//!
//! Why explicit: written as loops over the lanes, the sweep was compiled to
//! scalar code for most of its steps (a profile of 100,000 3 x 3
//! eigendecompositions showed `vsqrtsd`, `vdivsd` and `vmulsd`, one lane at
//! a time, as its hottest instructions), since the compiler's vectoriser
//! gave up on the rotation's chain of square roots and divisions.
//!
//! Every operation is the same correctly rounded IEEE operation per lane in
//! [`Portable`] and [`Avx`] (no fused multiply-add, no approximate
//! reciprocals), so both give bitwise the same results. A mask is a
//! `[T; L]` whose representation belongs to the implementation that made
//! it (`1` / `0` for [`Portable`], all bits set / clear for [`Avx`]); only
//! the same implementation reads it back.

use crate::Scalar;

/// The element operations on `[T; L]`, lane by lane.
pub(super) trait Ops: Copy {
    /// `a + b`.
    fn add<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// `a - b`.
    fn sub<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// `a b`.
    fn mul<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// `a / b`.
    fn div<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// `sqrt(a)`.
    fn sqrt<T: Scalar, const L: usize>(self, a: [T; L]) -> [T; L];
    /// `|a|`.
    fn abs<T: Scalar, const L: usize>(self, a: [T; L]) -> [T; L];
    /// `w` with its sign flipped where `d`'s sign bit is set: `sgn(d) w`
    /// with `sgn(+-0) = +-1`.
    fn sign_of<T: Scalar, const L: usize>(self, w: [T; L], d: [T; L]) -> [T; L];
    /// The mask of `a > b`.
    fn gt<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// The mask of lanes set in both masks.
    fn and<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// The mask of lanes set in either mask.
    fn or<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// `new` where `mask` is set, else `old` (bits kept).
    fn select<T: Scalar, const L: usize>(self, mask: [T; L], new: [T; L], old: [T; L]) -> [T; L];
    /// The mask as one `bool` per lane.
    fn lanes<T: Scalar, const L: usize>(self, mask: [T; L]) -> [bool; L];
}

/// Lane by lane in scalar code (any CPU, any `T` and `L`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Portable;

impl Ops for Portable {
    #[inline(always)]
    fn add<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l] + b[l])
    }
    #[inline(always)]
    fn sub<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l] - b[l])
    }
    #[inline(always)]
    fn mul<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l] * b[l])
    }
    #[inline(always)]
    fn div<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l] / b[l])
    }
    #[inline(always)]
    fn sqrt<T: Scalar, const L: usize>(self, a: [T; L]) -> [T; L] {
        a.map(|x| x.sqrt())
    }
    #[inline(always)]
    fn abs<T: Scalar, const L: usize>(self, a: [T; L]) -> [T; L] {
        a.map(|x| x.abs())
    }
    #[inline(always)]
    fn sign_of<T: Scalar, const L: usize>(self, w: [T; L], d: [T; L]) -> [T; L] {
        // A product by +-1 is exact: the sign bit of `w` flipped or kept.
        std::array::from_fn(|l| w[l] * T::one().copysign(d[l]))
    }
    #[inline(always)]
    fn gt<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| flag(a[l] > b[l]))
    }
    #[inline(always)]
    fn and<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l] * b[l])
    }
    #[inline(always)]
    fn or<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l].max(b[l]))
    }
    #[inline(always)]
    fn select<T: Scalar, const L: usize>(self, mask: [T; L], new: [T; L], old: [T; L]) -> [T; L] {
        std::array::from_fn(|l| if mask[l] != T::zero() { new[l] } else { old[l] })
    }
    #[inline(always)]
    fn lanes<T: Scalar, const L: usize>(self, mask: [T; L]) -> [bool; L] {
        mask.map(|m| m != T::zero())
    }
}

/// [`Portable`]'s mask value of `b`.
#[inline(always)]
fn flag<T: Scalar>(b: bool) -> T {
    if b {
        T::one()
    } else {
        T::zero()
    }
}

/// `x` as a `B` when `A` and `B` are the same type (a type-id comparison
/// that the compiler resolves per instantiation).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn same<A: 'static, B: 'static + Copy>(x: &A) -> Option<B> {
    (x as &dyn std::any::Any).downcast_ref::<B>().copied()
}

/// AVX: `[f64; 8]` as two 256-bit vectors, `[f32; 8]` as one; any other
/// `(T, L)` as [`Portable`]. Holding a value proves that the CPU runs AVX:
/// its only constructor, [`Avx::detect`], checks.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub(super) struct Avx(());

#[cfg(target_arch = "x86_64")]
impl Avx {
    /// `Some` when the CPU runs AVX.
    #[inline(always)]
    pub(super) fn detect() -> Option<Avx> {
        std::is_x86_feature_detected!("avx").then_some(Avx(()))
    }
}

/// One [`Ops`] operation of [`Avx`] on `$n` arguments: `$pd` on each
/// 256-bit half of `[f64; 8]`, `$ps` on `[f32; 8]`, the portable form
/// `$portable` otherwise.
#[cfg(target_arch = "x86_64")]
macro_rules! avx_op {
    ($name:ident ($($arg:ident),+), |$($x:ident),+| $pd:expr, $ps:expr) => {
        #[inline(always)]
        fn $name<T: Scalar, const L: usize>(self, $($arg: [T; L]),+) -> [T; L] {
            use std::arch::x86_64::*;
            if let ($(Some($arg),)+) = ($(same::<_, [f64; 8]>(&$arg),)+) {
                let mut out = [0.0f64; 8];
                for h in [0, 4] {
                    // SAFETY: `self` proves that the CPU runs AVX; each
                    // pointer is 4 `f64` into an `[f64; 8]`, 32 readable
                    // (or writable) bytes.
                    unsafe {
                        let ($($x,)+) = ($(_mm256_loadu_pd($arg.as_ptr().add(h)),)+);
                        _mm256_storeu_pd(out.as_mut_ptr().add(h), $pd);
                    }
                }
                return same::<_, [T; L]>(&out).expect("T = f64, L = 8");
            }
            if let ($(Some($arg),)+) = ($(same::<_, [f32; 8]>(&$arg),)+) {
                let mut out = [0.0f32; 8];
                // SAFETY: as above, 8 `f32` in an `[f32; 8]`.
                unsafe {
                    let ($($x,)+) = ($(_mm256_loadu_ps($arg.as_ptr()),)+);
                    _mm256_storeu_ps(out.as_mut_ptr(), $ps);
                }
                return same::<_, [T; L]>(&out).expect("T = f32, L = 8");
            }
            Portable.$name($($arg),+)
        }
    };
}

#[cfg(target_arch = "x86_64")]
impl Ops for Avx {
    avx_op!(add(a, b), |a, b| _mm256_add_pd(a, b), _mm256_add_ps(a, b));
    avx_op!(sub(a, b), |a, b| _mm256_sub_pd(a, b), _mm256_sub_ps(a, b));
    avx_op!(mul(a, b), |a, b| _mm256_mul_pd(a, b), _mm256_mul_ps(a, b));
    avx_op!(div(a, b), |a, b| _mm256_div_pd(a, b), _mm256_div_ps(a, b));
    avx_op!(sqrt(a), |a| _mm256_sqrt_pd(a), _mm256_sqrt_ps(a));
    avx_op!(
        abs(a),
        |a| _mm256_andnot_pd(_mm256_set1_pd(-0.0), a),
        _mm256_andnot_ps(_mm256_set1_ps(-0.0), a)
    );
    avx_op!(
        sign_of(w, d),
        |w, d| _mm256_xor_pd(w, _mm256_and_pd(d, _mm256_set1_pd(-0.0))),
        _mm256_xor_ps(w, _mm256_and_ps(d, _mm256_set1_ps(-0.0)))
    );
    avx_op!(
        gt(a, b),
        |a, b| _mm256_cmp_pd::<_CMP_GT_OQ>(a, b),
        _mm256_cmp_ps::<_CMP_GT_OQ>(a, b)
    );
    avx_op!(and(a, b), |a, b| _mm256_and_pd(a, b), _mm256_and_ps(a, b));
    avx_op!(or(a, b), |a, b| _mm256_or_pd(a, b), _mm256_or_ps(a, b));
    avx_op!(
        select(m, new, old),
        |m, new, old| _mm256_blendv_pd(old, new, m),
        _mm256_blendv_ps(old, new, m)
    );
    #[inline(always)]
    fn lanes<T: Scalar, const L: usize>(self, mask: [T; L]) -> [bool; L] {
        // A set mask lane is all ones, a NaN; a clear one is +0.
        mask.map(|m| m.f64().to_bits() != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation of [`Avx`] gives the bits of [`Portable`] (masks
    /// compared through `lanes` and `select`), on values whose products,
    /// quotients and roots round, signed zeros included.
    #[test]
    fn avx_matches_portable() {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx) = Avx::detect() {
            check::<f64, 8>(avx);
            check::<f32, 8>(avx);
            check::<f64, 3>(avx);
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn check<T: Scalar, const L: usize>(avx: Avx) {
        let mut seed = 0x9e37_79b9_u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            match seed >> 60 {
                0 => T::zero(),
                1 => -T::zero(),
                _ => T::of((seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0),
            }
        };
        let bits = |x: [T; L]| x.map(|v| v.f64().to_bits());
        for _ in 0..1000 {
            let (a, b, c): ([T; L], [T; L], [T; L]) = (
                std::array::from_fn(|_| next()),
                std::array::from_fn(|_| next()),
                std::array::from_fn(|_| next()),
            );
            let p = Portable;
            let pos = p.abs(a);
            assert_eq!(bits(avx.add(a, b)), bits(p.add(a, b)));
            assert_eq!(bits(avx.sub(a, b)), bits(p.sub(a, b)));
            assert_eq!(bits(avx.mul(a, b)), bits(p.mul(a, b)));
            assert_eq!(bits(avx.div(a, c)), bits(p.div(a, c)));
            assert_eq!(bits(avx.sqrt(pos)), bits(p.sqrt(pos)));
            assert_eq!(bits(avx.abs(a)), bits(pos));
            assert_eq!(bits(avx.sign_of(a, b)), bits(p.sign_of(a, b)));
            let (ma, pa) = (avx.gt(a, b), p.gt(a, b));
            let (mb, pb) = (avx.gt(b, c), p.gt(b, c));
            assert_eq!(avx.lanes(ma), p.lanes(pa));
            assert_eq!(avx.lanes(avx.and(ma, mb)), p.lanes(p.and(pa, pb)));
            assert_eq!(avx.lanes(avx.or(ma, mb)), p.lanes(p.or(pa, pb)));
            assert_eq!(bits(avx.select(ma, b, c)), bits(p.select(pa, b, c)));
        }
    }
}
