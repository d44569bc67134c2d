//! A register-blocked kernel for one parallelogram compact-WY block on the
//! transposed column block `Y = Z^T` (see [`super::chain`]), for short
//! reflectors (the SVD's `L = TW + 1`, 16 or 17 for f64) where the panel GEMMs
//! have inner dimensions near 15 and a general GEMM's per-call and packing
//! cost dominates (measured: the faer panel path reached about a quarter of
//! the one-thread GEMM rate at n = 2048, b = 32, TW = 16).
//!
//! The rows of `Y` (columns of `Z`) are independent: the kernel walks them in
//! chunks of `R` lanes (two 256-bit vectors; for f64 on AVX-512, two 512-bit
//! vectors) and, per chunk,
//!
//! 1. `W = Y_R V` four columns of `V` at a time, over the rows where one of
//!    the four is nonzero (one load of `Y` feeds four fused multiply-adds per
//!    lane);
//! 2. `W := W T^T` in place (`T` upper triangular);
//! 3. `Y_R -= W V^T` four rows of `Y_R` at a time (one load of `W` feeds four).
//!
//! Every lane performs the same sequence of fused multiply-adds whatever the
//! chunk width, so any split of the columns of `Z` (threads, column blocks)
//! gives bitwise the same result. It runs only where the CPU has AVX2 and FMA
//! ([`available`]); elsewhere the engine uses its GEMM path.

use crate::Scalar;
use faer::{MatMut, MatRef};

/// Whether this CPU runs the kernel (x86-64 with AVX2 and FMA).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `Y_R := Y_R - (Y_R V) T^T V^T` for `yr` (`kc x nr`, unit row stride), `v`
/// (`nr x kp`, column `i` zero outside rows `[i, i + l)`), `t` (`kp x kp`
/// upper triangular), `kp` a multiple of 4 (padding columns of `v` and rows
/// and columns of `t` zero). `w` is scratch of `kp * 16` values at least.
///
/// Panics unless [`available`] (callers check it once).
pub fn apply_block<T: Scalar>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    yr: MatMut<'_, T>,
    w: &mut [T],
) {
    assert!(available(), "chain_fma::apply_block needs AVX2 and FMA");
    assert!(v.ncols().is_multiple_of(4) && t.nrows() == v.ncols() && t.ncols() == v.ncols());
    assert!(yr.ncols() == v.nrows() && w.len() >= v.ncols() * 16);
    #[cfg(target_arch = "x86_64")]
    {
        if std::mem::size_of::<T>() == 8 && std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { apply_block_avx512(v, t, l, yr, w) };
        }
        // SAFETY: the CPU has AVX2 and FMA (asserted above).
        unsafe { apply_block_avx2(v, t, l, yr, w) }
    }
}

/// [`apply_block_body`] compiled for AVX-512F on chunks of 16 lanes (two
/// 512-bit vectors) where they fit, for f64: measured at n = 1536 on a Zen 4
/// EPYC, 20.0 against 18.5 GF/s (medians of ten runs of `--q2-kernel`); for
/// f32 the wider chunk measured no faster (35.9 against 38.6), and chunks of
/// 32 lanes ran at a third of the rate (the accumulators no longer stay in
/// registers), so f32 keeps the AVX2 kernel.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn apply_block_avx512<T: Scalar>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    yr: MatMut<'_, T>,
    w: &mut [T],
) {
    apply_block_wide::<T, 16>(v, t, l, yr, w)
}

/// [`apply_block_body`] compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA (the caller checks [`available`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn apply_block_avx2<T: Scalar>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    yr: MatMut<'_, T>,
    w: &mut [T],
) {
    apply_block_body(v, t, l, yr, w)
}

/// Chunks of `R` lanes where they fit, then the rest as [`apply_block_body`].
#[inline(always)]
fn apply_block_wide<T: Scalar, const R: usize>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    mut yr: MatMut<'_, T>,
    w: &mut [T],
) {
    let kc = yr.nrows();
    let c = chunks::<T, R>(v, t, l, yr.rb_mut(), 0, w);
    apply_block_body(v, t, l, yr.subrows_mut(c, kc - c), w)
}

/// Chunks of 8 lanes (f64) or 16 (f32), then one lane at a time.
#[inline(always)]
fn apply_block_body<T: Scalar>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    mut yr: MatMut<'_, T>,
    w: &mut [T],
) {
    let c = if std::mem::size_of::<T>() == 8 {
        chunks::<T, 8>(v, t, l, yr.rb_mut(), 0, w)
    } else {
        chunks::<T, 16>(v, t, l, yr.rb_mut(), 0, w)
    };
    chunks::<T, 1>(v, t, l, yr, c, w);
}

