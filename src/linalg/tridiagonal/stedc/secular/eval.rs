//! The evaluation of the secular function at an iterate (LAPACK `dlaed4`'s
//! inner loops), in fixed interleaved lanes so that it vectorises.

use crate::linalg::blas::simd::reduce_lanes;
use std::ops::Range;

use super::{c, Frame};
use crate::scalar::Scalar;

/// Value and derivative information of `w(tau) = 1/rho + psi + phi` at one point.
pub(super) struct Eval<T> {
    pub(super) w: T,
    pub(super) dpsi: T,
    pub(super) dphi: T,
    /// Bound on the rounding error of `w`, in units of `eps` (as `dlaed4`'s `erretm`).
    pub(super) err: T,
    /// `D_j - lambda` for `j = split` and `j = split + 1` (the interval's poles).
    pub(super) del_lo: T,
    pub(super) del_hi: T,
}

/// Independent partial sums per pass of [`eval`]: enough chains to hide the
/// latency of the divisions and additions, and a fixed order (lane `l` sums
/// the terms `j = l mod LANES`), so the result does not depend on how the
/// compiler vectorises the loop; a block's quotients go through
/// [`crate::linalg::tridiagonal::stedc::secular::quotient`].
const LANES: usize = crate::linalg::tridiagonal::stedc::secular::quotient::LANES;

/// Sums over the poles `range` of `t_j = z_j / (D_j - lambda)`: `(sum z_j t_j,
/// sum t_j^2, sum c_j |z_j t_j|)` with `c_j = j - base` (`weight_up`) or
/// `base - j`. All terms `z_j t_j` of one side of the root have the same sign,
/// so the weighted sum equals the sum of the partial sums' magnitudes that
/// `dlaed4` accumulates into its error bound (each term counted once per
/// partial sum that contains it), without a serial dependence between terms.
/// `FAST`: the quotients by reciprocal (only in [`eval_avx512`], see
/// [`crate::linalg::tridiagonal::stedc::secular::quotient`]).
#[inline(always)]
fn side_sums<T: Scalar, F: Frame<T>, const FAST: bool>(
    frame: &F,
    z: &[T],
    range: Range<usize>,
    tau: T,
    base: usize,
    weight_up: bool,
) -> (T, T, T) {
    let zero = T::zero();
    // The lane sums `[s, ds, a, b]`: the weighted sum as `sum_l w_l a_l +
    // step sum_l b_l`: lane `l`'s weight in block `blk` is `w_l + step blk`,
    // so `a_l` sums `|z_j t_j|` and `b_l` sums `blk |z_j t_j|`. A per-lane
    // weight array stepped every block kept LLVM from vectorising the loop at
    // all (one `vdivsd` per term).
    let mut sums = [[zero; LANES]; 4];
    let mut blk = zero;
    let w: [T; LANES] = std::array::from_fn(|l| weight(range.start + l, base, weight_up));
    let step = c::<T>(if weight_up {
        LANES as f64
    } else {
        -(LANES as f64)
    });
    let mut j = range.start;
    while j + LANES <= range.end {
        let del = frame.deltas::<LANES>(j, tau);
        // One bounds check per block, not one per lane.
        let zb: &[T; LANES] = z[j..j + LANES].try_into().expect("LANES entries");
        // SAFETY: `FAST` is set only in `eval_avx512`, which runs after the
        // CPU's AVX-512F was detected.
        unsafe { add_block::<T, FAST>(&mut sums, zb, &del, blk) };
        blk += T::one();
        j += LANES;
    }
    let [mut s, mut ds, a, b] = sums;
    let mut ws: [T; LANES] = std::array::from_fn(|l| w[l] * a[l] + step * b[l]);
    for (l, jj) in (j..range.end).enumerate() {
        let t = z[jj] / frame.delta(jj, tau);
        let term = z[jj] * t;
        s[l] += term;
        ds[l] += t * t;
        ws[l] += weight::<T>(jj, base, weight_up) * term.abs();
    }
    (reduce_lanes(s), reduce_lanes(ds), reduce_lanes(ws))
}

