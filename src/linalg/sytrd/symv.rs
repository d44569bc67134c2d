//! The symmetric matrix-vector product of the reduction (`dsymv`, lower), the
//! memory-bound half of `dsytrd`'s flops (Dongarra, Hammarling, Sorensen
//! 1989: each panel column needs `A22 v` against the not yet updated trailing
//! matrix).
//!
//! One pass over the lower triangle, **four columns at a time**: columns
//! `c..c + 4` give four dots (their parts below row `c + 3` times `v`) and
//! one fused four-column axpy into the rows below, so each entry of `A` is
//! read once and `v` and `w` once per four columns (`research/small-mid-evd.md`
//! §1: at small and mid n the BLAS-2 rate of this product is what decides
//! against LAPACK). The 4 x 4 diagonal blocks are done in scalar code.
//!
//! The inner loop ([`dot4_axpy4`]) is written with AVX-512 or AVX2 + FMA
//! intrinsics ([`Isa`]): left to the compiler, the lane loops with fused
//! multiply-adds were vectorised across lanes into 128-bit pieces with
//! shuffles and ran slower than the unfused loop. Every version performs
//! the same exactly rounded fused multiply-adds in the same order per lane
//! (64 bytes of lanes, reduced pairwise in a fixed order), so all of them,
//! the portable one included, give bitwise the same result.
//!
//! From [`SYMV_SPLIT_MIN`] rows on the product is computed as two partial
//! products over fixed column blocks of about equal area (columns `0..c` and
//! `c..`), summed in that order: the split depends only on the order, so the
//! result is bitwise the same whether the blocks run in turn or as two tasks
//! on a runtime ([`join`]).

use super::col;
use crate::error::Error;
use crate::linalg::simd::{reduce_lanes, Isa};
use crate::linalg::stedc::forked::join;
use crate::runtime::Runtime;
use crate::Scalar;
use faer::MatRef;
use std::any::TypeId;

/// Columns per pass of [`symv_cols`].
const COLS: usize = 4;

/// Smallest order whose product [`symv_lower_on`] computes as two column
/// blocks (run as two tasks when the runtime has several threads). Below it
/// the product (a few hundred KiB read from cache) takes about as long as
/// handing half of it to a parked helper.
pub const SYMV_SPLIT_MIN: usize = 512;

#[inline(always)]
/// `s_c = t_c . v` for the four columns `t_c` (64 bytes of lanes of partial
/// sums each, reduced pairwise) and `w += sum_c s_c t_c` in that order of
/// `c`, every step one fused multiply-add, over `v.len()` rows; `isa` picks
/// the kernel ([`Isa::detect`]'s, or the portable loop for `None`).
fn dot4_axpy4<T: Scalar>(
    isa: Option<Isa>,
    t: [&[T]; COLS],
    v: &[T],
    w: &mut [T],
    s: [T; COLS],
) -> [T; COLS] {
    let n = v.len();
    assert!(w.len() >= n && t.iter().all(|c| c.len() >= n));
    let f64_ = TypeId::of::<T>() == TypeId::of::<f64>();
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = isa {
        let f32_ = TypeId::of::<T>() == TypeId::of::<f32>();
        assert!(
            isa.runs() && (f64_ || f32_),
            "symv: {isa:?} for {}",
            T::NAME
        );
        let tp = t.map(|c| c.as_ptr());
        macro_rules! call {
            ($kernel:path, $t:ty) => {{
                let lanes = $kernel(
                    tp.map(|p| p as *const $t),
                    v.as_ptr() as *const $t,
                    w.as_mut_ptr() as *mut $t,
                    n,
                    s.map(|x| x.f64() as $t),
                );
                lanes.map(|l| T::of(reduce_lanes(l) as f64))
            }};
        }
        // SAFETY: `T` is the type named in each arm (checked above, so the
        // casts of `s` and of the results are exact), the CPU runs `isa`
        // (asserted), and the four columns, `v` and `w` hold at least `n`
        // values each (asserted).
        return unsafe {
            match (isa, f64_) {
                (Isa::Avx512, true) => call!(avx512_f64::dot4_axpy4, f64),
                (Isa::Avx512, false) => call!(avx512_f32::dot4_axpy4, f32),
                (Isa::Avx2, true) => call!(avx2_f64::dot4_axpy4, f64),
                (Isa::Avx2, false) => call!(avx2_f32::dot4_axpy4, f32),
            }
        };
    }
    let _ = isa;
    if f64_ {
        dot4_axpy4_portable::<T, 8>(t, v, w, s)
    } else {
        dot4_axpy4_portable::<T, 16>(t, v, w, s)
    }
}