/// [`chunk`] on lanes `c..`, `R` at a time while a whole chunk fits; returns
/// the first lane not done.
#[inline(always)]
fn chunks<T: Scalar, const R: usize>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    mut yr: MatMut<'_, T>,
    mut c: usize,
    w: &mut [T],
) -> usize {
    while c + R <= yr.nrows() {
        chunk::<T, R>(v, t, l, yr.rb_mut(), c, w);
        c += R;
    }
    c
}

use faer::reborrow::*;

#[inline(always)]
fn col<'a, T>(m: MatRef<'a, T>, j: usize) -> &'a [T] {
    m.col(j)
        .try_as_col_major()
        .expect("unit row stride")
        .as_slice()
}

#[inline(always)]
fn col_mut<'a, T>(m: MatMut<'a, T>, j: usize) -> &'a mut [T] {
    m.col_mut(j)
        .try_as_col_major_mut()
        .expect("unit row stride")
        .as_slice_mut()
}

/// The three phases on lanes `[c, c + R)` of `yr` (module docs).
#[inline(always)]
fn chunk<T: Scalar, const R: usize>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    mut yr: MatMut<'_, T>,
    c: usize,
    wbuf: &mut [T],
) {
    let (nr, kp) = (v.nrows(), v.ncols());
    let w = &mut wbuf[..kp * R];
    // 1. W = Y_R V, columns i .. i + 4 (nonzero in rows [i, i + 3 + l)).
    for i in (0..kp).step_by(4) {
        let (v0, v1, v2, v3) = (col(v, i), col(v, i + 1), col(v, i + 2), col(v, i + 3));
        let mut acc = [[T::zero(); R]; 4];
        for r in i.min(nr)..(i + 3 + l).min(nr) {
            let y: &[T; R] = col(yr.rb(), r)[c..c + R].try_into().unwrap();
            let vv = [v0[r], v1[r], v2[r], v3[r]];
            for (acc_a, &va) in acc.iter_mut().zip(&vv) {
                for (x, &yq) in acc_a.iter_mut().zip(y) {
                    *x = yq.mul_add(va, *x);
                }
            }
        }
        for (a, acc_a) in acc.iter().enumerate() {
            w[(i + a) * R..(i + a + 1) * R].copy_from_slice(acc_a);
        }
    }
    // 2. W := W T^T: w_i = sum_{j >= i} T(i, j) w_j, top down in place.
    for i in 0..kp {
        let mut acc = [T::zero(); R];
        for j in i..kp {
            let tij = t[(i, j)];
            let wj: &[T; R] = w[j * R..(j + 1) * R].try_into().unwrap();
            for (x, &wq) in acc.iter_mut().zip(wj) {
                *x = wq.mul_add(tij, *x);
            }
        }
        w[i * R..(i + 1) * R].copy_from_slice(&acc);
    }
    // 3. Y_R -= W V^T, rows r .. r + 4 (row r is nonzero in columns
    //    (r + 1 - l) ..= r of V).
    let mut r = 0;
    while r < nr {
        let q4 = (nr - r).min(4);
        let lo = (r + 1).saturating_sub(l);
        let hi = (r + q4).min(kp);
        if q4 == 4 {
            rows::<T, R, 4>(v, w, &mut yr, c, r, lo..hi);
        } else {
            for rr in r..r + q4 {
                let lo = (rr + 1).saturating_sub(l);
                rows::<T, R, 1>(v, w, &mut yr, c, rr, lo..(rr + 1).min(kp));
            }
        }
        r += q4;
    }
}

/// `Y_R[c.., r .. r + Q] -= sum_{i in cols} w_i V(r .., i)`.
#[inline(always)]
fn rows<T: Scalar, const R: usize, const Q: usize>(
    v: MatRef<'_, T>,
    w: &[T],
    yr: &mut MatMut<'_, T>,
    c: usize,
    r: usize,
    cols: std::ops::Range<usize>,
) {
    let mut acc = [[T::zero(); R]; Q];
    for (a, acc_a) in acc.iter_mut().enumerate() {
        acc_a.copy_from_slice(&col(yr.as_ref(), r + a)[c..c + R]);
    }
    for i in cols {
        let vi = col(v, i);
        let wi: &[T; R] = w[i * R..(i + 1) * R].try_into().unwrap();
        for (a, acc_a) in acc.iter_mut().enumerate() {
            let m = -vi[r + a];
            for (x, &wq) in acc_a.iter_mut().zip(wi) {
                *x = wq.mul_add(m, *x);
            }
        }
    }
    for (a, acc_a) in acc.iter().enumerate() {
        col_mut(yr.rb_mut(), r + a)[c..c + R].copy_from_slice(acc_a);
    }
}