/// Adds the block `t = z / del` to the lane sums `[s, ds, a, b]` of
/// [`side_sums`]: `z t`, `t^2`, `|z t|` and `blk |z t|`, unfused. With `FAST`
/// in explicit AVX-512 code: left to itself LLVM split the four eight-lane
/// sums into 256-, 128-bit and scalar pieces with shuffles between them, which
/// cost more than the divisions.
///
/// # Safety
/// With `FAST` the CPU must support AVX-512F ([`crate::linalg::tridiagonal::stedc::secular::quotient`]).
#[inline(always)]
unsafe fn add_block<T: Scalar, const FAST: bool>(
    sums: &mut [[T; LANES]; 4],
    zb: &[T; LANES],
    del: &[T; LANES],
    blk: T,
) {
    #[cfg(target_arch = "x86_64")]
    if FAST {
        use std::any::TypeId;
        if TypeId::of::<T>() == TypeId::of::<f64>() {
            // SAFETY: `T` is `f64` (checked just above), so the casts
            // reinterpret arrays of the same type; AVX-512F is the caller's
            // contract.
            unsafe {
                fast::add_block_f64(
                    &mut *(sums as *mut [[T; LANES]; 4] as *mut [[f64; LANES]; 4]),
                    &*(zb as *const [T; LANES] as *const [f64; LANES]),
                    &*(del as *const [T; LANES] as *const [f64; LANES]),
                    blk.f64(),
                );
            }
            return;
        }
        if TypeId::of::<T>() == TypeId::of::<f32>() {
            // SAFETY: as above, with `f32` (`blk`, a small integer, is exact
            // in either precision).
            unsafe {
                fast::add_block_f32(
                    &mut *(sums as *mut [[T; LANES]; 4] as *mut [[f32; LANES]; 4]),
                    &*(zb as *const [T; LANES] as *const [f32; LANES]),
                    &*(del as *const [T; LANES] as *const [f32; LANES]),
                    blk.f64() as f32,
                );
            }
            return;
        }
    }
    let [s, ds, a, b] = sums;
    for l in 0..LANES {
        let t = zb[l] / del[l];
        let term = zb[l] * t;
        s[l] += term;
        ds[l] += t * t;
        let m = term.abs();
        a[l] += m;
        b[l] += blk * m;
    }
}

/// [`add_block`]'s explicit AVX-512 versions.
#[cfg(target_arch = "x86_64")]
mod fast {
    use super::LANES;
    use crate::linalg::tridiagonal::stedc::secular::quotient::avx512::{quotient_pd, quotient_ps};
    use std::arch::x86_64::*;

    /// [`super::add_block`] for f64.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn add_block_f64(
        sums: &mut [[f64; LANES]; 4],
        z: &[f64; LANES],
        del: &[f64; LANES],
        blk: f64,
    ) {
        // SAFETY (every intrinsic): AVX-512F is the caller's contract; every
        // load and store is of an array of exactly eight f64.
        unsafe {
            let zv = _mm512_loadu_pd(z.as_ptr());
            let t = quotient_pd(zv, _mm512_loadu_pd(del.as_ptr()));
            let term = _mm512_mul_pd(zv, t);
            let m = _mm512_abs_pd(term);
            let add = |acc: &mut [f64; LANES], x: __m512d| {
                _mm512_storeu_pd(
                    acc.as_mut_ptr(),
                    _mm512_add_pd(_mm512_loadu_pd(acc.as_ptr()), x),
                );
            };
            let [s, ds, a, b] = sums;
            add(s, term);
            add(ds, _mm512_mul_pd(t, t));
            add(a, m);
            add(b, _mm512_mul_pd(_mm512_set1_pd(blk), m));
        }
    }

    /// [`super::add_block`] for f32.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn add_block_f32(
        sums: &mut [[f32; LANES]; 4],
        z: &[f32; LANES],
        del: &[f32; LANES],
        blk: f32,
    ) {
        // SAFETY (every intrinsic): AVX-512F (which implies AVX) is the
        // caller's contract; every load and store is of an array of exactly
        // eight f32.
        unsafe {
            let zv = _mm256_loadu_ps(z.as_ptr());
            let t = quotient_ps(zv, _mm256_loadu_ps(del.as_ptr()));
            let term = _mm256_mul_ps(zv, t);
            let m = _mm256_andnot_ps(_mm256_set1_ps(-0.0), term);
            let add = |acc: &mut [f32; LANES], x: __m256| {
                _mm256_storeu_ps(
                    acc.as_mut_ptr(),
                    _mm256_add_ps(_mm256_loadu_ps(acc.as_ptr()), x),
                );
            };
            let [s, ds, a, b] = sums;
            add(s, term);
            add(ds, _mm256_mul_ps(t, t));
            add(a, m);
            add(b, _mm256_mul_ps(_mm256_set1_ps(blk), m));
        }
    }
}

