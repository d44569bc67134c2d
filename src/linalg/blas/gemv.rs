//! Matrix-vector products of the one-stage reductions, on the fused
//! multiply-add kernels of `linalg::blas::blas2` (AVX-512 or AVX2 + FMA,
//! chosen at run time):
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
//! The large products are cut by columns, both of them, so that each core
//! keeps the same half of the trailing matrix in its cache for both products
//! of every panel column (cut by rows, `A r` read the other core's half each
//! time: `gebrd` at n = 512 on two threads took 26.5-27 ms, against 22-23 ms
//! cut by columns, Intel Xeon, f64). `A^T u` gives the same bits whole or cut
//! (each output entry is one column's dot product); `A r` is the sum of the
//! two halves' products in a fixed order from [`GEMV_SPLIT_MIN`] entries on,
//! a cut that depends on the shape only. Hence [`gemv_t_on`] and
//! [`gemv_n_on`] give the same bits run in turn or in parallel on [`Splits`].

use crate::error::Error;
use crate::linalg::blas::blas2::{axpys, dots};
use crate::linalg::blas::simd::Isa;
use crate::linalg::par::Splits;
use crate::Scalar;
use faer::MatRef;

/// The contiguous storage of column `j` of `a` (unit row stride).
#[inline(always)]
pub(crate) fn col<T>(a: MatRef<'_, T>, j: usize) -> &[T] {
    a.col(j)
        .try_as_col_major()
        .expect("unit row stride")
        .as_slice()
}

/// Smallest number of matrix entries for which the products are cut in two
/// halves (run in parallel on [`Splits`] with a helper). `gebrd` on two
/// threads, Intel Xeon, f64, cut from 256^2 against 512^2 entries: 22-23
/// against 30 ms at n = 512, 0.205 against 0.22 s at 1024, no change at 256.
pub const GEMV_SPLIT_MIN: usize = 256 * 256;

/// Columns per pass of the products (`linalg::blas::blas2`'s kernels):
/// each pass reads `u` or updates `x` once for four columns.
const COLS: usize = 4;

/// `y[j] = a[:, j] . u` for every column `j` of `a` (unit row stride), four
/// columns per pass; each column's dot product has the same lanes and order
/// whatever the columns around it.
pub(crate) fn gemv_t<T: Scalar>(a: MatRef<'_, T>, u: &[T], y: &mut [T]) {
    let (r, c) = (a.nrows(), a.ncols());
    let u = &u[..r];
    let isa = Isa::detect();
    let mut j = 0;
    while j + COLS <= c {
        let t = std::array::from_fn(|q| col(a, j + q));
        y[j..j + COLS].copy_from_slice(&dots::<T, COLS>(isa, t, u));
        j += COLS;
    }
    while j < c {
        y[j] = dots::<T, 1>(isa, [col(a, j)], u)[0];
        j += 1;
    }
}

/// `x += sign * a r` on `x` (`a.nrows()` entries), four columns of `a` per
/// pass in order: row `i` is a chain of fused multiply-adds over the columns,
/// the same whatever rows are computed with it.
fn add_columns<T: Scalar>(a: MatRef<'_, T>, r: &[T], x: &mut [T], negate: bool) {
    let c = a.ncols();
    let isa = Isa::detect();
    let s = |j: usize| if negate { -r[j] } else { r[j] };
    let mut j = 0;
    while j + COLS <= c {
        let t = std::array::from_fn(|q| col(a, j + q));
        axpys::<T, COLS>(isa, t, std::array::from_fn(|q| s(j + q)), x);
        j += COLS;
    }
    while j < c {
        axpys::<T, 1>(isa, [col(a, j)], [s(j)], x);
        j += 1;
    }
}

/// `x = a r` (`x` of `a.nrows()` entries, overwritten), the columns of `a`
/// four at a time in order.
pub(crate) fn gemv_n<T: Scalar>(a: MatRef<'_, T>, r: &[T], x: &mut [T]) {
    let x = &mut x[..a.nrows()];
    x.fill(T::zero());
    add_columns(a, r, x, false);
}

/// `y -= a r` (`y` of `a.nrows()` entries), the columns of `a` four at a
/// time in order, as in [`gemv_n`].
pub(crate) fn gemv_n_sub<T: Scalar>(a: MatRef<'_, T>, r: &[T], y: &mut [T]) {
    let y = &mut y[..a.nrows()];
    add_columns(a, r, y, true);
}

/// `y := a^T u` (`y` of `a.ncols()` entries), cut by columns in two halves
/// run by `team` from [`GEMV_SPLIT_MIN`] entries on (module docs).
///
/// # Errors
/// Only a panic in a half ([`Splits::join`]).
pub fn gemv_t_on<T: Scalar>(
    a: MatRef<'_, T>,
    u: &[T],
    y: &mut [T],
    team: Splits<'_>,
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
    team.join(
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

/// `x := a r` (`x` of `a.nrows()` entries); from [`GEMV_SPLIT_MIN`] entries on
/// as the products of the two column halves run by `team`, the second into
/// `scratch` (resized as needed), then added (module docs).
///
/// # Errors
/// Only a panic in a half ([`Splits::join`]).
pub fn gemv_n_on<T: Scalar>(
    a: MatRef<'_, T>,
    r: &[T],
    x: &mut [T],
    scratch: &mut Vec<T>,
    team: Splits<'_>,
) -> Result<(), Error> {
    let (m, c) = (a.nrows(), a.ncols());
    let x = &mut x[..m];
    if m * c < GEMV_SPLIT_MIN || c < 8 {
        gemv_n(a, r, x);
        return Ok(());
    }
    let h = (c / 2) & !3;
    let (al, ar) = a.split_at_col(h);
    let (rl, rr) = r[..c].split_at(h);
    if scratch.len() < m {
        scratch.resize(m, T::zero());
    }
    let p = &mut scratch[..m];
    {
        let (x, p) = (&mut *x, &mut *p);
        team.join(
            move || {
                gemv_n(al, rl, x);
                Ok(())
            },
            move || {
                gemv_n(ar, rr, p);
                Ok(())
            },
        )?;
    }
    for (xi, &pi) in x.iter_mut().zip(p.iter()) {
        *xi += pi;
    }
    Ok(())
}