/// [`dot4_axpy4`] in scalar code, `L` lanes (64 bytes of `T`).
fn dot4_axpy4_portable<T: Scalar, const L: usize>(
    t: [&[T]; COLS],
    v: &[T],
    w: &mut [T],
    s: [T; COLS],
) -> [T; COLS] {
    let mut acc = [[T::zero(); L]; COLS];
    for (k0, (vb, wb)) in v.chunks(L).zip(w.chunks_mut(L)).enumerate() {
        for (l, (&vv, ww)) in vb.iter().zip(wb).enumerate() {
            let k = k0 * L + l;
            for c in 0..COLS {
                let x = t[c][k];
                acc[c][l] = x.mul_add(vv, acc[c][l]);
                *ww = x.mul_add(s[c], *ww);
            }
        }
    }
    acc.map(reduce_lanes)
}

/// [`dot4_axpy4`] for one scalar type and instruction set (`$feature`): `$t`
/// in vectors `$v` of `$vl` values, `$nv` vectors per 64 bytes of lanes, with
/// that set's intrinsics. The rows past the last full 64 bytes are loaded
/// and stored masked: a masked-off lane adds `0 * 0` to its partial sum, which
/// leaves it unchanged (a partial sum is never `-0`: it starts at `+0` and a
/// fused multiply-add rounds an exact zero to `+0`), so the lanes agree with
/// the portable loop, which skips them.
#[cfg(target_arch = "x86_64")]
macro_rules! dot4_kernel {
    ($name:ident, $feature:literal, $t:ty, $v:ty, $vl:expr, $nv:expr,
     $load:ident, $store:ident, $set1:ident, $zero:ident, $fmadd:ident,
     [$($mload:tt)*], [$($mstore:tt)*]) => {
        mod $name {
            use super::COLS;
            use std::arch::x86_64::*;

            /// Lanes of partial sums per column: 64 bytes.
            const L: usize = $vl * $nv;

            /// The lanes of the four dots (unreduced) after `w += sum_c s_c t_c`.
            ///
            /// # Safety
            /// The CPU must support the module's instruction set; `t[c]`, `v`
            /// and `w` point to `n` readable (`w`: writable) values.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn dot4_axpy4(
                t: [*const $t; COLS],
                v: *const $t,
                w: *mut $t,
                n: usize,
                s: [$t; COLS],
            ) -> [[$t; L]; COLS] {
                let mut acc = [[$zero(); $nv]; COLS];
                let bs = s.map(|x| $set1(x));
                let mut k = 0;
                while k + L <= n {
                    for h in 0..$nv {
                        let o = k + h * $vl;
                        let vv = $load(v.add(o));
                        let mut ww = $load(w.add(o));
                        for c in 0..COLS {
                            let x = $load(t[c].add(o));
                            acc[c][h] = $fmadd(x, vv, acc[c][h]);
                            ww = $fmadd(x, bs[c], ww);
                        }
                        $store(w.add(o), ww);
                    }
                    k += L;
                }
                for h in 0..$nv {
                    let o = k + h * $vl;
                    if o >= n {
                        break;
                    }
                    let rem = (n - o).min($vl);
                    let vv = masked!(load $($mload)*, rem, v.add(o));
                    let mut ww = masked!(load $($mload)*, rem, w.add(o));
                    for c in 0..COLS {
                        let x = masked!(load $($mload)*, rem, t[c].add(o));
                        acc[c][h] = $fmadd(x, vv, acc[c][h]);
                        ww = $fmadd(x, bs[c], ww);
                    }
                    masked!(store $($mstore)*, rem, w.add(o), ww);
                }
                let mut out = [[0.0; L]; COLS];
                for c in 0..COLS {
                    for h in 0..$nv {
                        $store(out[c].as_mut_ptr().add(h * $vl), acc[c][h]);
                    }
                }
                out
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
dot4_kernel!(
    avx512_f64, "avx512f", f64, __m512d, 8, 1,
    _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_setzero_pd, _mm512_fmadd_pd,
    [avx512 _mm512_maskz_loadu_pd __mmask8], [avx512 _mm512_mask_storeu_pd __mmask8]
);
#[cfg(target_arch = "x86_64")]
dot4_kernel!(
    avx512_f32, "avx512f", f32, __m512, 16, 1,
    _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_setzero_ps, _mm512_fmadd_ps,
    [avx512 _mm512_maskz_loadu_ps __mmask16], [avx512 _mm512_mask_storeu_ps __mmask16]
);
#[cfg(target_arch = "x86_64")]
dot4_kernel!(
    avx2_f64, "avx2,fma", f64, __m256d, 4, 2,
    _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd, _mm256_setzero_pd, _mm256_fmadd_pd,
    [avx2 _mm256_maskload_pd mask_256d], [avx2 _mm256_maskstore_pd mask_256d]
);
#[cfg(target_arch = "x86_64")]
dot4_kernel!(
    avx2_f32, "avx2,fma", f32, __m256, 8, 2,
    _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_setzero_ps, _mm256_fmadd_ps,
    [avx2 _mm256_maskload_ps mask_256s], [avx2 _mm256_maskstore_ps mask_256s]
);

simd_dispatch! {
    /// `w[..m] := (the columns c0..c1 of A) v` for the `m x m` symmetric `A`
    /// whose lower triangle `a` holds (unit row stride), i.e. the entries
    /// `A[r, c]` and `A[c, r]` with `c` in `c0..c1` and `r >= c`; `c1 - c0` a
    /// multiple of [`COLS`] or `c1 = m`. Compiled for the CPU's vector
    /// extensions so that the scalar fused multiply-adds of the diagonal
    /// blocks are single instructions, not library calls.
    fn symv_cols / symv_cols_simd / symv_cols_body (isa: Option<Isa>, a: MatRef<'_, T>, c0: usize, c1: usize, v: &[T], w: &mut [T])
}

#[inline(always)]
fn symv_cols_body<T: Scalar>(
    isa: Option<Isa>,
    a: MatRef<'_, T>,
    c0: usize,
    c1: usize,
    v: &[T],
    w: &mut [T],
) {
    let m = a.nrows();
    let (v, w) = (&v[..m], &mut w[..m]);
    w.fill(T::zero());
    let mut c = c0;
    while c + COLS <= c1 {
        // Columns c..c + 4 from row c: their 4 x 4 diagonal block, then the
        // rows below it.
        let k: [&[T]; COLS] = std::array::from_fn(|j| col(a, c + j, c));
        let vc: [T; COLS] = std::array::from_fn(|j| v[c + j]);
        let below = k.map(|kj| &kj[COLS..]);
        let s = dot4_axpy4(isa, below, &v[c + COLS..], &mut w[c + COLS..], vc);
        for i in 0..COLS {
            let mut x = w[c + i];
            for (j, &vj) in vc.iter().enumerate() {
                // A[c + i, c + j] from the lower triangle.
                let aij = if i >= j { k[j][i] } else { k[i][j] };
                x = aij.mul_add(vj, x);
            }
            w[c + i] = x + s[i];
        }
        c += COLS;
    }
    // The last m - c < 4 columns (c1 = m): their lower triangle.
    for j in c..c1 {
        let kj = col(a, j, j);
        let mut x = kj[0].mul_add(v[j], w[j]);
        for (r, &arj) in kj.iter().enumerate().skip(1) {
            x = arj.mul_add(v[j + r], x);
            w[j + r] = arj.mul_add(v[j], w[j + r]);
        }
        w[j] = x;
    }
}

/// `w := A v` for the `m x m` symmetric `A` whose lower triangle `a` holds
/// (unit row stride, `v` and `w` of `m` entries at least), on `rt` from
/// [`SYMV_SPLIT_MIN`] rows on (module docs); `scratch` holds the second
/// block's partial product (resized as needed).
///
/// # Errors
/// Only the runtime's own ([`Runtime::run`]).
pub fn symv_lower_on<T: Scalar>(
    a: MatRef<'_, T>,
    v: &[T],
    w: &mut [T],
    scratch: &mut Vec<T>,
    rt: Option<&Runtime>,
) -> Result<(), Error> {
    let m = a.nrows();
    debug_assert!(a.ncols() == m && v.len() >= m && w.len() >= m);
    let isa = Isa::detect();
    if m < SYMV_SPLIT_MIN {
        symv_cols(isa, a, 0, m, v, w);
        return Ok(());
    }
    // Columns 0..c hold c m - c^2 / 2 entries, the rest (m - c)^2 / 2: equal
    // for c = m (1 - 1/sqrt 2); a multiple of four so that both blocks are
    // cut into the same column groups as one pass.
    let c = (((m as f64) * (1.0 - std::f64::consts::FRAC_1_SQRT_2)).round() as usize) & !(COLS - 1);
    if scratch.len() < m {
        scratch.resize(m, T::zero());
    }
    let (w, p) = (&mut w[..m], &mut scratch[..m]);
    {
        let (w, p) = (&mut *w, &mut *p);
        join(
            rt,
            move || {
                symv_cols(isa, a, 0, c, v, w);
                Ok(())
            },
            move || {
                symv_cols(isa, a, c, m, v, p);
                Ok(())
            },
        )?;
    }
    // The second block adds nothing above row c.
    for (x, &y) in w[c..].iter_mut().zip(&p[c..]) {
        *x += y;
    }
    Ok(())
}

/// [`symv_lower_on`] with no runtime and a scratch of its own.
pub fn symv_lower<T: Scalar>(a: MatRef<'_, T>, v: &[T], w: &mut [T]) {
    let mut scratch = Vec::new();
    symv_lower_on(a, v, w, &mut scratch, None).expect("no runtime, no run to fail");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random values in [-1, 1) with a spread of exponents, so that
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

    /// Every kernel the CPU runs gives the portable loop's bits, for lengths
    /// around the lane and vector widths (masked tails of every size).
    fn kernels_match_portable<T: Scalar>() {
        let isas: Vec<Isa> = [Isa::Avx512, Isa::Avx2]
            .into_iter()
            .filter(|i| i.runs())
            .collect();
        let mut fused_differs = false;
        for n in [0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100] {
            let cols: Vec<Vec<T>> = (0..COLS).map(|c| values(n, 11 + c as u64)).collect();
            let t: [&[T]; COLS] = std::array::from_fn(|c| cols[c].as_slice());
            let v = values::<T>(n, 5);
            let w0 = values::<T>(n, 9);
            let s: [T; COLS] = std::array::from_fn(|c| T::of(0.25 + c as f64 / 3.0));
            let mut w_ref = w0.clone();
            let d_ref = dot4_axpy4(None, t, &v, &mut w_ref, s);
            for &isa in &isas {
                let mut w = w0.clone();
                let d = dot4_axpy4(Some(isa), t, &v, &mut w, s);
                let bits = |x: &[T]| x.iter().map(|y| y.f64().to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&d), bits(&d_ref), "{} {isa:?} n={n}: dots", T::NAME);
                assert_eq!(bits(&w), bits(&w_ref), "{} {isa:?} n={n}: w", T::NAME);
            }
            // Negative control: the same steps unfused give other bits
            // somewhere, so the comparison above can tell the two apart.
            let mut w_unfused = w0.clone();
            for k in 0..n {
                for c in 0..COLS {
                    w_unfused[k] += t[c][k] * s[c];
                }
            }
            fused_differs |= w_unfused.iter().zip(&w_ref).any(|(a, b)| a != b);
        }
        assert!(fused_differs, "{}: no case tells FMA apart", T::NAME);
    }

    #[test]
    fn symv_kernels_match_portable_f64() {
        kernels_match_portable::<f64>();
    }

    #[test]
    fn symv_kernels_match_portable_f32() {
        kernels_match_portable::<f32>();
    }
}