/// `j - base` (`up`) or `base - j`, as a float (exact: small integers).
#[inline(always)]
fn weight<T: Scalar>(j: usize, base: usize, up: bool) -> T {
    let (j, b) = (j as f64, base as f64);
    c::<T>(if up { j - b } else { b - j })
}

/// Evaluates the secular function at the iterate `tau` of `frame` (`k` poles).
/// `psi` sums the poles `0..=split`, `phi` the poles `split+1..k`, each in
/// [`LANES`] interleaved partial sums. Compiled for AVX-512 or AVX2 when the
/// CPU has them (the crate targets baseline x86-64, and the divisions of this
/// loop are most of the secular solver's time): the lanes fix the order of
/// every sum and no multiply-add is fused; the AVX-512 version forms the
/// quotients without the divider ([`crate::linalg::tridiagonal::stedc::secular::quotient`]: the division's bits in every
/// case tested), so each version gives the same bits.
pub(super) fn eval<T: Scalar, F: Frame<T>>(
    frame: &F,
    k: usize,
    z: &[T],
    tau: T,
    split: usize,
    rhoinv: T,
) -> Eval<T> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { eval_avx512(frame, k, z, tau, split, rhoinv) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { eval_avx2(frame, k, z, tau, split, rhoinv) };
        }
    }
    eval_body::<T, F, false>(frame, k, z, tau, split, rhoinv)
}

/// [`eval_body`] compiled for AVX-512F, its quotients by reciprocal.
///
/// # Safety
/// The CPU must support AVX-512F (the caller checks it at run time).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn eval_avx512<T: Scalar, F: Frame<T>>(
    frame: &F,
    k: usize,
    z: &[T],
    tau: T,
    split: usize,
    rhoinv: T,
) -> Eval<T> {
    eval_body::<T, F, true>(frame, k, z, tau, split, rhoinv)
}

/// [`eval_body`] compiled for AVX2.
///
/// # Safety
/// The CPU must support AVX2 (the caller checks it at run time).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn eval_avx2<T: Scalar, F: Frame<T>>(
    frame: &F,
    k: usize,
    z: &[T],
    tau: T,
    split: usize,
    rhoinv: T,
) -> Eval<T> {
    eval_body::<T, F, false>(frame, k, z, tau, split, rhoinv)
}

#[inline(always)]
fn eval_body<T: Scalar, F: Frame<T>, const FAST: bool>(
    frame: &F,
    k: usize,
    z: &[T],
    tau: T,
    split: usize,
    rhoinv: T,
) -> Eval<T> {
    let jh = (split + 1).min(k - 1);
    // psi's partial sums run upwards from pole 0: pole j is in split + 1 - j of
    // them; phi's run downwards from pole k - 1: pole j is in j - split.
    let (psi, dpsi, ppsi) = side_sums::<T, F, FAST>(frame, z, 0..split + 1, tau, split + 1, false);
    let (phi, dphi, pphi) = side_sums::<T, F, FAST>(frame, z, split + 1..k, tau, split, true);
    let w = rhoinv + psi + phi;
    let err = c::<T>(8.0) * (psi.abs() + phi.abs())
        + ppsi
        + pphi
        + c::<T>(2.0) * rhoinv
        + c::<T>(3.0) * w.abs()
        + frame.offset(tau).abs() * (dpsi + dphi);
    Eval {
        w,
        dpsi,
        dphi,
        err,
        del_lo: frame.delta(split, tau),
        del_hi: frame.delta(jh, tau),
    }
}

/// `D_j - lambda` at the iterate `tau` for the pole contributing most to
/// `psi'` (poles `0..=split`) and to `phi'` (poles `split+1..k`): the poles of
/// the middle-way model. Only that model needs them, so they are not part of
/// [`eval`].
pub(super) fn dominant_deltas<T: Scalar, F: Frame<T>>(
    frame: &F,
    k: usize,
    z: &[T],
    tau: T,
    split: usize,
) -> (T, T) {
    let zero = T::zero();
    let (mut best_lo, mut jlo) = (zero, split);
    for (j, &zj) in z[..=split].iter().enumerate() {
        let t = zj / frame.delta(j, tau);
        if t * t > best_lo {
            best_lo = t * t;
            jlo = j;
        }
    }
    let jh = (split + 1).min(k - 1);
    let (mut best_hi, mut jhi) = (zero, jh);
    for (j, &zj) in z[..k].iter().enumerate().skip(split + 1).rev() {
        let t = zj / frame.delta(j, tau);
        if t * t > best_hi {
            best_hi = t * t;
            jhi = j;
        }
    }
    (frame.delta(jlo, tau), frame.delta(jhi, tau))
}
