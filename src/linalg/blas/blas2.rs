//! The fused multiply-add kernels of the BLAS-2 loops: `C` columns `t_c` at
//! a time, their dot products with a vector `v` and/or the update `w += sum_c
//! s_c t_c`, in one pass over the rows. `sytrd`'s symmetric product needs
//! both ([`dots_axpys`]), the `gemv`s of `dlatrd` and `dlabrd` one or the
//! other ([`dots`], [`axpys`]).
//!
//! Written with AVX-512 or AVX2 + FMA intrinsics ([`Isa`]): left to the
//! compiler, the lane loops with fused multiply-adds were vectorised across
//! lanes into 128-bit pieces with shuffles and ran slower than unfused code.
//! Every version performs the same exactly rounded fused multiply-adds in the
//! same order:
//!
//! - a dot product keeps 64 bytes of lanes of partial sums (lane `l` sums the
//!   rows `k = l mod L` from the slice's start), reduced pairwise in a fixed
//!   order ([`reduce_lanes`]);
//! - row `k` of `w` becomes `fma(t_{C-1}[k], s_{C-1}, ... fma(t_0[k], s_0,
//!   w[k]))`, the columns in order.
//!
//! So every kernel, the portable one included, gives bitwise the same result,
//! and a product cut by rows (updates) or by columns (dots) gives the same
//! bits as the whole.

use crate::linalg::blas::simd::{reduce_lanes, Isa};
use crate::Scalar;
use std::any::TypeId;

/// `[t_c . v]` over `v.len()` rows.
#[inline]
pub(crate) fn dots<T: Scalar, const C: usize>(isa: Option<Isa>, t: [&[T]; C], v: &[T]) -> [T; C] {
    let n = v.len();
    assert!(t.iter().all(|c| c.len() >= n), "blas2::dots: short column");
    // SAFETY: every column holds `n` values; `w` is not touched.
    unsafe { run::<T, C, true, false>(isa, t, v.as_ptr(), std::ptr::null_mut(), n, [T::zero(); C]) }
}

/// `w += sum_c s_c t_c` over `w.len()` rows.
#[inline]
pub(crate) fn axpys<T: Scalar, const C: usize>(
    isa: Option<Isa>,
    t: [&[T]; C],
    s: [T; C],
    w: &mut [T],
) {
    let n = w.len();
    assert!(t.iter().all(|c| c.len() >= n), "blas2::axpys: short column");
    // SAFETY: every column and `w` hold `n` values; `v` is not read.
    unsafe { run::<T, C, false, true>(isa, t, std::ptr::null(), w.as_mut_ptr(), n, s) };
}

/// `[t_c . v]` and `w += sum_c s_c t_c` in one pass over `v.len()` rows.
#[inline]
pub(crate) fn dots_axpys<T: Scalar, const C: usize>(
    isa: Option<Isa>,
    t: [&[T]; C],
    v: &[T],
    w: &mut [T],
    s: [T; C],
) -> [T; C] {
    let n = v.len();
    assert!(
        w.len() >= n && t.iter().all(|c| c.len() >= n),
        "blas2::dots_axpys: short column or w"
    );
    // SAFETY: every column, `v` and `w` hold at least `n` values.
    unsafe { run::<T, C, true, true>(isa, t, v.as_ptr(), w.as_mut_ptr(), n, s) }
}

/// The dispatch: `isa`'s kernel for f64 or f32, the portable loop for `None`
/// (or another scalar type). Returns the reduced dots (zeros without `DOT`).
///
/// # Safety
/// The columns hold `n` values each; with `DOT` `v` points to `n` readable
/// values, with `AXPY` `w` to `n` writable ones.
#[inline]
unsafe fn run<T: Scalar, const C: usize, const DOT: bool, const AXPY: bool>(
    isa: Option<Isa>,
    t: [&[T]; C],
    v: *const T,
    w: *mut T,
    n: usize,
    s: [T; C],
) -> [T; C] {
    let f64_ = TypeId::of::<T>() == TypeId::of::<f64>();
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = isa {
        let f32_ = TypeId::of::<T>() == TypeId::of::<f32>();
        assert!(
            isa.runs() && (f64_ || f32_),
            "blas2: {isa:?} for {}",
            T::NAME
        );
        let tp = t.map(|c| c.as_ptr());
        macro_rules! call {
            ($kernel:ident, $t:ty) => {{
                let lanes = $kernel::kernel::<C, DOT, AXPY>(
                    tp.map(|p| p as *const $t),
                    v as *const $t,
                    w as *mut $t,
                    n,
                    s.map(|x| x.f64() as $t),
                );
                lanes.map(|l| T::of(reduce_lanes(l) as f64))
            }};
        }
        // SAFETY: `T` is the type named in each arm (checked above, so the
        // casts of `s` and of the results are exact), the CPU runs `isa`
        // (asserted), and the pointers are valid for `n` values (the
        // caller's contract).
        return unsafe {
            match (isa, f64_) {
                (Isa::Avx512, true) => call!(avx512_f64, f64),
                (Isa::Avx512, false) => call!(avx512_f32, f32),
                (Isa::Avx2, true) => call!(avx2_f64, f64),
                (Isa::Avx2, false) => call!(avx2_f32, f32),
            }
        };
    }
    let _ = isa;
    // SAFETY: the caller's contract.
    unsafe {
        if f64_ {
            portable::<T, C, DOT, AXPY, 8>(t, v, w, n, s)
        } else {
            portable::<T, C, DOT, AXPY, 16>(t, v, w, n, s)
        }
    }
}

