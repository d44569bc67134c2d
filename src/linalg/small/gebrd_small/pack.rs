//! The element arithmetic of the lane kernels (module `lanes`): one element
//! of an interleaved group, `[T; L]`, as one SIMD value.
//!
//! Why explicit: written as loops over the lanes, the element loops of
//! `gebd2` and `org2r` were vectorised by the compiler *across elements*
//! (each register holding one lane of four consecutive elements), with
//! every load and store transposed by shuffles; a profile of 20,000 32 x 32
//! SVDs showed the shuffles as the hottest instructions of `gebd2`. In a
//! microbenchmark (`x -= t v` over 32 elements of `[f64; 4]`, in L1), the
//! loop took 0.92 ns per element, one 256-bit operation per step 0.29 ns.
//!
//! The operations are the same scalar operations in the same order per lane
//! (a product rounded, then a sum: no fused multiply-add), so every
//! [`Arith`] gives bitwise the same results.

use crate::Scalar;

/// The element operations on `[T; L]`, lane by lane, each product rounded
/// before the sum.
pub(super) trait Arith: Copy {
    /// `x - t v`.
    fn sub_mul<T: Scalar, const L: usize>(self, x: [T; L], t: [T; L], v: [T; L]) -> [T; L];
    /// `s + a b`.
    fn add_mul<T: Scalar, const L: usize>(self, s: [T; L], a: [T; L], b: [T; L]) -> [T; L];
    /// `a b`.
    fn mul<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// `a + b`.
    fn add<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
    /// `a - b`.
    fn sub<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L];
}

/// Lane by lane in scalar code (any CPU, any `L`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Portable;

impl Arith for Portable {
    #[inline(always)]
    fn sub_mul<T: Scalar, const L: usize>(self, x: [T; L], t: [T; L], v: [T; L]) -> [T; L] {
        std::array::from_fn(|l| x[l] - t[l] * v[l])
    }
    #[inline(always)]
    fn add_mul<T: Scalar, const L: usize>(self, s: [T; L], a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| s[l] + a[l] * b[l])
    }
    #[inline(always)]
    fn mul<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l] * b[l])
    }
    #[inline(always)]
    fn add<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l] + b[l])
    }
    #[inline(always)]
    fn sub<T: Scalar, const L: usize>(self, a: [T; L], b: [T; L]) -> [T; L] {
        std::array::from_fn(|l| a[l] - b[l])
    }
}

/// `x` as a `B` when `A` and `B` are the same type (a type-id comparison
/// that the compiler resolves per instantiation).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn same<A: 'static, B: 'static + Copy>(x: &A) -> Option<B> {
    (x as &dyn std::any::Any).downcast_ref::<B>().copied()
}

/// AVX: `[f64; 4]` as one 256-bit vector, `[f32; 4]` as one 128-bit vector;
/// any other `(T, L)` lane by lane. Holding a value proves that the CPU runs
/// AVX: its only constructor, [`Avx::detect`], checks.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub(super) struct Avx(());

#[cfg(target_arch = "x86_64")]
impl Avx {
    /// `Some` when the CPU runs AVX.
    pub(super) fn detect() -> Option<Avx> {
        std::is_x86_feature_detected!("avx").then_some(Avx(()))
    }
}

