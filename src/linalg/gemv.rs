//! Matrix-vector products of the one-stage reductions, laned for SIMD and
//! dispatched at run time (`simd_dispatch!`):
//!
//! - `gebrd`'s two products per panel column against the not yet updated
//!   trailing matrix (`dlabrd`'s `y = A^T u` and `x = A r`), the memory-bound
//!   half of its flops; unlike `dsytrd`'s symmetric product they cannot share
//!   a pass, since `r` is built from `y`;
//! - the small products of both panels (`dlabrd`, `dlatrd`) that bring a
//!   column up to date with the panel's earlier reflectors (`gemv_t`,
//!   `gemv_n_sub`): as one pass over a few columns each instead of one axpy
//!   or dot per column (LAPACK calls `dgemv` there too).
//!
//! The large products are cut so that each output entry is computed by the
//! same operations whatever the cut: `A^T u` by columns (each output entry is
//! one column's dot product) and `A r` by rows (each output row sums the
//! columns in the same groups). Hence [`gemv_t_on`] and [`gemv_n_on`] give the
//! same bits run whole, in two parts in turn, or as two tasks.

use crate::error::Error;
use crate::linalg::simd::reduce_lanes;
use crate::linalg::stedc::forked::join;
use crate::runtime::Runtime;
use crate::Scalar;
use faer::MatRef;

/// Independent partial sums per dot product: the summation order depends
/// only on the length. Eight: with four columns at a time the accumulators
/// fill eight of AVX2's sixteen registers in f64 (sixteen lanes spilled).
const LANES: usize = 8;

/// The contiguous storage of column `j` of `a` (unit row stride).
#[inline(always)]
pub(crate) fn col<T>(a: MatRef<'_, T>, j: usize) -> &[T] {
    a.col(j)
        .try_as_col_major()
        .expect("unit row stride")
        .as_slice()
}

/// Smallest number of matrix entries for which the products are cut in two
/// tasks: below it (a few hundred KiB, read from cache) the product takes
/// about as long as handing half of it to a parked helper.
pub const GEMV_SPLIT_MIN: usize = 512 * 512;

/// The dot product of `x` with `u` (same length) in [`LANES`] partial sums
/// and then the tail: the order every column's product follows.
#[inline(always)]
fn dot1<T: Scalar>(x: &[T], u: &[T]) -> T {
    let n = u.len();
    let body = n - n % LANES;
    let mut acc = [T::zero(); LANES];
    let mut k = 0;
    while k < body {
        let uu: &[T; LANES] = u[k..k + LANES].try_into().expect("LANES");
        let xx: &[T; LANES] = x[k..k + LANES].try_into().expect("LANES");
        for l in 0..LANES {
            acc[l] += xx[l] * uu[l];
        }
        k += LANES;
    }
    let mut rest = T::zero();
    for k in body..n {
        rest += x[k] * u[k];
    }
    reduce_lanes(acc) + rest
}

/// The dot products of four columns with `u` in one pass over `u`, each in
/// the order of [`dot1`] (four accumulator arrays written out, so that the
/// loop vectorises along the lanes, not across the columns).
#[inline(always)]
fn dot4<T: Scalar>(x0: &[T], x1: &[T], x2: &[T], x3: &[T], u: &[T]) -> [T; 4] {
    let n = u.len();
    let (x0, x1, x2, x3) = (&x0[..n], &x1[..n], &x2[..n], &x3[..n]);
    let body = n - n % LANES;
    let (mut a0, mut a1, mut a2, mut a3) = (
        [T::zero(); LANES],
        [T::zero(); LANES],
        [T::zero(); LANES],
        [T::zero(); LANES],
    );
    let mut k = 0;
    while k < body {
        let uu: &[T; LANES] = u[k..k + LANES].try_into().expect("LANES");
        let y0: &[T; LANES] = x0[k..k + LANES].try_into().expect("LANES");
        let y1: &[T; LANES] = x1[k..k + LANES].try_into().expect("LANES");
        let y2: &[T; LANES] = x2[k..k + LANES].try_into().expect("LANES");
        let y3: &[T; LANES] = x3[k..k + LANES].try_into().expect("LANES");
        for l in 0..LANES {
            a0[l] += y0[l] * uu[l];
            a1[l] += y1[l] * uu[l];
            a2[l] += y2[l] * uu[l];
            a3[l] += y3[l] * uu[l];
        }
        k += LANES;
    }
    let (mut r0, mut r1, mut r2, mut r3) = (T::zero(), T::zero(), T::zero(), T::zero());
    for k in body..n {
        r0 += x0[k] * u[k];
        r1 += x1[k] * u[k];
        r2 += x2[k] * u[k];
        r3 += x3[k] * u[k];
    }
    [
        reduce_lanes(a0) + r0,
        reduce_lanes(a1) + r1,
        reduce_lanes(a2) + r2,
        reduce_lanes(a3) + r3,
    ]
}

