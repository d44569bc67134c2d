//! Which triangle of the symmetric input is read ([`Side`]), and the working
//! copy made from it. The pipeline itself always reads the lower triangle of its
//! working matrix (sy2sb reduces the lower part, as LAPACK `dsytrd_sy2sb` with
//! `uplo = 'L'`), so an upper-triangle input is transposed into the lower one:
//! for a symmetric matrix `a[(j, i)] = a[(i, j)]`, so nothing else changes.

use crate::{Error, Result, Scalar};
use faer::{Mat, MatMut, MatRef, Side};

/// The entry `(i, j)`, `i >= j`, of the lower triangle of the symmetric matrix
/// whose `side` triangle `a` holds.
#[inline]
fn lower_entry<T: Scalar>(a: MatRef<'_, T>, side: Side, i: usize, j: usize) -> T {
    match side {
        Side::Lower => a[(i, j)],
        Side::Upper => a[(j, i)],
    }
}

/// Returns an [`Error::NonFinite`] naming, in `a`'s own coordinates, the first
/// non-finite entry of the `side` triangle of the square `a` (the other triangle
/// is never read, so garbage there is no error).
pub(crate) fn check_finite_side<T: Scalar>(a: MatRef<'_, T>, side: Side) -> Result<()> {
    let n = a.nrows();
    // The triangle column by column (contiguous), then, only if that fails,
    // the first offender in the order of the lower triangle.
    let finite = match side {
        Side::Lower => crate::matrix::all_finite(a, |j| j.min(n)..n),
        Side::Upper => crate::matrix::all_finite(a, |j| 0..(j + 1).min(n)),
    };
    if finite {
        return Ok(());
    }
    for j in 0..n {
        for i in j..n {
            let x = lower_entry(a, side, i, j);
            if !x.is_finite() {
                let (row, col) = match side {
                    Side::Lower => (i, j),
                    Side::Upper => (j, i),
                };
                return Err(Error::NonFinite {
                    row,
                    col,
                    value: format!("{x}"),
                });
            }
        }
    }
    Ok(())
}

/// The working copy of the symmetric matrix whose `side` triangle `a` holds: its
/// lower triangle, the strict upper part zero.
pub(crate) fn lower_copy<T: Scalar>(a: MatRef<'_, T>, side: Side) -> Mat<T> {
    if side == Side::Lower && a.row_stride() == 1 {
        // Column slices: a plain copy of each column's lower part.
        let n = a.nrows();
        let mut c = Mat::<T>::zeros(n, a.ncols());
        for j in 0..a.ncols().min(n) {
            let src = &a
                .col(j)
                .try_as_col_major()
                .expect("unit row stride")
                .as_slice()[j..];
            let dst = c.col_mut(j).try_as_col_major_mut().expect("owned");
            dst.as_slice_mut()[j..].copy_from_slice(src);
        }
        return c;
    }
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        if i >= j {
            lower_entry(a, side, i, j)
        } else {
            T::zero()
        }
    })
}

/// Makes the owned square `a` hold its `side` triangle in the lower one, in
/// place: for [`Side::Upper`] the strict upper triangle is mirrored into the
/// strict lower one (the upper part is left as it was; it is not read).
pub(super) fn to_lower_in_place<T: Scalar>(mut a: MatMut<'_, T>, side: Side) {
    if side == Side::Upper {
        let n = a.nrows();
        for j in 0..n {
            for i in j + 1..n {
                a[(i, j)] = a[(j, i)];
            }
        }
    }
}
