//! One-stage reduction of a symmetric matrix to tridiagonal form, `Q^T A Q = T`,
//! and the application of `Q` to the tridiagonal's eigenvectors: LAPACK `dsytd2`
//! (unblocked), `dsytrd` with `dlatrd` panels (blocked) and `dormtr` (side L,
//! no transpose), re-derived for the lower triangle of a column-major matrix.
//!
//! Why a one-stage path next to the two-stage pipeline: with vectors the
//! two-stage reduction does about 2n^3 more flops (the Q2 back-transformation),
//! which only pays when the BLAS-3 rate is more than about four times the BLAS-2
//! rate of `dsytrd`'s symmetric matrix-vector products; at small and mid n on
//! a few cores it is not (LAPACK's `dsyevd` is one-stage: `dsytrd`, `dstedc`,
//! `dormtr`).
//!
//! # Storage (as `dsytrd` with `uplo = 'L'`)
//!
//! On exit the diagonal of `a` holds `d`, the first subdiagonal `e`, and the
//! reflectors below it: `Q = H_0 H_1 ... H_{n-2}`, `H_i = I - tau_i v_i v_i^T`,
//! with `v_i[0..=i] = 0`, `v_i[i+1] = 1` (implicit) and `v_i[i+2..]` stored in
//! `a[(i+2.., i)]`. The strict upper triangle is never read or written.
//!
//! # Blocked reduction (Dongarra, Hammarling, Sorensen 1989; `dlatrd`)
//!
//! A panel of `nb` columns is reduced with the trailing matrix kept implicit as
//! `A - V W^T - W V^T`: column `j` is first brought up to date with the
//! panel's earlier `V` and `W` columns, its reflector generated, then
//! `w_j = tau (A - V W^T - W V^T) v_j` corrected so that the rank-2 update
//! `A - v w^T - w v^T` equals `H A H` (the `-tau/2 (w^T v) v` term). After the
//! panel one SYR2K (two triangular GEMMs through faer) updates the trailing
//! matrix. Half the flops stay in the symmetric matrix-vector products.

use crate::error::Error;
use crate::linalg::blas::gemv::{gemv_n_sub, gemv_t};
use crate::linalg::householder::ormqr::ormqr_on;
use crate::linalg::householder::{axpy, dot, larfg_slice};
use crate::linalg::par::{Fork, Splits};
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::reborrow::*;
use faer::{Accum, Mat, MatMut, MatRef, Par};

#[cfg(test)]
mod tests;

/// Default panel width of [`sytrd`] (LAPACK's `ilaenv` gives 32 for `dsytrd`).
pub const SYTRD_BLOCK: usize = 32;
/// Order from which [`sytrd_block_for`] takes panels of [`SYTRD_BLOCK`].
pub const SYTRD_WIDE_FROM: usize = 1536;

/// The panel width for [`sytrd_on`] at order `n`: 12 below
/// [`SYTRD_WIDE_FROM`], [`SYTRD_BLOCK`] from there. A narrow panel does
/// fewer of `dlatrd`'s level-2 corrections `V W^T x` per column (about
/// `4 nb m` flops for a column of `m` rows), at the price of more, thinner
/// SYR2K updates; which wins was measured, not derived. `sytrd_on` with
/// panels of 32 / 12 (crossover 32), microseconds, on the Xeon (model 167),
/// best of 7 runs (of 2 at n = 2048); panels of 8 to 14 came within a few
/// percent of 12 up to n = 1024, 16 was 11-18% slower at n = 128 and 256:
///
/// | n | f64, 1 thread | f64, 2 threads | f32, 1 thread |
/// |---|---|---|---|
/// | 64 | 51.2 / 41.6 | 49.8 / 42.9 | 40.1 / 33.6 |
/// | 128 | 285 / 185 | 287 / 191 | 176 / 139 |
/// | 256 | 1288 / 1062 | 1311 / 1071 | 836 / 717 |
/// | 512 | 8453 / 7590 | 6387 / 5907 | 4795 / 4429 |
/// | 1024 | 85913 / 81549 | 39876 / 35618 | 40723 / 38056 |
/// | 2048 | 654447 / 665619 | 367903 / 377885 | |
pub fn sytrd_block_for(n: usize) -> usize {
    if n < SYTRD_WIDE_FROM {
        12
    } else {
        SYTRD_BLOCK
    }
}