simd_dispatch! {
    /// `y[j] = a[:, j] . u` for every column `j` of `a` (unit row stride).
    pub(crate) fn gemv_t / gemv_t_simd / gemv_t_body (a: MatRef<'_, T>, u: &[T], y: &mut [T])
}

#[inline(always)]
fn gemv_t_body<T: Scalar>(a: MatRef<'_, T>, u: &[T], y: &mut [T]) {
    let (r, c) = (a.nrows(), a.ncols());
    let u = &u[..r];
    let mut j = 0;
    while j + 4 <= c {
        let s = dot4(col(a, j), col(a, j + 1), col(a, j + 2), col(a, j + 3), u);
        y[j..j + 4].copy_from_slice(&s);
        j += 4;
    }
    while j < c {
        y[j] = dot1(col(a, j), u);
        j += 1;
    }
}

simd_dispatch! {
    /// `x = a r` (`x` of `a.nrows()` entries, overwritten), the columns of
    /// `a` summed four at a time in order.
    pub(crate) fn gemv_n / gemv_n_simd / gemv_n_body (a: MatRef<'_, T>, r: &[T], x: &mut [T])
}

#[inline(always)]
fn gemv_n_body<T: Scalar>(a: MatRef<'_, T>, r: &[T], x: &mut [T]) {
    let (m, c) = (a.nrows(), a.ncols());
    let x = &mut x[..m];
    x.fill(T::zero());
    let mut j = 0;
    while j + 4 <= c {
        let (c0, c1, c2, c3) = (col(a, j), col(a, j + 1), col(a, j + 2), col(a, j + 3));
        let (s0, s1, s2, s3) = (r[j], r[j + 1], r[j + 2], r[j + 3]);
        for i in 0..m {
            x[i] += (c0[i] * s0 + c1[i] * s1) + (c2[i] * s2 + c3[i] * s3);
        }
        j += 4;
    }
    while j < c {
        let (c0, s0) = (col(a, j), r[j]);
        for i in 0..m {
            x[i] += c0[i] * s0;
        }
        j += 1;
    }
}

simd_dispatch! {
    /// `y -= a r` (`y` of `a.nrows()` entries), the
    /// columns of `a` summed four at a time in order, as in [`gemv_n`].
    pub(crate) fn gemv_n_sub / gemv_n_sub_simd / gemv_n_sub_body (a: MatRef<'_, T>, r: &[T], y: &mut [T])
}

#[inline(always)]
fn gemv_n_sub_body<T: Scalar>(a: MatRef<'_, T>, r: &[T], y: &mut [T]) {
    let (m, c) = (a.nrows(), a.ncols());
    let y = &mut y[..m];
    let mut j = 0;
    while j + 4 <= c {
        let (c0, c1, c2, c3) = (col(a, j), col(a, j + 1), col(a, j + 2), col(a, j + 3));
        let (s0, s1, s2, s3) = (r[j], r[j + 1], r[j + 2], r[j + 3]);
        for i in 0..m {
            y[i] -= (c0[i] * s0 + c1[i] * s1) + (c2[i] * s2 + c3[i] * s3);
        }
        j += 4;
    }
    while j < c {
        let (c0, s0) = (col(a, j), r[j]);
        for i in 0..m {
            y[i] -= c0[i] * s0;
        }
        j += 1;
    }
}

/// `y := a^T u` (`y` of `a.ncols()` entries), cut by columns in two tasks on
/// `rt` from [`GEMV_SPLIT_MIN`] entries on (module docs).
///
/// # Errors
/// Only the runtime's own ([`Runtime::run`]).
pub fn gemv_t_on<T: Scalar>(
    a: MatRef<'_, T>,
    u: &[T],
    y: &mut [T],
    rt: Option<&Runtime>,
) -> Result<(), Error> {
    let c = a.ncols();
    let y = &mut y[..c];
    if a.nrows() * c < GEMV_SPLIT_MIN || c < 8 {
        gemv_t(a, u, y);
        return Ok(());
    }
    let h = (c / 2) & !3;
    let (al, ar) = a.split_at_col(h);
    let (yl, yr) = y.split_at_mut(h);
    join(
        rt,
        move || {
            gemv_t(al, u, yl);
            Ok(())
        },
        move || {
            gemv_t(ar, u, yr);
            Ok(())
        },
    )
}

/// `x := a r` (`x` of `a.nrows()` entries), cut by rows in two tasks on `rt`
/// from [`GEMV_SPLIT_MIN`] entries on (module docs).
///
/// # Errors
/// Only the runtime's own ([`Runtime::run`]).
pub fn gemv_n_on<T: Scalar>(
    a: MatRef<'_, T>,
    r: &[T],
    x: &mut [T],
    rt: Option<&Runtime>,
) -> Result<(), Error> {
    let m = a.nrows();
    let x = &mut x[..m];
    if m * a.ncols() < GEMV_SPLIT_MIN || m < 16 {
        gemv_n(a, r, x);
        return Ok(());
    }
    let h = (m / 2) & !7;
    let (at, ab) = a.split_at_row(h);
    let (xt, xb) = x.split_at_mut(h);
    join(
        rt,
        move || {
            gemv_n(at, r, xt);
            Ok(())
        },
        move || {
            gemv_n(ab, r, xb);
            Ok(())
        },
    )
}