/// [`run`] in scalar code, `L` lanes (64 bytes of `T`).
///
/// # Safety
/// As [`run`].
// Row `k` indexes the columns, the lanes and two raw pointers at once.
#[allow(clippy::needless_range_loop)]
unsafe fn portable<T: Scalar, const C: usize, const DOT: bool, const AXPY: bool, const L: usize>(
    t: [&[T]; C],
    v: *const T,
    w: *mut T,
    n: usize,
    s: [T; C],
) -> [T; C] {
    let mut acc = [[T::zero(); L]; C];
    for k in 0..n {
        let l = k % L;
        // SAFETY: `k < n`, and with `DOT` `v` holds `n` readable values.
        let vv = if DOT { unsafe { *v.add(k) } } else { T::zero() };
        let mut ww = if AXPY {
            // SAFETY: `k < n`, and with `AXPY` `w` holds `n` writable values.
            unsafe { *w.add(k) }
        } else {
            T::zero()
        };
        for c in 0..C {
            let x = t[c][k];
            if DOT {
                acc[c][l] = x.mul_add(vv, acc[c][l]);
            }
            if AXPY {
                ww = x.mul_add(s[c], ww);
            }
        }
        if AXPY {
            // SAFETY: as above.
            unsafe { *w.add(k) = ww };
        }
    }
    acc.map(reduce_lanes)
}