/// Default order below which [`sytrd`] is unblocked (LAPACK's `NX` = 32).
pub const SYTRD_CROSSOVER: usize = 32;
/// Default number of reflectors per compact-WY block in [`ormtr`].
pub const ORMTR_BLOCK: usize = 32;

/// The contiguous storage of column `j` of `a`, rows `r0..`.
#[inline]
fn col<T>(a: MatRef<'_, T>, j: usize, r0: usize) -> &[T] {
    &a.col(j)
        .try_as_col_major()
        .expect("unit row stride")
        .as_slice()[r0..]
}

/// The contiguous storage of column `j` of `a`, rows `r0..`, mutable.
#[inline]
fn col_mut<T>(a: MatMut<'_, T>, j: usize, r0: usize) -> &mut [T] {
    &mut a
        .col_mut(j)
        .try_as_col_major_mut()
        .expect("unit row stride")
        .as_slice_mut()[r0..]
}

mod symv;
pub use symv::{symv_lower, symv_lower_on, SYMV_SPLIT_MIN};

simd_dispatch! {
    /// `A := A - v w^T - w v^T` on the lower triangle of the `m x m` `a` (`dsyr2`).
    fn syr2_lower / syr2_lower_simd / syr2_lower_body (a: MatMut<'_, T>, v: &[T], w: &[T])
}

#[inline(always)]
fn syr2_lower_body<T: Scalar>(mut a: MatMut<'_, T>, v: &[T], w: &[T]) {
    let m = a.nrows();
    for c in 0..m {
        let colc = col_mut(a.rb_mut(), c, c);
        axpy(colc, -v[c], &w[c..m]);
        axpy(colc, -w[c], &v[c..m]);
    }
}

/// Checks the arguments shared by the reductions.
fn check_args<T>(a: &MatMut<'_, T>, d: &[T], e: &[T], tau: &[T]) {
    let n = a.nrows();
    assert_eq!(a.ncols(), n, "sytrd: a must be square");
    assert!(
        n == 0 || a.row_stride() == 1,
        "sytrd: a needs unit row stride"
    );
    assert_eq!(d.len(), n, "sytrd: d must have n entries");
    let m = n.saturating_sub(1);
    assert!(
        e.len() == m && tau.len() == m,
        "sytrd: e and tau must have n - 1 entries"
    );
}

/// Unblocked reduction of the symmetric matrix whose lower triangle `a` holds
/// to tridiagonal form (LAPACK `dsytd2`, `uplo = 'L'`): for each column a
/// reflector (`larfg`), `w = tau A22 v`, `w -= (tau/2)(w^T v) v`, then
/// `A22 -= v w^T + w v^T`. Outputs as described in the module docs: `d` (`n`),
/// `e` and `tau` (`n - 1` each), reflectors below the subdiagonal of `a`.
///
/// # Panics
/// If `a` is not square with unit row stride or a length is wrong.
pub fn sytd2<T: Scalar>(mut a: MatMut<'_, T>, d: &mut [T], e: &mut [T], tau: &mut [T]) {
    check_args(&a, d, e, tau);
    let n = a.nrows();
    let mut w = vec![T::zero(); n];
    let mut scratch = Vec::new();
    for i in 0..n.saturating_sub(1) {
        let (left, right) = a.rb_mut().split_at_col_mut(i + 1);
        let ci = col_mut(left, i, i + 1);
        let (alpha, x) = ci.split_first_mut().expect("i + 1 < n");
        let t = larfg_slice(alpha, x);
        e[i] = *alpha;
        tau[i] = t;
        if t != T::zero() {
            *alpha = T::one();
            let v: &[T] = ci;
            let m = n - i - 1;
            let mut a22 = right.submatrix_mut(i + 1, 0, m, m);
            symv_lower_on(a22.rb(), v, &mut w, &mut scratch, Splits::Seq)
                .expect("a serial team, no run to fail");
            let w = &mut w[..m];
            for x in w.iter_mut() {
                *x *= t;
            }
            let half = -(t * T::of(0.5)) * dot(w, v);
            axpy(w, half, v);
            syr2_lower(a22.rb_mut(), v, w);
            ci[0] = e[i];
        }
        d[i] = a[(i, i)];
    }
    if n > 0 {
        d[n - 1] = a[(n - 1, n - 1)];
    }
}

/// Blocked reduction to tridiagonal form (LAPACK `dsytrd`, `uplo = 'L'`):
/// panels of `nb` columns reduced with `dlatrd`-style lazy updates, each
/// followed by one SYR2K of the trailing matrix through faer's triangular
/// GEMM; the last `max(nx, nb)` columns (or all of them for small `n`) by
/// [`sytd2`]. Same outputs as [`sytd2`] (equal up to rounding).
///
/// # Panics
/// As [`sytd2`].
pub fn sytrd<T: Scalar>(
    a: MatMut<'_, T>,
    nb: usize,
    nx: usize,
    d: &mut [T],
    e: &mut [T],
    tau: &mut [T],
) {
    // Without a runtime the parts run in turn on this thread: nothing can fail.
    sytrd_on(a, nb, nx, d, e, tau, Fork::Seq).expect("no runtime, no run to fail");
}

/// [`sytrd`] on `par`: each trailing SYR2K of at least [`SYR2K_SPLIT_MIN`]
/// rows is split in two fixed parts (the columns left of `m (1 - 1/sqrt 2)`,
/// and the triangle right of them: equal flops), and each panel column's
/// symmetric product of at least [`SYMV_SPLIT_MIN`] rows in two column blocks,
/// the halves run in a [`Fork::scope`] ([`Fork::Seq`] runs them in turn). The
/// splits depend only on the order, so the result is bitwise that of [`sytrd`]
/// whatever `par`.
///
/// # Errors
/// Only the runtime's own (a helper thread that cannot start); the reduction
/// itself cannot fail.
///
/// # Panics
/// As [`sytd2`].
pub fn sytrd_on<T: Scalar>(
    a: MatMut<'_, T>,
    nb: usize,
    nx: usize,
    d: &mut [T],
    e: &mut [T],
    tau: &mut [T],
    par: Fork<'_>,
) -> Result<(), Error> {
    // A team only where a split happens: engaging the helper costs a wake-up.
    let splits =
        nb > 1 && a.nrows() > nx.max(nb) && a.nrows() >= SYMV_SPLIT_MIN.min(SYR2K_SPLIT_MIN);
    par.scope(splits, |team| sytrd_in(a, nb, nx, d, e, tau, team))
}

/// [`sytrd_on`] with its splits run by `team`.
fn sytrd_in<T: Scalar>(
    mut a: MatMut<'_, T>,
    nb: usize,
    nx: usize,
    d: &mut [T],
    e: &mut [T],
    tau: &mut [T],
    team: Splits<'_>,
) -> Result<(), Error> {
    check_args(&a, d, e, tau);
    let n = a.nrows();
    let nb = nb.max(1);
    let mut i = 0;
    // Blocked steps only above the crossover (none at small n, where the
    // workspaces would be allocated and zeroed for nothing).
    if nb > 1 && n > nx.max(nb) {
        let mut w = Mat::<T>::zeros(n, nb);
        let mut scratch = Vec::new();
        // The SYR2K's operands [V W] and [W V], allocated once for all panels.
        let (mut l, mut r) = (Mat::<T>::zeros(n, 2 * nb), Mat::<T>::zeros(n, 2 * nb));
        while n - i > nx.max(nb) {
            let m = n - i;
            let mut ai = a.rb_mut().submatrix_mut(i, i, m, m);
            let mut wi = w.as_mut().submatrix_mut(0, 0, m, nb);
            latrd(
                ai.rb_mut(),
                wi.rb_mut(),
                &mut e[i..i + nb],
                &mut tau[i..i + nb],
                &mut scratch,
                team,
            )?;
            // Trailing update A22 -= V2 W2^T + W2 V2^T (lower triangle only);
            // the units of the panel's reflectors are still in place.
            let m2 = m - nb;
            let (panel, trailing) = ai.rb_mut().split_at_col_mut(nb);
            let v2 = panel.rb().submatrix(nb, 0, m2, nb);
            let w2 = wi.rb().submatrix(nb, 0, m2, nb);
            let a22 = trailing.submatrix_mut(nb, 0, m2, m2);
            let (l2, r2) = (
                l.as_mut().submatrix_mut(0, 0, m2, 2 * nb),
                r.as_mut().submatrix_mut(0, 0, m2, 2 * nb),
            );
            syr2k_lower(a22, v2, w2, l2, r2, team)?;
            for j in 0..nb {
                a[(i + j + 1, i + j)] = e[i + j];
                d[i + j] = a[(i + j, i + j)];
            }
            i += nb;
        }
    }
    let m = n - i;
    let tail = m.saturating_sub(1);
    sytd2(
        a.submatrix_mut(i, i, m, m),
        &mut d[i..],
        &mut e[i..i + tail],
        &mut tau[i..i + tail],
    );
    Ok(())
}

/// Smallest trailing order whose SYR2K [`sytrd_on`] splits in two tasks:
/// below it the update takes less time than handing half of it to another
/// thread (waking a parked helper costs tens of microseconds).
pub const SYR2K_SPLIT_MIN: usize = 256;

/// `A := A - V W^T - W V^T` on the lower triangle of the square `a` (`dsyr2k`)
/// through faer's triangular GEMM; from [`SYR2K_SPLIT_MIN`] rows on in two
/// parts of about equal flops run by `team`: columns `0..c` (their diagonal
/// triangle and the rectangle below it) and the triangle of columns `c..`.
/// `l` and `r` (`m x 2k`) are workspace, overwritten.
fn syr2k_lower<T: Scalar>(
    mut a: MatMut<'_, T>,
    v: MatRef<'_, T>,
    w: MatRef<'_, T>,
    mut l: MatMut<'_, T>,
    mut r: MatMut<'_, T>,
    team: Splits<'_>,
) -> Result<(), Error> {
    let (m, k) = (a.nrows(), v.ncols());
    // V W^T + W V^T = [V W] [W V]^T: one product of inner dimension 2k reads
    // and writes the triangle once instead of twice, and the wider inner
    // dimension keeps faer's microkernel at its rate (LAPACK's `dsyr2k` does
    // two passes).
    l.rb_mut().subcols_mut(0, k).copy_from(v);
    l.rb_mut().subcols_mut(k, k).copy_from(w);
    r.rb_mut().subcols_mut(0, k).copy_from(w);
    r.rb_mut().subcols_mut(k, k).copy_from(v);
    let (l, r) = (l.into_const(), r.into_const());
    let tri = |dst: MatMut<'_, T>, l: MatRef<'_, T>, r: MatRef<'_, T>| {
        tri_matmul(
            dst,
            BlockStructure::TriangularLower,
            Accum::Add,
            l,
            BlockStructure::Rectangular,
            r.transpose(),
            BlockStructure::Rectangular,
            -T::one(),
            Par::Seq,
        );
    };
    if m < SYR2K_SPLIT_MIN {
        tri(a, l, r);
        return Ok(());
    }
    // Columns 0..c hold c^2/2 + (m - c) c entries, the rest (m - c)^2 / 2:
    // equal for c = m (1 - 1/sqrt 2).
    let c = ((m as f64) * (1.0 - std::f64::consts::FRAC_1_SQRT_2)).round() as usize;
    let (a00, _, a10, a11) = a.rb_mut().split_at_mut(c, c);
    let (lt, lb) = l.split_at_row(c);
    let (rt_, rb) = r.split_at_row(c);
    let left = move || {
        tri(a00, lt, rt_);
        matmul(a10, Accum::Add, lb, rt_.transpose(), -T::one(), Par::Seq);
        Ok(())
    };
    let right = move || {
        tri(a11, lb, rb);
        Ok(())
    };
    team.join(left, right)
}

