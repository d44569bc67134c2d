//! 64 bytes of lanes of f64 or f32 for the bulge-chasing kernel
//! ([`super::apply`]): the portable version and, on x86-64, one AVX-512
//! register or two AVX2 registers, with the same results lane for lane
//! (exactly rounded fused multiply-adds, the same pairwise reduction).

use crate::linalg::blas::simd::reduce_lanes;
use crate::Scalar;

/// 64 bytes of lanes of `T` and the few operations the kernel needs. Every
/// method is `#[inline(always)]` and unsafe: the SIMD versions may only run
/// inside a function compiled for their instruction set, and the memory
/// ones read or write `L` values at `p` (lanes in `lo..hi` only; the
/// others are neither read nor written, and `p` may point outside the
/// storage for them).
pub(super) trait Lanes<T: Scalar>: Copy {
    /// Lanes per vector.
    const L: usize;
    unsafe fn zero() -> Self;
    unsafe fn splat(x: T) -> Self;
    /// Lanes `lo..hi` (clamped to `0..L`) from `p`, the others zero.
    unsafe fn load(p: *const T, lo: usize, hi: usize) -> Self;
    /// Stores lanes `lo..hi` (clamped) at `p`.
    unsafe fn store(self, p: *mut T, lo: usize, hi: usize);
    /// Lanes `lo..` kept, the others zero.
    unsafe fn keep_from(self, lo: usize) -> Self;
    /// `a b + c`, fused.
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self;
    /// `c - a b`, fused.
    unsafe fn fnma(a: Self, b: Self, c: Self) -> Self;
    unsafe fn mul(a: Self, b: Self) -> Self;
    unsafe fn add(a: Self, b: Self) -> Self;
    /// The lanes summed pairwise, as [`reduce_lanes`].
    unsafe fn sum(self) -> T;
}

/// The portable version: an array of lanes, `mul_add` for the fused
/// operations.
#[derive(Clone, Copy)]
pub(super) struct Portable<T, const L: usize>([T; L]);

impl<T: Scalar, const L: usize> Lanes<T> for Portable<T, L> {
    const L: usize = L;
    #[inline(always)]
    unsafe fn zero() -> Self {
        Portable([T::zero(); L])
    }
    #[inline(always)]
    unsafe fn splat(x: T) -> Self {
        Portable([x; L])
    }
    #[inline(always)]
    unsafe fn load(p: *const T, lo: usize, hi: usize) -> Self {
        let mut a = [T::zero(); L];
        for (l, x) in a.iter_mut().enumerate().take(hi.min(L)).skip(lo) {
            // SAFETY: lane `l` is in `lo..hi` (the caller's contract).
            *x = unsafe { *p.wrapping_add(l) };
        }
        Portable(a)
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut T, lo: usize, hi: usize) {
        for (l, &x) in self.0.iter().enumerate().take(hi.min(L)).skip(lo) {
            // SAFETY: as in `load`.
            unsafe { *p.wrapping_add(l) = x };
        }
    }
    #[inline(always)]
    unsafe fn keep_from(self, lo: usize) -> Self {
        let mut a = self.0;
        a.iter_mut().take(lo.min(L)).for_each(|x| *x = T::zero());
        Portable(a)
    }
    #[inline(always)]
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
        Portable(std::array::from_fn(|l| a.0[l].mul_add(b.0[l], c.0[l])))
    }
    #[inline(always)]
    unsafe fn fnma(a: Self, b: Self, c: Self) -> Self {
        Portable(std::array::from_fn(|l| (-a.0[l]).mul_add(b.0[l], c.0[l])))
    }
    #[inline(always)]
    unsafe fn mul(a: Self, b: Self) -> Self {
        Portable(std::array::from_fn(|l| a.0[l] * b.0[l]))
    }
    #[inline(always)]
    unsafe fn add(a: Self, b: Self) -> Self {
        Portable(std::array::from_fn(|l| a.0[l] + b.0[l]))
    }
    #[inline(always)]
    unsafe fn sum(self) -> T {
        reduce_lanes(self.0)
    }
}

