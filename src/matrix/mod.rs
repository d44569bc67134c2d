//! Matrix storage: dense column-major matrices (faer's `Mat`), [`SharedMatrix`] for
//! tile access from concurrent tasks, symmetric [`band`] storage and `.npy` I/O.

pub(crate) mod access;
pub mod band;
mod footprint;
pub mod npy;
pub(crate) mod scan;
pub mod scratch;
mod shared;
mod split;

pub use band::SymBand;
pub use footprint::{Footprint, Region};
pub use shared::{MatrixId, SharedMatrix};
pub use split::{ColsMut, ReadAll, SplitColumns};

use crate::{Error, Result, Scalar};
use faer::MatRef;

/// Returns an [`Error::NonFinite`] naming the first non-finite entry of the lower
/// triangle (`lower_only`) or of the whole matrix.
pub fn check_finite<T: Scalar>(a: MatRef<'_, T>, lower_only: bool) -> Result<()> {
    let start = |j: usize| if lower_only { j.min(a.nrows()) } else { 0 };
    // A row-major view of the whole matrix is scanned by its contiguous rows.
    let row_major = !lower_only && a.row_stride() != 1 && a.col_stride() == 1;
    let fine = if row_major {
        all_finite(a.transpose(), |_| 0..a.ncols())
    } else {
        all_finite(a, |j| start(j)..a.nrows())
    };
    if fine {
        return Ok(());
    }
    for j in 0..a.ncols() {
        for i in start(j)..a.nrows() {
            let x = a[(i, j)];
            if !x.is_finite() {
                return Err(Error::NonFinite {
                    row: i,
                    col: j,
                    value: format!("{x}"),
                });
            }
        }
    }
    Ok(())
}

/// Whether the entries `rows(j)` of every column `j` of `a` are finite: one
/// pass over contiguous slices when `a` has unit row stride (the common case,
/// a few times faster than indexing), entry by entry otherwise. The callers
/// look for the position of the first offender only when this fails.
pub(crate) fn all_finite<T: Scalar>(
    a: MatRef<'_, T>,
    rows: impl Fn(usize) -> std::ops::Range<usize>,
) -> bool {
    (0..a.ncols()).all(|j| match a.col(j).try_as_col_major() {
        Some(c) => crate::matrix::scan::max_abs_finite(&c.as_slice()[rows(j)]).1,
        None => rows(j).all(|i| a[(i, j)].is_finite()),
    })
}
pub use band::{BandMut, SharedBand};