/// One panel of [`sytrd`] (LAPACK `dlatrd`, `uplo = 'L'`) on the `m x m`
/// trailing matrix `a` (lower triangle, `m > nb`): reduces its first `nb =
/// w.ncols()` columns, writing their `e` and `tau`, the reflectors below the
/// subdiagonal with their unit entries **set to one** (the caller's SYR2K uses
/// them and then restores `e`), and `W` (`m x nb`) such that the trailing
/// matrix after the panel is `A - V W^T - W V^T`. The diagonal of the panel's
/// columns is brought up to date in place. The symmetric products run through
/// [`symv_lower_on`] on `team` (`scratch` its workspace).
///
/// # Errors
/// Only the fork-join's own ([`Fork::join`]).
fn latrd<T: Scalar>(
    mut a: MatMut<'_, T>,
    mut w: MatMut<'_, T>,
    e: &mut [T],
    tau: &mut [T],
    scratch: &mut Vec<T>,
    team: Splits<'_>,
) -> Result<(), Error> {
    let (m, nb) = (a.nrows(), w.ncols());
    debug_assert!(m > nb && w.nrows() == m);
    let mut t1 = vec![T::zero(); nb];
    let mut t2 = vec![T::zero(); nb];
    for j in 0..nb {
        let (left, right) = a.rb_mut().split_at_col_mut(j + 1);
        let (vdone, mut cjm) = left.split_at_col_mut(j);
        let (wdone, mut wrest) = w.rb_mut().split_at_col_mut(j);
        let (vdone, wdone) = (vdone.rb(), wdone.rb());
        let cj = col_mut(cjm.rb_mut(), 0, j);
        // Bring column j (rows j..) up to date with the panel's earlier columns:
        // a[j.., j] -= V[j.., 0..j] W[j, 0..j]^T + W[j.., 0..j] V[j, 0..j]^T
        // (two `dgemv`, as in `dlatrd`; the rows of V and W are strided).
        for p in 0..j {
            t1[p] = wdone[(j, p)];
            t2[p] = vdone[(j, p)];
        }
        gemv_n_sub(vdone.subrows(j, m - j), &t1[..j], cj);
        gemv_n_sub(wdone.subrows(j, m - j), &t2[..j], cj);
        // Reflector annihilating a[j+2.., j]; its unit stays in place.
        let cj = &mut cj[1..];
        let (alpha, x) = cj.split_first_mut().expect("j + 1 < m");
        let t = larfg_slice(alpha, x);
        e[j] = *alpha;
        tau[j] = t;
        *alpha = T::one();
        let v: &[T] = cj;
        let len = m - j - 1;
        let wj = &mut col_mut(wrest.rb_mut(), 0, j + 1)[..len];
        if t == T::zero() {
            // H = I: no update from this column.
            wj.fill(T::zero());
            continue;
        }
        // w_j = tau (A22 - V W^T - W V^T) v over rows j+1.. (A22 is not yet
        // updated by this panel).
        symv_lower_on(
            right.rb().submatrix(j + 1, 0, len, len),
            v,
            wj,
            scratch,
            team,
        )?;
        let (vlow, wlow) = (vdone.subrows(j + 1, len), wdone.subrows(j + 1, len));
        gemv_t(wlow, v, &mut t1[..j]);
        gemv_t(vlow, v, &mut t2[..j]);
        gemv_n_sub(vlow, &t1[..j], wj);
        gemv_n_sub(wlow, &t2[..j], wj);
        for x in wj.iter_mut() {
            *x *= t;
        }
        let half = -(t * T::of(0.5)) * dot(wj, v);
        axpy(wj, half, v);
    }
    Ok(())
}