/// [`run`]'s kernel for one scalar type and instruction set (`$feature`):
/// `$t` in vectors `$v` of `$vl` values, `$nv` vectors per 64 bytes of lanes,
/// with that set's intrinsics. The rows past the last full 64 bytes are
/// loaded and stored masked: a masked-off lane adds `0 * 0` to its partial
/// sum, which leaves it unchanged (a partial sum is never `-0`: it starts at
/// `+0` and a fused multiply-add rounds an exact zero to `+0`), so the lanes
/// agree with the portable loop, which does not visit them.
#[cfg(target_arch = "x86_64")]
macro_rules! blas2_kernel {
    ($name:ident, $feature:literal, $t:ty, $v:ty, $vl:expr, $nv:expr,
     $load:ident, $store:ident, $set1:ident, $zero:ident, $fmadd:ident,
     [$($mload:tt)*], [$($mstore:tt)*]) => {
        mod $name {
            use std::arch::x86_64::*;

            /// Lanes of partial sums per column: 64 bytes.
            const L: usize = $vl * $nv;

            /// The lanes of the `C` dots (unreduced, with `DOT`) and, with
            /// `AXPY`, `w += sum_c s_c t_c`.
            ///
            /// # Safety
            /// The CPU must support the module's instruction set; `t[c]`
            /// point to `n` readable values, `v` too with `DOT`, `w` to `n`
            /// writable ones with `AXPY`.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn kernel<const C: usize, const DOT: bool, const AXPY: bool>(
                t: [*const $t; C],
                v: *const $t,
                w: *mut $t,
                n: usize,
                s: [$t; C],
            ) -> [[$t; L]; C] {
                let mut acc = [[$zero(); $nv]; C];
                let bs = s.map(|x| $set1(x));
                let mut k = 0;
                while k + L <= n {
                    for h in 0..$nv {
                        let o = k + h * $vl;
                        let vv = if DOT { $load(v.add(o)) } else { $zero() };
                        let mut ww = if AXPY { $load(w.add(o)) } else { $zero() };
                        for c in 0..C {
                            let x = $load(t[c].add(o));
                            if DOT {
                                acc[c][h] = $fmadd(x, vv, acc[c][h]);
                            }
                            if AXPY {
                                ww = $fmadd(x, bs[c], ww);
                            }
                        }
                        if AXPY {
                            $store(w.add(o), ww);
                        }
                    }
                    k += L;
                }
                for h in 0..$nv {
                    let o = k + h * $vl;
                    if o >= n {
                        break;
                    }
                    let rem = (n - o).min($vl);
                    let vv = if DOT { masked!(load $($mload)*, rem, v.add(o)) } else { $zero() };
                    let mut ww = if AXPY { masked!(load $($mload)*, rem, w.add(o)) } else { $zero() };
                    for c in 0..C {
                        let x = masked!(load $($mload)*, rem, t[c].add(o));
                        if DOT {
                            acc[c][h] = $fmadd(x, vv, acc[c][h]);
                        }
                        if AXPY {
                            ww = $fmadd(x, bs[c], ww);
                        }
                    }
                    if AXPY {
                        masked!(store $($mstore)*, rem, w.add(o), ww);
                    }
                }
                let mut out = [[0.0; L]; C];
                if DOT {
                    for c in 0..C {
                        for h in 0..$nv {
                            $store(out[c].as_mut_ptr().add(h * $vl), acc[c][h]);
                        }
                    }
                }
                out
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
blas2_kernel!(
    avx512_f64, "avx512f", f64, __m512d, 8, 1,
    _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_setzero_pd, _mm512_fmadd_pd,
    [avx512 _mm512_maskz_loadu_pd __mmask8], [avx512 _mm512_mask_storeu_pd __mmask8]
);
#[cfg(target_arch = "x86_64")]
blas2_kernel!(
    avx512_f32, "avx512f", f32, __m512, 16, 1,
    _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_setzero_ps, _mm512_fmadd_ps,
    [avx512 _mm512_maskz_loadu_ps __mmask16], [avx512 _mm512_mask_storeu_ps __mmask16]
);
#[cfg(target_arch = "x86_64")]
blas2_kernel!(
    avx2_f64, "avx2,fma", f64, __m256d, 4, 2,
    _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_setzero_pd, _mm256_fmadd_pd,
    [avx2 _mm256_maskload_pd mask_256d], [avx2 _mm256_maskstore_pd mask_256d]
);
#[cfg(target_arch = "x86_64")]
blas2_kernel!(
    avx2_f32, "avx2,fma", f32, __m256, 8, 2,
    _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_setzero_ps, _mm256_fmadd_ps,
    [avx2 _mm256_maskload_ps mask_256s], [avx2 _mm256_maskstore_ps mask_256s]
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random values in [-7, 7) with a spread of exponents, so that
    /// a fused and an unfused multiply-add round differently.
    fn values<T: Scalar>(n: usize, seed: u64) -> Vec<T> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (s >> 11) as f64 / (1u64 << 53) as f64;
                T::of((2.0 * u - 1.0) * (1.0 + (s % 7) as f64))
            })
            .collect()
    }

    fn bits<T: Scalar>(x: &[T]) -> Vec<u64> {
        x.iter().map(|y| y.f64().to_bits()).collect()
    }

    /// Every kernel the CPU runs gives the portable loop's bits, for the
    /// three forms, column counts 1 and 4, and lengths around the lane and
    /// vector widths (masked tails of every size).
    fn kernels_match_portable<T: Scalar, const C: usize>() {
        let isas: Vec<Isa> = [Isa::Avx512, Isa::Avx2]
            .into_iter()
            .filter(|i| i.runs())
            .collect();
        let mut fused_differs = false;
        for n in [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100] {
            let cols: Vec<Vec<T>> = (0..C).map(|c| values(n, 11 + c as u64)).collect();
            let t: [&[T]; C] = std::array::from_fn(|c| cols[c].as_slice());
            let v = values::<T>(n, 5);
            let w0 = values::<T>(n, 9);
            let s: [T; C] = std::array::from_fn(|c| T::of(0.3 + c as f64 / 3.0));
            let mut w_ref = w0.clone();
            let d_ref = dots_axpys(None, t, &v, &mut w_ref, s);
            let d_only = dots(None, t, &v);
            let mut w_only = w0.clone();
            axpys(None, t, s, &mut w_only);
            // The one-sided forms do the same steps as the fused one.
            assert_eq!(bits(&d_only), bits(&d_ref), "{} n={n}: dots alone", T::NAME);
            assert_eq!(
                bits(&w_only),
                bits(&w_ref),
                "{} n={n}: axpys alone",
                T::NAME
            );
            for &isa in &isas {
                let mut w = w0.clone();
                let d = dots_axpys(Some(isa), t, &v, &mut w, s);
                assert_eq!(bits(&d), bits(&d_ref), "{} {isa:?} n={n}: dots", T::NAME);
                assert_eq!(bits(&w), bits(&w_ref), "{} {isa:?} n={n}: w", T::NAME);
                assert_eq!(bits(&dots(Some(isa), t, &v)), bits(&d_ref), "{isa:?} dots");
                let mut w = w0.clone();
                axpys(Some(isa), t, s, &mut w);
                assert_eq!(bits(&w), bits(&w_ref), "{} {isa:?} n={n}: axpys", T::NAME);
            }
            // Negative control: the same steps unfused give other bits
            // somewhere, so the comparisons above can tell the two apart.
            let mut w_unfused = w0.clone();
            for k in 0..n {
                for c in 0..C {
                    w_unfused[k] += t[c][k] * s[c];
                }
            }
            fused_differs |= w_unfused.iter().zip(&w_ref).any(|(a, b)| a != b);
        }
        assert!(fused_differs, "{}: no case tells FMA apart", T::NAME);
    }

    #[test]
    fn kernels_match_portable_f64() {
        kernels_match_portable::<f64, 4>();
        kernels_match_portable::<f64, 1>();
    }

    #[test]
    fn kernels_match_portable_f32() {
        kernels_match_portable::<f32, 4>();
        kernels_match_portable::<f32, 1>();
    }
}