/// One [`Arith`] operation of [`Avx`]: `$pd` on `[f64; 4]` and `$ps` on
/// `[f32; 4]`, applied to the arguments' vectors; [`Portable`] otherwise.
#[cfg(target_arch = "x86_64")]
macro_rules! avx_op {
    ($name:ident ($($arg:ident),+), |$($x:ident),+| $pd:expr, $ps:expr) => {
        #[inline(always)]
        fn $name<T: Scalar, const L: usize>(self, $($arg: [T; L]),+) -> [T; L] {
            use std::arch::x86_64::*;
            if let ($(Some($arg),)+) = ($(same::<_, [f64; 4]>(&$arg),)+) {
                let mut out = [0.0f64; 4];
                // SAFETY: `self` proves that the CPU runs AVX; each pointer
                // is that of a `[f64; 4]`, 32 readable (or writable) bytes.
                unsafe {
                    let ($($x,)+) = ($(_mm256_loadu_pd($arg.as_ptr()),)+);
                    _mm256_storeu_pd(out.as_mut_ptr(), $pd);
                }
                return same::<_, [T; L]>(&out).expect("T = f64, L = 4");
            }
            if let ($(Some($arg),)+) = ($(same::<_, [f32; 4]>(&$arg),)+) {
                let mut out = [0.0f32; 4];
                // SAFETY: SSE is part of x86-64; each pointer is that of a
                // `[f32; 4]`, 16 readable (or writable) bytes.
                unsafe {
                    let ($($x,)+) = ($(_mm_loadu_ps($arg.as_ptr()),)+);
                    _mm_storeu_ps(out.as_mut_ptr(), $ps);
                }
                return same::<_, [T; L]>(&out).expect("T = f32, L = 4");
            }
            Portable.$name($($arg),+)
        }
    };
}

#[cfg(target_arch = "x86_64")]
impl Arith for Avx {
    avx_op!(
        sub_mul(x, t, v),
        |x, t, v| _mm256_sub_pd(x, _mm256_mul_pd(t, v)),
        _mm_sub_ps(x, _mm_mul_ps(t, v))
    );
    avx_op!(
        add_mul(s, a, b),
        |s, a, b| _mm256_add_pd(s, _mm256_mul_pd(a, b)),
        _mm_add_ps(s, _mm_mul_ps(a, b))
    );
    avx_op!(mul(a, b), |a, b| _mm256_mul_pd(a, b), _mm_mul_ps(a, b));
    avx_op!(add(a, b), |a, b| _mm256_add_pd(a, b), _mm_add_ps(a, b));
    avx_op!(sub(a, b), |a, b| _mm256_sub_pd(a, b), _mm_sub_ps(a, b));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation of [`Avx`] gives the bits of [`Portable`] on values
    /// whose products and sums round (and on the types and widths it does
    /// not vectorise).
    #[test]
    fn avx_matches_portable() {
        #[cfg(target_arch = "x86_64")]
        if let Some(avx) = Avx::detect() {
            check::<f64, 4>(avx);
            check::<f32, 4>(avx);
            check::<f64, 2>(avx);
            check::<f32, 1>(avx);
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn check<T: Scalar, const L: usize>(avx: Avx) {
        let mut seed = 0x9e37_79b9_u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            T::of((seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        };
        // Whether a fused multiply-add would have been caught (it rounds
        // once, so it differs from `s + a b` on some of these values).
        let mut fused_differs = false;
        for _ in 0..1000 {
            let (a, b, c): ([T; L], [T; L], [T; L]) = (
                std::array::from_fn(|_| next()),
                std::array::from_fn(|_| next()),
                std::array::from_fn(|_| next()),
            );
            let bits = |x: [T; L]| x.map(|v| v.f64().to_bits());
            assert_eq!(bits(avx.sub_mul(a, b, c)), bits(Portable.sub_mul(a, b, c)));
            assert_eq!(bits(avx.add_mul(a, b, c)), bits(Portable.add_mul(a, b, c)));
            assert_eq!(bits(avx.mul(a, b)), bits(Portable.mul(a, b)));
            assert_eq!(bits(avx.add(a, b)), bits(Portable.add(a, b)));
            assert_eq!(bits(avx.sub(a, b)), bits(Portable.sub(a, b)));
            let fused: [T; L] = std::array::from_fn(|l| b[l].mul_add(c[l], a[l]));
            fused_differs |= bits(fused) != bits(Portable.add_mul(a, b, c));
        }
        assert!(fused_differs, "the values never tell a fused product apart");
    }
}