/// `Z := Q Z` with `Q = H_0 ... H_{n-2}` from [`sytrd`] or [`sytd2`] (LAPACK
/// `dormtr`, side L, `uplo = 'L'`, no transpose): `a` and `tau` as they left
/// them, `z` `n x k` with unit row stride. The reflectors are applied in blocks
/// of `nb` as compact-WY products `I - V T V^T` (`dlarft` + `dlarfb`), last
/// block first; `nb <= 1` applies them one by one (`dlarf`).
///
/// # Panics
/// On inconsistent shapes.
pub fn ormtr<T: Scalar>(a: MatRef<'_, T>, tau: &[T], z: MatMut<'_, T>, nb: usize) {
    // Without a runtime the halves run in turn on this thread: nothing can fail.
    ormtr_on(a, tau, z, nb, Fork::Seq).expect("no runtime, no run to fail");
}

/// Reflector count from which [`ormtr_block_for`] applies them in blocks.
/// Below it, forming `T` and applying `I - V T V^T` through small GEMMs costs
/// more than it saves (LAPACK's `dormqr` likewise goes unblocked when the
/// block is as wide as the reflector count).
pub const ORMTR_BLOCKED_FROM: usize = 40;

/// Reflector count from which [`ormtr_block_for`] takes blocks of
/// [`ORMTR_BLOCK`]; below it, blocks of 16.
pub const ORMTR_WIDE_FROM: usize = 384;