/// The lanes `lo..hi` (clamped to `0..l`) as a bit mask.
#[inline(always)]
fn lane_mask(lo: usize, hi: usize, l: usize) -> u32 {
    let hi = hi.min(l) as u32;
    let lo = (lo as u32).min(hi);
    let below = |k: u32| if k >= 32 { u32::MAX } else { (1u32 << k) - 1 };
    below(hi) & !below(lo)
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    //! The AVX-512 and AVX2 + FMA versions of [`Lanes`].
    use super::{lane_mask, Lanes};
    use std::arch::x86_64::*;

    #[derive(Clone, Copy)]
    pub(in crate::linalg::band::sb2st) struct Avx512F64(__m512d);
    #[derive(Clone, Copy)]
    pub(in crate::linalg::band::sb2st) struct Avx512F32(__m512);
    /// Lanes 0-3 and 4-7.
    #[derive(Clone, Copy)]
    pub(in crate::linalg::band::sb2st) struct Avx2F64(__m256d, __m256d);
    /// Lanes 0-7 and 8-15.
    #[derive(Clone, Copy)]
    pub(in crate::linalg::band::sb2st) struct Avx2F32(__m256, __m256);

    /// Whether every lane of the register of lanes `base..base + r` is in
    /// `lo..hi`.
    #[inline(always)]
    fn whole(lo: usize, hi: usize, base: usize, r: usize) -> bool {
        lo <= base && hi >= base + r
    }

    /// Whether some lane of the register of lanes `base..base + r` is in
    /// `lo..hi`.
    #[inline(always)]
    fn some(lo: usize, hi: usize, base: usize, r: usize) -> bool {
        lo.max(base) < hi.min(base + r)
    }

    /// All ones in the 64-bit lanes `lo..hi` of lanes `base..base + 4`.
    #[inline(always)]
    unsafe fn mask_pd(lo: usize, hi: usize, base: i64) -> __m256i {
        let idx = _mm256_setr_epi64x(base, base + 1, base + 2, base + 3);
        let ge = _mm256_cmpgt_epi64(idx, _mm256_set1_epi64x(lo as i64 - 1));
        let lt = _mm256_cmpgt_epi64(_mm256_set1_epi64x(hi as i64), idx);
        _mm256_and_si256(ge, lt)
    }

    /// All ones in the 32-bit lanes `lo..hi` of lanes `base..base + 8`.
    #[inline(always)]
    unsafe fn mask_ps(lo: usize, hi: usize, base: i32) -> __m256i {
        let idx = _mm256_add_epi32(
            _mm256_set1_epi32(base),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        );
        let ge = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(lo as i32 - 1));
        let lt = _mm256_cmpgt_epi32(_mm256_set1_epi32(hi as i32), idx);
        _mm256_and_si256(ge, lt)
    }

    impl Avx2F64 {
        /// `(a0 + a2) + (a1 + a3)`: the last two halvings of `reduce_lanes`.
        #[inline(always)]
        pub(super) unsafe fn sum4(h: __m256d) -> f64 {
            let q = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd::<1>(h));
            _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)))
        }
    }

    impl Avx2F32 {
        /// Halves 4, 2, 1 of eight lanes, as `reduce_lanes`.
        #[inline(always)]
        pub(super) unsafe fn sum8(h: __m256) -> f32 {
            let q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps::<1>(h));
            let d = _mm_add_ps(q, _mm_movehl_ps(q, q));
            _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps::<0b01>(d, d)))
        }
    }

    /// [`Lanes`] for one AVX-512 register of `$t` (`$l` lanes), with
    /// that type's intrinsics; `$sum` reduces it pairwise.
    macro_rules! avx512_lanes {
        ($name:ident, $t:ty, $l:literal, $m:ty, $set1:ident, $zero:ident, $load:ident,
         $store:ident, $mov:ident, $fmadd:ident, $fnmadd:ident, $mul:ident,
         $add:ident, $sum:ident) => {
            impl Lanes<$t> for $name {
                const L: usize = $l;
                #[inline(always)]
                unsafe fn zero() -> Self {
                    Self($zero())
                }
                #[inline(always)]
                unsafe fn splat(x: $t) -> Self {
                    Self($set1(x))
                }
                #[inline(always)]
                unsafe fn load(p: *const $t, lo: usize, hi: usize) -> Self {
                    Self($load(lane_mask(lo, hi, $l) as $m, p))
                }
                #[inline(always)]
                unsafe fn store(self, p: *mut $t, lo: usize, hi: usize) {
                    $store(p, lane_mask(lo, hi, $l) as $m, self.0)
                }
                #[inline(always)]
                unsafe fn keep_from(self, lo: usize) -> Self {
                    Self($mov(lane_mask(lo, $l, $l) as $m, self.0))
                }
                #[inline(always)]
                unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
                    Self($fmadd(a.0, b.0, c.0))
                }
                #[inline(always)]
                unsafe fn fnma(a: Self, b: Self, c: Self) -> Self {
                    Self($fnmadd(a.0, b.0, c.0))
                }
                #[inline(always)]
                unsafe fn mul(a: Self, b: Self) -> Self {
                    Self($mul(a.0, b.0))
                }
                #[inline(always)]
                unsafe fn add(a: Self, b: Self) -> Self {
                    Self($add(a.0, b.0))
                }
                #[inline(always)]
                unsafe fn sum(self) -> $t {
                    $sum(self.0)
                }
            }
        };
    }

    avx512_lanes!(
        Avx512F64,
        f64,
        8,
        __mmask8,
        _mm512_set1_pd,
        _mm512_setzero_pd,
        _mm512_maskz_loadu_pd,
        _mm512_mask_storeu_pd,
        _mm512_maskz_mov_pd,
        _mm512_fmadd_pd,
        _mm512_fnmadd_pd,
        _mm512_mul_pd,
        _mm512_add_pd,
        sum_512d
    );
    avx512_lanes!(
        Avx512F32,
        f32,
        16,
        __mmask16,
        _mm512_set1_ps,
        _mm512_setzero_ps,
        _mm512_maskz_loadu_ps,
        _mm512_mask_storeu_ps,
        _mm512_maskz_mov_ps,
        _mm512_fmadd_ps,
        _mm512_fnmadd_ps,
        _mm512_mul_ps,
        _mm512_add_ps,
        sum_512s
    );

    /// Halves 4, 2, 1 of eight f64 lanes, as `reduce_lanes`.
    #[inline(always)]
    unsafe fn sum_512d(x: __m512d) -> f64 {
        Avx2F64::sum4(_mm256_add_pd(
            _mm512_castpd512_pd256(x),
            _mm512_extractf64x4_pd::<1>(x),
        ))
    }

    /// Halves 8, 4, 2, 1 of sixteen f32 lanes, as `reduce_lanes` (the upper
    /// eight lanes through the f64 view: AVX-512F has no f32x8 extract).
    #[inline(always)]
    unsafe fn sum_512s(x: __m512) -> f32 {
        Avx2F32::sum8(_mm256_add_ps(
            _mm512_castps512_ps256(x),
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(x))),
        ))
    }

    /// [`Lanes`] for two AVX2 registers of `$t` (`$r` lanes each), with
    /// that type's intrinsics; `$mask(lo, hi, base)` selects lanes `lo..hi`
    /// of those from `base`, and `$sum` reduces one register pairwise.
    macro_rules! avx2_lanes {
        ($name:ident, $t:ty, $r:literal, $set1:ident, $zero:ident, $load:ident, $store:ident,
         $loadu:ident, $storeu:ident,
         $and:ident, $cast:ident, $fmadd:ident, $fnmadd:ident, $mul:ident,
         $add:ident, $mask:ident, $sum:path) => {
            impl Lanes<$t> for $name {
                const L: usize = 2 * $r;
                #[inline(always)]
                unsafe fn zero() -> Self {
                    Self($zero(), $zero())
                }
                #[inline(always)]
                unsafe fn splat(x: $t) -> Self {
                    Self($set1(x), $set1(x))
                }
                #[inline(always)]
                unsafe fn load(p: *const $t, lo: usize, hi: usize) -> Self {
                    // Per register: a plain load where all of its lanes
                    // are in `lo..hi`, a masked one where some are, none
                    // where none are (see `store`).
                    let q = p.wrapping_add($r);
                    let first = if whole(lo, hi, 0, $r) {
                        $loadu(p)
                    } else if some(lo, hi, 0, $r) {
                        $load(p, $mask(lo, hi, 0))
                    } else {
                        $zero()
                    };
                    let second = if whole(lo, hi, $r, $r) {
                        $loadu(q)
                    } else if some(lo, hi, $r, $r) {
                        $load(q, $mask(lo, hi, $r))
                    } else {
                        $zero()
                    };
                    Self(first, second)
                }
                #[inline(always)]
                unsafe fn store(self, p: *mut $t, lo: usize, hi: usize) {
                    // Per register as in `load`: a masked store is
                    // microcoded on AMD cores, and with every store masked
                    // the kernel took 1.3-1.8 times as long on a Zen 3.
                    let q = p.wrapping_add($r);
                    if whole(lo, hi, 0, $r) {
                        $storeu(p, self.0);
                    } else if some(lo, hi, 0, $r) {
                        $store(p, $mask(lo, hi, 0), self.0);
                    }
                    if whole(lo, hi, $r, $r) {
                        $storeu(q, self.1);
                    } else if some(lo, hi, $r, $r) {
                        $store(q, $mask(lo, hi, $r), self.1);
                    }
                }
                #[inline(always)]
                unsafe fn keep_from(self, lo: usize) -> Self {
                    let (m0, m1) = ($mask(lo, 2 * $r, 0), $mask(lo, 2 * $r, $r));
                    Self($and(self.0, $cast(m0)), $and(self.1, $cast(m1)))
                }
                #[inline(always)]
                unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
                    Self($fmadd(a.0, b.0, c.0), $fmadd(a.1, b.1, c.1))
                }
                #[inline(always)]
                unsafe fn fnma(a: Self, b: Self, c: Self) -> Self {
                    Self($fnmadd(a.0, b.0, c.0), $fnmadd(a.1, b.1, c.1))
                }
                #[inline(always)]
                unsafe fn mul(a: Self, b: Self) -> Self {
                    Self($mul(a.0, b.0), $mul(a.1, b.1))
                }
                #[inline(always)]
                unsafe fn add(a: Self, b: Self) -> Self {
                    Self($add(a.0, b.0), $add(a.1, b.1))
                }
                #[inline(always)]
                unsafe fn sum(self) -> $t {
                    $sum($add(self.0, self.1))
                }
            }
        };
    }

    avx2_lanes!(
        Avx2F64,
        f64,
        4,
        _mm256_set1_pd,
        _mm256_setzero_pd,
        _mm256_maskload_pd,
        _mm256_maskstore_pd,
        _mm256_loadu_pd,
        _mm256_storeu_pd,
        _mm256_and_pd,
        _mm256_castsi256_pd,
        _mm256_fmadd_pd,
        _mm256_fnmadd_pd,
        _mm256_mul_pd,
        _mm256_add_pd,
        mask_pd,
        Avx2F64::sum4
    );
    avx2_lanes!(
        Avx2F32,
        f32,
        8,
        _mm256_set1_ps,
        _mm256_setzero_ps,
        _mm256_maskload_ps,
        _mm256_maskstore_ps,
        _mm256_loadu_ps,
        _mm256_storeu_ps,
        _mm256_and_ps,
        _mm256_castsi256_ps,
        _mm256_fmadd_ps,
        _mm256_fnmadd_ps,
        _mm256_mul_ps,
        _mm256_add_ps,
        mask_ps,
        Avx2F32::sum8
    );
}