/// Reflector count from which [`ormtr_block_for`] takes blocks of 64.
pub const ORMTR_WIDER_FROM: usize = 1535;

/// Reflector count from which [`ormtr_block_for`] takes blocks of 96.
pub const ORMTR_WIDEST_FROM: usize = 3071;

/// The block size for `dormtr` on an order-`n` reduction (`k = n - 1`
/// reflectors): one at a time (`dlarf`) below [`ORMTR_BLOCKED_FROM`], blocks
/// of 16 below [`ORMTR_WIDE_FROM`], [`ORMTR_BLOCK`] below
/// [`ORMTR_WIDER_FROM`] (n = 1536), 64 below [`ORMTR_WIDEST_FROM`]
/// (n = 3072), then 96. The wide blocks: `ormtr` of an `n x n` after `sytrd`,
/// one thread, seconds, best of 2-5 (2026-11-30, same machine):
///
/// | n | prec | 32 | 48 | 64 | 96 |
/// |---|---|---|---|---|---|
/// | 512 | f64 | 0.0053 | 0.0054 | 0.0056 | 0.0061 |
/// | 1024 | f64 | 0.0418 | 0.0418 | 0.0413 | 0.0429 |
/// | 1024 | f32 | 0.0226 | 0.0239 | 0.0217 | 0.0237 |
/// | 2048 | f64 | 0.317 | 0.303 | 0.300 | 0.311 |
/// | 2048 | f32 | 0.179 | 0.174 | 0.161 | 0.166 |
/// | 4096 | f64 | 2.58-2.63 | 2.47 | 2.67-2.79 | 2.37-2.45 |
/// | 4096 | f32 | 1.42-1.46 | 1.34 | 1.22 | 1.24 |
///
/// (At 4096 in f64, 64 was slower than 32 in every repetition; 96 was the
/// fastest there, and 80 came between.) Whole one-stage `eigh` with vectors
/// against blocks of 32, alternated: f32 at 4096 on one thread 4.62-4.65 ->
/// 4.43-4.50 s; f64 at 4096 and both at 2048, one or two threads, within the
/// noise. The narrower blocks, measured with `ormqr`, `k` reflectors on a
/// dense `k x k`, f64, one thread, on the Xeon (model 167), microseconds:
///
/// | k | one at a time | 16 | 32 |
/// |---|---|---|---|
/// | 8 | 0.2 | 1.5 | 1.5 |
/// | 32 | 8.3 | 10.6 | 13.1 |
/// | 40 | 15.5 | 15.4 | 19.0 |
/// | 64 | 62.9 | 33.6 | 41.2 |
/// | 128 | 506 | 140 | 161 |
/// | 256 | 4174 | 740 | 794 |
/// | 512 | 40791 | 6591 | 6328 |
/// | 1024 | 376025 | 56587 | 47497 |
pub fn ormtr_block_for(n: usize) -> usize {
    let k = n.saturating_sub(1);
    if k < ORMTR_BLOCKED_FROM {
        1
    } else if k < ORMTR_WIDE_FROM {
        16
    } else if k < ORMTR_WIDER_FROM {
        ORMTR_BLOCK
    } else if k < ORMTR_WIDEST_FROM {
        64
    } else {
        96
    }
}

/// Smallest column count of `z` that [`ormtr_on`] splits in two tasks.
pub const ORMTR_SPLIT_MIN: usize = crate::linalg::householder::ormqr::ORMQR_SPLIT_MIN;

/// [`ormtr`] with the columns of `z` split in two fixed halves (from
/// [`ORMTR_SPLIT_MIN`] columns on) run by [`Fork::join`] on `par`; each
/// column is computed as by [`ormtr`] on its half, so the result depends on
/// the shape only, not on `par`.
///
/// # Errors
/// Only the fork-join's own ([`Fork::join`]).
///
/// # Panics
/// On inconsistent shapes.
pub fn ormtr_on<T: Scalar>(
    a: MatRef<'_, T>,
    tau: &[T],
    z: MatMut<'_, T>,
    nb: usize,
    par: Fork<'_>,
) -> Result<(), Error> {
    let n = a.nrows();
    assert!(a.ncols() == n && z.nrows() == n, "ormtr: shapes");
    assert_eq!(tau.len(), n.saturating_sub(1), "ormtr: tau length");
    if n < 2 {
        return Ok(());
    }
    // Reflector i has its unit at row i + 1: `dormqr` on the trailing rows.
    let v = a.submatrix(1, 0, n - 1, n - 1);
    ormqr_on(v, tau, z.subrows_mut(1, n - 1), nb, par)
}
